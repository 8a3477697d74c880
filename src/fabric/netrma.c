/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RMA and atomics to peers outside the pool (docs/multipool.md), over
 * the RMA endpoint of the network link (net.h): the network provider
 * moves messages only, so these are requests and answers of our own,
 * executed by the target's progress as on the pool's channels:
 *
 *   frame = struct frame_hdr [payload]
 *   WRITE     {rid, key, addr, len} [data]  -> WRITE_ACK  {rid, err}
 *             + {data, total} with NR_F_DATA: remote CQ data
 *   READ      {rid, key, addr, len}         -> READ_RSP   {rid, err} [data]
 *   ATOMIC    {rid} [atomic.c's request]    -> ATOMIC_RSP {rid, err} [old]
 *
 * Writes and reads go in chunks of at most NETRMA_CHUNK bytes, each its
 * own request; an operation completes at the origin when every chunk is
 * answered (delivery complete: applied at the target). A write's remote
 * CQ data rides on its last chunk: the link keeps send-after-send order
 * (net.c asks for FI_ORDER_SAS), so the target reports it after every
 * chunk is in place. Everything in a frame is the peer's word and checked
 * before use.
 */
#include <stdlib.h>
#include <string.h>

#include "cxlfi.h"

#define NETRMA_CHUNK (64u << 10)
#define NETRMA_RECVS 8u /* receive buffers posted on the RMA endpoint */
/* A read of the RMA endpoint's CQ polls the sockets once more (its own
 * progress): while no RMA over the link is under way, one busy look at the
 * link in NETRMA_IDLE_EVERY reads it, so two-sided traffic over the link
 * pays one socket poll per call, not two (docs/multipool.md); one in
 * NETRMA_NEVER_EVERY until the endpoint first carried RMA over the link (its
 * first frame sent or received). A quiet link's look, rare, reads it every
 * time: a request to a quiet target waits no longer than a message does. A
 * frame received keeps it read at every call for NETRMA_HOT_CALLS calls
 * (about 0.5 ms here): RMA comes in bursts, whose requests are then served
 * at once. */
#define NETRMA_IDLE_EVERY 16u
#define NETRMA_NEVER_EVERY 256u
#define NETRMA_HOT_CALLS 1024u

enum {
	NR_WRITE = 1,
	NR_WRITE_ACK,
	NR_READ,
	NR_READ_RSP,
	NR_ATOMIC,
	NR_ATOMIC_RSP,
};

#define NR_F_DATA 1u /* a write's last chunk with remote CQ data */

struct frame_hdr {
	uint32_t op, err;
	uint64_t rid, key, addr, len;
	uint32_t flags, pad;  /* NR_F_*, requests only */
	uint64_t data, total; /* NR_F_DATA: the CQ data, the write's length */
};

#define FRAME_MAX (sizeof(struct frame_hdr) + NETRMA_CHUNK)

/* An operation at the origin, and its chunks in flight. */
struct netrma_op {
	struct cxlfi_ep *ep;
	void *context;
	uint64_t flags;	 /* FI_COMPLETION, ... */
	uint64_t report; /* CQ flags: FI_RMA|FI_WRITE, FI_ATOMIC|FI_READ... */
	struct cxlfi_cntr *cntr;
	uint8_t *buf; /* where answers' data go (read, fetch) */
	size_t len;
	unsigned pending;
	int err;
};

struct netrma_chunk {
	struct netrma_chunk *next;
	uint64_t rid;
	struct netrma_op *op;
	size_t off, len;
};

/* A frame being sent: freed on its send completion. */
struct frame_out {
	struct frame_out *next; /* in the queue of frames not yet posted */
	fi_addr_t dst;
	uint64_t rid; /* of the request it carries (0: an answer) */
	size_t len;
	uint8_t data[];
};

struct netrma {
	struct netrma_chunk *chunks; /* requests waiting for their answer */
	uint64_t rid_next;
	uint8_t *recv[NETRMA_RECVS];
	/* frames the provider could not take yet (-FI_EAGAIN: it is still
	 * connecting, or full), in order; progress posts them. Waiting here
	 * instead of spinning lets the peer's connection progress too. */
	struct frame_out *pend, *pend_tail;
	unsigned out;	/* frames posted, their send not completed */
	unsigned hot;	/* progress calls left that look at every call */
	unsigned calls; /* progress calls, for the idle looks */
	bool used;	/* a frame sent or received: NETRMA_IDLE_EVERY */
};

static struct netrma *state(struct cxlfi_ep *ep)
{
	return ep->net_rma;
}

static void op_done_chunk(struct netrma_op *op, int err)
{
	struct cxlfi_ep *ep = op->ep;

	if (err && !op->err)
		op->err = err;
	if (--op->pending)
		return;
	ep->reported++;
	if (op->err && ep->tx_cq)
		cxlfi_cq_push_err(ep->tx_cq, op->context, op->report, 0,
				  op->buf, 0, 0, 0, op->err);
	else if (!op->err && (op->flags & FI_COMPLETION))
		cxlfi_cq_push(ep->tx_cq, op->context, op->report, 0, NULL, 0, 0,
			      FI_ADDR_NOTAVAIL);
	cxlfi_cntr_inc(op->cntr, op->err != 0);
	free(op);
}

/* The chunk answered by rid, out of the list; NULL if none. */
static struct netrma_chunk *take_chunk(struct cxlfi_ep *ep, uint64_t rid)
{
	for (struct netrma_chunk **pp = &state(ep)->chunks; *pp;
	     pp = &(*pp)->next)
		if ((*pp)->rid == rid) {
			struct netrma_chunk *c = *pp;

			*pp = c->next;
			return c;
		}
	return NULL;
}

/* Post the queued frames, in order, while the provider takes them. */
static void send_failed(struct cxlfi_ep *ep, struct frame_out *f, int err);

static void flush_pending(struct cxlfi_ep *ep)
{
	struct netrma *r = state(ep);

	while (r->pend) {
		struct frame_out *f = r->pend;
		ssize_t rc = fi_send(ep->net->rma_ep, f->data, f->len, NULL,
				     f->dst, f);

		if (rc == -FI_EAGAIN)
			return;
		r->pend = f->next;
		if (!r->pend)
			r->pend_tail = NULL;
		if (rc)
			send_failed(ep, f, (int)-rc);
		else
			r->out++;
	}
}

/* Send hdr and n bytes of payload to the peer at dst (an address of the
 * RMA AV): posted now, or queued behind the frames waiting already. */
static int send_frame(struct cxlfi_ep *ep, fi_addr_t dst,
		      const struct frame_hdr *hdr, const void *payload,
		      size_t n)
{
	struct netrma *r = state(ep);
	struct frame_out *f = malloc(sizeof(*f) + sizeof(*hdr) + n);
	ssize_t rc = -FI_EAGAIN;

	if (!f)
		return -FI_ENOMEM;
	r->used = true;
	f->next = NULL;
	f->dst = dst;
	f->rid = hdr->op & 1 ? hdr->rid : 0; /* requests have odd ops */
	f->len = sizeof(*hdr) + n;
	memcpy(f->data, hdr, sizeof(*hdr));
	if (n)
		memcpy(f->data + sizeof(*hdr), payload, n);
	if (!r->pend)
		rc = fi_send(ep->net->rma_ep, f->data, f->len, NULL, dst, f);
	if (rc == -FI_EAGAIN) {
		if (r->pend_tail)
			r->pend_tail->next = f;
		else
			r->pend = f;
		r->pend_tail = f;
		return 0;
	}
	if (rc)
		free(f);
	else
		r->out++;
	return (int)rc;
}

static void answer(struct cxlfi_ep *ep, fi_addr_t to, uint32_t op, uint64_t rid,
		   int err, const void *data, size_t n)
{
	struct frame_hdr h = {
		.op = op, .err = (uint32_t)err, .rid = rid, .len = err ? 0 : n
	};

	if (send_frame(ep, to, &h, err ? NULL : data, err ? 0 : n))
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "cannot answer an RMA request over the network "
			   "link\n");
}

