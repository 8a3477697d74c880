/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Progress dispatch (proto.h): one progress call scans the inbox now and
 * then, watches the peers' heartbeats, completes sends whose tokens came
 * back, retries queued sends, and drains every channel, handing each ring
 * op to the layer that takes it. Also the first step of closing an
 * endpoint: queued sends and announced acknowledgements get their time.
 */
#include "proto.h"

#define DRAIN_BUDGET 64u    /* messages per channel per progress call */
#define STREAM_HITS 2u	    /* calls finding a message at once: a stream */
#define STREAM_NEED_MAX 64u /* the most STREAM_HITS backs off to */

/*
 * Receive up to DRAIN_BUDGET messages from one channel.
 *
 * Latency or stream. While the first look at the ring in a call usually
 * finds nothing, the caller is waiting for single messages: the first
 * message that completes an operation ends the call, because one more
 * look at the ring would delay that completion (an eviction, a fence and
 * a miss to the pool in the flush mode). The OP_ACK such a message
 * announces (OPF_ACKNEXT) is still taken, so that a delivery-complete
 * sender does not wait for our next call. Once STREAM_HITS calls in a
 * row found a message at once, messages are queued: each call drains as
 * many as the budget allows, so a stream costs one call per budget, not
 * one per message.
 *
 * A ping-pong looks like a stream when a look is slow (the cost model
 * charges a device round trip for it): the peer's next message is then
 * always in the ring by the time of the first look. Its extra look finds
 * nothing and delays the reply by a whole poll. So a stream call whose
 * extra look came back empty ends stream mode and doubles the hits that
 * the next one needs (pe->stream_need, up to STREAM_NEED_MAX); a call
 * that found a second message restores STREAM_HITS.
 */
static unsigned stream_need(const struct cxlfi_peer *pe)
{
	return pe->stream_need ? pe->stream_need : STREAM_HITS;
}

/* An OP_FIRST with OPF_SLOT: [bulk descriptor][header]. The header
 * starts the message, with no payload in the cell; the descriptor's data
 * slot holds all of it. */
static void first_in_slot(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			  uint32_t op, size_t n)
{
	const uint8_t *m = ep->rx_scratch;

	if (n < CXLFI_DESC_BULK_SIZE) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "malformed message from endpoint %u dropped\n",
			   pe->index);
		return;
	}
	cxlfi_rx_on_message(ep, pe, op & ~(OPF_SLOT | CXLFI_OPF_RETURN),
			    m + CXLFI_DESC_BULK_SIZE, n - CXLFI_DESC_BULK_SIZE);
	/* a header refused above leaves no message in progress: the
	 * descriptor's slot is then only returned */
	cxlfi_rx_chunk_done(ep, pe,
			    cxlfi_xfer_bulk(ep, pe, m, CXLFI_DESC_BULK_SIZE,
					    op & CXLFI_OPF_RETURN));
}

static void drain_ring(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	bool stream = pe->rx_hits >= stream_need(pe), stop = false;

	pe->rx_stream = stream;
	cxl_ring_read_ahead(pe->rx, stream);
	for (unsigned k = 0; k < DRAIN_BUDGET; k++) {
		uint64_t reported = ep->reported;
		uint32_t op;
		size_t n;
		int rc;

		/* Flow control: with too much unexpected data and nothing
		 * posted, leave messages in the ring (the sender waits)
		 * rather than buffer without bound. */
		if (!pe->rx_left &&
		    ep->unexp_bytes > cxlfi_params.unexp_limit && !ep->trecv &&
		    !ep->recv) {
			if (!ep->warned_unexp)
				CXLFI_WARN(FI_LOG_EP_DATA,
					   "%zu bytes of unexpected messages "
					   "buffered (FI_CXL_UNEXP_LIMIT); "
					   "senders wait until receives are "
					   "posted\n",
					   ep->unexp_bytes);
			ep->warned_unexp = true;
			return;
		}
		rc = cxl_ring_recv(pe->rx, ep->rx_scratch, ep->rx_cap, &n, &op);
		if (rc == CXL_EAGAIN) {
			if (!k) {
				pe->rx_hits = 0;
			} else if (stream && k == 1) { /* ran dry at once */
				pe->rx_hits = 0;
				if (pe->stream_need < STREAM_NEED_MAX)
					pe->stream_need = stream_need(pe) * 2;
			}
			return;
		}
		if (rc) {
			cxlfi_up.rx_broken(ep, pe);
			return;
		}
		cxlfi_stats.ring_msgs++;
		if (!k && pe->rx_hits < STREAM_NEED_MAX)
			pe->rx_hits++;
		if (k == 1 && stream)
			pe->stream_need = STREAM_HITS; /* a real stream */
		if ((op & OP_MASK) == OP_EAGER || (op & OP_MASK) == OP_FIRST)
			pe->ack_next = op & OPF_ACKNEXT;
		else if ((op & OP_MASK) == CXLFI_OP_ACK)
			pe->ack_next = false;
		switch (op & OP_MASK) {
		case CXLFI_OP_BULK:
			cxlfi_rx_chunk_done(
				ep, pe,
				cxlfi_xfer_bulk(ep, pe, ep->rx_scratch, n,
						op & CXLFI_OPF_RETURN));
			break;
		case CXLFI_OP_PTR:
			cxlfi_rx_chunk_done(
				ep, pe,
				cxlfi_xfer_ptr(ep, pe, ep->rx_scratch, n));
			break;
		case CXLFI_OP_ACK:
			cxlfi_ack_take(ep, pe, ep->rx_scratch, n);
			break;
		case OP_CONT:
			cxlfi_rx_chunk_done(
				ep, pe,
				cxlfi_xfer_chunk(ep, pe, ep->rx_scratch, n));
			break;
		case OP_FIRST:
			if (op & OPF_SLOT) {
				first_in_slot(ep, pe, op, n);
				break;
			}
			__attribute__((fallthrough));
		default:
			cxlfi_rx_on_message(ep, pe, op, ep->rx_scratch, n);
		}
		if (!stream && ep->reported != reported)
			stop = true;
		if (stop && !pe->ack_next)
			return;
	}
}

