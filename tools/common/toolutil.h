/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the benchmark tools (tools/, bench/). */
#ifndef CXLMPI_TOOLUTIL_H
#define CXLMPI_TOOLUTIL_H

#include <stddef.h>

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

/* Median of v[0..n), n > 0; sorts v. */
double tool_median(double *v, unsigned n);

#endif
