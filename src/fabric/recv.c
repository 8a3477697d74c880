/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiving and matching (proto.h): posted receives (tagged, untagged,
 * multi-receive), unexpected messages, FI_PEEK/FI_CLAIM/FI_DISCARD,
 * cancel, and the completion of a message once all of it arrived. RMA
 * writes and answers arrive here as well: the upcalls of rma.c and
 * atomic.c (cxlfi_up) give their target buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static void free_list_rx(struct cxlfi_rx *r)
{
	while (r) {
		struct cxlfi_rx *n = r->next;

		free(r);
		r = n;
	}
}

/* A zeroed receive descriptor, from the endpoint's cache if it has one. */
static struct cxlfi_rx *rx_new(struct cxlfi_ep *ep)
{
	return CXLFI_FL_NEW(&ep->rx_cache, struct cxlfi_rx, fl);
}

/* Give a descriptor that nothing refers to any more back to the cache. */
static void rx_put(struct cxlfi_ep *ep, struct cxlfi_rx *r)
{
	if (!cxlfi_fl_give(&ep->rx_cache, &r->fl))
		free(r);
}

static bool rx_matches(const struct cxlfi_rx *r, bool tagged, uint32_t src,
		       uint64_t tag)
{
	if (!!(r->flags & FI_TAGGED) != tagged)
		return false;
	if (tagged && ((r->tag ^ tag) & ~r->ignore))
		return false;
	return r->src == FI_ADDR_UNSPEC || r->src_index == src;
}

/* A receive that a network peer's message may complete: directed at a
 * network peer, or from any source (but a multi-receive buffer, which
 * MPICH keeps posted all the time). While one is posted, progress looks
 * at the link at every call (cxlfi_netpath_progress). */
static bool rx_from_net(const struct cxlfi_rx *r)
{
	if (r->src == FI_ADDR_UNSPEC)
		return !(r->flags & FI_MULTI_RECV);
	return r->src_index & CXLFI_NET_SRC;
}

static void rx_unlink(struct cxlfi_ep *ep, bool tagged, struct cxlfi_rx *r,
		      struct cxlfi_rx *prev)
{
	struct cxlfi_rx **head = tagged ? &ep->trecv : &ep->recv;
	struct cxlfi_rx **tail = tagged ? &ep->trecv_tail : &ep->recv_tail;

	if (rx_from_net(r))
		ep->net_rx_posted--;
	if (prev)
		prev->next = r->next;
	else
		*head = r->next;
	if (*tail == r)
		*tail = prev;
}

/* A multi-receive buffer leaves the queue. With no slice in flight its
 * release is reported now, by a completion that carries FI_MULTI_RECV
 * alone; otherwise the last slice to complete reports it. */
static void multi_release(struct cxlfi_ep *ep, struct cxlfi_rx *m)
{
	m->released = true;
	if (m->inflight)
		return;
	if (ep->rx_cq)
		cxlfi_cq_push(ep->rx_cq, m->context, FI_MULTI_RECV, 0, m->buf,
			      0, 0, FI_ADDR_NOTAVAIL);
	free(m);
}

/* A slice of multi-receive buffer m for a message of total bytes. */
static struct cxlfi_rx *multi_slice(struct cxlfi_ep *ep, struct cxlfi_rx *m,
				    size_t total)
{
	struct cxlfi_rx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->buf = (uint8_t *)m->buf + m->used;
	c->len = total;
	c->src = m->src;
	c->src_index = m->src_index;
	c->flags = m->flags & ~FI_MULTI_RECV;
	c->context = m->context;
	c->parent = m;
	m->used += total;
	m->inflight++;
	(void)ep;
	return c;
}

/* The receive a message (tagged?, from src, with tag, of total bytes)
 * goes to, taken out of its queue; NULL if none is posted. */
