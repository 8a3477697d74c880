/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * OSU-style MPI micro-benchmarks (our own implementation): warm-up, then
 * timed iterations per message size; rank 0 prints one line per size:
 *
 *   RESULT <test> <size_bytes> <value> <unit>
 *
 * and, for latency and bw over the cxl provider, the coherence operations
 * of all ranks in that size's rounds (coh_probe.h; bw counts the window's
 * messages, not its acknowledgements):
 *
 *   COH latency|bw <size_bytes> <messages> <flush_lines> ...
 *
 *   mpi_bench latency|bw|bibw|mbw|stall|allreduce [--min BYTES]
 *             [--max BYTES] [--quick] [--iters N] [--batches B]
 *
 * latency   ping-pong between ranks 0 and 1, one-way time (us); with
 *           --batches B the median of B batches' means, which a machine
 *           shared with other jobs disturbs less than one mean
 * bw        rank 0 streams windows of 64 messages to rank 1 (MB/s)
 * bibw      both directions at once (MB/s, sum)
 * mbw       n/2 pairs (r, r + n/2) stream at once (MB/s, aggregate)
 * stall     bw from rank 0 to rank 2 while rank 1, which rank 0 has sent
 *           a window of messages, sleeps outside MPI (a slow receiver
 *           holding the sender's resources); 3 ranks. A stream that
 *           outlasts the sleep (STALL_NS) prints "STALL overrun"
 * allreduce MPI_Allreduce of doubles, time averaged over ranks (us)
 *
 * In latency and bw, ranks beyond 0 and 1 take no part; they wait for
 * each size to end sleeping between looks (idle_until_done), so that on a
 * machine with fewer cores than ranks they leave the CPUs to the pair.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coh_probe.h"

#define WINDOW 64
#define TAG_DONE 4 /* rank 0 to the idle ranks: this size is over */
#define TAG_STALL 5
#define STALL_NS 1500000000L /* stall: rank 1's sleep */

static int rank, size;
static int batches; /* --batches: latency's median of batch means */

static int iters_for(size_t n, int quick)
{
	int it = n <= 8192 ? 2000 : n <= 262144 ? 200 : 40;

	return quick ? it / 10 + 2 : it;
}

/* Untimed rounds before the timed ones: a tenth, and at least one, so
 * that the first round's connection setup and cold caches are not timed
 * (bw runs a single window of 1 MiB messages with --quick). */
static int warmup(int iters)
{
	return iters / 10 + 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double latency(char *buf, size_t n, int iters)
{
	int nb = batches > iters ? iters : batches > 1 ? batches : 1;
	int per = iters / nb; /* round trips per batch; the rest is dropped */
	double t0 = 0, t, *mean = malloc((size_t)nb * sizeof(*mean));

	if (!mean)
		MPI_Abort(MPI_COMM_WORLD, 3);
	iters = per * nb;
	for (int i = -warmup(iters); i < iters; i++) {
		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		} else if (i > 0 && i % per == 0) {
			/* batch i / per - 1 ends: the ping-pong keeps the
			 * ranks in step, so no barrier between batches */
			t = MPI_Wtime();
			mean[i / per - 1] = (t - t0) * 1e6 / (2.0 * per);
			t0 = t;
		}
		if (rank == 0) {
			MPI_Send(buf, (int)n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)n, MPI_CHAR, 1, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(buf, (int)n, MPI_CHAR, 0, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
		}
	}
	mean[nb - 1] = (MPI_Wtime() - t0) * 1e6 / (2.0 * per);
	qsort(mean, (size_t)nb, sizeof(*mean), cmp_double);
	t = nb % 2 ? mean[nb / 2] : (mean[nb / 2 - 1] + mean[nb / 2]) / 2;
	free(mean);
	return t;
}

/* Where window entry w of n bytes is received: one slot per entry up to
 * 1 MiB; larger messages share one slot. */
static char *window_slot(char *rbuf, size_t n, int w)
{
	return rbuf + (n < (1u << 20) ? (size_t)w * n : 0);
}

/* Stream windows from src to dst (and back if both); returns MB/s of
 * the bytes this rank sent or received. */
static double stream(char *sbuf, char *rbuf, size_t n, int iters, int peer,
		     int sender, int both, MPI_Comm comm)
{
	MPI_Request rq[2 * WINDOW];
	double t0 = 0, t;
	char ack = 0;

	for (int i = -warmup(iters); i < iters; i++) {
		int k = 0;

		if (i == 0) {
			MPI_Barrier(comm);
			t0 = MPI_Wtime();
		}
		for (int w = 0; w < WINDOW; w++) {
			if (sender || both)
				MPI_Isend(sbuf, (int)n, MPI_CHAR, peer, 2, comm,
					  &rq[k++]);
			if (!sender || both)
				MPI_Irecv(window_slot(rbuf, n, w), (int)n,
					  MPI_CHAR, peer, 2, comm, &rq[k++]);
		}
		MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
		/* the receiver acknowledges each window */
		if (sender)
			MPI_Recv(&ack, 1, MPI_CHAR, peer, 3, comm,
				 MPI_STATUS_IGNORE);
		else
			MPI_Send(&ack, 1, MPI_CHAR, peer, 3, comm);
	}
	t = MPI_Wtime() - t0;
	return (double)n * WINDOW * iters * (both ? 2 : 1) / t / 1e6;
}

/*
 * stall: rank 0 hands rank 1 a window of messages that rank 1 does not
 * take for STALL_NS (it sleeps, outside MPI: no progress), and meanwhile
 * streams to rank 2 over pair, a communicator of ranks 0 and 2. Returns
 * rank 0's MB/s to rank 2 (0 on other ranks).
 */
static double stall(char *sbuf, char *rbuf, size_t n, int iters, MPI_Comm pair)
{
	const struct timespec nap = { STALL_NS / 1000000000L,
				      STALL_NS % 1000000000L };
	MPI_Request rq[WINDOW];
	double t0, v = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (rank == 0) {
		for (int w = 0; w < WINDOW; w++)
			MPI_Isend(sbuf, (int)n, MPI_CHAR, 1, TAG_STALL,
				  MPI_COMM_WORLD, &rq[w]);
		v = stream(sbuf, rbuf, n, iters, 1, 1, 0, pair);
		if (MPI_Wtime() - t0 > STALL_NS * 1e-9)
			printf("STALL overrun %zu: the stream outlasted rank "
			       "1's sleep; lower --iters\n",
			       n);
		MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
	} else if (rank == 1) {
		nanosleep(&nap, NULL);
		for (int w = 0; w < WINDOW; w++)
			MPI_Irecv(window_slot(rbuf, n, w), (int)n, MPI_CHAR, 0,
				  TAG_STALL, MPI_COMM_WORLD, &rq[w]);
		MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
	} else if (rank == 2) {
		stream(sbuf, rbuf, n, iters, 0, 0, 0, pair);
	}
	return v;
}

/* A rank outside the measured pair: it waits for rank 0's word that the
 * size is over, looking every 2 ms. Blocking in MPI (a barrier) would
 * poll without pause, which takes a core from the pair when there are
 * no more cores than ranks. */
static void idle_until_done(void)
{
	const struct timespec nap = { 0, 2000 * 1000 };
	MPI_Request rq;
	int done = 0;

	MPI_Irecv(NULL, 0, MPI_CHAR, 0, TAG_DONE, MPI_COMM_WORLD, &rq);
	for (;;) {
		MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
		if (done)
			break;
		nanosleep(&nap, NULL);
	}
}

/* Rank 0, after the pair's rounds: the idle ranks may go on */
static void release_idle(void)
{
	for (int r = 2; r < size; r++)
		MPI_Send(NULL, 0, MPI_CHAR, r, TAG_DONE, MPI_COMM_WORLD);
}

static double allreduce(double *a, double *b, size_t n, int iters)
{
	double t0 = 0, t, sum;

	for (int i = -warmup(iters); i < iters; i++) {
		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		MPI_Allreduce(a, b, (int)(n / sizeof(double)), MPI_DOUBLE,
			      MPI_SUM, MPI_COMM_WORLD);
	}
	t = (MPI_Wtime() - t0) * 1e6 / iters;
	MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	return sum / size;
}

int main(int argc, char **argv)
{
	size_t max = 8u << 20, min = 1;
	const char *test;
	int quick = 0, iters = 0;
	char *sbuf, *rbuf;
	size_t rlen;
	MPI_Comm pair; /* ranks 0 and 2, for stall */

	MPI_Init(&argc, &argv);
	coh_probe_init();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	{ /* where each rank runs: distinct hosts show distinct names */
		char host[MPI_MAX_PROCESSOR_NAME];
		int len;

		MPI_Get_processor_name(host, &len);
		printf("HOST %d %d %s\n", rank, size, host);
		fflush(stdout);
	}
	if (argc < 2) {
		if (!rank)
			fprintf(stderr,
				"usage: mpi_bench latency|bw|bibw|mbw|"
				"stall|allreduce [--min BYTES] [--max BYTES] "
				"[--quick] [--iters N] [--batches B]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	test = argv[1];
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--max") && i + 1 < argc)
			max = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--min") && i + 1 < argc)
			min = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]); /* every size: slow links */
		else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
			batches = atoi(argv[++i]);
	}
	if (size < 2 || (!strcmp(test, "stall") && size < 3)) {
		if (!rank)
			fprintf(stderr,
				"mpi_bench %s needs at least %d ranks\n", test,
				strcmp(test, "stall") ? 2 : 3);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Comm_split(MPI_COMM_WORLD, rank == 0 || rank == 2 ? 0 : rank, rank,
		       &pair);
	/* WINDOW slots of up to 1 MiB, or one slot of max bytes */
	rlen = max < (1u << 20)		    ? (size_t)WINDOW * max
	       : max > (size_t)WINDOW << 20 ? max
					    : (size_t)WINDOW << 20;
	sbuf = malloc(max ? max : 1);
	rbuf = malloc(rlen ? rlen : 1);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 3);
	/* fault every page in now: a first touch inside a timed loop (64 MiB
	 * of receive slots at 1 MiB) would be timed as transfer */
	memset(sbuf, 0, max);
	memset(rbuf, 0, rlen);
	if (!strcmp(test, "allreduce") && min < 8)
		min = 8;
	for (size_t n = min ? min : 1; n <= max; n *= 2) {
		int it = iters > 0 ? iters : iters_for(n, quick);
		double v = 0;
		const char *unit = "MB/s";

		if (!strcmp(test, "latency")) {
			struct coh_probe_counters c0 = { { 0 } };

			coh_probe_read(&c0);
			if (rank < 2) {
				v = latency(sbuf, n, it);
			} else {
				MPI_Barrier(MPI_COMM_WORLD); /* latency's */
				idle_until_done();
			}
			if (!rank)
				release_idle();
			unit = "us";
			/* ping and pong of every round, warm-up included */
			coh_probe_report(test, n,
					 2 * (uint64_t)(warmup(it) + it), &c0,
					 rank);
		} else if (!strcmp(test, "bw") || !strcmp(test, "bibw")) {
			int both = !strcmp(test, "bibw"), rounds = it / 8 + 1;
			struct coh_probe_counters c0 = { { 0 } };

			coh_probe_read(&c0);
			if (rank < 2) {
				v = stream(sbuf, rbuf, n, rounds, 1 - rank,
					   rank == 0, both, MPI_COMM_WORLD);
			} else {
				MPI_Barrier(MPI_COMM_WORLD); /* stream's */
				idle_until_done();
			}
			if (!rank)
				release_idle();
			if (!both)
				coh_probe_report(
					test, n,
					(uint64_t)WINDOW *
						(warmup(rounds) + rounds),
					&c0, rank);
		} else if (!strcmp(test, "mbw")) {
			int half = size / 2, peer, sender;
			double mine = 0, tot;

			if (rank < 2 * half) {
				sender = rank < half;
				peer = sender ? rank + half : rank - half;
				mine = stream(sbuf, rbuf, n, it / 8 + 1, peer,
					      sender, 0, MPI_COMM_WORLD);
			} else {
				MPI_Barrier(MPI_COMM_WORLD);
			}
			MPI_Reduce(&mine, &tot, 1, MPI_DOUBLE, MPI_SUM, 0,
				   MPI_COMM_WORLD);
			/* sender and receiver both count the bytes */
			v = tot / 2;
		} else if (!strcmp(test, "stall")) {
			v = stall(sbuf, rbuf, n, it / 8 + 1, pair);
		} else if (!strcmp(test, "allreduce")) {
			v = allreduce((double *)sbuf, (double *)rbuf,
				      n < (1u << 20) ? n : (1u << 20), it);
			unit = "us";
			if (n >= (1u << 20))
				break;
		} else {
			if (!rank)
				fprintf(stderr, "mpi_bench: unknown test %s\n",
					test);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		if (!rank)
			printf("RESULT %s %zu %.3f %s\n", test, n, v, unit);
		fflush(stdout);
	}
	free(sbuf);
	free(rbuf);
	MPI_Comm_free(&pair);
	MPI_Finalize();
	return 0;
}
