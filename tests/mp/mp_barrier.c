/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The atomic-free barrier across emulated hosts. In round r each process
 * writes r into its own line of a data object, waits at the barrier, then
 * reads every other process's line and requires exactly r: nobody may
 * leave a barrier before everybody has arrived (and flushed). A second
 * barrier per round keeps the next write from racing the check.
 *
 *   mp_barrier --mode coherent|emulated [--procs 8] [--hosts 4]
 *              [--rounds 2000]
 */
#include <string.h>

#include "testutil.h"

static enum cxl_coh_mode mode;
static struct tpool tp;
static int nprocs, nhosts, nrounds;

static int member(int i, void *arg)
{
	struct cxl_pool_opts o;
	struct cxl_obj data;
	cxl_barrier *b;
	cxl_pool *p;
	uint64_t *lines;
	long bad = 0;
	int rc;

	(void)arg;
	topts(&o, &tp, mode, (uint32_t)(i % nhosts), 0);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	REQUIRE(cxl_barrier_open(p, "bar", (uint32_t)nprocs, (uint32_t)i, &b) ==
		CXL_OK);
	rc = cxl_obj_create(p, "data", (uint64_t)nprocs * 64, CXL_OBJ_ZERO,
			    &data);
	if (rc == CXL_EEXIST)
		rc = cxl_obj_open(p, "data", &data);
	REQUIRE(rc == CXL_OK);
	/* the creator zeroes after the name is visible: wait for everyone */
	REQUIRE(cxl_barrier_wait(b, 20000) == CXL_OK);
	lines = data.ptr;
	for (uint64_t r = 1; r <= (uint64_t)nrounds; r++) {
		lines[i * 8] = r;
		cxl_flush(p, &lines[i * 8], 8);
		cxl_wfence(p);
		if (cxl_barrier_wait(b, 20000)) {
			fprintf(stderr, "%d: %s\n", i, cxl_errmsg());
			return 1;
		}
		for (int j = 0; j < nprocs; j++) {
			cxl_inval(p, &lines[j * 8], 8);
			bad += lines[j * 8] != r;
		}
		if (cxl_barrier_wait(b, 20000))
			return 1;
	}
	cxl_obj_close(&data);
	cxl_barrier_close(b);
	cxl_pool_detach(p);
	if (bad)
		fprintf(stderr, "member %d saw %ld early exits\n", i, bad);
	return bad != 0;
}

int main(int argc, char **argv)
{
	uint64_t t0;

	mode = targ_mode(argc, argv);
	nprocs = (int)targ_long(argc, argv, "--procs", 8);
	nhosts = (int)targ_long(argc, argv, "--hosts", 4);
	nrounds = (int)targ_long(argc, argv, "--rounds", 2000);
	tpool_init(&tp, "mpbar");
	t0 = cxl_now_ns();
	CHECK(run_children(nprocs, member, NULL) == 0);
	printf("%d processes on %d hosts, %d rounds x 2 barriers (%s): "
	       "%.2f s\n",
	       nprocs, nhosts, nrounds, cxl_coh_mode_name(mode),
	       (double)(cxl_now_ns() - t0) / 1e9);
	tpool_cleanup(&tp);
	return t_report("mp_barrier");
}