static struct cxlfi_rx *take_posted(struct cxlfi_ep *ep, bool tagged,
				    uint32_t src, uint64_t tag, size_t total)
{
	struct cxlfi_rx *prev = NULL, *r = tagged ? ep->trecv : ep->recv;

	while (r) {
		struct cxlfi_rx *next = r->next, *c;

		if (!rx_matches(r, tagged, src, tag)) {
			prev = r;
			r = next;
			continue;
		}
		if (!(r->flags & FI_MULTI_RECV)) {
			rx_unlink(ep, tagged, r, prev);
			return r;
		}
		if (total > r->len - r->used) { /* full: retire, go on */
			rx_unlink(ep, tagged, r, prev);
			multi_release(ep, r);
			r = next;
			continue;
		}
		c = multi_slice(ep, r, total);
		if (r->len - r->used < ep->min_multi_recv) {
			rx_unlink(ep, tagged, r, prev);
			r->released = true;
		}
		return c;
	}
	return NULL;
}

static void complete_rx(struct cxlfi_ep *ep, struct cxlfi_rx *r, size_t total,
			uint64_t tag, uint64_t data, uint32_t src, bool tagged,
			bool has_data)
{
	uint64_t f = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) |
		     (has_data ? FI_REMOTE_CQ_DATA : 0);
	struct cxlfi_rx *m = r->parent;

	ep->reported++; /* for drain() (progress.c): messages, RMA, answers */
	if (r->kind != CXLFI_RX_MSG) {
		(void)tag;
		(void)src;
		cxlfi_up.rma_complete_rx(ep, r, total, data, has_data);
		return;
	}

	cxlfi_stats.recv++;
	/* the last slice of a released multi-receive buffer reports it */
	if (m && --m->inflight == 0 && m->released) {
		f |= FI_MULTI_RECV;
		free(m);
	}

	if (total > r->len) {
		if (ep->rx_cq)
			cxlfi_cq_push_err(ep->rx_cq, r->context, f, r->len,
					  r->buf, data, tag, total - r->len,
					  FI_ETRUNC);
		cxlfi_cntr_inc(ep->rx_cntr, true);
	} else {
		if (r->flags & FI_COMPLETION)
			cxlfi_cq_push(ep->rx_cq, r->context, f, total, r->buf,
				      data, tag, cxlfi_av_reverse(ep->av, src));
		cxlfi_cntr_inc(ep->rx_cntr, false);
	}
	rx_put(ep, r);
}

static void unexp_append(struct cxlfi_ep *ep, struct cxlfi_unexp *u)
{
	if (ep->unexp_tail)
		ep->unexp_tail->next = u;
	else
		ep->unexp = u;
	ep->unexp_tail = u;
	if (!u->net) /* a network message's data stays with its provider */
		ep->unexp_bytes += u->len;
}

static void unexp_remove(struct cxlfi_ep *ep, struct cxlfi_unexp *u,
			 struct cxlfi_unexp *prev)
{
	if (prev)
		prev->next = u->next;
	else
		ep->unexp = u->next;
	if (ep->unexp_tail == u)
		ep->unexp_tail = prev;
	if (!u->net)
		ep->unexp_bytes -= u->len;
}

static void netrx_discard(struct cxlfi_ep *ep, struct cxlfi_unexp *u);

/* Drop unexpected message u (out of the list): its buffer, or for a
 * network message, its data at the network provider. */
static void unexp_free(struct cxlfi_ep *ep, struct cxlfi_unexp *u)
{
	if (u->net)
		netrx_discard(ep, u);
	free(u->buf);
	free(u);
}

/* A matched receive whose message will not arrive fails with err:
 * reported, counted and freed. */
static void fail_matched(struct cxlfi_ep *ep, struct cxlfi_rx *r, uint64_t tag,
			 int err)
{
	if (ep->rx_cq)
		cxlfi_cq_push_err(
			ep->rx_cq, r->context,
			FI_RECV | (r->flags & FI_TAGGED ? FI_TAGGED : FI_MSG),
			0, r->buf, 0, tag, 0, err);
	cxlfi_cntr_inc(ep->rx_cntr, true);
	/* the slice of a multi-receive buffer: the buffer's release is
	 * still reported when this was its last slice */
	if (r->parent && --r->parent->inflight == 0 && r->parent->released)
		multi_release(ep, r->parent);
	rx_put(ep, r);
}

