/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coherence_floor: the least a message can cost in each coherence mode.
 *
 * Two emulated hosts (this process, host 0, and a forked child, host 1,
 * each bound to a CPU of its own) pass messages through one pool object
 * with the two smallest protocols the coherence rules allow, and nothing
 * else: no ring, header, matching or credits in the ping-pong.
 *  - flag: the sender copies the data into the pool (cxl_copy_to_pool:
 *    write-back, or streaming stores from 4 KiB), fences once and stores
 *    a sequence number into a flag line; the receiver polls the flag,
 *    then copies the data out (one invalidation sweep, one fence).
 *  - stamped: every line carries the sequence number and 56 bytes; the
 *    sender writes and writes back the lines and fences once; the
 *    receiver sweeps line 0 until it holds the number, then the rest, and
 *    accepts each line by its stamp (the library's rings work so).
 * What remains is the price of moving the lines, which any transport over
 * the pool pays. In the coherent mode both are a plain copy in and a copy
 * out, which is what MPICH's shared memory does; the flush mode's excess
 * over it is what software coherence adds on this machine, whatever the
 * protocol above it. The receiver checks the first and last word of every
 * message.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/benchopts.h"
#include "common/toolutil.h"
#include "cxlshm/cxlshm.h"

#define PROG "coherence_floor"
#define MAX_SIZE (1u << 20)
#define STAMP_PAYLOAD (CXL_LINE - 8) /* a stamped line: stamp + 56 bytes */
/* room for MAX_SIZE bytes in stamped lines */
#define DATA_MAX (((MAX_SIZE + STAMP_PAYLOAD - 1) / STAMP_PAYLOAD) * CXL_LINE)
#define NSLOTS 32u	/* streaming: messages in flight */
#define CREDIT_EVERY 8u /* streaming: the receiver publishes its count */
#define STALL_NS 10000000000ull /* a peer silent this long is gone */
#define MAX_TRIALS 16u

static const uint32_t sizes[] = { 8,	64,    256,   512,    1024,   2048,
				  4096, 16384, 65536, 262144, 1048576 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static const enum cxl_coh_mode mode_order[] = { CXL_COH_COHERENT, CXL_COH_FLUSH,
						CXL_COH_UNCACHED,
						CXL_COH_EMULATED };
#define NMODES (sizeof(mode_order) / sizeof(mode_order[0]))

struct plan {
	unsigned pp_warmup, pp_trials, pp_rounds;
	unsigned st_warmup, st_trials, st_msgs;
};

static const struct plan full_plan = { 2000, 7, 4000, 4000, 5, 40000 };
static const struct plan quick_plan = { 200, 3, 400, 400, 3, 2000 };
/* Sizes above this move as many bytes per trial as it does, not as many
 * messages (a trial of 40000 messages of 1 MiB would take seconds). */
#define SCALE_FROM 65536u

/*
 * The object: two ping-pong buffers (one per direction), then the
 * streaming slots and the receiver's count. Every flag and count has a
 * line of its own, written by one host only.
 */
struct msgbuf {
	uint64_t flag; /* sequence number of the message in data (flag) */
	uint8_t pad[CXL_LINE - 8];
	uint8_t data[DATA_MAX];
};

struct floor_obj {
	struct msgbuf lane[2]; /* lane[h]: written by host h */
	struct msgbuf slot[NSLOTS];
	uint64_t taken; /* streaming: messages host 1 has copied out */
	uint8_t pad[CXL_LINE - 8];
};

struct result {
	double lat_us;	/* ping-pong one-way, median of the trials */
	double mbps;	/* streaming, best of the trials */
	double flushed; /* per message, both sides (ping-pong) */
	double invalidated, fences, streamed;
	double cost_us; /* cost model's charge per message (both sides) */
};

struct host {
	cxl_pool *pool;
	struct floor_obj *o;
	int id;
	uint64_t seq; /* ping-pong messages sent by each side so far */
};

static volatile sig_atomic_t interrupted;
static bool mutate; /* --mutate: the flag protocol reads without a sweep */
static uint8_t txbuf[MAX_SIZE] __attribute__((aligned(64)));
static uint8_t rxbuf[MAX_SIZE] __attribute__((aligned(64)));
static char tmp_dir[128];
static pid_t child = -1;

static void on_signal(int sig)
{
	interrupted = sig;
}

static const char *lib_msg(int rc)
{
	const char *m = cxl_errmsg();

	return m && *m ? m : cxl_strerror(rc);
}

/*
 * Called every few thousand empty looks: -1 after a signal, or once the
 * other host has been silent for STALL_NS since the first call (*since,
 * 0 before it).
 */
static int stalled(const struct host *h, uint64_t *since)
{
	if (interrupted)
		return -1;
	if (!*since) {
		*since = cxl_now_ns();
		return 0;
	}
	if (cxl_now_ns() - *since <= STALL_NS)
		return 0;
	fprintf(stderr,
		PROG ": host %d: the other host sent nothing for %llu s; see "
		     "its message above\n",
		h->id, STALL_NS / 1000000000ull);
	return -1;
}

/*
 * Spin until the pool word *w (written by the other host) reaches want.
 * Empty looks are booked as polls. -1 once the other host has been
 * silent for STALL_NS or a signal came.
 */
static int await(struct host *h, const uint64_t *w, uint64_t want)
{
	uint64_t since = 0;

	for (unsigned n = 1;; n++) {
		struct cxl_coh_counters before;

		cxl_coh_counters_get(&before);
		if (cxl_nt_load64(h->pool, w) >= want)
			return 0;
		cxl_coh_count_poll(&before);
		if (n % 4096 == 0 && stalled(h, &since))
			return -1;
	}
}

enum proto {
	FLAG,
	STAMPED,
	NPROTOS
};

static const char *const proto_name[NPROTOS] = { "flag", "stamped" };

static uint32_t stamped_lines(uint32_t n)
{
	return (n + STAMP_PAYLOAD - 1) / STAMP_PAYLOAD; /* n >= 8: sizes[] */
}

/*
 * Send n bytes of txbuf as message seq.
 * flag: the data, one fence, then the flag (3 fences a message with the
 * receiver's sweep and its successful flag load).
 * stamped: each line carries seq in its first word and 56 bytes; the
 * lines are written from the last to the first and written back, then
 * one fence. No flag: the receiver accepts a line by its stamp.
 */
static void send_msg(struct host *h, enum proto pr, uint64_t *flag,
		     uint8_t *data, uint32_t n, uint64_t seq)
{
	uint32_t lines;

	/* the receiver checks the first and the last word (sizes >= 8) */
	memcpy(txbuf, &seq, 8);
	memcpy(txbuf + n - 8, &seq, 8);
	if (pr == FLAG) {
		cxl_copy_to_pool(h->pool, data, txbuf, n);
		/* orders the data's write-back before the flag */
		cxl_wfence(h->pool);
		cxl_nt_store64(h->pool, flag, seq);
		return;
	}
	lines = stamped_lines(n);
	for (uint32_t l = lines; l-- > 0;) {
		uint8_t *line = data + (size_t)l * CXL_LINE;
		size_t off = (size_t)l * STAMP_PAYLOAD;
		size_t len = n - off < STAMP_PAYLOAD ? n - off : STAMP_PAYLOAD;

		memcpy(line + 8, txbuf + off, len);
		/* the stamp after the payload of its line (release) */
		__atomic_store_n((uint64_t *)line, seq, __ATOMIC_RELEASE);
	}
	cxl_flush(h->pool, data, (size_t)lines * CXL_LINE);
	/* the write-backs complete before anything this host stores next:
	 * one fence per message, as the library's rings by default */
	cxl_wfence(h->pool);
}

/* Message seq arrived whole: its first and last words are seq. */
static int check(const struct host *h, enum proto pr, uint32_t n, uint64_t seq)
{
	uint64_t first, last;

	memcpy(&first, rxbuf, 8);
	memcpy(&last, rxbuf + n - 8, 8);
	if (first == seq && last == seq)
		return 0;
	fprintf(stderr,
		PROG ": host %d, %s protocol, %s mode: %u-byte message %llu "
		     "arrived with words %llu and %llu: stale data, the "
		     "protocol misses a write-back or an invalidation\n",
		h->id, proto_name[pr],
		cxl_coh_mode_name(cxl_pool_mode(h->pool)), n,
		(unsigned long long)seq, (unsigned long long)first,
		(unsigned long long)last);
	return -1;
}

/*
 * Receive message seq of n bytes into rxbuf. flag: poll the flag, then
 * one sweep and the copy. stamped: one sweep over the lines not yet seen
 * (over line 0 only after an empty look, as the rings do), then the
 * stamps; the payload is copied once every line holds seq.
 */
static int recv_msg(struct host *h, enum proto pr, const uint64_t *flag,
		    const uint8_t *data, uint32_t n, uint64_t seq)
{
	uint32_t lines = stamped_lines(n), ready = 0;
	bool empty = false;
	uint64_t since = 0;

	if (pr == FLAG) {
		if (await(h, flag, seq))
			return -1;
		/* one invalidation sweep, one fence, then the copy */
		if (!mutate)
			cxl_copy_from_pool(h->pool, rxbuf, data, n);
		else /* --mutate: the sweep left out */
			memcpy(rxbuf, data, n);
		return check(h, pr, n, seq);
	}
	for (unsigned k = 1; ready < lines; k++) {
		struct cxl_coh_counters before;
		uint32_t end = empty ? ready + 1 : lines;

		cxl_coh_counters_get(&before);
		cxl_inval(h->pool, data + (size_t)ready * CXL_LINE,
			  (size_t)(end - ready) * CXL_LINE);
		/* only lines this sweep covered: a line evicted before the
		 * sender wrote it may have been fetched again since */
		while (ready < end &&
		       __atomic_load_n(
			       (const uint64_t *)(data +
						  (size_t)ready * CXL_LINE),
			       __ATOMIC_ACQUIRE) == seq)
			ready++;
		empty = !ready;
		if (empty) /* nothing yet: the next look sweeps line 0 only */
			cxl_coh_count_poll(&before);
		if (ready < lines && k % 4096 == 0 && stalled(h, &since))
			return -1;
	}
	for (uint32_t l = 0; l < lines; l++) {
		size_t off = (size_t)l * STAMP_PAYLOAD;
		size_t len = n - off < STAMP_PAYLOAD ? n - off : STAMP_PAYLOAD;

		memcpy(rxbuf + off, data + (size_t)l * CXL_LINE + 8, len);
	}
	return check(h, pr, n, seq);
}

static int pingpong(struct host *h, enum proto pr, uint32_t n, unsigned rounds)
{
	struct msgbuf *mine = &h->o->lane[h->id], *theirs = &h->o->lane[!h->id];

	for (unsigned r = 0; r < rounds; r++) {
		uint64_t seq = ++h->seq;

		if (h->id == 0)
			send_msg(h, pr, &mine->flag, mine->data, n, seq);
		if (recv_msg(h, pr, &theirs->flag, theirs->data, n, seq))
			return -1;
		if (h->id == 1)
			send_msg(h, pr, &mine->flag, mine->data, n, seq);
	}
	return 0;
}

/* Host 0 streams msgs messages; host 1 copies them out. */
static int stream(struct host *h, enum proto pr, uint32_t n, uint64_t first,
		  unsigned msgs)
{
	struct floor_obj *o = h->o;
	uint64_t taken = first;

	for (uint64_t i = first; i < first + msgs; i++) {
		struct msgbuf *s = &o->slot[i % NSLOTS];

		if (h->id == 0) {
			if (i - taken >= NSLOTS) {
				/* the ring looks full: reload the count */
				if (await(h, &o->taken, i - NSLOTS + 1))
					return -1;
				taken = cxl_nt_load64(h->pool, &o->taken);
			}
			send_msg(h, pr, &s->flag, s->data, n, i + 1);
			continue;
		}
		if (recv_msg(h, pr, &s->flag, s->data, n, i + 1))
			return -1;
		if ((i + 1) % CREDIT_EVERY == 0 || i + 1 == first + msgs)
			cxl_nt_store64(h->pool, &o->taken, i + 1);
	}
	/* host 0: the last message has been copied out */
	return h->id == 0 ? await(h, &o->taken, first + msgs) : 0;
}

static double mean(uint64_t a, uint64_t b, uint64_t msgs)
{
	return msgs ? (double)(a - b) / (double)msgs : 0;
}

/* One size in one protocol; host 0 times and counts, host 1 mirrors. */
static int run_one(struct host *h, const struct plan *pl, enum proto pr,
		   uint32_t n, uint64_t *next, struct result *r)
{
	double lat[MAX_TRIALS];
	struct cxl_coh_counters c0, c1;
	uint64_t msgs = (uint64_t)pl->pp_trials * pl->pp_rounds;

	memset(r, 0, sizeof(*r));
	if (pingpong(h, pr, n, pl->pp_warmup))
		return -1;
	cxl_coh_counters_get(&c0);
	for (unsigned t = 0; t < pl->pp_trials; t++) {
		uint64_t t0 = cxl_now_ns();

		if (pingpong(h, pr, n, pl->pp_rounds))
			return -1;
		lat[t] = (double)(cxl_now_ns() - t0) / 1e3 /
			 (2.0 * pl->pp_rounds);
	}
	cxl_coh_counters_get(&c1);
	/* host 0 did one send and one receive per round trip */
	r->lat_us = tool_median(lat, pl->pp_trials);
	r->flushed = mean(c1.flush_lines, c0.flush_lines, msgs);
	r->streamed = mean(c1.nt_lines, c0.nt_lines, msgs);
	r->invalidated = mean(c1.inval_lines - c1.poll_inval_lines,
			      c0.inval_lines - c0.poll_inval_lines, msgs);
	r->fences = mean(c1.fences - c1.poll_fences, c0.fences - c0.poll_fences,
			 msgs);
	r->cost_us = mean(c1.cost_ns, c0.cost_ns, msgs) / 1e3;

	if (stream(h, pr, n, *next, pl->st_warmup))
		return -1;
	*next += pl->st_warmup;
	for (unsigned t = 0; t < pl->st_trials; t++) {
		uint64_t t0 = cxl_now_ns();
		double mbps;

		if (stream(h, pr, n, *next, pl->st_msgs))
			return -1;
		*next += pl->st_msgs;
		mbps = (double)n * pl->st_msgs * 1e3 /
		       (double)(cxl_now_ns() - t0);
		if (mbps > r->mbps)
			r->mbps = mbps;
	}
	return 0;
}

static unsigned at_least(unsigned v, unsigned lo)
{
	return v > lo ? v : lo;
}

/* The plan for messages of n bytes: above SCALE_FROM, the counts shrink
 * with the size (streaming still fills every slot twice per trial). */
static struct plan plan_for(const struct plan *pl, uint32_t n)
{
	struct plan p = *pl;
	unsigned f = n > SCALE_FROM ? n / SCALE_FROM : 1;

	p.pp_warmup = at_least(pl->pp_warmup / f, 4);
	p.pp_rounds = at_least(pl->pp_rounds / f, 16);
	p.st_warmup = at_least(pl->st_warmup / f, NSLOTS);
	p.st_msgs = at_least(pl->st_msgs / f, 2 * NSLOTS);
	return p;
}

/* Every size of one mode, the protocols alternated size by size. */
static int run_sizes(struct host *h, const struct plan *pl,
		     struct result (*res)[NSIZES])
{
	uint64_t next = 0; /* streaming sequence numbers */

	for (unsigned i = 0; i < NSIZES; i++) {
		struct plan p = plan_for(pl, sizes[i]);

		for (unsigned pr = 0; pr < NPROTOS; pr++)
			if (run_one(h, &p, (enum proto)pr, sizes[i], &next,
				    &res[pr][i]))
				return -1;
	}
	return 0;
}

/*
 * Host id's process on the id-th CPU it may run on, so that the two hosts
 * spin on two CPUs and the scheduler does not move them (unbound, runs
 * of the same binary here differed by up to 10x in the coherent mode).
 */
static cpu_set_t allowed; /* the CPUs the tool was started on */
static bool have_allowed;

static void bind_cpu(int id)
{
	cpu_set_t one;
	int seen = 0;

	if (!have_allowed || CPU_COUNT(&allowed) < 2)
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || seen++ != id)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
		return;
	}
}

