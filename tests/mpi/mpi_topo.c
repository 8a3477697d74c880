/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Matching with self messages and MPI_ANY_SOURCE, and distributed graphs
 * built from them (issue: MPI_Dist_graph_create reported indegree 4 for
 * 3 edges). Checks, each on every rank:
 *  1. probe(ANY_SOURCE) then a receive from the probed source gets the
 *     probed message (length and contents), with one message from self
 *     and one from every other rank, for 20 rounds;
 *  2. mprobe(ANY_SOURCE) + mrecv gets exactly the probed message;
 *  3. MPI_Dist_graph_create in its general form on four graphs (the
 *     ring with self loops of the issue, weighted; every rank describing
 *     the edges of another rank; a graph with repeated edges; ranks with
 *     no edges at all) gives each rank the in- and out-neighbours,
 *     weights included, that the whole graph implies.
 * Ends with "topo: N checks, M bad"; exit status 1 if M > 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks, bad, rank, size;

static void check(int ok, const char *what, int a, int b)
{
	checks++;
	if (!ok && bad++ < 20)
		fprintf(stderr, "rank %d: %s (%d, %d)\n", rank, what, a, b);
}

/* 1 and 2: a message of r+1+round ints from every rank r, self included;
 * a tag per round, as a fast rank may send the next round's messages
 * while a slower one still probes for this round's */
static void probe_rounds(void)
{
	int *sbuf = malloc(sizeof(int) * (size_t)(size + 21));
	int *rbuf = malloc(sizeof(int) * (size_t)(size + 21));
	MPI_Request *rq = malloc(sizeof(*rq) * (size_t)size);

	for (int round = 0; round < 20; round++) {
		int n = rank + 1 + round, use_mprobe = round % 2;

		for (int i = 0; i < n; i++)
			sbuf[i] = rank * 1000 + i;
		for (int d = 0; d < size; d++)
			MPI_Isend(sbuf, n, MPI_INT, d, 77 + round,
				  MPI_COMM_WORLD, &rq[d]);
		for (int k = 0; k < size; k++) {
			MPI_Status st, st2;
			MPI_Message msg;
			int cnt, got;

			if (use_mprobe)
				MPI_Mprobe(MPI_ANY_SOURCE, 77 + round,
					   MPI_COMM_WORLD, &msg, &st);
			else
				MPI_Probe(MPI_ANY_SOURCE, 77 + round,
					  MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_INT, &cnt);
			check(cnt == st.MPI_SOURCE + 1 + round,
			      "probed length does not fit its source", cnt,
			      st.MPI_SOURCE);
			if (use_mprobe)
				MPI_Mrecv(rbuf, cnt, MPI_INT, &msg, &st2);
			else
				MPI_Recv(rbuf, cnt, MPI_INT, st.MPI_SOURCE,
					 77 + round, MPI_COMM_WORLD, &st2);
			MPI_Get_count(&st2, MPI_INT, &got);
			check(got == cnt && st2.MPI_SOURCE == st.MPI_SOURCE,
			      "received another message than the probed one",
			      got, st2.MPI_SOURCE);
			for (int i = 0; i < got && i < cnt; i++)
				if (rbuf[i] != st.MPI_SOURCE * 1000 + i) {
					check(0, "wrong data at index", i,
					      rbuf[i]);
					break;
				}
		}
		MPI_Waitall(size, rq, MPI_STATUSES_IGNORE);
	}
	free(sbuf);
	free(rbuf);
	free(rq);
}

/* A graph: edges[e] = {src, dst, weight}, known to every rank. */
struct edge {
	int s, d, w;
};

static int cmp_pair(const void *a, const void *b)
{
	const int *x = a, *y = b;

	return x[0] != y[0] ? x[0] - y[0] : x[1] - y[1];
}

/* Sorted (neighbour, weight) pairs of rank me, in or out; weights 0 for
 * an unweighted graph. */
static int expected(const struct edge *g, int ne, int me, int dir, int weighted,
		    int *pairs)
{
	int n = 0;

	for (int e = 0; e < ne; e++)
		if ((dir ? g[e].s : g[e].d) == me) {
			pairs[2 * n] = dir ? g[e].d : g[e].s;
			pairs[2 * n + 1] = weighted ? g[e].w : 0;
			n++;
		}
	qsort(pairs, (size_t)n, 2 * sizeof(int), cmp_pair);
	return n;
}