/* The old sender of a half-received message is gone: fail the matched
 * receive, or drop the incomplete unexpected message. */
void cxlfi_rx_abort(struct cxlfi_ep *ep, struct cxlfi_peer *pe, int err)
{
	if (pe->rx_cur && pe->rx_cur->kind != CXLFI_RX_MSG)
		cxlfi_up.rma_fail_rx(ep, pe->rx_cur, err);
	else if (pe->rx_cur)
		fail_matched(ep, pe->rx_cur, pe->rx_tag, err);
	if (pe->ux_cur) {
		struct cxlfi_unexp *u, *prev = NULL;

		for (u = ep->unexp; u && u != pe->ux_cur; u = u->next)
			prev = u;
		if (u) {
			unexp_remove(ep, u, prev);
			free(u->buf);
			free(u);
		}
	}
	pe->rx_cur = NULL;
	pe->ux_cur = NULL;
	pe->rx_left = 0;
}

/* A message (or its first chunk) arrived from peer pe. */
int cxlfi_rx_on_message(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint32_t op,
			const uint8_t *m, size_t n)
{
	bool tagged = op & OPF_TAGGED, has_data = op & OPF_DATA;
	bool write = op & OPF_WRITE;
	size_t h = 8 + (write ? 8 : 0) + (has_data ? 8 : 0), total;
	uint64_t tag, data = 0, addr = 0;
	struct cxlfi_rx *r;
	struct cxlfi_unexp *u;

	if ((op & OP_MASK) == OP_FIRST)
		h += 8;
	/* the sender gave up on the message in progress (e.g. it could not
	 * create its transfer area): that one fails, this one is new */
	if (pe->rx_left)
		cxlfi_rx_abort(ep, pe, FI_EIO);
	if (n < h)
		goto bad;
	memcpy(&tag, m, 8);
	if (write)
		memcpy(&addr, m + 8, 8);
	if (has_data)
		memcpy(&data, m + 8 + (write ? 8 : 0), 8);
	if ((op & OP_MASK) == OP_FIRST) {
		uint64_t t64;

		memcpy(&t64, m + h - 8, 8);
		if (t64 > CXLFI_MAX_MSG || t64 < n - h)
			goto bad;
		total = (size_t)t64;
	} else {
		total = n - h;
	}
	m += h;
	n -= h;
	if (op & (OPF_READREQ | OPF_ATOMREQ)) { /* one cell, always */
		if ((op & OP_MASK) != OP_EAGER)
			goto bad;
		if (op & OPF_READREQ)
			cxlfi_up.rma_read_request(ep, pe, m, n);
		else
			cxlfi_up.atomic_request(ep, pe, m, n);
		return 0;
	}
	if (write || (op & OPF_READRSP)) {
		/* RMA: the target buffer is known, nothing to match. A write
		 * the target refuses goes to a sink, and its error travels
		 * back with the write's acknowledgement. */
		int err = 0;

		if (write)
			r = cxlfi_up.rma_write_target(ep, tag, addr, total,
						      &err);
		else
			r = cxlfi_up.rma_read_answer(ep, pe, tag, total,
						     has_data ? (int)data : 0);
		pe->ack_err = write ? err : 0;
		if (!r && !(r = calloc(1, sizeof(*r))))
			return -FI_ENOMEM;
		if (!r->kind)
			r->kind = CXLFI_RX_SINK;
		has_data = write && has_data;
		tagged = false;
		tag = 0;
	} else {
		pe->ack_err = 0; /* its OP_ACK, if any, reports success */
		if (!tagged)
			tag = 0;
		r = take_posted(ep, tagged, pe->index, tag, total);
	}
	if (r) {
		cxlfi_xfer_copy(r, 0, m, n);
		if (total == n) {
			complete_rx(ep, r, total, tag, data, pe->index, tagged,
				    has_data);
			return 0;
		}
		pe->rx_cur = r;
		pe->ux_cur = NULL;
	} else {
		u = calloc(1, sizeof(*u));
		/* a buffer for the bytes at hand, grown as more arrive: a
		 * peer that announces a huge message does not get us to
		 * allocate it before it sends the data */
		if (!u || !(u->buf = malloc(n ? n : 1))) {
			free(u);
			CXLFI_WARN(FI_LOG_EP_DATA,
				   "out of memory buffering an "
				   "unexpected message of %zu bytes\n",
				   total);
			return -FI_ENOMEM;
		}
		memcpy(u->buf, m, n);
		u->src_index = pe->index;
		u->tag = tag;
		u->data = data;
		u->op = op;
		u->tagged = tagged;
		u->len = total;
		u->have = n;
		u->cap = n;
		unexp_append(ep, u);
		if (total == n)
			return 0;
		pe->ux_cur = u;
		pe->rx_cur = NULL;
	}
	pe->rx_total = total;
	pe->rx_off = n;
	pe->rx_left = total - n;
	pe->rx_tag = tag;
	pe->rx_data = data;
	pe->rx_op = op;
	return 0;
bad:
	CXLFI_WARN(FI_LOG_EP_DATA,
		   "malformed message from endpoint %u "
		   "dropped\n",
		   pe->index);
	return 0;
}

