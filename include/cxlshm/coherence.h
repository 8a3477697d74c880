/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Software cache coherence for memory that is not coherent across hosts.
 *
 * Rules (docs/coherence.md has the full protocol):
 *  - After writing pool memory another host will read: cxl_flush() the
 *    written lines, then cxl_wfence() before publishing (or before reporting
 *    completion).
 *  - Before reading pool memory another host wrote: cxl_inval() the lines
 *    (it fences so the following loads cannot be satisfied early).
 *  - Flags and indices that two hosts poll: cxl_nt_store64()/cxl_nt_load64(),
 *    on a cache line written by one host only.
 *
 * All ranges are widened to whole 64-byte lines. Every call takes the pool
 * because the non-coherent emulation must translate addresses.
 */
#ifndef CXLSHM_COHERENCE_H
#define CXLSHM_COHERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CXL_LINE 64u

/* Write back the lines covering [p, p+len). No ordering by itself. */
void cxl_flush(cxl_pool *pool, const void *p, size_t len);

/*
 * Discard this host's cached copy of the lines covering [p, p+len), then
 * fence, so that subsequent loads read the pool. Lines must not hold this
 * host's unflushed stores (they would be lost in the emulation and written
 * back early on hardware).
 */
void cxl_inval(cxl_pool *pool, const void *p, size_t len);

/* Order all earlier flushes and stores before later stores (sfence). */
void cxl_wfence(cxl_pool *pool);

/* Full fence: earlier stores/flushes before later loads (mfence). */
void cxl_fence(cxl_pool *pool);

/* Non-temporal 8-byte store: goes to the pool, bypassing the cache. */
void cxl_nt_store64(cxl_pool *pool, uint64_t *p, uint64_t v);

/* Load of an 8-byte word as it is in the pool (not a stale cached copy). */
uint64_t cxl_nt_load64(cxl_pool *pool, const uint64_t *p);

/*
 * memcpy into pool memory followed by the write-back the mode needs.
 * Copies of CXL_STREAM_COPY_MIN bytes or more in the flush mode, and of
 * more than that in the coherent mode, use streaming stores instead
 * (counted as nt_lines; in the coherent mode followed by an sfence).
 * Either way the caller's cxl_wfence() orders the data before what it
 * publishes next.
 */
#define CXL_STREAM_COPY_MIN 4096u
void cxl_copy_to_pool(cxl_pool *pool, void *dst, const void *src, size_t n);

/* Invalidate as the mode needs, then memcpy out of pool memory. */
void cxl_copy_from_pool(cxl_pool *pool, void *dst, const void *src, size_t n);

/*
 * Coherence operation counters, per process (summed over threads). These
 * are the deterministic cost proxy on real CXL: a flush or invalidate of a
 * line is one cache-line transaction to the device.
 */
struct cxl_coh_counters {
	uint64_t flush_lines; /* lines written back (clflushopt/clwb/clflush) */
	uint64_t inval_lines; /* lines invalidated before a read */
	uint64_t fences;      /* sfence/mfence issued for coherence */
	uint64_t nt_stores;   /* non-temporal 8-byte stores (flags, indices) */
	uint64_t nt_loads;    /* uncached 8-byte loads (flags, indices) */
	uint64_t nt_lines;    /* lines written with streaming stores (uncached
				 mode copies); each is one line write to the
				 device, like a flushed line */
	/* The share of polls in the counts above (cxl_coh_count_poll): their
	 * number depends on how long a process waits, not on its work. */
	uint64_t polls;
	uint64_t poll_inval_lines, poll_fences, poll_nt_loads;
	uint64_t cost_ns; /* time the cost model (CXL_COST_MODEL) made
			     the operations above wait, summed */
};

void cxl_coh_counters_get(struct cxl_coh_counters *out);
void cxl_coh_counters_reset(void);
/*
 * Book the invalidations, fences and uncached loads done since *before
 * (a cxl_coh_counters_get() snapshot of this process) as one poll: a
 * look at pool memory that found nothing to do.
 */
void cxl_coh_count_poll(const struct cxl_coh_counters *before);

/*
 * The CXL device cost model (docs/costmodel.md). When CXL_COST_MODEL names
 * a preset, every counted operation above also busy-waits for what it
 * costs on that device: a read of n lines load_ns + (n-1) lines at the
 * bandwidth; written lines (flush, streaming, non-temporal stores) are
 * pipelined at the bandwidth and complete wb_ns (nt_ns) after issue; a
 * fence waits for the calling thread's incomplete writes, plus fence_ns.
 * The coherent mode issues no device operation and is never charged.
 */

/* Preset by name: CXL_OK, or CXL_EINVAL for an unknown name. */
int cxl_cost_preset(const char *name, struct cxl_cost_params *out);

/* Name of preset i (0, 1, ...); NULL past the last. */
const char *cxl_cost_preset_name(unsigned i);

/* The model this attachment charges; name "none" when it charges nothing
 * (model off, or the coherent mode). */
void cxl_pool_cost(const cxl_pool *p, struct cxl_cost_params *out);

/* CPU features detected at run time. */
struct cxl_cpu_features {
	int clflush, clflushopt, clwb, movnti;
};
void cxl_cpu_features_get(struct cxl_cpu_features *out);

#ifdef __cplusplus
}
#endif
#endif
