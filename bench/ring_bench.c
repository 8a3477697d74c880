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
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/toolutil.h"
#include "cxlshm/cxlshm.h"

#define TMP_POOL_SIZE (16ull << 20)
#define TMP_CAPACITY 64u /* objects: the bench holds two rings at a time */
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

static const uint32_t sizes[] = { 0, 8, 32, 48, 64, 128, 256, 1024, 4096 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct plan {
	unsigned pp_warmup;  /* untimed round trips */
	unsigned pp_batches; /* timed batches (<= MAX_BATCHES); median */
	unsigned pp_rounds;  /* round trips per batch */
	unsigned st_warmup;  /* untimed streamed messages */
	unsigned st_msgs;    /* timed streamed messages */
};

static const struct plan full_plan = { 1000, 21, 2000, 1024, 200000 };
static const struct plan quick_plan = { 100, 7, 200, 256, 20000 };

struct args {
	const char *pool; /* NULL: CXL_POOL, else a temporary pool */
	const char *csv;
	enum cxl_coh_mode modes[MAX_MODES];
	unsigned nmodes;
	bool quick;
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

static const struct cxl_coh_counters coh_zero;
static uint8_t txbuf[MAX_MSG], rxbuf[MAX_MSG];
static char tmp_dir[128]; /* temporary pool directory, "" when none */
static pid_t child = -1;  /* host 1 while it may be running */
static volatile sig_atomic_t interrupted;

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

static void on_signal(int sig)
{
	interrupted = sig;
}

static void set_signals(void (*fn)(int))
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESETHAND; /* a second signal kills at once */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static const char *lib_msg(int rc)
{
	const char *msg = cxl_errmsg();

	return msg && *msg ? msg : cxl_strerror(rc);
}

/* Print one error line naming host, mode and size; returns -1. */
static int __attribute__((format(printf, 2, 3))) fail(const struct ctx *c,
						      const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg),
		     "ring_bench: host %d, mode %s: ", c->host,
		     cxl_coh_mode_name(c->mode));
	if (c->cell) /* a test is under way */
		n += snprintf(msg + n, sizeof(msg) - (size_t)n,
			      "%u-byte messages: ", c->size);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", msg); /* one write: two processes print */
	return -1;
}

static int lib_fail(const struct ctx *c, const char *what, int rc)
{
	return fail(c, "%s: %s", what, lib_msg(rc));
}

/* acc += a - b for every counter */
static void coh_add_delta(struct cxl_coh_counters *acc,
			  const struct cxl_coh_counters *a,
			  const struct cxl_coh_counters *b)
{
	acc->flush_lines += a->flush_lines - b->flush_lines;
	acc->inval_lines += a->inval_lines - b->inval_lines;
	acc->fences += a->fences - b->fences;
	acc->nt_stores += a->nt_stores - b->nt_stores;
	acc->nt_loads += a->nt_loads - b->nt_loads;
	acc->nt_lines += a->nt_lines - b->nt_lines;
}

/* Smallest cell (a multiple of 64 B, at least MIN_CELL) that holds size. */
static uint32_t cell_for(uint32_t size)
{
	uint32_t cell = MIN_CELL;

	while (cxl_ring_cell_payload(cell) < size)
		cell += CXL_LINE;
	return cell;
}

static double per(uint64_t v, uint64_t n)
{
	return n ? (double)v / (double)n : 0;
}

/* ---- host 1, the child --------------------------------------------------- */

/* Reap host 1 if it has exited; *st gets its wait status. */
static bool child_exited(int *st)
{
	if (child < 0 || waitpid(child, st, WNOHANG) != child)
		return false;
	child = -1;
	return true;
}