void cxlfi_rx_chunk_done(struct cxlfi_ep *ep, struct cxlfi_peer *pe, int rc)
{
	if (rc < 0) {
		cxlfi_rx_abort(ep, pe, -rc);
		return;
	}
	if (!rc)
		return;
	if (pe->rx_cur)
		complete_rx(ep, pe->rx_cur, pe->rx_total, pe->rx_tag,
			    pe->rx_data, pe->index, pe->rx_op & OPF_TAGGED,
			    pe->rx_op & OPF_DATA);
	pe->rx_cur = NULL;
	pe->ux_cur = NULL;
}

/* A posted receive, out of its queue, fails with err: reported, then
 * freed, or left to the slices still arriving into it (multi-receive). */
static void fail_posted(struct cxlfi_ep *ep, struct cxlfi_rx *r, bool tagged,
			int err)
{
	if (ep->rx_cq)
		cxlfi_cq_push_err(ep->rx_cq, r->context,
				  FI_RECV | (tagged ? FI_TAGGED : FI_MSG), 0,
				  r->buf, 0, r->tag, 0, err);
	if (r->inflight) /* slices still arriving own it */
		r->released = true;
	else
		free(r);
}

/* Peer pe will deliver nothing more: the message in progress from it and
 * the receives that only it can match fail with err. */
static void fail_from_peer(struct cxlfi_ep *ep, struct cxlfi_peer *pe, int err)
{
	struct cxlfi_rx **lists[2] = { &ep->trecv, &ep->recv };

	cxlfi_rx_abort(ep, pe, err);
	for (int l = 0; l < 2; l++) {
		struct cxlfi_rx *r = *lists[l], *prev = NULL;

		while (r) {
			struct cxlfi_rx *next = r->next;

			if (r->src == FI_ADDR_UNSPEC ||
			    r->src_index != pe->index) {
				prev = r;
				r = next;
				continue;
			}
			rx_unlink(ep, l == 0, r, prev);
			fail_posted(ep, r, l == 0, err);
			cxlfi_cntr_inc(ep->rx_cntr, true);
			r = next;
		}
	}
}

void cxlfi_peer_dead(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	pe->dead = true;
	cxlfi_tx_fail_peer(ep, pe);
	fail_from_peer(ep, pe, FI_EHOSTUNREACH);
}

/*
 * A channel whose cells fail the ring's checks (a corrupt length, stamp
 * or header) cannot be resynchronised: nothing after the bad cell can be
 * trusted. Reported once, on stderr; its receives fail with FI_EIO and
 * progress stops reading it. Sends to the peer go on (our channel to it
 * is another ring). A new incarnation of the sender attaches a new one.
 */
void cxlfi_rx_broken(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	const uint64_t *hdr = pe->epobj.pool ? pe->epobj.ptr : NULL;

	cxlfi_report("the channel from endpoint %u (host %lld, pid %lld) to "
		     "endpoint %u is corrupt: %s; receives from it fail with "
		     "FI_EIO. Something wrote into the pool outside the "
		     "protocol: check the jobs sharing it (cxlpool ls)",
		     pe->index, hdr ? (long long)hdr[CXLFI_HDR_HOST] : -1ll,
		     hdr ? (long long)hdr[CXLFI_HDR_PID] : -1ll, ep->index,
		     cxl_errmsg());
	pe->rx_broken = true;
	fail_from_peer(ep, pe, FI_EIO);
}

