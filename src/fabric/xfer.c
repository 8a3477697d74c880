/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Message transfer on a channel (proto.h). Out: the cells of a send, one
 * eager cell or a first cell and then chunks in ring cells, in data slots
 * of the transfer area (FI_CXL_BULK_MIN) or, for a buffer in the pool, a
 * pointer to it (bulk.c); and the OP_ACK of a delivery-complete send. In:
 * the later chunks of a message, into the matched receive or the growing
 * unexpected buffer; recv.c completes or fails the message.
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* largest message whose first cell holds the header only (see below) */
#define XFER_WHOLE_MAX 16384u

static uint32_t tx_op(const struct cxlfi_tx *t)
{
	static const uint32_t kind_op[] = {
		[CXLFI_TX_MSG] = 0,
		[CXLFI_TX_WRITE] = OPF_WRITE,
		[CXLFI_TX_READREQ] = OPF_READREQ,
		[CXLFI_TX_READRSP] = OPF_READRSP,
		[CXLFI_TX_ATOMREQ] = OPF_ATOMREQ,
		[CXLFI_TX_ATOMRSP] = OPF_READRSP,
	};

	/* a delivery-complete send that is neither passed by pointer nor
	 * ends in a data slot is followed by its OP_ACK (cxlfi_xfer_push) */
	bool acked = (t->flags & FI_DELIVERY_COMPLETE) && !t->ptr_ok &&
		     !t->slot_done;

	return (t->flags & FI_TAGGED ? OPF_TAGGED : 0) |
	       (t->flags & FI_REMOTE_CQ_DATA ? OPF_DATA : 0) |
	       (acked ? OPF_ACKNEXT : 0) | kind_op[t->kind];
}

static size_t put_hdr(uint8_t *p, const struct cxlfi_tx *t)
{
	size_t n = 0;

	memcpy(p, &t->tag, 8);
	n += 8;
	if (t->kind == CXLFI_TX_WRITE) {
		memcpy(p + n, &t->rma_addr, 8);
		n += 8;
	}
	if (t->flags & FI_REMOTE_CQ_DATA) {
		memcpy(p + n, &t->data, 8);
		n += 8;
	}
	return n;
}