static const char *how_exited(int st, char *buf, size_t cap)
{
	if (WIFSIGNALED(st))
		snprintf(buf, cap, "was killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, cap, "exited with status %d", WEXITSTATUS(st));
	return buf;
}

/* Kill and reap host 1 after a failure of host 0. */
static void child_kill(void)
{
	if (child < 0)
		return;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	child = -1;
}

/* ---- waiting ------------------------------------------------------------- */

static void progress_arm(struct ctx *c)
{
	c->seen = c->done;
	c->since_ns = cxl_now_ns();
}

/*
 * Called after every empty receive or refused send: spin, yield the core
 * every 64 polls (the other host may be waiting for it: on a loaded
 * machine both can share one), and give up when the other host has made
 * no progress for STALL_S seconds or has exited.
 */
static int stall(struct ctx *c)
{
	char how[48];
	uint64_t now;
	int st;

	c->idle++;
	if (interrupted)
		return -1;
	if (c->idle % 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		return 0;
	}
	sched_yield();
	if (c->idle % 4096)
		return 0;
	now = cxl_now_ns();
	if (c->done != c->seen) {
		c->seen = c->done;
		c->since_ns = now;
	} else if (now - c->since_ns > STALL_S * 1000000000ull) {
		return fail(c,
			    "no message moved for %d s: the other host "
			    "stalled or died; see its message above, and "
			    "rerun on a less loaded machine",
			    STALL_S);
	}
	if (c->host == 0 && child_exited(&st))
		return fail(c,
			    "host 1 (the child process) %s before the "
			    "end; see its message above, if any",
			    how_exited(st, how, sizeof(how)));
	return 0;
}

static int check_msg(struct ctx *c, size_t len, uint32_t tag, uint32_t want_len,
		     uint32_t want_tag)
{
	if (len != want_len || tag != want_tag)
		return fail(c,
			    "received %zu bytes with tag %u, expected %u "
			    "bytes with tag %u: the ring lost or reordered a "
			    "message; run the ring tests (ctest -R ring)",
			    len, tag, want_len, want_tag);
	c->done++;
	return 0;
}

static int send_msg(struct ctx *c, uint32_t len, uint32_t tag)
{
	int rc;

	while ((rc = cxl_ring_send(c->tx, txbuf, len, tag, 0)) == CXL_EAGAIN)
		if (stall(c))
			return -1;
	if (rc)
		return lib_fail(c, "send failed", rc);
	c->done++;
	return 0;
}

static int recv_msg(struct ctx *c, uint32_t want_len, uint32_t want_tag)
{
	uint32_t tag;
	size_t len;
	int rc;

	while ((rc = cxl_ring_recv(c->rx, rxbuf, sizeof(rxbuf), &len, &tag)) ==
	       CXL_EAGAIN)
		if (stall(c))
			return -1;
	if (rc)
		return lib_fail(c, "receive failed", rc);
	return check_msg(c, len, tag, want_len, want_tag);
}

/* ---- rings --------------------------------------------------------------- */

static void ring_name(char *buf, const struct ctx *c, int producer)
{
	snprintf(buf, CXL_NAME_MAX + 1, "ring_bench.%s.%u.h%d",
		 cxl_coh_mode_name(c->mode), c->size, producer);
}

/* Create the ring this host sends on, open the other host's. */
static int rings_open(struct ctx *c)
{
	struct cxl_ring_attr attr = { c->cell, NCELLS, POLL_LINES, HEAD_BATCH };
	char rx_name[CXL_NAME_MAX + 1];
	struct cxl_backoff b;
	int rc;

	ring_name(c->tx_name, c, c->host);
	ring_name(rx_name, c, !c->host);
	rc = cxl_ring_create(c->pool, c->tx_name, &attr, CXL_RING_PRODUCER,
			     &c->tx);
	if (rc)
		return lib_fail(c, "cannot create the send ring", rc);
	cxl_backoff_init(&b, STALL_S * 1000);
	while ((rc = cxl_ring_open(c->pool, rx_name, CXL_RING_CONSUMER,
				   &c->rx)) == CXL_ENOENT) {
		if (interrupted)
			return -1;
		if (cxl_backoff_wait(&b))
			return fail(c,
				    "host %d did not create ring '%s' "
				    "within %d s; see its message above",
				    !c->host, rx_name, STALL_S);
	}
	if (rc)
		return lib_fail(c, "cannot open the receive ring", rc);
	progress_arm(c);
	return 0;
}

/* Close both rings and unlink ours (the peer may still hold it open). */
static int rings_close(struct ctx *c)
{
	int rc, ret = 0;

	if (c->rx) {
		cxl_ring_close(c->rx);
		c->rx = NULL;
	}
	if (!c->tx)
		return 0;
	cxl_ring_close(c->tx);
	c->tx = NULL;
	if ((rc = cxl_obj_destroy(c->pool, c->tx_name)))
		ret = lib_fail(c, "cannot destroy the send ring", rc);
	return ret;
}

/* ---- the measurements ---------------------------------------------------- */

/* Host 0 starts every round trip and times the batches. */
static int pingpong_host0(struct ctx *c, struct result *r)
{
	const struct plan *pl = c->pl;
	struct cxl_coh_counters a, b;
	double lat[MAX_BATCHES];
	uint32_t k = 0;
	uint64_t idle;

	for (; k < pl->pp_warmup; k++)
		if (send_msg(c, c->size, k) || recv_msg(c, c->size, k))
			return -1;
	idle = c->idle;
	cxl_coh_counters_get(&a);
	for (unsigned i = 0; i < pl->pp_batches; i++) {
		uint64_t t0 = cxl_now_ns();

		for (unsigned j = 0; j < pl->pp_rounds; j++, k++)
			if (send_msg(c, c->size, k) || recv_msg(c, c->size, k))
				return -1;
		lat[i] = (double)(cxl_now_ns() - t0) / 2e3 / pl->pp_rounds;
	}
	cxl_coh_counters_get(&b);
	coh_add_delta(&r->pp, &b, &a);
	r->pp_polls += c->idle - idle;
	r->lat_us = tool_median(lat, pl->pp_batches);
	return 0;
}

/* Host 1 echoes; its counters cover the same round trips as host 0's. */
static int pingpong_host1(struct ctx *c, struct report *rep)
{
	const struct plan *pl = c->pl;
	uint32_t k = 0, n = pl->pp_warmup + pl->pp_batches * pl->pp_rounds;
	struct cxl_coh_counters a, b;
	uint64_t idle;

	for (; k < pl->pp_warmup; k++)
		if (recv_msg(c, c->size, k) || send_msg(c, c->size, k))
			return -1;
	idle = c->idle;
	cxl_coh_counters_get(&a);
	for (; k < n; k++)
		if (recv_msg(c, c->size, k) || send_msg(c, c->size, k))
			return -1;
	cxl_coh_counters_get(&b);
	coh_add_delta(&rep->pp, &b, &a);
	rep->pp_polls = c->idle - idle;
	return 0;
}

/*
 * Host 0 streams: warm-up, host 1's acknowledgement (the ring is drained),
 * then the timed messages; the clock stops at host 1's second
 * acknowledgement, so every timed message has been received. Every send
 * call's counter delta goes to r->send when the message was accepted, to
 * r->full when the ring was full (the back-pressure polls, which include
 * the producer's uncached reloads of the consumer's head).
 */
static int stream_host0(struct ctx *c, struct result *r)
{
	const struct plan *pl = c->pl;
	struct cxl_coh_counters prev, now;
	uint64_t idle, t0;
	uint32_t k = 0;
	int rc;

	for (; k < pl->st_warmup; k++)
		if (send_msg(c, c->size, k))
			return -1;
	if (recv_msg(c, 0, ACK_TAG))
		return -1;
	idle = c->idle;
	cxl_coh_counters_get(&prev);
	t0 = cxl_now_ns();
	while (k < pl->st_warmup + pl->st_msgs) {
		rc = cxl_ring_send(c->tx, txbuf, c->size, k, 0);
		cxl_coh_counters_get(&now);
		coh_add_delta(rc == CXL_OK ? &r->send : &r->full, &now, &prev);
		prev = now;
		if (rc == CXL_EAGAIN) {
			if (stall(c))
				return -1;
			continue;
		}
		if (rc)
			return lib_fail(c, "send failed", rc);
		c->done++;
		k++;
	}
	if (recv_msg(c, 0, ACK_TAG))
		return -1;
	r->rate = pl->st_msgs * 1e9 / (double)(cxl_now_ns() - t0);
	r->send_full = c->idle - idle;
	return 0;
}

/* Host 1 receives; every recv call's counter delta goes to rep->recv
 * when it returned a message, to rep->poll when it found none. */
static int stream_host1(struct ctx *c, struct report *rep)
{
	const struct plan *pl = c->pl;
	struct cxl_coh_counters prev, now;
	uint32_t k = 0, tag;
	uint64_t idle;
	size_t len;
	int rc;

	for (; k < pl->st_warmup; k++)
		if (recv_msg(c, c->size, k))
			return -1;
	if (send_msg(c, 0, ACK_TAG))
		return -1;
	idle = c->idle;
	cxl_coh_counters_get(&prev);
	while (k < pl->st_warmup + pl->st_msgs) {
		rc = cxl_ring_recv(c->rx, rxbuf, sizeof(rxbuf), &len, &tag);
		cxl_coh_counters_get(&now);
		coh_add_delta(rc == CXL_OK ? &rep->recv : &rep->poll, &now,
			      &prev);
		prev = now;
		if (rc == CXL_EAGAIN) {
			if (stall(c))
				return -1;
			continue;
		}
		if (rc)
			return lib_fail(c, "receive failed", rc);
		if (check_msg(c, len, tag, c->size, k++))
			return -1;
	}
	rep->polls = c->idle - idle;
	return send_msg(c, 0, ACK_TAG);
}

static int write_report(struct ctx *c, int fd, const struct report *rep)
{
	const char *p = (const char *)rep;
	size_t left = sizeof(*rep);

	while (left) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(c,
				    "cannot send the counts to host 0: %s; "
				    "host 0 has probably failed, see its "
				    "message",
				    n < 0 ? strerror(errno) : "short write");
		p += n;
		left -= (size_t)n;
	}
	return 0;
}

