/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bottom of the stream files: the pool attachment of stream-triggered
 * MPI, names of its pool objects, its one error-reporting path and the
 * busy-wait policy of its waits. Everything above (channels, heartbeats,
 * collectives, matching, both queue backends) uses these and nothing
 * here calls up.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "stream.h"

static cxl_pool *spool;

cxl_pool *stream_pool(void)
{
	struct cxl_pool_opts o;

	if (spool)
		return spool;
	spool = get_pool();
	if (spool || !cxlmpi_config()->pool)
		return spool;
	/* MPI_Alloc_mem is not in the pool (CXLMPI_ALLOC_MEM=0): attach */
	if (cxl_opts_from_env(&o) || cxl_pool_attach_shared(&o, &spool)) {
		spool = NULL;
		stream_fail(MPIS_NOT_READY, "cannot attach the pool (%s)",
			    cxl_errmsg());
	}
	return spool;
}

/* As obj_name (alloc.c), but on the stream's attachment, which exists
 * also when MPI_Alloc_mem is not in the pool (CXLMPI_ALLOC_MEM=0). */
void stream_obj_name(char *buf, size_t len, const char *kind)
{
	snprintf(buf, len, "cxlmpi.%s.h%u.%ld.%lu", kind,
		 (unsigned)cxl_pool_host_id(spool), (long)getpid(), ++mem_seq);
}

int stream_fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("libcxlmpi: stream: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

/*
 * Busy-wait step *n (from 0) of a wait: pause for the first spin_ns
 * nanoseconds, then yield the core at every step. By time, not by count:
 * a poll in the flush mode costs a hundred times one in the coherent
 * mode.
 *
 * Pausing pays while the thread we wait for runs on another core. When
 * it waits for our core (more busy threads than cores: 2 ranks with a
 * progress thread each on this 2-core machine), every pause is time it
 * cannot run, and a wait costs a whole pause more. So each thread
 * learns: a wait that had to yield halves its pause, one that ended
 * while pausing restores SPIN_NS; every SPIN_PROBE-th wait pauses the
 * full SPIN_NS to find out whether pausing pays again.
 */
#define SPIN_NS 2000
#define SPIN_PROBE 16
static _Thread_local uint64_t spin_t0, spin_cur;
static _Thread_local uint64_t spin_ns = SPIN_NS;
static _Thread_local unsigned spin_waits;
static _Thread_local bool spin_yielded, spin_any;

void stream_spin(unsigned *n)
{
	/* we wait: nobody may wait for a flag of ours meanwhile */
	chan_flags_out();
	if ((*n)++ == 0) {
		/* a new wait: learn from the previous one */
		if (spin_any)
			spin_ns = spin_yielded ? spin_ns / 2 : SPIN_NS;
		spin_any = true;
		spin_yielded = false;
		spin_cur = ++spin_waits % SPIN_PROBE ? spin_ns : SPIN_NS;
		spin_t0 = cxl_now_ns();
	}
	if (cxl_now_ns() - spin_t0 < spin_cur) {
		__builtin_ia32_pause();
	} else {
		spin_yielded = true;
		sched_yield();
	}
}
