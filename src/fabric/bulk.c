/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transfer area of an endpoint: large messages, pointer passing and
 * delivery acknowledgements (docs/fabric.md, "Transfer area").
 *
 * Endpoint A creates "cxlfi.bk.<A>" (one 2 MiB block) the first time it
 * needs it. It is shared by all of A's destinations, so the pool holds one
 * per sending endpoint, not one per pair:
 *
 *   line 0          magic, tokens T, data slots S, slot size Z (A, once)
 *   line 1 + k      done word of token k: written only by the receiver
 *                   token k was last handed to (NT store)
 *   XA_DATA + k*Z   data slot k, for the first S tokens
 *
 * A token is handed to one receiver at a time, with a generation number
 * that A increments on every hand-off. The receiver returns it by storing
 * that generation in the token's done word; A considers it free when the
 * word equals the generation it handed out. So each done line has a single
 * writer at any time, no cross-host atomics are needed, and a late store
 * by a receiver that was declared dead (an older generation) is ignored.
 *
 * Descriptors travel through the ordinary channel, in message order:
 *   OP_BULK {tok, len, gen}            the next chunk is in data slot tok
 *   OP_PTR  {tok, 0, gen, off, len}    the rest of the message is at pool
 *                                      offset off (the sender's buffer
 *                                      lies in the pool): copy it once
 *   OP_ACK  {tok, 0, gen}              the message is complete; return tok
 * A sender waiting for OP_PTR's or OP_ACK's token completes the send only
 * when the token comes back (pointer passing, FI_DELIVERY_COMPLETE). A
 * delivery-complete message whose last bytes go through a data slot
 * waits for that slot's token instead (CXLFI_OPF_RETURN on its
 * descriptor): the receiver returns it once those bytes are placed, which
 * is when an OP_ACK behind them would return, one ring message earlier.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlfi.h"

#define XA_MAGIC 0x31304158494643ull /* "CFIXA01" */
#define XA_SIZE (2u << 20)
#define XA_DATA (12u << 10) /* after line 0 and T done lines, 4 KiB aligned */
#define XA_SLOT_SIZE CXLFI_XA_SLOT_SIZE
#define XA_SLOTS ((XA_SIZE - XA_DATA) / XA_SLOT_SIZE) /* 31 */
#define XA_TOKENS CXLFI_XA_TOKENS
/* Data slots one destination may always hold, and those it must leave
 * free for the others beyond that share (docs/fabric.md, "Decisions"): a
 * lone stream holds up to 23, and a receiver that stops taking its
 * messages leaves at least 8 to the rest. */
#define XA_PEER_SLOTS 16u
#define XA_SLOTS_SPARE 8u
/* A done word: the generation returned, and in the top bits an error the
 * receiver reports with the token (positive FI_* code, 0: none). */
#define XA_ERR_SHIFT 48
#define XA_GEN_MASK ((1ull << XA_ERR_SHIFT) - 1)

_Static_assert((1 + XA_TOKENS) * CXL_LINE <= XA_DATA, "done lines fit");
_Static_assert(XA_SLOTS > 0 && XA_SLOTS < XA_TOKENS, "slot geometry");

struct desc_bulk {
	uint32_t tok;
	uint32_t len;
	uint64_t gen;
};

_Static_assert(sizeof(struct desc_bulk) == CXLFI_DESC_BULK_SIZE,
	       "descriptor size");

struct desc_ptr {
	struct desc_bulk h; /* tok, 0, gen */
	uint64_t off, len;
};

static uint64_t *done_word(const struct cxl_obj *o, uint32_t tok)
{
	return (uint64_t *)((uint8_t *)o->ptr + (size_t)(1 + tok) * CXL_LINE);
}

static uint8_t *slot_ptr(const struct cxl_obj *o, uint32_t k)
{
	return (uint8_t *)o->ptr + XA_DATA + (size_t)k * XA_SLOT_SIZE;
}

