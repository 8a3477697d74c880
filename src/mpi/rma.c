/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RMA on direct windows: the origin copies to and from the target's
 * memory in the pool itself, with no message and no target CPU.
 *
 *  - put: copy into the target, write back the lines written (flush
 *    mode), with a fresh copy of partly written edge lines first;
 *  - get: invalidate the target lines, then copy out;
 *  - accumulate, get_accumulate, fetch_and_op, compare_and_swap: a
 *    read-modify-write under the target's accumulate lock (a bakery lock
 *    in the window's pool object), so that concurrent accumulates to a
 *    target are atomic with respect to each other, element by element and
 *    as a whole; an origin that holds the exclusive lock of the target
 *    needs no other.
 * Operations complete before they return, locally and at the target; their
 * write-backs are ordered by the next flush, unlock, complete or fence.
 * Derived datatypes go through MPI_Pack/MPI_Unpack on the target memory,
 * with only the lines their type map touches invalidated and written back.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "datatype.h"
#include "internal.h"

struct cxlmpi_stats cxlmpi_stats;

/* The layout of count elements of dt; the pack path takes int counts
 * and sizes. */
static int layout_of(MPI_Datatype dt, MPI_Count count, struct dt_span *l)
{
	int rc = dt_span_of(dt, count, l);

	if (rc == MPI_SUCCESS && !l->contig &&
	    (count > INT_MAX || l->bytes > INT_MAX))
		rc = MPI_ERR_COUNT;
	return rc;
}

/* Where in our mapping the target's data of layout l at tdisp lies. */
static int target_at(struct pool_win *w, int t, MPI_Aint tdisp,
		     const struct dt_span *l, uint8_t **p)
{
	struct win_target *tg;
	MPI_Count off, lo, hi;

	if (t < 0 || t >= w->d->n)
		return MPI_ERR_RANK;
	tg = &w->d->tgt[t];
	if (__builtin_mul_overflow((MPI_Count)tdisp, (MPI_Count)tg->unit,
				   &off) ||
	    (l->bytes && (__builtin_add_overflow(off, l->lo, &lo) ||
			  __builtin_add_overflow(off, l->hi, &hi) || lo < 0 ||
			  hi > tg->size)))
		return MPI_ERR_RMA_RANGE;
	*p = l->bytes ? tg->base + off : NULL;
	return MPI_SUCCESS;
}

static void each_line(const uint8_t *map, uintptr_t first, size_t nlines,
		      void (*op)(cxl_pool *, const void *, size_t))
{
	for (size_t i = 0; i < nlines; i++)
		if (map[i])
			op(pool, (const void *)(first + i * CXL_LINE),
			   CXL_LINE);
}

static void flush_line(cxl_pool *p, const void *a, size_t n)
{
	cxl_flush(p, a, n);
}

/* Read the target data (layout l at p) into out, packed. */
static int read_target(struct pool_win *w, const uint8_t *p,
		       const struct dt_span *l, void *out)
{
	uintptr_t first;
	size_t nl;
	uint8_t *map;
	int pos = 0;

	/* our own unpublished stores in these lines survive the invalidate */
	publish_range(w, p + l->lo, (size_t)(l->hi - l->lo));
	if (l->contig) {
		cxl_copy_from_pool(pool, out, p + l->lo, (size_t)l->bytes);
	} else {
		if (!(map = dt_lines(p, l, CXL_LINE, &first, &nl)))
			return MPI_ERR_NO_MEM;
		each_line(map, first, nl, cxl_inval);
		free(map);
		PMPI_Pack(p, (int)l->count, l->dt, out, (int)l->bytes, &pos,
			  MPI_COMM_SELF);
	}
	shadow_sync(w, p + l->lo, (size_t)(l->hi - l->lo));
	return MPI_SUCCESS;
}

/* Write packed data src to the target (layout l at p). fresh: the lines
 * were just read with read_target, no new copy of them is needed. */
