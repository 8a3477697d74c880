/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GPU_MEM_OPS queues of stream-triggered MPI, 2 ranks, device buffers
 * (MPIS_Alloc_mem "cuda:device"), every byte checked. The same binary
 * runs on the fake driver (tests/gpu/fake_cuda.c) and on a real GPU.
 *
 *   gpu_stream test [mixed]   the cases below; mixed: rank 1 uses a
 *                             THREAD queue and host buffers
 *   gpu_stream bench-small    the GPU queue alone, 8 B to 64 KiB
 *   gpu_stream bench          one-way latency and bandwidth: GPU queue,
 *                             host-staged MPI, THREAD queue (a table)
 *
 * Cases (the reference's multi-backend tests on device buffers: ring,
 * rsend, halo, two_queue, barrier, allreduce), a send from host memory
 * on a GPU queue (refused), and: a one-way stream of 3 * 16
 * messages per size (the slots are reused; the receiver starts 5 ms late,
 * so the sender must wait for credits),
 * an echo ping-pong per size (48 B inline, stamped lines up to 4 KiB, 1 MiB),
 * the reference's ring with MPIS_Rsend_init and a copy "kernel" between receive
 * and send, barrier and allreduce on device buffers, a send into a GPU receive
 * of another size (an error, never silent). Exit 0 if all passed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_util.h"
#include "mpi.h"
#include "stream-triggering.h"

static struct test_cuda cu;
static CUstream st;
static int rank, nranks, fails;
static bool mixed;     /* rank 1: THREAD queue, host buffers */
static bool host_only; /* every rank: host buffers (THREAD queues) */

#define FAIL(...)                                         \
	do {                                              \
		printf("gpu_stream rank %d FAIL ", rank); \
		printf(__VA_ARGS__);                      \
		printf("\n");                             \
		fflush(stdout);                           \
		fails++;                                  \
	} while (0)

static uint8_t pat(uint64_t round, uint64_t j, int from, uint64_t n)
{
	return (uint8_t)(round * 131 + j * 7 + (uint64_t)from * 29 + n);
}

static bool gpu_side(void)
{
	return !host_only && !(mixed && rank == 1);
}

/* a message buffer: GPU memory on a GPU rank, else host memory (and
 * host memory if host) */