/* The ring's head, published without a fence (cxl_ring_lazy_head), waits
 * for the endpoint's next fence, as returned tokens do. */
static void drain(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	drain_ring(ep, pe);
	if (pe->lazy_head && cxl_ring_head_unfenced(pe->rx))
		ep->lazy_fence_due = true;
}

/*
 * FI_CXL_STATS: a progress call that took no ring cell and wrote nothing
 * to the pool was a poll; libcxlshm books its invalidations, fences and
 * uncached loads as such (c0: the coherence counters before the call).
 */
static void account_poll(const struct cxl_coh_counters *c0, uint64_t cells0)
{
	struct cxl_coh_counters c;

	cxl_coh_counters_get(&c);
	if (cxlfi_stats.ring_msgs != cells0 ||
	    c.flush_lines != c0->flush_lines || c.nt_lines != c0->nt_lines ||
	    c.nt_stores != c0->nt_stores)
		return;
	cxl_coh_count_poll(c0);
}

void cxlfi_progress(struct cxlfi_ep *ep)
{
	struct cxl_coh_counters c0;
	uint64_t cells0 = 0;

	if (!ep->self.pool)
		return;
	if (cxlfi_params.stats) {
		cxl_coh_counters_get(&c0);
		cells0 = cxlfi_stats.ring_msgs;
	}
	/* the fence owed for eager cells, and for the tokens and ring heads
	 * the last call stored (cxlfi_bulk_take, drain) */
	cxlfi_ep_settle_all(ep);
	if (ep->progress_calls++ % cxlfi_params.inbox_poll == 0)
		cxlfi_chan_scan_inbox(ep);
	cxlfi_watch_peers(ep);
	if (ep->xa_waiting)
		cxlfi_xa_poll(ep, cxlfi_tx_done);
	if (ep->txpend)
		cxlfi_tx_pending(ep);
	for (struct cxlfi_peer *pe = ep->active; pe; pe = pe->next_active)
		if (pe->rx && !pe->rx_broken)
			drain(ep, pe);
	cxlfi_netpath_progress(ep); /* peers outside the pool, if any */
	if (cxlfi_params.stats)
		account_poll(&c0, cells0);
}

void cxlfi_ep_unpublish(struct cxlfi_ep *ep)
{
	/* Linger: sends still queued for ring space (injected data above
	 * all, which has no completion) get up to CXLFI_LINGER_MS to go out
	 * while live peers drain their channels. */
	if (ep->self.pool && ep->txpend) {
		uint64_t until = cxlfi_now_ms() + CXLFI_LINGER_MS;

		while (ep->txpend && cxlfi_now_ms() < until)
			cxlfi_progress(ep);
		if (ep->txpend)
			CXLFI_WARN(FI_LOG_EP_CTRL,
				   "endpoint %u closed with sends still queued "
				   "after %u ms; they are dropped\n",
				   ep->index, CXLFI_LINGER_MS);
	}
	/* A message whose sender waits for our acknowledgement (OP_ACK
	 * announced by OPF_ACKNEXT, pushed right behind it) may have been
	 * taken without it: take it now, or that sender waits until it
	 * declares us dead (fabtests' targets close right after the data
	 * arrived). Bounded by CXLFI_LINGER_MS too. */
	if (ep->self.pool) {
		uint64_t until = cxlfi_now_ms() + CXLFI_LINGER_MS;
		bool waiting;

		do {
			waiting = false;
			for (struct cxlfi_peer *pe = ep->active; pe;
			     pe = pe->next_active)
				if (pe->rx && pe->ack_next && !pe->dead &&
				    !pe->rx_broken) {
					drain(ep, pe);
					waiting |= pe->ack_next;
				}
		} while (waiting && cxlfi_now_ms() < until);
	}
	/* Chunks of completed sends still in our transfer area: a receiver
	 * that has not taken the first yet opens the area by its name,
	 * which goes with it (cxlfi_xa_destroy); a send completed as
	 * transmitted must not fail at the receiver because we closed. Until
	 * live receivers have taken them, bounded by CXLFI_LINGER_MS. */
	if (ep->self.pool && cxlfi_xa_in_flight(ep)) {
		uint64_t until = cxlfi_now_ms() + CXLFI_LINGER_MS;

		while (cxlfi_xa_in_flight(ep) && cxlfi_now_ms() < until)
			cxlfi_progress(ep);
		if (cxlfi_xa_in_flight(ep))
			CXLFI_WARN(FI_LOG_EP_CTRL,
				   "endpoint %u closed with %u chunks not "
				   "taken by their receivers after %u ms; "
				   "those messages fail there\n",
				   ep->index, cxlfi_xa_in_flight(ep),
				   CXLFI_LINGER_MS);
	}
	cxlfi_ep_settle_all(ep); /* tokens, heads stored above */
	cxlfi_chan_unpublish(ep);
}
