/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All-to-all: the transposes of a distributed FFT. A matrix of --mib MiB
 * in total is split over all ranks (strong scaling); each iteration does
 * one pass over the local part (a stand-in for the 1D FFTs), then one
 * MPI_Alltoall that sends every rank its block of --mib / ranks^2.
 *
 *   alltoall [--mib 64] [--iters 20]
 *
 * Prints RESULT alltoall <ranks> <seconds> <checksum> (app.h).
 */
#include "app.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	double *a, *b, t0, sum = 0, total = 0;
	size_t local, block;
	int size, rank, iters;
	long mib;

	MPI_Init(&argc, &argv);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	mib = app_opt(argc, argv, "--mib", 64);
	iters = (int)app_opt(argc, argv, "--iters", 20);
	/* doubles per destination block; at least one */
	block = ((size_t)mib << 20) / sizeof(double) / (size_t)size /
		(size_t)size;
	if (block < 1)
		block = 1;
	local = block * (size_t)size;
	a = APP_ALLOC(local * sizeof(double));
	b = APP_ALLOC(local * sizeof(double));
	for (size_t i = 0; i < local; i++)
		a[i] = (double)rank + (double)i / (double)local;

	MPI_Alltoall(a, (int)block, MPI_DOUBLE, b, (int)block, MPI_DOUBLE,
		     MPI_COMM_WORLD); /* untimed: connection setup */
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int it = 0; it < iters; it++) {
		/* local pass, by destination block */
		APP_COMPUTE((double)local)
		{
			for (size_t i = 0; i < local; i++)
				a[i] = a[i] * 0.5 + 0.25;
		}
		MPI_Alltoall(a, (int)block, MPI_DOUBLE, b, (int)block,
			     MPI_DOUBLE, MPI_COMM_WORLD);
		{
			double *t = a;

			a = b;
			b = t;
		}
	}
	t0 = MPI_Wtime() - t0;
	if (!APP_SIMULATED)
		for (size_t i = 0; i < local; i++)
			sum += a[i];
	MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	app_report("alltoall", t0, total);
	APP_FREE(a);
	APP_FREE(b);
	MPI_Finalize();
	return 0;
}