static void *buf_alloc_in(size_t n, bool host)
{
	MPI_Info info;
	void *p = NULL;

	MPI_Info_create(&info);
	MPI_Info_set(info, "mpi_memory_alloc_kinds",
		     gpu_side() && !host ? "cuda:device" : "system");
	if (MPIS_Alloc_mem((MPI_Aint)n, info, &p) != MPIS_SUCCESS) {
		fprintf(stderr, "gpu_stream: MPIS_Alloc_mem failed\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Info_free(&info);
	return p;
}

static void *buf_alloc(size_t n)
{
	return buf_alloc_in(n, false);
}

/* host memory the stream copies from or into (registered on a GPU) */
static uint8_t *host_alloc(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	if (!p)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (gpu_side())
		cu.cuMemHostRegister(p, n ? n : 1, 0);
	return p;
}

static void host_free(uint8_t *p)
{
	if (gpu_side())
		cu.cuMemHostUnregister(p);
	free(p);
}

/* copy on the queue, in order with its communication */
struct hcopy {
	void *dst;
	const void *src;
	size_t n;
};
static void hcopy_fn(void *a)
{
	struct hcopy *c = a;

	memcpy(c->dst, c->src, c->n);
	free(c);
}
static void qcopy(MPIS_Queue q, void *dst, const void *src, size_t n)
{
	if (gpu_side()) {
		cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst,
				 (CUdeviceptr)(uintptr_t)src, n, st);
	} else {
		struct hcopy *c = malloc(sizeof(*c));

		*c = (struct hcopy){ dst, src, n };
		CXLMPI_Enqueue_host(q, hcopy_fn, c);
	}
}

/* a pause of us microseconds on the queue, in order with the rest */
static void pause_fn(void *a)
{
	usleep((useconds_t)(uintptr_t)a);
}
static void qpause(MPIS_Queue q, unsigned us)
{
	if (gpu_side())
		cu.cuLaunchHostFunc(st, pause_fn, (void *)(uintptr_t)us);
	else
		CXLMPI_Enqueue_host(q, pause_fn, (void *)(uintptr_t)us);
}

static MPIS_Queue new_queue(void)
{
	MPIS_Queue q = 0;
	int rc = gpu_side() ? MPIS_Queue_init(&q, GPU_MEM_OPS, &st)
			    : MPIS_Queue_init(&q, THREAD, NULL);

	if (rc != MPIS_SUCCESS) {
		fprintf(stderr, "gpu_stream: rank %d: MPIS_Queue_init: %d\n",
			rank, rc);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return q;
}

static int queue_done(MPIS_Queue q)
{
	int rc = MPIS_Queue_wait(q);

	if (gpu_side())
		cu.cuStreamSynchronize(st);
	return rc;
}

/* rank 0 streams rounds messages of n bytes to rank 1 */
static void one_way(MPIS_Queue q, uint64_t n, int rounds)
{
	uint8_t *b = buf_alloc(n), *h = host_alloc(n * (size_t)rounds);
	MPIS_Request r;
	int rc;

	if (rank == 0) {
		for (int i = 0; i < rounds; i++)
			for (uint64_t j = 0; j < n; j++)
				h[(size_t)i * n + j] =
					pat((uint64_t)i, j, 0, n);
		MPIS_Send_init(b, (MPI_Count)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	} else {
		MPIS_Recv_init(b, (MPI_Count)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	}
	MPIS_Matchall(1, &r, MPI_STATUSES_IGNORE);
	/* the receiver starts late: the sender gets every slot ahead and
	 * must wait for credits (a sender that does not overwrites) */
	if (rank == 1)
		qpause(q, 5000);
	for (int i = 0; i < rounds; i++) {
		if (rank == 0)
			qcopy(q, b, h + (size_t)i * n, n);
		MPIS_Enqueue_start(q, &r);
		MPIS_Enqueue_waitall(q);
		if (rank == 1)
			qcopy(q, h + (size_t)i * n, b, n);
	}
	rc = queue_done(q);
	if (rc)
		FAIL("one-way %llu B: queue error %d", (unsigned long long)n,
		     rc);
	for (int i = 0; rank == 1 && !rc && i < rounds; i++)
		for (uint64_t j = 0; j < n; j++)
			if (h[(size_t)i * n + j] != pat((uint64_t)i, j, 0, n)) {
				FAIL("one-way %llu B: round %d byte %llu is "
				     "%u, want %u",
				     (unsigned long long)n, i,
				     (unsigned long long)j,
				     h[(size_t)i * n + j],
				     pat((uint64_t)i, j, 0, n));
				i = rounds;
				break;
			}
	MPIS_Request_free(&r);
	host_free(h);
	MPIS_Free_mem(b);
}

/* rank 0 sends round i, rank 1 echoes it back (a copy between its
 * receive and its send, as a kernel would); rank 0 checks every round */
static void echo(MPIS_Queue q, uint64_t n, int rounds, bool rsend)
{
	uint8_t *sb = buf_alloc(n), *rb = buf_alloc(n);
	uint8_t *h = host_alloc(n * (size_t)rounds);
	MPIS_Request rq[2];
	int peer = 1 - rank, rc;

	for (int i = 0; rank == 0 && i < rounds; i++)
		for (uint64_t j = 0; j < n; j++)
			h[(size_t)i * n + j] = pat((uint64_t)i, j, 0, n);
	if (rsend)
		MPIS_Rsend_init(sb, (MPI_Count)n, MPI_BYTE, peer, 2,
				MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]);
	else
		MPIS_Send_init(sb, (MPI_Count)n, MPI_BYTE, peer, 2,
			       MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]);
	MPIS_Recv_init(rb, (MPI_Count)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
	MPIS_Matchall(2, rq, MPI_STATUSES_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD); /* the receives exist (ready sends) */
	for (int i = 0; i < rounds; i++) {
		if (rank == 0) {
			qcopy(q, sb, h + (size_t)i * n, n);
			MPIS_Enqueue_startall(q, 2, rq);
			MPIS_Enqueue_waitall(q);
			qcopy(q, h + (size_t)i * n, rb, n);
		} else {
			MPIS_Enqueue_start(q, &rq[1]);
			MPIS_Enqueue_waitall(q);
			qcopy(q, sb, rb, n);
			MPIS_Enqueue_start(q, &rq[0]);
			MPIS_Enqueue_waitall(q);
		}
	}
	rc = queue_done(q);
	if (rc)
		FAIL("echo %llu B: queue error %d", (unsigned long long)n, rc);
	for (int i = 0; rank == 0 && !rc && i < rounds; i++)
		for (uint64_t j = 0; j < n; j++)
			if (h[(size_t)i * n + j] != pat((uint64_t)i, j, 0, n)) {
				FAIL("echo %llu B: round %d byte %llu wrong",
				     (unsigned long long)n, i,
				     (unsigned long long)j);
				i = rounds;
				break;
			}
	MPIS_Request_freeall(2, rq);
	host_free(h);
	MPIS_Free_mem(sb);
	MPIS_Free_mem(rb);
}

/* The reference's halo on 2 ranks (periodic: left and right are the
 * peer): both faces out with startall, both in, every round checked. */
static void halo(MPIS_Queue q, uint64_t n, int rounds)
{
	uint8_t *sl = buf_alloc(n), *sr = buf_alloc(n);
	uint8_t *rl = buf_alloc(n), *rr = buf_alloc(n);
	uint8_t *h = host_alloc(4 * n * (size_t)rounds);
	MPIS_Request rq[4];
	int peer = 1 - rank, rc;

	/* to the left with tag 10, to the right with tag 11 */
	MPIS_Send_init(sl, (MPI_Count)n, MPI_BYTE, peer, 10, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[0]);
	MPIS_Send_init(sr, (MPI_Count)n, MPI_BYTE, peer, 11, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
	MPIS_Recv_init(rl, (MPI_Count)n, MPI_BYTE, peer, 11, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[2]);
	MPIS_Recv_init(rr, (MPI_Count)n, MPI_BYTE, peer, 10, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[3]);
	MPIS_Matchall(4, rq, MPI_STATUSES_IGNORE);
	for (int i = 0; i < rounds; i++) {
		uint8_t *o = h + 4 * n * (size_t)i;

		for (uint64_t j = 0; j < n; j++) {
			o[j] = pat((uint64_t)i, j, rank, n);
			o[n + j] = pat((uint64_t)i + 1000, j, rank, n);
		}
	}
	for (int i = 0; i < rounds; i++) {
		uint8_t *o = h + 4 * n * (size_t)i;

		qcopy(q, sl, o, n);
		qcopy(q, sr, o + n, n);
		MPIS_Enqueue_startall(q, 4, rq);
		MPIS_Enqueue_waitall(q);
		qcopy(q, o + 2 * n, rl, n);
		qcopy(q, o + 3 * n, rr, n);
	}
	rc = queue_done(q);
	if (rc)
		FAIL("halo %llu B: queue error %d", (unsigned long long)n, rc);
	for (int i = 0; !rc && i < rounds; i++) {
		const uint8_t *o = h + 4 * n * (size_t)i;

		for (uint64_t j = 0; j < n; j++)
			if (o[2 * n + j] !=
				    pat((uint64_t)i + 1000, j, peer, n) ||
			    o[3 * n + j] != pat((uint64_t)i, j, peer, n)) {
				FAIL("halo %llu B: round %d byte %llu wrong",
				     (unsigned long long)n, i,
				     (unsigned long long)j);
				i = rounds;
				break;
			}
	}
	MPIS_Request_freeall(4, rq);
	host_free(h);
	MPIS_Free_mem(sl);
	MPIS_Free_mem(sr);
	MPIS_Free_mem(rl);
	MPIS_Free_mem(rr);
}

/* The reference's two_queue: two sets of requests used in turn (one
 * active while the other's buffers are refilled), MPIS_Match one by one
 * with one tag, MPIS_Queue_wait between cycles. */
static void two_sets(MPIS_Queue q, uint64_t n, int cycles)
{
	uint8_t *sb = buf_alloc(2 * n), *rb = buf_alloc(2 * n);
	uint8_t *h = host_alloc(n * (size_t)cycles);
	MPIS_Request set[2][2];
	int peer = 1 - rank, rc = 0;

	for (int k = 0; k < 2; k++) {
		if (rank == 0) {
			MPIS_Send_init(sb + k * n, (MPI_Count)n, MPI_BYTE, peer,
				       0, MPI_COMM_WORLD, MPI_INFO_NULL,
				       &set[k][0]);
			MPIS_Recv_init(rb + k * n, (MPI_Count)n, MPI_BYTE, peer,
				       0, MPI_COMM_WORLD, MPI_INFO_NULL,
				       &set[k][1]);
		} else { /* echo from the receive buffer itself */
			MPIS_Recv_init(rb + k * n, (MPI_Count)n, MPI_BYTE, peer,
				       0, MPI_COMM_WORLD, MPI_INFO_NULL,
				       &set[k][1]);
			MPIS_Send_init(rb + k * n, (MPI_Count)n, MPI_BYTE, peer,
				       0, MPI_COMM_WORLD, MPI_INFO_NULL,
				       &set[k][0]);
		}
	}
	for (int k = 0; k < 2; k++)
		for (int j = 0; j < 2; j++) {
			int x = rank == 0 ? j : 1 - j;

			MPIS_Match(&set[k][x], MPI_STATUS_IGNORE);
		}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < cycles; i++)
		for (uint64_t j = 0; rank == 0 && j < n; j++)
			h[(size_t)i * n + j] = pat((uint64_t)i, j, 0, n);
	for (int i = 0; i < cycles && !rc; i++) {
		MPIS_Request *a = set[i % 2];
		uint64_t off = (uint64_t)(i % 2) * n;

		if (rank == 0) {
			rc = MPIS_Queue_wait(q);
			qcopy(q, sb + off, h + (size_t)i * n, n);
			MPIS_Enqueue_startall(q, 2, a);
			MPIS_Enqueue_waitall(q);
			qcopy(q, h + (size_t)i * n, rb + off, n);
		} else {
			MPIS_Enqueue_start(q, &a[1]);
			MPIS_Enqueue_waitall(q);
			rc = MPIS_Queue_wait(q);
			MPIS_Enqueue_start(q, &a[0]);
			MPIS_Enqueue_waitall(q);
		}
	}
	if (!rc)
		rc = queue_done(q);
	if (rc)
		FAIL("two sets %llu B: queue error %d", (unsigned long long)n,
		     rc);
	for (int i = 0; rank == 0 && !rc && i < cycles; i++)
		for (uint64_t j = 0; j < n; j++)
			if (h[(size_t)i * n + j] != pat((uint64_t)i, j, 0, n)) {
				FAIL("two sets %llu B: cycle %d byte %llu wrong",
				     (unsigned long long)n, i,
				     (unsigned long long)j);
				i = cycles;
				break;
			}
	for (int k = 0; k < 2; k++)
		MPIS_Request_freeall(2, set[k]);
	host_free(h);
	MPIS_Free_mem(sb);
	MPIS_Free_mem(rb);
}

static void collectives(MPIS_Queue q, int rounds)
{
	enum {
		N = 1000
	};
	int *sb = buf_alloc(N * sizeof(int)), *rb = buf_alloc(N * sizeof(int));
	int *in = (int *)host_alloc((size_t)rounds * N * sizeof(int));
	int *out = (int *)host_alloc((size_t)rounds * N * sizeof(int));
	MPIS_Request ar, bar;
	int rc;

	for (int i = 0; i < rounds; i++)
		for (int j = 0; j < N; j++)
			in[i * N + j] = (rank + 1) * (i + 3) + j;
	MPIS_Allreduce_init(sb, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &ar);
	MPIS_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &bar);
	MPIS_Match(&ar, MPI_STATUS_IGNORE);
	MPIS_Match(&bar, MPI_STATUS_IGNORE);
	for (int i = 0; i < rounds; i++) {
		qcopy(q, sb, in + i * N, N * sizeof(int));
		MPIS_Enqueue_start(q, &ar);
		MPIS_Enqueue_waitall(q);
		qcopy(q, out + i * N, rb, N * sizeof(int));
		MPIS_Enqueue_start(q, &bar);
		MPIS_Enqueue_waitall(q);
	}
	rc = queue_done(q);
	if (rc)
		FAIL("allreduce: queue error %d", rc);
	for (int i = 0; !rc && i < rounds; i++)
		for (int j = 0; j < N; j++) {
			int want = 0;

			for (int s = 0; s < nranks; s++)
				want += (s + 1) * (i + 3) + j;
			if (out[i * N + j] != want) {
				FAIL("allreduce round %d [%d] = %d, want %d", i,
				     j, out[i * N + j], want);
				i = rounds;
				break;
			}
		}
	MPIS_Request_free(&ar);
	MPIS_Request_free(&bar);
	host_free((uint8_t *)in);
	host_free((uint8_t *)out);
	MPIS_Free_mem(sb);
	MPIS_Free_mem(rb);
}

/* a send from host memory on a GPU queue: refused (a host-to-pool copy
 * would block the caller; a kernel cannot reach pageable memory) */
static void host_buffer_refused(MPIS_Queue q)
{
	void *b = rank == 0 ? buf_alloc_in(64, true) : buf_alloc(64);
	MPIS_Request r;

	if (rank == 0)
		MPIS_Send_init(b, 64, MPI_BYTE, 1, 5, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	else
		MPIS_Recv_init(b, 64, MPI_BYTE, 0, 5, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	MPIS_Matchall(1, &r, MPI_STATUSES_IGNORE);
	if (rank == 0 && MPIS_Enqueue_start(q, &r) != MPIS_UNSUPPORTED_BEHAVIOR)
		FAIL("a send from host memory on a GPU queue was not refused");
	MPI_Barrier(MPI_COMM_WORLD);
	MPIS_Request_free(&r);
	MPIS_Free_mem(b);
}

/* a send of 8 bytes into a GPU receive of 16: refused or reported */
static void size_mismatch(MPIS_Queue q)
{
	uint8_t *b = buf_alloc(16);
	MPIS_Request r;
	int rc;

	if (rank == 0)
		MPIS_Send_init(b, 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	else
		MPIS_Recv_init(b, 16, MPI_BYTE, 0, 3, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	MPIS_Matchall(1, &r, MPI_STATUSES_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD); /* rank 0 has opened the channel */
	rc = MPIS_Enqueue_start(q, &r);
	if (rank == 1 && rc != MPI_ERR_TRUNCATE)
		FAIL("a GPU receive of 16 B matched with a send of 8 B: "
		     "enqueue gave %d, want MPI_ERR_TRUNCATE",
		     rc);
	if (rank == 0) {
		MPIS_Enqueue_waitall(q);
		if (queue_done(q))
			FAIL("the 8 B send failed");
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPIS_Request_free(&r);
	MPIS_Free_mem(b);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* one-way time of n bytes (half a ping-pong), best of `runs` runs;
 * *enq: the enqueueing's share of that run (the host's calls before the
 * final wait: near 1, the figure is the host's speed, not the GPU's) */
static double bench_queue(MPIS_Queue q, uint64_t n, int iters, int runs,
			  double *enq)
{
	uint8_t *sb = buf_alloc(n), *rb = buf_alloc(n);
	MPIS_Request rq[2];
	double best = 1e9;

	MPIS_Send_init(sb, (MPI_Count)n, MPI_BYTE, 1 - rank, 4, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[0]);
	MPIS_Recv_init(rb, (MPI_Count)n, MPI_BYTE, 1 - rank, 4, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
	MPIS_Matchall(2, rq, MPI_STATUSES_IGNORE);
	for (int run = 0; run < runs; run++) {
		double t, e;

		MPI_Barrier(MPI_COMM_WORLD);
		t = now_s();
		for (int i = 0; i < iters; i++) {
			if (rank == 0) {
				MPIS_Enqueue_start(q, &rq[0]);
				MPIS_Enqueue_start(q, &rq[1]);
				MPIS_Enqueue_waitall(q);
			} else {
				MPIS_Enqueue_start(q, &rq[1]);
				MPIS_Enqueue_waitall(q);
				MPIS_Enqueue_start(q, &rq[0]);
				MPIS_Enqueue_waitall(q);
			}
		}
		e = now_s() - t;
		if (queue_done(q))
			FAIL("bench %llu B: queue error",
			     (unsigned long long)n);
		t = now_s() - t;
		e /= t;
		t /= iters * 2;
		if (t < best) {
			best = t;
			if (enq)
				*enq = e;
		}
	}
	MPIS_Request_freeall(2, rq);
	MPIS_Free_mem(sb);
	MPIS_Free_mem(rb);
	return best;
}

/* host-staged: device -> host, MPI over the provider, host -> device */
static double bench_staged(uint64_t n, int iters)
{
	uint8_t *d = buf_alloc(n), *h = host_alloc(n);
	double best = 1e9;

	for (int run = 0; run < 3; run++) {
		double t;

		MPI_Barrier(MPI_COMM_WORLD);
		t = now_s();
		for (int i = 0; i < iters; i++) {
			if (rank == 0) {
				cu.cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)d,
						n);
				MPI_Send(h, (int)n, MPI_BYTE, 1, 5,
					 MPI_COMM_WORLD);
				MPI_Recv(h, (int)n, MPI_BYTE, 1, 5,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				cu.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)d, h,
						n);
			} else {
				MPI_Recv(h, (int)n, MPI_BYTE, 0, 5,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				cu.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)d, h,
						n);
				cu.cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)d,
						n);
				MPI_Send(h, (int)n, MPI_BYTE, 0, 5,
					 MPI_COMM_WORLD);
			}
		}
		t = (now_s() - t) / iters / 2;
		if (t < best)
			best = t;
	}
	host_free(h);
	MPIS_Free_mem(d);
	return best;
}

/* the GPU queue alone at small sizes, best of 5: for comparing builds */
static void bench_small(void)
{
	static const uint64_t sizes[] = { 8, 512, 4096, 16384, 65536 };
	MPIS_Queue gq = new_queue();

	if (rank == 0)
		printf("| size | GPU queue one-way (us) | enqueue share |\n"
		       "|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double e = 0, g = bench_queue(gq, sizes[i], 2000, 5, &e);

		if (rank == 0)
			printf("| %llu | %.2f | %.2f |\n",
			       (unsigned long long)sizes[i], g * 1e6, e);
		fflush(stdout);
	}
	MPIS_Queue_free(&gq);
}

static void bench(void)
{
	static const uint64_t sizes[] = { 8,	  1024,	   16384,
					  262144, 1048576, 4194304 };
	MPIS_Queue gq = new_queue(), tq = 0;

	MPIS_Queue_init(&tq, THREAD, NULL);
	if (rank == 0)
		printf("| size | GPU queue one-way (us) | GB/s | host-staged "
		       "(us) | GB/s | THREAD queue, host buffers (us) | "
		       "GB/s |\n|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];
		int iters = n >= 1048576 ? 50 : 500;
		double g = bench_queue(gq, n, iters, 3, NULL);
		double s = bench_staged(n, iters);
		double t;

		host_only = true; /* the THREAD queue on host buffers */
		t = bench_queue(tq, n, iters, 3, NULL);
		host_only = false;
		if (rank == 0)
			printf("| %llu | %.2f | %.2f | %.2f | %.2f | %.2f | "
			       "%.2f |\n",
			       (unsigned long long)n, g * 1e6, n / g / 1e9,
			       s * 1e6, n / s / 1e9, t * 1e6, n / t / 1e9);
		fflush(stdout);
	}
	MPIS_Queue_free(&gq);
	MPIS_Queue_free(&tq);
}

int main(int argc, char **argv)
{
	static const uint64_t sizes[] = { 8,	 48,	49,	100,
					  216,	 1000,	4096,	4097,
					  65536, 65600, 1048576 };
	const char *what = argc > 1 ? argv[1] : "test";
	MPIS_Queue q;
	int mode;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &mode);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2) {
		fprintf(stderr, "gpu_stream: run with 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	mixed = argc > 2 && !strcmp(argv[2], "mixed");
	test_cuda_load(&cu);
	cu.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
	if (!strcmp(what, "bench") || !strcmp(what, "bench-small")) {
		if (what[5])
			bench_small();
		else
			bench();
		MPI_Finalize();
		return fails != 0;
	}
	q = new_queue();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		one_way(q, sizes[i], sizes[i] > 65536 ? 12 : 48);
		echo(q, sizes[i], sizes[i] > 65536 ? 6 : 20, false);
	}
	echo(q, 400, 20, true);
	if (!mixed)
		host_buffer_refused(q);
	halo(q, 2048, 20);
	halo(q, 100000, 6);
	two_sets(q, 4096, 20);
	if (!mixed) {
		collectives(q, 10);
		size_mismatch(q);
	}
	MPIS_Queue_free(&q);
	if (rank == 0 || fails)
		printf("gpu_stream %s%s: rank %d: %d failure(s)\n", what,
		       mixed ? " mixed" : "", rank, fails);
	MPI_Finalize();
	return fails != 0;
}
