/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream-triggered MPI when a peer stops (docs/stream.md, "Peer failure"),
 * 2 ranks on different emulated hosts. A rank "dies" by stopping itself
 * with SIGSTOP, which also stops the process's heartbeat thread.
 *   A. a live but slow sender (it sleeps 2.5 timeouts before its start):
 *      the receiver's wait succeeds, with the right data;
 *   B. a stopped sender: the receiver's queue fails, within the timeout
 *      plus a margin, and does not hang;
 *   C. a stopped receiver: the sender, out of slots, fails the same way;
 *   D. a stopped rank in a persistent barrier: the other rank fails.
 *   stream_peer CASES   e.g. AB, C or D: at most one stop case, last
 * CXL_PEER_TIMEOUT_MS is 600 and CXLMPI_STREAM_SLOTS 1 here. The timeout is
 * one setting for every liveness watch, so a rank stopped longer is dead
 * to its MPI library too: after a stop case rank 0 kills it, prints the
 * verdict line "stream_peer: N checks, M bad" and exits without
 * MPI_Finalize (ctest passes on that line, CXL_MPI_PASS_LINE).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stream-triggering.h"

#define TIMEOUT_MS 600
#define MARGIN_MS 3000

static int checks, bad, rank;
static pid_t other_pid;

static void check(int ok, const char *what, long a, long b)
{
	checks++;
	if (!ok && bad++ < 20)
		fprintf(stderr, "rank %d: %s (%ld, %ld)\n", rank, what, a, b);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Wait until the other rank is stopped (state T in /proc): it stopped
 * itself after the barrier before this. */
static void wait_stopped(void)
{
	char path[64], buf[256], *p;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)other_pid);
	for (int i = 0; i < 5000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'T')
			return;
		usleep(1000);
	}
	check(0, "the other rank did not stop", 0, 0);
}

/* One queue run of the given requests: start all, wait all, queue wait.
 * Returns MPIS_Queue_wait's result and the time it took. */
static int run(MPIS_Request *reqs, int n, long *ms)
{
	MPIS_Queue q = MPIS_QUEUE_NULL;
	long t0 = now_ms();
	int rc;

	check(MPIS_Queue_init(&q, THREAD, NULL) == MPIS_SUCCESS, "queue init",
	      0, 0);
	check(MPIS_Enqueue_startall(q, n, reqs) == MPIS_SUCCESS, "startall", n,
	      0);
	check(MPIS_Enqueue_waitall(q) == MPIS_SUCCESS, "waitall", n, 0);
	rc = MPIS_Queue_wait(q);
	*ms = now_ms() - t0;
	check(MPIS_Queue_free(&q) == MPIS_SUCCESS, "queue free", rc, 0);
	return rc;
}

static void check_failed_in_time(int rc, long ms, const char *what)
{
	check(rc != MPIS_SUCCESS, what, rc, ms);
	/* the peer's last beat may precede our wait by up to a beat
	 * period (100 ms) plus a look (50 ms) */
	check(ms >= TIMEOUT_MS - 150 && ms < TIMEOUT_MS + MARGIN_MS,
	      "failure not within the timeout and its margin", ms, TIMEOUT_MS);
	if (rank == 0)
		printf("stream_peer: %s: failed (%d) after %ld ms\n", what, rc,
		       ms);
}

/* After a stop case: the stopped rank is dead to the job. Rank 0 ends it
 * and says how the checks went (its own and, added before, rank 1's). */
static void end_after_stop(void)
{
	/* the verdict out first: the launcher tears the job down as soon as
	 * it sees the kill */
	printf("stream_peer: %d checks, %d bad\n", checks, bad);
	fflush(stdout);
	kill(other_pid, SIGKILL);
	_exit(bad ? 1 : 0);
}

