/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libcxlmpi, first slice (issue 5): a PMPI layer that puts MPI memory in
 * the CXL pool, so that the cxl provider moves it without staging copies.
 *
 *  - MPI_Alloc_mem returns pool memory: an arena object per allocation,
 *    in the process's shared attachment (cxl_pool_attach_shared), which
 *    the provider shares. A send from such a buffer passes a pointer (the
 *    receiver copies once), and a window created over it (MPI_Win_create)
 *    is registered by the MPI library in the pool, where origins read and
 *    write it directly (the provider's region tables).
 *    MPI_Free_mem gives it back. With the info key "cxl_pool" = "false",
 *    or CXLMPI_ALLOC_MEM=0, or no pool configured (CXL_POOL unset), the
 *    MPI library's own allocator is used, unchanged.
 *  - Coherence at synchronization points, for windows whose memory lies
 *    in the pool: before MPI_Win_fence, _post, _complete, _unlock_all,
 *    _sync and _unlock of its own rank, this process writes back the
 *    lines of the window it stored to; after MPI_Win_fence, _start,
 *    _wait, _lock_all, _sync and _lock of its own rank, it writes those
 *    back too and then invalidates the window, so that its loads see what
 *    origins wrote directly. MPI_Win_flush(_all) completes the origin's
 *    operations, which the provider already wrote back: nothing to add.
 *    MPI_Barrier does both for every pool window of the process. The
 * lines it stored to are found by comparing the window with a private snapshot
 * taken at the last invalidation: only those are written back, never a line
 * that only origins changed (writing back a stale copy of it would undo their
 * writes). Two hosts writing different bytes of one line in one epoch remain
 * unsafe.
 *
 * Built once per MPI library (its mpicc): libcxlmpi-mpich.so and
 * libcxlmpi-ompi.so. Load it with LD_PRELOAD (cxlrun --cxlmpi) or link it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "cxlshm/cxlshm.h"

/* One allocation in the pool. */
struct pool_mem {
	struct pool_mem *next;
	struct cxl_obj obj;
	char name[64];
};

/* One window over pool memory. */
struct pool_win {
	struct pool_win *next;
	MPI_Win win;
	uint8_t *base;	 /* the range kept coherent: the window, or for a */
	size_t size;	 /* shared window the whole object (all segments) */
	uint8_t *shadow; /* that range as of the last invalidation */
	int rank;	 /* ours in the window's communicator */
	void *owned;	 /* MPI_Win_allocate: our MPI_Alloc_mem memory */
	/* MPI_Win_allocate_shared across hosts: one object, rank segments */
	struct cxl_obj shobj;
	char shname[64];
	int nranks;
	MPI_Aint *seg_off, *seg_size;
	int *seg_unit;
};

static cxl_pool *pool;
static int pool_state; /* 0 untried, 1 attached, -1 not available */
static struct pool_mem *mems;
static struct pool_win *wins;
static unsigned long mem_seq;

static cxl_pool *get_pool(void)
{
	struct cxl_pool_opts o;
	const char *e = getenv("CXLMPI_ALLOC_MEM");

	if (pool_state)
		return pool_state > 0 ? pool : NULL;
	pool_state = -1;
	if (e && !strcmp(e, "0"))
		return NULL;
	if (!getenv("CXL_POOL"))
		return NULL; /* no pool configured: the MPI's allocator */
	if (cxl_opts_from_env(&o) || cxl_pool_attach_shared(&o, &pool)) {
		fprintf(stderr,
			"libcxlmpi: cannot attach the pool (%s); MPI_Alloc_mem "
			"uses the MPI library's allocator\n",
			cxl_errmsg());
		return NULL;
	}
	pool_state = 1;
	return pool;
}

static bool info_says_no(MPI_Info info)
{
	char v[16];
	int flag = 0;

	if (info == MPI_INFO_NULL)
		return false;
	PMPI_Info_get(info, "cxl_pool", sizeof(v) - 1, v, &flag);
	return flag && (!strcmp(v, "false") || !strcmp(v, "0"));
}

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
	cxl_pool *p = info_says_no(info) || size <= 0 ? NULL : get_pool();
	struct pool_mem *m;

	if (!p || !(m = calloc(1, sizeof(*m))))
		return PMPI_Alloc_mem(size, info, baseptr);
	snprintf(m->name, sizeof(m->name), "cxlmpi.mem.%ld.%lu", (long)getpid(),
		 ++mem_seq);
	if (cxl_obj_create(p, m->name, (uint64_t)size, CXL_OBJ_ALIGN_2M,
			   &m->obj)) {
		fprintf(stderr,
			"libcxlmpi: no pool memory for %lld bytes (%s); using "
			"the MPI library's allocator\n",
			(long long)size, cxl_errmsg());
		free(m);
		return PMPI_Alloc_mem(size, info, baseptr);
	}
	m->next = mems;
	mems = m;
	*(void **)baseptr = m->obj.ptr;
	return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
	for (struct pool_mem **pp = &mems; *pp; pp = &(*pp)->next) {
		struct pool_mem *m = *pp;

		if (m->obj.ptr != base)
			continue;
		*pp = m->next;
		cxl_obj_close(&m->obj);
		cxl_obj_destroy(pool, m->name);
		free(m);
		return MPI_SUCCESS;
	}
	return PMPI_Free_mem(base);
}

