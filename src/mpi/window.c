/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Windows over pool memory: creation, the cross-host shared window, and
 * the setup of direct windows.
 *
 * A window is direct when every rank's window memory lies in the one pool
 * all of them attached (MPI_Win_allocate and MPI_Win_allocate_shared
 * through libcxlmpi, MPI_Win_create over MPI_Alloc_mem memory). libcxlmpi
 * then does its RMA itself, as loads, stores and copies by the origin
 * (rma.c), and its synchronization through a pool object of flags,
 * counters and lock words (epoch.c): the MPI library creates and frees the
 * window but never sees an epoch or an operation on it. Any other window
 * (some rank's memory not in the pool, MPI_Win_create_dynamic,
 * CXLMPI_DIRECT_RMA=0) is the MPI library's, with only coherence added at
 * its synchronization points (epoch.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Rank 0 creates the window's synchronization object, zeroed; every rank
 * opens it and checks its header. Collective; false if any rank failed. */
static bool open_sync(struct win_direct *d, MPI_Comm comm, bool ok)
{
	uint64_t bytes = CXL_LINE + (uint64_t)d->n * ROW_WORDS(d->n) * 8;
	char name[64] = { 0 };
	uint64_t *hdr;

	if (d->me == 0 && ok) {
		obj_name(name, sizeof(name), "ws");
		if (cxl_obj_create(pool, name, bytes, CXL_OBJ_ZERO, &d->sync)) {
			fprintf(stderr,
				"libcxlmpi: no pool memory for the "
				"synchronization object of a window of %d ranks "
				"(%llu bytes: %s); the window is the MPI "
				"library's. Grow the pool (CXL_POOL_SIZE)\n",
				d->n, (unsigned long long)bytes, cxl_errmsg());
			name[0] = 0;
		} else {
			hdr = d->sync.ptr;
			hdr[1] = (uint64_t)d->n;
			cxl_flush(pool, hdr, CXL_LINE);
			cxl_wfence(pool); /* n before the magic */
			cxl_flag_set(pool, &hdr[0], WSYNC_MAGIC);
		}
	}
	PMPI_Bcast(name, sizeof(name), MPI_CHAR, 0, comm);
	ok = ok && name[0];
	if (ok && d->me) {
		if (cxl_obj_open(pool, name, &d->sync)) {
			fprintf(stderr, "libcxlmpi: %s\n", cxl_errmsg());
			ok = false;
		} else if (d->sync.size < bytes ||
			   cxl_flag_get(pool, d->sync.ptr) != WSYNC_MAGIC ||
			   cxl_flag_get(pool, (uint64_t *)d->sync.ptr + 1) !=
				   (uint64_t)d->n) {
			fprintf(stderr,
				"libcxlmpi: pool object %s is not the "
				"synchronization object of a %d-rank window "
				"(corrupt pool?)\n",
				name, d->n);
			cxl_obj_close(&d->sync);
			ok = false;
		}
	}
	PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_C_BOOL, MPI_LAND, comm);
	if (!ok) {
		if (name[0] && (d->me == 0 || d->sync.ptr))
			cxl_obj_close(&d->sync);
		if (name[0] && d->me == 0)
			cxl_obj_destroy(pool, name);
		return false;
	}
	snprintf(d->syncname, sizeof(d->syncname), "%s", name);
	d->rows = (uint64_t *)((uint8_t *)d->sync.ptr + CXL_LINE);
	d->stride = ROW_WORDS(d->n);
	return true;
}

/*
 * Make w a direct window if every rank's memory (mine, size bytes) lies in
 * the same pool. Collective over comm; w may be NULL on ranks that do not
 * track the window (then nobody's window is direct).
 */
