/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helpers: assertions that report and count, throw-away pools in a
 * private run directory, and per-process option setup for emulated hosts.
 */
#ifndef CXLMPI_TESTUTIL_H
#define CXLMPI_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cxlshm/cxlshm.h"

extern int t_failed, t_passed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			t_passed++;                                            \
		} else {                                                       \
			t_failed++;                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
		}                                                              \
	} while (0)

/* Expect a return code; prints cxl_errmsg() on mismatch. */
#define CHECK_RC(expr, want)                                                  \
	do {                                                                  \
		int rc_ = (expr);                                             \
		if (rc_ == (want)) {                                          \
			t_passed++;                                           \
		} else {                                                      \
			t_failed++;                                           \
			fprintf(stderr,                                       \
				"%s:%d: %s returned %s, want %s (%s)\n",      \
				__FILE__, __LINE__, #expr, cxl_strerror(rc_), \
				cxl_strerror(want), cxl_errmsg());            \
		}                                                             \
	} while (0)

/* Abort the test program: for setup failures that make the rest moot. */
#define REQUIRE(cond)                                                       \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: REQUIRE failed: %s (%s)\n", \
				__FILE__, __LINE__, #cond, cxl_errmsg());   \
			exit(2);                                            \
		}                                                           \
	} while (0)

/* A throw-away pool: file + run directory under /dev/shm. */
struct tpool {
	char dir[128];
	char path[160];
};

/* Make the directory; the pool file itself is created on first attach. */
void tpool_init(struct tpool *tp, const char *tag);
/* Remove the pool file and everything in the run directory. */
void tpool_cleanup(struct tpool *tp);

/* Options for the test pool: small capacity, given mode and host id. */
void topts(struct cxl_pool_opts *o, const struct tpool *tp,
	   enum cxl_coh_mode mode, uint32_t host, uint64_t size);

/* Parse "--mode coherent|flush|emulated" from argv (default coherent). */
enum cxl_coh_mode targ_mode(int argc, char **argv);
long targ_long(int argc, char **argv, const char *flag, long def);

/* Fork n children running fn(i, arg); returns the number that failed. */
int run_children(int n, int (*fn)(int i, void *arg), void *arg);

/* Fork two children, 0 and 1, running fn(i, to_peer, from_peer, arg)
 * with a pipe each way between them (each holds only its own ends, so
 * the other's exit reads as EOF); returns the number that failed. */
int run_pair(int (*fn)(int i, int to_peer, int from_peer, void *arg),
	     void *arg);

/*
 * A multi-host test (tests/mp): procs processes on hosts emulated hosts
 * (process i on host i % hosts) sharing one pool, each doing `rounds` of
 * something. mp_group_args reads --mode, --procs, --hosts and --rounds
 * (defaults given) and makes the pool's directory; mp_group_run runs fn in
 * procs children, checks that all pass, prints
 * "<procs> processes on <hosts> hosts, <rounds> <what> (<mode>): T s"
 * and removes the pool.
 */
struct mp_group {
	enum cxl_coh_mode mode;
	int procs, hosts, rounds;
	struct tpool tp;
};
void mp_group_args(struct mp_group *g, int argc, char **argv, const char *tag,
		   int procs, int hosts, int rounds);
void mp_group_run(struct mp_group *g, int (*fn)(int i, void *arg),
		  const char *what);

/* Print "N passed, N failed" and return the exit status. */
int t_report(const char *name);

uint64_t t_rand(uint64_t *state);

/* Tests of the network link: its tcp on loopback, unless the environment
 * names an interface. Tests beside them (cxlrun) add and remove
 * interfaces, and a link bound to one of those loses its connections. */
void t_net_on_loopback(void);

#endif