/* Host 1: attach as host 1, run every size, report each. */
static int child_main(const struct bench *bx, enum cxl_coh_mode mode, int fd)
{
	struct cxl_pool_opts o = bx->opts;
	struct ctx c = { .pl = bx->pl, .mode = mode, .host = 1 };
	int rc, ret = 0;

	o.mode = mode;
	o.mode_set = 1;
	o.host_id = 1;
	if ((rc = cxl_pool_attach(&o, &c.pool)))
		return lib_fail(&c, "cannot attach the pool", rc);
	for (size_t i = 0; i < NSIZES && !ret; i++) {
		struct report rep = { .size = sizes[i] };

		c.size = sizes[i];
		c.cell = cell_for(c.size);
		ret = rings_open(&c);
		if (!ret)
			ret = pingpong_host1(&c, &rep);
		if (!ret)
			ret = stream_host1(&c, &rep);
		if (rings_close(&c))
			ret = -1;
		if (!ret)
			ret = write_report(&c, fd, &rep);
	}
	c.cell = 0; /* no test under way: messages name no size */
	if ((rc = cxl_pool_detach(c.pool)))
		ret = lib_fail(&c, "cannot detach the pool", rc);
	return ret;
}

/* ---- host 0 -------------------------------------------------------------- */

static int read_report(struct ctx *c, int fd, struct report *rep)
{
	char *p = (char *)rep;
	size_t left = sizeof(*rep);

	while (left) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int rc = poll(&pfd, 1, STALL_S * 1000);

		if (interrupted)
			return -1;
		if (rc == 0)
			return fail(c,
				    "host 1 sent no counts within %d s; "
				    "see its message above",
				    STALL_S);
		n = rc < 0 ? -1 : read(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(c,
				    "cannot read host 1's counts: %s; "
				    "check the limits of this system (ulimit)",
				    strerror(errno));
		if (n == 0)
			return fail(c, "host 1 exited before sending its "
				       "counts; see its message above");
		p += n;
		left -= (size_t)n;
	}
	if (rep->size != c->size)
		return fail(c,
			    "host 1 sent the counts of %u-byte messages: "
			    "the hosts are out of step (a ring_bench bug)",
			    rep->size);
	return 0;
}

