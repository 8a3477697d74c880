/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synchronization of windows over pool memory.
 *
 * Direct windows (window.c) synchronize through their pool object only,
 * with no message (cMPI §3.4); every word of it has a single writer:
 *  - fence: the atomic-free barrier, one sequence word per rank;
 *  - post/start/complete/wait: per-pair counters; target t's k-th post
 *    to o matches o's k-th start on t, o's k-th complete to t matches t's
 *    k-th wait;
 *  - lock/unlock, lock_all: a reader-writer bakery lock per target
 *    (cxl_bakery_lock); lock_all takes the shared lock of every target in
 *    rank order, so that it cannot deadlock with another lock_all. It
 *    takes them at once, not lazily at the first operation as MPI
 *    libraries may: a rank that holds an exclusive lock and waits for a
 *    lock_all holder to act (which MPI does not promise to work) waits
 *    until CXLMPI_SYNC_TIMEOUT_MS and gets an error, not a hang;
 *  - flush: RMA is complete when it returns (rma.c); flush orders it.
 * Coherence, in flush mode: origins write back what they put at the put,
 * and order it with a fence before any flag that announces it; a rank
 * writes back its own stores to its window (the changed lines only,
 * coherence.c) before it announces them, and invalidates its window
 * after it learnt that others wrote to it.
 *
 * Other windows over pool memory use the MPI library's synchronization,
 * with the same write-back before and invalidation after.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int win_fail(struct pool_win *w, int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "libcxlmpi: rank %d: ", w->rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	PMPI_Win_call_errhandler(w->win, code);
	return code;
}

static uint64_t *row(struct win_direct *d, int r)
{
	return d->rows + (uint64_t)r * d->stride;
}

/* Announce a new value of one of our own words. */
static void announce(struct win_direct *d, uint64_t *word, uint64_t v)
{
	(void)d;
	/* the write-backs before it complete first (sfence), then the word
	 * goes out with a non-temporal store, ordered by a second sfence */
	cxl_wfence(pool);
	cxl_flag_set(pool, word, v);
}

/* Wait until peer's word reaches v. */
static int await(struct pool_win *w, int peer, const uint64_t *word, uint64_t v,
		 const char *what)
{
	if (cxl_flag_wait_ge(pool, word, v, w->d->timeout_ms))
		return win_fail(w, MPI_ERR_OTHER,
				"%s: rank %d did not arrive within %u ms "
				"(CXLMPI_SYNC_TIMEOUT_MS); has it died? (%s)",
				what, peer, w->d->timeout_ms, cxl_errmsg());
	return MPI_SUCCESS;
}

int direct_barrier(struct pool_win *w)
{
	struct win_direct *d = w->d;
	uint64_t k = ++d->barrier_seq;

	announce(d, &row(d, d->me)[0], k);
	for (int j = 0; j < d->n; j++)
		if (j != d->me &&
		    await(w, j, &row(d, j)[0], k, "MPI_Win_fence"))
			return MPI_ERR_OTHER;
	return MPI_SUCCESS;
}

/* Our own window memory as origins left it: invalidate, new snapshot. */
static void take_in(struct pool_win *w)
{
	refresh_w(w);
}

int MPI_Win_fence(int assert, MPI_Win win)
{
	struct pool_win *w = win_find(win);
	int rc;

	if (!w)
		return PMPI_Win_fence(assert, win);
	if (!(assert &MPI_MODE_NOSTORE))
		publish_w(w);
	if (!w->d) {
		rc = PMPI_Win_fence(assert, win);
		refresh_w(w);
		return rc;
	}
	cxlmpi_stats.syncs++;
	cxl_wfence(pool); /* our puts' write-backs, in order */
	if ((rc = direct_barrier(w)))
		return rc;
	take_in(w);
	return MPI_SUCCESS;
}

/* The ranks of group in the window's communicator, into out (d->n
 * entries) and *n only if every member is in the window. */
