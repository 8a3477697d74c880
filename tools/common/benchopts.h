/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The options every pool benchmark takes (cxlbench and its subcommands,
 * bench/ring_bench), parsed and checked in one place, and the pool they
 * measure on:
 *   --pool PATH   an existing pool (default: CXL_POOL, else a temporary
 *                 pool in /dev/shm, removed at exit)
 *   --size SIZE   size of a pool the tool creates
 *   --mode LIST   coherence modes, a comma list
 *   --csv FILE    also write results as CSV rows
 *   --quick       fewer and smaller iterations
 * A program lists BENCH_LONGOPTS in its getopt_long table and offers each
 * option to bench_opt_take before its own.
 */
#ifndef CXLMPI_BENCHOPTS_H
#define CXLMPI_BENCHOPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cxlshm/pool.h"

struct bench_opts {
	const char *pool; /* --pool; NULL: CXL_POOL or a temporary pool */
	uint64_t size;	  /* --size; 0: not given */
	unsigned modes;	  /* --mode: bits 1 << enum cxl_coh_mode; 0: unset */
	const char *csv;  /* --csv; NULL: none */
	bool quick;	  /* --quick */
};

/* getopt_long entries of the common options (their values are below
 * 0x100, so a program's own options use other letters) */
#define BENCH_LONGOPTS                                    \
	{ "pool", required_argument, NULL, 'p' },         \
		{ "size", required_argument, NULL, 's' }, \
		{ "mode", required_argument, NULL, 'm' }, \
		{ "csv", required_argument, NULL, 'c' },  \
	{                                                 \
		"quick", no_argument, NULL, 'q'           \
	}

/* every coherence mode (the modes mask of bench_opt_take) */
#define BENCH_ALL_MODES                                 \
	(1u << CXL_COH_COHERENT | 1u << CXL_COH_FLUSH | \
	 1u << CXL_COH_UNCACHED | 1u << CXL_COH_EMULATED)

/*
 * Take option c (a getopt_long result) with value arg into b if it is a
 * common one. modes: the coherence modes prog runs. Returns 1 if taken,
 * 0 if c is not a common option, -1 after printing why the value is bad
 * and what to give instead.
 */
int bench_opt_take(const char *prog, int c, const char *arg, unsigned modes,
		   struct bench_opts *b);

/* A number for option opt from lo to hi; -1 after printing what to give. */
int bench_parse_uint(const char *prog, const char *opt, const char *arg,
		     uint64_t lo, uint64_t hi, uint64_t *out);

/*
 * The attachment options: the CXL_* environment, then --pool, else a
 * temporary pool in tmp_dir of tmp_size bytes and tmp_capacity objects
 * (0: the library's default; CXL_POOL_SIZE and CXL_ARENA_CAPACITY take
 * precedence), then --size.
 * Returns 0, or -1 after printing what to do.
 */
int bench_pool_opts(const char *prog, const struct bench_opts *b,
		    uint64_t tmp_size, unsigned tmp_capacity,
		    struct cxl_pool_opts *o, char *tmp_dir, size_t dirlen);

#endif