/* ---- sender side ----------------------------------------------------- */

static int xa_create(struct cxlfi_ep *ep)
{
	cxl_pool *pool = ep->dom->pool;
	uint64_t *hdr;
	char name[64];
	int rc;

	ep->tok = calloc(XA_TOKENS, sizeof(*ep->tok));
	if (!ep->tok)
		return -FI_ENOMEM;
	snprintf(name, sizeof(name), "cxlfi.bk.%u", ep->index);
	rc = cxl_obj_create(pool, name, XA_SIZE, CXL_OBJ_ALIGN_2M, &ep->xa);
	if (rc == CXL_EEXIST) { /* an earlier endpoint's with our index */
		cxl_obj_destroy(pool, name);
		rc = cxl_obj_create(pool, name, XA_SIZE, CXL_OBJ_ALIGN_2M,
				    &ep->xa);
	}
	if (rc) {
		free(ep->tok);
		ep->tok = NULL;
		/* or raise FI_CXL_BULK_MIN: large messages then use rings */
		return cxlfi_pool_failure(rc, "the 2 MiB transfer area", name);
	}
	ep->xa_free = XA_SLOTS;
	hdr = ep->xa.ptr;
	/* done words start at 0 and every generation handed out is >= 1 */
	memset(hdr, 0, XA_DATA);
	hdr[0] = XA_MAGIC;
	hdr[1] = XA_TOKENS;
	hdr[2] = XA_SLOTS;
	hdr[3] = XA_SLOT_SIZE;
	/* header and done lines in the pool before any descriptor names them */
	cxl_flush(pool, hdr, XA_DATA);
	cxl_wfence(pool);
	return 0;
}

int cxlfi_xa_prepare(struct cxlfi_ep *ep)
{
	return ep->xa.pool ? 0 : xa_create(ep);
}

static void tok_release(struct cxlfi_ep *ep, uint32_t k)
{
	struct cxlfi_tok *tk = &ep->tok[k];
	struct cxlfi_peer *pe = ep->peers[tk->peer];

	tk->busy = false;
	if (k < XA_SLOTS) {
		ep->xa_free++;
		if (pe && pe->xa_slots)
			pe->xa_slots--;
	}
}

/* Take back the data slots whose receivers have returned them. */
static void reclaim_slots(struct cxlfi_ep *ep)
{
	cxl_pool *pool = ep->dom->pool;

	/* one invalidation of the S done lines, then plain loads; a slot a
	 * send waits for is cxlfi_xa_poll's, which completes that send */
	cxl_inval(pool, done_word(&ep->xa, 0), XA_SLOTS * CXL_LINE);
	for (uint32_t k = 0; k < XA_SLOTS; k++)
		if (ep->tok[k].busy && !ep->tok[k].waiter &&
		    (__atomic_load_n(done_word(&ep->xa, k), __ATOMIC_ACQUIRE) &
		     XA_GEN_MASK) == ep->tok[k].gen)
			tok_release(ep, k);
}

/* t completes when token k returns (cxlfi_xa_poll). */
static void wait_for(struct cxlfi_ep *ep, struct cxlfi_tx *t, uint32_t k)
{
	ep->tok[k].waiter = t;
	ep->xa_waiting++;
	t->wait_tok = (int)k;
}

/* Data slots handed to live peers and not returned yet, after a look at
 * the done words: a receiver opens our area by name when it takes the
 * first descriptor, so the area must outlive them (cxlfi_ep_unpublish). */
unsigned cxlfi_xa_in_flight(struct cxlfi_ep *ep)
{
	unsigned n = 0;

	if (!ep->xa.pool || !ep->tok)
		return 0;
	reclaim_slots(ep);
	for (uint32_t k = 0; k < XA_SLOTS; k++) {
		const struct cxlfi_peer *pe =
			ep->tok[k].busy ? ep->peers[ep->tok[k].peer] : NULL;

		if (pe && !pe->dead)
			n++;
	}
	return n;
}

