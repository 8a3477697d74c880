/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI functional suite over the cxl provider (or any transport): every
 * check compares with the value it must have. Needs >= 2 ranks.
 *   any-source/any-tag, probe/mprobe, non-blocking storm, many-to-one,
 *   a slow receiver (>= 3 ranks), collectives, Comm_split, RMA (fence,
 *   lock, PSCW).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size, passed, failed;

#define CHECK(c)                                                              \
	do {                                                                  \
		if (c) {                                                      \
			passed++;                                             \
		} else {                                                      \
			failed++;                                             \
			fprintf(stderr, "rank %d: %s:%d: CHECK failed: %s\n", \
				rank, __FILE__, __LINE__, #c);                \
		}                                                             \
	} while (0)

/* On a communicator of its own: MPI_ANY_TAG would legally match the next
 * sections' messages on MPI_COMM_WORLD. */
static void any_source(void)
{
	MPI_Comm c;

	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	if (rank) {
		int v = rank;

		MPI_Send(&v, 1, MPI_INT, 0, rank * 10, c);
	} else {
		int seen = 0;

		for (int i = 1; i < size; i++) {
			MPI_Status st;
			int v;

			MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c,
				 &st);
			CHECK(v == st.MPI_SOURCE && st.MPI_TAG == v * 10);
			seen |= 1 << v;
		}
		CHECK(seen == ((1 << size) - 2));
	}
	MPI_Comm_free(&c);
}

static void probes(void)
{
	if (rank == 1) {
		int *a = calloc(2000 + 1, sizeof(int));

		for (int i = 0; i < 2001; i++)
			a[i] = i;
		MPI_Send(a, 1001, MPI_INT, 0, 5, MPI_COMM_WORLD);
		MPI_Send(a, 2001, MPI_INT, 0, 6, MPI_COMM_WORLD);
		free(a);
	} else if (rank == 0) {
		MPI_Status st;
		MPI_Message msg;
		int n, flag = 0, *a;

		MPI_Probe(1, 5, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 1001);
		a = malloc((size_t)n * sizeof(int));
		MPI_Recv(a, n, MPI_INT, 1, 5, MPI_COMM_WORLD, &st);
		CHECK(a[1000] == 1000);
		free(a);
		while (!flag)
			MPI_Iprobe(MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &flag,
				   &st);
		MPI_Mprobe(1, 6, MPI_COMM_WORLD, &msg, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 2001);
		a = malloc((size_t)n * sizeof(int));
		MPI_Mrecv(a, n, MPI_INT, &msg, &st);
		CHECK(a[2000] == 2000 && st.MPI_SOURCE == 1);
		free(a);
	}
}

/* Every pair exchanges K messages of varying size, all outstanding. */
static void storm(void)
{
	enum {
		K = 64
	};
	int n = size * K;
	MPI_Request *rq = malloc(2 * (size_t)n * sizeof(MPI_Request));
	int **sb = malloc((size_t)n * sizeof(int *));
	int **rb = malloc((size_t)n * sizeof(int *));
	int nr = 0, bad = 0;

	for (int p = 0; p < size; p++)
		for (int k = 0; k < K; k++) {
			int i = p * K + k, len = 1 + (k * 97) % 3000;

			sb[i] = malloc((size_t)len * sizeof(int));
			rb[i] = malloc((size_t)len * sizeof(int));
			for (int j = 0; j < len; j++)
				sb[i][j] = rank * 1000003 + k * 31 + j;
			MPI_Irecv(rb[i], len, MPI_INT, p, k, MPI_COMM_WORLD,
				  &rq[nr++]);
			MPI_Isend(sb[i], len, MPI_INT, p, k, MPI_COMM_WORLD,
				  &rq[nr++]);
		}
	MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
	for (int p = 0; p < size; p++)
		for (int k = 0; k < K; k++) {
			int i = p * K + k, len = 1 + (k * 97) % 3000;

			for (int j = 0; j < len; j++)
				bad += rb[i][j] != p * 1000003 + k * 31 + j;
			free(sb[i]);
			free(rb[i]);
		}
	CHECK(bad == 0);
	free(sb);
	free(rb);
	free(rq);
}

