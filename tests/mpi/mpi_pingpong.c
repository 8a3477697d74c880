/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI ping-pong with data verification for every size from 0 B to 16 MiB
 * (powers of two and odd sizes around them). Rank 0 and rank 1 exchange;
 * other ranks idle. Prints each rank's processor name first.
 *
 *   mpi_pingpong [max_bytes]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME];
	size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 16u << 20;
	int rank, size, len, bad = 0, tested = 0;
	unsigned char *sb, *rb;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("rank %d of %d on %s\n", rank, size, host);
	fflush(stdout);
	sb = malloc(max + 1);
	rb = malloc(max + 1);
	if (!sb || !rb)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Barrier(MPI_COMM_WORLD);
	for (size_t n = 0; n <= max; n = n < 2 ? n + 1 : n * 2) {
		size_t cand[3] = { n, n + 1, n > 3 ? n - 3 : n };

		for (int c = 0; c < 3; c++) {
			size_t m = cand[c] > max ? max : cand[c];

			if (rank == 0) {
				fill(sb, m, (unsigned)m);
				MPI_Send(sb, (int)m, MPI_BYTE, 1, 7,
					 MPI_COMM_WORLD);
				MPI_Recv(rb, (int)m, MPI_BYTE, 1, 8,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				fill(sb, m, (unsigned)m + 1);
				bad += memcmp(sb, rb, m) != 0;
				tested++;
			} else if (rank == 1) {
				MPI_Recv(rb, (int)m, MPI_BYTE, 0, 7,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				fill(sb, m, (unsigned)m);
				bad += memcmp(sb, rb, m) != 0;
				fill(sb, m, (unsigned)m + 1);
				MPI_Send(sb, (int)m, MPI_BYTE, 0, 8,
					 MPI_COMM_WORLD);
				tested++;
			}
		}
	}
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("pingpong: %d sizes up to %zu bytes, %d bad\n", tested,
		       max, bad);
	free(sb);
	free(rb);
	MPI_Finalize();
	return bad != 0;
}
