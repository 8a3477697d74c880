/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPIS_Request: creation (persistent send, receive, barrier, allreduce),
 * waiting for an MPIS_Imatch request, and freeing. Point-to-point data
 * may have any datatype: its layout is computed here (datatype.h),
 * so that the progress thread copies bytes and makes no MPI call.
 * Collective data must be contiguous.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

const uintptr_t MPIS_QUEUE_NULL = 0;
const MPIS_Request MPIS_REQUEST_NULL = NULL;

void MPIS_Hello_world(void)
{
	printf("Hello world!\n");
}

/* count elements of dt: its span, or the failure's cause */
static int span(MPI_Count count, MPI_Datatype dt, struct dt_span *sp)
{
	int rc = dt_span_of(dt, count, sp);

	if (rc == MPI_ERR_TYPE)
		return stream_fail(rc, "the datatype is null or not committed; "
				       "call MPI_Type_commit first");
	if (rc)
		return stream_fail(rc,
				   "count %lld of the datatype is negative "
				   "or its data is beyond the address "
				   "space; check the count",
				   (long long)count);
	if (sp->bytes > (MPI_Count)STREAM_MAX_BYTES)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "a stream request carries at most %llu "
				   "bytes (count %lld x type size %lld); "
				   "split the message",
				   (unsigned long long)STREAM_MAX_BYTES,
				   (long long)count, (long long)sp->size);
	return MPIS_SUCCESS;
}

/* Bytes of count elements of a contiguous datatype, and the offset of
 * the first byte; MPIS_UNSUPPORTED_BEHAVIOR if it is not contiguous
 * (collectives: the reduction works on the buffer in place). */
static int contiguous(MPI_Count count, MPI_Datatype dt, uint64_t *bytes,
		      MPI_Count *lb)
{
	struct dt_span sp;
	int rc = span(count, dt, &sp);

	if (rc)
		return rc;
	if (!sp.contig)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "stream collectives need a contiguous "
				   "datatype; pack the data first");
	*bytes = (uint64_t)sp.bytes;
	*lb = sp.lo;
	return MPIS_SUCCESS;
}

/* The layout of a point-to-point buffer: *first is its first data byte
 * if it is contiguous; a sender of non-contiguous data gets a bounce
 * buffer to gather a chunk in. */
static int p2p_layout(const void *buf, MPI_Count count, MPI_Datatype dt,
		      bool sender, uint8_t **first, uint64_t *bytes,
		      struct dlayout *dl)
{
	struct dt_span sp;
	char why[256];
	int rc = span(count, dt, &sp);

	memset(dl, 0, sizeof(*dl));
	*first = (uint8_t *)buf;
	if (rc)
		return rc;
	*bytes = (uint64_t)sp.bytes;
	if (!*bytes)
		return MPIS_SUCCESS;
	rc = dt_map_of(&sp, STREAM_MAX_SEGS, STREAM_MAX_BYTES, &dl->map, why,
		       sizeof(why));
	if (rc)
		return stream_fail(rc == DT_ELIMIT ? MPIS_UNSUPPORTED_BEHAVIOR
						   : rc,
				   "%s", why);
	if (!dl->map.seg) {
		*first = (uint8_t *)buf + dl->map.first;
		return MPIS_SUCCESS;
	}
	if (sender &&
	    !(dl->bounce = malloc(*bytes < CHAN_CHUNK ? *bytes : CHAN_CHUNK))) {
		dt_map_free(&dl->map);
		return stream_fail(MPI_ERR_NO_MEM,
				   "no memory for the %llu-byte bounce buffer "
				   "of a non-contiguous send; pack the data",
				   (unsigned long long)CHAN_CHUNK);
	}
	return MPIS_SUCCESS;
}

static void p2p_layout_free(struct dlayout *dl)
{
	dt_map_free(&dl->map);
	free(dl->bounce);
	dl->bounce = NULL;
}

static int p2p_init(int kind, const void *buf, MPI_Count count, MPI_Datatype dt,
		    int peer, int tag, MPI_Comm comm, MPIS_Request *req)
{
	MPIS_Request r;
	struct dlayout lay;
	uint8_t *first = NULL;
	uint64_t bytes = 0;
	int rc;

	if (!req)
		return MPI_ERR_ARG;
	if (comm == MPI_COMM_NULL)
		return MPI_ERR_COMM;
	if (peer == MPI_ANY_SOURCE || tag == MPI_ANY_TAG)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "stream receives are matched once with one "
				   "sender: give a source rank and a tag, not "
				   "MPI_ANY_SOURCE/MPI_ANY_TAG");
	rc = p2p_layout(buf, count, dt, kind == SR_SEND, &first, &bytes, &lay);
	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r) {
		p2p_layout_free(&lay);
		return MPI_ERR_NO_MEM;
	}
	r->kind = kind;
	r->state = SR_UNMATCHED;
	r->buf = first;
	r->bytes = bytes;
	r->lay = lay;
	r->peer = peer;
	r->tag = tag;
	r->comm = comm;
	r->hs = MPI_REQUEST_NULL;
	*req = r;
	return MPIS_SUCCESS;
}

