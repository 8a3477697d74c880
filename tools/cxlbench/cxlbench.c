/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cxlbench: characterize a pool in each coherence mode.
 *
 * For every selected mode (and, in flush mode, every flush instruction the
 * CPU has) cxlbench attaches the pool once, creates one benchmark object
 * and measures on it:
 *   1. write+flush latency, 64 B .. 128 KiB (cMPI Table 1, Fig. 11);
 *   2. read+invalidate latency, same sizes;
 *   3. pointer-chase load latency over a large region;
 *   4. copy bandwidth from local DRAM as threads scale;
 *   5. for each of them, the coherence operations per operation, from the
 *      library's counters (the deterministic cost proxy on real CXL).
 * The same measurements on a local DRAM buffer give the baseline rows.
 *
 * Without --pool (and CXL_POOL) it creates a temporary pool file on
 * /dev/shm and removes it at exit.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlbench.h"
#include "cxlbench_stream.h"

volatile sig_atomic_t bench_interrupted;

#define TMP_POOL_SIZE (256ull << 20)
#define TMP_CAPACITY 4096u /* objects: the pool holds just one */
#define MIN_CHUNK (64u << 10)
#define MAX_THREADS 1024u
#define MAX_RUNS 8

static const struct bench_plan full_plan = {
	.lat_warmup = 30,
	.lat_samples = 301,
	.chase_bytes = 64u << 20,
	.chase_samples = 9,
	.chunk_bytes = 4u << 20,
	.bw_warmup = 2,
	.bw_samples = 21,
};

/* --quick: seconds in total, for tests and CI. */
static const struct bench_plan quick_plan = {
	.lat_warmup = 3,
	.lat_samples = 31,
	.chase_bytes = 32u << 20,
	.chase_samples = 3,
	.chunk_bytes = 4u << 20,
	.bw_warmup = 1,
	.bw_samples = 5,
};

struct args {
	struct bench_opts b; /* --pool, --size, --mode, --csv, --quick */
	unsigned threads;    /* --threads */
};

/* One attachment to measure. */
struct run {
	enum cxl_coh_mode mode;
	enum cxl_flush_insn insn; /* CXL_FLUSH_AUTO where nothing flushes */
};

/* State shared by the attachments of one cxlbench run. */
struct bench {
	struct cxl_pool_opts opts;
	struct bench_plan plan;
	struct bench_scratch scratch;
	struct bench_results results;
	uint8_t *dram; /* the local DRAM target, bench_obj_bytes() long */
	bool planned;  /* plan fitted to the pool, baseline measured */
	char obj_name[CXL_NAME_MAX + 1];
};

/* Temporary pool directory (pool file and lock files), "" when none. */
static char tmp_dir[128];

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cxlbench [options]\n"
		"       cxlbench stream [options]   STREAM with the arrays in DRAM,\n"
		"                                   the pool, or interleaved\n"
		"       cxlbench pmem [options]     STREAM-PMem: persistent arrays\n"
		"                                   (libpmemobj and the pool)\n"
		"       cxlbench loaded [options]   latency under load (MLC's\n"
		"                                   --loaded_latency), pool and DRAM\n"
		"\n"
		"Measure a cxlshm pool in each coherence mode: write+flush and\n"
		"read+invalidate latency (64 B..128 KiB), pointer-chase load latency,\n"
		"copy bandwidth as threads scale, and the coherence operations (flushed\n"
		"and invalidated lines, fences, non-temporal ops) each operation costs.\n"
		"Local DRAM rows are the baseline.\n"
		"\n"
		"  --pool PATH     pool to use (default: CXL_POOL, else a temporary\n"
		"                  256 MiB pool in /dev/shm, removed at exit)\n"
		"  --size SIZE     size of a pool cxlbench creates, e.g. 512M\n"
		"  --mode LIST     coherent, flush, uncached, emulated, or a comma list\n"
		"                  (default: CXL_COHERENCE if set, else all four)\n"
		"  --csv FILE      also write every result as a CSV row to FILE\n"
		"  --quick         fewer and smaller iterations (a few seconds)\n"
		"  --threads N     most threads of the bandwidth sweep (default: the\n"
		"                  online CPUs)\n"
		"  --help          this text ('cxlbench stream --help' and\n"
		"                  'cxlbench pmem --help' for the subcommands)\n"
		"\n"
		"Flush mode runs once per flush instruction of this CPU (clflushopt,\n"
		"clwb, clflush) unless CXL_FLUSH_INSN names one. Other CXL_* variables\n"
		"configure the attachment as usual (see docs/env.md).\n");
}