static bool ux_matches(const struct cxlfi_unexp *u, bool tagged, fi_addr_t src,
		       uint32_t src_index, uint64_t tag, uint64_t ignore)
{
	if (u->tagged != tagged || u->claimed)
		return false;
	if (tagged && ((u->tag ^ tag) & ~ignore))
		return false;
	return src == FI_ADDR_UNSPEC || u->src_index == src_index;
}

/* Deliver unexpected message u (removed from the list) into r. */
static void netrx_start(struct cxlfi_ep *ep, struct cxlfi_unexp *u,
			struct cxlfi_rx *r);

static void deliver_unexp(struct cxlfi_ep *ep, struct cxlfi_unexp *u,
			  struct cxlfi_rx *r)
{
	if (u->net) {
		netrx_start(ep, u, r);
		return;
	}
	cxlfi_xfer_copy(r, 0, u->buf, u->have);
	if (u->have == u->len) {
		complete_rx(ep, r, u->len, u->tag, u->data, u->src_index,
			    u->tagged, u->op & OPF_DATA);
	} else {
		/* still arriving: the rest goes straight to r */
		struct cxlfi_peer *pe = ep->peers[u->src_index];

		pe->ux_cur = NULL;
		pe->rx_cur = r;
	}
	free(u->buf);
	free(u);
}

/* FI_PEEK: report a matching complete unexpected message (size, tag,
 * data) without receiving it; FI_CLAIM reserves it for a later receive
 * with the same context, FI_DISCARD drops it. */
static ssize_t peek(struct cxlfi_ep *ep, struct cxlfi_rx *r, bool tagged)
{
	struct cxlfi_unexp *u, *prev = NULL;
	uint64_t f = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);

	/* a probe a network peer may answer looks at the link now and for
	 * the next calls, as a posted receive would (cxlfi_netpath_progress):
	 * a quiet link's looks may be a quarter of a millisecond apart */
	if (rx_from_net(r))
		ep->net_hot = CXLFI_NET_HOT_CALLS;
	cxlfi_up.progress(ep);
	for (u = ep->unexp; u; prev = u, u = u->next)
		if (u->have == u->len &&
		    ux_matches(u, tagged, r->src, r->src_index, r->tag,
			       r->ignore))
			break;
	if (!u) {
		if (ep->rx_cq)
			cxlfi_cq_push_err(ep->rx_cq, r->context, f, 0, NULL, 0,
					  0, 0, FI_ENOMSG);
		free(r);
		return 0;
	}
	if (u->op & OPF_DATA)
		f |= FI_REMOTE_CQ_DATA;
	if (ep->rx_cq)
		cxlfi_cq_push(ep->rx_cq, r->context, f, u->len, NULL, u->data,
			      u->tag, cxlfi_av_reverse(ep->av, u->src_index));
	if (r->flags & FI_DISCARD) {
		unexp_remove(ep, u, prev);
		unexp_free(ep, u);
	} else if (r->flags & FI_CLAIM) {
		u->claimed = true;
		u->claim_ctx = r->context;
	}
	free(r);
	return 0;
}

static void append_posted(struct cxlfi_ep *ep, bool tagged, struct cxlfi_rx *r)
{
	struct cxlfi_rx **head = tagged ? &ep->trecv : &ep->recv;
	struct cxlfi_rx **tail = tagged ? &ep->trecv_tail : &ep->recv_tail;

	if (rx_from_net(r))
		ep->net_rx_posted++;
	r->next = NULL;
	if (*tail)
		(*tail)->next = r;
	else
		*head = r;
	*tail = r;
}

