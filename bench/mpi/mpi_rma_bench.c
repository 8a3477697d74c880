/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_rma_bench: one-sided latency and bandwidth, OSU style, on a window
 * created over MPI_Alloc_mem memory (in the pool when libcxlmpi is
 * loaded). Ranks 0..n/2-1 are origins, each targeting rank + n/2 (n
 * origins, n targets); the targets wait in a barrier.
 *
 *   mpi_rma_bench put_lat|get_lat|put_bw|get_bw [--max BYTES] [--iters N]
 *
 * put_lat/get_lat: MPI_Put or MPI_Get of one message then MPI_Win_flush,
 * averaged (us); put_bw/get_bw: windows of 64 operations then one flush
 * (MB/s, summed over the origins). All inside one MPI_Win_lock_all epoch.
 * Prints "RESULT <test> <size> <value> <unit>" at rank 0, as mpi_bench.
 *
 * Also, at rank 0:
 *  - "COH <test> <size> <flushed lines> <invalidated lines> <fences>
 *    <streamed lines>" per
 *    operation at an origin, from the process's libcxlshm coherence
 *    counters when libcxlshm is loaded (the provider or libcxlmpi);
 *  - with get_bw, "RESULT memcpy <size> <MB/s>": the same copies (64 of
 *    size bytes, from a 64 x size buffer) done locally with memcpy, the
 *    yardstick for a get.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

/* libcxlshm's struct cxl_coh_counters, first fields (coherence.h) */
struct coh {
	uint64_t flush_lines, inval_lines, fences, nt_stores, nt_loads;
	uint64_t nt_lines, rest[8];
};
static void (*coh_get)(struct coh *);

static void coh_now(struct coh *c)
{
	memset(c, 0, sizeof(*c));
	if (coh_get)
		coh_get(c);
}

/* MB/s of 64 local memcpy of sz bytes each, as a get_bw window does */
static double memcpy_mbs(uint8_t *dst, const uint8_t *src, size_t sz, int n)
{
	double t0 = MPI_Wtime(), t;

	for (int i = 0; i < n; i++) {
		for (int k = 0; k < WINDOW; k++)
			memcpy(dst + k * sz, src + k * sz, sz);
		/* keep the copies from being optimised away */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	t = MPI_Wtime() - t0;
	return t > 0 ? sz * WINDOW * (double)n / t / 1e6 : 0;
}

int main(int argc, char **argv)
{
	size_t max = 1u << 20;
	int rank, size, iters = 1000, lat, put;
	const char *test;
	uint8_t *win_mem, *buf;
	MPI_Win win;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 2 || size < 2 || size % 2) {
		if (!rank)
			fprintf(stderr,
				"usage: mpi_rma_bench put_lat|get_lat|"
				"put_bw|get_bw [--max BYTES] [--iters N] "
				"(an even number of ranks)\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	test = argv[1];
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--max") && i + 1 < argc)
			max = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
	}
	{
		/* libcxlshm as libcxlmpi or the provider loaded it */
		void *h = dlopen("libcxlshm.so.0", RTLD_LAZY | RTLD_NOLOAD);

		coh_get = (void (*)(struct coh *))dlsym(h ? h : RTLD_DEFAULT,
							"cxl_coh_counters_get");
	}
	lat = strstr(test, "_lat") != NULL;
	put = !strncmp(test, "put", 3);
	{
		char host[MPI_MAX_PROCESSOR_NAME];
		int len;

		MPI_Get_processor_name(host, &len);
		printf("HOST %d %d %s\n", rank, size, host);
		fflush(stdout);
	}
	MPI_Alloc_mem((MPI_Aint)max * WINDOW, MPI_INFO_NULL, &win_mem);
	MPI_Alloc_mem((MPI_Aint)max * WINDOW, MPI_INFO_NULL, &buf);
	memset(buf, 1, max * WINDOW);
	memset(win_mem, 2, max * WINDOW);
	MPI_Win_create(win_mem, (MPI_Aint)max * WINDOW, 1, MPI_INFO_NULL,
		       MPI_COMM_WORLD, &win);
	MPI_Win_lock_all(0, win);
	for (size_t sz = 1; sz <= max; sz *= 2) {
		int n = sz > 65536 ? iters / 10 + 1 : iters;
		int peer = (rank + size / 2) % size, ops = lat ? 1 : WINDOW;
		double t0 = 0, t, sum, coh[4] = { 0 }, cohsum[4];
		struct coh c0, c1;

		MPI_Barrier(MPI_COMM_WORLD);
		if (rank < size / 2) {
			for (int i = -10; i < n; i++) {
				if (i == 0) {
					coh_now(&c0);
					t0 = MPI_Wtime();
				}
				for (int k = 0; k < ops; k++) {
					if (put)
						MPI_Put(buf + k * sz, (int)sz,
							MPI_BYTE, peer, k * sz,
							(int)sz, MPI_BYTE, win);
					else
						MPI_Get(buf + k * sz, (int)sz,
							MPI_BYTE, peer, k * sz,
							(int)sz, MPI_BYTE, win);
				}
				MPI_Win_flush(peer, win);
			}
			t = MPI_Wtime() - t0;
			coh_now(&c1);
			coh[0] = (double)(c1.flush_lines - c0.flush_lines);
			coh[1] = (double)(c1.inval_lines - c0.inval_lines);
			coh[2] = (double)(c1.fences - c0.fences);
			coh[3] = (double)(c1.nt_lines - c0.nt_lines);
			for (int k = 0; k < 4; k++)
				coh[k] /= (double)n * ops;
		} else {
			t = 0;
		}
		MPI_Barrier(MPI_COMM_WORLD);
		/* latency: the origins' mean; bandwidth: their sum */
		t = lat ? t / n * 1e6
			: (t > 0 ? sz * ops * (double)n / t / 1e6 : 0);
		MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		MPI_Reduce(coh, cohsum, 4, MPI_DOUBLE, MPI_SUM, 0,
			   MPI_COMM_WORLD);
		if (!rank) {
			printf("RESULT %s %zu %.3f %s\n", test, sz,
			       lat ? sum / (size / 2) : sum,
			       lat ? "us" : "MB/s");
			if (coh_get)
				printf("COH %s %zu %.2f %.2f %.2f %.2f\n", test,
				       sz, cohsum[0] / (size / 2),
				       cohsum[1] / (size / 2),
				       cohsum[2] / (size / 2),
				       cohsum[3] / (size / 2));
			if (!lat && !put) {
				uint8_t *a = malloc(sz * WINDOW);
				uint8_t *b = malloc(sz * WINDOW);

				if (a && b) {
					memset(a, 3, sz * WINDOW);
					memset(b, 4, sz * WINDOW);
					memcpy_mbs(b, a, sz, 2);
					printf("RESULT memcpy %zu %.3f MB/s\n",
					       sz, memcpy_mbs(b, a, sz, n));
				}
				free(a);
				free(b);
			}
		}
		fflush(stdout);
	}
	MPI_Win_unlock_all(win);
	MPI_Win_free(&win);
	MPI_Free_mem(buf);
	MPI_Free_mem(win_mem);
	MPI_Finalize();
	return 0;
}