static void on_signal(int sig)
{
	bench_interrupted = sig;
}

/* Report a failed libcxlshm call: its message names the cause and fix. */
static void lib_err(const char *what, int rc)
{
	const char *msg = cxl_errmsg();

	fprintf(stderr, "cxlbench: %s: %s\n", what,
		msg && *msg ? msg : cxl_strerror(rc));
}

/* ---- options ----------------------------------------------------------- */

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		BENCH_LONGOPTS,
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	a->threads = ncpu < 1		  ? 1
		     : ncpu > MAX_THREADS ? MAX_THREADS
					  : (unsigned)ncpu;
	opterr = 0; /* our messages say how to fix the command line */
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int took = bench_opt_take("cxlbench", c, optarg,
					  BENCH_ALL_MODES, &a->b);

		if (took < 0)
			return 2;
		if (took)
			continue;
		switch (c) {
		case 't':
			if (bench_parse_uint("cxlbench", "--threads", optarg, 1,
					     MAX_THREADS, &v))
				return 2;
			a->threads = (unsigned)v;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			return tool_usage_error("cxlbench", c,
						argv[optind - 1]);
		}
	}
	if (optind < argc)
		return tool_usage_error("cxlbench", 0, argv[optind]);
	return 0;
}

/* ---- the pool ---------------------------------------------------------- */

/*
 * The attachments to measure, in mode order. Flush mode runs once per flush
 * instruction of this CPU, unless CXL_FLUSH_INSN chose one. Uncached mode
 * names the instruction CXL_FLUSH_AUTO would pick (clflushopt, else
 * clflush) so the tables can show it.
 */
static size_t plan_runs(const struct args *a, const struct cxl_pool_opts *o,
			const struct cxl_cpu_features *f, struct run *runs)
{
	static const enum cxl_flush_insn flush_insns[] = {
		CXL_FLUSH_CLFLUSHOPT,
		CXL_FLUSH_CLWB,
		CXL_FLUSH_CLFLUSH,
	};
	const int have[] = { f->clflushopt, f->clwb, f->clflush };
	unsigned modes = a->b.modes;
	size_t n = 0;

	if (!modes)
		modes = o->mode_set ? 1u << o->mode : 0xfu;
	for (int m = CXL_COH_COHERENT; m <= CXL_COH_EMULATED; m++) {
		size_t first = n;

		if (!(modes & (1u << m)))
			continue;
		if (m == CXL_COH_FLUSH && o->insn == CXL_FLUSH_AUTO) {
			for (size_t i = 0; i < 3; i++)
				if (have[i])
					runs[n++] =
						(struct run){ m,
							      flush_insns[i] };
		} else if (m == CXL_COH_FLUSH || m == CXL_COH_UNCACHED) {
			enum cxl_flush_insn i = o->insn;

			if (i == CXL_FLUSH_AUTO && f->clflushopt)
				i = CXL_FLUSH_CLFLUSHOPT;
			else if (i == CXL_FLUSH_AUTO && f->clflush)
				i = CXL_FLUSH_CLFLUSH;
			runs[n++] = (struct run){ m, i };
		}
		/* Coherent and emulated never flush; a CPU without any
		 * flush instruction still gets one flush-mode attempt, so
		 * the library explains why it cannot run. */
		if (n == first)
			runs[n++] = (struct run){ m, CXL_FLUSH_AUTO };
	}
	return n;
}

static const char *insn_label(const struct run *r)
{
	return r->insn == CXL_FLUSH_AUTO ? "none"
					 : cxl_flush_insn_name(r->insn);
}

/* ---- measuring --------------------------------------------------------- */

static void print_machine(const struct args *a, const struct cxl_pool_opts *o)
{
	char sz[32];

	bench_print_host();
	bench_fmt_size(o->size, sz, sizeof(sz));
	printf("cxlbench: pool %s (%s%s), job %s, %s run; dram rows: memcpy "
	       "and loads on local DRAM\n",
	       o->path,
	       tmp_dir[0]  ? "temporary, "
	       : o->create ? "if missing: "
			   : "",
	       tmp_dir[0] || o->create ? sz : "existing", o->job,
	       a->b.quick ? "quick" : "full");
}

