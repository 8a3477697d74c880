/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI memory from MPI_Alloc_mem (in the pool when libcxlmpi is loaded):
 * a window created over it with puts, gets and local stores under fence
 * and passive-target locks, an accumulate counter, and large sends from
 * such memory (pointer passing). Every value is checked. Prints
 * "poolmem: N checks, M bad" at rank 0 and exits 1 if any is bad.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define WIN (1u << 20)
#define BIG (256u << 10)

static int rank, size, bad, checks;

static void check(int ok, const char *what)
{
	checks++;
	if (!ok) {
		bad++;
		fprintf(stderr, "rank %d: %s\n", rank, what);
	}
}

static uint8_t pat(int who, size_t i)
{
	return (uint8_t)(who * 37 + i * 11 + (i >> 9));
}

int main(int argc, char **argv)
{
	uint8_t *mem, *buf, *rbuf;
	int64_t *counter;
	MPI_Win win, cwin;
	int right, left, all_bad;
	char host[MPI_MAX_PROCESSOR_NAME];
	int len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("rank %d of %d on %s\n", rank, size, host);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;

	MPI_Alloc_mem(WIN, MPI_INFO_NULL, &mem);
	MPI_Alloc_mem(BIG, MPI_INFO_NULL, &buf);
	MPI_Alloc_mem(BIG, MPI_INFO_NULL, &rbuf);
	/* local stores before the window exists and between epochs */
	for (size_t i = 0; i < WIN; i++)
		mem[i] = pat(rank, i);
	MPI_Win_create(mem, WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

	/* fence: get the right neighbour's own bytes, put into its upper half
	 */
	MPI_Win_fence(0, win);
	MPI_Get(rbuf, BIG, MPI_BYTE, right, 4096, BIG, MPI_BYTE, win);
	for (size_t i = 0; i < BIG; i++)
		buf[i] = pat(100 + rank, i);
	MPI_Put(buf, BIG, MPI_BYTE, right, WIN / 2, BIG, MPI_BYTE, win);
	MPI_Put(&rank, sizeof(int), MPI_BYTE, right, WIN - 64, sizeof(int),
		MPI_BYTE, win);
	MPI_Win_fence(0, win);
	{
		int ok = 1, who;

		for (size_t i = 0; i < BIG; i++)
			ok &= rbuf[i] == pat(right, 4096 + i);
		check(ok, "fence get of the neighbour's bytes");
		ok = 1;
		for (size_t i = 0; i < BIG; i++)
			ok &= mem[WIN / 2 + i] == pat(100 + left, i);
		check(ok, "fence put from the left neighbour");
		memcpy(&who, mem + WIN - 64, sizeof(who));
		check(who == left, "fence put of 4 bytes");
		ok = 1; /* what nobody put is still ours */
		for (size_t i = 0; i < WIN / 2; i++)
			ok &= mem[i] == pat(rank, i);
		check(ok, "untouched window bytes");
	}

	/* local stores in a new epoch, read by the neighbour */
	for (size_t i = 0; i < 4096; i++)
		mem[i] = pat(200 + rank, i);
	MPI_Win_fence(0, win);
	MPI_Get(rbuf, 4096, MPI_BYTE, right, 0, 4096, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	{
		int ok = 1;

		for (size_t i = 0; i < 4096; i++)
			ok &= rbuf[i] == pat(200 + right, i);
		check(ok, "get of the neighbour's stores of the last epoch");
	}

	/* passive target: lock, put, unlock; then the target reads it */
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
	MPI_Put(buf, 8192, MPI_BYTE, right, 65536, 8192, MPI_BYTE, win);
	MPI_Win_unlock(right, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
	{
		int ok = 1;

		for (size_t i = 0; i < 8192; i++)
			ok &= mem[65536 + i] == pat(100 + left, i);
		check(ok, "lock/unlock put from the left neighbour");
	}
	MPI_Win_unlock(rank, win);
	MPI_Win_free(&win);

	/* an accumulate counter under an exclusive lock */
	MPI_Alloc_mem(sizeof(int64_t), MPI_INFO_NULL, &counter);
	*counter = 0;
	MPI_Win_create(counter, sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
		       MPI_COMM_WORLD, &cwin);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int k = 0; k < 10; k++) {
		int64_t one = 1;

		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, cwin);
		MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T,
			       MPI_SUM, cwin);
		MPI_Win_unlock(0, cwin);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, cwin);
		check(*counter == 10 * size, "accumulate counter");
		MPI_Win_unlock(0, cwin);
	}
	MPI_Win_free(&cwin);
	MPI_Free_mem(counter);

	/* large sends from MPI_Alloc_mem memory */
	for (size_t i = 0; i < BIG; i++)
		buf[i] = pat(300 + rank, i);
	memset(rbuf, 0, BIG);
	MPI_Sendrecv(buf, BIG, MPI_BYTE, right, 7, rbuf, BIG, MPI_BYTE, left, 7,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	{
		int ok = 1;

		for (size_t i = 0; i < BIG; i++)
			ok &= rbuf[i] == pat(300 + left, i);
		check(ok, "send from MPI_Alloc_mem memory");
	}

	MPI_Free_mem(buf);
	MPI_Free_mem(rbuf);
	MPI_Free_mem(mem);
	MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("poolmem: %d checks, %d bad\n", checks * size, all_bad);
	MPI_Finalize();
	return all_bad != 0;
}
