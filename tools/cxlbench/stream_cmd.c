/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What 'cxlbench stream' and 'cxlbench pmem' share, below both: their
 * options and usage texts, the array length, the pool and its attachment
 * per mode, and the frame of a run (stream_cmd_main).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlbench_stream.h"

#define QUICK_NTIMES 5
#define ADVISE_ROUNDS 3
#define MIN_TMP_POOL (256ull << 20)
#define TMP_CAPACITY 4096u

static void stream_usage(FILE *f)
{
	fprintf(f,
		"usage: cxlbench stream [options]\n"
		"\n"
		"STREAM (Copy c = a, Scale b = s*c, Add c = a + b, Triad a = b + "
		"s*c;\n"
		"McCalpin's rules: arrays of doubles of at least 4x the last-level\n"
		"cache, best of NTIMES with the first iteration excluded, STREAM's\n"
		"validation and byte counts) with each array in local DRAM (D) or\n"
		"in the pool (P): the 8 placements a/b/c = DDD .. PPP, and all three\n"
		"arrays page-interleaved DRAM:pool (I3:1 ...). In every coherence\n"
		"mode each kernel invalidates its pool-resident inputs first and\n"
		"writes back + fences its pool-resident result after (uncached:\n"
		"streaming stores + fence), so another host could read every step;\n"
		"those operations are counted per kernel. Prints a table per mode,\n"
		"the winner per kernel explained by the bytes each placement moves\n"
		"to and from the pool, and DRAM-only / pool-only ratios.\n"
		"\n"
		"  --pool PATH     pool to use (default: CXL_POOL, else a temporary\n"
		"                  pool in /dev/shm sized for the arrays, removed at\n"
		"                  exit)\n"
		"  --size SIZE     size of a pool cxlbench creates, e.g. 1G\n"
		"  --mode LIST     coherent, flush, uncached, emulated, or a comma\n"
		"                  list (default: CXL_COHERENCE if set, else all\n"
		"                  four; with --advise: the pool's default mode)\n"
		"  --csv FILE      one row per mode, placement and kernel\n"
		"  --n ELEMS       doubles per array (default: 4x the last-level\n"
		"                  cache, STREAM's rule)\n"
		"  --ntimes K      iterations, >= 2 (default %u; --quick: %u)\n"
		"  --quick         %llu MiB arrays and %u iterations: seconds, but\n"
		"                  breaks STREAM's 4x rule (said in the output)\n"
		"  --rounds R      passes over the placements, round-robin, best\n"
		"                  of each kept: spreads what other jobs do to the\n"
		"                  machine over all rows (default 1; --advise: %u)\n"
		"  --ratios LIST   DRAM:pool page ratios of the interleaved rows\n"
		"                  (default 3:1,1:1,1:3; 'none' for no such rows)\n"
		"  --advise        measure DDD and each array alone in the pool,\n"
		"                  and print which array to put in the pool first\n"
		"  --omit-flush    testing only: skip the write-back after each\n"
		"                  kernel; the emulated mode must then fail\n"
		"                  validation (exit status 1)\n"
		"  --help          this text\n"
		"\n"
		"Interleaving is at 4 KiB pages (2 MiB on devdax and hugetlbfs),\n"
		"coarser when vm.max_map_count is too low for it (said in the\n"
		"output). Exit status: 0 when every run validates, 1 otherwise.\n",
		STREAM_NTIMES, QUICK_NTIMES,
		(unsigned long long)(STREAM_QUICK_ELEMS * sizeof(double) >> 20),
		QUICK_NTIMES, ADVISE_ROUNDS);
}

/* ---- options (shared with cxlbench pmem) ------------------------------- */

static void pmem_usage(FILE *f)
{
	fprintf(f,
		"usage: cxlbench pmem [options]\n"
		"\n"
		"STREAM-PMem: STREAM's kernels with the arrays as persistent\n"
		"objects, volatile (no persistence) next to persistent (the written\n"
		"array made durable after every kernel), per kernel, in MB/s and as\n"
		"a ratio:\n"
		"  pmemobj  PMDK's libpmemobj: a pool file next to the cxl pool (same\n"
		"           medium), pmemobj_alloc'ed arrays, pmemobj_persist()\n"
		"  cxl      pool objects, cxl_flush() + cxl_wfence() (per --mode)\n"
		"  dram     local DRAM, volatile, for reference\n"
		"\n"
		"  --pool PATH       pool to use (default: CXL_POOL, else a temporary\n"
		"                    pool in /dev/shm, removed at exit)\n"
		"  --size SIZE       size of a pool cxlbench creates, e.g. 1G\n"
		"  --mode LIST       coherence modes of the cxl rows (default: flush;\n"
		"                    coherent flushes nothing, so it is not persistent)\n"
		"  --pmem-file PATH  libpmemobj pool (default: a new file next to the\n"
		"                    pool, removed at exit; required for a devdax pool:\n"
		"                    another devdax device, used whole)\n"
		"  --csv FILE        one row per arrays, mode, persistence and kernel\n"
		"  --n ELEMS         doubles per array (default: 4x the last-level\n"
		"                    cache, STREAM's rule)\n"
		"  --ntimes K        iterations, >= 2 (default 10; --quick: 5)\n"
		"  --quick           16 MiB arrays, 5 iterations (breaks the 4x rule)\n"
		"  --omit-flush      testing only: the cxl rows skip cxl_flush(); the\n"
		"                    emulated mode must then fail validation\n"
		"  --help            this text\n"
		"\n"
		"Unless PMEM_IS_PMEM_FORCE is set, cxlbench sets it to 1 for a pmemobj\n"
		"file: a tmpfs file is no pmem, and PMDK would msync() instead of\n"
		"flushing cache lines as it does on persistent (or CXL) memory.\n"
		"Persistent runs are validated after the arrays are re-read from the\n"
		"pool (invalidated). Exit status: 0 when every run validates.\n");
}

