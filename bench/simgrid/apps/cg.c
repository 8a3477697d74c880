/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Conjugate gradient on the 7-point Laplacian of an n^3 grid (Dirichlet
 * boundary, right-hand side 1), split over all ranks (strong scaling).
 * Each iteration: one halo exchange for the matrix-vector product and two
 * MPI_Allreduce of one double (the dot products), so that at scale the
 * allreduce latency dominates.
 *
 *   cg [--n 64] [--iters 100]
 *
 * Runs exactly --iters iterations (no early exit, so that every run does
 * the same work) and prints RESULT cg <ranks> <seconds> <final residual
 * norm> (app.h).
 */
#include "app.h"

#include <math.h>
#include <stdio.h>

/* q = A p on the interior (p's ghosts filled by the halo exchange) */
static void matvec(const struct grid *g, const double *p, double *q)
{
	size_t sx = 1, sy = (size_t)g->nx + 2, sz = sy * ((size_t)g->ny + 2);

	APP_COMPUTE((double)g->nx * g->ny * g->nz)
	{
		for (int k = 1; k <= g->nz; k++)
			for (int j = 1; j <= g->ny; j++)
				for (int i = 1; i <= g->nx; i++) {
					size_t c = grid_index(g, i, j, k);

					q[c] = 6.0 * p[c] - p[c - sx] -
					       p[c + sx] - p[c - sy] -
					       p[c + sy] - p[c - sz] -
					       p[c + sz];
				}
	}
}

/* local dot product over the interior */
static double dot(const struct grid *g, const double *a, const double *b)
{
	double s = 0;

	APP_COMPUTE((double)g->nx * g->ny * g->nz)
	{
		for (int k = 1; k <= g->nz; k++)
			for (int j = 1; j <= g->ny; j++)
				for (int i = 1; i <= g->nx; i++) {
					size_t c = grid_index(g, i, j, k);

					s += a[c] * b[c];
				}
	}
	return s;
}

/* y += alpha x over the interior */
static void axpy(const struct grid *g, double alpha, const double *x, double *y)
{
	APP_COMPUTE((double)g->nx * g->ny * g->nz)
	{
		for (int k = 1; k <= g->nz; k++)
			for (int j = 1; j <= g->ny; j++)
				for (int i = 1; i <= g->nx; i++) {
					size_t c = grid_index(g, i, j, k);

					y[c] += alpha * x[c];
				}
	}
}

/* p = r + beta p over the interior */
static void xpay(const struct grid *g, const double *r, double beta, double *p)
{
	APP_COMPUTE((double)g->nx * g->ny * g->nz)
	{
		for (int k = 1; k <= g->nz; k++)
			for (int j = 1; j <= g->ny; j++)
				for (int i = 1; i <= g->nx; i++) {
					size_t c = grid_index(g, i, j, k);

					p[c] = r[c] + beta * p[c];
				}
	}
}

static double allsum(double local)
{
	double s = 0;

	MPI_Allreduce(&local, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return s;
}

int main(int argc, char **argv)
{
	struct grid g;
	double *x, *r, *p, *q, rr, t0;
	int n, iters;

	MPI_Init(&argc, &argv);
	n = (int)app_opt(argc, argv, "--n", 64);
	iters = (int)app_opt(argc, argv, "--iters", 100);
	grid_init(&g, n);
	x = APP_ALLOC(grid_points(&g) * sizeof(double));
	r = APP_ALLOC(grid_points(&g) * sizeof(double));
	p = APP_ALLOC(grid_points(&g) * sizeof(double));
	q = APP_ALLOC(grid_points(&g) * sizeof(double));

	/* x = 0, r = p = b = 1 on the interior; ghosts stay 0 */
	for (int k = 1; k <= g.nz; k++)
		for (int j = 1; j <= g.ny; j++)
			for (int i = 1; i <= g.nx; i++) {
				r[grid_index(&g, i, j, k)] = 1.0;
				p[grid_index(&g, i, j, k)] = 1.0;
			}
	rr = allsum(dot(&g, r, r));
	grid_halo(&g, p); /* untimed: connection setup */
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int it = 0; it < iters; it++) {
		double alpha, rr_new;

		grid_halo(&g, p);
		matvec(&g, p, q);
		alpha = rr / allsum(dot(&g, p, q));
		axpy(&g, alpha, p, x);
		axpy(&g, -alpha, q, r);
		rr_new = allsum(dot(&g, r, r));
		xpay(&g, r, rr_new / rr, p);
		rr = rr_new;
	}
	t0 = MPI_Wtime() - t0;
	app_report("cg", t0, sqrt(rr));
	APP_FREE(x);
	APP_FREE(r);
	APP_FREE(p);
	APP_FREE(q);
	grid_free(&g);
	MPI_Finalize();
	return 0;
}
