/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring_bench's parts: the workloads (ring_work.c), the two hosts and the
 * pipe between them (ring_hosts.c), the tables and the CSV
 * (ring_report.c); ring_bench.c holds the command line and main.
 */
#ifndef CXLMPI_RING_BENCH_H
#define CXLMPI_RING_BENCH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cxlshm/cxlshm.h"

#define NCELLS 64u
#define POLL_LINES 2u
#define HEAD_BATCH 16u
#define MIN_CELL 256u
#define MAX_MSG 4096u
#define TARGET_MSG 64u /* the coherence target covers messages up to this */
#define STALL_S 10     /* a peer that makes no progress this long is gone */
#define ACK_TAG UINT32_MAX
#define MAX_MODES 3
#define MAX_BATCHES 64

#define NSIZES 9u

extern const uint32_t sizes[NSIZES];

struct plan {
	unsigned pp_warmup;  /* untimed round trips */
	unsigned pp_batches; /* timed batches (<= MAX_BATCHES); median */
	unsigned pp_rounds;  /* round trips per batch */
	unsigned st_warmup;  /* untimed streamed messages */
	unsigned st_msgs;    /* timed streamed messages */
};

/* One size in one mode, as host 0 assembles it. */
struct result {
	uint32_t size, cell;
	double lat_us;		      /* ping-pong one-way, median */
	double rate;		      /* streamed messages per second */
	struct cxl_coh_counters pp;   /* ping-pong, both hosts */
	uint64_t pp_polls;	      /* empty receives in it, both hosts */
	struct cxl_coh_counters send; /* host 0: sends that were accepted */
	struct cxl_coh_counters full; /* host 0: sends refused, ring full */
	uint64_t send_full;	      /* their number */
	struct cxl_coh_counters recv; /* host 1: successful receives */
	struct cxl_coh_counters poll; /* host 1: receives that found nothing */
	uint64_t polls;		      /* their number */
};

/* What host 1 measured for one size; sent to host 0 through the pipe. */
struct report {
	uint32_t size;
	struct cxl_coh_counters pp, recv, poll;
	uint64_t pp_polls, polls;
};

struct mode_run {
	enum cxl_coh_mode mode;
	const char *insn; /* flush instruction in use */
	bool done;	  /* every size measured */
	struct result res[NSIZES];
};

struct bench {
	struct cxl_pool_opts opts;
	const struct plan *pl;
	struct mode_run runs[MAX_MODES];
	unsigned nruns;
	FILE *csv;
};

/* One host's side of the current test. */
struct ctx {
	cxl_pool *pool;
	const struct plan *pl;
	enum cxl_coh_mode mode;
	int host;
	uint32_t size, cell;
	cxl_ring *tx, *rx;
	char tx_name[CXL_NAME_MAX + 1];
	uint64_t done;	   /* messages moved: progress */
	uint64_t idle;	   /* empty receives and refused sends */
	uint64_t seen;	   /* done at the last progress check */
	uint64_t since_ns; /* when progress was last seen */
};

extern volatile sig_atomic_t interrupted; /* the signal that stops the run */

/* ring_hosts.c: the two hosts */
void on_signal(int sig);
const char *lib_msg(int rc);
int __attribute__((format(printf, 2, 3))) fail(const struct ctx *c,
					       const char *fmt, ...);
int lib_fail(const struct ctx *c, const char *what, int rc);
bool child_exited(int *st);
const char *how_exited(int st, char *buf, size_t cap);
void child_kill(void);
int run_mode(struct bench *bx, struct mode_run *mr);

/* ring_work.c: the measurements on one pair of rings */
uint32_t cell_for(uint32_t size);
int rings_open(struct ctx *c);
int rings_close(struct ctx *c);
int pingpong_host0(struct ctx *c, struct result *r);
int pingpong_host1(struct ctx *c, struct report *rep);
int stream_host0(struct ctx *c, struct result *r);
int stream_host1(struct ctx *c, struct report *rep);

/* ring_report.c: the tables and the CSV */
extern const char csv_header[];
void csv_row(FILE *f, const struct mode_run *mr, const struct plan *pl,
	     const struct result *r);
void print_results(const struct bench *bx);

#endif