/* A free token in [lo, hi), handed to pe with a new generation; or -1. */
static int tok_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint32_t lo,
		    uint32_t hi)
{
	for (uint32_t k = lo; k < hi; k++) {
		struct cxlfi_tok *tk = &ep->tok[k];

		if (tk->busy)
			continue;
		tk->busy = true;
		tk->gen = (tk->gen + 1) & XA_GEN_MASK;
		if (!tk->gen) /* 0 is the initial done word */
			tk->gen = 1;
		tk->peer = pe->index;
		tk->waiter = NULL;
		if (k < XA_SLOTS) {
			ep->xa_free--;
			pe->xa_slots++;
		}
		return (int)k;
	}
	return -1;
}

/* May pe take one more data slot? Its share, or beyond it while
 * XA_SLOTS_SPARE others stay free. */
static bool slot_allowed(const struct cxlfi_ep *ep, const struct cxlfi_peer *pe)
{
	return ep->xa_free &&
	       (pe->xa_slots < XA_PEER_SLOTS || ep->xa_free > XA_SLOTS_SPARE);
}

static int data_slot(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	int k = -1;

	if (slot_allowed(ep, pe))
		k = tok_take(ep, pe, 0, XA_SLOTS);
	if (k < 0) {
		reclaim_slots(ep);
		if (slot_allowed(ep, pe))
			k = tok_take(ep, pe, 0, XA_SLOTS);
	}
	return k;
}

static int send_desc(struct cxlfi_peer *pe, const void *d, size_t n,
		     uint32_t op)
{
	int rc = cxl_ring_send(pe->tx, d, n, op, 0);

	if (rc) { /* cxl_ring_send_ready() said it fits */
		CXLFI_WARN(FI_LOG_EP_DATA, "descriptor to endpoint %u: %s\n",
			   pe->index, cxl_errmsg());
		return -FI_EIO;
	}
	return 1;
}

/* The next n bytes of t in a free data slot, written back (or streamed)
 * and fenced, so that a descriptor may name them: d describes the slot.
 * 1 done, 0 no ring cell for the descriptor or no slot yet, < 0 error. */
static int slot_fill(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		     const struct cxlfi_tx *t, size_t n, struct desc_bulk *d)
{
	cxl_pool *pool = ep->dom->pool;
	int rc, k;

	if ((rc = cxlfi_xa_prepare(ep)))
		return rc;
	/* the descriptor must fit before a slot is spent */
	if (!cxl_ring_send_ready(pe->tx) || (k = data_slot(ep, pe)) < 0)
		return 0;
	d->tok = (uint32_t)k;
	d->len = (uint32_t)n;
	d->gen = ep->tok[k].gen;
	cxl_copy_to_pool(pool, slot_ptr(&ep->xa, d->tok), t->buf + t->off, n);
	cxl_wfence(pool);	    /* the data before any descriptor of it */
	ep->lazy_fence_due = false; /* tokens and heads: fenced too */
	return 1;
}

int cxlfi_bulk_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    struct cxlfi_tx *t)
{
	struct desc_bulk d;
	size_t n =
		t->len - t->off < XA_SLOT_SIZE ? t->len - t->off : XA_SLOT_SIZE;
	bool last = t->slot_done && t->off + n == t->len;
	int rc;

	if ((rc = slot_fill(ep, pe, t, n, &d)) <= 0)
		return rc;
	if ((rc = send_desc(pe, &d, sizeof(d),
			    CXLFI_OP_BULK | (last ? CXLFI_OPF_RETURN : 0))) <
	    0) {
		tok_release(ep, d.tok);
		return rc;
	}
	if (last)
		wait_for(ep, t, d.tok);
	t->off += n;
	return 1;
}