static int write_target(struct pool_win *w, uint8_t *p, const struct dt_span *l,
			const void *src, bool fresh)
{
	uintptr_t first;
	size_t nl;
	uint8_t *map, *dst = p + l->lo;
	size_t n = (size_t)l->bytes;
	int pos = 0;

	if (!fresh)
		publish_range(w, dst, (size_t)(l->hi - l->lo));
	if (l->contig) {
		/* a line we fill only in part is written back whole: take a
		 * fresh copy of the edge lines first */
		uintptr_t head = (uintptr_t)dst & ~(uintptr_t)(CXL_LINE - 1);
		uintptr_t tail =
			(uintptr_t)(dst + n - 1) & ~(uintptr_t)(CXL_LINE - 1);

		if (!fresh && ((uintptr_t)dst & (CXL_LINE - 1)))
			cxl_inval(pool, dst, 1);
		/* the last line, unless it is the first one, just renewed */
		if (!fresh && ((uintptr_t)(dst + n) & (CXL_LINE - 1)) &&
		    (tail != head || !((uintptr_t)dst & (CXL_LINE - 1))))
			cxl_inval(pool, dst + n - 1, 1);
		cxl_copy_to_pool(pool, dst, src, n);
	} else {
		if (!(map = dt_lines(p, l, CXL_LINE, &first, &nl)))
			return MPI_ERR_NO_MEM;
		if (!fresh)
			each_line(map, first, nl, cxl_inval);
		PMPI_Unpack(src, (int)l->bytes, &pos, p, (int)l->count, l->dt,
			    MPI_COMM_SELF);
		each_line(map, first, nl, flush_line);
		free(map);
	}
	shadow_sync(w, dst, (size_t)(l->hi - l->lo));
	return MPI_SUCCESS;
}

/* The origin data as packed bytes: in place if contiguous, else packed
 * into *tmp (the caller frees it). */
static int origin_bytes(const void *addr, const struct dt_span *l,
			const void **src, void **tmp)
{
	int pos = 0;

	*tmp = NULL;
	if (l->contig) {
		*src = (const uint8_t *)addr + l->lo;
		return MPI_SUCCESS;
	}
	if (!(*tmp = malloc((size_t)l->bytes)))
		return MPI_ERR_NO_MEM;
	PMPI_Pack(addr, (int)l->count, l->dt, *tmp, (int)l->bytes, &pos,
		  MPI_COMM_SELF);
	*src = *tmp;
	return MPI_SUCCESS;
}

/* Packed data into an origin buffer. */
static void to_origin(void *addr, const struct dt_span *l, const void *data)
{
	int pos = 0;

	if (l->contig)
		memcpy((uint8_t *)addr + l->lo, data, (size_t)l->bytes);
	else
		PMPI_Unpack(data, (int)l->bytes, &pos, addr, (int)l->count,
			    l->dt, MPI_COMM_SELF);
}

static int checked(struct pool_win *w, int rc, const char *call, int t)
{
	if (rc == MPI_SUCCESS)
		return rc;
	return win_fail(w, rc, "%s to rank %d on a pool window: %s", call, t,
			rc == MPI_ERR_RMA_RANGE ? "outside the target's window"
			: rc == MPI_ERR_RANK	? "no such rank in the window"
			: rc == MPI_ERR_TRUNCATE
				? "origin and target data differ in size"
			: rc == MPI_ERR_OP     ? "not a predefined operation"
			: rc == MPI_ERR_NO_MEM ? "out of memory"
			: rc == MPI_ERR_COUNT
				? "a derived datatype over 2 GiB of data"
				: "invalid datatype");
}