static int attach(const struct cxl_pool_opts *base, enum cxl_coh_mode mode,
		  int id, struct host *h)
{
	struct cxl_pool_opts o = *base;
	int rc;

	o.mode = mode;
	o.mode_set = 1;
	o.host_id = id;
	memset(h, 0, sizeof(*h));
	h->id = id;
	if ((rc = cxl_pool_attach(&o, &h->pool))) {
		fprintf(stderr,
			PROG ": host %d cannot attach %s in the %s mode: %s\n",
			id, o.path, cxl_coh_mode_name(mode), lib_msg(rc));
		return -1;
	}
	return 0;
}

static int child_main(const struct cxl_pool_opts *base, enum cxl_coh_mode m,
		      const char *name, const struct plan *pl)
{
	struct result res[NPROTOS][NSIZES];
	struct cxl_obj obj;
	struct host h;
	int rc, ret;

	bind_cpu(1);
	if (attach(base, m, 1, &h))
		return 1;
	if ((rc = cxl_obj_open(h.pool, name, &obj))) {
		fprintf(stderr, PROG ": host 1 cannot open %s: %s\n", name,
			lib_msg(rc));
		cxl_pool_detach(h.pool);
		return 1;
	}
	h.o = obj.ptr;
	ret = run_sizes(&h, pl, res);
	cxl_obj_close(&obj);
	cxl_pool_detach(h.pool);
	return ret ? 1 : 0;
}

