/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sending (proto.h): a send goes out at once through xfer.c, or waits in
 * its peer's FIFO queue for ring space (per-pair order); its completion is
 * reported here when it went out, or when its transfer-area token came
 * back (bulk.c).
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define TXQ_MAX 1024u /* queued sends per peer before -FI_EAGAIN */

void cxlfi_tx_report(struct cxlfi_ep *ep, const struct cxlfi_tx *t, int err)
{
	uint64_t f = FI_SEND | (t->flags & FI_TAGGED ? FI_TAGGED : FI_MSG);

	/* the read or atomic reports on its answer, not this */
	if (t->kind == CXLFI_TX_READREQ || t->kind == CXLFI_TX_ATOMREQ)
		return;
	ep->reported++;
	if (t->kind == CXLFI_TX_READRSP || t->kind == CXLFI_TX_ATOMRSP) {
		/* the remote counters (fi_cntr(3)): reads and fetching
		 * atomics count as remote reads, other atomics as writes */
		bool wr = t->kind == CXLFI_TX_ATOMRSP && !t->len;

		if (!err && !t->rma_err)
			cxlfi_cntr_inc(wr ? ep->rwr_cntr : ep->rrd_cntr, false);
		return;
	}
	if (t->kind == CXLFI_TX_WRITE) {
		struct cxlfi_peer *pe = ep->peers[t->peer];

		if (pe && pe->rma_pending)
			pe->rma_pending--;
		if (err && ep->tx_cq)
			cxlfi_cq_push_err(ep->tx_cq, t->context,
					  FI_RMA | FI_WRITE, 0, NULL, 0, 0, 0,
					  err);
		else if (t->flags & FI_COMPLETION)
			cxlfi_cq_push(ep->tx_cq, t->context, FI_RMA | FI_WRITE,
				      0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
		cxlfi_cntr_inc(ep->wr_cntr, err != 0);
		return;
	}

	if (!err) {
		cxlfi_stats.sent++;
		cxlfi_stats.bytes += t->len;
	}
	if (err && ep->tx_cq)
		cxlfi_cq_push_err(ep->tx_cq, t->context, f, 0, NULL, 0, 0, 0,
				  err);
	else if (t->flags & FI_COMPLETION)
		cxlfi_cq_push(ep->tx_cq, t->context, f, 0, NULL, 0, 0,
			      FI_ADDR_NOTAVAIL);
	cxlfi_cntr_inc(ep->tx_cntr, err != 0);
}

static void tx_free(struct cxlfi_tx *t)
{
	free(t->copy);
	free(t);
}

/* A queued or waiting send's record goes back to the endpoint's cache,
 * its inject copy with it, or is freed when the cache is full. */
static void tx_put(struct cxlfi_ep *ep, struct cxlfi_tx *t)
{
	if (!cxlfi_fl_give(&ep->tx_cache, &t->fl))
		tx_free(t);
}

void cxlfi_tx_free_cache(struct cxlfi_ep *ep)
{
	for (struct cxlfi_fl_node *n; (n = cxlfi_fl_take(&ep->tx_cache));)
		tx_free(CXLFI_FL_OBJ(n, struct cxlfi_tx, fl));
}

/* Complete a queued or waiting send and release its record. */
void cxlfi_tx_done(struct cxlfi_ep *ep, struct cxlfi_tx *t, int err)
{
	cxlfi_tx_report(ep, t, err);
	tx_put(ep, t);
}

/* Retry the queued sends of every blocked peer, in order. */
void cxlfi_tx_pending(struct cxlfi_ep *ep)
{
	struct cxlfi_peer **pp = &ep->txpend;

	while (*pp) {
		struct cxlfi_peer *pe = *pp;

		while (pe->txq) {
			struct cxlfi_tx *t = pe->txq;
			int rc = cxlfi_xfer_push(ep, pe, t);

			if (rc == 0)
				break;
			pe->txq = t->next;
			if (!pe->txq)
				pe->txq_tail = NULL;
			pe->ntx--;
			if (rc > 0 && t->wait_tok >= 0)
				continue; /* completes when its token returns */
			cxlfi_tx_done(ep, t, rc < 0 ? FI_EIO : 0);
		}
		if (!pe->txq) {
			pe->in_txlist = false;
			*pp = pe->next_tx;
		} else {
			pp = &pe->next_tx;
		}
	}
}

/* Everything we sent or asked of peer pe that it will never take up now
 * fails with FI_EHOSTUNREACH: sends queued for ring space, sends waiting
 * for tokens it holds (and its data slots), reads it will never answer. */
void cxlfi_tx_fail_peer(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	while (pe->txq) {
		struct cxlfi_tx *t = pe->txq;

		pe->txq = t->next;
		pe->ntx--;
		cxlfi_tx_done(ep, t, FI_EHOSTUNREACH);
	}
	pe->txq_tail = NULL;
	cxlfi_xa_peer_dead(ep, pe, cxlfi_tx_done);
	cxlfi_up.rma_peer_dead(ep, pe);
}

/* A heap copy of t, with the data of an inject (the caller's only until
 * we return): a cached record if there is one, whose copy buffer grows
 * as needed (up to the inject size, as injects are bounded by it). */
static struct cxlfi_tx *tx_copy(struct cxlfi_ep *ep, const struct cxlfi_tx *t)
{
	struct cxlfi_tx *q =
		CXLFI_FL_OBJ(cxlfi_fl_take(&ep->tx_cache), struct cxlfi_tx, fl);
	uint8_t *copy = NULL;
	size_t cap = 0;

	if (q) {
		copy = q->copy;
		cap = q->copy_cap;
	} else if (!(q = malloc(sizeof(*q)))) {
		return NULL;
	}
	*q = *t;
	q->next = NULL;
	q->copy = copy;
	q->copy_cap = cap;
	if (t->flags & FI_INJECT) {
		if (q->copy_cap < t->len || !q->copy) {
			size_t n = t->len ? t->len : 1;
			uint8_t *c = realloc(q->copy, n);

			if (!c) {
				tx_put(ep, q);
				return NULL;
			}
			q->copy = c;
			q->copy_cap = n;
		}
		if (t->len) /* a 0-byte inject may have a NULL buffer */
			memcpy(q->copy, t->buf, t->len);
		q->buf = q->copy;
	}
	return q;
}

ssize_t cxlfi_post(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		   const struct cxlfi_tx *tmpl, bool in_progress)
{
	struct cxlfi_tx t = *tmpl, *q = NULL;
	int rc;

	t.wait_tok = -1;
	t.peer = pe->index;
	/* an RMA write's refusal travels back with its OP_ACK: no pointer */
	t.ptr_ok = t.len >= cxlfi_params.bulk_min &&
		   t.len > cxlfi_params.eager_max && !(t.flags & FI_INJECT) &&
		   t.kind != CXLFI_TX_WRITE &&
		   cxlfi_ptr_usable(ep, t.buf, t.len);
	/* Sends that complete later, when a token returns, live on the heap
	 * from the start; the others only if they have to wait. */
	if ((t.ptr_ok || (t.flags & FI_DELIVERY_COMPLETE)) &&
	    !(q = tx_copy(ep, &t)))
		return -FI_ENOMEM;
	if (!pe->txq) {
		rc = cxlfi_xfer_push(ep, pe, q ? q : &t);
		if (rc < 0) {
			if (q)
				tx_put(ep, q);
			return rc;
		}
		if (rc == 1) {
			if (!q)
				cxlfi_tx_report(ep, &t, 0);
			else if (q->wait_tok <
				 0) /* sent whole, no token taken */
				cxlfi_tx_done(ep, q, 0);
			/* else: q completes when its token returns */
			return 0;
		}
	} else if (pe->ntx >= TXQ_MAX && !in_progress) {
		cxlfi_up.progress(ep);
		if (pe->ntx >= TXQ_MAX) {
			if (q)
				tx_put(ep, q);
			return -FI_EAGAIN;
		}
	}
	/* Queue behind earlier sends to this peer (order). */
	if (!q && !(q = tx_copy(ep, &t)))
		return -FI_ENOMEM;
	if (pe->txq_tail)
		pe->txq_tail->next = q;
	else
		pe->txq = q;
	pe->txq_tail = q;
	pe->ntx++;
	if (!pe->in_txlist) {
		pe->in_txlist = true;
		pe->next_tx = ep->txpend;
		ep->txpend = pe;
	}
	return 0;
}