static int put_direct(struct pool_win *w, const void *oaddr, MPI_Count ocount,
		      MPI_Datatype otype, int t, MPI_Aint tdisp,
		      MPI_Count tcount, MPI_Datatype ttype)
{
	struct dt_span ol, tl;
	const void *src;
	void *tmp = NULL;
	uint8_t *p;
	int rc;

	if (t == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (!(rc = layout_of(otype, ocount, &ol)) &&
	    !(rc = layout_of(ttype, tcount, &tl)) &&
	    !(rc = ol.bytes != tl.bytes ? MPI_ERR_TRUNCATE : 0) &&
	    !(rc = target_at(w, t, tdisp, &tl, &p)) && tl.bytes &&
	    !(rc = origin_bytes(oaddr, &ol, &src, &tmp)))
		rc = write_target(w, p, &tl, src, false);
	free(tmp);
	cxlmpi_stats.puts++;
	return checked(w, rc, "MPI_Put", t);
}

static int get_direct(struct pool_win *w, void *oaddr, MPI_Count ocount,
		      MPI_Datatype otype, int t, MPI_Aint tdisp,
		      MPI_Count tcount, MPI_Datatype ttype)
{
	struct dt_span ol, tl;
	void *tmp = NULL;
	uint8_t *p;
	int rc;

	if (t == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (!(rc = layout_of(otype, ocount, &ol)) &&
	    !(rc = layout_of(ttype, tcount, &tl)) &&
	    !(rc = ol.bytes != tl.bytes ? MPI_ERR_TRUNCATE : 0) &&
	    !(rc = target_at(w, t, tdisp, &tl, &p)) && tl.bytes) {
		if (ol.contig) {
			rc = read_target(w, p, &tl, (uint8_t *)oaddr + ol.lo);
		} else if (!(tmp = malloc((size_t)tl.bytes))) {
			rc = MPI_ERR_NO_MEM;
		} else if (!(rc = read_target(w, p, &tl, tmp))) {
			to_origin(oaddr, &ol, tmp);
		}
	}
	free(tmp);
	cxlmpi_stats.gets++;
	return checked(w, rc, "MPI_Get", t);
}

static bool predefined_op(MPI_Op op)
{
	static const MPI_Op ops[] = { MPI_MAX,	   MPI_MIN,    MPI_SUM,
				      MPI_PROD,	   MPI_LAND,   MPI_BAND,
				      MPI_LOR,	   MPI_BOR,    MPI_LXOR,
				      MPI_BXOR,	   MPI_MAXLOC, MPI_MINLOC,
				      MPI_REPLACE, MPI_NO_OP };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (op == ops[i])
			return true;
	return false;
}

/* cur = origin op cur, over packed data of the basic type of dt. */
static int combine(const void *origin, void *cur, MPI_Count bytes,
		   MPI_Datatype dt, MPI_Op op)
{
	MPI_Datatype b = dt_basic(dt);
	MPI_Count size, lb, ext;
	int pos = 0, n;
	void *a, *c;

	if (op == MPI_REPLACE) {
		memcpy(cur, origin, (size_t)bytes);
		return MPI_SUCCESS;
	}
	if (b == MPI_DATATYPE_NULL || PMPI_Type_size_x(b, &size) || !size)
		return MPI_ERR_TYPE;
	PMPI_Type_get_extent_x(b, &lb, &ext);
	if (bytes / size > INT_MAX)
		return MPI_ERR_COUNT;
	n = (int)(bytes / size);
	if (ext == size && lb == 0)
		return PMPI_Reduce_local(origin, cur, n, b, op);
	/* pair types such as MPI_DOUBLE_INT have padding: unpack both */
	a = malloc((size_t)(ext * n));
	c = malloc((size_t)(ext * n));
	if (!a || !c) {
		free(a), free(c);
		return MPI_ERR_NO_MEM;
	}
	PMPI_Unpack(origin, (int)bytes, &pos, a, n, b, MPI_COMM_SELF);
	pos = 0;
	PMPI_Unpack(cur, (int)bytes, &pos, c, n, b, MPI_COMM_SELF);
	PMPI_Reduce_local(a, c, n, b, op);
	pos = 0;
	PMPI_Pack(c, n, b, cur, (int)bytes, &pos, MPI_COMM_SELF);
	free(a), free(c);
	return MPI_SUCCESS;
}

/*
 * The accumulate family: the target data is read, returned (result), and
 * combined with the origin data (op) or replaced if equal to compare,
 * under the target's accumulate lock.
 */
static int acc_direct(struct pool_win *w, const char *call, const void *oaddr,
		      MPI_Count ocount, MPI_Datatype otype, bool result,
		      void *raddr, MPI_Count rcount, MPI_Datatype rtype, int t,
		      MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype,
		      MPI_Op op, const void *compare)
{
	struct win_direct *d = w->d;
	struct dt_span ol = { 0 }, rl = { 0 }, tl;
	const void *src = NULL;
	void *tmp = NULL, *cur = NULL;
	bool locked = false;
	uint8_t *p;
	int rc;

	if (t == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (!compare && !predefined_op(op))
		return checked(w, MPI_ERR_OP, call, t);
	if ((rc = layout_of(ttype, tcount, &tl)) ||
	    (rc = target_at(w, t, tdisp, &tl, &p)))
		return checked(w, rc, call, t);
	if (op != MPI_NO_OP &&
	    ((rc = layout_of(otype, ocount, &ol)) ||
	     (rc = ol.bytes != tl.bytes ? MPI_ERR_TRUNCATE : 0)))
		return checked(w, rc, call, t);
	if (result && ((rc = layout_of(rtype, rcount, &rl)) ||
		       (rc = rl.bytes != tl.bytes ? MPI_ERR_TRUNCATE : 0)))
		return checked(w, rc, call, t);
	cxlmpi_stats.accs++;
	if (!tl.bytes)
		return MPI_SUCCESS;
	if (op != MPI_NO_OP && (rc = origin_bytes(oaddr, &ol, &src, &tmp)))
		return checked(w, rc, call, t);
	if (!(cur = malloc((size_t)tl.bytes))) {
		free(tmp);
		return checked(w, MPI_ERR_NO_MEM, call, t);
	}
	/* the exclusive lock of the target already keeps others out */
	if (!(d->held[t] & HELD_EXCL)) {
		if ((rc = direct_lock(w, ROW_ACC(d->n), t, true)))
			goto out;
		locked = true;
	}
	if ((rc = read_target(w, p, &tl, cur)))
		goto out;
	if (result) /* raddr may be MPI_BOTTOM, with absolute addresses */
		to_origin(raddr, &rl, cur);
	if (compare) {
		if (!memcmp(cur, compare, (size_t)tl.bytes))
			rc = write_target(w, p, &tl, src, true);
	} else if (op != MPI_NO_OP &&
		   !(rc = combine(src, cur, tl.bytes, ttype, op))) {
		rc = write_target(w, p, &tl, cur, true);
	}
out:
	if (locked)
		direct_unlock(w, ROW_ACC(d->n), t);
	free(cur);
	free(tmp);
	return checked(w, rc, call, t);
}

/* ---- request-based operations: complete when they return ------------- */

static int done_query(void *extra, MPI_Status *st)
{
	(void)extra;
	PMPI_Status_set_elements(st, MPI_BYTE, 0);
	PMPI_Status_set_cancelled(st, 0);
	st->MPI_SOURCE = MPI_UNDEFINED;
	st->MPI_TAG = MPI_UNDEFINED;
	return MPI_SUCCESS;
}

static int done_free(void *extra)
{
	(void)extra;
	return MPI_SUCCESS;
}

static int done_cancel(void *extra, int complete)
{
	(void)extra, (void)complete;
	return MPI_SUCCESS;
}

static int completed(int rc, MPI_Request *req)
{
	if (rc != MPI_SUCCESS)
		return rc;
	if ((rc = PMPI_Grequest_start(done_query, done_free, done_cancel, NULL,
				      req)))
		return rc;
	return PMPI_Grequest_complete(*req);
}

/* ---- the MPI entry points ---------------------------------------------
 * One per MPI function, int and large-count (_c) forms alike, each the
 * same few lines by design: the MPI library's own call for a window that
 * is not direct, else the operation above (request-based forms complete
 * before they return). The repetition is the MPI API's, not logic. */

static struct pool_win *direct(MPI_Win win)
{
	struct pool_win *w = win_find(win);

	return w && w->d ? w : NULL;
}

int MPI_Put(const void *oaddr, int ocount, MPI_Datatype otype, int t,
	    MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win)
{
	struct pool_win *w = direct(win);

	return w ? put_direct(w, oaddr, ocount, otype, t, tdisp, tcount, ttype)
		 : PMPI_Put(oaddr, ocount, otype, t, tdisp, tcount, ttype, win);
}

int MPI_Get(void *oaddr, int ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
	    int tcount, MPI_Datatype ttype, MPI_Win win)
{
	struct pool_win *w = direct(win);

	return w ? get_direct(w, oaddr, ocount, otype, t, tdisp, tcount, ttype)
		 : PMPI_Get(oaddr, ocount, otype, t, tdisp, tcount, ttype, win);
}

int MPI_Accumulate(const void *oaddr, int ocount, MPI_Datatype otype, int t,
		   MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op,
		   MPI_Win win)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Accumulate(oaddr, ocount, otype, t, tdisp, tcount,
				       ttype, op, win);
	return acc_direct(w, "MPI_Accumulate", oaddr, ocount, otype, false,
			  NULL, 0, MPI_DATATYPE_NULL, t, tdisp, tcount, ttype,
			  op, NULL);
}

int MPI_Get_accumulate(const void *oaddr, int ocount, MPI_Datatype otype,
		       void *raddr, int rcount, MPI_Datatype rtype, int t,
		       MPI_Aint tdisp, int tcount, MPI_Datatype ttype,
		       MPI_Op op, MPI_Win win)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Get_accumulate(oaddr, ocount, otype, raddr, rcount,
					   rtype, t, tdisp, tcount, ttype, op,
					   win);
	return acc_direct(w, "MPI_Get_accumulate", oaddr, ocount, otype, true,
			  raddr, rcount, rtype, t, tdisp, tcount, ttype, op,
			  NULL);
}

int MPI_Fetch_and_op(const void *oaddr, void *raddr, MPI_Datatype dt, int t,
		     MPI_Aint tdisp, MPI_Op op, MPI_Win win)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Fetch_and_op(oaddr, raddr, dt, t, tdisp, op, win);
	return acc_direct(w, "MPI_Fetch_and_op", oaddr, 1, dt, true, raddr, 1,
			  dt, t, tdisp, 1, dt, op, NULL);
}