/*
 * Shrink the plan to the largest free piece of the pool, once, with the
 * first attachment: all attachments and the baseline then measure the
 * same sizes.
 */
static int fit_plan(cxl_pool *p, struct bench_plan *pl)
{
	uint64_t want = bench_obj_bytes(pl), least, room;
	struct cxl_arena_stat st;
	char a[32], b[32];
	int rc = cxl_arena_stat(p, &st);

	if (rc) {
		lib_err("cannot read the pool's free space", rc);
		return -1;
	}
	room = st.largest_free;
	least = (uint64_t)MIN_CHUNK * pl->max_threads;
	if (least < BENCH_LAT_MAX)
		least = BENCH_LAT_MAX;
	if (room < least) {
		fprintf(stderr,
			"cxlbench: pool %s has %s free in one piece; "
			"cxlbench needs %s with --threads %u: use a larger "
			"pool (--size for a new one), free space in it, or "
			"lower --threads\n",
			cxl_pool_path(p), bench_fmt_size(room, a, sizeof(a)),
			bench_fmt_size(least, b, sizeof(b)), pl->max_threads);
		return -1;
	}
	if (pl->chase_bytes > room)
		pl->chase_bytes = room;
	if (pl->chunk_bytes * pl->max_threads > room)
		pl->chunk_bytes = room / pl->max_threads / CXL_LINE * CXL_LINE;
	printf("cxlbench: plan: latency median of %u batches, chase region "
	       "%s, bandwidth %s per thread, 1..%u threads\n",
	       pl->lat_samples, bench_fmt_size(pl->chase_bytes, a, sizeof(a)),
	       bench_fmt_size(pl->chunk_bytes, b, sizeof(b)), pl->max_threads);
	if (want > room)
		/* A buddy heap of a pool four times the size has a free
		 * block twice as large as needed, metadata included. */
		printf("cxlbench: note: sizes reduced to the %s free in one "
		       "piece; a new pool of --size %s runs the full plan\n",
		       bench_fmt_size(room, a, sizeof(a)),
		       bench_fmt_size(4 * want, b, sizeof(b)));
	return 0;
}

static int run_tests(struct bench *bx, const struct bench_target *t)
{
	const struct bench_plan *pl = &bx->plan;

	if (bench_latency(pl, t, &bx->scratch, &bx->results) ||
	    bench_chase(pl, t, &bx->scratch, &bx->results) ||
	    bench_bandwidth(pl, t, &bx->scratch, &bx->results))
		return -1;
	return 0;
}

/* First attachment: fix the sizes, allocate local buffers, baseline. */
static int prepare(struct bench *bx, cxl_pool *p)
{
	struct bench_target dram = { .mode = "dram", .insn = "none" };
	uint64_t n;

	if (fit_plan(p, &bx->plan) ||
	    bench_scratch_init(&bx->scratch, &bx->plan))
		return -1;
	n = bench_obj_bytes(&bx->plan);
	bx->dram = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
	if (!bx->dram) {
		fprintf(stderr,
			"cxlbench: out of memory for a %llu-byte DRAM "
			"buffer: lower --threads, or use --quick\n",
			(unsigned long long)n);
		return -1;
	}
	memset(bx->dram, 0, n);
	bx->planned = true;
	printf("cxlbench: measuring local DRAM\n");
	fflush(stdout);
	dram.buf = bx->dram;
	return run_tests(bx, &dram);
}

static int measure(struct bench *bx, cxl_pool *p, const struct run *r)
{
	struct bench_target t = {
		.pool = p,
		.mode = cxl_coh_mode_name(r->mode),
		.insn = insn_label(r),
	};
	struct cxl_obj obj;
	char a[32], b[32];
	int rc, ret;

	if (!bx->planned && prepare(bx, p))
		return -1;
	/* Zeroing faults every page in before anything is timed. */
	rc = cxl_obj_create(p, bx->obj_name, bench_obj_bytes(&bx->plan),
			    CXL_OBJ_ALIGN_2M | CXL_OBJ_ZERO, &obj);
	if (rc) {
		lib_err("cannot create the benchmark object", rc);
		return -1;
	}
	printf("cxlbench: mode %s, flush instruction %s: pool %s (%s), "
	       "object '%s' of %s at offset 0x%llx\n",
	       t.mode, t.insn, cxl_pool_path(p),
	       bench_fmt_size(cxl_pool_size(p), a, sizeof(a)), bx->obj_name,
	       bench_fmt_size(obj.size, b, sizeof(b)),
	       (unsigned long long)obj.off);
	fflush(stdout);
	t.buf = obj.ptr;
	ret = run_tests(bx, &t);
	if ((rc = cxl_obj_destroy(p, bx->obj_name))) {
		lib_err("cannot destroy the benchmark object", rc);
		ret = -1;
	}
	if ((rc = cxl_obj_close(&obj))) {
		lib_err("cannot close the benchmark object", rc);
		ret = -1;
	}
	return ret;
}

