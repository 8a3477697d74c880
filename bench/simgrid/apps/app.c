/* SPDX-License-Identifier: BSD-3-Clause */
/* Allocation, options, the result line, and the 3D halo exchange of the
 * projection programs (app.h). */
#include "app.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void *app_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr,
			"projection program: cannot allocate %zu bytes: give a "
			"smaller --n or --mib, or more ranks\n",
			n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return p;
}

#if APP_SIMULATED
static int shared_malloc(void)
{
	const char *e = getenv("PROJ_SHARED_MALLOC");

	return e && !strcmp(e, "1");
}

void *app_alloc_sim(size_t n, const char *file, int line)
{
	return shared_malloc() ? smpi_shared_malloc(n, file, line)
			       : app_alloc(n);
}

/* Sampled compute blocks, by source line; shared by all simulated ranks
 * (no privatization; SMPI runs one rank at a time, in one thread). */
#define MAX_SITES 32
static struct {
	int line, runs;
	double ns_per_point;
} sites[MAX_SITES];
static int nsites, sites_loaded;

/* real time: smpicc maps clock_gettime to the simulated clock */
#undef clock_gettime
static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void sites_load(void)
{
	const char *path = getenv("PROJ_COMPUTE_LOAD");
	FILE *f;
	int line;
	double ns;

	sites_loaded = 1;
	if (!path || !*path)
		return;
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr,
			"projection program: cannot read PROJ_COMPUTE_LOAD=%s: "
			"run once with PROJ_COMPUTE_SAVE=%s first\n",
			path, path);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	while (nsites < MAX_SITES && fscanf(f, "%d %lf", &line, &ns) == 2) {
		sites[nsites].line = line;
		sites[nsites].runs = APP_SAMPLES + 1;
		sites[nsites++].ns_per_point = ns;
	}
	fclose(f);
}

static void sites_save(void)
{
	const char *path = getenv("PROJ_COMPUTE_SAVE");
	FILE *f;

	if (!path || !*path)
		return;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr,
			"projection program: cannot write PROJ_COMPUTE_SAVE=%s: "
			"give a writable path\n",
			path);
		return;
	}
	for (int i = 0; i < nsites; i++)
		fprintf(f, "%d %.6g\n", sites[i].line, sites[i].ns_per_point);
	fclose(f);
}

struct app_block app_block_begin(int line, double points)
{
	struct app_block b = { 1, -1, points, 0 };

	if (!sites_loaded)
		sites_load();
	for (int i = 0; i < nsites; i++)
		if (sites[i].line == line)
			b.site = i;
	if (b.site < 0 && nsites < MAX_SITES) {
		b.site = nsites++;
		sites[b.site].line = line;
	}
	if (b.site >= 0 && sites[b.site].runs > APP_SAMPLES) {
		smpi_execute(points * sites[b.site].ns_per_point * 1e-9);
		b.run = 0;
		return b;
	}
	b.t0 = now_ns();
	return b;
}

void app_block_end(struct app_block *b)
{
	double ns = now_ns() - b->t0;

	b->run = 0;
	if (b->site >= 0 && b->points > 0) {
		/* the first run is a warm-up (page faults of fresh memory):
		 * runs counts it; the others keep their fastest time per
		 * point, the one least disturbed by other processes */
		int n = sites[b->site].runs++;
		double per = ns / b->points;

		if (n == 1 || (n > 1 && per < sites[b->site].ns_per_point))
			sites[b->site].ns_per_point = per;
	}
	smpi_execute(ns * 1e-9);
}

void app_free_sim(void *p)
{
	if (shared_malloc())
		smpi_shared_free(p);
	else
		free(p);
}
#endif

long app_opt(int argc, char **argv, const char *name, long def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return strtol(argv[i + 1], NULL, 0);
	return def;
}

void app_report(const char *program, double seconds, double check)
{
	double slowest = 0;
	int rank, size;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
		   MPI_COMM_WORLD);
#if APP_SIMULATED
	if (rank == 0)
		sites_save();
#endif
	if (rank == 0) {
		printf("RESULT %s %d %.9f %.9e\n", program, size, slowest,
		       check);
		fflush(stdout);
	}
}

/* Points of block c of n split into p blocks (the first n % p get one
 * more). */
static int block_len(int n, int p, int c)
{
	return n / p + (c < n % p);
}

/* Rank of the block at coords c on a dims[0] x dims[1] x dims[2] grid of
 * blocks, row-major as MPI_Cart_create orders them; MPI_PROC_NULL
 * outside. (No MPI_Cart_create: SMPI 3.32 takes seconds of simulated
 * time and of real time for it at a few hundred ranks.) */
