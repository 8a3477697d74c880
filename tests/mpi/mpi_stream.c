/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream-triggered MPI (include/stream-triggering.h) on the pool, every
 * call and error path, on any number of ranks >= 2 (a ring: each rank
 * sends to its right and receives from its left neighbour):
 *  1. ordering: per iteration a host item fills the send buffer, then
 *     receive and send starts, a wait, and a host item that records the
 *     received value; the log must be in enqueue order with every value;
 *  2. message sizes 0 B .. 1 MiB, every byte checked, several rounds;
 *  3. flow control: the sender runs 40 messages ahead of a slow receiver
 *     (more than the channel's slots), each message intact and in order;
 *  4. matching: Match in send-then-receive order (no deadlock), Matchall,
 *     Imatch + Is_matched + Wait, Queue_match, MPI_PROC_NULL peers;
 *  5. collectives: allreduce (sum of int, max of double, in place) for
 *     20 operations; a barrier that holds every rank until the slowest
 *     arrives (rank 0 arrives 30 ms late: nobody leaves before that);
 *  6. errors, each returning its code and changing nothing: starting an
 *     unmatched request, an Imatch request, a request started and not
 *     waited for (on this queue and on another), freeing a queue with
 *     started requests, freeing a started request, matching twice,
 *     MPIS_Wait on a communication request, unsupported queue types,
 *     collective datatypes, operations and wildcards, a send larger than
 *     its receive.
 * Ends with "stream: N checks, M bad"; exit status 1 if M > 0.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stream-triggering.h"

static int checks, bad, rank, size, left, right;

static void check(int ok, const char *what, long a, long b)
{
	checks++;
	if (!ok && bad++ < 20)
		fprintf(stderr, "rank %d: %s (%ld, %ld)\n", rank, what, a, b);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 1. ordering */
#define ITERS 30
struct order {
	int sendv, recvv;
	int log[4 * ITERS], nlog;
	int got[ITERS];
	int it;
};
static struct order ord;

static void fill(void *arg)
{
	(void)arg;
	ord.log[ord.nlog++] = 2 * ord.it;
	ord.sendv = rank * 1000 + ord.it;
}

static void record(void *arg)
{
	(void)arg;
	ord.log[ord.nlog++] = 2 * ord.it + 1;
	ord.got[ord.it] = ord.recvv;
	ord.recvv = -1;
	ord.it++;
}

static void test_order(MPIS_Queue q)
{
	MPIS_Request rq[2];

	memset(&ord, 0, sizeof(ord));
	ord.recvv = -1;
	MPIS_Recv_init(&ord.recvv, 1, MPI_INT, left, 1, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[0]);
	MPIS_Send_init(&ord.sendv, 1, MPI_INT, right, 1, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
	check(MPIS_Matchall(2, rq, MPI_STATUSES_IGNORE) == MPIS_SUCCESS,
	      "matchall", 0, 0);
	for (int i = 0; i < ITERS; i++) {
		CXLMPI_Enqueue_host(q, fill, NULL);
		check(MPIS_Enqueue_startall(q, 2, rq) == MPIS_SUCCESS,
		      "startall", i, 0);
		check(MPIS_Enqueue_waitall(q) == MPIS_SUCCESS, "waitall", i, 0);
		CXLMPI_Enqueue_host(q, record, NULL);
	}
	check(MPIS_Queue_wait(q) == MPIS_SUCCESS, "queue wait", 0, 0);
	check(ord.nlog == 2 * ITERS, "log length", ord.nlog, 2 * ITERS);
	for (int i = 0; i < ord.nlog; i++)
		check(ord.log[i] == i, "log order", i, ord.log[i]);
	for (int i = 0; i < ITERS; i++)
		check(ord.got[i] == left * 1000 + i, "ordered value", i,
		      ord.got[i]);
	check(MPIS_Request_freeall(2, rq) == MPIS_SUCCESS, "freeall", 0, 0);
	check(rq[0] == MPIS_REQUEST_NULL && rq[1] == MPIS_REQUEST_NULL,
	      "freeall nulls", 0, 0);
}

/* 2. sizes */
static void test_sizes(MPIS_Queue q)
{
	/* the flag line (<= 48 B), stamped lines (up to 4 KiB: every
	 * message of these channels), one slot (65536), chunks (> 64 KiB) */
	static const int sizes[] = { 0,	  1,   8,    47,    48,
				     49,  104, 105,  160,   161,
				     216, 217, 4096, 65536, 1 << 20 };

	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int n = sizes[s];
		unsigned char *sb = malloc((size_t)n + 1);
		unsigned char *rb = malloc((size_t)n + 1);
		MPIS_Request rq[2];

		MPIS_Recv_init(rb, n, MPI_BYTE, left, 2, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &rq[0]);
		MPIS_Send_init(sb, n, MPI_BYTE, right, 2, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &rq[1]);
		/* each request alone, the send first: must not deadlock */
		check(MPIS_Match(&rq[1], MPI_STATUS_IGNORE) == MPIS_SUCCESS,
		      "match send", n, 0);
		check(MPIS_Match(&rq[0], MPI_STATUS_IGNORE) == MPIS_SUCCESS,
		      "match recv", n, 0);
		for (int round = 0; round < 3; round++) {
			int bad_bytes = 0;

			for (int i = 0; i < n; i++)
				sb[i] = (unsigned char)(rank * 31 + i * 7 +
							round);
			memset(rb, 0xee, (size_t)n + 1);
			MPIS_Enqueue_start(q, &rq[0]);
			MPIS_Enqueue_start(q, &rq[1]);
			MPIS_Enqueue_waitall(q);
			check(MPIS_Queue_wait(q) == MPIS_SUCCESS, "size wait",
			      n, round);
			for (int i = 0; i < n; i++)
				if (rb[i] !=
				    (unsigned char)(left * 31 + i * 7 + round))
					bad_bytes++;
			check(!bad_bytes, "size bytes", n, bad_bytes);
			check(rb[n] == 0xee, "no byte past the message", n,
			      rb[n]);
		}
		MPIS_Request_free(&rq[0]);
		MPIS_Request_free(&rq[1]);
		free(sb);
		free(rb);
	}
}

/* 3. flow control: rank 0 sends 40 messages to rank 1, which is slow */
#define FLOW 40
static int flow_val, flow_got[FLOW], flow_n;

static void flow_fill(void *arg)
{
	flow_val = (int)(long)arg * 3 + 1;
}

static void flow_record(void *arg)
{
	(void)arg;
	flow_got[flow_n++] = flow_val;
	usleep(500);
}

static void test_flow(MPIS_Queue q)
{
	MPIS_Request r = MPIS_REQUEST_NULL;

	flow_n = 0;
	if (rank == 0)
		MPIS_Send_init(&flow_val, 1, MPI_INT, 1, 3, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	else if (rank == 1)
		MPIS_Recv_init(&flow_val, 1, MPI_INT, 0, 3, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	else
		return;
	check(MPIS_Match(&r, MPI_STATUS_IGNORE) == MPIS_SUCCESS, "flow match",
	      0, 0);
	for (long i = 0; i < FLOW; i++) {
		if (rank == 0)
			CXLMPI_Enqueue_host(q, flow_fill, (void *)i);
		MPIS_Enqueue_start(q, &r);
		MPIS_Enqueue_waitall(q);
		if (rank == 1)
			CXLMPI_Enqueue_host(q, flow_record, NULL);
	}
	check(MPIS_Queue_wait(q) == MPIS_SUCCESS, "flow wait", 0, 0);
	if (rank == 1) {
		check(flow_n == FLOW, "flow count", flow_n, FLOW);
		for (int i = 0; i < flow_n; i++)
			check(flow_got[i] == i * 3 + 1, "flow value", i,
			      flow_got[i]);
	}
	MPIS_Request_free(&r);
}

/* 3b. a request that moves between two queues, round after round, with
 * no host wait in between: each round runs after the previous one */
#define REQUEUE 200
static void test_requeue(MPIS_Queue q)
{
	MPIS_Request r = MPIS_REQUEST_NULL;
	MPIS_Queue q2 = MPIS_QUEUE_NULL;
	static int v;

	if (rank > 1)
		return;
	v = rank == 0 ? 7 : 0;
	if (rank == 0)
		MPIS_Send_init(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	else
		MPIS_Recv_init(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	check(MPIS_Match(&r, MPI_STATUS_IGNORE) == MPIS_SUCCESS,
	      "requeue match", 0, 0);
	check(MPIS_Queue_init(&q2, THREAD, NULL) == MPIS_SUCCESS,
	      "requeue queue", 0, 0);
	for (int i = 0; i < REQUEUE; i++) {
		MPIS_Queue on = i % 2 ? q2 : q;

		check(MPIS_Enqueue_start(on, &r) == MPIS_SUCCESS,
		      "requeue start", i, 0);
		check(MPIS_Enqueue_waitall(on) == MPIS_SUCCESS,
		      "requeue waitall", i, 0);
	}
	check(MPIS_Queue_wait(q) == MPIS_SUCCESS, "requeue wait", 0, 0);
	check(MPIS_Queue_wait(q2) == MPIS_SUCCESS, "requeue wait 2", 0, 0);
	check(v == 7, "requeue value", v, 7);
	check(MPIS_Queue_free(&q2) == MPIS_SUCCESS, "requeue free", 0, 0);
	MPIS_Request_free(&r);
}

/* 4. Imatch, Is_matched, Wait; Queue_match; MPI_PROC_NULL */
static void test_imatch(MPIS_Queue q)
{
	int sv = rank + 100, rv = -1, flag = 0, polls = 0;
	MPIS_Request rq[2], m[2], pn[2];
	MPI_Status st;

	MPIS_Send_init(&sv, 1, MPI_INT, right, 4, MPI_COMM_WORLD, MPI_INFO_NULL,
		       &rq[0]);
	MPIS_Recv_init(&rv, 1, MPI_INT, left, 4, MPI_COMM_WORLD, MPI_INFO_NULL,
		       &rq[1]);
	check(MPIS_Imatch(&rq[0], &m[0]) == MPIS_SUCCESS, "imatch send", 0, 0);
	check(MPIS_Imatch(&rq[1], &m[1]) == MPIS_SUCCESS, "imatch recv", 0, 0);
	check(MPIS_Is_matched(&rq[1], &flag) == MPIS_SUCCESS && flag == 1,
	      "a receive is matched once posted", flag, 0);
	/* an Imatch request is not a communication request */
	check(MPIS_Enqueue_start(q, &m[0]) == MPIS_INVALID_REQUEST_STATE,
	      "start of an imatch request", 0, 0);
	check(MPIS_Request_free(&m[0]) == MPIS_INVALID_REQUEST_STATE &&
		      m[0] != MPIS_REQUEST_NULL,
	      "free of an imatch request", 0, 0);
	do {
		flag = -1;
		check(MPIS_Is_matched(&rq[0], &flag) == MPIS_SUCCESS,
		      "is_matched", polls, 0);
		polls++;
	} while (flag == 0 && polls < 1000000);
	check(flag == 1, "send matched", flag, polls);
	check(MPIS_Wait(&m[0], &st) == MPIS_SUCCESS &&
		      m[0] == MPIS_REQUEST_NULL,
	      "wait imatch", 0, 0);
	check(MPIS_Waitall(1, &m[1], MPI_STATUSES_IGNORE) == MPIS_SUCCESS &&
		      m[1] == MPIS_REQUEST_NULL,
	      "waitall imatch", 0, 0);
	check(MPIS_Wait(&m[1], MPI_STATUS_IGNORE) == MPIS_SUCCESS,
	      "wait on a null request", 0, 0);
	MPIS_Enqueue_startall(q, 2, rq);
	MPIS_Enqueue_waitall(q);
	MPIS_Queue_wait(q);
	check(rv == left + 100, "imatch value", rv, left + 100);
	MPIS_Request_freeall(2, rq);

	/* MPI_PROC_NULL: matched at once, starts do nothing */
	rv = -7;
	MPIS_Send_init(&sv, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &pn[0]);
	MPIS_Recv_init(&rv, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &pn[1]);
	check(MPIS_Queue_match(q, &pn[0], MPI_STATUS_IGNORE) == MPIS_SUCCESS &&
		      MPIS_Queue_match(q, &pn[1], MPI_STATUS_IGNORE) ==
			      MPIS_SUCCESS,
	      "queue_match proc_null", 0, 0);
	MPIS_Enqueue_startall(q, 2, pn);
	MPIS_Enqueue_waitall(q);
	check(MPIS_Queue_wait(q) == MPIS_SUCCESS && rv == -7,
	      "proc_null leaves the buffer", rv, 0);
	MPIS_Request_freeall(2, pn);
}

/* 5. collectives */
static double bar_t0, bar_t1;
static void bar_before(void *arg)
{
	(void)arg;
	if (rank == 0)
		usleep(30000);
	bar_t0 = now();
}
static void bar_after(void *arg)
{
	(void)arg;
	bar_t1 = now();
}

static void test_coll(MPIS_Queue q)
{
	int si, ri;
	double sd, rd, inplace[3];
	MPIS_Request ar[3], bar;

	MPIS_Allreduce_init(&si, &ri, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &ar[0]);
	MPIS_Allreduce_init(&sd, &rd, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &ar[1]);
	MPIS_Allreduce_init(MPI_IN_PLACE, inplace, 3, MPI_DOUBLE, MPI_SUM,
			    MPI_COMM_WORLD, MPI_INFO_NULL, &ar[2]);
	check(MPIS_Matchall(3, ar, MPI_STATUSES_IGNORE) == MPIS_SUCCESS,
	      "match allreduce", 0, 0);
	for (int i = 0; i < 20; i++) {
		si = rank + i;
		sd = (double)((rank * 7 + i) % size) + 0.5;
		for (int j = 0; j < 3; j++)
			inplace[j] = rank * 10.0 + j + i;
		MPIS_Enqueue_startall(q, 3, ar);
		MPIS_Enqueue_waitall(q);
		check(MPIS_Queue_wait(q) == MPIS_SUCCESS, "allreduce wait", i,
		      0);
		check(ri == size * (size - 1) / 2 + size * i, "allreduce sum",
		      ri, i);
		check(rd == (double)(size - 1) + 0.5, "allreduce max", (long)rd,
		      i);
		for (int j = 0; j < 3; j++)
			check(inplace[j] == 10.0 * size * (size - 1) / 2 +
						    size * (j + i),
			      "allreduce in place", (long)inplace[j], j);
	}
	MPIS_Request_freeall(3, ar);

	MPIS_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &bar);
	check(MPIS_Queue_match(q, &bar, MPI_STATUS_IGNORE) == MPIS_SUCCESS,
	      "match barrier", 0, 0);
	for (int i = 0; i < 3; i++) {
		CXLMPI_Enqueue_host(q, bar_before, NULL);
		MPIS_Enqueue_start(q, &bar);
		MPIS_Enqueue_waitall(q);
		CXLMPI_Enqueue_host(q, bar_after, NULL);
		check(MPIS_Queue_wait(q) == MPIS_SUCCESS, "barrier wait", i, 0);
		/* every rank left after rank 0 arrived (CLOCK_MONOTONIC is
		 * one clock: the emulated hosts share this machine) */
		double arrived0 = bar_t0;

		MPI_Bcast(&arrived0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		check(bar_t1 >= arrived0,
		      "barrier held until rank 0 came (us early)",
		      (long)((arrived0 - bar_t1) * 1e6), i);
	}
	MPIS_Request_free(&bar);
}

/* 6. erroneous use */
static void test_errors(MPIS_Queue q)
{
	MPIS_Queue q2 = MPIS_QUEUE_NULL, qx = MPIS_QUEUE_NULL;
	MPIS_Request s, r, big, x = MPIS_REQUEST_NULL;
	int sv = rank, rv = -1, flag = -1, buf[8] = { 0 };
	MPI_Datatype vec;

	MPIS_Send_init(&sv, 1, MPI_INT, right, 6, MPI_COMM_WORLD, MPI_INFO_NULL,
		       &s);
	MPIS_Recv_init(&rv, 1, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_INFO_NULL,
		       &r);
	/* unmatched */
	check(MPIS_Enqueue_start(q, &s) == MPIS_INVALID_REQUEST_STATE,
	      "start of an unmatched request", 0, 0);
	check(MPIS_Is_matched(&s, &flag) == MPIS_SUCCESS && flag == 0,
	      "still unmatched", flag, 0);
	check(MPIS_Enqueue_waitall(q) == MPIS_SUCCESS &&
		      MPIS_Queue_wait(q) == MPIS_SUCCESS,
	      "nothing was enqueued", 0, 0);
	check(MPIS_Enqueue_start(q, NULL) == MPI_ERR_ARG, "null argument", 0,
	      0);
	check(MPIS_Enqueue_start(q, &x) == MPIS_INVALID_REQUEST_STATE,
	      "start of a null request", 0, 0);
	MPIS_Request pair[2] = { r, s };
	check(MPIS_Matchall(2, pair, MPI_STATUSES_IGNORE) == MPIS_SUCCESS,
	      "match", 0, 0);
	check(MPIS_Match(&s, MPI_STATUS_IGNORE) == MPIS_INVALID_REQUEST_STATE,
	      "matching twice", 0, 0);
	/* started, not waited: again here, on another queue, freeing */
	check(MPIS_Queue_init(&q2, THREAD_SERIALIZED, NULL) == MPIS_SUCCESS,
	      "second queue", 0, 0);
	check(MPIS_Enqueue_start(q, &s) == MPIS_SUCCESS, "start", 0, 0);
	check(MPIS_Enqueue_start(q, &s) == MPIS_INVALID_REQUEST_STATE,
	      "start twice without a wait", 0, 0);
	check(MPIS_Enqueue_start(q2, &s) == MPIS_INVALID_REQUEST_STATE,
	      "start on another queue before the wait", 0, 0);
	MPIS_Request two[2] = { r, r };
	check(MPIS_Enqueue_startall(q, 2, two) == MPIS_INVALID_REQUEST_STATE,
	      "the same request twice in startall", 0, 0);
	check(MPIS_Request_free(&s) == MPIS_INVALID_REQUEST_STATE &&
		      s != MPIS_REQUEST_NULL,
	      "free of a started request", 0, 0);
	check(MPIS_Queue_free(&q) == MPIS_INVALID_REQUEST_STATE &&
		      q != MPIS_QUEUE_NULL,
	      "free of a queue with a started request", 0, 0);
	check(MPIS_Wait(&s, MPI_STATUS_IGNORE) == MPIS_UNSUPPORTED_BEHAVIOR,
	      "MPIS_Wait of a communication request", 0, 0);
	/* nothing changed: the receive and wait still complete it */
	MPIS_Enqueue_start(q, &r);
	check(MPIS_Enqueue_waitall(q) == MPIS_SUCCESS &&
		      MPIS_Queue_wait(q) == MPIS_SUCCESS,
	      "wait after the errors", 0, 0);
	check(rv == left, "value after the errors", rv, left);
	/* waited on q: it may now go to q2 */
	rv = -1;
	sv = rank + 50;
	check(MPIS_Enqueue_startall(q2, 2, pair) == MPIS_SUCCESS &&
		      MPIS_Enqueue_waitall(q2) == MPIS_SUCCESS &&
		      MPIS_Queue_wait(q2) == MPIS_SUCCESS && rv == left + 50,
	      "restart on another queue after the wait", rv, left + 50);
	check(MPIS_Queue_free(&q2) == MPIS_SUCCESS && q2 == MPIS_QUEUE_NULL,
	      "free queue", 0, 0);
	MPIS_Request_free(&s);
	MPIS_Request_free(&r);

	/* unsupported */
	check(MPIS_Queue_init(&qx, GPU_MEM_OPS, NULL) ==
			      MPIS_UNSUPPORTED_BEHAVIOR &&
		      qx == MPIS_QUEUE_NULL,
	      "GPU_MEM_OPS without CUDA", 0, 0);
	check(MPIS_Queue_init(&qx, CXI, NULL) == MPIS_UNSUPPORTED_BEHAVIOR,
	      "CXI queue", 0, 0);
	x = MPIS_REQUEST_NULL;
	check(MPIS_Recv_init(&rv, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD,
			     MPI_INFO_NULL, &x) == MPIS_UNSUPPORTED_BEHAVIOR &&
		      x == MPIS_REQUEST_NULL,
	      "MPI_ANY_SOURCE", 0, 0);
	MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	/* point to point takes any datatype (stream_dtype.c tests them),
	 * collectives contiguous ones only */
	check(MPIS_Send_init(buf, 1, vec, right, 0, MPI_COMM_WORLD,
			     MPI_INFO_NULL, &x) == MPIS_SUCCESS &&
		      MPIS_Request_free(&x) == MPIS_SUCCESS,
	      "non-contiguous send", 0, 0);
	check(MPIS_Allreduce_init(buf, buf + 4, 1, vec, MPI_SUM, MPI_COMM_WORLD,
				  MPI_INFO_NULL,
				  &x) == MPIS_UNSUPPORTED_BEHAVIOR &&
		      x == MPIS_REQUEST_NULL,
	      "non-contiguous allreduce", 0, 0);
	MPI_Type_free(&vec);
	check(MPIS_Allreduce_init(buf, buf + 4, 1, MPI_INT, MPI_LAND,
				  MPI_COMM_WORLD, MPI_INFO_NULL,
				  &x) == MPIS_UNSUPPORTED_BEHAVIOR,
	      "allreduce MPI_LAND", 0, 0);
	check(MPIS_Send_init(buf, -1, MPI_INT, right, 0, MPI_COMM_WORLD,
			     MPI_INFO_NULL, &x) == MPI_ERR_COUNT,
	      "negative count", 0, 0);

	/* a send larger than its receive: the sender's match fails */
	if (rank == 0)
		MPIS_Send_init(buf, 8, MPI_INT, 1, 7, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &big);
	else if (rank == 1)
		MPIS_Recv_init(buf, 4, MPI_INT, 0, 7, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &big);
	if (rank <= 1) {
		int rc = MPIS_Match(&big, MPI_STATUS_IGNORE), polls = 0;

		/* the sender learns the receive's size when its match
		 * completes: in MPIS_Match or at a later test */
		flag = 0;
		while (rc == MPIS_SUCCESS && !flag && polls++ < 1000000)
			rc = MPIS_Is_matched(&big, &flag);
		flag = -1;
		MPIS_Is_matched(&big, &flag);
		if (rank == 0)
			check(rc == MPI_ERR_TRUNCATE && flag == 0,
			      "send larger than the receive", rc, flag);
		else
			check(rc == MPIS_SUCCESS && flag == 1,
			      "the receive matches", rc, flag);
		MPIS_Request_free(&big);
	}
}

int main(int argc, char **argv)
{
	MPIS_Queue q = MPIS_QUEUE_NULL;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;
	check(MPIS_Queue_init(&q, THREAD, NULL) == MPIS_SUCCESS &&
		      ACTIVE_QUEUE == q,
	      "queue init", 0, 0);
	test_order(q);
	test_sizes(q);
	test_flow(q);
	test_requeue(q);
	test_imatch(q);
	test_coll(q);
	test_errors(q);
	check(MPIS_Queue_free(&q) == MPIS_SUCCESS && q == MPIS_QUEUE_NULL &&
		      ACTIVE_QUEUE == MPIS_QUEUE_NULL,
	      "queue free", 0, 0);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("stream: %d checks, %d bad\n", checks, bad);
	MPI_Finalize();
	return bad ? 1 : 0;
}
