/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the benchmark tools (tools/, bench/). */
#ifndef CXLMPI_TOOLUTIL_H
#define CXLMPI_TOOLUTIL_H

#include <stddef.h>
#include <stdio.h>

#include "cxlshm/coherence.h"
#include "cxlshm/pool.h"

/*
 * Make a private directory /dev/shm/<prog>-<pid>.XXXXXX for a temporary
 * pool and point o->path, o->rundir (the library's lock files live there
 * too) and o->create at it. dir receives the directory ("" on failure).
 * Returns 0, or -1 after printing what to do.
 */
int tool_tmp_pool_create(const char *prog, struct cxl_pool_opts *o, char *dir,
			 size_t dirlen);

/* Remove the directory and everything in it; dir becomes "". */
void tool_tmp_pool_remove(const char *prog, char *dir);

/*
 * Options for a benchmark's attachment: the CXL_* environment first, then
 * --pool (pool_arg, may be NULL); with neither, a temporary pool in
 * tmp_dir. Unless CXL_JOB is set, the tool runs in a job of its own,
 * <prog>-<pid>, so that a crashed run's objects are reclaimed with it.
 * Returns 0, or -1 after printing what to do.
 */
int tool_pool_opts(const char *prog, const char *pool_arg,
		   struct cxl_pool_opts *o, char *tmp_dir, size_t dirlen);

/*
 * Report a getopt_long failure (c is ':' for a missing value, else an
 * unknown option) or, with c == 0, a stray argument. Returns 2, the usage
 * exit status.
 */
int tool_usage_error(const char *prog, int c, const char *arg);

/* fn handles SIGINT, SIGTERM and SIGHUP once (a second one kills at
 * once); SIG_DFL restores the defaults. */
void tool_catch_signals(void (*fn)(int));

/* Median of v[0..n), n > 0; sorts v. */
double tool_median(double *v, unsigned n);

/*
 * Create the --csv file path and write header. Returns the file, or NULL
 * after printing what to do.
 */
FILE *tool_csv_open(const char *prog, const char *path, const char *header);

/*
 * Close *f (nothing when NULL) and set it to NULL. Returns 0, or -1 after
 * printing what to do when a write or the close failed.
 */
int tool_csv_close(const char *prog, FILE **f, const char *path);

/* acc += after - before, counter by counter (inline: timed loops use it) */
static inline void tool_coh_add_delta(struct cxl_coh_counters *acc,
				      const struct cxl_coh_counters *after,
				      const struct cxl_coh_counters *before)
{
	acc->flush_lines += after->flush_lines - before->flush_lines;
	acc->inval_lines += after->inval_lines - before->inval_lines;
	acc->fences += after->fences - before->fences;
	acc->nt_stores += after->nt_stores - before->nt_stores;
	acc->nt_loads += after->nt_loads - before->nt_loads;
	acc->nt_lines += after->nt_lines - before->nt_lines;
}

#endif
