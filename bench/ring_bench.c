/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring_bench: message passing through libcxlshm rings between two emulated
 * hosts, this process (host 0) and a forked child (host 1), which attach
 * the same pool in the same coherence mode.
 *
 * For every mode and message size (0 B .. 4 KiB) the hosts create one ring
 * each, the one they send on, in cells just large enough for the message,
 * and open the other's. On that pair of rings they measure:
 *   1. ping-pong: one-way latency = round trip / 2, the median of batches;
 *   2. streaming: host 0 sends back to back, host 1 receives; messages/s;
 *   3. coherence operations per message: each host reads
 *      cxl_coh_counters_get() around its own timed loop. The streaming
 *      receiver also reads them after every recv call, which splits the
 *      cost of a receive from that of the polls that found nothing.
 * Host 1 sends its counts to host 0 over a pipe; host 0 prints the tables.
 *
 * Without --pool (and CXL_POOL) the pool is a temporary file in a private
 * directory on /dev/shm that is also the run directory (lock files); the
 * directory is removed at exit.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/benchopts.h"
#include "common/toolutil.h"
#include "ring_bench.h"

static const struct plan full_plan = { 1000, 21, 2000, 1024, 200000 };
static const struct plan quick_plan = { 100, 7, 200, 256, 20000 };

struct args {
	struct bench_opts b; /* --pool, --size, --mode, --csv, --quick */
};

/* the modes ring_bench runs, in the order it runs them */
static const enum cxl_coh_mode mode_order[MAX_MODES] = {
	CXL_COH_FLUSH,
	CXL_COH_EMULATED,
	CXL_COH_COHERENT,
};

static char tmp_dir[128]; /* temporary pool directory, "" when none */

static void usage(FILE *f)
{
	fputs("usage: ring_bench [options]\n"
	      "\n"
	      "Message passing through libcxlshm rings between two\n"
	      "emulated hosts (this process and a forked child) for\n"
	      "messages of 0 B to 4 KiB: ping-pong one-way latency,\n"
	      "streaming throughput, and the coherence operations\n"
	      "(flushed and invalidated lines, fences, non-temporal\n"
	      "stores) each message costs the sender and the receiver.\n"
	      "\n"
	      "  --mode LIST  coherent, flush, emulated, or a comma list\n"
	      "               (default: flush,emulated,coherent)\n"
	      "  --pool PATH  pool to use (default: CXL_POOL, else a\n"
	      "               temporary 16 MiB pool in /dev/shm,\n"
	      "               removed at exit)\n"
	      "  --size SIZE  size of a pool ring_bench creates, e.g. 64M\n"
	      "  --csv FILE   also write a CSV row per mode and size\n"
	      "  --quick      fewer iterations (about a second)\n"
	      "  --help       this text\n"
	      "\n"
	      "The hosts use CXL host ids 0 and 1. Other CXL_* variables\n"
	      "configure the attachments as usual (see docs/env.md).\n",
	      f);
}

/* ---- options and the pool ------------------------------------------------ */

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		BENCH_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	unsigned ok = 0;

	memset(a, 0, sizeof(*a));
	for (unsigned i = 0; i < MAX_MODES; i++)
		ok |= 1u << mode_order[i];
	opterr = 0; /* our messages say how to fix the command line */
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		/* uncached rings behave as in flush mode: not offered */
		int took = bench_opt_take("ring_bench", c, optarg, ok, &a->b);

		if (took < 0)
			return 2;
		if (took)
			continue;
		switch (c) {
		case 'h':
			usage(stdout);
			return 1;
		default:
			return tool_usage_error("ring_bench", c,
						argv[optind - 1]);
		}
	}
	if (optind < argc)
		return tool_usage_error("ring_bench", 0, argv[optind]);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench bx = { 0 };
	struct args a;
	uint64_t t0 = cxl_now_ns();
	double load;
	int rc, status = 1;
	bool failed = false;
	unsigned done = 0;

	if ((rc = parse_args(argc, argv, &a)))
		return rc == 1 ? 0 : 2;
	if (!a.b.modes)
		a.b.modes = ~0u;
	tool_catch_signals(on_signal);
	bx.pl = a.b.quick ? &quick_plan : &full_plan;
	/* a temporary pool: the library's default size and capacity */
	if (bench_pool_opts("ring_bench", &a.b, 0, 0, &bx.opts, tmp_dir,
			    sizeof(tmp_dir)) ||
	    (a.b.csv &&
	     !(bx.csv = tool_csv_open("ring_bench", a.b.csv, csv_header))))
		goto out;
	if (getloadavg(&load, 1) != 1)
		load = -1;
	printf("ring_bench: pool %s (%s), job %s, %s run; %ld online CPUs, "
	       "load average %.2f (both hosts spin: a loaded machine inflates "
	       "latencies)\n",
	       bx.opts.path, tmp_dir[0] ? "temporary" : "existing or created",
	       bx.opts.job, a.b.quick ? "quick" : "full",
	       sysconf(_SC_NPROCESSORS_ONLN), load);
	printf("ring_bench: host 0 = this process, host 1 = a forked child; "
	       "one ring per direction, %u cells, poll_lines %u, head_batch "
	       "%u; cell = smallest multiple of 64 B >= %u B that holds the "
	       "message\n",
	       NCELLS, POLL_LINES, HEAD_BATCH, MIN_CELL);
	printf("ring_bench: per mode and size: ping-pong %u warm-up + %u x "
	       "%u round trips; streaming %u warm-up + %u timed messages\n",
	       bx.pl->pp_warmup, bx.pl->pp_batches, bx.pl->pp_rounds,
	       bx.pl->st_warmup, bx.pl->st_msgs);
	for (unsigned i = 0; i < MAX_MODES; i++) {
		struct mode_run *mr;

		if (!(a.b.modes & 1u << mode_order[i]))
			continue;
		mr = &bx.runs[bx.nruns++];
		mr->mode = mode_order[i];
		if (run_mode(&bx, mr)) {
			failed = true;
			break;
		}
		done += mr->done;
	}
	if (done)
		print_results(&bx);
	else if (!failed)
		fprintf(stderr, "ring_bench: no mode was measured (see "
				"above); pick another --mode\n");
	status = failed || !done;
	if (tool_csv_close("ring_bench", &bx.csv, a.b.csv))
		status = 1;
	else if (a.b.csv && done)
		printf("\nring_bench: results written to %s\n", a.b.csv);
	if (done)
		printf("ring_bench: total %.1f s\n",
		       (double)(cxl_now_ns() - t0) / 1e9);
out:
	child_kill();
	tool_csv_close("ring_bench", &bx.csv, a.b.csv);
	tool_tmp_pool_remove("ring_bench", tmp_dir);
	if (interrupted) {
		fprintf(stderr, "ring_bench: interrupted by signal %d\n",
			(int)interrupted);
		return 128 + interrupted;
	}
	return status;
}