/* Push cells of t. 1: all sent; 0: ring full; < 0: error. */
int cxlfi_xfer_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    struct cxlfi_tx *t)
{
	size_t P = ep->eager_payload; /* one ring message, spanning cells */
	int rc;

	if (!t->started) {
		size_t h = put_hdr(ep->tx_scratch, t);

		if (h + t->len <= P && !t->ptr_ok) {
			if (t->len) /* a 0-byte send may have a NULL buffer */
				memcpy(ep->tx_scratch + h, t->buf, t->len);
			/* no fence: one per batch (cxlfi_ep_settle) */
			rc = cxl_ring_send(pe->tx, ep->tx_scratch, h + t->len,
					   OP_EAGER | tx_op(t),
					   CXL_RING_NOFENCE);
			if (rc == CXL_EAGAIN)
				return 0;
			if (rc)
				goto err;
			ep->fence_due = true;
			t->off = t->len;
			t->started = true;
			goto ack;
		}
		bool rest = t->len >= cxlfi_params.bulk_min || t->ptr_ok;

		/* Its last bytes go through a data slot, whose token then
		 * stands for the OP_ACK of a delivery-complete message
		 * (bulk.c). Not an RMA write: a refusal comes back with
		 * its OP_ACK. */
		t->slot_done = rest && !t->ptr_ok &&
			       (t->flags & FI_DELIVERY_COMPLETE) &&
			       t->kind == CXLFI_TX_MSG;
		/* the transfer area exists before the first cell goes out,
		 * so that the message is never left half sent */
		if (rest && (rc = cxlfi_xa_prepare(ep)))
			return rc;
		/* The rest goes through the transfer area or by pointer. A
		 * message of up to XFER_WHOLE_MAX on a pool without
		 * coherence goes there whole, in one copy that streams from
		 * 4 KiB, and its first cell holds the header only: one line
		 * the receiver's poll sweep covers. Through a data slot,
		 * that cell also names the slot (OPF_SLOT), and goes after
		 * the data's fence with the batch's (cxlfi_ep_settle); by
		 * pointer, without a fence, as the data's fence follows.
		 * On a coherent pool a message goes whole only through a
		 * slot and up to CXL_STREAM_COPY_MIN, where the slot takes
		 * it in a cached copy. Larger messages, and the others on a
		 * coherent pool, put one cell of payload first, which
		 * measured faster there (docs/benchmarks.md, "Decisions"). */
		bool apart =
			rest && t->len <= XFER_WHOLE_MAX &&
			(cxl_pool_mode(ep->dom->pool) != CXL_COH_COHERENT ||
			 (!t->ptr_ok && t->len <= CXL_STREAM_COPY_MIN));

		memcpy(ep->tx_scratch + h, &(uint64_t){ t->len }, 8);
		h += 8;
		if (apart && !t->ptr_ok) {
			memmove(ep->tx_scratch + CXLFI_DESC_BULK_SIZE,
				ep->tx_scratch, h);
			rc = cxlfi_bulk_push_whole(
				ep, pe, t, h,
				OP_FIRST | OPF_SLOT | tx_op(t) |
					(t->slot_done ? CXLFI_OPF_RETURN : 0));
			if (rc <= 0) /* not started: all again next time */
				return rc;
			t->off = t->len;
			t->started = true;
			goto ack;
		}
		if (apart)
			P = h;
		else if (rest)
			P = ep->cell_payload;
		memcpy(ep->tx_scratch + h, t->buf, P - h);
		rc = cxl_ring_send(pe->tx, ep->tx_scratch, P,
				   OP_FIRST | tx_op(t),
				   apart ? CXL_RING_NOFENCE : 0);
		if (rc == CXL_EAGAIN)
			return 0;
		if (rc)
			goto err;
		if (apart)
			ep->fence_due = true;
		t->off = P - h;
		t->started = true;
		t->bulk = t->len >= cxlfi_params.bulk_min;
	}
	/* pointer passing: the receiver copies the rest straight from our
	 * buffer in the pool, and the send completes when it has */
	if (t->ptr_ok && t->off < t->len) {
		rc = cxlfi_ptr_push(ep, pe, t);
		if (rc <= 0)
			return rc;
	}
	while (t->bulk && t->off < t->len) {
		rc = cxlfi_bulk_push(ep, pe, t);
		if (rc <= 0)
			return rc;
	}
	while (t->off < t->len) {
		size_t n = t->len - t->off < P ? t->len - t->off : P;

		rc = cxl_ring_send(pe->tx, t->buf + t->off, n, OP_CONT, 0);
		if (rc == CXL_EAGAIN)
			return 0;
		if (rc)
			goto err;
		t->off += n;
	}
ack:
	/* FI_DELIVERY_COMPLETE: complete when the receiver has consumed the
	 * message, which it shows by returning the token of an OP_ACK */
	if ((t->flags & FI_DELIVERY_COMPLETE) && t->wait_tok < 0 && !t->acked) {
		rc = cxlfi_ack_push(ep, pe, t);
		if (rc <= 0)
			return rc;
		t->acked = true;
	}
	return 1;
err:
	CXLFI_WARN(FI_LOG_EP_DATA, "send to endpoint %u failed: %s\n",
		   pe->index, cxl_errmsg());
	return -FI_EIO;
}

void cxlfi_xfer_copy(struct cxlfi_rx *r, size_t off, const void *p, size_t n)
{
	if (off < r->len)
		memcpy((uint8_t *)r->buf + off, p,
		       n < r->len - off ? n : r->len - off);
}

/* n more bytes of the message in progress from pe are in place (ring
 * chunk or bulk slot): advance. 1 once all of it is there, else 0. */
static int chunk_arrived(struct cxlfi_peer *pe, size_t n)
{
	pe->rx_off += n;
	pe->rx_left -= n;
	if (pe->ux_cur)
		pe->ux_cur->have = pe->rx_off;
	return pe->rx_left == 0;
}

/* Room in the unexpected message in progress for need bytes in all (the
 * caller fails the message if there is none). */
