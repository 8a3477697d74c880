/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cxlbench pmem: STREAM-PMem. The STREAM kernels with the three arrays as
 * persistent objects, each run twice, volatile (no persistence) and
 * persistent (the written array made durable after every kernel):
 *   - pmemobj: PMDK's libpmemobj, its pool file next to the cxl pool (the
 *     same medium), pmemobj_persist() after each kernel;
 *   - cxl: three pool objects, cxl_flush() of the written array and
 *     cxl_wfence() after each kernel (the project's own persistence);
 *   - dram: the same kernels on local DRAM, volatile, for reference.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cxlbench_stream.h"
#include "stream_place.h"
#include "stream_pmemobj.h"

/* ---- the steps ------------------------------------------------------------
 */

enum backend {
	B_DRAM,
	B_PMEMOBJ,
	B_CXL
};

struct pstep {
	enum backend be;
	bool persist, omit_flush;
	double *v[ARR_N];
	size_t n;
	struct pmo *pmo;
	cxl_pool *pool;
};

static void pstep(void *arg, enum stream_kernel k)
{
	const struct pstep *x = arg;
	double *w = x->v[stream_kwrites[k]];
	size_t len = x->n * sizeof(double);

	stream_kernel(k, x->v[0], x->v[1], x->v[2], 0, x->n, false);
	if (!x->persist)
		return;
	if (x->be == B_PMEMOBJ) {
		pmo_persist(x->pmo, w, len); /* write back + fence */
		return;
	}
	/* Durable before the next kernel starts: write back the result,
	 * then fence so no later store passes the write-backs. */
	if (!x->omit_flush)
		cxl_flush(x->pool, w, len);
	cxl_wfence(x->pool);
}

static void psync(void *arg, bool before_check)
{
	const struct pstep *x = arg;
	size_t len = x->n * sizeof(double);

	if (!x->persist)
		return;
	for (int i = 0; i < ARR_N; i++) {
		if (x->be == B_PMEMOBJ && !before_check)
			pmo_persist(x->pmo, x->v[i], len);
		if (x->be != B_CXL)
			continue;
		/* Validate what the pool holds, as a restarted process or
		 * another host would read it: what was not written back is
		 * lost in the emulated mode. */
		if (before_check)
			cxl_inval(x->pool, x->v[i], len);
		else if (!x->omit_flush)
			cxl_flush(x->pool, x->v[i], len);
	}
	if (x->be == B_CXL)
		cxl_wfence(x->pool);
}

static int run_pair(struct pstep *x, const char *mode, const char *place,
		    unsigned ntimes, struct stream_rows *rows, bool *valid,
		    bool both)
{
	for (int pers = 0; pers <= (both ? 1 : 0); pers++) {
		struct stream_row row = { 0 };
		struct stream_job j = {
			.a = x->v[0],
			.b = x->v[1],
			.c = x->v[2],
			.n = x->n,
			.ntimes = ntimes,
			.step = pstep,
			.sync = psync,
			.arg = x,
		};
		char prefix[96];

		if (bench_interrupted)
			return 0;
		x->persist = pers;
		snprintf(prefix, sizeof(prefix), "cxlbench: %s%s%s %s: ", place,
			 strcmp(place, mode) ? " " : "",
			 strcmp(place, mode) ? mode : "",
			 pers ? "persistent" : "volatile");
		j.label = prefix;
		stream_run(&j, &row.st, stdout);
		snprintf(row.mode, sizeof(row.mode), "%s", mode);
		snprintf(row.place, sizeof(row.place), "%s", place);
		row.persist = pers;
		row.n = x->n;
		row.ntimes = ntimes;
		memset(row.where, x->be == B_DRAM ? 'D' : 'P', ARR_N);
		for (int i = 0; i < ARR_N; i++)
			row.frac[i] = x->be == B_DRAM ? 0 : 1;
		for (int k = 0; k < K_N; k++) {
			row.mbs[k] = stream_mbs(k, x->n, row.st.min_s[k]);
			/* PMDK's flushes are not in our counters: one
			 * pmemobj_persist of the result per kernel, by
			 * the lines it covers, and its fence. */
			if (x->be == B_PMEMOBJ && pers) {
				row.st.ops[k].flush_lines =
					(ntimes - 1) * ((x->n * sizeof(double) +
							 CXL_LINE - 1) /
							CXL_LINE);
				row.st.ops[k].fences = ntimes - 1;
			}
		}
		printf("%sCopy %.0f, Scale %.0f, Add %.0f, Triad %.0f MB/s\n",
		       prefix, row.mbs[0], row.mbs[1], row.mbs[2], row.mbs[3]);
		fflush(stdout);
		*valid = *valid && row.st.valid;
		if (stream_rows_add(rows, &row))
			return -1;
	}
	return 0;
}

/* ---- the three backends ------------------------------------------------ */

static int run_dram(size_t n, unsigned ntimes, struct stream_rows *rows,
		    bool *valid)
{
	struct stream_mem m;
	struct pstep x = { .be = B_DRAM, .n = n };
	int ret;

	if (stream_mem_init(&m, NULL, n, ""))
		return -1;
	for (int i = 0; i < ARR_N; i++)
		x.v[i] = m.dram[i];
	ret = run_pair(&x, "dram", "dram", ntimes, rows, valid, false);
	stream_mem_fini(&m);
	return ret;
}

/* The pmemobj file: --pmem-file, else next to a file pool. */
static int pmem_path(const struct stream_args *a, const char *pool, char *out,
		     size_t cap)
{
	const char *slash;

	if (a->pmem_file) {
		snprintf(out, cap, "%s", a->pmem_file);
		return 0;
	}
	if (!strncmp(pool, "/dev/dax", 8)) {
		printf("cxlbench pmem: skipping pmemobj: the pool is the device "
		       "%s; give --pmem-file another devdax device (PMDK uses "
		       "it whole) or a file on the same medium\n",
		       pool);
		return 1;
	}
	slash = strrchr(pool, '/');
	snprintf(out, cap, "%.*s/cxlbench-pmemobj-%d.pool",
		 slash ? (int)(slash - pool) : 1, slash ? pool : ".",
		 (int)getpid());
	return 0;
}

static int run_pmemobj(const struct stream_args *a, const char *pool, size_t n,
		       struct stream_rows *rows, bool *valid)
{
	struct pstep x = { .be = B_PMEMOBJ, .n = n };
	const char *ver;
	char path[512];
	int ret;

	if (!pmo_available(&ver)) {
		printf("cxlbench pmem: skipping pmemobj: this cxlbench was "
		       "built without libpmemobj (pkg-config found none); "
		       "install libpmemobj-dev (scripts/setup.sh) and "
		       "rebuild\n");
		return 0;
	}
	if ((ret = pmem_path(a, pool, path, sizeof(path))))
		return ret > 0 ? 0 : -1;
	if (strncmp(path, "/dev/dax", 8) && !getenv("PMEM_IS_PMEM_FORCE"))
		setenv("PMEM_IS_PMEM_FORCE", "1", 0);
	printf("\ncxlbench pmem: pmemobj (PMDK libpmemobj %s): pool %s, "
	       "PMEM_IS_PMEM_FORCE=%s\n",
	       ver, path,
	       getenv("PMEM_IS_PMEM_FORCE") ? getenv("PMEM_IS_PMEM_FORCE")
					    : "unset");
	fflush(stdout);
	{
		double *arr[3];

		if (pmo_open(path, n, &x.pmo, arr))
			return -1;
		for (int i = 0; i < ARR_N; i++)
			x.v[i] = arr[i];
	}
	ret = run_pair(&x, "pmemobj", "pmemobj", a->ntimes, rows, valid, true);
	pmo_close(x.pmo);
	return ret;
}

static int run_cxl(const struct cxl_pool_opts *o, enum cxl_coh_mode mode,
		   const struct stream_args *a, size_t n,
		   struct stream_rows *rows, bool *valid)
{
	struct pstep x = { .be = B_CXL, .n = n, .omit_flush = a->omit_flush };
	struct stream_mem m;
	char label[32], prefix[32];
	cxl_pool *p;
	int rc, ret;

	rc = stream_attach(o, mode, true, &p, label, sizeof(label));
	if (rc)
		return rc < 0 ? -1 : 0;
	snprintf(prefix, sizeof(prefix), "pmem-%d", (int)getpid());
	if (stream_mem_init(&m, p, n, prefix)) {
		cxl_pool_detach(p);
		return -1;
	}
	printf("\ncxlbench pmem: cxl, mode %s: pool %s%s\n", label,
	       cxl_pool_path(p),
	       mode == CXL_COH_COHERENT ? " (coherent: cxl_flush is a no-op, "
					  "NOT persistent)"
					: "");
	fflush(stdout);
	x.pool = p;
	for (int i = 0; i < ARR_N; i++)
		x.v[i] = m.obj[i].ptr;
	ret = run_pair(&x, label, "cxl", a->ntimes, rows, valid, true);
	if (stream_mem_fini(&m))
		ret = -1;
	if (cxl_pool_detach(p))
		ret = -1;
	return ret;
}

/* STREAM-PMem: DRAM, libpmemobj, and the pool in each mode asked for */
static int pmem_body(struct stream_run *r)
{
	unsigned modes = r->a.b.modes	 ? r->a.b.modes
			 : r->o.mode_set ? 1u << r->o.mode
					 : 1u << CXL_COH_FLUSH;

	if (run_dram(r->n, r->a.ntimes, &r->rows, &r->valid) ||
	    run_pmemobj(&r->a, r->o.path, r->n, &r->rows, &r->valid))
		return -1;
	for (int m = CXL_COH_COHERENT; m <= CXL_COH_EMULATED; m++)
		if ((modes & (1u << m)) && !bench_interrupted &&
		    run_cxl(&r->o, m, &r->a, r->n, &r->rows, &r->valid))
			return -1;
	stream_print_pmem(&r->rows);
	return 0;
}

int cxlbench_pmem_main(int argc, char **argv)
{
	return stream_cmd_main("pmem", argc, argv, pmem_body);
}
