/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Coherence primitives for each mode (docs/coherence.md has the protocol):
 *
 *            flush          inval            wfence   nt_store  nt_load
 * coherent   -              acquire fence    release  seq_cst   seq_cst
 * flush      clflushopt,    evict lines,     sfence   movnti    evict line,
 *            clwb or        then one mfence                     mfence, load
 *            clflush
 * uncached   as flush; cxl_copy_to_pool streams with movntdq instead
 * emulated   private->pool  pool->private    counted  pool word pool->private
 *            per line       per line                            then load
 *
 * With CXL_COST_MODEL, each counted operation also waits for what it costs
 * on the modelled device (costmodel.c): the COST() branches below.
 */
#include <cpuid.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "internal.h"

_Atomic int cxl_test_skip_flush;

/* Per-process counters. Relaxed: they are statistics, not synchronization. */
static struct {
	_Atomic uint64_t flush_lines, inval_lines, fences, nt_stores, nt_loads;
	_Atomic uint64_t nt_lines;
	_Atomic uint64_t polls, poll_inval_lines, poll_fences, poll_nt_loads;
} ctr;

#define COUNT(field, n) \
	atomic_fetch_add_explicit(&ctr.field, (n), memory_order_relaxed)

/* The cost model is on for this attachment: one predictable branch */
#define COST(p) CXL_UNLIKELY((p)->cost.on)

static struct cxl_cpu_features cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void detect_cpu(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;

	if (__get_cpuid(1, &a, &b, &c, &d)) {
		cpu.clflush = !!(d & (1u << 19));
		cpu.movnti = !!(d & (1u << 26)); /* SSE2 */
	}
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		cpu.clflushopt = !!(b & (1u << 23));
		cpu.clwb = !!(b & (1u << 24));
	}
#endif
}

void cxl_coh_init(void)
{
	pthread_once(&cpu_once, detect_cpu);
}

CXL_EXPORT void cxl_cpu_features_get(struct cxl_cpu_features *out)
{
	cxl_coh_init();
	*out = cpu;
}

int cxl_coh_select(struct cxl_pool *p)
{
	cxl_coh_init();
	if (p->mode == CXL_COH_COHERENT || p->mode == CXL_COH_EMULATED) {
		p->insn = CXL_FLUSH_AUTO;
		return CXL_OK;
	}
#if !defined(__x86_64__)
	return cxl_seterr(CXL_ENOTSUP,
			  "CXL_COHERENCE=%s needs x86-64 cache "
			  "flush instructions; use CXL_COHERENCE=coherent or "
			  "emulated on this CPU",
			  cxl_coh_mode_name(p->mode));
#else
	switch (p->opts.insn) {
	case CXL_FLUSH_AUTO:
		/* clwb writes back and may keep the line: the writer does not
		 * miss on its next write (cxlbench: 2-4x cheaper here). The
		 * protocol never needs the writer's copy gone, since readers
		 * invalidate before reading, and invalidation evicts with
		 * clflushopt or clflush whatever the write-back instruction
		 * (hw_evict) */
		p->insn = cpu.clwb	   ? CXL_FLUSH_CLWB
			  : cpu.clflushopt ? CXL_FLUSH_CLFLUSHOPT
					   : CXL_FLUSH_CLFLUSH;
		break;
	case CXL_FLUSH_CLFLUSHOPT:
	case CXL_FLUSH_CLWB:
	case CXL_FLUSH_CLFLUSH:
		p->insn = p->opts.insn;
		break;
	}
	if ((p->insn == CXL_FLUSH_CLFLUSHOPT && !cpu.clflushopt) ||
	    (p->insn == CXL_FLUSH_CLWB && !cpu.clwb) || !cpu.clflush ||
	    !cpu.movnti)
		return cxl_seterr(CXL_ENOTSUP,
				  "CXL_FLUSH_INSN=%s: this CPU "
				  "lacks the instruction; use "
				  "CXL_FLUSH_INSN=auto",
				  cxl_flush_insn_name(p->insn));
	return CXL_OK;
#endif
}

/* Line range [first, last) covering [ptr, ptr+len), clipped to the pool.
 * Memory outside the pool needs no coherence and is ignored. */