/* ---- windows over pool memory ------------------------------------------- */

/* Keep [base, base+size) of win coherent at synchronization points. The
 * caller's stores so far are written back (own=true: nobody else can
 * have written that memory yet) or the range is read fresh (shared). */
static struct pool_win *track(MPI_Win win, MPI_Comm comm, uint8_t *base,
			      size_t size, bool own)
{
	struct pool_win *w = calloc(1, sizeof(*w));

	if (!w || !(w->shadow = malloc(size))) {
		fprintf(stderr,
			"libcxlmpi: no memory for the snapshot of a "
			"window of %zu bytes; it is not kept coherent\n",
			size);
		free(w);
		return NULL;
	}
	w->win = win;
	PMPI_Comm_rank(comm, &w->rank);
	w->base = base;
	w->size = size;
	if (own) {
		cxl_flush(pool, base, size);
		cxl_wfence(pool);
	} else {
		cxl_inval(pool, base, size);
	}
	memcpy(w->shadow, base, size);
	w->next = wins;
	wins = w;
	return w;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info,
		   MPI_Comm comm, MPI_Win *win)
{
	int rc = PMPI_Win_create(base, size, disp_unit, info, comm, win);

	if (rc == MPI_SUCCESS && pool && size > 0 &&
	    cxl_pool_offset(pool, base) != UINT64_MAX)
		track(*win, comm, base, (size_t)size, true);
	return rc;
}

/* MPI_Win_allocate: pool memory from MPI_Alloc_mem, then a window. */
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		     void *baseptr, MPI_Win *win)
{
	void *mem = NULL;
	int rc;

	if (info_says_no(info) || size <= 0 || !get_pool())
		return PMPI_Win_allocate(size, disp_unit, info, comm, baseptr,
					 win);
	if ((rc = MPI_Alloc_mem(size, info, &mem)) != MPI_SUCCESS)
		return rc;
	rc = MPI_Win_create(mem, size, disp_unit, info, comm, win);
	if (rc != MPI_SUCCESS) {
		MPI_Free_mem(mem);
		return rc;
	}
	for (struct pool_win *w = wins; w; w = w->next)
		if (w->win == *win)
			w->owned = mem;
	if (!wins || wins->win != *win) { /* not in the pool: remember it */
		struct pool_win *w = calloc(1, sizeof(*w));

		if (w) {
			w->win = *win;
			w->owned = mem;
			w->next = wins;
			wins = w;
		}
	}
	*(void **)baseptr = mem;
	return MPI_SUCCESS;
}

/* Do the processes of comm run on more than one host? */
static bool spans_hosts(MPI_Comm comm)
{
	char me[MPI_MAX_PROCESSOR_NAME] = { 0 }, *all;
	int n, len;
	bool multi = false;

	PMPI_Comm_size(comm, &n);
	PMPI_Get_processor_name(me, &len);
	if (!(all = calloc((size_t)n, MPI_MAX_PROCESSOR_NAME)))
		return false;
	PMPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
		       MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
	for (int i = 1; i < n && !multi; i++)
		multi = strcmp(all, all + (size_t)i * MPI_MAX_PROCESSOR_NAME);
	free(all);
	return multi;
}

static bool info_true(MPI_Info info, const char *key)
{
	char v[16];
	int flag = 0;

	if (info == MPI_INFO_NULL)
		return false;
	PMPI_Info_get(info, key, sizeof(v) - 1, v, &flag);
	return flag && !strcmp(v, "true");
}