/* Hand buffered untagged messages to newly posted (multi-)receives. */
static void match_unexpected(struct cxlfi_ep *ep)
{
	struct cxlfi_unexp *u = ep->unexp, *prev = NULL;

	while (u) {
		struct cxlfi_unexp *next = u->next;
		struct cxlfi_rx *r;

		if (u->tagged || u->claimed) {
			prev = u;
			u = next;
			continue;
		}
		r = take_posted(ep, false, u->src_index, 0, u->len);
		if (!r)
			return;
		unexp_remove(ep, u, prev);
		deliver_unexp(ep, u, r);
		u = next;
	}
}

ssize_t cxlfi_recv(struct cxlfi_ep *ep, void *buf, size_t len, fi_addr_t src,
		   uint64_t tag, uint64_t ignore, uint64_t flags, void *context)
{
	bool tagged = flags & FI_TAGGED;
	struct cxlfi_unexp *u, *prev = NULL;
	struct cxlfi_rx *r;
	uint32_t src_index = 0;

	if (src != FI_ADDR_UNSPEC) {
		const struct cxlfi_av_entry *e = cxlfi_av_get(ep->av, src);

		if (!e)
			return -FI_EINVAL;
		src_index =
			e->net ? CXLFI_NET_SRC | (uint32_t)src : e->addr.index;
	}
	r = rx_new(ep);
	if (!r)
		return -FI_ENOMEM;
	r->buf = buf;
	r->len = len;
	r->src = src;
	r->src_index = src_index;
	r->tag = tag;
	r->ignore = ignore;
	r->flags = flags;
	r->context = context;
	if (flags & FI_PEEK)
		return peek(ep, r, tagged);
	if (flags & FI_MULTI_RECV) {
		if (tagged) {
			free(r);
			return -FI_EINVAL;
		}
		append_posted(ep, false, r);
		match_unexpected(ep);
		return 0;
	}
	for (u = ep->unexp; u; prev = u, u = u->next) {
		if (flags & FI_CLAIM ? u->claimed && u->claim_ctx == context
				     : ux_matches(u, tagged, src, src_index,
						  tag, ignore))
			break;
	}
	/* a message still arriving cannot be discarded yet: its remaining
	 * chunks are still to be drained into it */
	if (u && (flags & FI_DISCARD) && u->have != u->len) {
		free(r);
		return -FI_EAGAIN;
	}
	if (u) {
		unexp_remove(ep, u, prev);
		if (flags & FI_DISCARD) {
			complete_rx(ep, r, 0, u->tag, u->data, u->src_index,
				    tagged, false);
			unexp_free(ep, u);
			return 0;
		}
		deliver_unexp(ep, u, r);
		return 0;
	}
	if (flags & FI_CLAIM) {
		free(r);
		return -FI_EINVAL;
	}
	append_posted(ep, tagged, r);
	return 0;
}

