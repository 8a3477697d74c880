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

#include "common/toolutil.h"
#include "ring_bench.h"

static const struct plan full_plan = { 1000, 21, 2000, 1024, 200000 };
static const struct plan quick_plan = { 100, 7, 200, 256, 20000 };

struct args {
	const char *pool; /* NULL: CXL_POOL, else a temporary pool */
	const char *csv;
	enum cxl_coh_mode modes[MAX_MODES];
	unsigned nmodes;
	bool quick;
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
	      "  --csv FILE   also write a CSV row per mode and size\n"
	      "  --quick      fewer iterations (about a second)\n"
	      "  --help       this text\n"
	      "\n"
	      "The hosts use CXL host ids 0 and 1. Other CXL_* variables\n"
	      "configure the attachments as usual (see docs/env.md).\n",
	      f);
}

/* ---- options and the pool ------------------------------------------------ */

static int parse_modes(const char *arg, struct args *a)
{
	static const enum cxl_coh_mode ok[] = {
		CXL_COH_COHERENT,
		CXL_COH_FLUSH,
		CXL_COH_EMULATED,
	};
	const char *s = arg;

	a->nmodes = 0;
	while (*s) {
		size_t n = strcspn(s, ","), i, j;

		for (i = 0; i < MAX_MODES; i++)
			if (n == strlen(cxl_coh_mode_name(ok[i])) &&
			    !strncmp(s, cxl_coh_mode_name(ok[i]), n))
				break;
		if (i == MAX_MODES) {
			fprintf(stderr,
				"ring_bench: --mode '%s': '%.*s' is "
				"not a mode ring_bench runs; use coherent, "
				"flush or emulated, or a comma list of them "
				"(uncached rings behave as in flush mode)\n",
				arg, (int)n, s);
			return -1;
		}
		for (j = 0; j < a->nmodes && a->modes[j] != ok[i]; j++)
			;
		if (j == a->nmodes)
			a->modes[a->nmodes++] = ok[i];
		s += n;
		s += *s == ',';
	}
	if (!a->nmodes) {
		fprintf(stderr, "ring_bench: --mode is empty; give coherent, "
				"flush or emulated, or a comma list\n");
		return -1;
	}
	return 0;
}

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "pool", required_argument, NULL, 'p' },
		{ "csv", required_argument, NULL, 'c' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->modes[a->nmodes++] = CXL_COH_FLUSH;
	a->modes[a->nmodes++] = CXL_COH_EMULATED;
	a->modes[a->nmodes++] = CXL_COH_COHERENT;
	opterr = 0; /* our messages say how to fix the command line */
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_modes(optarg, a))
				return 2;
			break;
		case 'p':
			a->pool = optarg;
			break;
		case 'c':
			a->csv = optarg;
			break;
		case 'q':
			a->quick = true;
			break;
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

/* Environment first (cxl_opts_from_env), then the command line. */
static int setup_opts(const struct args *a, struct cxl_pool_opts *o)
{
	return tool_pool_opts("ring_bench", a->pool, o, tmp_dir,
			      sizeof(tmp_dir));
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
	tool_catch_signals(on_signal);
	bx.pl = a.quick ? &quick_plan : &full_plan;
	if (setup_opts(&a, &bx.opts) ||
	    (a.csv &&
	     !(bx.csv = tool_csv_open("ring_bench", a.csv, csv_header))))
		goto out;
	if (getloadavg(&load, 1) != 1)
		load = -1;
	printf("ring_bench: pool %s (%s), job %s, %s run; %ld online CPUs, "
	       "load average %.2f (both hosts spin: a loaded machine inflates "
	       "latencies)\n",
	       bx.opts.path, tmp_dir[0] ? "temporary" : "existing or created",
	       bx.opts.job, a.quick ? "quick" : "full",
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
	for (unsigned i = 0; i < a.nmodes; i++) {
		struct mode_run *mr = &bx.runs[bx.nruns++];

		mr->mode = a.modes[i];
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
	if (tool_csv_close("ring_bench", &bx.csv, a.csv))
		status = 1;
	else if (a.csv && done)
		printf("\nring_bench: results written to %s\n", a.csv);
	if (done)
		printf("ring_bench: total %.1f s\n",
		       (double)(cxl_now_ns() - t0) / 1e9);
out:
	child_kill();
	tool_csv_close("ring_bench", &bx.csv, a.csv);
	tool_tmp_pool_remove("ring_bench", tmp_dir);
	if (interrupted) {
		fprintf(stderr, "ring_bench: interrupted by signal %d\n",
			(int)interrupted);
		return 128 + interrupted;
	}
	return status;
}