/*
 * MPI_Win_allocate_shared over a communicator that spans hosts attached
 * to the pool: every rank's segment lies in one pool object, in rank
 * order, contiguous (or each on its own 4 KiB boundary with the info key
 * alloc_shared_noncontig), so loads and stores reach every segment, with
 * MPI_Win_sync for coherence. The window itself is created over each
 * rank's segment, so RMA and synchronization work as usual. On one host,
 * or without a pool, MPI's own MPI_Win_allocate_shared runs unchanged.
 */
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info,
			    MPI_Comm comm, void *baseptr, MPI_Win *win)
{
	bool noncontig = info_true(info, "alloc_shared_noncontig");
	MPI_Aint total = 0, *sizes, *offs;
	int n, rank, *units, ok;
	char name[64] = { 0 };
	struct cxl_obj obj;
	struct pool_win *w;
	int rc;

	/* collective decisions: every rank takes the same branch */
	ok = get_pool() != NULL && !info_says_no(info);
	PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
	if (!ok || !spans_hosts(comm))
		return PMPI_Win_allocate_shared(size, disp_unit, info, comm,
						baseptr, win);
	PMPI_Comm_size(comm, &n);
	PMPI_Comm_rank(comm, &rank);
	sizes = calloc((size_t)n, sizeof(*sizes));
	offs = calloc((size_t)n, sizeof(*offs));
	units = calloc((size_t)n, sizeof(*units));
	if (!sizes || !offs || !units)
		PMPI_Abort(comm, 1); /* no memory for n words: nothing sane */
	PMPI_Allgather(&size, 1, MPI_AINT, sizes, 1, MPI_AINT, comm);
	PMPI_Allgather(&disp_unit, 1, MPI_INT, units, 1, MPI_INT, comm);
	for (int i = 0; i < n; i++) {
		if (noncontig)
			total = (total + 4095) & ~(MPI_Aint)4095;
		offs[i] = total;
		total += sizes[i];
	}
	if (rank == 0) {
		snprintf(name, sizeof(name), "cxlmpi.shw.%ld.%lu",
			 (long)getpid(), ++mem_seq);
		if (cxl_obj_create(pool, name, (uint64_t)(total ? total : 1),
				   CXL_OBJ_ALIGN_2M, &obj)) {
			fprintf(stderr,
				"libcxlmpi: no pool memory for a shared window "
				"of %lld bytes (%s)\n",
				(long long)total, cxl_errmsg());
			name[0] = 0;
		} else {
			memset(obj.ptr, 0, (size_t)(total ? total : 1));
			cxl_flush(pool, obj.ptr, (size_t)(total ? total : 1));
			cxl_wfence(pool);
		}
	}
	PMPI_Bcast(name, sizeof(name), MPI_CHAR, 0, comm);
	if (!name[0] || (rank && cxl_obj_open(pool, name, &obj))) {
		free(sizes), free(offs), free(units);
		return MPI_ERR_NO_MEM;
	}
	rc = PMPI_Win_create((uint8_t *)obj.ptr + offs[rank], size, disp_unit,
			     info, comm, win);
	if (rc != MPI_SUCCESS) {
		cxl_obj_close(&obj);
		free(sizes), free(offs), free(units);
		return rc;
	}
	w = track(*win, comm, obj.ptr, (size_t)(total ? total : 1), false);
	if (w) {
		w->shobj = obj;
		snprintf(w->shname, sizeof(w->shname), "%s", name);
		w->nranks = n;
		w->seg_off = offs;
		w->seg_size = sizes;
		w->seg_unit = units;
	}
	*(void **)baseptr = (uint8_t *)obj.ptr + offs[rank];
	return MPI_SUCCESS;
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
			 void *baseptr)
{
	struct pool_win *w = wins;

	while (w && !(w->win == win && w->nranks))
		w = w->next;
	if (!w)
		return PMPI_Win_shared_query(win, rank, size, disp_unit,
					     baseptr);
	if (rank == MPI_PROC_NULL) /* the first segment of nonzero size */
		for (rank = 0; rank < w->nranks - 1 && !w->seg_size[rank];)
			rank++;
	if (rank < 0 || rank >= w->nranks)
		return MPI_ERR_RANK;
	*size = w->seg_size[rank];
	*disp_unit = w->seg_unit[rank];
	*(void **)baseptr = (uint8_t *)w->shobj.ptr + w->seg_off[rank];
	return MPI_SUCCESS;
}