int MPI_Compare_and_swap(const void *oaddr, const void *caddr, void *raddr,
			 MPI_Datatype dt, int t, MPI_Aint tdisp, MPI_Win win)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Compare_and_swap(oaddr, caddr, raddr, dt, t, tdisp,
					     win);
	return acc_direct(w, "MPI_Compare_and_swap", oaddr, 1, dt, true, raddr,
			  1, dt, t, tdisp, 1, dt, MPI_REPLACE, caddr);
}

int MPI_Rput(const void *oaddr, int ocount, MPI_Datatype otype, int t,
	     MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win,
	     MPI_Request *req)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Rput(oaddr, ocount, otype, t, tdisp, tcount, ttype,
				 win, req);
	return completed(
		put_direct(w, oaddr, ocount, otype, t, tdisp, tcount, ttype),
		req);
}

int MPI_Rget(void *oaddr, int ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
	     int tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request *req)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Rget(oaddr, ocount, otype, t, tdisp, tcount, ttype,
				 win, req);
	return completed(
		get_direct(w, oaddr, ocount, otype, t, tdisp, tcount, ttype),
		req);
}

int MPI_Raccumulate(const void *oaddr, int ocount, MPI_Datatype otype, int t,
		    MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op,
		    MPI_Win win, MPI_Request *req)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Raccumulate(oaddr, ocount, otype, t, tdisp, tcount,
					ttype, op, win, req);
	return completed(acc_direct(w, "MPI_Raccumulate", oaddr, ocount, otype,
				    false, NULL, 0, MPI_DATATYPE_NULL, t, tdisp,
				    tcount, ttype, op, NULL),
			 req);
}

