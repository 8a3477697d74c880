/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent collectives on a queue (MPIS_Barrier_init,
 * MPIS_Allreduce_init) in one pool object per request: rank 0 creates it
 * at matching (collective) and broadcasts its name. Operation k: a rank
 * writes its contribution into area k % 2 of its row, then k into its
 * flag line; it completes once every flag is >= k, reducing the rows in
 * rank order (every rank gets the same bits). A rank can be at most one
 * operation ahead of another, so area k % 2 is not reused before all have
 * read it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

static int publish_beat(struct coll *co);

/*
 * Matching, a local step: coll_post, at MPIS_Match, creates the object on
 * rank 0 and posts a non-blocking broadcast of its name; coll_join, once
 * that completed (a test, or a wait at the first start), opens it and
 * publishes our heartbeat. So ranks may match collectives and
 * point-to-point pairs in any order, as with the reference. Rank 0 keeps
 * the name until every rank has joined (coll_finish of the first
 * operation), then removes it; the storage lives until the last close.
 */
int coll_post(MPIS_Request r)
{
	cxl_pool *p = stream_pool();
	struct coll *co = &r->co;
	uint64_t size;
	int rc;

	if (!p)
		return MPIS_NOT_READY;
	memset(co, 0, sizeof(*co));
	PMPI_Comm_size(r->comm, &co->n);
	PMPI_Comm_rank(r->comm, &co->me);
	co->bytes = r->bytes;
	co->row = CXL_LINE + 2 * stream_round_line(co->bytes);
	size = (uint64_t)co->n * co->row;
	if (co->me == 0) {
		stream_obj_name(co->name, sizeof(co->name), "coll");
		if (cxl_obj_create(p, co->name, size, CXL_OBJ_ZERO, &co->obj)) {
			stream_fail(MPI_ERR_NO_MEM,
				    "no pool memory for a collective of %llu "
				    "bytes (%s); enlarge CXL_POOL_SIZE",
				    (unsigned long long)size, cxl_errmsg());
			co->name[0] = 0; /* tells the others */
		} else {
			co->named = true;
		}
	}
	rc = PMPI_Ibcast(co->name, sizeof(co->name), MPI_CHAR, 0, r->comm,
			 &r->hs);
	if (rc != MPI_SUCCESS)
		coll_close(co);
	return rc;
}

int coll_join(MPIS_Request r)
{
	cxl_pool *p = stream_pool();
	struct coll *co = &r->co;
	uint64_t size = (uint64_t)co->n * co->row;
	int rc;

	/* the name came from another process */
	if (!memchr(co->name, 0, sizeof(co->name)) || !co->name[0])
		rc = stream_fail(MPI_ERR_OTHER,
				 "rank 0 could not create a persistent "
				 "collective in the pool (its message says "
				 "why)");
	else if (co->me != 0 && cxl_obj_open(p, co->name, &co->obj))
		rc = stream_fail(MPI_ERR_OTHER,
				 "cannot open persistent collective %s (%s); "
				 "all ranks need the same pool and CXL_JOB",
				 co->name, cxl_errmsg());
	else if (co->obj.size < size)
		rc = stream_fail(MPI_ERR_OTHER,
				 "persistent collective %s is %llu bytes, not "
				 "%llu: a rank has another size or count",
				 co->name, (unsigned long long)co->obj.size,
				 (unsigned long long)size);
	else
		rc = MPIS_SUCCESS;
	if (!rc) {
		co->base = co->obj.ptr;
		rc = publish_beat(co);
	}
	if (rc) {
		coll_close(co);
		return rc;
	}
	r->has_coll = true;
	return MPIS_SUCCESS;
}

/* Our heartbeat's name in bytes 16..63 of our flag line, word by word
 * with NT stores (the flag word shares the line), for ranks that wait on
 * us; and a watch per rank for our own waits. */
static int publish_beat(struct coll *co)
{
	uint64_t *line = (uint64_t *)(co->base + (uint64_t)co->me * co->row);
	int rc;

	co->watch = calloc((size_t)co->n, sizeof(*co->watch));
	if (!co->watch)
		return stream_fail(MPI_ERR_NO_MEM, "out of memory");
	rc = beat_publish(co->obj.pool, line + COLL_BEAT_OFF / 8);
	if (rc)
		return rc;
	co->has_beat = true;
	/* the name is complete in the pool (beat_publish fenced) before its
	 * mark: a reader never takes a name cut short */
	cxl_nt_store64(co->obj.pool, line + 1, COLL_BEAT_MARK);
	cxl_wfence(co->obj.pool);
	return MPIS_SUCCESS;
}

void coll_close(struct coll *co)
{
	if (co->named)
		cxl_obj_destroy(stream_pool(), co->name);
	co->named = false;
	if (co->obj.ptr)
		cxl_obj_close(&co->obj);
	co->base = NULL;
	if (co->watch)
		for (int i = 0; i < co->n; i++)
			watch_close(&co->watch[i]);
	free(co->watch);
	co->watch = NULL;
	if (co->has_beat)
		beat_put();
	co->has_beat = false;
}

/* Progress thread, waiting on rank i: is it alive? Its heartbeat's name
 * is read from its flag line (it may not have written it yet). */
