/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FI_RMA on registered memory (docs/fabric.md, "RMA").
 *
 * The target's memory is ordinary process memory, which the origin cannot
 * reach, so RMA travels through the channel like a message and the
 * target's progress executes it:
 *
 *   fi_write   a message with OPF_WRITE whose header carries the key and
 *              the target address. The target checks both against its
 *              registrations (cxlfi_mr_target) and receives the data
 *              straight into the region, by the eager, chunked, bulk or
 *              pointer-passing path of its size. The write completes at
 *              the origin only when the target has applied it (an OP_ACK
 *              token, as FI_DELIVERY_COMPLETE); a refused write returns
 *              the token with the error, which completes the write in
 *              error at the origin.
 *   fi_read    a small OPF_READREQ message {key, addr, len, request id};
 *              the target answers with an OPF_READRSP message carrying
 *              the data (or, with OPF_DATA, its error), which the origin
 *              receives straight into the read's buffer. If the region
 *              lies in the pool and is large, the answer passes a pointer
 *              and the origin copies the target's memory directly.
 *
 * Ordering per peer is the channel's: RMA and messages to one peer are
 * executed in the order they were posted.
 */
#include <stdlib.h>
#include <string.h>

#include "cxlfi.h"

struct read_req {
	uint64_t key, addr, len, rid;
};

/* ---- target ------------------------------------------------------------ */

struct cxlfi_rx *cxlfi_rma_write_target(struct cxlfi_ep *ep, uint64_t key,
					uint64_t addr, size_t len, int *err)
{
	void *p =
		cxlfi_mr_target(ep->dom, key, addr, len, FI_REMOTE_WRITE, err);
	struct cxlfi_rx *r;

	if (!p) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "RMA write refused: key %#llx, address %#llx, %zu "
			   "bytes: %s\n",
			   (unsigned long long)key, (unsigned long long)addr,
			   len, fi_strerror(*err));
		return NULL;
	}
	if (!(r = calloc(1, sizeof(*r)))) {
		*err = FI_ENOMEM;
		return NULL;
	}
	r->buf = p;
	r->len = len;
	r->kind = CXLFI_RX_WRITE;
	r->tag = key; /* for the region's counter (cxlfi_mr_count) */
	return r;
}

void cxlfi_rma_read_request(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			    const uint8_t *m, size_t n)
{
	struct read_req q;
	int err = 0;
	void *p;

	if (n != sizeof(q)) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "malformed RMA read request from endpoint %u "
			   "dropped\n",
			   pe->index);
		return;
	}
	memcpy(&q, m, sizeof(q));
	p = q.len > CXLFI_MAX_MSG
		    ? NULL
		    : cxlfi_mr_target(ep->dom, q.key, q.addr, (size_t)q.len,
				      FI_REMOTE_READ, &err);
	if (!p && !err)
		err = FI_EINVAL;
	if (err)
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "RMA read refused: key %#llx, address %#llx, %llu "
			   "bytes: %s\n",
			   (unsigned long long)q.key,
			   (unsigned long long)q.addr,
			   (unsigned long long)q.len, fi_strerror(err));
	/* a region in the pool: read what direct writers put there (the
	 * owner writes back its own stores, docs/coherence.md) */
	if (p && q.len && cxl_pool_offset(ep->dom->pool, p) != UINT64_MAX)
		cxl_inval(ep->dom->pool, p, (size_t)q.len);
	/* write after read: an answer that has to wait for room in the
	 * channel takes its data now, not after a later write of the origin
	 * was applied (max_order_war_size); a larger one may be read later,
	 * or passed by pointer */
	cxlfi_rma_answer(ep, pe, CXLFI_TX_READRSP, q.rid, p, (size_t)q.len,
			 q.len <= CXLFI_ORDER_WAR_MAX, err);
	if (!err)
		cxlfi_mr_count(ep->dom, q.key, FI_REMOTE_READ);
}