/* ---- target ------------------------------------------------------------ */

static void serve(struct cxlfi_ep *ep, fi_addr_t from,
		  const struct frame_hdr *h, const uint8_t *p, size_t n)
{
	cxl_pool *pool = ep->dom->pool;
	uint8_t *t, *old = NULL;
	size_t oldlen = 0;
	uint64_t rid;
	int err;

	switch (h->op) {
	case NR_WRITE:
		if (h->len != n || n > NETRMA_CHUNK || (h->flags & ~NR_F_DATA))
			goto bad;
		t = cxlfi_mr_target(ep->dom, h->key, h->addr, n,
				    FI_REMOTE_WRITE, &err);
		if (t && n) {
			memcpy(t, p, n);
			/* a region in the pool: visible to direct readers
			 * before the answer */
			if (cxl_pool_offset(pool, t) != UINT64_MAX) {
				cxl_flush(pool, t, n);
				cxl_wfence(pool);
			}
		}
		if (t) {
			cxlfi_mr_count(ep->dom, h->key, FI_REMOTE_WRITE);
			cxlfi_cntr_inc(ep->rwr_cntr, false);
			/* remote CQ data is reported at the target, as for
			 * writes in the pool (rma.c) */
			if ((h->flags & NR_F_DATA) && ep->rx_cq)
				cxlfi_cq_push(ep->rx_cq, NULL,
					      FI_RMA | FI_REMOTE_WRITE |
						      FI_REMOTE_CQ_DATA,
					      h->total, NULL, h->data, 0,
					      FI_ADDR_NOTAVAIL);
		}
		answer(ep, from, NR_WRITE_ACK, h->rid, err, NULL, 0);
		return;
	case NR_READ:
		if (n || h->len > NETRMA_CHUNK || h->flags)
			goto bad;
		t = cxlfi_mr_target(ep->dom, h->key, h->addr, h->len,
				    FI_REMOTE_READ, &err);
		if (t && cxl_pool_offset(pool, t) != UINT64_MAX)
			cxl_inval(pool, t, h->len); /* what others wrote */
		if (t) {
			cxlfi_mr_count(ep->dom, h->key, FI_REMOTE_READ);
			cxlfi_cntr_inc(ep->rrd_cntr, false);
		}
		answer(ep, from, NR_READ_RSP, h->rid, err, t, h->len);
		return;
	case NR_ATOMIC:
		/* the request's own rid is the pool protocol's; ours is h's */
		err = cxlfi_atomic_exec(ep, p, n, &rid, &old, &oldlen);
		if (err < 0)
			goto bad;
		answer(ep, from, NR_ATOMIC_RSP, h->rid, err, old, oldlen);
		free(old);
		return;
	}
bad:
	CXLFI_WARN(FI_LOG_EP_DATA,
		   "malformed RMA frame (op %u, %zu bytes) from the network "
		   "dropped\n",
		   h->op, n);
}