static void csv_row(FILE *f, const struct mode_run *mr, const struct plan *pl,
		    const struct result *r)
{
	uint64_t m = pl->st_msgs, rt = (uint64_t)pl->pp_batches * pl->pp_rounds;

	fprintf(f,
		"%s,%s,%u,%u,%.4f,%.1f,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,"
		"%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n",
		cxl_coh_mode_name(mr->mode), mr->insn, r->size, r->cell,
		r->lat_us, r->rate, r->rate * r->size / 1e6,
		per(r->send.flush_lines, m), per(r->send.fences, m),
		per(r->send.nt_loads, m), per(r->send_full, m),
		per(r->recv.inval_lines, m), per(r->recv.fences, m),
		per(r->recv.nt_stores, m), per(r->polls, m),
		per(r->poll.inval_lines, m), per(r->poll.fences, m),
		per(r->poll.nt_stores, m), per(r->pp.flush_lines, rt),
		per(r->pp.inval_lines, rt), per(r->pp.fences, rt),
		per(r->pp.nt_stores, rt), per(r->pp_polls, rt));
}

/* Host 0's side of one size, then host 1's report. */
static int run_size(struct ctx *c, int fd, struct result *r)
{
	struct report rep;
	int ret;

	memset(r, 0, sizeof(*r));
	r->size = c->size;
	r->cell = c->cell;
	ret = rings_open(c);
	if (!ret)
		ret = pingpong_host0(c, r);
	if (!ret)
		ret = stream_host0(c, r);
	if (rings_close(c))
		ret = -1;
	if (ret || read_report(c, fd, &rep))
		return -1;
	coh_add_delta(&r->pp, &rep.pp, &coh_zero);
	r->pp_polls += rep.pp_polls;
	r->recv = rep.recv;
	r->poll = rep.poll;
	r->polls = rep.polls;
	return 0;
}