void cxlfi_rma_answer(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint8_t kind,
		      uint64_t rid, const void *buf, size_t len, bool copy,
		      int err)
{
	struct cxlfi_tx t = { 0 };
	const char *what =
		kind == CXLFI_TX_READRSP ? "an RMA read" : "an atomic";

	if (cxlfi_connect_back(ep, pe)) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "cannot answer %s of endpoint %u: no channel back "
			   "to it\n",
			   what, pe->index);
		return;
	}
	t.kind = kind;
	t.tag = rid;
	t.buf = buf;
	t.len = err ? 0 : len;
	t.flags = copy || err ? FI_INJECT : 0;
	if (err) {
		t.flags |= FI_REMOTE_CQ_DATA;
		t.data = (uint64_t)err;
		t.rma_err = err;
	}
	/* from progress: queued if the channel is full, never recursing */
	if (cxlfi_post(ep, pe, &t, true))
		CXLFI_WARN(FI_LOG_EP_DATA, "cannot answer %s of endpoint %u\n",
			   what, pe->index);
}

/* ---- origin ------------------------------------------------------------ */

/* What a read or an atomic reports (fi_cq(3), fi_cntr(3)): a fetching
 * atomic counts as a read, another atomic as a write. */
static uint64_t answer_flags(bool atomic, size_t len)
{
	if (!atomic)
		return FI_RMA | FI_READ;
	return FI_ATOMIC | (len ? FI_READ : FI_WRITE);
}

static struct cxlfi_cntr *answer_cntr(struct cxlfi_ep *ep, bool atomic,
				      size_t len)
{
	return atomic && !len ? ep->wr_cntr : ep->rd_cntr;
}

struct cxlfi_rx *cxlfi_rma_read_answer(struct cxlfi_ep *ep,
				       struct cxlfi_peer *pe, uint64_t rid,
				       size_t len, int err)
{
	struct cxlfi_rdreq **pp, *q;
	struct cxlfi_rx *r;

	for (pp = &ep->reads; *pp; pp = &(*pp)->next)
		if ((*pp)->rid == rid && (*pp)->peer == pe->index)
			break;
	if (!(q = *pp)) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "answer to an unknown RMA read %llu from endpoint "
			   "%u dropped\n",
			   (unsigned long long)rid, pe->index);
		return NULL;
	}
	*pp = q->next;
	if (pe->rma_pending)
		pe->rma_pending--;
	if (!err && len != q->len)
		err = FI_EIO; /* the target answered another length */
	if (err || !(r = calloc(1, sizeof(*r)))) {
		if (ep->tx_cq)
			cxlfi_cq_push_err(ep->tx_cq, q->context,
					  answer_flags(q->atomic, q->len), 0,
					  q->buf, 0, 0, 0,
					  err ? err : FI_ENOMEM);
		cxlfi_cntr_inc(answer_cntr(ep, q->atomic, q->len), true);
		free(q);
		return NULL;
	}
	r->buf = q->buf;
	r->len = q->len;
	r->context = q->context;
	r->flags = q->flags;
	r->kind = q->atomic ? CXLFI_RX_ATOMRSP : CXLFI_RX_READRSP;
	free(q);
	return r;
}

void cxlfi_rma_complete_rx(struct cxlfi_ep *ep, struct cxlfi_rx *r,
			   size_t total, uint64_t data, bool has_data)
{
	if (r->kind == CXLFI_RX_WRITE) {
		cxl_pool *pool = ep->dom->pool;

		/* a region in the pool: what we wrote for the origin reaches
		 * the pool, for origins that read it directly */
		if (total && cxl_pool_offset(pool, r->buf) != UINT64_MAX) {
			cxl_flush(pool, r->buf, total);
			cxl_wfence(pool);
		}
		/* remote CQ data of a write is reported at the target */
		if (has_data && ep->rx_cq)
			cxlfi_cq_push(ep->rx_cq, NULL,
				      FI_RMA | FI_REMOTE_WRITE |
					      FI_REMOTE_CQ_DATA,
				      total, NULL, data, 0, FI_ADDR_NOTAVAIL);
		cxlfi_cntr_inc(ep->rwr_cntr, false);
		cxlfi_mr_count(ep->dom, r->tag, FI_REMOTE_WRITE);
	} else if (r->kind == CXLFI_RX_READRSP || r->kind == CXLFI_RX_ATOMRSP) {
		bool atomic = r->kind == CXLFI_RX_ATOMRSP;

		if (r->flags & FI_COMPLETION)
			cxlfi_cq_push(ep->tx_cq, r->context,
				      answer_flags(atomic, r->len), 0, NULL, 0,
				      0, FI_ADDR_NOTAVAIL);
		cxlfi_cntr_inc(answer_cntr(ep, atomic, r->len), false);
	}
	free(r);
}

