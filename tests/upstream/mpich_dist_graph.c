/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A reproducer for MPICH maintainers, needing nothing but MPICH: the
 * general MPI_Dist_graph_create gives a wrong graph when a rank's own
 * edge list competes with a peer's (MPICH matches MPI_Probe and
 * MPI_Recv with MPI_ANY_SOURCE against different messages; see
 * docs/cxlmpi.md, "Distributed graphs", in cxlmpi).
 *
 *   mpicc mpich_dist_graph.c -o repro
 *   FI_PROVIDER=shm MPIR_CVAR_CH4_NETMOD=ofi MPIR_CVAR_NOLOCAL=1 \
 *       mpiexec -n 2 ./repro        # repeat: fails in some runs
 *
 * Each rank describes the edges rank -> rank-1, rank, rank+1 (a ring
 * with self loops), so each rank must have indegree and outdegree 3.
 * Prints "repro: OK" or the wrong degrees; exit status 1 if wrong.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, bad = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int round = 0; round < 50 && !bad; round++) {
		int src[1] = { rank }, deg[1] = { 3 }, indeg, outdeg, w;
		int dst[3] = { (rank + size - 1) % size, rank,
			       (rank + 1) % size };
		MPI_Comm g;

		MPI_Dist_graph_create(MPI_COMM_WORLD, 1, src, deg, dst,
				      MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
		MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &w);
		if (indeg != 3 || outdeg != 3) {
			printf("repro: rank %d round %d: indegree %d, "
			       "outdegree %d; expected 3 and 3\n",
			       rank, round, indeg, outdeg);
			bad = 1;
		}
		MPI_Comm_free(&g);
	}
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0)
		printf("repro: %s\n", bad ? "WRONG GRAPH" : "OK");
	MPI_Finalize();
	return bad;
}
