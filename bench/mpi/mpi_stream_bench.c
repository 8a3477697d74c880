/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_stream_bench: stream-triggered MPI (include/stream-triggering.h,
 * libcxlmpi) against classic MPI over the cxl provider.
 *
 *   mpi_stream_bench pingpong [--max BYTES] [--iters N] [--reps R]
 *                            [--warmup MS]
 *   mpi_stream_bench halo [--faces F1,F2,..] [--iters N] [--reps R]
 *                         [--warmup MS]
 * (pingpong: ranks 0 and 1; halo: any number of ranks). Every figure is
 * the best of R trials (5), the ways interleaved so that they see the
 * same load: the machine is shared. First, for MS ms (500), both ways
 * run untimed at the smallest size: each rank has 2 busy threads (its
 * own and the queue's progress thread), and until the kernel has placed
 * them, which takes a few hundred ms on a machine with fewer cores than
 * threads, a figure measures the placement (docs/stream.md, "Figures").
 *
 * pingpong, one-way latency (us) of an 8 B .. --max (1 MiB) message
 * between ranks 0 and 1, four ways, side by side in one run:
 *   queued      MPIS_ requests matched once; all iterations enqueued up
 *               front, then one MPIS_Queue_wait: the progress threads
 *               play the ping-pong through the pool (the stream model)
 *   queued_host the same, with an MPIS_Queue_wait (host) per iteration
 *   start_wait  MPI_Send_init/MPI_Recv_init, MPI_Start + MPI_Wait (the
 *               MPI library's persistent requests, through the provider)
 *   isend       MPI_Isend/MPI_Irecv + MPI_Wait
 * halo: a 3D periodic decomposition (MPI_Dims_create), 6 neighbours, a
 * face of F x F doubles each way; time (us) per exchange, classic
 * (Irecv x6, Isend x6, Waitall) against queued (Enqueue_startall of the
 * 12 matched requests, Enqueue_waitall, MPIS_Queue_wait each time).
 *
 * Prints a table at rank 0, and "RESULT <test> <size> <us> us" lines for
 * bench/plot_stream_triggered.py; for pingpong also "COH <way> <size> ..."
 * lines: rank 0's coherence operations (libcxlshm counters, its progress
 * thread and the provider included) per iteration (one message sent and
 * one received), queued against isend, from the last trial.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlshm/coherence.h"
#include "stream-triggering.h"

static int rank, nranks, reps = 5, warmup_ms = 500;

/* rank 0 decides for all: has the warm-up that began at t0 run long
 * enough? */
static int warm_enough(double t0)
{
	int done = MPI_Wtime() - t0 >= warmup_ms / 1e3;

	MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return done;
}

/* coherence operations of this process (rank 0 and its progress thread)
 * per iteration, i.e. per message sent plus message received */
static void coh_line(const char *way, size_t n, int iters,
		     const struct cxl_coh_counters *c)
{
	double d = iters;

	printf("COH %s %zu flush %.1f inval %.1f fences %.1f nt_stores %.1f "
	       "nt_loads %.1f\n",
	       way, n, c->flush_lines / d, c->inval_lines / d, c->fences / d,
	       c->nt_stores / d, c->nt_loads / d);
}

static int iters_for(size_t bytes, int base)
{
	size_t it = (size_t)base;

	if (bytes > 4096)
		it = (size_t)base * 4096 / bytes;
	return it < 20 ? 20 : (int)it;
}

static double pp_queued(MPIS_Queue q, char *sb, char *rb, size_t n, int iters,
			int hostwait)
{
	MPIS_Request rq[2];
	int peer = 1 - rank;
	double t;

	MPIS_Recv_init(rb, (MPI_Count)n, MPI_BYTE, peer, 10, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[0]);
	MPIS_Send_init(sb, (MPI_Count)n, MPI_BYTE, peer, 10, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
	MPIS_Matchall(2, rq, MPI_STATUSES_IGNORE);
	for (int pass = 0; pass < 2; pass++) {
		int it = pass ? iters : iters / 10 + 1;

		MPI_Barrier(MPI_COMM_WORLD);
		t = MPI_Wtime();
		for (int i = 0; i < it; i++) {
			if (rank == 0) {
				MPIS_Enqueue_start(q, &rq[1]);
				MPIS_Enqueue_start(q, &rq[0]);
				MPIS_Enqueue_waitall(q);
			} else {
				MPIS_Enqueue_start(q, &rq[0]);
				MPIS_Enqueue_waitall(q);
				MPIS_Enqueue_start(q, &rq[1]);
				MPIS_Enqueue_waitall(q);
			}
			if (hostwait)
				MPIS_Queue_wait(q);
		}
		MPIS_Queue_wait(q);
		t = MPI_Wtime() - t;
		t = t / it / 2;
	}
	MPIS_Request_freeall(2, rq);
	return t * 1e6;
}

static double pp_mpi(char *sb, char *rb, size_t n, int iters, int persistent)
{
	MPI_Request rq[2];
	int peer = 1 - rank, cnt = (int)n;
	double t = 0;

	if (persistent) {
		MPI_Recv_init(rb, cnt, MPI_BYTE, peer, 11, MPI_COMM_WORLD,
			      &rq[0]);
		MPI_Send_init(sb, cnt, MPI_BYTE, peer, 11, MPI_COMM_WORLD,
			      &rq[1]);
	}
	for (int pass = 0; pass < 2; pass++) {
		int it = pass ? iters : iters / 10 + 1;

		MPI_Barrier(MPI_COMM_WORLD);
		t = MPI_Wtime();
		for (int i = 0; i < it; i++) {
			if (!persistent) {
				MPI_Irecv(rb, cnt, MPI_BYTE, peer, 11,
					  MPI_COMM_WORLD, &rq[0]);
				if (rank == 0)
					MPI_Isend(sb, cnt, MPI_BYTE, peer, 11,
						  MPI_COMM_WORLD, &rq[1]);
			} else {
				MPI_Start(&rq[0]);
				if (rank == 0)
					MPI_Start(&rq[1]);
			}
			if (rank == 0) {
				MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
				MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
			} else {
				MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
				if (persistent)
					MPI_Start(&rq[1]);
				else
					MPI_Isend(sb, cnt, MPI_BYTE, peer, 11,
						  MPI_COMM_WORLD, &rq[1]);
				MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
			}
		}
		t = (MPI_Wtime() - t) / it / 2;
	}
	if (persistent) {
		MPI_Request_free(&rq[0]);
		MPI_Request_free(&rq[1]);
	}
	return t * 1e6;
}

static void pingpong(MPIS_Queue q, size_t max, int base)
{
	char *sb = malloc(max), *rb = malloc(max);

	memset(sb, 1, max);
	memset(rb, 0, max);
	if (rank == 0) {
		printf("# ping-pong one-way latency (us), ranks 0 and 1, "
		       "best of %d trials\n",
		       reps);
		printf("%9s %9s %11s %10s %9s %14s\n", "bytes", "queued",
		       "queued_host", "start_wait", "isend", "isend/queued");
	}
	/* warm-up, untimed: see the top of the file */
	for (double t0 = MPI_Wtime(); !warm_enough(t0);) {
		if (rank < 2) {
			pp_queued(q, sb, rb, 8, 200, 1);
			pp_mpi(sb, rb, 8, 200, 0);
		}
	}
	for (size_t n = 8; n <= max; n *= 4) {
		int it = iters_for(n, base);
		double a = 0, b = 0, c = 0, d = 0;
		struct cxl_coh_counters cq = { 0 }, ci = { 0 };

		/* the four ways interleaved, best of reps trials each */
		for (int t = 0; t < reps && rank < 2; t++) {
			double x;

			cxl_coh_counters_reset();
			x = pp_queued(q, sb, rb, n, it, 0);
			cxl_coh_counters_get(&cq);
			a = t && a < x ? a : x;
			x = pp_queued(q, sb, rb, n, it, 1);
			b = t && b < x ? b : x;
			x = pp_mpi(sb, rb, n, it, 1);
			c = t && c < x ? c : x;
			cxl_coh_counters_reset();
			x = pp_mpi(sb, rb, n, it, 0);
			cxl_coh_counters_get(&ci);
			d = t && d < x ? d : x;
		}
		if (rank == 0) {
			printf("%9zu %9.2f %11.2f %10.2f %9.2f %14.2f\n", n, a,
			       b, c, d, d / a);
			printf("RESULT queued %zu %.3f us\n", n, a);
			printf("RESULT queued_host %zu %.3f us\n", n, b);
			printf("RESULT start_wait %zu %.3f us\n", n, c);
			printf("RESULT isend %zu %.3f us\n", n, d);
			/* both timed and warm-up iterations were counted */
			coh_line("queued", n, it + it / 10 + 1, &cq);
			coh_line("isend", n, it + it / 10 + 1, &ci);
			fflush(stdout);
		}
		if (n == max)
			break;
		if (n * 4 > max)
			n = max / 4;
	}
	free(sb);
	free(rb);
}

/* one trial of the halo: classic, then queued; us per exchange */
static void halo_once(MPIS_Queue q, MPI_Comm cart, const int *nbr, double *sb,
		      double *rb, size_t cnt, int it, double *tcp, double *tqp)
{
	MPI_Request rq[12];
	MPIS_Request sr[12];
	double tc = 0, tq = 0;

	for (int pass = 0; pass < 2; pass++) {
		int n = pass ? it : it / 10 + 1;

		MPI_Barrier(cart);
		tc = MPI_Wtime();
		for (int i = 0; i < n; i++) {
			for (int d = 0; d < 6; d++)
				MPI_Irecv(rb + (size_t)d * cnt, (int)cnt,
					  MPI_DOUBLE, nbr[d ^ 1], d, cart,
					  &rq[d]);
			for (int d = 0; d < 6; d++)
				MPI_Isend(sb + (size_t)d * cnt, (int)cnt,
					  MPI_DOUBLE, nbr[d], d, cart,
					  &rq[6 + d]);
			MPI_Waitall(12, rq, MPI_STATUSES_IGNORE);
		}
		tc = (MPI_Wtime() - tc) / n;
	}
	for (int d = 0; d < 6; d++) {
		MPIS_Recv_init(rb + (size_t)d * cnt, (MPI_Count)cnt, MPI_DOUBLE,
			       nbr[d ^ 1], 100 + d, cart, MPI_INFO_NULL,
			       &sr[d]);
		MPIS_Send_init(sb + (size_t)d * cnt, (MPI_Count)cnt, MPI_DOUBLE,
			       nbr[d], 100 + d, cart, MPI_INFO_NULL,
			       &sr[6 + d]);
	}
	MPIS_Matchall(12, sr, MPI_STATUSES_IGNORE);
	for (int pass = 0; pass < 2; pass++) {
		int n = pass ? it : it / 10 + 1;

		MPI_Barrier(cart);
		tq = MPI_Wtime();
		for (int i = 0; i < n; i++) {
			MPIS_Enqueue_startall(q, 12, sr);
			MPIS_Enqueue_waitall(q);
			MPIS_Queue_wait(q);
		}
		tq = (MPI_Wtime() - tq) / n;
	}
	MPIS_Request_freeall(12, sr);
	*tcp = tc;
	*tqp = tq;
}

/* halo: direction d = 2 * axis + (0: minus, 1: plus); the face sent in
 * direction d has tag d and is received from the opposite neighbour */
static void halo(MPIS_Queue q, const int *faces, int nfaces, int iters)
{
	int dims[3] = { 0, 0, 0 }, periods[3] = { 1, 1, 1 }, nbr[6];
	MPI_Comm cart;

	MPI_Dims_create(nranks, 3, dims);
	MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
	for (int a = 0; a < 3; a++)
		MPI_Cart_shift(cart, a, 1, &nbr[2 * a], &nbr[2 * a + 1]);
	if (rank == 0) {
		printf("# 3D halo exchange, %d ranks as %dx%dx%d, 6 faces "
		       "of FxF doubles each way, us per exchange\n",
		       nranks, dims[0], dims[1], dims[2]);
		printf("%6s %12s %10s %10s %9s\n", "F", "face_bytes", "classic",
		       "queued", "speedup");
	}
	/* warm-up, untimed, with 4 x 4 faces: see the top of the file */
	for (double t0 = MPI_Wtime(), b[2][6 * 16] = { { 0 } }, c, qq;
	     !warm_enough(t0);)
		halo_once(q, cart, nbr, b[0], b[1], 16, 200, &c, &qq);
	for (int f = 0; f < nfaces; f++) {
		size_t cnt = (size_t)faces[f] * (size_t)faces[f];
		double *sb = malloc(6 * cnt * sizeof(double));
		double *rb = malloc(6 * cnt * sizeof(double));
		double tc = 0, tq = 0;
		int it = iters_for(cnt * sizeof(double), iters);

		for (size_t i = 0; i < 6 * cnt; i++)
			sb[i] = rank + (double)i;
		for (int t = 0; t < reps; t++) {
			double c, qq;

			halo_once(q, cart, nbr, sb, rb, cnt, it, &c, &qq);
			tc = t && tc < c ? tc : c;
			tq = t && tq < qq ? tq : qq;
		}
		/* the slowest rank's time */
		MPI_Allreduce(MPI_IN_PLACE, &tc, 1, MPI_DOUBLE, MPI_MAX, cart);
		MPI_Allreduce(MPI_IN_PLACE, &tq, 1, MPI_DOUBLE, MPI_MAX, cart);
		if (rank == 0) {
			printf("%6d %12zu %10.2f %10.2f %9.2f\n", faces[f],
			       cnt * sizeof(double), tc * 1e6, tq * 1e6,
			       tc / tq);
			printf("RESULT halo_classic %zu %.3f us\n",
			       cnt * sizeof(double), tc * 1e6);
			printf("RESULT halo_queued %zu %.3f us\n",
			       cnt * sizeof(double), tq * 1e6);
			fflush(stdout);
		}
		free(sb);
		free(rb);
	}
	MPI_Comm_free(&cart);
}

int main(int argc, char **argv)
{
	size_t max = 1 << 20;
	int iters = 2000, faces[16] = { 4, 16, 64, 128 }, nfaces = 4;
	MPIS_Queue q;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (argc < 2 ||
	    (strcmp(argv[1], "pingpong") && strcmp(argv[1], "halo"))) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_stream_bench pingpong|halo "
					"[--max BYTES] [--iters N] "
					"[--faces F1,F2,..] [--reps R] "
					"[--warmup MS]\n");
		MPI_Finalize();
		return 2;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--max"))
			max = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
		else if (!strcmp(argv[i], "--iters"))
			iters = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--warmup"))
			warmup_ms =
				atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 0;
		else if (!strcmp(argv[i], "--faces")) {
			char *s = argv[i + 1], *e;

			for (nfaces = 0; nfaces < 16 && *s; s = e) {
				faces[nfaces++] = (int)strtol(s, &e, 10);
				if (*e == ',')
					e++;
				else if (*e)
					break;
			}
		}
	}
	if (MPIS_Queue_init(&q, THREAD, NULL) != MPIS_SUCCESS) {
		if (rank == 0)
			fprintf(stderr, "mpi_stream_bench: no stream queue: "
					"run with CXL_POOL set and libcxlmpi "
					"(see docs/stream.md)\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (!strcmp(argv[1], "pingpong")) {
		if (nranks < 2) {
			if (rank == 0)
				fprintf(stderr, "pingpong needs 2 ranks\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		pingpong(q, max < 8 ? 8 : max, iters);
	} else {
		halo(q, faces, nfaces, iters / 4);
	}
	MPIS_Queue_free(&q);
	MPI_Finalize();
	return 0;
}
