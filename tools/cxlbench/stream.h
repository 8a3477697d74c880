/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * STREAM (McCalpin) for cxlbench's 'stream' and 'pmem' subcommands.
 *
 *   stream_core.c          kernels, timing, validation, the byte model
 *   stream_place.c         arrays in DRAM, in the pool, or interleaved
 *   cxlbench_stream.c      'cxlbench stream': placements per mode, advice
 *   cxlbench_stream_out.c  its tables, winners, advice and CSV
 *   cxlbench_pmem.c        'cxlbench pmem': STREAM-PMem
 *
 * The rules kept from STREAM 5.10: arrays of doubles, each at least 4x
 * the last-level cache; a = 1, b = 2, c = 0, then a = 2a once; NTIMES
 * iterations of Copy, Scale, Add, Triad with scalar 3; the first
 * iteration excluded from the statistics; the best (minimum) time gives
 * the rate, counted with 2 arrays for Copy and Scale and 3 for Add and
 * Triad (no write-allocate traffic); the same validation (expected values
 * from the recurrence, average relative error below 1e-13).
 */
#ifndef CXLBENCH_STREAM_H
#define CXLBENCH_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cxlshm/cxlshm.h"

#define STREAM_NTIMES 10     /* STREAM's default */
#define STREAM_SCALAR 3.0    /* STREAM's scalar */
#define STREAM_EPSILON 1e-13 /* STREAM's bound for doubles */
#define STREAM_LLC_DEFAULT (32ull << 20)
#define STREAM_QUICK_ELEMS (2ull << 20) /* 16 MiB arrays for --quick */

enum stream_kernel {
	K_COPY,
	K_SCALE,
	K_ADD,
	K_TRIAD,
	K_N
};

/* Arrays by index: 0 a, 1 b, 2 c. */
enum {
	ARR_A,
	ARR_B,
	ARR_C,
	ARR_N
};

extern const char *const stream_kname[K_N];    /* "Copy", ... */
extern const char *const stream_kformula[K_N]; /* "c = a", ... */
extern const unsigned stream_kreads[K_N];      /* bit i: reads array i */
extern const unsigned stream_kwrites[K_N];     /* the array written */
extern const unsigned stream_karrays[K_N];     /* STREAM's count: 2 or 3 */

/* Size of the last-level cache from sysfs (cpu0, level 3), or 0. */
uint64_t stream_llc_bytes(void);

/* Seconds, CLOCK_MONOTONIC. */
double stream_now(void);

/*
 * One kernel over elements [first, first + count). With nt set, the
 * written array is stored with streaming (non-temporal) stores: no
 * write-allocate read, nothing left in the cache to write back.
 */
void stream_kernel(enum stream_kernel k, double *a, double *b, double *c,
		   size_t first, size_t count, bool nt);

/*
 * One STREAM run. step() performs one kernel (with whatever coherence or
 * persistence goes around it); sync() runs after the untimed writes
 * (initialisation, a = 2a) and before the validation, where it makes the
 * arrays readable as another host or a restarted process would see them.
 */
struct stream_job {
	double *a, *b, *c;
	size_t n;
	unsigned ntimes;
	void (*step)(void *arg, enum stream_kernel k);
	void (*sync)(void *arg, bool before_check);
	void *arg;
	const char *label; /* prefixes the validation lines */
};

/* Times over iterations 1..ntimes-1, and the coherence operations they
 * issued (cxl_coh_counters_get deltas), summed. */
struct stream_stats {
	double min_s[K_N], avg_s[K_N], max_s[K_N];
	struct cxl_coh_counters ops[K_N];
	bool valid;
};

/* Run, time and validate; validation messages go to out. */
void stream_run(const struct stream_job *j, struct stream_stats *st, FILE *out);

/* STREAM's rate: MB/s (10^6 bytes) from the best time. */
double stream_mbs(enum stream_kernel k, size_t n, double best_s);

/*
 * The byte model: bytes per element a kernel reads and writes on each
 * medium. frac[i] is the share of array i in the pool; a written array
 * is also read first (write-allocate), except in the pool when nt_pool
 * (streaming stores).
 */
struct stream_bytes {
	double dram_rd, dram_wr, pool_rd, pool_wr;
};
void stream_byte_model(enum stream_kernel k, const double frac[ARR_N],
		       bool nt_pool, struct stream_bytes *out);

#endif