/* ---- origin: answers --------------------------------------------------- */

static void answered(struct cxlfi_ep *ep, const struct frame_hdr *h,
		     const uint8_t *p, size_t n)
{
	struct netrma_chunk *c = take_chunk(ep, h->rid);
	int err = (int)h->err;

	if (!c) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "answer to an unknown RMA request %llu from the "
			   "network dropped\n",
			   (unsigned long long)h->rid);
		return;
	}
	if (!err && h->op != NR_WRITE_ACK) {
		if (n != c->len)
			err = FI_EIO; /* another length than asked for */
		else if (n)
			memcpy(c->op->buf + c->off, p, n);
	}
	op_done_chunk(c->op, err);
	free(c);
}

static void on_frame(struct cxlfi_ep *ep, fi_addr_t from, const uint8_t *b,
		     size_t n)
{
	struct frame_hdr h;

	if (n < sizeof(h))
		return;
	memcpy(&h, b, sizeof(h));
	if (h.op == NR_WRITE || h.op == NR_READ || h.op == NR_ATOMIC)
		serve(ep, from, &h, b + sizeof(h), n - sizeof(h));
	else if (h.op == NR_WRITE_ACK || h.op == NR_READ_RSP ||
		 h.op == NR_ATOMIC_RSP)
		answered(ep, &h, b + sizeof(h), n - sizeof(h));
}

/* A request frame that could not be delivered: its chunk fails. */
static void send_failed(struct cxlfi_ep *ep, struct frame_out *f, int err)
{
	struct netrma_chunk *c = f->rid ? take_chunk(ep, f->rid) : NULL;

	if (c) {
		op_done_chunk(c->op, err ? err : FI_EIO);
		free(c);
	}
	free(f);
}

bool cxlfi_netrma_busy(const struct cxlfi_ep *ep)
{
	const struct netrma *r = ep->net_rma;

	return r && (r->chunks || r->pend || r->out || r->hot);
}