/* One mode: the object, host 1, every size. */
static int run_mode(const struct cxl_pool_opts *base, enum cxl_coh_mode m,
		    const struct plan *pl, struct result (*res)[NSIZES])
{
	char name[64];
	struct cxl_obj obj;
	struct host h;
	int rc, st, ret = -1;

	if (attach(base, m, 0, &h))
		return -1;
	snprintf(name, sizeof(name), "coherence_floor.%ld", (long)getpid());
	if ((rc = cxl_obj_create(h.pool, name, sizeof(struct floor_obj),
				 CXL_OBJ_ZERO, &obj))) {
		fprintf(stderr,
			PROG ": cannot create %s (%zu bytes) in %s: %s; "
			     "give a larger pool (--size)\n",
			name, sizeof(struct floor_obj), base->path,
			lib_msg(rc));
		cxl_pool_detach(h.pool);
		return -1;
	}
	h.o = obj.ptr;
	fflush(NULL);
	child = fork();
	if (child < 0) {
		fprintf(stderr, PROG ": cannot fork host 1: %s\n",
			strerror(errno));
	} else if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(child_main(base, m, name, pl));
	} else {
		ret = run_sizes(&h, pl, res);
		if (ret)
			kill(child, SIGKILL);
		if (waitpid(child, &st, 0) == child &&
		    (!WIFEXITED(st) || WEXITSTATUS(st)))
			ret = -1;
		child = -1;
	}
	cxl_obj_close(&obj);
	cxl_obj_destroy(h.pool, name);
	cxl_pool_detach(h.pool);
	return ret;
}