static bool ux_reserve(struct cxlfi_peer *pe, size_t need)
{
	struct cxlfi_unexp *u = pe->ux_cur;
	size_t cap;
	uint8_t *b;

	if (need <= u->cap)
		return true;
	cap = u->cap * 2 > need ? u->cap * 2 : need;
	if (cap > u->len)
		cap = u->len;
	if (!(b = realloc(u->buf, cap))) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "out of memory buffering an unexpected message of "
			   "%zu bytes from endpoint %u; it is dropped\n",
			   u->len, pe->index);
		return false;
	}
	u->buf = b;
	u->cap = cap;
	return true;
}

int cxlfi_xfer_chunk(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		     const uint8_t *m, size_t n)
{
	(void)ep;
	if (!pe->rx_left || n > pe->rx_left) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "unexpected chunk from endpoint %u "
			   "dropped\n",
			   pe->index);
		return 0;
	}
	if (pe->rx_cur)
		cxlfi_xfer_copy(pe->rx_cur, pe->rx_off, m, n);
	else if (ux_reserve(pe, pe->rx_off + n))
		memcpy(pe->ux_cur->buf + pe->rx_off, m, n);
	else
		return -FI_ENOMEM;
	return chunk_arrived(pe, n);
}

/* A bulk descriptor: its chunk goes straight from the bulk slot into the
 * matched receive (or the unexpected buffer), without a staging copy. */
int cxlfi_xfer_bulk(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    const uint8_t *m, size_t n, bool waited)
{
	uint8_t *dst = NULL;
	size_t cap = 0, got;

	if (!pe->rx_left) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "unexpected bulk chunk from endpoint %u dropped\n",
			   pe->index);
		/* still free it */
		cxlfi_bulk_take(ep, pe, m, n, NULL, 0, waited);
		return 0;
	}
	if (pe->rx_cur && pe->rx_off < pe->rx_cur->len) {
		dst = (uint8_t *)pe->rx_cur->buf + pe->rx_off;
		cap = pe->rx_cur->len - pe->rx_off;
	} else if (pe->ux_cur) {
		cap = pe->rx_left < CXLFI_XA_SLOT_SIZE ? pe->rx_left
						       : CXLFI_XA_SLOT_SIZE;
		if (!ux_reserve(pe, pe->rx_off + cap)) {
			/* free it */
			cxlfi_bulk_take(ep, pe, m, n, NULL, 0, waited);
			return -FI_ENOMEM;
		}
		dst = pe->ux_cur->buf + pe->rx_off;
	}
	got = cxlfi_bulk_take(ep, pe, m, n, dst, cap, waited);
	if (!got || got > pe->rx_left) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "bad bulk descriptor from endpoint %u; the message "
			   "fails\n",
			   pe->index);
		return -FI_EIO;
	}
	return chunk_arrived(pe, got);
}

/* A pointer descriptor: the rest of the message is in the pool, in the
 * sender's buffer. One copy into the receive (or unexpected) buffer. */
int cxlfi_xfer_ptr(struct cxlfi_ep *ep, struct cxlfi_peer *pe, const uint8_t *m,
		   size_t n)
{
	uint8_t *dst = NULL;
	size_t cap = 0, got;

	if (pe->rx_cur && pe->rx_off < pe->rx_cur->len) {
		dst = (uint8_t *)pe->rx_cur->buf + pe->rx_off;
		cap = pe->rx_cur->len - pe->rx_off;
	} else if (pe->ux_cur && pe->rx_left &&
		   cxlfi_ptr_len(ep, m, n) == pe->rx_left) {
		/* room for the rest only once its range is known to lie in
		 * the pool (so it is bounded by data the peer really holds) */
		if (!ux_reserve(pe, pe->rx_off + pe->rx_left)) {
			cxlfi_ptr_take(ep, pe, m, n, 0, NULL, 0); /* return */
			return -FI_ENOMEM;
		}
		dst = pe->ux_cur->buf + pe->rx_off;
		cap = pe->rx_left;
	}
	got = cxlfi_ptr_take(ep, pe, m, n, pe->rx_left, dst, cap);
	if (!got) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "bad pointer descriptor from endpoint %u; the "
			   "message fails\n",
			   pe->index);
		return pe->rx_left ? -FI_EIO : 0;
	}
	return chunk_arrived(pe, got);
}
