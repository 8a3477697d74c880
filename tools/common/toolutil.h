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

/* Median of v[0..n), n > 0; sorts v. */
double tool_median(double *v, unsigned n);

#endif