static int block_rank(const int dims[3], const int c[3])
{
	for (int d = 0; d < 3; d++)
		if (c[d] < 0 || c[d] >= dims[d])
			return MPI_PROC_NULL;
	return (c[0] * dims[1] + c[1]) * dims[2] + c[2];
}

void grid_init(struct grid *g, int n)
{
	int size, rank, dims[3] = { 0, 0, 0 }, coords[3];

	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Dims_create(size, 3, dims);
	g->cart = MPI_COMM_WORLD;
	coords[0] = rank / (dims[1] * dims[2]);
	coords[1] = rank / dims[2] % dims[1];
	coords[2] = rank % dims[2];
	g->nx = block_len(n, dims[0], coords[0]);
	g->ny = block_len(n, dims[1], coords[1]);
	g->nz = block_len(n, dims[2], coords[2]);
	if (g->nx < 1 || g->ny < 1 || g->nz < 1) {
		fprintf(stderr,
			"projection program: grid %d^3 is too small for %d "
			"ranks (%dx%dx%d): give a larger --n\n",
			n, size, dims[0], dims[1], dims[2]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (int d = 0; d < 3; d++)
		for (int side = 0; side < 2; side++) {
			int c[3] = { coords[0], coords[1], coords[2] };

			c[d] += side ? 1 : -1;
			g->nbr[2 * d + side] = block_rank(dims, c);
		}
	for (int f = 0; f < 6; f++) {
		size_t face = f < 2   ? (size_t)g->ny * (size_t)g->nz
			      : f < 4 ? (size_t)g->nx * (size_t)g->nz
				      : (size_t)g->nx * (size_t)g->ny;

		g->sbuf[f] = app_alloc(face * sizeof(double));
		g->rbuf[f] = app_alloc(face * sizeof(double));
	}
}

void grid_free(struct grid *g)
{
	for (int f = 0; f < 6; f++) {
		free(g->sbuf[f]);
		free(g->rbuf[f]);
	}
}

/* Copy face f of the interior (ghost = 0) or of the ghost layer
 * (ghost = 1) to or from buf. */
static void face_copy(const struct grid *g, double *u, int f, double *buf,
		      int ghost, int to_buf)
{
	int hi = f & 1;
	size_t m = 0;

	if (f < 2) {
		int i = hi ? (ghost ? g->nx + 1 : g->nx) : (ghost ? 0 : 1);

		for (int k = 1; k <= g->nz; k++)
			for (int j = 1; j <= g->ny; j++, m++) {
				double *p = &u[grid_index(g, i, j, k)];

				if (to_buf)
					buf[m] = *p;
				else
					*p = buf[m];
			}
	} else if (f < 4) {
		int j = hi ? (ghost ? g->ny + 1 : g->ny) : (ghost ? 0 : 1);

		for (int k = 1; k <= g->nz; k++)
			for (int i = 1; i <= g->nx; i++, m++) {
				double *p = &u[grid_index(g, i, j, k)];

				if (to_buf)
					buf[m] = *p;
				else
					*p = buf[m];
			}
	} else {
		int k = hi ? (ghost ? g->nz + 1 : g->nz) : (ghost ? 0 : 1);

		for (int j = 1; j <= g->ny; j++)
			for (int i = 1; i <= g->nx; i++, m++) {
				double *p = &u[grid_index(g, i, j, k)];

				if (to_buf)
					buf[m] = *p;
				else
					*p = buf[m];
			}
	}
}

void grid_halo(struct grid *g, double *u)
{
	MPI_Request rq[12];
	int n = 0;

	for (int f = 0; f < 6; f++) {
		int len = f < 2	  ? g->ny * g->nz
			  : f < 4 ? g->nx * g->nz
				  : g->nx * g->ny;

		if (g->nbr[f] == MPI_PROC_NULL)
			continue;
		/* the neighbour's face f ^ 1 arrives in our ghost face f */
		MPI_Irecv(g->rbuf[f], len, MPI_DOUBLE, g->nbr[f], f ^ 1,
			  g->cart, &rq[n++]);
		face_copy(g, u, f, g->sbuf[f], 0, 1);
		MPI_Isend(g->sbuf[f], len, MPI_DOUBLE, g->nbr[f], f, g->cart,
			  &rq[n++]);
	}
	MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
	for (int f = 0; f < 6; f++)
		if (g->nbr[f] != MPI_PROC_NULL)
			face_copy(g, u, f, g->rbuf[f], 1, 0);
}
