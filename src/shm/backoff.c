/* SPDX-License-Identifier: BSD-3-Clause */
/* The backoff policies (include/cxlshm/clock.h): adaptive polling with a
 * deadline, used by every wait in libcxlshm, and the pause-then-yield
 * spin of latency-critical waits. A utility below the arena: it calls
 * only the clock (clock.c). */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

/* ---- adaptive polling ---------------------------------------------------
 * Phase 1: spin (pause) for CXL_POLL_SPIN polls, the lowest latency.
 * Phase 2: sched_yield for as many polls, cheap when cores are shared.
 * Phase 3: sleep 1 us, doubling up to CXL_POLL_MAX_SLEEP_US, so an idle
 * waiter costs almost no CPU; the price is up to that many microseconds of
 * extra latency for a message that arrives while it sleeps.
 */
static uint32_t poll_spin = 2000, poll_max_sleep_us = 64;
static pthread_once_t poll_once = PTHREAD_ONCE_INIT;

static void poll_init(void)
{
	/* cxl_opts_from_env() has rejected invalid values already for any
	 * process that attached; here a bad value simply keeps the default. */
	const char *s = getenv("CXL_POLL_SPIN");
	char *end;
	unsigned long v;

	if (s && *s) {
		v = strtoul(s, &end, 10);
		if (!*end && v <= 100000000ul)
			poll_spin = (uint32_t)v;
	}
	s = getenv("CXL_POLL_MAX_SLEEP_US");
	if (s && *s) {
		v = strtoul(s, &end, 10);
		if (!*end && v <= 1000000ul)
			poll_max_sleep_us = (uint32_t)v;
	}
}

CXL_EXPORT void cxl_backoff_init(struct cxl_backoff *b, uint32_t timeout_ms)
{
	pthread_once(&poll_once, poll_init);
	b->iter = 0;
	b->sleep_us = 1;
	b->deadline_ns =
		timeout_ms ? cxl_now_ns() + timeout_ms * 1000000ull : 0;
}

CXL_EXPORT int cxl_backoff_wait(struct cxl_backoff *b)
{
	b->iter++;
	/* read the clock only now and then while spinning */
	if (b->deadline_ns && (b->iter & 63) == 0 &&
	    cxl_now_ns() > b->deadline_ns)
		return CXL_ETIMEDOUT;
	if (b->iter < poll_spin) {
#if defined(__x86_64__)
		__builtin_ia32_pause();
#endif
		return CXL_OK;
	}
	if (b->iter < 2 * poll_spin) {
		sched_yield();
		return CXL_OK;
	}
	if (poll_max_sleep_us) {
		struct timespec ts = { 0, (long)b->sleep_us * 1000 };

		nanosleep(&ts, NULL);
		if (b->sleep_us < poll_max_sleep_us)
			b->sleep_us = b->sleep_us * 2 > poll_max_sleep_us
					      ? poll_max_sleep_us
					      : b->sleep_us * 2;
	} else {
		sched_yield();
	}
	if (b->deadline_ns && cxl_now_ns() > b->deadline_ns)
		return CXL_ETIMEDOUT;
	return CXL_OK;
}

CXL_EXPORT void cxl_spin_step(struct cxl_spin *s, unsigned *n)
{
	if ((*n)++ == 0) {
		/* a new wait: learn from the previous one */
		if (s->probe && s->any)
			s->learned_ns =
				s->yielded ? s->learned_ns / 2 : s->full_ns;
		s->any = 1;
		s->yielded = 0;
		s->cur_ns = s->probe && ++s->waits % s->probe ? s->learned_ns
							      : s->full_ns;
		s->t0 = cxl_now_ns();
	}
	if (cxl_now_ns() - s->t0 < s->cur_ns) {
#if defined(__x86_64__)
		__builtin_ia32_pause();
#endif
	} else {
		s->yielded = 1;
		sched_yield();
	}
}
