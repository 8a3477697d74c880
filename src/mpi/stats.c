/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CXLMPI_STATS=1: at MPI_Finalize each rank prints what libcxlmpi did
 * (direct RMA operations, pool locks taken, synchronizations) and the
 * process's coherence counters (shared with the provider: one libcxlshm).
 */
#include <stdio.h>

#include "internal.h"

int MPI_Finalize(void)
{
	struct cxl_coh_counters c;
	int rank = 0;

	if (cxlmpi_config()->stats) {
		PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
		cxl_coh_counters_get(&c);
		fprintf(stderr,
			"CXLMPI_STATS rank %d: puts %lu gets %lu accs %lu "
			"locks %lu syncs %lu flush_lines %llu inval_lines "
			"%llu fences %llu cost_ns %llu\n",
			rank, cxlmpi_stats.puts, cxlmpi_stats.gets,
			cxlmpi_stats.accs, cxlmpi_stats.locks,
			cxlmpi_stats.syncs, (unsigned long long)c.flush_lines,
			(unsigned long long)c.inval_lines,
			(unsigned long long)c.fences,
			(unsigned long long)c.cost_ns);
	}
	return PMPI_Finalize();
}
