/* SPDX-License-Identifier: BSD-3-Clause */
/* 'cxlbench stream' and 'cxlbench pmem': options, results, reports. */
#ifndef CXLBENCH_STREAM_CMD_H
#define CXLBENCH_STREAM_CMD_H

#include "cxlbench.h"
#include "stream.h"

#define STREAM_MAX_RATIOS 8

/* Options of both subcommands (pmem ignores the placement ones). */
struct stream_args {
	const char *cmd;       /* "stream" or "pmem" */
	struct bench_opts b;   /* --pool, --size, --mode, --csv, --quick */
	const char *pmem_file; /* --pmem-file (pmem) */
	bool advise;	       /* --advise (stream) */
	bool omit_flush;       /* --omit-flush: fault injection for the tests */
	uint64_t n;	       /* --n; 0: from the LLC size */
	unsigned ntimes;       /* --ntimes */
	unsigned rounds;       /* --rounds: passes over the placements */
	unsigned ratios[STREAM_MAX_RATIOS][2]; /* --ratios, DRAM:pool */
	unsigned nratios;
};

/* One placement (stream) or variant (pmem) in one mode. */
struct stream_row {
	char mode[32];	/* "coherent", "flush/clwb", ... */
	char place[16]; /* "DPD", "I1:3"; pmem: "pmemobj", "cxl", "dram" */
	bool persist;	/* pmem: persisted after each kernel */
	char where[ARR_N];
	unsigned rd, rp;
	uint64_t gran;
	double frac[ARR_N];
	bool nt_pool; /* pool-resident results written with streaming stores */
	size_t n;
	unsigned ntimes;
	struct stream_stats st;
	double mbs[K_N];
};

struct stream_rows {
	struct stream_row *v;
	size_t n, cap;
	FILE *csv;
	bool merge; /* a repeated mode and placement keeps the best times */
};

/* stream_cmd.c: the options, pool and frame both subcommands share */
int stream_parse_args(int argc, char **argv, struct stream_args *a);
size_t stream_pick_n(const struct stream_args *a);
int stream_setup_pool(const struct stream_args *a, struct cxl_pool_opts *o,
		      char *tmp_dir, size_t cap, size_t n);
unsigned stream_default_modes(const struct cxl_pool_opts *o);
int stream_attach(const struct cxl_pool_opts *base, enum cxl_coh_mode m,
		  bool mode_set, cxl_pool **p, char *label, size_t cap);

/* cxlbench_stream_out.c */
int stream_rows_add(struct stream_rows *r, const struct stream_row *x);
int stream_csv_open(struct stream_rows *r, const char *path);
int stream_csv_close(struct stream_rows *r, const char *path);
void stream_rows_free(struct stream_rows *r);
void stream_print_placements(const struct stream_rows *r);
void stream_print_advice(const struct stream_rows *r);
void stream_print_pmem(const struct stream_rows *r);

/* One run of 'cxlbench stream' or 'cxlbench pmem': its options, the pool
 * options, the array length, the rows measured, and whether every run
 * validated. */
struct stream_run {
	struct stream_args a;
	struct cxl_pool_opts o;
	struct stream_rows rows;
	size_t n;
	bool valid;
};

/* The frame both subcommands share: options, pool, CSV, the validation
 * verdict and the clean-up around body, which measures and prints (0, or
 * -1 after saying why). Returns the exit status. */
int stream_cmd_main(const char *cmd, int argc, char **argv,
		    int (*body)(struct stream_run *r));

int cxlbench_stream_main(int argc, char **argv);
int cxlbench_pmem_main(int argc, char **argv);

#endif
