/* SPDX-License-Identifier: BSD-3-Clause */
#include "benchopts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlshm/cxlshm.h"
#include "toolutil.h"

/* a pool must be a multiple of 2 MiB; the tools need at least 16 MiB */
#define MIN_POOL_SIZE (16ull << 20)

/* "coherent, flush or emulated": the names of the modes in mask */
static void mode_names(unsigned mask, char *buf, size_t cap)
{
	unsigned n = (unsigned)__builtin_popcount(mask), i = 0;
	size_t len = 0;

	buf[0] = '\0';
	for (int m = CXL_COH_COHERENT; m <= CXL_COH_EMULATED; m++) {
		if (!(mask & (1u << m)))
			continue;
		i++;
		len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0,
					"%s%s",
					i == 1	? ""
					: i < n ? ", "
						: " or ",
					cxl_coh_mode_name(m));
		if (len >= cap)
			return;
	}
}

static int parse_modes(const char *prog, const char *arg, unsigned ok,
		       unsigned *mask)
{
	char names[64];
	const char *s = arg;

	mode_names(ok, names, sizeof(names));
	*mask = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		int m;

		for (m = CXL_COH_COHERENT; m <= CXL_COH_EMULATED; m++) {
			const char *name = cxl_coh_mode_name(m);

			if (n == strlen(name) && !strncmp(s, name, n))
				break;
		}
		if (m > CXL_COH_EMULATED || !(ok & (1u << m))) {
			fprintf(stderr,
				"%s: --mode '%s': '%.*s' is not a coherence "
				"mode %s runs; use %s, or a comma list of "
				"them\n",
				prog, arg, (int)n, s, prog, names);
			return -1;
		}
		*mask |= 1u << m;
		s += n;
		s += *s == ',';
	}
	if (!*mask) {
		fprintf(stderr,
			"%s: --mode is empty; give %s, or a comma list\n", prog,
			names);
		return -1;
	}
	return 0;
}

int bench_parse_uint(const char *prog, const char *opt, const char *arg,
		     uint64_t lo, uint64_t hi, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*arg < '0' || *arg > '9' || *end || errno || v < lo || v > hi) {
		fprintf(stderr,
			"%s: %s '%s' is invalid; give a number from %llu to "
			"%llu\n",
			prog, opt, arg, (unsigned long long)lo,
			(unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

int bench_opt_take(const char *prog, int c, const char *arg, unsigned modes,
		   struct bench_opts *b)
{
	switch (c) {
	case 'p':
		b->pool = arg;
		return 1;
	case 's':
		if (cxl_parse_size(arg, &b->size) != CXL_OK) {
			fprintf(stderr,
				"%s: --size '%s' is not a size; use a number "
				"with an optional K/M/G suffix, e.g. 512M\n",
				prog, arg);
			return -1;
		}
		if (b->size < MIN_POOL_SIZE || b->size % (2u << 20)) {
			fprintf(stderr,
				"%s: --size %s: a pool must be a multiple of "
				"2 MiB, and %s needs at least 16 MiB; e.g. "
				"--size 256M\n",
				prog, arg, prog);
			return -1;
		}
		return 1;
	case 'm':
		return parse_modes(prog, arg, modes, &b->modes) ? -1 : 1;
	case 'c':
		b->csv = arg;
		return 1;
	case 'q':
		b->quick = true;
		return 1;
	default:
		return 0;
	}
}

int bench_pool_opts(const char *prog, const struct bench_opts *b,
		    uint64_t tmp_size, unsigned tmp_capacity,
		    struct cxl_pool_opts *o, char *tmp_dir, size_t dirlen)
{
	if (tool_pool_opts(prog, b->pool, o, tmp_dir, dirlen))
		return -1;
	/* a temporary pool is sized for the tool, unless the environment
	 * asks otherwise */
	if (tmp_dir[0] && tmp_size && !getenv("CXL_POOL_SIZE"))
		o->size = tmp_size;
	if (tmp_dir[0] && tmp_capacity && !getenv("CXL_ARENA_CAPACITY"))
		o->capacity = tmp_capacity;
	if (b->size)
		o->size = b->size;
	return 0;
}