static inline bool line_range(const struct cxl_pool *p, const void *ptr,
			      size_t len, uintptr_t *first, uintptr_t *last)
{
	uintptr_t b = (uintptr_t)p->base, e = b + p->size;
	uintptr_t s = (uintptr_t)ptr, t = s + len;

	if (!len || t < s || s >= e || t <= b)
		return false;
	if (s < b)
		s = b;
	if (t > e)
		t = e;
	*first = ALIGN_DOWN(s, CXL_LINE);
	*last = ALIGN_UP(t, CXL_LINE);
	return true;
}

#if defined(__x86_64__)
static inline void hw_flush(enum cxl_flush_insn insn, uintptr_t a, uintptr_t e)
{
	switch (insn) {
	case CXL_FLUSH_CLWB:
		for (; a < e; a += CXL_LINE)
			__asm__ volatile("clwb %0" : "+m"(*(volatile char *)a));
		break;
	case CXL_FLUSH_CLFLUSH:
		for (; a < e; a += CXL_LINE)
			__asm__ volatile("clflush %0"
					 : "+m"(*(volatile char *)a));
		break;
	default:
		for (; a < e; a += CXL_LINE)
			__asm__ volatile("clflushopt %0"
					 : "+m"(*(volatile char *)a));
		break;
	}
}

/* Invalidation must evict: clwb may keep the line, so clwb mode evicts
 * with clflushopt (or clflush on a CPU without it). */
static inline void hw_evict(enum cxl_flush_insn insn, uintptr_t a, uintptr_t e)
{
	if (insn == CXL_FLUSH_CLWB)
		insn = cpu.clflushopt ? CXL_FLUSH_CLFLUSHOPT
				      : CXL_FLUSH_CLFLUSH;
	hw_flush(insn, a, e);
}
#endif

CXL_EXPORT void cxl_flush(cxl_pool *p, const void *ptr, size_t len)
{
	uintptr_t a, e;

	if (p->coh == CXL_COH_COHERENT || !line_range(p, ptr, len, &a, &e))
		return;
	COUNT(flush_lines, (e - a) / CXL_LINE);
	if (COST(p)) /* issued now, completes by the next fence */
		cxl_cost_write(p, (e - a) / CXL_LINE, false);
	if (p->coh == CXL_COH_EMULATED) {
		/* Fault injection for the negative test: the write-back is
		 * "forgotten", exactly the bug the emulator must expose. */
		if (atomic_load_explicit(&cxl_test_skip_flush,
					 memory_order_relaxed))
			return;
		cxl_emu_flush(p, a - (uintptr_t)p->base, (e - a) / CXL_LINE);
		return;
	}
#if defined(__x86_64__)
	hw_flush(p->insn, a, e);
#endif
}

void cxl_inval2(cxl_pool *p, const void *ptr, size_t len, const void *ptr2,
		size_t len2)
{
	uintptr_t a, e, a2 = 0, e2 = 0;
	size_t n;

	if (p->coh == CXL_COH_COHERENT) {
		/* Pairs with the writer's release: later loads see its data. */
		atomic_thread_fence(memory_order_acquire);
		return;
	}
	if (!line_range(p, ptr, len, &a, &e))
		a = e = 0;
	if (len2 && !line_range(p, ptr2, len2, &a2, &e2))
		a2 = e2 = 0;
	n = (e - a + e2 - a2) / CXL_LINE;
	if (!n)
		return;
	COUNT(inval_lines, n);
	COUNT(fences, 1);
	/* Cost model: the mfence waits for this thread's writes, then the
	 * lines are read from the device (charged before the caller's loads) */
	if (COST(p))
		cxl_cost_fence_read(p, n);
	if (p->coh == CXL_COH_EMULATED) {
		if (e > a)
			cxl_emu_inval(p, a - (uintptr_t)p->base,
				      (e - a) / CXL_LINE);
		if (e2 > a2)
			cxl_emu_inval(p, a2 - (uintptr_t)p->base,
				      (e2 - a2) / CXL_LINE);
		atomic_thread_fence(memory_order_seq_cst);
		return;
	}
#if defined(__x86_64__)
	if (e > a)
		hw_evict(p->insn, a, e);
	if (e2 > a2)
		hw_evict(p->insn, a2, e2);
	/* The evictions must complete before the loads that follow, or a
	 * load could still hit the stale line. */
	_mm_mfence();
#endif
}

