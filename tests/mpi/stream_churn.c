/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream requests created, matched, used and freed over and over (a
 * ring of sends and receives, every fourth cycle an allreduce and a
 * barrier), each cycle on a new THREAD queue, ranks freeing in different
 * orders, matching collectives and pairs in rank-dependent order: no
 * false peer-death error, no deadlock, no wrong value.
 *   stream_churn CYCLES [EVERY]   a collective every EVERY cycles (4)
 * Prints "stream_churn: N cycles, M bad" on rank 0; exit 1 if any bad.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "stream-triggering.h"

int main(int argc, char **argv)
{
	int rank, size, cycles = argc > 1 ? atoi(argv[1]) : 200, bad = 0, all;
	int every = argc > 2 ? atoi(argv[2]) : 4;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int c = 0; c < cycles; c++) {
		int right = (rank + 1) % size, left = (rank + size - 1) % size;
		int sv = rank * 100000 + c, rv = -1, in = rank + c, out = -1;
		bool coll = every > 0 && c % every == every - 1;
		MPIS_Request r[4];
		MPIS_Queue q = MPIS_QUEUE_NULL;
		int n = coll ? 4 : 2, rc;

		MPIS_Send_init(&sv, 1, MPI_INT, right, c % 97, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r[0]);
		MPIS_Recv_init(&rv, 1, MPI_INT, left, c % 97, MPI_COMM_WORLD,
			       MPI_INFO_NULL, &r[1]);
		if (coll) {
			MPIS_Allreduce_init(&in, &out, 1, MPI_INT, MPI_SUM,
					    MPI_COMM_WORLD, MPI_INFO_NULL,
					    &r[2]);
			MPIS_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &r[3]);
		}
		/* with collectives, odd ranks match the pair first, even
		 * ranks the collectives first: matching is local, in any
		 * order (a blocking collective match deadlocks here) */
		if (coll && rank % 2) {
			rc = MPIS_Matchall(2, r, MPI_STATUSES_IGNORE);
			if (!rc)
				rc = MPIS_Matchall(2, r + 2,
						   MPI_STATUSES_IGNORE);
		} else if (coll) {
			rc = MPIS_Matchall(2, r + 2, MPI_STATUSES_IGNORE);
			if (!rc)
				rc = MPIS_Matchall(2, r, MPI_STATUSES_IGNORE);
		} else {
			rc = MPIS_Matchall(n, r, MPI_STATUSES_IGNORE);
		}
		if (!rc)
			rc = MPIS_Queue_init(&q, THREAD, NULL);
		if (!rc)
			rc = MPIS_Enqueue_startall(q, n, r);
		if (!rc)
			rc = MPIS_Enqueue_waitall(q);
		if (!rc)
			rc = MPIS_Queue_wait(q);
		if (rc) {
			fprintf(stderr,
				"stream_churn: rank %d cycle %d: error %d\n",
				rank, c, rc);
			bad++;
		} else if (rv != left * 100000 + c) {
			fprintf(stderr,
				"stream_churn: rank %d cycle %d: got %d\n",
				rank, c, rv);
			bad++;
		} else if (coll && out != size * (size - 1) / 2 + size * c) {
			fprintf(stderr,
				"stream_churn: rank %d cycle %d: sum %d\n",
				rank, c, out);
			bad++;
		}
		/* free in a rank-dependent order, the queue first or last */
		if (rank % 2)
			MPIS_Queue_free(&q);
		for (int i = 0; i < n; i++)
			MPIS_Request_free(&r[rank % 2 ? i : n - 1 - i]);
		if (!(rank % 2))
			MPIS_Queue_free(&q);
		if (bad > 20)
			break;
	}
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("stream_churn %d cycles, %d bad\n", cycles, all);
	MPI_Finalize();
	return all != 0;
}