ssize_t cxlfi_cancel(struct cxlfi_ep *ep, void *context)
{
	struct cxlfi_rx *lists[2] = { ep->trecv, ep->recv };

	for (int l = 0; l < 2; l++) {
		struct cxlfi_rx *prev = NULL;

		for (struct cxlfi_rx *r = lists[l]; r; prev = r, r = r->next) {
			if (r->context != context)
				continue;
			rx_unlink(ep, l == 0, r, prev);
			fail_posted(ep, r, l == 0, FI_ECANCELED);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void cxlfi_rx_free_all(struct cxlfi_ep *ep)
{
	while (ep->unexp) {
		struct cxlfi_unexp *u = ep->unexp;

		ep->unexp = u->next;
		unexp_free(ep, u);
	}
	free_list_rx(ep->trecv);
	free_list_rx(ep->recv);
	ep->trecv = ep->recv = NULL;
	ep->net_rx_posted = 0;
	for (struct cxlfi_fl_node *n; (n = cxlfi_fl_take(&ep->rx_cache));)
		free(CXLFI_FL_OBJ(n, struct cxlfi_rx, fl));
}

/* ---- the receive queue's owner side, for the network link ------------
 * (fi_peer(3), docs/multipool.md). The network provider asks for a
 * receive for each message it gets (get_msg/get_tag); it is matched
 * against the same posted queues as pool messages, so one receive queue
 * serves both paths in arrival order. What matches nothing is queued
 * here as an unexpected message whose data the network provider keeps;
 * the receive that matches it later starts it (start_msg/start_tag).
 * Every entry handed out asks for a completion (FI_COMPLETION), so that
 * its receive is finished here whether or not the user wants a CQ entry.
 */

/* A network peer's source key: its fi_addr, which the network provider
 * reports (FI_AV_USER_ID), or unknown before it is inserted. */
static uint32_t net_src(fi_addr_t a)
{
	return a == FI_ADDR_NOTAVAIL || a >= CXLFI_NET_SRC
		       ? CXLFI_NET_SRC_UNKNOWN
		       : CXLFI_NET_SRC | (uint32_t)a;
}

static struct cxlfi_ep *srx_ep(struct fipeer_srx *srx)
{
	return (struct cxlfi_ep *)((char *)srx -
				   offsetof(struct cxlfi_ep, srx));
}

/* The entry is the first member of struct cxlfi_netrx. */
static struct cxlfi_netrx *netrx_of(struct fipeer_rx_entry *e)
{
	return (struct cxlfi_netrx *)e;
}

/* Point entry n at receive r: the network provider writes into r's
 * buffer and reports n (cxlfi_rx_net_done). */
static void netrx_fill(struct cxlfi_netrx *n, struct cxlfi_rx *r, bool tagged)
{
	n->rx = r;
	n->iov.iov_base = r->buf;
	n->iov.iov_len = r->len;
	n->e.iov = &n->iov;
	n->e.count = 1;
	n->desc = NULL;
	n->e.desc = &n->desc;
	n->e.context = n;
	n->e.flags = FI_RECV | FI_COMPLETION | (tagged ? FI_TAGGED : FI_MSG);
}

void cxlfi_rx_net_done(struct cxlfi_netrx *n, size_t total, uint64_t data,
		       uint64_t tag, bool has_data, int err)
{
	struct cxlfi_ep *ep = n->ep;
	struct cxlfi_rx *r = n->rx;
	bool tagged = n->e.flags & FI_TAGGED;

	if (!r)
		return;
	n->rx = NULL;
	ep->net_hot = CXLFI_NET_HOT_CALLS; /* the link carries traffic */
	if (err && err != FI_ETRUNC) {
		ep->reported++;
		fail_matched(ep, r, tag, err);
		return;
	}
	cxlfi_stats.net_recv++;
	/* truncation included: complete_rx reports it as for the pool */
	complete_rx(ep, r, total, tag, data, net_src(n->e.addr), tagged,
		    has_data);
}

/* A zeroed entry for a message of the link, from the endpoint's cache if
 * it has one: a calloc and a free per message were a tenth of the
 * instructions a network ping-pong spends in the owner. */
static struct cxlfi_netrx *netrx_new(struct cxlfi_ep *ep)
{
	return CXLFI_FL_NEW(&ep->netrx_cache, struct cxlfi_netrx, fl);
}

void cxlfi_rx_net_cache_free(struct cxlfi_ep *ep)
{
	for (struct cxlfi_fl_node *n; (n = cxlfi_fl_take(&ep->netrx_cache));)
		free(CXLFI_FL_OBJ(n, struct cxlfi_netrx, fl));
}

static int srx_get(struct fipeer_srx *srx, struct fipeer_match_attr *a,
		   struct fipeer_rx_entry **out, bool tagged)
{
	struct cxlfi_ep *ep = srx_ep(srx);
	struct cxlfi_netrx *n = netrx_new(ep);
	struct cxlfi_rx *r;

	ep->net_hot = CXLFI_NET_HOT_CALLS; /* a message arrived */
	if (!n)
		return -FI_ENOMEM;
	n->ep = ep;
	n->e.srx = srx;
	n->e.addr = a->addr;
	n->e.msg_size = a->msg_size;
	n->e.tag = tagged ? a->tag : 0;
	n->e.flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	*out = &n->e;
	r = take_posted(ep, tagged, net_src(a->addr), n->e.tag, a->msg_size);
	if (!r)
		return -FI_ENOENT;
	netrx_fill(n, r, tagged);
	return 0;
}

static int srx_get_msg(struct fipeer_srx *srx, struct fipeer_match_attr *a,
		       struct fipeer_rx_entry **out)
{
	return srx_get(srx, a, out, false);
}

static int srx_get_tag(struct fipeer_srx *srx, struct fipeer_match_attr *a,
		       struct fipeer_rx_entry **out)
{
	return srx_get(srx, a, out, true);
}

/* An unexpected network message, its data kept by the network provider
 * until a receive matches it. */
static int srx_queue(struct fipeer_rx_entry *e, bool tagged)
{
	struct cxlfi_netrx *n = netrx_of(e);
	struct cxlfi_unexp *u = calloc(1, sizeof(*u));

	if (!u)
		return -FI_ENOMEM;
	u->src_index = net_src(e->addr);
	u->tag = tagged ? e->tag : 0;
	u->data = e->cq_data;
	u->op = e->flags & FI_REMOTE_CQ_DATA ? OPF_DATA : 0;
	u->len = u->have = e->msg_size;
	u->tagged = tagged;
	u->net = n;
	unexp_append(n->ep, u);
	return 0;
}

static int srx_queue_msg(struct fipeer_rx_entry *e)
{
	return srx_queue(e, false);
}

static int srx_queue_tag(struct fipeer_rx_entry *e)
{
	return srx_queue(e, true);
}

/* The network provider learnt addresses: sources it could not name
 * before may have one now. */
static void srx_foreach_unspec(struct fipeer_srx *srx,
			       fi_addr_t (*get_addr)(struct fipeer_rx_entry *))
{
	for (struct cxlfi_unexp *u = srx_ep(srx)->unexp; u; u = u->next) {
		if (!u->net || u->src_index != CXLFI_NET_SRC_UNKNOWN)
			continue;
		u->net->e.addr = get_addr(&u->net->e);
		u->src_index = net_src(u->net->e.addr);
	}
}

/* The network provider is done with an entry. One handed back without
 * its completion lost its message: the receive fails. */
static void srx_free_entry(struct fipeer_rx_entry *e)
{
	struct cxlfi_netrx *n = netrx_of(e);

	if (n->rx)
		cxlfi_rx_net_done(n, 0, 0, e->tag, false, FI_EIO);
	if (!cxlfi_fl_give(&n->ep->netrx_cache, &n->fl))
		free(n);
}

static void netrx_start(struct cxlfi_ep *ep, struct cxlfi_unexp *u,
			struct cxlfi_rx *r)
{
	struct cxlfi_netrx *n = u->net;
	bool tagged = u->tagged;
	int rc;

	netrx_fill(n, r, tagged);
	n->e.tag = u->tag;
	free(u);
	/* the provider may complete it (cxlfi_rx_net_done) before this
	 * returns; n is its until free_entry */
	rc = tagged ? ep->srx.peer_ops->start_tag(&n->e)
		    : ep->srx.peer_ops->start_msg(&n->e);
	if (rc)
		cxlfi_rx_net_done(n, 0, 0, n->e.tag, false, rc < 0 ? -rc : rc);
}

static void netrx_discard(struct cxlfi_ep *ep, struct cxlfi_unexp *u)
{
	struct cxlfi_netrx *n = u->net;

	/* the entry goes back to the provider, which drops the data and
	 * reports nothing; the entry is ours to free (fi_peer(3)) */
	if (u->tagged)
		ep->srx.peer_ops->discard_tag(&n->e);
	else
		ep->srx.peer_ops->discard_msg(&n->e);
	free(n);
	u->net = NULL;
}

void cxlfi_rx_srx_init(struct cxlfi_ep *ep)
{
	ep->srx_ops = (struct fipeer_srx_owner_ops){
		.size = sizeof(ep->srx_ops),
		.get_msg = srx_get_msg,
		.get_tag = srx_get_tag,
		.queue_msg = srx_queue_msg,
		.queue_tag = srx_queue_tag,
		.foreach_unspec_addr = srx_foreach_unspec,
		.free_entry = srx_free_entry,
	};
	ep->srx.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	ep->srx.owner_ops = &ep->srx_ops;
}
