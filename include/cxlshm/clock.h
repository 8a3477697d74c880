/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The clock and adaptive polling: the utility layer below the pool, the
 * arena and the sync primitives (src/shm/clock.c, backoff.c). Nothing here
 * touches a pool.
 */
#ifndef CXLSHM_CLOCK_H
#define CXLSHM_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC). */
uint64_t cxl_now_ns(void);

/* --- adaptive polling -------------------------------------------------- */

/*
 * The two backoff policies of cxlmpi, both here (backoff.c):
 *  - cxl_backoff, for waits that may be long (locks, barriers, flags
 *    with a deadline): spin, then yield, then sleep with exponential
 *    growth up to CXL_POLL_MAX_SLEEP_US. timeout_ms == 0 means forever.
 *  - cxl_spin, for latency-critical waits on another thread or process
 *    (a stream channel, a progress thread's idle loop): pause, then yield
 *    the core at every step, never sleep.
 * The provider's CQ read spin (src/fabric/cq.c) is a bounded spin inside
 * one fi_cq_read, with its own credit, not a wait loop.
 */
struct cxl_backoff {
	uint64_t deadline_ns; /* 0: none */
	uint32_t iter;
	uint32_t sleep_us;
};

void cxl_backoff_init(struct cxl_backoff *b, uint32_t timeout_ms);
/* Wait one step. Returns CXL_ETIMEDOUT once the deadline has passed. */
int cxl_backoff_wait(struct cxl_backoff *b);

/*
 * A wait of cxl_spin_step calls, step *n from 0 (the caller zeroes n per
 * wait): pause for the first pause_ns nanoseconds of the wait, by time
 * (a poll in the flush mode costs a hundred times one in the coherent
 * mode), then yield the core at every step.
 *
 * With probe > 0 the pause is learned per spinner. Pausing pays while
 * the thread waited for runs on another core; when it needs ours (more
 * busy threads than cores), every pause is time it cannot run. So a wait
 * that had to yield halves the pause, one that ended while pausing
 * restores full_ns, and every probe-th wait pauses full_ns to find out
 * whether pausing pays again. probe == 0: always full_ns.
 */
struct cxl_spin {
	uint64_t full_ns, learned_ns, cur_ns, t0;
	unsigned probe, waits;
	unsigned char yielded, any;
};
#define CXL_SPIN_INIT(ns, probe_every) \
	{ .full_ns = (ns), .learned_ns = (ns), .probe = (probe_every) }
void cxl_spin_step(struct cxl_spin *s, unsigned *n);

#ifdef __cplusplus
}
#endif

#endif