CXL_EXPORT void cxl_inval(cxl_pool *p, const void *ptr, size_t len)
{
	cxl_inval2(p, ptr, len, NULL, 0);
}

CXL_EXPORT void cxl_wfence(cxl_pool *p)
{
	if (p->coh == CXL_COH_COHERENT) {
		atomic_thread_fence(memory_order_release);
		return;
	}
	COUNT(fences, 1);
	if (COST(p))
		cxl_cost_fence(p);
#if defined(__x86_64__)
	if (p->coh != CXL_COH_EMULATED) {
		/* Orders clflushopt/clwb and movnti before later stores. */
		_mm_sfence();
		return;
	}
#endif
	atomic_thread_fence(memory_order_seq_cst);
}

CXL_EXPORT void cxl_fence(cxl_pool *p)
{
	if (p->coh != CXL_COH_COHERENT) {
		COUNT(fences, 1);
		if (COST(p))
			cxl_cost_fence(p);
	}
#if defined(__x86_64__)
	if (p->coh == CXL_COH_FLUSH || p->coh == CXL_COH_UNCACHED) {
		_mm_mfence();
		return;
	}
#endif
	atomic_thread_fence(memory_order_seq_cst);
}

CXL_EXPORT void cxl_nt_store64(cxl_pool *p, uint64_t *ptr, uint64_t v)
{
	switch (p->coh) {
	case CXL_COH_COHERENT:
		/* Release, not seq_cst: as in the other modes, the caller's
		 * cxl_fence() orders it before later loads. A seq_cst store is
		 * an xchg that waits for every store before it to drain, such
		 * as the copy out of a slot just ahead of its token. */
		__atomic_store_n(ptr, v, __ATOMIC_RELEASE);
		return;
	case CXL_COH_EMULATED:
		COUNT(nt_stores, 1);
		if (COST(p))
			cxl_cost_write(p, 1, true);
		cxl_emu_nt_store64(p, (uint64_t)((uint8_t *)ptr - p->base), v);
		return;
	default:
		COUNT(nt_stores, 1);
		if (COST(p))
			cxl_cost_write(p, 1, true);
#if defined(__x86_64__)
		/* Bypasses (and evicts) the cached line; becomes visible at
		 * the next sfence/mfence, which the caller issues. */
		_mm_stream_si64((long long *)ptr, (long long)v);
#else
		__atomic_store_n(ptr, v, __ATOMIC_SEQ_CST);
#endif
		return;
	}
}

CXL_EXPORT uint64_t cxl_nt_load64(cxl_pool *p, const uint64_t *ptr)
{
	uintptr_t a, e;

	if (p->coh == CXL_COH_COHERENT)
		return __atomic_load_n(ptr, __ATOMIC_SEQ_CST);
	COUNT(nt_loads, 1);
	COUNT(fences, 1); /* every mode but coherent fences before the load */
	/* Cost model: the fence, then one device round trip */
	if (COST(p))
		cxl_cost_fence_read(p, 1);
	if (!line_range(p, ptr, sizeof(*ptr), &a, &e))
		return __atomic_load_n(ptr, __ATOMIC_SEQ_CST);
	if (p->coh == CXL_COH_EMULATED) {
		cxl_emu_inval(p, a - (uintptr_t)p->base, 1);
		return __atomic_load_n(ptr, __ATOMIC_SEQ_CST);
	}
#if defined(__x86_64__)
	/* x86 has no uncached load for write-back memory: evict the line,
	 * fence, then load from the device. */
	hw_evict(p->insn, a, e);
	_mm_mfence();
#endif
	return __atomic_load_n(ptr, __ATOMIC_SEQ_CST);
}

#if defined(__x86_64__)
/* Streaming copy for the uncached mode: 16-byte non-temporal stores for the
 * aligned middle, ordinary stores + flush for the unaligned edges. */
static void nt_copy(cxl_pool *p, uint8_t *d, const uint8_t *s, size_t n)
{
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;

	if (head > n)
		head = n;
	/* lines touched by the streamed middle, for the cost counters */
	if (n > head + 16) {
		uint64_t lines = (ALIGN_UP((uintptr_t)d + n, CXL_LINE) -
				  ALIGN_DOWN((uintptr_t)d + head, CXL_LINE)) /
				 CXL_LINE;

		COUNT(nt_lines, lines);
		if (COST(p))
			cxl_cost_write(p, lines, true);
	}
	if (head) {
		memcpy(d, s, head);
		cxl_flush(p, d, head);
		d += head, s += head, n -= head;
	}
	for (; n >= 16; d += 16, s += 16, n -= 16)
		_mm_stream_si128((__m128i *)d,
				 _mm_loadu_si128((const __m128i *)s));
	if (n) {
		memcpy(d, s, n);
		cxl_flush(p, d, n);
	}
}
#endif