static void usage(FILE *f)
{
	fputs("usage: coherence_floor [options]\n"
	      "\n"
	      "The least a message can cost through the pool in each\n"
	      "coherence mode: two emulated hosts (this process and a\n"
	      "forked child) pass 8 B to 1 MiB messages with no protocol\n"
	      "but the coherence rules (data, one fence, a flag; poll,\n"
	      "invalidate, copy out). Prints ping-pong one-way latency,\n"
	      "streaming bandwidth and the coherence operations per\n"
	      "message, and the flush mode's cost over the coherent mode.\n"
	      "\n"
	      "  --mode LIST  coherent, flush, uncached, emulated, or a\n"
	      "               comma list (default: all four)\n"
	      "  --pool PATH  pool to use (default: CXL_POOL, else a\n"
	      "               temporary pool in /dev/shm, removed at exit)\n"
	      "  --size SIZE  size of a pool the tool creates\n"
	      "  --csv FILE   also write a CSV row per mode and size\n"
	      "  --quick      fewer iterations (about a second)\n"
	      "  --mutate     for tests: the flag protocol's receiver\n"
	      "               skips its invalidation (the emulated mode\n"
	      "               then reports stale data and exits 1)\n"
	      "  --help       this text\n"
	      "\n"
	      "The hosts use CXL host ids 0 and 1; CXL_COST_MODEL and the\n"
	      "other CXL_* variables apply as usual (docs/env.md).\n",
	      f);
}

