/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libcxlmpi's settings: every CXLMPI_* variable (docs/env.md), read and
 * checked once, here and nowhere else.
 */
#ifndef CXLMPI_CONFIG_H
#define CXLMPI_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

struct cxlmpi_config {
	bool pool;		  /* CXL_POOL is set: the job runs on a pool */
	bool alloc_mem;		  /* CXLMPI_ALLOC_MEM: MPI_Alloc_mem in it */
	bool direct_rma;	  /* CXLMPI_DIRECT_RMA: direct windows */
	bool stats;		  /* CXLMPI_STATS: counters at MPI_Finalize */
	uint32_t sync_timeout_ms; /* CXLMPI_SYNC_TIMEOUT_MS, 0: forever */
	uint32_t stream_slots;	  /* CXLMPI_STREAM_SLOTS, 0: by size */
	uint32_t stream_wait_spins; /* CXLMPI_STREAM_WAIT_SPINS */
	/* CXLMPI_CUDA_DRIVER: the CUDA driver library of GPU_MEM_OPS queues
	 * (default libcuda.so.1) */
	const char *cuda_driver;
	/* CXLMPI_TEST_GPU_MUTATE: test only, a GPU queue that breaks its
	 * protocol: 0 none, 1 no credit wait, 2 the flag before the data */
	uint32_t test_gpu_mutate;
};

/*
 * The settings, read at the first call. A value that is not valid is
 * reported on stderr (the variable, its value, what it may be) and ends
 * the process with exit status 1. No invalid value is ever replaced by a
 * default.
 */
const struct cxlmpi_config *cxlmpi_config(void);

#endif
