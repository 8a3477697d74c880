/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cxlbench: pool characterization (latency, bandwidth, coherence cost).
 *
 * The layers, each calling only those below it:
 *   cxlbench.c          main: the subcommand, or the plain run (options,
 *                       pool attachments, the run loop)
 *   cxlbench_stream.c,  the subcommands 'stream', 'pmem' and 'loaded'
 *   cxlbench_pmem.c,
 *   cxlbench_loaded.c
 *   stream_cmd.c        the options, pool and frame of 'stream' and 'pmem'
 *                       (cxlbench_stream.h)
 *   cxlbench_run.c      the measurements of the plain run
 *   cxlbench_report.c   results: CSV rows, the tables on stdout, the host
 *   ../common/          the options and pool of every benchmark tool
 */
#ifndef CXLBENCH_H
#define CXLBENCH_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "common/benchopts.h"
#include "common/toolutil.h"
#include "cxlshm/cxlshm.h"

/* Largest transfer of the latency tests (cMPI Fig. 11 goes to 128 KiB). */
#define BENCH_LAT_MAX (128u << 10)

/* Set by SIGINT/SIGTERM/SIGHUP: measurements stop at the next sample. */
extern volatile sig_atomic_t bench_interrupted;

/* What to measure and how many times; --quick shrinks it. */
struct bench_plan {
	unsigned lat_warmup;	/* untimed batches per latency point */
	unsigned lat_samples;	/* timed batches; the median is reported */
	uint64_t chase_bytes;	/* pointer-chase region */
	unsigned chase_samples; /* timed passes over the whole cycle */
	uint64_t chunk_bytes;	/* per-thread chunk of the copy bandwidth */
	unsigned bw_warmup;	/* untimed rounds per thread count */
	unsigned bw_samples;	/* timed rounds; the median is reported */
	unsigned max_threads;	/* --threads */
};

/* Where a measurement runs: an attachment's object, or local DRAM. */
struct bench_target {
	cxl_pool *pool;	  /* NULL for the local DRAM baseline */
	uint8_t *buf;	  /* object storage, or the DRAM buffer */
	const char *mode; /* "dram" or cxl_coh_mode_name() */
	const char *insn; /* flush instruction, "none" where unused */
};

/* Local buffers shared by all targets (bench_scratch_init). */
struct bench_scratch {
	uint8_t *src;	 /* copy source: max_threads chunks (>= LAT_MAX) */
	uint8_t *dst;	 /* destination of the read tests: BENCH_LAT_MAX */
	uint32_t *next;	 /* pointer chase: successor of each line, one cycle */
	uint64_t nlines; /* lines in the cycle */
};

/* One measured point: one CSV row, one table cell. */
struct bench_result {
	const char *test; /* "write_flush", "read_inval", ... */
	const char *mode, *insn;
	uint64_t size; /* bytes per operation (per thread) */
	unsigned threads;
	double value;
	const char *unit;
	/* Counter deltas (cxl_coh_counters_get) over the timed operations,
	 * divided by their number. nt sums nt_stores and nt_loads. */
	double flush, inval, fences, nt;
};

struct bench_results {
	struct bench_result *v;
	size_t n, cap;
	FILE *csv; /* NULL without --csv */
};

/* cxlbench_run.c */
uint64_t bench_obj_bytes(const struct bench_plan *pl);
int bench_scratch_init(struct bench_scratch *s, const struct bench_plan *pl);
void bench_scratch_free(struct bench_scratch *s);
int bench_latency(const struct bench_plan *pl, const struct bench_target *t,
		  const struct bench_scratch *s, struct bench_results *r);
int bench_chase(const struct bench_plan *pl, const struct bench_target *t,
		const struct bench_scratch *s, struct bench_results *r);
int bench_bandwidth(const struct bench_plan *pl, const struct bench_target *t,
		    const struct bench_scratch *s, struct bench_results *r);

/* cxlbench_loaded.c: 'cxlbench loaded' */
int cxlbench_loaded_main(int argc, char **argv);

/* cxlbench_report.c */
int bench_csv_open(struct bench_results *r, const char *path);
int bench_csv_close(struct bench_results *r, const char *path);
int bench_add(struct bench_results *r, const struct bench_result *res);
void bench_print_tables(const struct bench_results *r);
void bench_results_free(struct bench_results *r);
void bench_print_host(void); /* host, CPU model, CPUs, flush instructions */
const char *bench_fmt_size(uint64_t bytes, char *buf, size_t cap);

#endif