static int parse_args(int argc, char **argv, struct bench_opts *b)
{
	static const struct option longopts[] = {
		BENCH_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ "mutate", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned ok = 0;
	int c;

	for (unsigned i = 0; i < NMODES; i++)
		ok |= 1u << mode_order[i];
	memset(b, 0, sizeof(*b));
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int took = bench_opt_take(PROG, c, optarg, ok, b);

		if (took < 0)
			return 2;
		if (took)
			continue;
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == 'M') {
			mutate = true;
			continue;
		}
		return tool_usage_error(PROG, c, argv[optind - 1]);
	}
	if (optind < argc)
		return tool_usage_error(PROG, 0, argv[optind]);
	return 0;
}

typedef struct result mode_results[NPROTOS][NSIZES];

static void print_tables(const unsigned *modes, unsigned nm,
			 const mode_results *res, FILE *csv)
{
	int coh = -1, fl = -1;

	for (unsigned j = 0; j < nm; j++) {
		if (mode_order[modes[j]] == CXL_COH_COHERENT)
			coh = (int)j;
		if (mode_order[modes[j]] == CXL_COH_FLUSH)
			fl = (int)j;
	}
	bool both = coh >= 0 && fl >= 0;

	for (unsigned pr = 0; pr < NPROTOS; pr++) {
		printf("\n%s protocol: one-way latency, us (median of the "
		       "trials); streaming bandwidth, MB/s (best)\n\n| size |",
		       proto_name[pr]);
		for (unsigned j = 0; j < nm; j++)
			printf(" %s us |",
			       cxl_coh_mode_name(mode_order[modes[j]]));
		if (both)
			printf(" flush - coherent us |");
		for (unsigned j = 0; j < nm; j++)
			printf(" %s MB/s |",
			       cxl_coh_mode_name(mode_order[modes[j]]));
		if (both)
			printf(" flush / coherent |");
		printf("\n|---|");
		for (unsigned j = 0; j < 2 * nm + 2 * both; j++)
			printf("---|");
		printf("\n");
		for (unsigned i = 0; i < NSIZES; i++) {
			printf("| %u |", sizes[i]);
			for (unsigned j = 0; j < nm; j++)
				printf(" %.2f |", res[j][pr][i].lat_us);
			if (both)
				printf(" %.2f |",
				       res[fl][pr][i].lat_us -
					       res[coh][pr][i].lat_us);
			for (unsigned j = 0; j < nm; j++)
				printf(" %.0f |", res[j][pr][i].mbps);
			if (both)
				printf(" %.2f |", res[fl][pr][i].mbps /
							  res[coh][pr][i].mbps);
			printf("\n");
		}
	}
	for (unsigned j = 0; j < nm; j++) {
		enum cxl_coh_mode m = mode_order[modes[j]];

		if (m == CXL_COH_COHERENT)
			continue;
		printf("\nCoherence operations per message, %s mode, ping-pong "
		       "(sender and receiver; empty polls apart), flag | "
		       "stamped:\n\n"
		       "| size | flushed lines | streamed lines | invalidated "
		       "lines | fences | cost model us |\n"
		       "|---|---|---|---|---|---|\n",
		       cxl_coh_mode_name(m));
		for (unsigned i = 0; i < NSIZES; i++) {
			const struct result *f = &res[j][FLAG][i],
					    *t = &res[j][STAMPED][i];

			printf("| %u | %.2f \\| %.2f | %.2f \\| %.2f | "
			       "%.2f \\| %.2f | %.2f \\| %.2f | %.2f \\| "
			       "%.2f |\n",
			       sizes[i], f->flushed, t->flushed, f->streamed,
			       t->streamed, f->invalidated, t->invalidated,
			       f->fences, t->fences, f->cost_us, t->cost_us);
		}
	}
	if (!csv)
		return;
	for (unsigned j = 0; j < nm; j++)
		for (unsigned pr = 0; pr < NPROTOS; pr++)
			for (unsigned i = 0; i < NSIZES; i++) {
				const struct result *r = &res[j][pr][i];

				fprintf(csv,
					"%s,%s,%u,%.4f,%.1f,%.3f,%.3f,%.3f,"
					"%.3f,%.4f\n",
					cxl_coh_mode_name(mode_order[modes[j]]),
					proto_name[pr], sizes[i], r->lat_us,
					r->mbps, r->flushed, r->streamed,
					r->invalidated, r->fences, r->cost_us);
			}
}

