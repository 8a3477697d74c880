/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Coherence operations of a timed loop, for benchmarks that run over the
 * cxl provider. The provider loads libcxlshm into the process; its
 * per-process counters are read through dlopen(RTLD_NOLOAD), so the
 * benchmark links nothing of ours and runs unchanged over tcp or shm
 * (where the probe finds no library and reports nothing).
 *
 * Polls (cxl_coh_count_poll: progress calls that found nothing) are
 * reported apart: their count depends on how long a rank waited.
 */
#ifndef CXL_BENCH_COH_PROBE_H
#define CXL_BENCH_COH_PROBE_H

#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

/*
 * libcxlshm's struct cxl_coh_counters (coherence.h): 11 uint64_t, in the
 * order flush_lines, inval_lines, fences, nt_stores, nt_loads, nt_lines,
 * polls, poll_inval_lines, poll_fences, poll_nt_loads, cost_ns.
 */
#define COH_PROBE_FIELDS 11
/* room for fields libcxlshm may add later: its get never writes past it */
struct coh_probe_counters {
	uint64_t v[32];
};

static void (*coh_probe_get)(struct coh_probe_counters *);

/* Look the counters up once, after MPI_Init (the provider is loaded). */
static void coh_probe_init(void)
{
	void *h = dlopen("libcxlshm.so.0", RTLD_NOW | RTLD_NOLOAD);

	if (h)
		*(void **)&coh_probe_get = dlsym(h, "cxl_coh_counters_get");
}

static void coh_probe_read(struct coh_probe_counters *c)
{
	if (coh_probe_get)
		coh_probe_get(c);
}

/*
 * Rank 0 prints the counters of all ranks since *c0, for msgs messages:
 *   COH <test> <size> <msgs> and the 11 counters in the order above
 * (invalidations and fences include the polls' share). Collective.
 */
static void coh_probe_report(const char *test, size_t size, uint64_t msgs,
			     const struct coh_probe_counters *c0, int rank)
{
	struct coh_probe_counters c1 = *c0;
	uint64_t d[COH_PROBE_FIELDS], sum[COH_PROBE_FIELDS];
	int have = coh_probe_get != NULL, all;

	coh_probe_read(&c1); /* before this function's own messages */
	/* every rank must have the counters, or the sums are partial */
	MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (!all)
		return;
	for (int i = 0; i < COH_PROBE_FIELDS; i++)
		d[i] = c1.v[i] - c0->v[i];
	MPI_Reduce(d, sum, COH_PROBE_FIELDS, MPI_UINT64_T, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (rank)
		return;
	printf("COH %s %zu %llu", test, size, (unsigned long long)msgs);
	for (int i = 0; i < COH_PROBE_FIELDS; i++)
		printf(" %llu", (unsigned long long)sum[i]);
	printf("\n");
}

#endif