static void many_to_one(void)
{
	enum {
		M = 100
	};

	if (rank) {
		for (int k = 0; k < M; k++) {
			int v[2] = { rank, k };

			MPI_Send(v, 2, MPI_INT, 0, 9, MPI_COMM_WORLD);
		}
		return;
	}
	int *next = calloc((size_t)size, sizeof(int)), bad = 0;

	for (int k = 0; k < M * (size - 1); k++) {
		int v[2];

		MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		bad += v[1] != next[v[0]]++; /* per-source order */
	}
	CHECK(bad == 0);
	for (int p = 1; p < size; p++)
		CHECK(next[p] == M);
	free(next);
}

/*
 * A receiver that does not progress must not hold up the sender's traffic
 * to others: rank 0 sends rank 1 SLOW_N messages of 2 KiB (each one cell
 * and one data slot of the cxl provider: more than its transfer area
 * has) while rank 1 sleeps outside MPI, then the same to rank 2, which
 * takes them at once. Rank 2 must have them all long before rank 1
 * wakes, and every byte arrives on both sides.
 */
#define SLOW_N 40
#define SLOW_LEN 2048
#define SLOW_NAP_MS 1500

static int slow_byte(int dst, size_t j)
{
	return (int)((j * 7 + (size_t)dst) & 0xff);
}

static void slow_receiver(void)
{
	const struct timespec nap = { SLOW_NAP_MS / 1000,
				      SLOW_NAP_MS % 1000 * 1000000L };
	MPI_Request rq[2 * SLOW_N];
	char *buf = malloc((size_t)SLOW_N * SLOW_LEN);
	double t0;
	int bad = 0;

	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 3);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (rank == 0) {
		for (int d = 1; d <= 2; d++) {
			char *p = buf + (size_t)(d - 1) * SLOW_LEN;

			for (size_t j = 0; j < SLOW_LEN; j++)
				p[j] = (char)slow_byte(d, j);
			for (int i = 0; i < SLOW_N; i++)
				MPI_Isend(p, SLOW_LEN, MPI_CHAR, d, 69 + d,
					  MPI_COMM_WORLD,
					  &rq[(d - 1) * SLOW_N + i]);
		}
		MPI_Waitall(2 * SLOW_N, rq, MPI_STATUSES_IGNORE);
	} else if (rank == 1 || rank == 2) {
		if (rank == 1)
			nanosleep(&nap, NULL);
		for (int i = 0; i < SLOW_N; i++)
			MPI_Irecv(buf + (size_t)i * SLOW_LEN, SLOW_LEN,
				  MPI_CHAR, 0, 69 + rank, MPI_COMM_WORLD,
				  &rq[i]);
		MPI_Waitall(SLOW_N, rq, MPI_STATUSES_IGNORE);
		if (rank == 2) {
			double dt = MPI_Wtime() - t0;

			CHECK(dt < SLOW_NAP_MS / 2000.0);
			if (dt >= SLOW_NAP_MS / 2000.0)
				fprintf(stderr,
					"rank 2: %d messages of %d bytes took "
					"%.3f s while rank 1 slept\n",
					SLOW_N, SLOW_LEN, dt);
		}
		for (size_t j = 0; j < (size_t)SLOW_N * SLOW_LEN; j++)
			bad += buf[j] != (char)slow_byte(rank, j % SLOW_LEN);
		CHECK(bad == 0);
	}
	free(buf);
	MPI_Barrier(MPI_COMM_WORLD);
}

