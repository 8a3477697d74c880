/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 3D halo exchange: Jacobi sweeps of the 7-point Laplacian on an n^3 grid
 * split over all ranks (strong scaling); each sweep exchanges six faces
 * with the neighbours, then updates the block.
 *
 *   halo3d [--n 128] [--iters 50]
 *
 * Prints RESULT halo3d <ranks> <seconds> <sum of u> (app.h).
 */
#include "app.h"

#include <stdio.h>

static void sweep(const struct grid *g, const double *u, double *v)
{
	size_t sx = 1, sy = (size_t)g->nx + 2, sz = sy * ((size_t)g->ny + 2);

	APP_COMPUTE((double)g->nx * g->ny * g->nz)
	{
		for (int k = 1; k <= g->nz; k++)
			for (int j = 1; j <= g->ny; j++)
				for (int i = 1; i <= g->nx; i++) {
					size_t c = grid_index(g, i, j, k);

					v[c] = (u[c - sx] + u[c + sx] +
						u[c - sy] + u[c + sy] +
						u[c - sz] + u[c + sz] + 1.0) /
					       6.0;
				}
	}
}

int main(int argc, char **argv)
{
	struct grid g;
	double *u, *v, t0, sum = 0, total = 0;
	int n, iters;

	MPI_Init(&argc, &argv);
	n = (int)app_opt(argc, argv, "--n", 128);
	iters = (int)app_opt(argc, argv, "--iters", 50);
	grid_init(&g, n);
	u = APP_ALLOC(grid_points(&g) * sizeof(double));
	v = APP_ALLOC(grid_points(&g) * sizeof(double));

	/* one untimed sweep: first-touch and connection setup */
	grid_halo(&g, u);
	sweep(&g, u, v);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int it = 0; it < iters; it++) {
		double *t;

		grid_halo(&g, u);
		sweep(&g, u, v);
		t = u;
		u = v;
		v = t;
	}
	t0 = MPI_Wtime() - t0;

	if (!APP_SIMULATED)
		for (int k = 1; k <= g.nz; k++)
			for (int j = 1; j <= g.ny; j++)
				for (int i = 1; i <= g.nx; i++)
					sum += u[grid_index(&g, i, j, k)];
	MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	app_report("halo3d", t0, total);
	APP_FREE(u);
	APP_FREE(v);
	grid_free(&g);
	MPI_Finalize();
	return 0;
}