static int translate(struct pool_win *w, MPI_Group group, int *out, int *n)
{
	MPI_Group wg;
	int *in, *tr, k;

	if (PMPI_Group_size(group, &k) != MPI_SUCCESS)
		return MPI_ERR_GROUP;
	if (k > w->d->n) /* more members than ranks: not all in the window */
		return MPI_ERR_GROUP;
	in = malloc(sizeof(int) * (size_t)(k ? k : 1));
	tr = malloc(sizeof(int) * (size_t)(k ? k : 1));
	if (!in || !tr) {
		free(in), free(tr);
		return MPI_ERR_NO_MEM;
	}
	for (int i = 0; i < k; i++)
		in[i] = i;
	PMPI_Win_get_group(w->win, &wg);
	PMPI_Group_translate_ranks(group, k, in, wg, tr);
	PMPI_Group_free(&wg);
	for (int i = 0; i < k; i++)
		if (tr[i] < 0 || tr[i] >= w->d->n) {
			free(in), free(tr);
			return MPI_ERR_GROUP;
		}
	memcpy(out, tr, sizeof(int) * (size_t)k);
	*n = k;
	free(in), free(tr);
	return MPI_SUCCESS;
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
	struct pool_win *w = win_find(win);
	struct win_direct *d;
	int rc;

	if (!w)
		return PMPI_Win_post(group, assert, win);
	if (!(assert &MPI_MODE_NOSTORE))
		publish_w(w);
	if (!(d = w->d))
		return PMPI_Win_post(group, assert, win);
	if ((rc = translate(w, group, d->expose, &d->nexpose)))
		return win_fail(w, rc,
				"MPI_Win_post: a group member is not "
				"in the window");
	if (assert & MPI_MODE_NOCHECK)
		return MPI_SUCCESS; /* the starts are known to come later */
	cxl_wfence(pool);
	for (int i = 0; i < d->nexpose; i++) {
		int o = d->expose[i];

		/* our word for o: o's start waits for this count */
		cxl_nt_store64(pool, &row(d, d->me)[ROW_POST(d->n) + o],
			       ++d->post_sent[o]);
	}
	cxl_wfence(pool);
	cxlmpi_stats.syncs++;
	return MPI_SUCCESS;
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
	struct pool_win *w = win_find(win);
	struct win_direct *d;
	int rc;

	if (!w || !(d = w->d)) {
		rc = PMPI_Win_start(group, assert, win);
		if (w)
			refresh_w(w);
		return rc;
	}
	if ((rc = translate(w, group, d->access, &d->naccess)))
		return win_fail(w, rc,
				"MPI_Win_start: a group member is not "
				"in the window");
	for (int i = 0; i < d->naccess && !(assert &MPI_MODE_NOCHECK); i++) {
		int t = d->access[i];

		if (await(w, t, &row(d, t)[ROW_POST(d->n) + d->me],
			  ++d->post_seen[t], "MPI_Win_start"))
			return MPI_ERR_OTHER;
	}
	if (w->nranks) /* a shared window: loads of the targets' segments */
		refresh_w(w);
	cxlmpi_stats.syncs++;
	return MPI_SUCCESS;
}

int MPI_Win_complete(MPI_Win win)
{
	struct pool_win *w = win_find(win);
	struct win_direct *d;

	if (!w)
		return PMPI_Win_complete(win);
	publish_w(w);
	if (!(d = w->d))
		return PMPI_Win_complete(win);
	/* our puts' and stores' write-backs complete before the counts */
	cxl_wfence(pool);
	for (int i = 0; i < d->naccess; i++) {
		int t = d->access[i];

		cxl_nt_store64(pool, &row(d, d->me)[ROW_DONE(d->n) + t],
			       ++d->done_sent[t]);
	}
	cxl_wfence(pool);
	d->naccess = 0;
	cxlmpi_stats.syncs++;
	return MPI_SUCCESS;
}

/* Have all origins of the exposure epoch completed? (wait: until they
 * have; test: just look) */
static int exposure_done(struct pool_win *w, bool block, int *flag)
{
	struct win_direct *d = w->d;

	*flag = 1;
	for (int i = 0; i < d->nexpose; i++) {
		int o = d->expose[i];
		const uint64_t *word = &row(d, o)[ROW_DONE(d->n) + d->me];

		if (block) {
			if (await(w, o, word, d->done_seen[o] + 1,
				  "MPI_Win_wait"))
				return MPI_ERR_OTHER;
		} else if (cxl_flag_get(pool, word) <= d->done_seen[o]) {
			*flag = 0;
			return MPI_SUCCESS;
		}
	}
	for (int i = 0; i < d->nexpose; i++)
		d->done_seen[d->expose[i]]++;
	d->nexpose = 0;
	take_in(w);
	cxlmpi_stats.syncs++;
	return MPI_SUCCESS;
}

int MPI_Win_wait(MPI_Win win)
{
	struct pool_win *w = win_find(win);
	int rc, flag;

	if (w && w->d)
		return exposure_done(w, true, &flag);
	rc = PMPI_Win_wait(win);
	if (w)
		refresh_w(w);
	return rc;
}

int MPI_Win_test(MPI_Win win, int *flag)
{
	struct pool_win *w = win_find(win);
	int rc;

	if (w && w->d)
		return exposure_done(w, false, flag);
	rc = PMPI_Win_test(win, flag);
	if (w && *flag)
		refresh_w(w);
	return rc;
}

static struct cxl_bakery lock_of(struct win_direct *d, int kind, int t)
{
	return (struct cxl_bakery){ .pool = pool,
				    .words = d->rows + kind + t,
				    .stride = d->stride,
				    .n = (uint32_t)d->n,
				    .me = (uint32_t)d->me };
}

/* Take the lock (ROW_LOCK) or accumulate lock (ROW_ACC) of target t. */
int direct_lock(struct pool_win *w, int kind, int t, bool exclusive)
{
	struct cxl_bakery b = lock_of(w->d, kind, t);

	cxlmpi_stats.locks++;
	if (cxl_bakery_lock(&b, exclusive, w->d->timeout_ms))
		return win_fail(
			w, MPI_ERR_OTHER,
			"lock of target %d: %s (CXLMPI_SYNC_TIMEOUT_MS)", t,
			cxl_errmsg());
	return MPI_SUCCESS;
}