int MPI_Win_free(MPI_Win *win)
{
	struct pool_win *w = NULL;
	int rc;

	for (struct pool_win **pp = &wins; *pp; pp = &(*pp)->next)
		if ((*pp)->win == *win) {
			w = *pp;
			*pp = w->next;
			break;
		}
	rc = PMPI_Win_free(win); /* collective: nobody uses it after this */
	if (w) {
		if (w->owned)
			MPI_Free_mem(w->owned);
		if (w->nranks) {
			cxl_obj_close(&w->shobj);
			if (w->rank == 0) /* freed when the last one closes */
				cxl_obj_destroy(pool, w->shname);
		}
		free(w->seg_off), free(w->seg_size), free(w->seg_unit);
		free(w->shadow);
		free(w);
	}
	return rc;
}

static struct pool_win *find(MPI_Win win)
{
	for (struct pool_win *w = wins; w; w = w->next)
		if (w->win == win)
			return w;
	return NULL;
}

/* Our stores to the window reach the pool before others read it: the
 * lines that differ from the snapshot, and only those. */
static void publish_w(struct pool_win *w)
{
	size_t off = 0, head = (uintptr_t)w->base & (CXL_LINE - 1);

	for (size_t n; off < w->size; off += n) {
		n = CXL_LINE - ((head + off) & (CXL_LINE - 1));
		if (n > w->size - off)
			n = w->size - off;
		if (memcmp(w->base + off, w->shadow + off, n)) {
			cxl_flush(pool, w->base + off, n);
			memcpy(w->shadow + off, w->base + off, n);
		}
	}
	cxl_wfence(pool);
}

static void publish(MPI_Win win)
{
	struct pool_win *w = find(win);

	if (w && w->size)
		publish_w(w);
}

/* Loads after this see what origins wrote to the window; our own stores
 * are written back first, so that the invalidation cannot drop them. */
static void refresh_w(struct pool_win *w)
{
	publish_w(w);
	cxl_inval(pool, w->base, w->size);
	memcpy(w->shadow, w->base, w->size);
}

static void refresh(MPI_Win win)
{
	struct pool_win *w = find(win);

	if (w && w->size)
		refresh_w(w);
}

int MPI_Win_fence(int assert, MPI_Win win)
{
	int rc;

	publish(win);
	rc = PMPI_Win_fence(assert, win);
	refresh(win);
	return rc;
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
	publish(win);
	return PMPI_Win_post(group, assert, win);
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
	int rc = PMPI_Win_start(group, assert, win);

	refresh(win);
	return rc;
}

int MPI_Win_complete(MPI_Win win)
{
	publish(win);
	return PMPI_Win_complete(win);
}

int MPI_Win_wait(MPI_Win win)
{
	int rc = PMPI_Win_wait(win);

	refresh(win);
	return rc;
}

/* Locking one's own window is how a process reads and writes its window
 * memory in a passive-target epoch: only then does it refresh and
 * publish; an origin locking a peer has nothing of its own to move. */
static bool self(int rank, MPI_Win win)
{
	struct pool_win *w = find(win);

	return w && w->rank == rank;
}

int MPI_Win_lock(int type, int rank, int assert, MPI_Win win)
{
	int rc = PMPI_Win_lock(type, rank, assert, win);

	if (self(rank, win))
		refresh(win);
	return rc;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
	if (self(rank, win))
		publish(win);
	return PMPI_Win_unlock(rank, win);
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
	int rc = PMPI_Win_lock_all(assert, win);

	refresh(win);
	return rc;
}

int MPI_Win_unlock_all(MPI_Win win)
{
	publish(win);
	return PMPI_Win_unlock_all(win);
}

/* MPI_Barrier: the stores before it reach the pool, and loads after it
 * see the others' stores, in every pool window of the calling process (as
 * Win_sync + Barrier + Win_sync would). Only while pool windows exist. */
int MPI_Barrier(MPI_Comm comm)
{
	int rc;

	for (struct pool_win *w = wins; w; w = w->next)
		if (w->size)
			publish_w(w);
	rc = PMPI_Barrier(comm);
	/* what the MPI library stored into the window during the barrier
	 * (RMA it applied for origins) is written back first */
	for (struct pool_win *w = wins; w; w = w->next)
		if (w->size)
			refresh_w(w);
	return rc;
}

int MPI_Win_sync(MPI_Win win)
{
	int rc;

	publish(win);
	rc = PMPI_Win_sync(win);
	refresh(win);
	return rc;
}
