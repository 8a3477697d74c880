/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring_bench's workloads on one pair of rings: ping-pong and streaming,
 * each host's side, with the coherence counters of every call.
 */
#include <sched.h>

#include "common/toolutil.h"
#include "ring_bench.h"

const uint32_t sizes[NSIZES] = { 0, 8, 32, 48, 64, 128, 256, 1024, 4096 };

static uint8_t txbuf[MAX_MSG], rxbuf[MAX_MSG];

/* Smallest cell (a multiple of 64 B, at least MIN_CELL) that holds size. */
uint32_t cell_for(uint32_t size)
{
	uint32_t cell = MIN_CELL;

	while (cxl_ring_cell_payload(cell) < size)
		cell += CXL_LINE;
	return cell;
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
int rings_open(struct ctx *c)
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
int rings_close(struct ctx *c)
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

/* Charge the counters since *prev to ok or, when the call found the ring
 * full or empty, to idle. */
static void charge(struct cxl_coh_counters *prev, int rc,
		   struct cxl_coh_counters *ok, struct cxl_coh_counters *idle)
{
	struct cxl_coh_counters now;

	cxl_coh_counters_get(&now);
	tool_coh_add_delta(rc == CXL_OK ? ok : idle, &now, prev);
	*prev = now;
}

/* Host 0 starts every round trip and times the batches. */
int pingpong_host0(struct ctx *c, struct result *r)
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
	tool_coh_add_delta(&r->pp, &b, &a);
	r->pp_polls += c->idle - idle;
	r->lat_us = tool_median(lat, pl->pp_batches);
	return 0;
}

/* Host 1 echoes; its counters cover the same round trips as host 0's. */
int pingpong_host1(struct ctx *c, struct report *rep)
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
	tool_coh_add_delta(&rep->pp, &b, &a);
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
int stream_host0(struct ctx *c, struct result *r)
{
	const struct plan *pl = c->pl;
	struct cxl_coh_counters prev;
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
		charge(&prev, rc, &r->send, &r->full);
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
int stream_host1(struct ctx *c, struct report *rep)
{
	const struct plan *pl = c->pl;
	struct cxl_coh_counters prev;
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
		charge(&prev, rc, &rep->recv, &rep->poll);
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