/* Attach once per run and measure. Returns the number measured, or -1. */
static int run_all(struct bench *bx, const struct run *runs, size_t nruns)
{
	int done = 0;

	for (size_t i = 0; i < nruns && !bench_interrupted; i++) {
		struct cxl_pool_opts o = bx->opts;
		cxl_pool *p;
		int rc, ret;

		o.mode = runs[i].mode;
		o.mode_set = 1;
		o.insn = runs[i].insn;
		rc = cxl_pool_attach(&o, &p);
		if (rc == CXL_ENOTSUP) {
			printf("cxlbench: skipping %s/%s: %s\n",
			       cxl_coh_mode_name(runs[i].mode),
			       insn_label(&runs[i]), cxl_errmsg());
			continue;
		}
		if (rc) {
			lib_err("cannot attach the pool", rc);
			return -1;
		}
		ret = measure(bx, p, &runs[i]);
		if ((rc = cxl_pool_detach(p))) {
			lib_err("cannot detach the pool", rc);
			ret = -1;
		}
		if (ret)
			return -1;
		done++;
	}
	return done;
}

int main(int argc, char **argv)
{
	struct bench bx = { 0 };
	struct cxl_cpu_features f;
	struct run runs[MAX_RUNS];
	struct args a;
	size_t nruns;
	int rc, done, status = 1;

	if (argc > 1 && !strcmp(argv[1], "stream")) {
		tool_catch_signals(on_signal);
		return cxlbench_stream_main(argc - 1, argv + 1);
	}
	if (argc > 1 && !strcmp(argv[1], "loaded")) {
		tool_catch_signals(on_signal);
		return cxlbench_loaded_main(argc - 1, argv + 1);
	}
	if (argc > 1 && !strcmp(argv[1], "pmem")) {
		tool_catch_signals(on_signal);
		return cxlbench_pmem_main(argc - 1, argv + 1);
	}
	if ((rc = parse_args(argc, argv, &a)))
		return rc == 1 ? 0 : 2;
	tool_catch_signals(on_signal);
	if (bench_pool_opts("cxlbench", &a.b, TMP_POOL_SIZE, TMP_CAPACITY,
			    &bx.opts, tmp_dir, sizeof(tmp_dir)))
		goto out;
	bx.plan = a.b.quick ? quick_plan : full_plan;
	bx.plan.max_threads = a.threads;
	snprintf(bx.obj_name, sizeof(bx.obj_name), "cxlbench-%d",
		 (int)getpid());
	if (a.b.csv && bench_csv_open(&bx.results, a.b.csv))
		goto out;
	cxl_cpu_features_get(&f);
	nruns = plan_runs(&a, &bx.opts, &f, runs);
	print_machine(&a, &bx.opts);
	fflush(stdout);

	done = run_all(&bx, runs, nruns);
	if (done == 0 && !bench_interrupted)
		fprintf(stderr, "cxlbench: no coherence mode could be attached "
				"(see above); pick another --mode\n");
	if (bx.results.n)
		bench_print_tables(&bx.results);
	status = done > 0 ? 0 : 1;
	if (bench_csv_close(&bx.results, a.b.csv))
		status = 1;
	else if (a.b.csv && done > 0)
		printf("\ncxlbench: results written to %s\n", a.b.csv);
out:
	bench_csv_close(&bx.results, a.b.csv);
	bench_results_free(&bx.results);
	bench_scratch_free(&bx.scratch);
	free(bx.dram);
	tool_tmp_pool_remove("cxlbench", tmp_dir);
	if (bench_interrupted)
		return 128 + bench_interrupted;
	return status;
}