int MPI_Rget_accumulate(const void *oaddr, int ocount, MPI_Datatype otype,
			void *raddr, int rcount, MPI_Datatype rtype, int t,
			MPI_Aint tdisp, int tcount, MPI_Datatype ttype,
			MPI_Op op, MPI_Win win, MPI_Request *req)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Rget_accumulate(oaddr, ocount, otype, raddr, rcount,
					    rtype, t, tdisp, tcount, ttype, op,
					    win, req);
	return completed(acc_direct(w, "MPI_Rget_accumulate", oaddr, ocount,
				    otype, true, raddr, rcount, rtype, t, tdisp,
				    tcount, ttype, op, NULL),
			 req);
}

#if MPI_VERSION >= 4
/* MPI-4 large-count forms (MPICH): the same operations. */
int MPI_Put_c(const void *oaddr, MPI_Count ocount, MPI_Datatype otype, int t,
	      MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype, MPI_Win win)
{
	struct pool_win *w = direct(win);

	return w ? put_direct(w, oaddr, ocount, otype, t, tdisp, tcount, ttype)
		 : PMPI_Put_c(oaddr, ocount, otype, t, tdisp, tcount, ttype,
			      win);
}

int MPI_Get_c(void *oaddr, MPI_Count ocount, MPI_Datatype otype, int t,
	      MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype, MPI_Win win)
{
	struct pool_win *w = direct(win);

	return w ? get_direct(w, oaddr, ocount, otype, t, tdisp, tcount, ttype)
		 : PMPI_Get_c(oaddr, ocount, otype, t, tdisp, tcount, ttype,
			      win);
}