static int coll_watch(struct coll *co, int i)
{
	struct beat_watch *w = &co->watch[i];
	const uint64_t *line =
		(const uint64_t *)(co->base + (uint64_t)i * co->row);
	char name[STREAM_BEAT_NAME];
	/* the mark, then the name written before it */
	bool known =
		!w->obj.pool && (w->polls & 63) == 63 &&
		cxl_nt_load64(co->obj.pool, line + 1) == COLL_BEAT_MARK &&
		beat_read_name(co->obj.pool, line + COLL_BEAT_OFF / 8, name);

	/* a rank whose heartbeat is not known yet (it has not joined) is
	 * not judged: watch_peer counts the polls that pace the look */
	return watch_peer(w, known ? name : NULL, i, "collective");
}

#define ARITH_OPS(T)                                                     \
	static int red_##T(void *dst, const void *src, int n, MPI_Op op) \
	{                                                                \
		T *d = dst;                                              \
		const T *s = src;                                        \
		for (int i = 0; i < n; i++) {                            \
			if (op == MPI_SUM)                               \
				d[i] = d[i] + s[i];                      \
			else if (op == MPI_PROD)                         \
				d[i] = d[i] * s[i];                      \
			else if (op == MPI_MAX)                          \
				d[i] = s[i] > d[i] ? s[i] : d[i];        \
			else if (op == MPI_MIN)                          \
				d[i] = s[i] < d[i] ? s[i] : d[i];        \
			else                                             \
				return -1;                               \
		}                                                        \
		return 0;                                                \
	}
ARITH_OPS(int)
ARITH_OPS(long)
ARITH_OPS(unsigned)
ARITH_OPS(int64_t)
ARITH_OPS(uint64_t)
ARITH_OPS(float)
ARITH_OPS(double)

static int reduce(void *dst, const void *src, int n, MPI_Datatype dt, MPI_Op op)
{
	if (dt == MPI_INT || dt == MPI_INT32_T)
		return red_int(dst, src, n, op);
	if (dt == MPI_LONG)
		return red_long(dst, src, n, op);
	if (dt == MPI_UNSIGNED || dt == MPI_UINT32_T)
		return red_unsigned(dst, src, n, op);
	if (dt == MPI_INT64_T || dt == MPI_LONG_LONG)
		return red_int64_t(dst, src, n, op);
	if (dt == MPI_UINT64_T || dt == MPI_UNSIGNED_LONG_LONG)
		return red_uint64_t(dst, src, n, op);
	if (dt == MPI_FLOAT)
		return red_float(dst, src, n, op);
	if (dt == MPI_DOUBLE)
		return red_double(dst, src, n, op);
	return -1;
}

bool coll_supported(MPI_Datatype dt, MPI_Op op)
{
	uint64_t a[2] = { 0, 0 }, b[2] = { 0, 0 };

	return reduce(a, b, 1, dt, op) == 0;
}

static uint8_t *area(struct coll *co, int rank, uint64_t k)
{
	return co->base + (uint64_t)rank * co->row + CXL_LINE +
	       (k % 2) * stream_round_line(co->bytes);
}

/* Progress thread: contribute to operation k. */
void coll_start(MPIS_Request r, uint64_t k)
{
	struct coll *co = &r->co;
	cxl_pool *p = co->obj.pool;
	uint64_t *flag = (uint64_t *)(co->base + (uint64_t)co->me * co->row);

	if (co->bytes)
		/* our contribution, written back to the pool */
		cxl_copy_to_pool(p, area(co, co->me, k), r->sendbuf, co->bytes);
	/* contribution in the pool before our flag */
	cxl_wfence(p);
	cxl_nt_store64(p, flag, k);
	cxl_wfence(p);
}

/* Progress thread: wait for every rank's operation k, then reduce. */
int coll_finish(MPIS_Request r, uint64_t k)
{
	struct coll *co = &r->co;
	cxl_pool *p = co->obj.pool;

	for (int i = 0; i < co->n; i++) {
		uint64_t *flag = (uint64_t *)(co->base + (uint64_t)i * co->row);
		unsigned spins = 0;

		for (;;) {
			/* rank i's flag, uncached load */
			uint64_t v = cxl_nt_load64(p, flag);

			if (v == k || v == k + 1)
				break;
			if (v > k + 1)
				return MPI_ERR_OTHER; /* corrupt */
			if (i != co->me && coll_watch(co, i))
				return MPI_ERR_OTHER;
			stream_spin(&spins);
		}
	}
	/* every rank has joined (its flag moved): the name can go */
	if (co->named) {
		cxl_obj_destroy(p, co->name);
		co->named = false;
	}
	if (r->kind != SR_ALLREDUCE || !co->bytes)
		return MPI_SUCCESS;
	/* rank 0's row, then each other row reduced in, in rank order;
	 * invalidate before reading what other hosts wrote */
	cxl_copy_from_pool(p, r->buf, area(co, 0, k), co->bytes);
	for (int i = 1; i < co->n; i++) {
		const uint8_t *src = area(co, i, k);

		cxl_inval(p, src, co->bytes);
		if (reduce(r->buf, src, r->count, r->dt, r->op))
			return MPI_ERR_OP;
	}
	return MPI_SUCCESS;
}