void cxlfi_rma_fail_rx(struct cxlfi_ep *ep, struct cxlfi_rx *r, int err)
{
	if (r->kind == CXLFI_RX_READRSP || r->kind == CXLFI_RX_ATOMRSP) {
		bool atomic = r->kind == CXLFI_RX_ATOMRSP;

		if (ep->tx_cq)
			cxlfi_cq_push_err(ep->tx_cq, r->context,
					  answer_flags(atomic, r->len), 0,
					  r->buf, 0, 0, 0, err);
		cxlfi_cntr_inc(answer_cntr(ep, atomic, r->len), true);
	}
	free(r);
}

void cxlfi_rma_peer_dead(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	struct cxlfi_rdreq **pp = &ep->reads;

	while (*pp) {
		struct cxlfi_rdreq *q = *pp;

		if (pe && q->peer != pe->index) {
			pp = &q->next;
			continue;
		}
		*pp = q->next;
		if (pe && pe->rma_pending)
			pe->rma_pending--;
		if (pe) { /* closing: no reports */
			if (ep->tx_cq)
				cxlfi_cq_push_err(
					ep->tx_cq, q->context,
					answer_flags(q->atomic, q->len), 0,
					q->buf, 0, 0, 0, FI_EHOSTUNREACH);
			cxlfi_cntr_inc(answer_cntr(ep, q->atomic, q->len),
				       true);
		}
		free(q);
	}
}

/*
 * Direct RMA: the target region lies in the pool and its owner published
 * it (mrtab.c), so the origin copies itself, with no work at the target.
 * Only when nothing to that peer is still in the channel (queued sends,
 * RMA through the channel not yet completed), so that RMA to one peer
 * stays in order. A write is written back and fenced before it completes:
 * it is then in the target's memory (delivery complete). A read
 * invalidates first. Remote CQ data needs the target: not direct.
 */
static bool direct(struct cxlfi_ep *ep, struct cxlfi_peer *pe, const void *buf,
		   size_t len, uint64_t addr, uint64_t key, uint64_t flags,
		   void *ctx, bool write)
{
	cxl_pool *pool = ep->dom->pool;
	uint8_t *p;

	if (pe->txq || pe->rma_pending || (flags & FI_REMOTE_CQ_DATA))
		return false;
	p = cxlfi_mrtab_target(ep, pe, key, addr, len,
			       write ? FI_REMOTE_WRITE : FI_REMOTE_READ);
	if (!p)
		return false;
	if (write) {
		/* a line we fill only in part is written back whole: take a
		 * fresh copy of the edge lines first, so that bytes around
		 * ours are not overwritten with stale ones */
		if (len && ((uintptr_t)p & (CXL_LINE - 1)))
			cxl_inval(pool, p, 1);
		if (len && ((uintptr_t)(p + len) & (CXL_LINE - 1)))
			cxl_inval(pool, p + len - 1, 1);
		if (len)
			cxl_copy_to_pool(pool, p, buf, len);
		cxl_wfence(pool); /* in the target's memory before completion */
	} else if (len) {
		cxl_copy_from_pool(pool, (void *)buf, p, len);
	}
	cxlfi_stats.direct_rma++;
	if (flags & FI_COMPLETION)
		cxlfi_cq_push(ep->tx_cq, ctx,
			      FI_RMA | (write ? FI_WRITE : FI_READ), 0, NULL, 0,
			      0, FI_ADDR_NOTAVAIL);
	cxlfi_cntr_inc(write ? ep->wr_cntr : ep->rd_cntr, false);
	return true;
}