void cxlfi_netrma_progress(struct cxlfi_ep *ep, bool now)
{
	struct fi_cq_tagged_entry e[8];
	fi_addr_t src[8];
	struct netrma *r = state(ep);
	ssize_t got;

	if (!r)
		return;
	/* idle: no answer awaited, no frame queued or in flight, none
	 * received lately */
	if (!now && !cxlfi_netrma_busy(ep) &&
	    ++r->calls % (r->used ? NETRMA_IDLE_EVERY : NETRMA_NEVER_EVERY))
		return;
	if (r->hot)
		r->hot--;
	while ((got = fi_cq_readfrom(ep->net->rma_cq, e, 8, src)) > 0) {
		for (ssize_t i = 0; i < got; i++) {
			if (e[i].flags & FI_RECV) {
				r->hot = NETRMA_HOT_CALLS;
				r->used = true;
				on_frame(ep, src[i], e[i].op_context, e[i].len);
				/* the same buffer takes the next frame */
				(void)fi_recv(ep->net->rma_ep, e[i].op_context,
					      FRAME_MAX, NULL, FI_ADDR_UNSPEC,
					      e[i].op_context);
			} else {
				struct frame_out *f = e[i].op_context;

				r->out--;
				free(f);
			}
		}
	}
	if (got == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		if (fi_cq_readerr(ep->net->rma_cq, &err, 0) == 1 &&
		    !(err.flags & FI_RECV) && err.op_context) {
			r->out--;
			send_failed(ep, err.op_context, err.err);
		}
	}
	flush_pending(ep);
}

/* ---- setup ------------------------------------------------------------- */

int cxlfi_netrma_open(struct cxlfi_ep *ep)
{
	struct netrma *r;

	if (!ep->net || !ep->net->rma_port)
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -FI_ENOMEM;
	for (unsigned i = 0; i < NETRMA_RECVS; i++) {
		r->recv[i] = malloc(FRAME_MAX);
		if (!r->recv[i] ||
		    fi_recv(ep->net->rma_ep, r->recv[i], FRAME_MAX, NULL,
			    FI_ADDR_UNSPEC, r->recv[i])) {
			for (unsigned j = 0; j <= i; j++)
				free(r->recv[j]);
			free(r);
			return -FI_ENOMEM;
		}
	}
	ep->net_rma = r;
	return 0;
}

/* After the link is closed (no more completions): what is left. */
void cxlfi_netrma_close(struct cxlfi_ep *ep)
{
	struct netrma *r = ep->net_rma;

	if (!r)
		return;
	while (r->chunks) {
		struct netrma_chunk *c = r->chunks;

		r->chunks = c->next;
		if (--c->op->pending == 0)
			free(c->op);
		free(c);
	}
	while (r->pend) {
		struct frame_out *f = r->pend;

		r->pend = f->next;
		free(f);
	}
	for (unsigned i = 0; i < NETRMA_RECVS; i++)
		free(r->recv[i]);
	free(r);
	ep->net_rma = NULL;
}

/* ---- origin: requests -------------------------------------------------- */

/* The peer's RMA endpoint, or an error that says why there is none. */
static int rma_dst(struct cxlfi_ep *ep, fi_addr_t dest, fi_addr_t *dst)
{
	*dst = dest < ep->net_map_n ? ep->net_rma_map[dest] : FI_ADDR_NOTAVAIL;
	if (ep->net_rma && *dst != FI_ADDR_NOTAVAIL)
		return 0;
	{
		static bool said;

		if (!said)
			cxlfi_report("RMA and atomics to a peer outside the "
				     "pool (fi_addr %llu) need the RMA "
				     "endpoint of the network link, which "
				     "this link or that peer lacks (an IPv4 "
				     "network provider has one); they fail "
				     "with FI_EOPNOTSUPP (docs/multipool.md)",
				     (unsigned long long)dest);
		said = true;
	}
	return -FI_EOPNOTSUPP;
}

static struct netrma_op *op_new(struct cxlfi_ep *ep, void *buf, size_t len,
				uint64_t flags, void *ctx, uint64_t report,
				struct cxlfi_cntr *cntr)
{
	struct netrma_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	*op = (struct netrma_op){
		ep, ctx, flags, report, cntr, buf, len, 1, 0
	};
	return op; /* pending 1: the poster's, dropped by post_done */
}