/* Rank `who` describes edges e with describer(e) == who. */
static void graph_case(const char *name, const struct edge *g, int ne,
		       const int *describer, int weighted)
{
	int *src = malloc(sizeof(int) * (size_t)(ne + 1));
	int *deg = malloc(sizeof(int) * (size_t)(ne + 1));
	int *dst = malloc(sizeof(int) * (size_t)(ne + 1));
	int *w = malloc(sizeof(int) * (size_t)(ne + 1));
	int *exp = malloc(sizeof(int) * (size_t)(4 * ne + 2));
	int *got = malloc(sizeof(int) * (size_t)(4 * ne + 2));
	int *nb = malloc(sizeof(int) * (size_t)(ne + 1));
	int *nw = malloc(sizeof(int) * (size_t)(ne + 1));
	int *ob = malloc(sizeof(int) * (size_t)(ne + 1));
	int *ow = malloc(sizeof(int) * (size_t)(ne + 1));
	int n = 0, indeg, outdeg, wflag, ein, eout;
	MPI_Comm gc;

	/* one source entry per edge that this rank describes */
	for (int e = 0; e < ne; e++)
		if (describer[e] == rank) {
			src[n] = g[e].s;
			deg[n] = 1;
			dst[n] = g[e].d;
			w[n] = g[e].w;
			n++;
		}
	MPI_Dist_graph_create(MPI_COMM_WORLD, n, src, deg, dst,
			      weighted ? (n ? w : MPI_WEIGHTS_EMPTY)
				       : MPI_UNWEIGHTED,
			      MPI_INFO_NULL, 0, &gc);
	MPI_Dist_graph_neighbors_count(gc, &indeg, &outdeg, &wflag);
	ein = expected(g, ne, rank, 0, weighted, exp);
	check(indeg == ein, name, indeg, ein);
	eout = expected(g, ne, rank, 1, weighted, exp + 2 * ein);
	check(outdeg == eout, name, outdeg, eout);
	check(!!wflag == !!weighted, "weighted flag", wflag, weighted);
	if (indeg == ein && outdeg == eout) {
		MPI_Dist_graph_neighbors(gc, indeg, nb, nw, outdeg, ob, ow);
		for (int i = 0; i < indeg; i++) {
			got[2 * i] = nb[i];
			got[2 * i + 1] = weighted ? nw[i] : 0;
		}
		qsort(got, (size_t)indeg, 2 * sizeof(int), cmp_pair);
		check(!memcmp(got, exp, sizeof(int) * 2 * (size_t)indeg),
		      "in-neighbours differ", indeg, 0);
		for (int i = 0; i < outdeg; i++) {
			got[2 * i] = ob[i];
			got[2 * i + 1] = weighted ? ow[i] : 0;
		}
		qsort(got, (size_t)outdeg, 2 * sizeof(int), cmp_pair);
		check(!memcmp(got, exp + 2 * ein,
			      sizeof(int) * 2 * (size_t)outdeg),
		      "out-neighbours differ", outdeg, 0);
	}
	MPI_Comm_free(&gc);
	free(src);
	free(deg);
	free(dst);
	free(w);
	free(exp);
	free(got);
	free(nb);
	free(nw);
	free(ob);
	free(ow);
}

static void graphs(void)
{
	int ne = 3 * size;
	struct edge *g = malloc(sizeof(*g) * (size_t)ne);
	int *who = malloc(sizeof(int) * (size_t)ne);

	/* the graph: r -> r-1, r, r+1, described by r */
	for (int r = 0; r < size; r++)
		for (int k = 0; k < 3; k++) {
			g[3 * r + k] =
				(struct edge){ r, (r + size - 1 + k) % size,
					       10 * r + k };
			who[3 * r + k] = r;
		}
	graph_case("ring with self loops: degree", g, ne, who, 0);
	graph_case("ring with self loops, weighted: degree", g, ne, who, 1);
	/* the same edges, each described by the next rank */
	for (int e = 0; e < ne; e++)
		who[e] = (g[e].s + 1) % size;
	graph_case("edges described by another rank: degree", g, ne, who, 1);
	/* repeated edges: every rank r -> 0 three times, described by 0 */
	for (int r = 0; r < size; r++)
		for (int k = 0; k < 3; k++) {
			g[3 * r + k] = (struct edge){ r, 0, k };
			who[3 * r + k] = 0;
		}
	graph_case("repeated edges into rank 0: degree", g, ne, who, 1);
	free(g);
	free(who);
}

int main(int argc, char **argv)
{
	int total_bad, total_checks;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	probe_rounds();
	graphs();
	MPI_Allreduce(&bad, &total_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&checks, &total_checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("topo: %d checks, %d bad\n", total_checks, total_bad);
	MPI_Finalize();
	return total_bad ? 1 : 0;
}