static ssize_t do_write(struct fid_ep *fep, const void *buf, size_t len,
			uint64_t data, fi_addr_t dest, uint64_t addr,
			uint64_t key, uint64_t flags, void *ctx)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fep;
	struct cxlfi_tx t = { 0 };
	struct cxlfi_peer *pe;
	ssize_t rc;

	if (len > CXLFI_MAX_MSG ||
	    ((flags & FI_INJECT) && len > cxlfi_params.inject_size))
		return -FI_EMSGSIZE; /* fi_info's inject_size */
	cxlfi_dom_lock(ep->dom);
	if (ep->enabled && cxlfi_av_is_net(ep->av, dest)) {
		/* outside the pool: over the network link (netrma.c) */
		rc = cxlfi_netrma_write(ep, dest, buf, len, addr, key, data,
					cxlfi_tx_flags(ep, flags), ctx);
		goto out;
	}
	if ((rc = cxlfi_rma_peer(ep, dest, &pe)))
		goto out;
	flags = cxlfi_tx_flags(ep, flags);
	if (direct(ep, pe, buf, len, addr, key, flags, ctx, true)) {
		rc = 0;
		goto out;
	}
	pe->rma_pending++;
	t.kind = CXLFI_TX_WRITE;
	t.buf = buf;
	t.len = len;
	t.tag = key;
	t.rma_addr = addr;
	t.data = data;
	t.context = ctx;
	/* complete only once applied at the target (see above) */
	t.flags = (flags & (FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA)) |
		  FI_DELIVERY_COMPLETE;
	rc = cxlfi_post(ep, pe, &t, false);
out:
	cxlfi_dom_unlock(ep->dom);
	return rc;
}

/* The peer of an RMA or atomic operation to dest, once the endpoint is
 * enabled (domain lock held): 0, -FI_EOPBADSTATE or cxlfi_peer_for's. */
int cxlfi_rma_peer(struct cxlfi_ep *ep, fi_addr_t dest, struct cxlfi_peer **pe)
{
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	return cxlfi_peer_for(ep, dest, pe);
}

/* A read or an atomic to pe whose answer (tag = the returned request's
 * rid) fills buf with len bytes and completes it. */
struct cxlfi_rdreq *cxlfi_rdreq_new(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
				    void *buf, size_t len, uint64_t flags,
				    void *ctx, bool atomic)
{
	struct cxlfi_rdreq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->rid = ++ep->rid_next;
	q->peer = pe->index;
	q->buf = buf;
	q->len = len;
	q->flags = flags;
	q->context = ctx;
	q->atomic = atomic;
	return q;
}

/* Send q's request (n bytes of msg, copied) and wait for its answer; q is
 * freed if it cannot be sent. */
ssize_t cxlfi_rdreq_post(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			 struct cxlfi_rdreq *q, uint8_t kind, const void *msg,
			 size_t n)
{
	struct cxlfi_tx t = { 0 };
	ssize_t rc;

	t.kind = kind;
	t.buf = msg;
	t.len = n;
	t.flags = FI_INJECT; /* msg is the caller's only until we return */
	if ((rc = cxlfi_post(ep, pe, &t, false))) {
		free(q);
		return rc;
	}
	pe->rma_pending++; /* direct RMA to pe waits for the answer */
	q->next = ep->reads;
	ep->reads = q;
	return 0;
}