/* One chunk's request: queued for its answer, then sent. */
static int post_chunk(struct netrma_op *op, fi_addr_t dst, struct frame_hdr *h,
		      const void *payload, size_t n, size_t off, size_t len)
{
	struct cxlfi_ep *ep = op->ep;
	struct netrma_chunk *c = malloc(sizeof(*c));
	int rc;

	if (!c)
		return -FI_ENOMEM;
	h->rid = ++state(ep)->rid_next;
	*c = (struct netrma_chunk){ state(ep)->chunks, h->rid, op, off, len };
	state(ep)->chunks = c;
	op->pending++;
	if ((rc = send_frame(ep, dst, h, payload, n))) {
		take_chunk(ep, h->rid);
		free(c);
		op->pending--;
	}
	return rc;
}

/* The poster's share of op: after the last chunk is out, or on an error
 * before any went (then op is freed without a report). */
static ssize_t post_done(struct netrma_op *op, int rc)
{
	if (rc && op->pending == 1) {
		free(op);
		return rc;
	}
	op_done_chunk(op, rc < 0 ? -rc : rc);
	return 0;
}

/* A write (data: the source) or a read (data: the destination) of len
 * bytes at addr of region key, in chunks of at most NETRMA_CHUNK. */
static ssize_t chunked(struct cxlfi_ep *ep, fi_addr_t peer, bool write,
		       void *data, size_t len, uint64_t addr, uint64_t key,
		       uint64_t cq_data, uint64_t flags, void *ctx)
{
	struct netrma_op *op;
	fi_addr_t dst;
	int rc;

	if ((rc = rma_dst(ep, peer, &dst)))
		return rc;
	if (!(op = op_new(ep, write ? NULL : data, len, flags, ctx,
			  FI_RMA | (write ? FI_WRITE : FI_READ),
			  write ? ep->wr_cntr : ep->rd_cntr)))
		return -FI_ENOMEM;
	/* one chunk at least: a write of 0 bytes is still an operation */
	for (size_t off = 0; !rc && (off < len || !off); off += NETRMA_CHUNK) {
		size_t n = len - off < NETRMA_CHUNK ? len - off : NETRMA_CHUNK;
		struct frame_hdr h = { .op = write ? NR_WRITE : NR_READ,
				       .key = key,
				       .addr = addr + off,
				       .len = n };

		if (write && (flags & FI_REMOTE_CQ_DATA) && off + n >= len) {
			h.flags = NR_F_DATA;
			h.data = cq_data;
			h.total = len;
		}

		rc = post_chunk(op, dst, &h,
				write ? (const uint8_t *)data + off : NULL,
				write ? n : 0, off, n);
		if (!len)
			break;
	}
	return post_done(op, rc);
}

ssize_t cxlfi_netrma_write(struct cxlfi_ep *ep, fi_addr_t dest, const void *buf,
			   size_t len, uint64_t addr, uint64_t key,
			   uint64_t data, uint64_t flags, void *ctx)
{
	/* the source is only read: the frames copy it */
	return chunked(ep, dest, true, (void *)(uintptr_t)buf, len, addr, key,
		       data, flags, ctx);
}

ssize_t cxlfi_netrma_read(struct cxlfi_ep *ep, fi_addr_t src, void *buf,
			  size_t len, uint64_t addr, uint64_t key,
			  uint64_t flags, void *ctx)
{
	return chunked(ep, src, false, buf, len, addr, key, 0, flags, ctx);
}

ssize_t cxlfi_netrma_atomic(struct cxlfi_ep *ep, fi_addr_t dest,
			    const void *req, size_t n, void *result,
			    size_t reslen, bool fetch, uint64_t flags,
			    void *ctx)
{
	struct netrma_op *op;
	struct frame_hdr h = { .op = NR_ATOMIC };
	fi_addr_t dst;
	int rc;

	if ((rc = rma_dst(ep, dest, &dst)))
		return rc;
	/* a fetching atomic counts as a read, another as a write */
	if (!(op = op_new(ep, result, reslen, flags, ctx,
			  FI_ATOMIC | (fetch ? FI_READ : FI_WRITE),
			  fetch ? ep->rd_cntr : ep->wr_cntr)))
		return -FI_ENOMEM;
	rc = post_chunk(op, dst, &h, req, n, 0, reslen);
	return post_done(op, rc);
}
