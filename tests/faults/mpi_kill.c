/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI side of tests/faults/mpi_kill.sh: every rank runs one kind of
 * operation in a loop, checking each result, until an MPI call fails.
 *
 *   mpi_kill OP DIR      OP: p2p | large | allreduce | window | stream
 *
 * Each rank writes DIR/pid.<rank> at start and DIR/ready.<rank> after 20
 * checked iterations; the script then kills one rank with SIGKILL. With
 * MPI_ERRORS_RETURN, a survivor whose call fails prints one line
 * "mpi_kill: rank R: OP failed after N iterations: <MPI error string>"
 * and exits 0 at once (MPI_Finalize cannot work without the dead rank).
 * A wrong result exits 1. The loop gives up after 300 s (exit 2).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stream-triggering.h"

#define READY_AFTER 20
#define SMALL 1024
#define LARGE (4u << 20)

static int rank, size, iter;
static const char *op, *dir;

static void mark(const char *what, long v)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.%d", dir, what, rank);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(3);
	}
	fprintf(f, "%ld\n", v);
	fclose(f);
}

/* A failed call ends this rank: report it, exit without MPI_Finalize. */
static void failed(int rc)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	MPI_Error_string(rc, msg, &len);
	msg[len] = 0;
	printf("mpi_kill: rank %d: %s failed after %d iterations: %s\n", rank,
	       op, iter, msg);
	fflush(stdout);
	_exit(0);
}

#define CALL(x)                         \
	do {                            \
		int rc_ = (x);          \
		if (rc_ != MPI_SUCCESS) \
			failed(rc_);    \
	} while (0)

static void wrong(const char *what, long got, long want)
{
	fprintf(stderr, "mpi_kill: rank %d: %s: wrong result %ld, want %ld\n",
		rank, what, got, want);
	exit(1);
}

/* Exchange with both ring neighbours, n bytes each way, verified. */
static void ring(char *sbuf, char *rbuf, size_t n)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;

	memset(sbuf, (char)(rank * 16 + iter), n);
	CALL(MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, right, 1, rbuf, (int)n,
			  MPI_BYTE, left, 1, MPI_COMM_WORLD,
			  MPI_STATUS_IGNORE));
	for (size_t i = 0; i < n; i += 4093)
		if (rbuf[i] != (char)(left * 16 + iter))
			wrong("ring", rbuf[i], (char)(left * 16 + iter));
}

static void allreduce(int *v)
{
	for (int i = 0; i < SMALL; i++)
		v[i] = rank + i + iter;
	CALL(MPI_Allreduce(MPI_IN_PLACE, v, SMALL, MPI_INT, MPI_SUM,
			   MPI_COMM_WORLD));
	for (int i = 0; i < SMALL; i++)
		if (v[i] != size * (size - 1) / 2 + size * (i + iter))
			wrong("allreduce", v[i],
			      size * (size - 1) / 2 + size * (i + iter));
}

/* A put to the right neighbour, fence, our window checked. */
static void window(MPI_Win win, int *base)
{
	int v = rank * 1000 + iter, left = (rank + size - 1) % size;

	CALL(MPI_Put(&v, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, win));
	CALL(MPI_Win_fence(0, win));
	if (base[0] != left * 1000 + iter)
		wrong("window", base[0], left * 1000 + iter);
	CALL(MPI_Win_fence(0, win));
}

/* A stream send to the right and receive from the left, one queue run. */
static void stream(MPIS_Request *reqs, int *sval, const int *rval)
{
	MPIS_Queue q = MPIS_QUEUE_NULL;
	int rc, left = (rank + size - 1) % size;

	*sval = rank * 1000 + iter;
	if (MPIS_Queue_init(&q, THREAD, NULL) != MPIS_SUCCESS ||
	    MPIS_Enqueue_startall(q, 2, reqs) != MPIS_SUCCESS ||
	    MPIS_Enqueue_waitall(q) != MPIS_SUCCESS)
		failed(MPI_ERR_OTHER);
	rc = MPIS_Queue_wait(q);
	MPIS_Queue_free(&q);
	if (rc != MPIS_SUCCESS) /* libcxlmpi said why on stderr */
		failed(MPI_ERR_OTHER);
	if (*rval != left * 1000 + iter)
		wrong("stream", *rval, left * 1000 + iter);
}

int main(int argc, char **argv)
{
	char *sbuf = NULL, *rbuf = NULL;
	int *vec = NULL, *base = NULL, sval = 0, rval = 0;
	MPI_Win win = MPI_WIN_NULL;
	MPIS_Request reqs[2];
	time_t t0 = time(NULL);

	if (argc != 3) {
		fprintf(stderr, "usage: mpi_kill OP DIR\n");
		return 2;
	}
	op = argv[1];
	dir = argv[2];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	mark("pid", (long)getpid());
	if (!strcmp(op, "p2p") || !strcmp(op, "large")) {
		size_t n = !strcmp(op, "p2p") ? SMALL : LARGE;

		sbuf = malloc(n);
		rbuf = malloc(n);
	} else if (!strcmp(op, "allreduce")) {
		vec = malloc(SMALL * sizeof(int));
	} else if (!strcmp(op, "window")) {
		CALL(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL,
				      MPI_COMM_WORLD, &base, &win));
		MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
		base[0] = -1;
		CALL(MPI_Win_fence(0, win));
	} else if (!strcmp(op, "stream")) {
		int right = (rank + 1) % size, left = (rank + size - 1) % size;

		MPIS_Send_init(&sval, 1, MPI_INT, right, 7, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &reqs[0]);
		MPIS_Recv_init(&rval, 1, MPI_INT, left, 7, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &reqs[1]);
		if (MPIS_Matchall(2, reqs, MPI_STATUSES_IGNORE) != MPIS_SUCCESS)
			failed(MPI_ERR_OTHER);
	} else {
		fprintf(stderr, "mpi_kill: unknown OP '%s'\n", op);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (iter = 0; time(NULL) - t0 < 300; iter++) {
		if (sbuf)
			ring(sbuf, rbuf, !strcmp(op, "p2p") ? SMALL : LARGE);
		else if (vec)
			allreduce(vec);
		else if (win != MPI_WIN_NULL)
			window(win, base);
		else
			stream(reqs, &sval, &rval);
		if (iter == READY_AFTER)
			mark("ready", iter);
	}
	fprintf(stderr, "mpi_kill: rank %d: no failure in 300 s\n", rank);
	return 2;
}
