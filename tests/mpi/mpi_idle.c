/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Idle waiting: rank 1 sleeps for a while before sending; rank 0 waits in
 * MPI_Recv and reports the CPU time it spent waiting against the wall
 * time. With the provider's dynamic polling an idle rank should not burn
 * a whole core.   mpi_idle [seconds [max_cpu_fraction]]
 * With max_cpu_fraction the run fails if rank 0 used more CPU than that
 * fraction of the wait.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0, w0, c0, w, c;
	double max_cpu = argc > 2 ? atof(argv[2]) : 0;
	int rank, v = 0, bad = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		usleep((useconds_t)(secs * 1e6));
		v = 42;
		MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
	} else if (rank == 0) {
		w0 = MPI_Wtime();
		c0 = cpu_s();
		MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		w = MPI_Wtime() - w0;
		c = cpu_s() - c0;
		printf("idle: waited %.2f s wall, %.2f s cpu (%.0f%% of a "
		       "core), value %d\n",
		       w, c, 100 * c / w, v);
		bad = v != 42 || (max_cpu > 0 && c > max_cpu * w);
		printf("mpi_idle: %d passed, %d failed\n", !bad, bad);
	}
	MPI_Finalize();
	return bad;
}