static void collectives(void)
{
	int n = 10000, *cnt = malloc((size_t)size * sizeof(int)),
	    *dsp = malloc((size_t)size * sizeof(int));
	double *d = malloc((size_t)n * sizeof(double)),
	       *e = malloc((size_t)n * sizeof(double));
	int *a = malloc((size_t)size * 64 * sizeof(int)),
	    *b = malloc((size_t)size * 64 * sizeof(int));
	int v, tot = 0, ok;

	MPI_Barrier(MPI_COMM_WORLD);
	/* bcast from rank 1 */
	for (int i = 0; i < n; i++)
		d[i] = rank == 1 ? i * 0.5 : -1;
	MPI_Bcast(d, n, MPI_DOUBLE, 1, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i < n; i++)
		ok &= d[i] == i * 0.5;
	CHECK(ok);
	/* reduce and allreduce */
	for (int i = 0; i < n; i++)
		d[i] = rank + i;
	MPI_Reduce(d, e, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!rank) {
		ok = 1;
		for (int i = 0; i < n; i++)
			ok &= e[i] == (double)size * i + size * (size - 1) / 2;
		CHECK(ok);
	}
	MPI_Allreduce(d, e, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i < n; i++)
		ok &= e[i] == size - 1 + i;
	CHECK(ok);
	v = rank + 1;
	MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CHECK(v == size * (size + 1) / 2);
	/* gather / gatherv: rank r contributes r+1 ints of value r */
	for (int p = 0; p < size; p++) {
		cnt[p] = p + 1;
		dsp[p] = tot;
		tot += p + 1;
	}
	for (int i = 0; i <= rank; i++)
		a[i] = rank;
	MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (!rank)
		for (int p = 0; p < size; p++)
			CHECK(b[p] == p);
	MPI_Gatherv(a, rank + 1, MPI_INT, b, cnt, dsp, MPI_INT, 0,
		    MPI_COMM_WORLD);
	if (!rank) {
		ok = 1;
		for (int p = 0; p < size; p++)
			for (int i = 0; i <= p; i++)
				ok &= b[dsp[p] + i] == p;
		CHECK(ok);
	}
	/* scatter / scatterv */
	for (int i = 0; i < tot; i++)
		a[i] = rank ? -1 : i;
	MPI_Scatter(a, 1, MPI_INT, &v, 1, MPI_INT, 0, MPI_COMM_WORLD);
	CHECK(v == rank);
	MPI_Scatterv(a, cnt, dsp, MPI_INT, b, rank + 1, MPI_INT, 0,
		     MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i <= rank; i++)
		ok &= b[i] == dsp[rank] + i;
	CHECK(ok);
	/* allgather / allgatherv */
	v = rank * 7;
	MPI_Allgather(&v, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD);
	ok = 1;
	for (int p = 0; p < size; p++)
		ok &= b[p] == p * 7;
	CHECK(ok);
	for (int i = 0; i <= rank; i++)
		a[i] = rank;
	MPI_Allgatherv(a, rank + 1, MPI_INT, b, cnt, dsp, MPI_INT,
		       MPI_COMM_WORLD);
	ok = 1;
	for (int p = 0; p < size; p++)
		for (int i = 0; i <= p; i++)
			ok &= b[dsp[p] + i] == p;
	CHECK(ok);
	/* alltoall / alltoallv: element to p is rank*100+p */
	for (int p = 0; p < size; p++)
		a[p] = rank * 100 + p;
	MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD);
	ok = 1;
	for (int p = 0; p < size; p++)
		ok &= b[p] == p * 100 + rank;
	CHECK(ok);
	{
		/* rank sends p+1 ints to p; receives rank+1 from each */
		int *sc = malloc((size_t)size * sizeof(int)),
		    *sd = malloc((size_t)size * sizeof(int)),
		    *rc = malloc((size_t)size * sizeof(int)),
		    *rd = malloc((size_t)size * sizeof(int)), s = 0;

		for (int p = 0; p < size; p++) {
			sc[p] = p + 1;
			sd[p] = s;
			for (int i = 0; i <= p; i++)
				a[s + i] = rank * 1000 + p;
			s += p + 1;
			rc[p] = rank + 1;
			rd[p] = p * (rank + 1);
		}
		MPI_Alltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT,
			      MPI_COMM_WORLD);
		ok = 1;
		for (int p = 0; p < size; p++)
			for (int i = 0; i <= rank; i++)
				ok &= b[rd[p] + i] == p * 1000 + rank;
		CHECK(ok);
		free(sc);
		free(sd);
		free(rc);
		free(rd);
	}
	/* reduce_scatter_block and reduce_scatter */
	for (int i = 0; i < size * 4; i++)
		a[i] = i;
	MPI_Reduce_scatter_block(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i < 4; i++)
		ok &= b[i] == size * (rank * 4 + i);
	CHECK(ok);
	for (int i = 0; i < tot; i++)
		a[i] = i;
	MPI_Reduce_scatter(a, b, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i <= rank; i++)
		ok &= b[i] == size * (dsp[rank] + i);
	CHECK(ok);
	free(a);
	free(b);
	free(d);
	free(e);
	free(cnt);
	free(dsp);
}

