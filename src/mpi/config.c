/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libcxlmpi's settings (config.h). MPI_Init and MPI_Init_thread read
 * them, so that a bad value stops every rank at start-up, whatever the
 * program goes on to use; a call that needs one before (or without)
 * MPI_Init reads them then.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "config.h"

static struct cxlmpi_config cfg = {
	.alloc_mem = true,
	.direct_rma = true,
	.sync_timeout_ms = 600000,
	.stream_wait_spins = 256,
};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int bad; /* settings found invalid */

static void report(const char *var, const char *val, const char *want)
{
	fprintf(stderr,
		"libcxlmpi: %s='%s' is not valid: %s; set it so or unset it "
		"(docs/env.md)\n",
		var, val, want);
	bad++;
}

/* A setting that moved to another variable: refused, never ignored. */
static void moved(const char *old, const char *now, const char *why)
{
	if (!getenv(old))
		return;
	fprintf(stderr,
		"libcxlmpi: %s is no longer read: %s. Set %s instead and "
		"unset %s (docs/env.md)\n",
		old, why, now, old);
	bad++;
}

/* var as 0 or 1 into *v */
static void get_bool(const char *var, bool *v)
{
	const char *s = getenv(var);

	if (!s)
		return;
	if (!strcmp(s, "0") || !strcmp(s, "1"))
		*v = s[0] == '1';
	else
		report(var, s, "use 0 or 1");
}

/* var as a decimal number of lo..hi into *v */
static void get_u32(const char *var, uint32_t lo, uint32_t hi, uint32_t *v)
{
	const char *s = getenv(var);
	char want[80], *end;
	unsigned long long x;

	if (!s)
		return;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || x < lo || x > hi) {
		snprintf(want, sizeof(want), "a number of %u..%u", lo, hi);
		report(var, s, want);
		return;
	}
	*v = (uint32_t)x;
}

static void read_config(void)
{
	const char *pool = getenv("CXL_POOL");

	cfg.pool = pool && *pool;
	get_bool("CXLMPI_ALLOC_MEM", &cfg.alloc_mem);
	get_bool("CXLMPI_DIRECT_RMA", &cfg.direct_rma);
	get_bool("CXLMPI_STATS", &cfg.stats);
	get_u32("CXLMPI_SYNC_TIMEOUT_MS", 0, UINT32_MAX, &cfg.sync_timeout_ms);
	get_u32("CXLMPI_STREAM_SLOTS", 1, 16, &cfg.stream_slots);
	moved("CXLMPI_STREAM_PEER_TIMEOUT_MS", "CXL_PEER_TIMEOUT_MS",
	      "the peer timeout is one setting of libcxlshm's liveness "
	      "service, for the provider and libcxlmpi alike");
	get_u32("CXLMPI_STREAM_WAIT_SPINS", 0, 1000000000,
		&cfg.stream_wait_spins);
	cfg.cuda_driver = getenv("CXLMPI_CUDA_DRIVER");
	if (cfg.cuda_driver && !*cfg.cuda_driver)
		report("CXLMPI_CUDA_DRIVER", "",
		       "name the CUDA driver library (libcuda.so.1)");
	else if (cfg.cuda_driver && strchr(cfg.cuda_driver, '/') &&
		 access(cfg.cuda_driver, R_OK))
		report("CXLMPI_CUDA_DRIVER", cfg.cuda_driver,
		       "no readable file there; give the path of the CUDA "
		       "driver library or unset it");
	if (!cfg.cuda_driver || !*cfg.cuda_driver)
		cfg.cuda_driver = "libcuda.so.1";
	get_u32("CXLMPI_TEST_GPU_MUTATE", 0, 2, &cfg.test_gpu_mutate);
}

const struct cxlmpi_config *cxlmpi_config(void)
{
	pthread_once(&once, read_config);
	if (bad) {
		/* every rank sees the same environment and stops alike; an
		 * exit, not MPI_Abort, whose teardown can lose the report */
		fprintf(stderr, "libcxlmpi: %d invalid setting(s): stopping\n",
			bad);
		exit(1);
	}
	return &cfg;
}

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);

	if (rc == MPI_SUCCESS)
		cxlmpi_config();
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);

	if (rc == MPI_SUCCESS)
		cxlmpi_config();
	return rc;
}