int main(int argc, char **argv)
{
	static mode_results res[NMODES];
	unsigned modes[NMODES], nm = 0;
	struct cxl_pool_opts opts;
	struct bench_opts b;
	const struct plan *pl;
	FILE *csv = NULL;
	double load;
	int rc, status = 1;

	if ((rc = parse_args(argc, argv, &b)))
		return rc == 1 ? 0 : 2;
	pl = b.quick ? &quick_plan : &full_plan;
	have_allowed = !sched_getaffinity(0, sizeof(allowed), &allowed);
	bind_cpu(0);
	tool_catch_signals(on_signal);
	if (bench_pool_opts(PROG, &b, 128ull << 20, 64, &opts, tmp_dir,
			    sizeof(tmp_dir)))
		goto out;
	if (b.csv && !(csv = tool_csv_open(
			       PROG, b.csv,
			       "mode,protocol,size,lat_us,mbps,flushed_lines,"
			       "streamed_lines,inval_lines,fences,"
			       "cost_us\n")))
		goto out;
	if (getloadavg(&load, 1) != 1)
		load = -1;
	printf(PROG ": pool %s, %ld online CPUs, load average %.2f; ping-pong "
		    "%u x %u round trips, streaming %u x %u messages (%u in "
		    "flight) per size\n",
	       opts.path, sysconf(_SC_NPROCESSORS_ONLN), load, pl->pp_trials,
	       pl->pp_rounds, pl->st_trials, pl->st_msgs, NSLOTS);
	for (unsigned i = 0; i < NMODES; i++) {
		if (b.modes && !(b.modes & 1u << mode_order[i]))
			continue;
		if (run_mode(&opts, mode_order[i], pl, res[nm]))
			goto out;
		modes[nm++] = i;
	}
	print_tables(modes, nm, res, csv);
	status = 0;
out:
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (tool_csv_close(PROG, &csv, b.csv))
		status = 1;
	tool_tmp_pool_remove(PROG, tmp_dir);
	if (interrupted)
		return 128 + interrupted;
	return status;
}
