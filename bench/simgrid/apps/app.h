/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the projection programs share: allocation and compute sampling that
 * build both with MPICH's mpicc (a real run) and with SimGrid's smpicc (a
 * simulated run), the 3D domain decomposition with its halo exchange, and
 * the result line.
 *
 * Under SMPI (smpi.h defines SMPI_SHARED_MALLOC) compute blocks are
 * sampled (APP_COMPUTE): their first runs are executed, the rest are
 * charged at the measured mean, so that many ranks fit in one process.
 * With PROJ_SHARED_MALLOC=1 in the environment the big arrays are also
 * shared by all simulated ranks (SMPI_SHARED_MALLOC), for problems larger
 * than the memory; sampled blocks then run on aliased, cache-hot memory and
 * measure less compute than a real run would, so it is off by default.
 * The numbers a simulated run computes are garbage; only the real (mpicc)
 * build checks them. The only mutable global state is the table of
 * sampled blocks, meant to be shared by all simulated ranks (SMPI runs
 * without privatization, -no-privatize, one rank at a time).
 */
#ifndef PROJ_APP_H
#define PROJ_APP_H

#include <mpi.h>
#include <stddef.h>

#ifdef SMPI_SHARED_MALLOC
#define APP_SIMULATED 1
#define APP_ALLOC(n) app_alloc_sim((n), __FILE__, __LINE__)
#define APP_FREE(p) app_free_sim(p)
/* A compute block over `points` grid points. Simulated, it is timed for
 * its first 1 + APP_SAMPLES runs at this source line (over all ranks) and
 * charged (smpi_execute) at the fastest time per point of all but the
 * first (a warm-up) afterwards, without running: the fastest is the one
 * least disturbed by other processes on this shared machine.
 * PROJ_COMPUTE_SAVE=file writes the means at the end (rank 0),
 * PROJ_COMPUTE_LOAD=file charges those means from the start, so that runs on
 * different platforms charge the same compute. SMPI must run with
 * smpi/simulate-computation:no: these blocks are the compute it sees. */
#define APP_COMPUTE(points)                                             \
	for (struct app_block b_ = app_block_begin(__LINE__, (points)); \
	     b_.run; app_block_end(&b_))
#define APP_SAMPLES 8
struct app_block {
	int run;
	int site;
	double points;
	double t0;
};
struct app_block app_block_begin(int line, double points);
void app_block_end(struct app_block *b);
#else
#define APP_SIMULATED 0
#define APP_ALLOC(n) app_alloc(n)
#define APP_FREE(p) free(p)
#define APP_COMPUTE(points) for (int once_ = 0; once_ < 1; once_++)
#endif

#include <stdlib.h>

/* calloc that ends the job with a message naming the size */
void *app_alloc(size_t n);
#if APP_SIMULATED
/* app_alloc, or SMPI_SHARED_MALLOC keyed by file:line if
 * PROJ_SHARED_MALLOC=1 */
void *app_alloc_sim(size_t n, const char *file, int line);
void app_free_sim(void *p);
#endif

/* "--name value" integer option of argv, or def */
long app_opt(int argc, char **argv, const char *name, long def);

/* Rank 0 prints "RESULT <program> <ranks> <seconds> <check>", seconds
 * being the slowest rank's time of the timed phase. */
void app_report(const char *program, double seconds, double check);

/* A block of an n^3 grid split over the ranks of MPI_COMM_WORLD in 3D,
 * with one ghost layer; u[(k * (ny + 2) + j) * (nx + 2) + i], interior
 * 1..n*. */
struct grid {
	MPI_Comm cart;	/* MPI_COMM_WORLD */
	int nx, ny, nz; /* interior points of this rank */
	int nbr[6];	/* -x +x -y +y -z +z (MPI_PROC_NULL at edges) */
	double *sbuf[6], *rbuf[6];
};

static inline size_t grid_index(const struct grid *g, int i, int j, int k)
{
	return ((size_t)k * (size_t)(g->ny + 2) + (size_t)j) *
		       (size_t)(g->nx + 2) +
	       (size_t)i;
}

static inline size_t grid_points(const struct grid *g)
{
	return (size_t)(g->nx + 2) * (size_t)(g->ny + 2) * (size_t)(g->nz + 2);
}

/* Split an n^3 grid over the ranks of MPI_COMM_WORLD. */
void grid_init(struct grid *g, int n);
void grid_free(struct grid *g);

/* Exchange the six faces of u with the neighbours (Isend/Irecv). */
void grid_halo(struct grid *g, double *u);

#endif