int direct_setup(struct pool_win *w, MPI_Comm comm, uint8_t *mine,
		 MPI_Aint size, int unit)
{
	struct cxl_pool_info pi = { 0 };
	uint8_t uuid0[16];
	struct {
		uint64_t off;
		int64_t size, unit;
	} me, *all = NULL;
	struct win_direct *d = NULL;
	bool ok;
	int n;

	PMPI_Comm_size(comm, &n);
	ok = w && pool && cxlmpi_config()->direct_rma &&
	     (size == 0 || cxl_pool_offset(pool, mine) != UINT64_MAX);
	if (pool)
		cxl_pool_info(pool, &pi);
	memcpy(uuid0, pi.uuid, sizeof(uuid0));
	PMPI_Bcast(uuid0, sizeof(uuid0), MPI_BYTE, 0, comm);
	ok = ok && !memcmp(uuid0, pi.uuid, sizeof(uuid0)); /* one pool */
	me.off = ok && size ? cxl_pool_offset(pool, mine) : 0;
	me.size = size;
	me.unit = unit;
	d = ok ? calloc(1, sizeof(*d)) : NULL;
	all = ok ? calloc((size_t)n, sizeof(*all)) : NULL;
	if (d) {
		d->tgt = calloc((size_t)n, sizeof(*d->tgt));
		d->post_sent = calloc((size_t)n, sizeof(uint64_t));
		d->post_seen = calloc((size_t)n, sizeof(uint64_t));
		d->done_sent = calloc((size_t)n, sizeof(uint64_t));
		d->done_seen = calloc((size_t)n, sizeof(uint64_t));
		d->held = calloc((size_t)n, 1);
		d->access = calloc((size_t)n, sizeof(int));
		d->expose = calloc((size_t)n, sizeof(int));
	}
	ok = ok && d && all && d->tgt && d->post_sent && d->post_seen &&
	     d->done_sent && d->done_seen && d->held && d->access && d->expose;
	PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_C_BOOL, MPI_LAND, comm);
	if (ok) {
		PMPI_Allgather(&me, sizeof(me), MPI_BYTE, all, sizeof(me),
			       MPI_BYTE, comm);
		for (int t = 0; t < n && ok; t++) {
			/* every segment must lie inside our mapping */
			d->tgt[t].size = (MPI_Aint)all[t].size;
			d->tgt[t].unit = (int)all[t].unit;
			d->tgt[t].base =
				all[t].size
					? cxl_pool_ptr(pool, all[t].off,
						       (uint64_t)all[t].size)
					: NULL;
			ok = all[t].size >= 0 && all[t].unit > 0 &&
			     (!all[t].size || d->tgt[t].base);
		}
		PMPI_Comm_rank(comm, &d->me);
		d->n = n;
		d->timeout_ms = cxlmpi_config()->sync_timeout_ms;
		ok = open_sync(d, comm, ok);
	}
	free(all);
	if (!ok) {
		if (d) {
			free(d->tgt), free(d->post_sent), free(d->post_seen);
			free(d->done_sent), free(d->done_seen), free(d->held);
			free(d->access), free(d->expose);
		}
		free(d);
		return 0;
	}
	w->d = d;
	return 1;
}

void direct_free(struct pool_win *w)
{
	struct win_direct *d = w->d;

	if (!d)
		return;
	cxl_obj_close(&d->sync);
	if (d->me == 0) /* freed when the last one closes */
		cxl_obj_destroy(pool, d->syncname);
	free(d->tgt), free(d->post_sent), free(d->post_seen);
	free(d->done_sent), free(d->done_seen), free(d->held);
	free(d->access), free(d->expose);
	free(d);
	w->d = NULL;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info,
		   MPI_Comm comm, MPI_Win *win)
{
	int rc = PMPI_Win_create(base, size, disp_unit, info, comm, win);
	struct pool_win *w = NULL;

	bool in_pool;
	int ok;

	/* every rank takes the same branch: the environment is the job's */
	if (rc != MPI_SUCCESS || !cxlmpi_config()->pool)
		return rc;
	in_pool = get_pool() &&
		  (size == 0 || cxl_pool_offset(pool, base) != UINT64_MAX);
	if (in_pool)
		w = win_track(*win, comm, base, (size_t)size, true);
	/* a window over pool memory that cannot be kept coherent is not
	 * one MPI's memory model holds for: no window at all, on every rank */
	ok = !in_pool || w;
	PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
	if (!ok) {
		win_untrack(w);
		PMPI_Win_free(win);
		PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
		return MPI_ERR_NO_MEM;
	}
	direct_setup(w, comm, base, size, disp_unit);
	return rc;
}

/* MPI_Win_allocate: pool memory from MPI_Alloc_mem, then a window. */
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		     void *baseptr, MPI_Win *win)
{
	struct pool_win *w;
	void *mem = NULL;
	int rc = MPI_SUCCESS, ok;

	/* collective: every rank takes the branch all of them can */
	ok = !info_says_no(info) && get_pool();
	PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
	if (!ok)
		return PMPI_Win_allocate(size, disp_unit, info, comm, baseptr,
					 win);
	if (size > 0)
		rc = MPI_Alloc_mem(size, info, &mem);
	ok = rc == MPI_SUCCESS;
	PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
	if (!ok) { /* neither the pool nor the MPI library had the memory */
		if (mem)
			MPI_Free_mem(mem);
		PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
		return MPI_ERR_NO_MEM;
	}
	rc = MPI_Win_create(mem, size, disp_unit, info, comm, win);
	if (rc != MPI_SUCCESS) {
		if (mem)
			MPI_Free_mem(mem);
		return rc;
	}
	/* not in the pool: remember the memory to free it */
	if ((w = win_entry(*win)))
		w->owned = mem;
	*(void **)baseptr = mem;
	return MPI_SUCCESS;
}

