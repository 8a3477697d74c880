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

static struct mp_group g;

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
	topts(&o, &g.tp, g.mode, (uint32_t)(i % g.hosts), 0);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	REQUIRE(cxl_barrier_open(p, "bar", (uint32_t)g.procs, (uint32_t)i,
				 &b) == CXL_OK);
	rc = cxl_obj_create(p, "data", (uint64_t)g.procs * 64, CXL_OBJ_ZERO,
			    &data);
	if (rc == CXL_EEXIST)
		rc = cxl_obj_open(p, "data", &data);
	REQUIRE(rc == CXL_OK);
	/* the creator zeroes after the name is visible: wait for everyone */
	REQUIRE(cxl_barrier_wait(b, 20000) == CXL_OK);
	lines = data.ptr;
	for (uint64_t r = 1; r <= (uint64_t)g.rounds; r++) {
		lines[i * 8] = r;
		cxl_flush(p, &lines[i * 8], 8);
		cxl_wfence(p);
		if (cxl_barrier_wait(b, 20000)) {
			fprintf(stderr, "%d: %s\n", i, cxl_errmsg());
			return 1;
		}
		for (int j = 0; j < g.procs; j++) {
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
	mp_group_args(&g, argc, argv, "mpbar", 8, 4, 2000);
	mp_group_run(&g, member, "rounds x 2 barriers");
	return t_report("mp_barrier");
}