int cxlfi_bulk_push_whole(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			  struct cxlfi_tx *t, size_t h, uint32_t op)
{
	struct desc_bulk d;
	int rc;

	if ((rc = slot_fill(ep, pe, t, t->len, &d)) <= 0)
		return rc;
	memcpy(ep->tx_scratch, &d, sizeof(d));
	/* the cell's own fence is the batch's, as an eager cell's
	 * (cxlfi_ep_settle) */
	rc = cxl_ring_send(pe->tx, ep->tx_scratch, sizeof(d) + h, op,
			   CXL_RING_NOFENCE);
	if (rc) { /* cxl_ring_send_ready() said it fits */
		tok_release(ep, d.tok);
		CXLFI_WARN(FI_LOG_EP_DATA, "first cell to endpoint %u: %s\n",
			   pe->index, cxl_errmsg());
		return -FI_EIO;
	}
	ep->fence_due = true;
	if (op & CXLFI_OPF_RETURN)
		wait_for(ep, t, d.tok);
	return 1;
}

bool cxlfi_ptr_usable(struct cxlfi_ep *ep, const void *buf, size_t len)
{
	return len && cxl_pool_offset(ep->dom->pool, buf) != UINT64_MAX &&
	       cxl_pool_offset(ep->dom->pool, (const uint8_t *)buf + len - 1) !=
		       UINT64_MAX;
}

/* Send descriptor d, whose header h gets a token-only token handed to
 * pe; t then waits for that token's return. [wb, wb+wbn) is data the
 * descriptor points at: written back, once a token is ours, before the
 * descriptor goes out. 1 sent, 0 no ring cell or token yet, < 0 error. */
static int send_waiting(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			struct cxlfi_tx *t, const void *d, struct desc_bulk *h,
			size_t n, uint32_t op, const void *wb, size_t wbn)
{
	cxl_pool *pool = ep->dom->pool;
	int rc, k;

	if ((rc = cxlfi_xa_prepare(ep)))
		return rc;
	if (!cxl_ring_send_ready(pe->tx) ||
	    (k = tok_take(ep, pe, XA_SLOTS, XA_TOKENS)) < 0)
		return 0;
	h->tok = (uint32_t)k;
	h->gen = ep->tok[k].gen;
	if (wbn) { /* the fence orders the data before the descriptor */
		cxl_flush(pool, wb, wbn);
		cxl_wfence(pool);
	}
	if ((rc = send_desc(pe, d, n, op)) < 0) {
		tok_release(ep, (uint32_t)k);
		return rc;
	}
	wait_for(ep, t, (uint32_t)k);
	return 1;
}

int cxlfi_ptr_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		   struct cxlfi_tx *t)
{
	struct desc_ptr d = { 0 };
	int rc;

	d.off = cxl_pool_offset(ep->dom->pool, t->buf + t->off);
	d.len = t->len - t->off;
	/* our stores to the buffer reach the pool before the receiver
	 * reads it */
	rc = send_waiting(ep, pe, t, &d, &d.h, sizeof(d), CXLFI_OP_PTR,
			  t->buf + t->off, d.len);
	if (rc == 1)
		t->off = t->len;
	return rc;
}

int cxlfi_ack_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		   struct cxlfi_tx *t)
{
	struct desc_bulk d = { 0 };

	return send_waiting(ep, pe, t, &d, &d, sizeof(d), CXLFI_OP_ACK, NULL,
			    0);
}

/* Complete the sends whose pointer, acknowledgement or last data slot
 * token came back. */
