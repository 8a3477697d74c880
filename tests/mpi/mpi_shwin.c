/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared windows across hosts (libcxlmpi): MPI_Win_allocate_shared over
 * MPI_COMM_WORLD, whose ranks are on different emulated hosts, then load
 * and store through MPI_Win_shared_query pointers with MPI_Win_sync, in a
 * producer/consumer pattern; MPI_Win_allocate with puts and gets. Every
 * value is checked. Prints "shwin: N checks, M bad" at rank 0.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#define N 1024

static int rank, size, bad, checks;

static void check(int ok, const char *what)
{
	checks++;
	if (!ok) {
		bad++;
		fprintf(stderr, "rank %d: %s\n", rank, what);
	}
}

int main(int argc, char **argv)
{
	int64_t *mine, *seg;
	MPI_Win win, awin;
	MPI_Aint sz;
	int du, all_bad, right;
	char host[MPI_MAX_PROCESSOR_NAME];
	int len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("rank %d of %d on %s\n", rank, size, host);
	right = (rank + 1) % size;

	MPI_Win_allocate_shared(N * sizeof(int64_t), sizeof(int64_t),
				MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win);
	MPI_Win_shared_query(win, right, &sz, &du, &seg);
	check(sz == N * (MPI_Aint)sizeof(int64_t) && du == sizeof(int64_t),
	      "shared_query size and disp_unit");
	{ /* contiguous in rank order */
		int64_t *s0;

		MPI_Win_shared_query(win, 0, &sz, &du, &s0);
		check(mine == s0 + (size_t)rank * N, "segments in rank order");
	}
	MPI_Win_lock_all(0, win);
	for (int i = 0; i < N; i++)
		mine[i] = rank * 100000 + i;
	MPI_Win_sync(win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_sync(win);
	{
		int ok = 1;

		for (int i = 0; i < N; i++)
			ok &= seg[i] == right * 100000 + i;
		check(ok, "loads of the right neighbour's segment");
	}
	/* producer/consumer: rank 0 writes data, then a flag; rank 1 polls */
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		for (int i = 1; i < N; i++)
			mine[i] = 7 * i;
		MPI_Win_sync(win);
		mine[0] = 1; /* the flag, after the data */
		MPI_Win_sync(win);
	} else if (rank == 1) {
		int64_t *s0;
		long polls = 0;

		MPI_Win_shared_query(win, 0, &sz, &du, &s0);
		do {
			MPI_Win_sync(win);
		} while (s0[0] != 1 && ++polls < 100000000);
		check(s0[0] == 1, "the producer's flag arrived");
		int ok = 1;

		for (int i = 1; i < N; i++)
			ok &= s0[i] == 7 * i;
		check(ok, "the producer's data, after its flag");
	}
	/* MPI_Barrier alone orders stores and loads of pool windows too */
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < N; i++)
		mine[i] = rank * 300000 + i;
	MPI_Barrier(MPI_COMM_WORLD);
	{
		int ok = 1;

		for (int i = 0; i < N; i++)
			ok &= seg[i] == right * 300000 + i;
		check(ok, "loads after MPI_Barrier alone");
	}
	MPI_Win_unlock_all(win);
	MPI_Win_free(&win);

	/* MPI_Win_allocate: puts and gets under fence */
	MPI_Win_allocate(N * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
			 MPI_COMM_WORLD, &mine, &awin);
	for (int i = 0; i < N; i++)
		mine[i] = -1;
	MPI_Win_fence(0, awin);
	{
		int64_t v[N];

		for (int i = 0; i < N; i++)
			v[i] = rank * 1000 + i;
		MPI_Put(v, N, MPI_INT64_T, right, 0, N, MPI_INT64_T, awin);
	}
	MPI_Win_fence(0, awin);
	{
		int ok = 1, left = (rank + size - 1) % size;

		for (int i = 0; i < N; i++)
			ok &= mine[i] == left * 1000 + i;
		check(ok, "MPI_Win_allocate put under fence");
	}
	MPI_Win_free(&awin);

	MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("shwin: %d checks, %d bad\n", checks, all_bad);
	MPI_Finalize();
	return all_bad != 0;
}