/* Before a stop case: rank 1's counts to rank 0, which reports them. */
static void gather_counts(void)
{
	int mine[2] = { checks, bad }, sum[2];

	MPI_Reduce(mine, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		checks = sum[0], bad = sum[1];
	else
		checks = bad = 0;
}

int main(int argc, char **argv)
{
	MPIS_Request fwd, back, bar;
	const char *cases = argc > 1 ? argv[1] : "";
	int size, val = 0, buf = 0;
	pid_t pids[2];
	long ms;
	int rc;

	/* before the first stream call: the library reads them once */
	setenv("CXL_PEER_TIMEOUT_MS", "600", 1);
	setenv("CXLMPI_STREAM_SLOTS", "1", 1);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || !*cases || strspn(cases, "ABCD") != strlen(cases)) {
		if (!rank)
			fprintf(stderr, "usage: stream_peer CASES (of A, B, C, "
					"D; B, C or D last), 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	pids[rank] = getpid();
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, pids, sizeof(pid_t),
		      MPI_BYTE, MPI_COMM_WORLD);
	other_pid = pids[1 - rank];

	/* fwd: rank 1 -> rank 0; back: rank 0 -> rank 1 */
	if (rank == 0) {
		MPIS_Recv_init(&buf, 1, MPI_INT, 1, 1, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &fwd);
		MPIS_Send_init(&val, 1, MPI_INT, 1, 2, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &back);
	} else {
		MPIS_Send_init(&val, 1, MPI_INT, 0, 1, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &fwd);
		MPIS_Recv_init(&buf, 1, MPI_INT, 0, 2, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &back);
	}
	MPIS_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &bar);
	MPIS_Request all[3] = { fwd, back, bar };
	check(MPIS_Matchall(3, all, MPI_STATUSES_IGNORE) == MPIS_SUCCESS,
	      "matchall", 0, 0);

	/* A: slow but alive */
	MPI_Barrier(MPI_COMM_WORLD);
	if (!strchr(cases, 'A')) {
		/* not asked for */
	} else if (rank == 1) {
		usleep(5 * TIMEOUT_MS * 1000 / 2);
		val = 41;
		check(run(&fwd, 1, &ms) == MPIS_SUCCESS, "A: send", 0, 0);
	} else {
		rc = run(&fwd, 1, &ms);
		check(rc == MPIS_SUCCESS && buf == 41,
		      "A: wait on a slow sender", rc, buf);
		check(ms >= 2 * TIMEOUT_MS, "A: the wait was not long", ms, 0);
		printf("stream_peer: A: slow sender, received after %ld ms\n",
		       ms);
	}

	/* B: the sender stops */
	MPI_Barrier(MPI_COMM_WORLD);
	if (strchr(cases, 'B')) {
		gather_counts();
		if (rank == 1)
			raise(SIGSTOP); /* and killed there */
		wait_stopped();
		rc = run(&fwd, 1, &ms);
		check_failed_in_time(rc, ms,
				     "B: receive from a stopped sender");
		end_after_stop();
	}

	/* C: the receiver stops; one slot, so the second send waits for
	 * the credit of the first */
	MPI_Barrier(MPI_COMM_WORLD);
	if (strchr(cases, 'C')) {
		MPIS_Request two[1] = { back };
		MPIS_Queue q = MPIS_QUEUE_NULL;
		long t0;

		gather_counts();
		if (rank == 1)
			raise(SIGSTOP); /* and killed there */
		wait_stopped();
		t0 = now_ms();
		MPIS_Queue_init(&q, THREAD, NULL);
		for (int i = 0; i < 2; i++) {
			check(MPIS_Enqueue_start(q, two) == MPIS_SUCCESS,
			      "C: start", i, 0);
			check(MPIS_Enqueue_waitall(q) == MPIS_SUCCESS,
			      "C: waitall", i, 0);
		}
		rc = MPIS_Queue_wait(q);
		ms = now_ms() - t0;
		MPIS_Queue_free(&q);
		check_failed_in_time(rc, ms, "C: send to a stopped receiver");
		end_after_stop();
	}

	/* D: a rank stops in a persistent barrier */
	MPI_Barrier(MPI_COMM_WORLD);
	if (strchr(cases, 'D')) {
		gather_counts();
		if (rank == 1)
			raise(SIGSTOP); /* and killed there */
		wait_stopped();
		rc = run(&bar, 1, &ms);
		check_failed_in_time(rc, ms, "D: barrier with a stopped rank");
		end_after_stop();
	}

	MPI_Barrier(MPI_COMM_WORLD);
	MPIS_Request_free(&fwd);
	MPIS_Request_free(&back);
	MPIS_Request_free(&bar);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("stream_peer: %d checks, %d bad\n", checks, bad);
	MPI_Finalize();
	return bad ? 1 : 0;
}