CXL_EXPORT void cxl_copy_to_pool(cxl_pool *p, void *dst, const void *src,
				 size_t n)
{
#if defined(__x86_64__)
	/* Large copies stream in the flush mode too: streaming stores leave
	 * no dirty line behind, so they need no per-line flush, only the
	 * caller's cxl_wfence (sfence orders them before later stores). */
	if (p->coh == CXL_COH_UNCACHED ||
	    (p->coh == CXL_COH_FLUSH && n >= CXL_STREAM_COPY_MIN)) {
		nt_copy(p, dst, src, n);
		return;
	}
	/* And in the coherent mode above one page: the reader then loads the
	 * data from memory instead of taking every line out of the writer's
	 * cache, which here was both faster and steadier (docs/benchmarks.md,
	 * "Decisions"), and the writer skips the read for ownership of each
	 * destination line; a page still moved faster cache to cache.
	 * cxl_wfence is no sfence in this mode, so the copy ends with one:
	 * streaming stores are weakly ordered. */
	if (p->coh == CXL_COH_COHERENT && n > CXL_STREAM_COPY_MIN) {
		nt_copy(p, dst, src, n);
		_mm_sfence();
		return;
	}
#endif
	memcpy(dst, src, n);
	cxl_flush(p, dst, n);
}

CXL_EXPORT void cxl_copy_from_pool(cxl_pool *p, void *dst, const void *src,
				   size_t n)
{
	cxl_inval(p, src, n);
	memcpy(dst, src, n);
}

CXL_EXPORT void cxl_coh_counters_get(struct cxl_coh_counters *o)
{
	o->flush_lines =
		atomic_load_explicit(&ctr.flush_lines, memory_order_relaxed);
	o->inval_lines =
		atomic_load_explicit(&ctr.inval_lines, memory_order_relaxed);
	o->fences = atomic_load_explicit(&ctr.fences, memory_order_relaxed);
	o->nt_stores =
		atomic_load_explicit(&ctr.nt_stores, memory_order_relaxed);
	o->nt_loads = atomic_load_explicit(&ctr.nt_loads, memory_order_relaxed);
	o->nt_lines = atomic_load_explicit(&ctr.nt_lines, memory_order_relaxed);
	o->cost_ns = cxl_cost_charged_ns();
	o->polls = atomic_load_explicit(&ctr.polls, memory_order_relaxed);
	o->poll_inval_lines = atomic_load_explicit(&ctr.poll_inval_lines,
						   memory_order_relaxed);
	o->poll_fences =
		atomic_load_explicit(&ctr.poll_fences, memory_order_relaxed);
	o->poll_nt_loads =
		atomic_load_explicit(&ctr.poll_nt_loads, memory_order_relaxed);
}

CXL_EXPORT void cxl_coh_count_poll(const struct cxl_coh_counters *before)
{
	struct cxl_coh_counters now;

	cxl_coh_counters_get(&now);
	COUNT(polls, 1);
	COUNT(poll_inval_lines, now.inval_lines - before->inval_lines);
	COUNT(poll_fences, now.fences - before->fences);
	COUNT(poll_nt_loads, now.nt_loads - before->nt_loads);
}

CXL_EXPORT void cxl_coh_counters_reset(void)
{
	atomic_store(&ctr.flush_lines, 0);
	atomic_store(&ctr.inval_lines, 0);
	atomic_store(&ctr.fences, 0);
	atomic_store(&ctr.nt_stores, 0);
	atomic_store(&ctr.nt_loads, 0);
	atomic_store(&ctr.nt_lines, 0);
	cxl_cost_charged_reset();
	atomic_store(&ctr.polls, 0);
	atomic_store(&ctr.poll_inval_lines, 0);
	atomic_store(&ctr.poll_fences, 0);
	atomic_store(&ctr.poll_nt_loads, 0);
}
