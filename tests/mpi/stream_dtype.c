/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream requests with derived datatypes, on any number of ranks >= 2 (a
 * ring: each rank sends to its right and receives from its left
 * neighbour). Each case sends (sendtype, scount) into (recvtype, rcount)
 * of the same type signature, 3 rounds on one matched pair: vector with
 * a stride, indexed with holes, a struct of mixed types, resized with a
 * negative lower bound, blocks out of memory order, a predefined type
 * with a hole (MPI_SHORT_INT), count > 1, vector into contiguous and
 * back, sizes through the flag line (<= 48 B), stamped lines (channels
 * of up to 4 KiB), a single slot (8 KiB, gathered through the bounce
 * buffer) and chunks (> 64 KiB), and count 0. Every byte of the receive buffer
 * is checked against MPI_Unpack(MPI_Pack(the sender's buffer)) applied to the
 * same initial buffer: the data, and holes untouched. Then errors: a send
 * larger than its receive (MPI_ERR_TRUNCATE at matching), a size over 1 GiB,
 * and a non-contiguous allreduce. Ends with "stream_dtype: N checks, M bad";
 * exit status 1 if M > 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream-triggering.h"

static int checks, bad, rank, size, left, right;

static void check(int ok, const char *what, long a, long b)
{
	checks++;
	if (!ok && bad++ < 20)
		fprintf(stderr, "rank %d: %s (%ld, %ld)\n", rank, what, a, b);
}

/* The send buffer of rank r in round k: every byte, holes included. */
static void pattern(uint8_t *b, size_t n, int r, int k)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(r * 37 + i * 11 + (i >> 8) * 3 + k * 5 + 1);
}

/*
 * A case: buffers of `room` bytes, whose data start `org` bytes in (the
 * buffer argument is base + org, so negative displacements stay inside).
 */
struct dcase {
	const char *name;
	MPI_Datatype st, rt;
	int sc, rc;
	size_t room, org;
};

static void run_case(MPIS_Queue q, const struct dcase *c, int tag)
{
	uint8_t *sb = malloc(c->room), *rb = malloc(c->room);
	uint8_t *want = malloc(c->room), *pk;
	int pksize = 0, pos;
	MPIS_Request rq[2];

	MPI_Pack_size(c->sc, c->st, MPI_COMM_WORLD, &pksize);
	pk = malloc((size_t)pksize + 1);
	check(MPIS_Recv_init(rb + c->org, c->rc, c->rt, left, tag,
			     MPI_COMM_WORLD, MPI_INFO_NULL,
			     &rq[0]) == MPIS_SUCCESS,
	      c->name, 0, 0);
	check(MPIS_Send_init(sb + c->org, c->sc, c->st, right, tag,
			     MPI_COMM_WORLD, MPI_INFO_NULL,
			     &rq[1]) == MPIS_SUCCESS,
	      c->name, 1, 0);
	check(MPIS_Matchall(2, rq, MPI_STATUSES_IGNORE) == MPIS_SUCCESS,
	      c->name, 2, 0);
	for (int k = 0; k < 3; k++) {
		size_t diff = 0, first = 0;

		pattern(sb, c->room, rank, k);
		memset(rb, 0xee, c->room);
		/* what must arrive: the left rank's buffer, packed with the
		 * send type and unpacked with the receive type */
		pattern(want, c->room, left, k);
		pos = 0;
		MPI_Pack(want + c->org, c->sc, c->st, pk, pksize, &pos,
			 MPI_COMM_WORLD);
		memset(want, 0xee, c->room);
		pksize = pos;
		pos = 0;
		MPI_Unpack(pk, pksize, &pos, want + c->org, c->rc, c->rt,
			   MPI_COMM_WORLD);
		MPIS_Enqueue_startall(q, 2, rq);
		MPIS_Enqueue_waitall(q);
		check(MPIS_Queue_wait(q) == MPIS_SUCCESS, c->name, 3, k);
		for (size_t i = 0; i < c->room; i++)
			if (rb[i] != want[i] && !diff++)
				first = i;
		if (diff && bad < 20)
			fprintf(stderr,
				"rank %d: %s: %zu bytes differ, first at %ld "
				"(got %#x, want %#x)\n",
				rank, c->name, diff, (long)first - (long)c->org,
				rb[first], want[first]);
		check(!diff, c->name, (long)diff, k);
	}
	check(MPIS_Request_freeall(2, rq) == MPIS_SUCCESS, c->name, 4, 0);
	free(sb);
	free(rb);
	free(want);
	free(pk);
}

static MPI_Datatype commit(MPI_Datatype t)
{
	MPI_Type_commit(&t);
	return t;
}

static void test_cases(MPIS_Queue q)
{
	MPI_Datatype vec, idx, st, negr, rev, big, small, mid, lines, edge;
	struct dcase cs[20];
	int n = 0;

	/* 3 of every 5 ints, 4 times: 48 B per element */
	MPI_Type_vector(4, 3, 5, MPI_INT, &vec);
	vec = commit(vec);
	cs[n++] = (struct dcase){ "vector x2", vec, vec, 2, 2, 1024, 0 };
	cs[n++] = (struct dcase){
		"vector -> contiguous", vec, MPI_INT, 2, 24, 1024, 0
	};
	cs[n++] = (struct dcase){
		"contiguous -> vector", MPI_INT, vec, 24, 2, 1024, 0
	};
	/* doubles in blocks 2, 1, 3 at 0, 4, 9: holes, extent 12 doubles */
	{
		int bl[3] = { 2, 1, 3 }, dp[3] = { 0, 4, 9 };

		MPI_Type_indexed(3, bl, dp, MPI_DOUBLE, &idx);
		idx = commit(idx);
	}
	cs[n++] = (struct dcase){ "indexed x3", idx, idx, 3, 3, 1024, 0 };
	cs[n++] = (struct dcase){
		"indexed -> double", idx, MPI_DOUBLE, 3, 18, 1024, 0
	};
	/* struct { char; double; short[3] } with its padding, x5 */
	{
		int bl[3] = { 1, 1, 3 };
		MPI_Aint dp[3] = { 0, 8, 16 };
		MPI_Datatype ty[3] = { MPI_CHAR, MPI_DOUBLE, MPI_SHORT };

		MPI_Type_create_struct(3, bl, dp, ty, &st);
		st = commit(st);
	}
	cs[n++] = (struct dcase){ "struct x5", st, st, 5, 5, 1024, 0 };
	/* 2 ints at -24 and 3 at 8 (bytes), resized to lb -32, extent 64 */
	{
		int bl[2] = { 2, 3 };
		MPI_Aint dp[2] = { -24, 8 };
		MPI_Datatype h;

		MPI_Type_create_hindexed(2, bl, dp, MPI_INT, &h);
		MPI_Type_create_resized(h, -32, 64, &negr);
		MPI_Type_free(&h);
		negr = commit(negr);
	}
	cs[n++] =
		(struct dcase){ "resized lb<0 x3", negr, negr, 3, 3, 512, 64 };
	cs[n++] = (struct dcase){
		"resized lb<0 -> int", negr, MPI_INT, 3, 15, 512, 64
	};
	/* dense, but the second double first: type-map order, not memory */
	{
		int bl[2] = { 1, 1 };
		MPI_Aint dp[2] = { 8, 0 };
		MPI_Datatype ty[2] = { MPI_DOUBLE, MPI_DOUBLE };

		MPI_Type_create_struct(2, bl, dp, ty, &rev);
		rev = commit(rev);
	}
	cs[n++] = (struct dcase){
		"reversed -> double", rev, MPI_DOUBLE, 4, 8, 256, 0
	};
	cs[n++] = (struct dcase){
		"MPI_SHORT_INT x4", MPI_SHORT_INT, MPI_SHORT_INT, 4, 4, 256, 0
	};
	/* 8 of every 16 bytes: 12 B (inline), 4 KiB, 200 KiB (chunks) */
	MPI_Type_vector(3, 4, 8, MPI_BYTE, &small);
	small = commit(small);
	cs[n++] =
		(struct dcase){ "12 B inline", small, MPI_BYTE, 1, 12, 256, 0 };
	/* 200 B and 216 B: the flag line and stamped lines */
	MPI_Type_vector(25, 8, 16, MPI_BYTE, &lines);
	lines = commit(lines);
	cs[n++] = (struct dcase){
		"200 B stamped lines", lines, MPI_BYTE, 1, 200, 512, 0
	};
	MPI_Type_vector(27, 8, 16, MPI_BYTE, &edge);
	edge = commit(edge);
	cs[n++] = (struct dcase){
		"216 B stamped lines", edge, edge, 1, 1, 512, 0
	};
	MPI_Type_vector(512, 8, 16, MPI_BYTE, &mid);
	mid = commit(mid);
	cs[n++] = (struct dcase){ "4 KiB", mid, mid, 1, 1, 8192, 0 };
	cs[n++] = (struct dcase){ "8 KiB one slot", mid, mid, 2, 2, 16384, 0 };
	MPI_Type_vector(25600, 1, 2, MPI_DOUBLE, &big);
	big = commit(big);
	cs[n++] =
		(struct dcase){ "200 KiB chunked", big, big, 1, 1, 409600, 0 };
	cs[n++] = (struct dcase){
		"200 KiB -> contiguous", big, MPI_DOUBLE, 1, 25600, 409600, 0
	};
	cs[n++] = (struct dcase){ "count 0", idx, idx, 0, 0, 64, 0 };
	for (int i = 0; i < n; i++)
		run_case(q, &cs[i], 100 + i);
	MPI_Type_free(&vec);
	MPI_Type_free(&idx);
	MPI_Type_free(&st);
	MPI_Type_free(&negr);
	MPI_Type_free(&rev);
	MPI_Type_free(&small);
	MPI_Type_free(&mid);
	MPI_Type_free(&lines);
	MPI_Type_free(&edge);
	MPI_Type_free(&big);
}

static void test_errors(void)
{
	MPI_Datatype vec, huge;
	MPIS_Request r = MPIS_REQUEST_NULL, x = MPIS_REQUEST_NULL;
	int buf[64] = { 0 }, flag = 0;

	/* 6 ints sent as a vector into a receive of 4 contiguous ints */
	MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	if (rank == 0)
		MPIS_Send_init(buf, 1, vec, 1, 7, MPI_COMM_WORLD, MPI_INFO_NULL,
			       &r);
	else if (rank == 1)
		MPIS_Recv_init(buf, 4, MPI_INT, 0, 7, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r);
	if (rank <= 1) {
		int rc = MPIS_Match(&r, MPI_STATUS_IGNORE), polls = 0;

		while (rc == MPIS_SUCCESS && !flag && polls++ < 1000000)
			rc = MPIS_Is_matched(&r, &flag);
		if (rank == 0)
			check(rc == MPI_ERR_TRUNCATE,
			      "vector send larger than the receive", rc, flag);
		else
			check(rc == MPIS_SUCCESS && flag == 1,
			      "the receive matches", rc, flag);
		MPIS_Request_free(&r);
	}
	/* 1 MiB elements x 2048: 2 GiB, over the 1 GiB limit */
	MPI_Type_contiguous(1 << 20, MPI_BYTE, &huge);
	MPI_Type_commit(&huge);
	check(MPIS_Send_init(buf, 2048, huge, right, 8, MPI_COMM_WORLD,
			     MPI_INFO_NULL, &x) == MPIS_UNSUPPORTED_BEHAVIOR &&
		      x == MPIS_REQUEST_NULL,
	      "2 GiB message", 0, 0);
	MPI_Type_free(&huge);
	/* collectives keep contiguous types */
	check(MPIS_Allreduce_init(buf, buf + 32, 1, vec, MPI_SUM,
				  MPI_COMM_WORLD, MPI_INFO_NULL,
				  &x) == MPIS_UNSUPPORTED_BEHAVIOR &&
		      x == MPIS_REQUEST_NULL,
	      "allreduce of a vector", 0, 0);
	MPI_Type_free(&vec);
}

int main(int argc, char **argv)
{
	MPIS_Queue q = MPIS_QUEUE_NULL;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;
	check(MPIS_Queue_init(&q, THREAD, NULL) == MPIS_SUCCESS, "queue init",
	      0, 0);
	test_cases(q);
	test_errors();
	check(MPIS_Queue_free(&q) == MPIS_SUCCESS, "queue free", 0, 0);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("stream_dtype: %d checks, %d bad\n", checks, bad);
	MPI_Finalize();
	return bad ? 1 : 0;
}