void cxlfi_xa_poll(struct cxlfi_ep *ep,
		   void (*done)(struct cxlfi_ep *, struct cxlfi_tx *, int))
{
	cxl_pool *pool = ep->dom->pool;
	uint32_t lo = XA_TOKENS, hi = 0;
	bool swept;

	if (!ep->xa_waiting)
		return;
	for (uint32_t k = 0; k < XA_TOKENS; k++)
		if (ep->tok[k].busy && ep->tok[k].waiter) {
			lo = lo < k ? lo : k;
			hi = k + 1;
		}
	if (hi <= lo)
		return;
	/* One token: one NT load. Several (a stream of delivery-complete
	 * sends): one invalidation of the done lines from the first to the
	 * last, one fence, then plain loads, instead of a fence each. */
	swept = ep->xa_waiting > 1;
	if (swept)
		cxl_inval(pool, done_word(&ep->xa, lo),
			  (size_t)(hi - lo) * CXL_LINE);
	for (uint32_t k = lo; ep->xa_waiting && k < hi; k++) {
		struct cxlfi_tok *tk = &ep->tok[k];
		struct cxlfi_tx *t = tk->waiter;
		const uint64_t *w = done_word(&ep->xa, k);
		uint64_t v;

		if (!tk->busy || !t)
			continue;
		v = swept ? __atomic_load_n(w, __ATOMIC_ACQUIRE)
			  : cxl_nt_load64(pool, w);
		if ((v & XA_GEN_MASK) != tk->gen)
			continue;
		tok_release(ep, k);
		tk->waiter = NULL;
		ep->xa_waiting--;
		/* the receiver's error for it (a refused RMA write), if any */
		done(ep, t, (int)(v >> XA_ERR_SHIFT));
	}
}

/* Peer pe is dead: its tokens come back, their sends fail. */
void cxlfi_xa_peer_dead(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			void (*done)(struct cxlfi_ep *, struct cxlfi_tx *, int))
{
	for (uint32_t k = 0; ep->tok && k < XA_TOKENS; k++) {
		struct cxlfi_tok *tk = &ep->tok[k];
		struct cxlfi_tx *t = tk->waiter;

		if (!tk->busy || tk->peer != pe->index)
			continue;
		tok_release(ep, k);
		tk->waiter = NULL;
		if (t) {
			ep->xa_waiting--;
			done(ep, t, FI_EHOSTUNREACH);
		}
	}
}

void cxlfi_xa_destroy(struct cxlfi_ep *ep)
{
	char name[64];

	for (uint32_t k = 0; ep->tok && k < XA_TOKENS; k++)
		if (ep->tok[k].waiter) { /* sends never completed */
			free(ep->tok[k].waiter->copy);
			free(ep->tok[k].waiter);
		}
	free(ep->tok);
	ep->tok = NULL;
	ep->xa_waiting = 0;
	if (ep->xa.pool) {
		cxl_obj_close(&ep->xa);
		snprintf(name, sizeof(name), "cxlfi.bk.%u", ep->index);
		/* unlinked now; freed when the last receiver closes it */
		cxl_obj_destroy(ep->dom->pool, name);
	}
}

/* ---- receiver side --------------------------------------------------- */

static int xa_open_rx(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	cxl_pool *pool = ep->dom->pool;
	const uint64_t *hdr;
	char name[64];

	if (pe->bkrx.pool)
		return 0;
	snprintf(name, sizeof(name), "cxlfi.bk.%u", pe->index);
	if (cxl_obj_open(pool, name, &pe->bkrx))
		return -1;
	hdr = pe->bkrx.ptr;
	cxl_inval(pool, hdr, CXL_LINE);
	/* geometry from the pool is checked before any slot is touched */
	if (pe->bkrx.size < XA_SIZE || hdr[0] != XA_MAGIC ||
	    hdr[1] != XA_TOKENS || hdr[2] != XA_SLOTS ||
	    hdr[3] != XA_SLOT_SIZE) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "transfer area %s is malformed; messages that use "
			   "it fail\n",
			   name);
		cxl_obj_close(&pe->bkrx);
		return -1;
	}
	return 0;
}

/* Return token tok of the sender's area: store its generation. The copy
 * out of the slot or buffer is complete: stores are not reordered with
 * older loads. A sender waiting for this token (pointer passing, delivery
 * complete) gets it fenced now. A data slot's return waits for the next
 * fence this endpoint issues, at the latest at the start of its next
 * progress call: the store is only late until then (and the processor
 * drains its write-combining buffers on its own too). So a stream of slots
 * pays one fence per progress call, and a reply's fence covers the return
 * instead of a wait for it before the receive completes. */
