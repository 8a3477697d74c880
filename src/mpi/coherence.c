/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Coherence of windows over pool memory (docs/cxlmpi.md has the rules).
 *
 * Each window keeps a private snapshot of the range it keeps coherent, as
 * of its last invalidation. Writing back means: the lines that differ
 * from the snapshot, and only those, so that a line only others changed
 * is never written back (a stale copy of it would undo their writes) and
 * a window is not flushed whole when a small part changed. Two hosts
 * writing different bytes of one line in one epoch remain unsafe.
 * On a hardware-coherent pool there is no snapshot and none of this runs.
 */
#include <string.h>

#include "internal.h"

/* Write back the changed lines of [off, end) of the window (no fence). */
static void publish_span(struct pool_win *w, size_t off, size_t end)
{
	size_t head = (uintptr_t)w->base & (CXL_LINE - 1);

	for (size_t n; off < end; off += n) {
		n = CXL_LINE - ((head + off) & (CXL_LINE - 1));
		if (n > end - off)
			n = end - off;
		if (memcmp(w->base + off, w->shadow + off, n)) {
			cxl_flush(pool, w->base + off, n);
			memcpy(w->shadow + off, w->base + off, n);
		}
	}
}

/* [p, p+len) clipped to the window's range, widened to whole lines. */
static bool clip(struct pool_win *w, const uint8_t *p, size_t len, size_t *off,
		 size_t *end)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + len, b = (uintptr_t)w->base;

	if (!w->shadow || !len || hi <= b || lo >= b + w->size)
		return false;
	lo = (lo < b ? b : lo) & ~(uintptr_t)(CXL_LINE - 1);
	hi = (hi + CXL_LINE - 1) & ~(uintptr_t)(CXL_LINE - 1);
	*off = lo < b ? 0 : lo - b;
	*end = hi - b > w->size ? w->size : hi - b;
	return true;
}

/* Our stores to the window reach the pool before others read it. */
void publish_w(struct pool_win *w)
{
	if (!w->size || !w->shadow)
		return;
	publish_span(w, 0, w->size);
	cxl_wfence(pool); /* write-backs complete before what follows */
}

/* Loads after this see what others wrote to the window; our own stores
 * are written back first, so that the invalidation cannot drop them. */
void refresh_w(struct pool_win *w)
{
	if (!w->size || !w->shadow)
		return;
	publish_w(w);
	cxl_inval(pool, w->base, w->size);
	memcpy(w->shadow, w->base, w->size);
}

/* Before libcxlmpi itself invalidates or writes part of the window: our
 * stores in those lines are written back first (no fence). */
void publish_range(struct pool_win *w, const uint8_t *p, size_t len)
{
	size_t off, end;

	if (clip(w, p, len, &off, &end))
		publish_span(w, off, end);
}

/* After libcxlmpi wrote back or invalidated part of the window: the
 * snapshot of those lines is what the pool now holds. */
void shadow_sync(struct pool_win *w, const uint8_t *p, size_t len)
{
	size_t off, end;

	if (clip(w, p, len, &off, &end))
		memcpy(w->shadow + off, w->base + off, end - off);
}

/* MPI_Barrier: the stores before it reach the pool, and loads after it
 * see the others' stores, in every pool window of the calling process (as
 * Win_sync + Barrier + Win_sync would). Only while pool windows exist. */
int MPI_Barrier(MPI_Comm comm)
{
	int rc;

	for (struct pool_win *w = win_list; w; w = w->next)
		publish_w(w);
	rc = PMPI_Barrier(comm);
	/* what the MPI library stored into the window during the barrier
	 * (RMA it applied for origins) is written back first */
	for (struct pool_win *w = win_list; w; w = w->next)
		refresh_w(w);
	return rc;
}

/* MPI_Win_sync: write back, then invalidate. A direct window has no MPI
 * library epoch to synchronize, so the library is not called for it. */
int MPI_Win_sync(MPI_Win win)
{
	struct pool_win *w = win_find(win);
	int rc = MPI_SUCCESS;

	if (!w)
		return PMPI_Win_sync(win);
	publish_w(w);
	if (!w->d)
		rc = PMPI_Win_sync(win);
	refresh_w(w);
	cxlmpi_stats.syncs++;
	return rc;
}