int MPIS_Send_init(const void *buf, MPI_Count count, MPI_Datatype datatype,
		   int dest, int tag, MPI_Comm comm, MPI_Info info,
		   MPIS_Request *req)
{
	(void)info;
	return p2p_init(SR_SEND, buf, count, datatype, dest, tag, comm, req);
}

/* A ready send: the receive is posted (started) before it starts. On the
 * pool a send needs nothing of the receiver's but its channel, which
 * exists from the match on: the same as a send. */
int MPIS_Rsend_init(const void *buf, MPI_Count count, MPI_Datatype datatype,
		    int dest, int tag, MPI_Comm comm, MPI_Info info,
		    MPIS_Request *req)
{
	(void)info;
	return p2p_init(SR_SEND, buf, count, datatype, dest, tag, comm, req);
}

int MPIS_Recv_init(void *buf, MPI_Count count, MPI_Datatype datatype, int src,
		   int tag, MPI_Comm comm, MPI_Info info, MPIS_Request *req)
{
	(void)info;
	return p2p_init(SR_RECV, buf, count, datatype, src, tag, comm, req);
}

int MPIS_Barrier_init(MPI_Comm comm, MPI_Info info, MPIS_Request *req)
{
	MPIS_Request r;

	(void)info;
	if (!req)
		return MPI_ERR_ARG;
	if (comm == MPI_COMM_NULL)
		return MPI_ERR_COMM;
	r = calloc(1, sizeof(*r));
	if (!r)
		return MPI_ERR_NO_MEM;
	r->kind = SR_BARRIER;
	r->state = SR_UNMATCHED;
	r->comm = comm;
	r->hs = MPI_REQUEST_NULL;
	*req = r;
	return MPIS_SUCCESS;
}

int MPIS_Allreduce_init(const void *sendbuf, void *recvbuf, int count,
			MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
			MPI_Info info, MPIS_Request *req)
{
	MPIS_Request r;
	MPI_Count lb = 0;
	uint64_t bytes = 0;
	int rc;

	(void)info;
	if (!req)
		return MPI_ERR_ARG;
	if (comm == MPI_COMM_NULL)
		return MPI_ERR_COMM;
	rc = contiguous(count, datatype, &bytes, &lb);
	if (rc)
		return rc;
	if (!coll_supported(datatype, op))
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "MPIS_Allreduce_init: only MPI_SUM, "
				   "MPI_PROD, MPI_MAX and MPI_MIN on integer, "
				   "float and double types");
	r = calloc(1, sizeof(*r));
	if (!r)
		return MPI_ERR_NO_MEM;
	r->kind = SR_ALLREDUCE;
	r->state = SR_UNMATCHED;
	r->buf = (uint8_t *)recvbuf + lb;
	r->sendbuf = sendbuf == MPI_IN_PLACE ? r->buf
					     : (const uint8_t *)sendbuf + lb;
	r->bytes = bytes;
	r->count = count;
	r->dt = datatype;
	r->op = op;
	r->comm = comm;
	r->hs = MPI_REQUEST_NULL;
	*req = r;
	return MPIS_SUCCESS;
}

/* MPIS_Wait completes an MPIS_Imatch request (as in the reference, it
 * does not wait for communication: that is MPIS_Enqueue_waitall). */
int MPIS_Wait(MPIS_Request *req, MPI_Status *status)
{
	MPIS_Request m;
	int rc;

	if (!req || !*req)
		return MPIS_SUCCESS;
	m = *req;
	if (m->kind != SR_MATCH)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "MPIS_Wait waits for MPIS_Imatch requests "
				   "only; wait for communication with "
				   "MPIS_Enqueue_waitall and MPIS_Queue_wait");
	rc = match_finish(m->target, true);
	if (rc)
		return rc;
	if (status != MPI_STATUS_IGNORE) {
		status->MPI_SOURCE = m->target->peer;
		status->MPI_TAG = m->target->tag;
		status->MPI_ERROR = MPI_SUCCESS;
	}
	free(m);
	*req = MPIS_REQUEST_NULL;
	return MPIS_SUCCESS;
}

int MPIS_Waitall(int n, MPIS_Request reqs[], MPI_Status *statuses)
{
	for (int i = 0; i < n; i++) {
		int rc = MPIS_Wait(&reqs[i], statuses == MPI_STATUSES_IGNORE
						     ? MPI_STATUS_IGNORE
						     : &statuses[i]);
		if (rc)
			return rc;
	}
	return MPIS_SUCCESS;
}