static ssize_t do_read(struct fid_ep *fep, void *buf, size_t len, fi_addr_t src,
		       uint64_t addr, uint64_t key, uint64_t flags, void *ctx)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fep;
	struct cxlfi_rdreq *q;
	struct cxlfi_peer *pe;
	struct read_req req;
	ssize_t rc;

	if (len > CXLFI_MAX_MSG)
		return -FI_EMSGSIZE;
	cxlfi_dom_lock(ep->dom);
	if (ep->enabled && cxlfi_av_is_net(ep->av, src)) {
		rc = cxlfi_netrma_read(ep, src, buf, len, addr, key,
				       cxlfi_tx_flags(ep, flags), ctx);
		goto out;
	}
	if ((rc = cxlfi_rma_peer(ep, src, &pe)))
		goto out;
	flags = cxlfi_tx_flags(ep, flags);
	if (direct(ep, pe, buf, len, addr, key, flags, ctx, false)) {
		rc = 0;
		goto out;
	}
	if (!(q = cxlfi_rdreq_new(ep, pe, buf, len, flags, ctx, false))) {
		rc = -FI_ENOMEM;
		goto out;
	}
	req = (struct read_req){ key, addr, len, q->rid };
	rc = cxlfi_rdreq_post(ep, pe, q, CXLFI_TX_READREQ, &req, sizeof(req));
out:
	cxlfi_dom_unlock(ep->dom);
	return rc;
}

/* ---- fi_ops_rma ---------------------------------------------------------- */

#define TXF(fep) (((struct cxlfi_ep *)(fep))->tx_op_flags)

static ssize_t r_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
{
	(void)desc;
	return do_read(ep, buf, len, src, addr, key, TXF(ep), ctx);
}

static ssize_t r_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t src, uint64_t addr, uint64_t key,
		       void *ctx)
{
	(void)desc;
	if (count > 1)
		return -FI_EINVAL;
	return do_read(ep, count ? iov[0].iov_base : NULL,
		       count ? iov[0].iov_len : 0, src, addr, key, TXF(ep),
		       ctx);
}

static ssize_t r_readmsg(struct fid_ep *ep, const struct fi_msg_rma *m,
			 uint64_t flags)
{
	if (m->iov_count > 1 || m->rma_iov_count != 1)
		return -FI_EINVAL;
	return do_read(ep, m->iov_count ? m->msg_iov[0].iov_base : NULL,
		       m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr,
		       m->rma_iov[0].addr, m->rma_iov[0].key, flags,
		       m->context);
}

static ssize_t r_write(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
		       void *ctx)
{
	(void)desc;
	return do_write(ep, buf, len, 0, dest, addr, key, TXF(ep), ctx);
}

static ssize_t r_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t dest, uint64_t addr,
			uint64_t key, void *ctx)
{
	(void)desc;
	if (count > 1)
		return -FI_EINVAL;
	return do_write(ep, count ? iov[0].iov_base : NULL,
			count ? iov[0].iov_len : 0, 0, dest, addr, key, TXF(ep),
			ctx);
}

static ssize_t r_writemsg(struct fid_ep *ep, const struct fi_msg_rma *m,
			  uint64_t flags)
{
	if (m->iov_count > 1 || m->rma_iov_count != 1)
		return -FI_EINVAL;
	return do_write(ep, m->iov_count ? m->msg_iov[0].iov_base : NULL,
			m->iov_count ? m->msg_iov[0].iov_len : 0, m->data,
			m->addr, m->rma_iov[0].addr, m->rma_iov[0].key, flags,
			m->context);
}

static ssize_t r_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return do_write(ep, buf, len, 0, dest, addr, key,
			FI_INJECT | CXLFI_INJECT_OP, NULL);
}

static ssize_t r_writedata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest,
			   uint64_t addr, uint64_t key, void *ctx)
{
	(void)desc;
	return do_write(ep, buf, len, data, dest, addr, key,
			TXF(ep) | FI_REMOTE_CQ_DATA, ctx);
}

static ssize_t r_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest, uint64_t addr,
			    uint64_t key)
{
	return do_write(ep, buf, len, data, dest, addr, key,
			FI_INJECT | CXLFI_INJECT_OP | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_rma cxlfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = r_read,
	.readv = r_readv,
	.readmsg = r_readmsg,
	.write = r_write,
	.writev = r_writev,
	.writemsg = r_writemsg,
	.inject = r_inject,
	.writedata = r_writedata,
	.injectdata = r_injectdata,
};