void direct_unlock(struct pool_win *w, int kind, int t)
{
	struct cxl_bakery b = lock_of(w->d, kind, t);

	cxl_bakery_unlock(&b); /* fences our write-backs before the release */
}

/* Locking one's own window is how a process reads and writes its window
 * memory in a passive-target epoch: then it refreshes and publishes. A
 * shared window's segments are loaded and stored by every rank. */
static bool own_memory(struct pool_win *w, int rank)
{
	return w->rank == rank || w->nranks;
}

int MPI_Win_lock(int type, int rank, int assert, MPI_Win win)
{
	struct pool_win *w = win_find(win);
	struct win_direct *d;
	int rc;

	if (!w || !(d = w->d)) {
		rc = PMPI_Win_lock(type, rank, assert, win);
		if (w && w->rank == rank)
			refresh_w(w);
		return rc;
	}
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rank < 0 || rank >= d->n)
		return win_fail(w, MPI_ERR_RANK, "MPI_Win_lock: rank %d", rank);
	if (!(assert &MPI_MODE_NOCHECK) &&
	    (rc = direct_lock(w, ROW_LOCK(d->n), rank,
			      type == MPI_LOCK_EXCLUSIVE)))
		return rc;
	d->held[rank] = (type == MPI_LOCK_EXCLUSIVE ? HELD_EXCL : HELD_SHARED) |
			(assert &MPI_MODE_NOCHECK ? 0 : HELD_TAKEN);
	if (own_memory(w, rank))
		take_in(w);
	return MPI_SUCCESS;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
	struct pool_win *w = win_find(win);
	struct win_direct *d;

	if (!w || !(d = w->d)) {
		if (w && w->rank == rank)
			publish_w(w);
		return PMPI_Win_unlock(rank, win);
	}
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rank < 0 || rank >= d->n || !d->held[rank])
		return win_fail(w, MPI_ERR_RMA_SYNC,
				"MPI_Win_unlock: no lock held on rank %d",
				rank);
	if (own_memory(w, rank))
		publish_w(w);
	if (d->held[rank] & HELD_TAKEN)
		direct_unlock(w, ROW_LOCK(d->n), rank);
	else
		cxl_wfence(pool); /* our puts' write-backs complete here */
	d->held[rank] = 0;
	return MPI_SUCCESS;
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
	struct pool_win *w = win_find(win);
	struct win_direct *d;
	int rc;

	if (!w || !(d = w->d)) {
		rc = PMPI_Win_lock_all(assert, win);
		if (w)
			refresh_w(w);
		return rc;
	}
	for (int t = 0; t < d->n && !(assert &MPI_MODE_NOCHECK); t++)
		if ((rc = direct_lock(w, ROW_LOCK(d->n), t, false))) {
			while (t-- > 0)
				direct_unlock(w, ROW_LOCK(d->n), t);
			return rc;
		}
	d->all_held = HELD_SHARED | (assert &MPI_MODE_NOCHECK ? 0 : HELD_TAKEN);
	take_in(w);
	return MPI_SUCCESS;
}

int MPI_Win_unlock_all(MPI_Win win)
{
	struct pool_win *w = win_find(win);
	struct win_direct *d;

	if (!w || !(d = w->d)) {
		if (w)
			publish_w(w);
		return PMPI_Win_unlock_all(win);
	}
	if (!d->all_held)
		return win_fail(w, MPI_ERR_RMA_SYNC,
				"MPI_Win_unlock_all without MPI_Win_lock_all");
	publish_w(w);
	for (int t = d->n - 1; t >= 0 && (d->all_held & HELD_TAKEN); t--)
		direct_unlock(w, ROW_LOCK(d->n), t);
	if (!(d->all_held & HELD_TAKEN))
		cxl_wfence(pool); /* our puts' write-backs complete here */
	d->all_held = 0;
	return MPI_SUCCESS;
}

/* Direct RMA is complete when the call returns, its write-backs issued;
 * flush orders them (sfence), so that they precede what the caller does
 * next, such as a store of a flag that announces them. */
static int flushed(MPI_Win win)
{
	cxl_wfence(pool);
	cxlmpi_stats.syncs++;
	(void)win;
	return MPI_SUCCESS;
}

#define DIRECT(win) (win_find(win) && win_find(win)->d)

int MPI_Win_flush(int rank, MPI_Win win)
{
	return DIRECT(win) ? flushed(win) : PMPI_Win_flush(rank, win);
}

int MPI_Win_flush_all(MPI_Win win)
{
	return DIRECT(win) ? flushed(win) : PMPI_Win_flush_all(win);
}

int MPI_Win_flush_local(int rank, MPI_Win win)
{
	return DIRECT(win) ? flushed(win) : PMPI_Win_flush_local(rank, win);
}

int MPI_Win_flush_local_all(MPI_Win win)
{
	return DIRECT(win) ? flushed(win) : PMPI_Win_flush_local_all(win);
}