static void tok_return(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint32_t tok,
		       uint64_t gen, bool waited)
{
	if (waited) {
		cxl_flag_set(ep->dom->pool, done_word(&pe->bkrx, tok), gen);
		return;
	}
	cxl_nt_store64(ep->dom->pool, done_word(&pe->bkrx, tok), gen);
	ep->lazy_fence_due = true;
}

/* Copy n bytes that a message from pe named out of the pool. In a stream
 * the sweep of [src, src + n) also covers the next poll of pe's ring, with
 * the one fence both need: such messages then pay one fence each. Not in a
 * ping-pong: the next message is not there yet, and the look at a line
 * swept too early cost 0.15 µs at 4 KiB (docs/benchmarks.md). */
static void copy_in(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint8_t *dst,
		    const uint8_t *src, size_t n)
{
	if (!pe->rx_stream) {
		cxl_copy_from_pool(ep->dom->pool, dst, src, n);
		return;
	}
	cxl_ring_inval_with(pe->rx, src, n);
	memcpy(dst, src, n);
}

size_t cxlfi_bulk_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		       const uint8_t *m, size_t n, uint8_t *dst, size_t cap,
		       bool waited)
{
	struct desc_bulk d;
	const uint8_t *src;

	if (n != sizeof(d) || xa_open_rx(ep, pe))
		return 0;
	memcpy(&d, m, sizeof(d));
	if (d.tok >= XA_SLOTS || d.len == 0 || d.len > XA_SLOT_SIZE)
		return 0;
	src = slot_ptr(&pe->bkrx, d.tok);
	if (dst && cap)
		copy_in(ep, pe, dst, src, d.len < cap ? d.len : cap);
	tok_return(ep, pe, d.tok, d.gen, waited);
	return d.len;
}

size_t cxlfi_ptr_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		      const uint8_t *m, size_t n, size_t want, uint8_t *dst,
		      size_t cap)
{
	cxl_pool *pool = ep->dom->pool;
	struct desc_ptr d;
	const uint8_t *src;

	if (n != sizeof(d) || xa_open_rx(ep, pe))
		return 0;
	memcpy(&d, m, sizeof(d));
	if (d.h.tok < XA_SLOTS || d.h.tok >= XA_TOKENS)
		return 0;
	/* the range must be the rest of the message and lie in the pool */
	src = d.len == want ? cxl_pool_ptr(pool, d.off, d.len) : NULL;
	if (src && dst && cap)
		copy_in(ep, pe, dst, src, d.len < cap ? d.len : cap);
	tok_return(ep, pe, d.h.tok, d.h.gen, true); /* the sender waits */
	return src ? d.len : 0;
}

size_t cxlfi_ptr_len(struct cxlfi_ep *ep, const uint8_t *m, size_t n)
{
	struct desc_ptr d;

	if (n != sizeof(d))
		return 0;
	memcpy(&d, m, sizeof(d));
	return cxl_pool_ptr(ep->dom->pool, d.off, d.len) ? (size_t)d.len : 0;
}

void cxlfi_ack_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    const uint8_t *m, size_t n)
{
	struct desc_bulk d;

	if (n != sizeof(d) || xa_open_rx(ep, pe))
		return;
	memcpy(&d, m, sizeof(d));
	/* an RMA write refused by the target (no such key, no access, out
	 * of bounds) returns its token with the error */
	if (d.tok >= XA_SLOTS && d.tok < XA_TOKENS)
		tok_return(ep, pe, d.tok,
			   (d.gen & XA_GEN_MASK) |
				   (uint64_t)(uint32_t)pe->ack_err
					   << XA_ERR_SHIFT,
			   true);
	pe->ack_err = 0;
}

void cxlfi_bulk_close(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	(void)ep;
	if (pe->bkrx.pool)
		cxl_obj_close(&pe->bkrx);
}