static int bad_value(const char *cmd, const char *opt, const char *arg,
		     const char *fix)
{
	fprintf(stderr, "cxlbench %s: %s '%s' is invalid; %s\n", cmd, opt, arg,
		fix);
	return 2;
}

static int parse_ratios(const char *arg, struct stream_args *a)
{
	const char *s = arg;

	a->nratios = 0;
	if (!strcmp(arg, "none"))
		return 0;
	while (*s) {
		unsigned d, p;
		int used = 0;

		if (a->nratios == STREAM_MAX_RATIOS ||
		    sscanf(s, "%u:%u%n", &d, &p, &used) != 2 || !d || !p ||
		    d > 64 || p > 64 || (s[used] && s[used] != ','))
			return -1;
		a->ratios[a->nratios][0] = d;
		a->ratios[a->nratios][1] = p;
		a->nratios++;
		s += used;
		s += *s == ',';
	}
	return a->nratios ? 0 : -1;
}

int stream_parse_args(int argc, char **argv, struct stream_args *a)
{
	static const struct option longopts[] = {
		BENCH_LONGOPTS,
		{ "n", required_argument, NULL, 'n' },
		{ "ntimes", required_argument, NULL, 'k' },
		{ "ratios", required_argument, NULL, 'r' },
		{ "rounds", required_argument, NULL, 'R' },
		{ "advise", no_argument, NULL, 'a' },
		{ "omit-flush", no_argument, NULL, 'o' },
		{ "pmem-file", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = a->cmd;
	bool stream = !strcmp(cmd, "stream");
	char prog[32];
	uint64_t v;
	int c;

	snprintf(prog, sizeof(prog), "cxlbench %s", cmd);
	a->ratios[0][0] = 3, a->ratios[0][1] = 1;
	a->ratios[1][0] = 1, a->ratios[1][1] = 1;
	a->ratios[2][0] = 1, a->ratios[2][1] = 3;
	a->nratios = 3;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int took =
			bench_opt_take(prog, c, optarg, BENCH_ALL_MODES, &a->b);

		if (took < 0)
			return 2;
		if (took)
			continue;
		switch (c) {
		case 'n':
			/* doubles per array */
			if (bench_parse_uint(prog, "--n", optarg, 1024,
					     1ull << 34, &v))
				return 2;
			a->n = v;
			break;
		case 'k':
			/* iterations, the first excluded */
			if (bench_parse_uint(prog, "--ntimes", optarg, 2, 1000,
					     &v))
				return 2;
			a->ntimes = (unsigned)v;
			break;
		case 'r':
			if (!stream || parse_ratios(optarg, a))
				return stream ? bad_value(cmd, "--ratios",
							  optarg,
							  "give DRAM:pool "
							  "pairs of 1..64, "
							  "e.g. 3:1,1:1,1:3, "
							  "or none")
					      : tool_usage_error(
							prog, c,
							argv[optind - 1]);
			break;
		case 'R':
			if (!stream)
				return tool_usage_error(prog, c,
							argv[optind - 1]);
			if (bench_parse_uint(prog, "--rounds", optarg, 1, 100,
					     &v))
				return 2;
			a->rounds = (unsigned)v;
			break;
		case 'a':
			if (!stream)
				return tool_usage_error(prog, c,
							argv[optind - 1]);
			a->advise = true;
			break;
		case 'o':
			a->omit_flush = true;
			break;
		case 'f':
			if (stream)
				return tool_usage_error(prog, c,
							argv[optind - 1]);
			a->pmem_file = optarg;
			break;
		case 'h':
			if (stream)
				stream_usage(stdout);
			else
				pmem_usage(stdout);
			return 1;
		default:
			return tool_usage_error(prog, c, argv[optind - 1]);
		}
	}
	if (optind < argc)
		return tool_usage_error(prog, 0, argv[optind]);
	if (!a->ntimes)
		a->ntimes = a->b.quick ? QUICK_NTIMES : STREAM_NTIMES;
	if (!a->rounds)
		a->rounds = a->advise ? ADVISE_ROUNDS : 1;
	return 0;
}

/* STREAM's rule, said out loud: each array at least 4x the LLC. */
size_t stream_pick_n(const struct stream_args *a)
{
	uint64_t llc = stream_llc_bytes(), rule, n;
	bool sysfs = llc != 0;
	char l[32], r[32], got[32];

	if (!sysfs)
		llc = STREAM_LLC_DEFAULT;
	rule = (4 * llc / sizeof(double) + 511) / 512 * 512;
	n = a->n ? a->n : a->b.quick ? STREAM_QUICK_ELEMS : rule;
	bench_fmt_size(llc, l, sizeof(l));
	bench_fmt_size(rule * sizeof(double), r, sizeof(r));
	snprintf(got, sizeof(got), "%.1f MiB",
		 (double)(n * sizeof(double)) / (1 << 20));
	printf("cxlbench %s: last-level cache %s (%s); STREAM's rule: each "
	       "array >= 4 x LLC = %s (%llu doubles)\n",
	       a->cmd, l,
	       sysfs ? "sysfs, cpu0 level 3" : "not in sysfs: assumed", r,
	       (unsigned long long)rule);
	if (n >= rule)
		printf("cxlbench %s: arrays of %llu doubles (%s each), %u "
		       "iterations, best of the last %u\n",
		       a->cmd, (unsigned long long)n, got, a->ntimes,
		       a->ntimes - 1);
	else
		printf("cxlbench %s: arrays of %llu doubles (%s each), %u "
		       "iterations: %s BREAKS STREAM's 4x rule, partly "
		       "cache-resident; drop %s for real numbers\n",
		       a->cmd, (unsigned long long)n, got, a->ntimes,
		       a->n ? "--n" : "--quick", a->n ? "--n" : "--quick");
	return (size_t)n;
}

/* A temporary pool big enough for three arrays of n doubles. */
int stream_setup_pool(const struct stream_args *a, struct cxl_pool_opts *o,
		      char *tmp_dir, size_t cap, size_t n)
{
	uint64_t block = 2u << 20, want;
	char prog[32];

	snprintf(prog, sizeof(prog), "cxlbench-%s", a->cmd);
	/* Buddy blocks are powers of two: four of them hold three arrays
	 * and the metadata. */
	while (block < n * sizeof(double))
		block *= 2;
	want = 8 * block;
	if (want < MIN_TMP_POOL)
		want = MIN_TMP_POOL;
	return bench_pool_opts(prog, &a->b, want, TMP_CAPACITY, o, tmp_dir,
			       cap);
}

unsigned stream_default_modes(const struct cxl_pool_opts *o)
{
	return o->mode_set ? 1u << o->mode : 0xfu;
}

int stream_attach(const struct cxl_pool_opts *base, enum cxl_coh_mode m,
		  bool mode_set, cxl_pool **p, char *label, size_t cap)
{
	struct cxl_pool_opts o = *base;
	enum cxl_coh_mode got;
	int rc;

	if (mode_set) {
		o.mode = m;
		o.mode_set = 1;
	}
	rc = cxl_pool_attach(&o, p);
	if (rc == CXL_ENOTSUP) {
		printf("cxlbench: skipping mode %s: %s\n", cxl_coh_mode_name(m),
		       cxl_errmsg());
		return 1;
	}
	if (rc) {
		fprintf(stderr, "cxlbench: cannot attach the pool %s: %s\n",
			o.path, cxl_errmsg());
		return -1;
	}
	got = cxl_pool_mode(*p);
	if (got == CXL_COH_FLUSH || got == CXL_COH_UNCACHED)
		snprintf(label, cap, "%s/%s", cxl_coh_mode_name(got),
			 cxl_flush_insn_name(cxl_pool_flush_insn(*p)));
	else
		snprintf(label, cap, "%s", cxl_coh_mode_name(got));
	return 0;
}

int stream_cmd_main(const char *cmd, int argc, char **argv,
		    int (*body)(struct stream_run *r))
{
	struct stream_run r = { .a = { .cmd = cmd }, .valid = true };
	char tmp_dir[128] = "";
	int rc, status = 1;

	if ((rc = stream_parse_args(argc, argv, &r.a)))
		return rc == 1 ? 0 : 2;
	bench_print_host();
	r.n = stream_pick_n(&r.a);
	if (stream_setup_pool(&r.a, &r.o, tmp_dir, sizeof(tmp_dir), r.n))
		goto out;
	if (r.a.b.csv && stream_csv_open(&r.rows, r.a.b.csv))
		goto out;
	if (r.a.omit_flush)
		printf("cxlbench %s: --omit-flush: pool results are NOT "
		       "written back (fault injection)\n",
		       cmd);
	if (body(&r))
		goto out;
	status = r.valid ? 0 : 1;
	if (!r.valid)
		printf("\ncxlbench %s: VALIDATION FAILED (see 'Failed "
		       "Validation' above)\n",
		       cmd);
out:
	if (stream_csv_close(&r.rows, r.a.b.csv))
		status = 1;
	else if (r.a.b.csv && r.rows.n)
		printf("\ncxlbench %s: results written to %s\n", cmd,
		       r.a.b.csv);
	stream_rows_free(&r.rows);
	tool_tmp_pool_remove("cxlbench", tmp_dir);
	if (bench_interrupted)
		return 128 + bench_interrupted;
	return status;
}