int MPI_Accumulate_c(const void *oaddr, MPI_Count ocount, MPI_Datatype otype,
		     int t, MPI_Aint tdisp, MPI_Count tcount,
		     MPI_Datatype ttype, MPI_Op op, MPI_Win win)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Accumulate_c(oaddr, ocount, otype, t, tdisp, tcount,
					 ttype, op, win);
	return acc_direct(w, "MPI_Accumulate_c", oaddr, ocount, otype, false,
			  NULL, 0, MPI_DATATYPE_NULL, t, tdisp, tcount, ttype,
			  op, NULL);
}

int MPI_Get_accumulate_c(const void *oaddr, MPI_Count ocount,
			 MPI_Datatype otype, void *raddr, MPI_Count rcount,
			 MPI_Datatype rtype, int t, MPI_Aint tdisp,
			 MPI_Count tcount, MPI_Datatype ttype, MPI_Op op,
			 MPI_Win win)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Get_accumulate_c(oaddr, ocount, otype, raddr,
					     rcount, rtype, t, tdisp, tcount,
					     ttype, op, win);
	return acc_direct(w, "MPI_Get_accumulate_c", oaddr, ocount, otype, true,
			  raddr, rcount, rtype, t, tdisp, tcount, ttype, op,
			  NULL);
}

int MPI_Rput_c(const void *oaddr, MPI_Count ocount, MPI_Datatype otype, int t,
	       MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype,
	       MPI_Win win, MPI_Request *req)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Rput_c(oaddr, ocount, otype, t, tdisp, tcount,
				   ttype, win, req);
	return completed(
		put_direct(w, oaddr, ocount, otype, t, tdisp, tcount, ttype),
		req);
}

int MPI_Rget_c(void *oaddr, MPI_Count ocount, MPI_Datatype otype, int t,
	       MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype,
	       MPI_Win win, MPI_Request *req)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Rget_c(oaddr, ocount, otype, t, tdisp, tcount,
				   ttype, win, req);
	return completed(
		get_direct(w, oaddr, ocount, otype, t, tdisp, tcount, ttype),
		req);
}

int MPI_Raccumulate_c(const void *oaddr, MPI_Count ocount, MPI_Datatype otype,
		      int t, MPI_Aint tdisp, MPI_Count tcount,
		      MPI_Datatype ttype, MPI_Op op, MPI_Win win,
		      MPI_Request *req)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Raccumulate_c(oaddr, ocount, otype, t, tdisp,
					  tcount, ttype, op, win, req);
	return completed(acc_direct(w, "MPI_Raccumulate_c", oaddr, ocount,
				    otype, false, NULL, 0, MPI_DATATYPE_NULL, t,
				    tdisp, tcount, ttype, op, NULL),
			 req);
}

int MPI_Rget_accumulate_c(const void *oaddr, MPI_Count ocount,
			  MPI_Datatype otype, void *raddr, MPI_Count rcount,
			  MPI_Datatype rtype, int t, MPI_Aint tdisp,
			  MPI_Count tcount, MPI_Datatype ttype, MPI_Op op,
			  MPI_Win win, MPI_Request *req)
{
	struct pool_win *w = direct(win);

	if (!w)
		return PMPI_Rget_accumulate_c(oaddr, ocount, otype, raddr,
					      rcount, rtype, t, tdisp, tcount,
					      ttype, op, win, req);
	return completed(acc_direct(w, "MPI_Rget_accumulate_c", oaddr, ocount,
				    otype, true, raddr, rcount, rtype, t, tdisp,
				    tcount, ttype, op, NULL),
			 req);
}
#endif