/*
 * One mode: attach as host 0 (a mode this CPU lacks is skipped here),
 * fork host 1, measure every size. Host 1 is forked after the attach and
 * makes its own attachment; it never uses the one it inherits.
 */
static int run_mode(struct bench *bx, struct mode_run *mr)
{
	struct cxl_pool_opts o = bx->opts;
	struct ctx c = { .pl = bx->pl, .mode = mr->mode, .host = 0 };
	pid_t parent = getpid();
	int rc, fds[2], ret = 0, st;
	char how[48];
	uint64_t t0 = cxl_now_ns();

	o.mode = mr->mode;
	o.mode_set = 1;
	o.host_id = 0;
	rc = cxl_pool_attach(&o, &c.pool);
	if (rc == CXL_ENOTSUP) {
		printf("ring_bench: skipping mode %s: %s\n",
		       cxl_coh_mode_name(mr->mode), lib_msg(rc));
		return 0;
	}
	if (rc)
		return lib_fail(&c, "cannot attach the pool", rc);
	mr->insn = cxl_pool_flush_insn(c.pool) == CXL_FLUSH_AUTO
			   ? "none"
			   : cxl_flush_insn_name(cxl_pool_flush_insn(c.pool));
	if (pipe(fds)) {
		fail(&c,
		     "cannot create a pipe: %s; raise the open-file "
		     "limit (ulimit -n)",
		     strerror(errno));
		cxl_pool_detach(c.pool);
		return -1;
	}
	fflush(NULL); /* nothing buffered may be written twice */
	child = fork();
	if (child < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		cxl_pool_detach(c.pool);
		return fail(&c,
			    "cannot fork host 1: %s; free memory or raise "
			    "the process limit (ulimit -u)",
			    strerror(err));
	}
	if (child == 0) {
		/* Host 1 dies with host 0, even if host 0 is killed. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		set_signals(SIG_DFL);
		close(fds[0]);
		_exit(child_main(bx, mr->mode, fds[1]) ? 1 : 0);
	}
	close(fds[1]);
	printf("ring_bench: mode %s (flush instruction %s): host 0 pid %d, "
	       "host 1 pid %d\n",
	       cxl_coh_mode_name(mr->mode), mr->insn, (int)parent, (int)child);
	fflush(stdout);
	for (size_t i = 0; i < NSIZES && !ret; i++) {
		c.size = sizes[i];
		c.cell = cell_for(c.size);
		ret = run_size(&c, fds[0], &mr->res[i]);
		if (!ret && bx->csv)
			csv_row(bx->csv, mr, bx->pl, &mr->res[i]);
	}
	c.cell = 0; /* no test under way: messages name no size */
	close(fds[0]);
	if (ret) {
		child_kill();
	} else if (child >= 0) {
		if (waitpid(child, &st, 0) == child &&
		    (!WIFEXITED(st) || WEXITSTATUS(st)))
			ret = fail(&c,
				   "host 1 %s at the end; see its "
				   "message above, if any",
				   how_exited(st, how, sizeof(how)));
		child = -1;
	}
	if ((rc = cxl_pool_detach(c.pool)))
		ret = lib_fail(&c, "cannot detach the pool", rc);
	if (!ret) {
		mr->done = true;
		printf("ring_bench: mode %s measured in %.1f s\n",
		       cxl_coh_mode_name(mr->mode),
		       (double)(cxl_now_ns() - t0) / 1e9);
	}
	return ret;
}

/* ---- output -------------------------------------------------------------- */

typedef void (*cell_fn)(char *buf, size_t cap, const struct result *r,
			const struct plan *pl);

struct table {
	const char *head; /* sub-heading under each mode */
	int width;
	cell_fn cell;
};

static void cell_lat(char *buf, size_t cap, const struct result *r,
		     const struct plan *pl)
{
	(void)pl;
	snprintf(buf, cap, "%8.2f", r->lat_us);
}

static void cell_rate(char *buf, size_t cap, const struct result *r,
		      const struct plan *pl)
{
	(void)pl;
	snprintf(buf, cap, "%7.3f %8.1f", r->rate / 1e6,
		 r->rate * r->size / 1e6);
}

static void cell_coh(char *buf, size_t cap, const struct result *r,
		     const struct plan *pl)
{
	uint64_t m = pl->st_msgs;

	snprintf(buf, cap, "%5.2f/%4.2f  %5.2f/%4.2f/%5.3f",
		 per(r->send.flush_lines, m), per(r->send.fences, m),
		 per(r->recv.inval_lines, m), per(r->recv.fences, m),
		 per(r->recv.nt_stores, m));
}

static void cell_poll(char *buf, size_t cap, const struct result *r,
		      const struct plan *pl)
{
	uint64_t m = pl->st_msgs;

	snprintf(buf, cap, "%6.1f %6.1f/%5.1f/%5.3f", per(r->polls, m),
		 per(r->poll.inval_lines, m), per(r->poll.fences, m),
		 per(r->poll.nt_stores, m));
}

static void cell_pp(char *buf, size_t cap, const struct result *r,
		    const struct plan *pl)
{
	uint64_t rt = (uint64_t)pl->pp_batches * pl->pp_rounds;

	snprintf(buf, cap, "%6.2f/%6.1f/%6.1f/%5.3f %6.1f",
		 per(r->pp.flush_lines, rt), per(r->pp.inval_lines, rt),
		 per(r->pp.fences, rt), per(r->pp.nt_stores, rt),
		 per(r->pp_polls, rt));
}

/* Rows: sizes; columns: the modes measured. */
static void print_table(const struct bench *bx, const struct table *t)
{
	char buf[64];

	printf(" size  cell");
	for (unsigned m = 0; m < bx->nruns; m++)
		if (bx->runs[m].done)
			printf(" | %*s", t->width,
			       cxl_coh_mode_name(bx->runs[m].mode));
	printf("\n%11s", "bytes");
	for (unsigned m = 0; m < bx->nruns; m++)
		if (bx->runs[m].done)
			printf(" | %*s", t->width, t->head);
	printf("\n");
	for (size_t i = 0; i < NSIZES; i++) {
		printf("%5u %5u", sizes[i], cell_for(sizes[i]));
		for (unsigned m = 0; m < bx->nruns; m++) {
			if (!bx->runs[m].done)
				continue;
			t->cell(buf, sizeof(buf), &bx->runs[m].res[i], bx->pl);
			printf(" | %*s", t->width, buf);
		}
		printf("\n");
	}
}

/*
 * The design target, checked against the measured counts of flush mode:
 * a message of up to TARGET_MSG bytes costs the sender at most 2 flushed
 * lines and 1 fence, the receiver at most 2 invalidated lines and 1
 * fence, plus 1 NT store and 1 fence per HEAD_BATCH messages (head). The
 * sender may add 1 uncached head load and its fence per HEAD_BATCH
 * messages (it refreshes its view of the head when the ring looks full;
 * the consumer publishes every HEAD_BATCH). Refused sends and empty
 * receives are polls, reported apart.
 */
static void print_target(const struct bench *bx)
{
	const struct mode_run *mr = NULL;
	uint64_t m = bx->pl->st_msgs;
	uint64_t heads = (m + HEAD_BATCH - 1) / HEAD_BATCH;
	double w[5] = { 0 }; /* worst per message */
	char bad[256] = "";
	size_t nb = 0;

	for (unsigned i = 0; i < bx->nruns; i++)
		if (bx->runs[i].mode == CXL_COH_FLUSH && bx->runs[i].done)
			mr = &bx->runs[i];
	printf("\ntarget (flush mode, messages of 0..%u B): send <= 2 "
	       "flushed lines + 1 fence; receive <= 2 invalidated lines + 1 "
	       "fence, plus 1 NT store + 1 fence per %u messages (head "
	       "publication), and the sender 1 uncached head load + 1 fence "
	       "per %u; refused sends and empty receives excluded\n",
	       TARGET_MSG, HEAD_BATCH, HEAD_BATCH);
	if (!mr) {
		printf("target: not checked: flush mode was not measured; "
		       "run with --mode flush on a CPU with clflush\n");
		return;
	}
	for (size_t i = 0; i < NSIZES && sizes[i] <= TARGET_MSG; i++) {
		const struct result *r = &mr->res[i];
		const double v[5] = {
			per(r->send.flush_lines, m), per(r->send.fences, m),
			per(r->recv.inval_lines, m), per(r->recv.fences, m),
			per(r->recv.nt_stores, m),
		};

		for (int j = 0; j < 5; j++)
			w[j] = v[j] > w[j] ? v[j] : w[j];
		if (r->send.flush_lines > 2 * m ||
		    r->send.fences > m + r->send.nt_loads ||
		    r->send.nt_loads > heads || r->recv.inval_lines > 2 * m ||
		    r->recv.fences > m + r->recv.nt_stores ||
		    r->recv.nt_stores > heads)
			nb += (size_t)snprintf(bad + nb, sizeof(bad) - nb,
					       " %u B", r->size);
	}
	printf("target: %s in the measured counts (worst per message: send "
	       "%.2f lines, %.2f fences; receive %.2f lines, %.3f fences, "
	       "%.3f NT stores)%s%s\n",
	       bad[0] ? "DOES NOT HOLD" : "HOLDS", w[0], w[1], w[2], w[3], w[4],
	       bad[0] ? "; exceeded at:" : "", bad);
}

static void print_results(const struct bench *bx)
{
	const struct plan *pl = bx->pl;
	/* sub-headings line up with the cells' printf formats */
	static const struct table t_lat = { "us", 8, cell_lat };
	static const struct table t_rate = { " Mmsg/s     MB/s", 16,
					     cell_rate };
	static const struct table t_coh = { "   fl/  fe     in/  fe/   nt", 28,
					    cell_coh };
	static const struct table t_poll = { " polls     in/   fe/   nt", 25,
					     cell_poll };
	static const struct table t_pp = { "    fl/    in/    fe/   nt  polls",
					   33, cell_pp };

	printf("\nping-pong one-way latency, us (round trip / 2, median of "
	       "%u batches of %u round trips)\n",
	       pl->pp_batches, pl->pp_rounds);
	print_table(bx, &t_lat);
	printf("\nstreaming host 0 -> host 1: %u messages back to back, "
	       "timed until host 1 acknowledges the last\n",
	       pl->st_msgs);
	print_table(bx, &t_rate);
	printf("\ncoherence operations per message, streaming (measured "
	       "counter deltas / %u messages)\n"
	       "each cell: send fl/fe (host 0's accepted sends), then recv "
	       "in/fe/nt (host 1's\nrecv calls that returned a message); "
	       "fl = flushed lines, in = invalidated lines,\nfe = fences, "
	       "nt = non-temporal stores (head publications)\n",
	       pl->st_msgs);
	print_table(bx, &t_coh);
	printf("\nempty polls of the streaming receiver, per message "
	       "received: recv calls that found\nno message, and the "
	       "coherence operations they cost (not in the table above)\n");
	print_table(bx, &t_poll);
	printf("\ncoherence operations per round trip, ping-pong (both "
	       "hosts, whole timed loop,\nempty polls included; polls = "
	       "recv calls that found no message)\n");
	print_table(bx, &t_pp);
	print_target(bx);
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

static int csv_open(struct bench *bx, const char *path)
{
	bx->csv = fopen(path, "w");
	if (!bx->csv) {
		fprintf(stderr,
			"ring_bench: cannot create CSV file %s: %s; "
			"give --csv a path in a writable directory\n",
			path, strerror(errno));
		return -1;
	}
	fputs("mode,insn,size_bytes,cell_bytes,pingpong_oneway_us,"
	      "stream_msgs_per_s,stream_MB_per_s,send_flush_lines_per_msg,"
	      "send_fences_per_msg,send_nt_loads_per_msg,send_full_per_msg,"
	      "recv_inval_lines_per_msg,recv_fences_per_msg,"
	      "recv_nt_stores_per_msg,polls_per_msg,poll_inval_lines_per_msg,"
	      "poll_fences_per_msg,poll_nt_stores_per_msg,"
	      "pp_flush_lines_per_rt,pp_inval_lines_per_rt,pp_fences_per_rt,"
	      "pp_nt_stores_per_rt,pp_polls_per_rt\n",
	      bx->csv);
	return 0;
}

static int csv_close(struct bench *bx, const char *path)
{
	int bad;

	if (!bx->csv)
		return 0;
	bad = ferror(bx->csv);
	bad |= fclose(bx->csv) != 0;
	bx->csv = NULL;
	if (bad) {
		fprintf(stderr,
			"ring_bench: writing CSV file %s failed: %s; "
			"check the free space of its file system\n",
			path, strerror(errno));
		return -1;
	}
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
	set_signals(on_signal);
	bx.pl = a.quick ? &quick_plan : &full_plan;
	if (setup_opts(&a, &bx.opts) || (a.csv && csv_open(&bx, a.csv)))
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
	if (csv_close(&bx, a.csv))
		status = 1;
	else if (a.csv && done)
		printf("\nring_bench: results written to %s\n", a.csv);
	if (done)
		printf("ring_bench: total %.1f s\n",
		       (double)(cxl_now_ns() - t0) / 1e9);
out:
	child_kill();
	csv_close(&bx, a.csv);
	tool_tmp_pool_remove("ring_bench", tmp_dir);
	if (interrupted) {
		fprintf(stderr, "ring_bench: interrupted by signal %d\n",
			(int)interrupted);
		return 128 + interrupted;
	}
	return status;
}
