/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CXL device cost model (CXL_COST_MODEL; docs/costmodel.md has the model,
 * the derivation of every preset number and what is not modelled).
 *
 * The coherence primitives (coherence.c) call in here, behind one
 * predictable branch on pool->cost.on, for every operation they count:
 *  - a read of n lines (cxl_inval, cxl_copy_from_pool, cxl_nt_load64)
 *    waits load + (n-1) lines at the bandwidth: the first line pays the
 *    device round trip, the others are pipelined behind it;
 *  - written lines (cxl_flush, streaming copies, cxl_nt_store64) do not
 *    wait when issued. They occupy the thread's write path at the
 *    bandwidth, and each completes wb (nt) after it enters it;
 *  - a fence (cxl_wfence, cxl_fence, and the fence inside cxl_inval and
 *    cxl_nt_load64) waits until the thread's issued writes are complete,
 *    plus fence_ns.
 * Waits busy-wait on CLOCK_MONOTONIC (vDSO), so work done between a flush
 * and its fence overlaps the write-back, as on hardware.
 */
#include <string.h>
#include <time.h>

#include "internal.h"

/*
 * The presets. Sources (docs/costmodel.md, "Presets", has the arithmetic):
 *  cmpi   the Niagara 2.0 FPGA pool cMPI measured on (seed 000, cMPI,
 *         SC'25, Table 1): a cached access of 790 ns with no flush, and
 *         2.2 us for a write with clflush + fence, 9.5 GB/s with flushing
 *         (9.9 GB/s without). A store to a line that is not cached first
 *         reads it (790 ns), so a write-back costs 2200 - 790 = 1410 ns.
 *  cxl-a  system A of seed 002 (Wang et al., "Exploring and Evaluating
 *         Real-world CXL", Table 1 and Sec. 3): CXL adds 153 ns to local
 *         DRAM, 2.8x of it, for sequential loads, so local DRAM is
 *         153 / 1.8 = 85 ns and CXL 238 ns; one DDR5-4800 channel,
 *         38.4 GB/s. A write-back is assumed to cost a load's round trip.
 *  cxl-b  system B of seed 002: +211 ns, 2.4x, so 211 / 1.4 = 151 ns and
 *         362 ns; 64.0 GB/s (Table 1). Same write-back assumption.
 * No fence cost of its own: the fence's wait is for the writes.
 */
static const struct cxl_cost_params presets[] = {
	{ "cmpi", 790, 1410, 1410, 0, 9.5 },
	{ "cxl-a", 238, 238, 238, 0, 38.4 },
	{ "cxl-b", 362, 362, 362, 0, 64.0 },
};
#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

CXL_EXPORT const char *cxl_cost_preset_name(unsigned i)
{
	return i < NPRESETS ? presets[i].name : NULL;
}

CXL_EXPORT int cxl_cost_preset(const char *name, struct cxl_cost_params *out)
{
	if (!strcmp(name, "none")) {
		memset(out, 0, sizeof(*out));
		strcpy(out->name, "none");
		return CXL_OK;
	}
	for (unsigned i = 0; i < NPRESETS; i++)
		if (!strcmp(name, presets[i].name)) {
			*out = presets[i];
			return CXL_OK;
		}
	return CXL_EINVAL;
}

/* cxl_now_ns() at the first setup: times are kept in ps from here, so
 * that 64 bits last 213 days of a process, whatever the uptime. */
static _Atomic uint64_t clock_base_ns;

void cxl_cost_setup(struct cxl_pool *p)
{
	const struct cxl_cost_params *c = &p->opts.cost;
	uint64_t zero = 0;

	memset(&p->cost, 0, sizeof(p->cost));
	/* The coherent mode issues no device operation: nothing to charge */
	if (!strcmp(c->name, "none") || !c->name[0] ||
	    p->mode == CXL_COH_COHERENT)
		return;
	p->cost.load_ps = (uint64_t)c->load_ns * 1000;
	p->cost.wb_ps = (uint64_t)c->wb_ns * 1000;
	p->cost.nt_ps = (uint64_t)c->nt_ns * 1000;
	p->cost.fence_ps = (uint64_t)c->fence_ns * 1000;
	/* 64 bytes at bw_gbs bytes per ns, in ps; env.c bounds bw_gbs */
	p->cost.line_ps = (uint64_t)(CXL_LINE * 1000.0 / c->bw_gbs + 0.5);
	/* the first attachment with a model sets the base; later ones keep it
	 * (a time before it would wrap) */
	atomic_compare_exchange_strong(&clock_base_ns, &zero, cxl_now_ns() - 1);
	p->cost.on = true;
}

CXL_EXPORT void cxl_pool_cost(const cxl_pool *p, struct cxl_cost_params *out)
{
	if (p->cost.on)
		*out = p->opts.cost;
	else
		cxl_cost_preset("none", out);
}

/* ---- charging ----------------------------------------------------------- */

/* Total charged, in ps. Relaxed: a statistic, not synchronization. */
static _Atomic uint64_t charged_ps;

/* This thread's writes: the write path is busy until wr_free, and the
 * last issued write completes at wr_done (0: none pending). */
static _Thread_local uint64_t wr_free, wr_done;

static inline uint64_t now_ps(void)
{
	return (cxl_now_ns() -
		atomic_load_explicit(&clock_base_ns, memory_order_relaxed)) *
	       1000u;
}

static void wait_until(uint64_t t)
{
	while (now_ps() < t) {
#if defined(__x86_64__)
		__builtin_ia32_pause();
#endif
	}
}

static inline void charge(uint64_t ps)
{
	atomic_fetch_add_explicit(&charged_ps, ps, memory_order_relaxed);
}

void cxl_cost_write(const struct cxl_pool *p, uint64_t nlines, bool nt)
{
	uint64_t t, start, done;

	if (!nlines)
		return;
	t = now_ps();
	start = wr_free > t ? wr_free : t;
	wr_free = start + nlines * p->cost.line_ps;
	done = start + (nt ? p->cost.nt_ps : p->cost.wb_ps) +
	       (nlines - 1) * p->cost.line_ps;
	if (done > wr_done)
		wr_done = done;
}

/* The fence's end: the thread's writes complete, plus the fence cost. */
static inline uint64_t fence_end(const struct cxl_pool *p, uint64_t t)
{
	uint64_t end = (wr_done > t ? wr_done : t) + p->cost.fence_ps;

	wr_done = 0;
	return end;
}

void cxl_cost_fence(const struct cxl_pool *p)
{
	uint64_t t = now_ps(), until = fence_end(p, t);

	charge(until - t);
	wait_until(until);
}

/* A fence, then a read of n lines: one clock read and one wait, since each
 * clock read (about 40 ns here) would add to what a poll costs. */
void cxl_cost_fence_read(const struct cxl_pool *p, uint64_t nlines)
{
	uint64_t t = now_ps(), until = fence_end(p, t);

	if (nlines)
		until += p->cost.load_ps + (nlines - 1) * p->cost.line_ps;
	charge(until - t);
	wait_until(until);
}

uint64_t cxl_cost_charged_ns(void)
{
	return atomic_load_explicit(&charged_ps, memory_order_relaxed) / 1000;
}

void cxl_cost_charged_reset(void)
{
	atomic_store_explicit(&charged_ps, 0, memory_order_relaxed);
}
