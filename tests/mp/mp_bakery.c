/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reader-writer bakery lock across emulated hosts.
 *
 * Exclusive: every process adds 1 to one shared counter, rounds times,
 * with a plain read-modify-write (invalidate, load, store, flush) inside
 * the lock. Any overlap of two critical sections loses an increment, so
 * the final count must be exactly procs x rounds.
 *
 * Shared: in every third round a process takes the lock shared instead and
 * checks that the counter and its copy (written together by exclusive
 * holders, on different lines) agree: a reader that overlapped a writer
 * would see them differ.
 *
 *   mp_bakery --mode coherent|emulated [--procs 6] [--hosts 3]
 *             [--rounds 5000]
 */
#include <string.h>

#include "testutil.h"

static struct mp_group g;

/* object: line 0 counter, line 1 its copy, line 2 + j: j's lock word */
static int member(int i, void *arg)
{
	struct cxl_pool_opts o;
	struct cxl_obj data;
	struct cxl_bakery bk;
	cxl_barrier *b;
	cxl_pool *p;
	uint64_t *w, exclusive = 0;
	long torn = 0;
	int rc;

	(void)arg;
	topts(&o, &g.tp, g.mode, (uint32_t)(i % g.hosts), 0);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	REQUIRE(cxl_barrier_open(p, "bar", (uint32_t)g.procs, (uint32_t)i,
				 &b) == CXL_OK);
	rc = cxl_obj_create(p, "data", (uint64_t)(g.procs + 2) * 64,
			    CXL_OBJ_ZERO, &data);
	if (rc == CXL_EEXIST)
		rc = cxl_obj_open(p, "data", &data);
	REQUIRE(rc == CXL_OK);
	REQUIRE(cxl_barrier_wait(b, 20000) == CXL_OK);
	w = data.ptr;
	bk = (struct cxl_bakery){ .pool = p,
				  .words = w + 16,
				  .stride = 8,
				  .n = (uint32_t)g.procs,
				  .me = (uint32_t)i };
	for (int r = 0; r < g.rounds; r++) {
		int shared = r % 3 == 2;

		if (cxl_bakery_lock(&bk, !shared, 20000)) {
			fprintf(stderr, "%d: %s\n", i, cxl_errmsg());
			return 1;
		}
		cxl_inval(p, w, 128);
		if (shared) {
			torn += w[0] != w[8];
		} else {
			w[0]++;
			w[8] = w[0];
			cxl_flush(p, w, 128);
			exclusive++;
		}
		cxl_bakery_unlock(&bk);
	}
	REQUIRE(cxl_barrier_wait(b, 60000) == CXL_OK);
	cxl_inval(p, w, 64);
	if (i == 0) {
		uint64_t want = 0;

		for (int j = 0; j < g.procs; j++)
			for (int r = 0; r < g.rounds; r++)
				want += r % 3 != 2;
		if (w[0] != want) {
			fprintf(stderr, "counter %llu, expected %llu\n",
				(unsigned long long)w[0],
				(unsigned long long)want);
			torn++;
		}
		printf("counter %llu = %d processes x %llu exclusive rounds\n",
		       (unsigned long long)w[0], g.procs,
		       (unsigned long long)exclusive);
	}
	REQUIRE(cxl_barrier_wait(b, 20000) == CXL_OK);
	cxl_obj_close(&data);
	cxl_barrier_close(b);
	cxl_pool_detach(p);
	if (torn)
		fprintf(stderr, "member %d: %ld bad observations\n", i, torn);
	return torn != 0;
}

int main(int argc, char **argv)
{
	mp_group_args(&g, argc, argv, "mpbak", 6, 3, 5000);
	mp_group_run(&g, member, "lock rounds");
	return t_report("mp_bakery");
}