static void split(void)
{
	MPI_Comm c;
	int r, s, v = rank, want = 0;

	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &c);
	MPI_Comm_rank(c, &r);
	MPI_Comm_size(c, &s);
	CHECK(s == (size + 1 - rank % 2) / 2);
	MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, c);
	for (int p = rank % 2; p < size; p += 2)
		want += p;
	CHECK(v == want);
	/* key -rank reverses the order */
	CHECK(r == s - 1 - rank / 2);
	MPI_Comm_free(&c);
}

static void rma(void)
{
	int *mem, buf[4], v;
	MPI_Win w;
	MPI_Group world, peers;

	MPI_Alloc_mem(64 * sizeof(int), MPI_INFO_NULL, &mem);
	for (int i = 0; i < 64; i++)
		mem[i] = -1;
	MPI_Win_create(mem, 64 * sizeof(int), sizeof(int), MPI_INFO_NULL,
		       MPI_COMM_WORLD, &w);
	/* fence: everyone puts its rank into slot rank of the right peer,
	 * and accumulates 1 into slot 63 of rank 0 */
	MPI_Win_fence(0, w);
	v = rank;
	MPI_Put(&v, 1, MPI_INT, (rank + 1) % size, rank, 1, MPI_INT, w);
	v = 1;
	MPI_Accumulate(&v, 1, MPI_INT, 0, 62, 1, MPI_INT, MPI_SUM, w);
	MPI_Win_fence(0, w);
	CHECK(mem[(rank + size - 1) % size] == (rank + size - 1) % size);
	if (!rank)
		CHECK(mem[62] == -1 + size);
	/* get under fence */
	MPI_Win_fence(0, w);
	MPI_Get(buf, 1, MPI_INT, (rank + 1) % size, rank, 1, MPI_INT, w);
	MPI_Win_fence(0, w);
	CHECK(buf[0] == rank);
	/* passive target: exclusive lock, fetch-and-add on rank 0 */
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w);
	v = 1;
	MPI_Fetch_and_op(&v, &buf[1], MPI_INT, 0, 61, MPI_SUM, w);
	MPI_Win_unlock(0, w);
	MPI_Barrier(MPI_COMM_WORLD);
	if (!rank)
		CHECK(mem[61] == -1 + size);
	/* PSCW: rank 0 exposes, everyone else writes 100+rank */
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	if (!rank) {
		int *others = malloc((size_t)size * sizeof(int));

		for (int p = 1; p < size; p++)
			others[p - 1] = p;
		MPI_Group_incl(world, size - 1, others, &peers);
		MPI_Win_post(peers, 0, w);
		MPI_Win_wait(w);
		for (int p = 1; p < size; p++)
			CHECK(mem[10 + p] == 100 + p);
		free(others);
	} else {
		int zero = 0;

		MPI_Group_incl(world, 1, &zero, &peers);
		MPI_Win_start(peers, 0, w);
		v = 100 + rank;
		MPI_Put(&v, 1, MPI_INT, 0, 10 + rank, 1, MPI_INT, w);
		MPI_Win_complete(w);
	}
	MPI_Group_free(&peers);
	MPI_Group_free(&world);
	MPI_Win_free(&w);
	MPI_Free_mem(mem);
}

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME];
	int len, tot[2];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("rank %d of %d on %s\n", rank, size, host);
	fflush(stdout);
	if (size < 2) {
		fprintf(stderr, "mpi_suite needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	any_source();
	probes();
	storm();
	many_to_one();
	if (size >= 3)
		slow_receiver();
	collectives();
	split();
	rma();
	MPI_Reduce((int[2]){ passed, failed }, tot, 2, MPI_INT, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_suite: %d passed, %d failed\n", tot[0], tot[1]);
	MPI_Finalize();
	return failed != 0;
}