/*
 * Do the processes of comm run on more than one host? One reduction, no
 * allocation: the bytewise maximum of every name and of every name's
 * complement; all names are equal exactly when the maximum of the
 * complements is the complement of the maximum (the minimum).
 */
static bool spans_hosts(MPI_Comm comm)
{
	unsigned char v[2 * MPI_MAX_PROCESSOR_NAME] = { 0 };
	char me[MPI_MAX_PROCESSOR_NAME] = { 0 };
	int len;

	PMPI_Get_processor_name(me, &len);
	for (int i = 0; i < MPI_MAX_PROCESSOR_NAME; i++) {
		v[i] = (unsigned char)me[i];
		v[MPI_MAX_PROCESSOR_NAME + i] = (unsigned char)~v[i];
	}
	PMPI_Allreduce(MPI_IN_PLACE, v, 2 * MPI_MAX_PROCESSOR_NAME,
		       MPI_UNSIGNED_CHAR, MPI_MAX, comm);
	for (int i = 0; i < MPI_MAX_PROCESSOR_NAME; i++)
		if (v[MPI_MAX_PROCESSOR_NAME + i] != (unsigned char)~v[i])
			return true;
	return false;
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
	struct cxl_obj obj = { 0 };
	struct pool_win *w;
	bool opened;
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
		/* every rank sees the same arrays: the same verdict */
		if (sizes[i] < 0 || units[i] <= 0 ||
		    total > PTRDIFF_MAX - 4096 - sizes[i]) {
			free(sizes), free(offs), free(units);
			PMPI_Comm_call_errhandler(comm, MPI_ERR_ARG);
			return MPI_ERR_ARG;
		}
		if (noncontig)
			total = (total + 4095) & ~(MPI_Aint)4095;
		offs[i] = total;
		total += sizes[i];
	}
	if (rank == 0) {
		obj_name(name, sizeof(name), "shw");
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
	opened = name[0] && (rank == 0 || !cxl_obj_open(pool, name, &obj));
	if (name[0] && !opened)
		fprintf(stderr, "libcxlmpi: shared window: %s\n", cxl_errmsg());
	ok = opened && (uint64_t)total <= obj.size;
	PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
	if (ok) {
		rc = PMPI_Win_create((uint8_t *)obj.ptr + offs[rank], size,
				     disp_unit, info, comm, win);
		if (rc != MPI_SUCCESS)
			goto fail;
		w = win_track(*win, comm, obj.ptr, (size_t)(total ? total : 1),
			      false);
		ok = w != NULL;
		PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
		if (!ok) {
			win_untrack(w);
			PMPI_Win_free(win);
		}
	}
	if (!ok) {
		rc = MPI_ERR_NO_MEM;
		PMPI_Comm_call_errhandler(comm, rc);
		goto fail;
	}
	direct_setup(w, comm, (uint8_t *)obj.ptr + offs[rank], size, disp_unit);
	w->shobj = obj;
	snprintf(w->shname, sizeof(w->shname), "%s", name);
	w->nranks = n;
	w->seg_off = offs;
	w->seg_size = sizes;
	w->seg_unit = units;
	*(void **)baseptr = (uint8_t *)obj.ptr + offs[rank];
	return MPI_SUCCESS;
fail:
	if (opened)
		cxl_obj_close(&obj);
	if (rank == 0 && name[0]) /* freed when the last one closes */
		cxl_obj_destroy(pool, name);
	free(sizes), free(offs), free(units);
	return rc;
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
			 void *baseptr)
{
	struct pool_win *w = win_list;

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
	struct pool_win *w = win_find(*win);
	int rc;

	/* nobody touches a direct window's memory or synchronization
	 * object after this; if a rank never arrives, the window stays */
	if (w && w->d && direct_barrier(w) != MPI_SUCCESS)
		return MPI_ERR_OTHER;
	rc = PMPI_Win_free(win); /* collective */
	if (w) {
		win_unlink(w);
		direct_free(w);
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