int MPIS_Request_free(MPIS_Request *req)
{
	MPIS_Request r;
	unsigned spins = 0;

	if (!req || !*req)
		return MPIS_SUCCESS;
	r = *req;
	if (r->kind == SR_MATCH)
		return stream_fail(MPIS_INVALID_REQUEST_STATE,
				   "MPIS_Request_free of an MPIS_Imatch "
				   "request: complete it with MPIS_Wait");
	if (r->active)
		return stream_fail(MPIS_INVALID_REQUEST_STATE,
				   "MPIS_Request_free of a started request: "
				   "enqueue its wait (MPIS_Enqueue_waitall) "
				   "first");
	/* its wait is enqueued: let the progress thread finish with it */
	while (atomic_load(&r->inflight))
		stream_spin(&spins);
	if (r->gpu_q)
		gpu_request_release(r); /* and the GPU stream */
	if (r->hs != MPI_REQUEST_NULL) {
		int flag = 0;

		/* a handshake the peer never matched: withdraw it (a
		 * collective's broadcast cannot be cancelled: it completes
		 * once every rank has matched) */
		PMPI_Test(&r->hs, &flag, MPI_STATUS_IGNORE);
		if (!flag && (r->kind == SR_SEND || r->kind == SR_RECV))
			PMPI_Cancel(&r->hs);
		if (!flag)
			PMPI_Wait(&r->hs, MPI_STATUS_IGNORE);
	}
	if (r->has_chan)
		chan_close(&r->ch);
	/* a collective that never joined may still hold rank 0's name */
	if (r->kind == SR_BARRIER || r->kind == SR_ALLREDUCE)
		coll_close(&r->co);
	p2p_layout_free(&r->lay);
	free(r);
	*req = MPIS_REQUEST_NULL;
	return MPIS_SUCCESS;
}

int MPIS_Request_freeall(int n, MPIS_Request reqs[])
{
	for (int i = 0; i < n; i++)
		if (reqs[i] && (reqs[i]->kind == SR_MATCH || reqs[i]->active))
			return MPIS_INVALID_REQUEST_STATE;
	for (int i = 0; i < n; i++)
		MPIS_Request_free(&reqs[i]);
	return MPIS_SUCCESS;
}

/* MPIS_Alloc_mem's blocks and their kind, for MPIS_Free_mem. */
enum mem_kind {
	MEM_SYSTEM,
	MEM_POOL,
	MEM_CUDA
};
struct mem_block {
	void *base;
	enum mem_kind kind;
	struct mem_block *next;
};
static struct mem_block *blocks;
static pthread_mutex_t blocks_mu = PTHREAD_MUTEX_INITIALIZER;

int MPIS_Alloc_mem(MPI_Aint size, MPI_Info info, void **baseptr)
{
	char kind[128];
	int flag = 0, rc = MPIS_SUCCESS;
	struct mem_block *b;
	void *p = NULL;

	if (!baseptr || size < 0)
		return MPI_ERR_ARG;
	if (info == MPI_INFO_NULL ||
	    PMPI_Info_get(info, "mpi_memory_alloc_kinds", sizeof(kind) - 1,
			  kind, &flag) != MPI_SUCCESS ||
	    !flag)
		return stream_fail(MPI_ERR_INFO_KEY,
				   "MPIS_Alloc_mem: set the info key "
				   "mpi_memory_alloc_kinds to system, "
				   "cxl:pool or cuda:device");
	b = calloc(1, sizeof(*b));
	if (!b)
		return MPI_ERR_NO_MEM;
	if (!strcmp(kind, "system")) {
		b->kind = MEM_SYSTEM;
		p = malloc(size ? (size_t)size : 1);
		rc = p ? MPIS_SUCCESS : MPI_ERR_NO_MEM;
	} else if (!strcmp(kind, "cxl:pool")) {
		b->kind = MEM_POOL;
		rc = MPI_Alloc_mem(size, MPI_INFO_NULL, &p);
	} else if (!strcmp(kind, "cuda:device")) {
		b->kind = MEM_CUDA;
		rc = gpu_alloc((size_t)size, &p);
	} else {
		rc = stream_fail(MPI_ERR_INFO_VALUE,
				 "MPIS_Alloc_mem: mpi_memory_alloc_kinds='%s' "
				 "is not supported; use system, cxl:pool or "
				 "cuda:device",
				 kind);
	}
	if (rc) {
		free(b);
		return rc;
	}
	b->base = p;
	pthread_mutex_lock(&blocks_mu);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&blocks_mu);
	*baseptr = p;
	return MPIS_SUCCESS;
}

int MPIS_Free_mem(void *base)
{
	struct mem_block **pp, *b = NULL;

	pthread_mutex_lock(&blocks_mu);
	for (pp = &blocks; *pp; pp = &(*pp)->next)
		if ((*pp)->base == base) {
			b = *pp;
			*pp = b->next;
			break;
		}
	pthread_mutex_unlock(&blocks_mu);
	if (!b)
		return stream_fail(MPI_ERR_ARG,
				   "MPIS_Free_mem(%p): not a block of "
				   "MPIS_Alloc_mem",
				   base);
	if (b->kind == MEM_SYSTEM)
		free(base);
	else if (b->kind == MEM_POOL)
		MPI_Free_mem(base);
	else
		gpu_free(base);
	free(b);
	return MPIS_SUCCESS;
}
