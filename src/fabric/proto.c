/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire protocol over pool rings, matching and progress.
 * Every function here runs with the domain lock held.
 *
 * A channel is one SPSC ring "cxlfi.ch.<A>.<B>" per ordered pair of
 * endpoints that talk, created by the sender on its first send. Ring
 * messages carry the operation in the ring's 32-bit tag:
 *
 *   OP_EAGER  [tag u64][data u64 if OPF_DATA][payload]    whole message
 *   OP_FIRST  [tag u64][data u64 if OPF_DATA][total u64][payload]
 *   OP_CONT   [payload]                                    later chunks
 *   OP_BULK   [tok u32][len u32][gen u64]   later chunk in a data slot
 *   OP_PTR    [tok u32][0 u32][gen u64][off u64][len u64]
 *                                       the rest, in the pool at off
 *   OP_ACK    [tok u32][0 u32][gen u64]   message complete: return tok
 * (the last three use the sender's transfer area, bulk.c)
 *
 * A sender never interleaves two chunked messages on one channel (its
 * per-peer queue is FIFO), so the chunks of a message arrive back to back.
 * Per-pair order (FI_ORDER_SAS) follows from the ring being FIFO.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlfi.h"

#define OP_EAGER 1u
#define OP_FIRST 2u
#define OP_CONT 3u
#define OP_MASK 0xffu
#define OPF_TAGGED (1u << 8)
#define OPF_DATA (1u << 9)
#define OPF_WRITE (1u << 10)   /* RMA write: [key][addr] lead the header */
#define OPF_READREQ (1u << 11) /* RMA read request (rma.c) */
#define OPF_READRSP                                      \
	(1u << 12) /* its answer: tag = request id; with \
		    * OPF_DATA, data = the target's error */
/* atomic request (atomic.c), answered with OPF_READRSP */
#define OPF_ATOMREQ (1u << 13)
/* an OP_ACK follows this message (delivery complete, RMA write) */
#define OPF_ACKNEXT (1u << 14)

#define EP_HDR_LINES 1u
#define TXQ_MAX 1024u	 /* queued sends per peer before -FI_EAGAIN */
#define DRAIN_BUDGET 64u /* messages per channel per progress call */
#define STREAM_HITS 2u	 /* calls finding a message at once: a stream */

/* Inbox line written by sender j into receiver's object, line 1 + j. */
enum {
	IB_STAMP = 0,
	IB_OFF = 1,
	IB_LEN = 2,
	IB_GEN = 3
};

static void unexp_remove(struct cxlfi_ep *ep, struct cxlfi_unexp *u,
			 struct cxlfi_unexp *prev);
static void multi_release(struct cxlfi_ep *ep, struct cxlfi_rx *m);
static void tx_done(struct cxlfi_ep *ep, struct cxlfi_tx *t, int err);
static void drain(struct cxlfi_ep *ep, struct cxlfi_peer *pe);

static size_t ep_obj_size(void)
{
	return (EP_HDR_LINES + cxlfi_params.max_eps) * CXL_LINE;
}

static struct cxl_ring_attr chan_attr(void)
{
	struct cxl_ring_attr a = {
		.cell_size = (uint32_t)cxlfi_params.cell_size,
		.ncells = (uint32_t)cxlfi_params.ncells,
		.poll_lines = 2,
	};

	return a;
}

/* ---- endpoint publication ------------------------------------------- */

int cxlfi_ep_publish(struct cxlfi_ep *ep)
{
	cxl_pool *pool = ep->dom->pool;
	size_t max = cxlfi_params.max_eps;
	uint32_t start = (uint32_t)(cxl_pool_host_id(pool) * 2654435761u +
				    (uint32_t)getpid() * 40503u +
				    (uint32_t)(uintptr_t)ep) %
			 (uint32_t)max;
	uint64_t *hdr;
	char name[64];
	int rc = CXL_EEXIST;

	if (ep->self.pool)
		return 0;
	for (size_t k = 0; k < max && rc == CXL_EEXIST; k++) {
		ep->index = (uint32_t)((start + k) % max);
		snprintf(name, sizeof(name), "cxlfi.ep.%u", ep->index);
		rc = cxl_obj_create(pool, name, ep_obj_size(), CXL_OBJ_ZERO,
				    &ep->self);
	}
	if (rc) {
		CXLFI_WARN(
			FI_LOG_EP_CTRL,
			"cannot publish an endpoint in the pool: %s%s\n",
			rc == CXL_EEXIST
				? "all FI_CXL_MAX_EPS indices are taken; raise "
				  "FI_CXL_MAX_EPS, give each job its own CXL_JOB "
				  "(a crashed job's endpoints are then "
				  "reclaimed), or remove stale 'cxlfi.ep.*' "
				  "objects with 'cxlpool rm'"
				: cxl_errmsg(),
			"");
		return rc == CXL_ENOSPC ? -FI_ENOSPC : -FI_EADDRNOTAVAIL;
	}
	/* A generation unique to this incarnation of the index (the arena
	 * entry's own generation restarts at 1 for a fresh entry): senders
	 * check it, and it makes our inbox stamps differ from any earlier
	 * endpoint's with the same index. */
	do
		ep->gen = (uint32_t)(cxl_now_ns() ^ ((uint64_t)getpid() << 16) ^
				     (uintptr_t)ep ^ ep->self.gen);
	while (ep->gen == 0);
	hdr = ep->self.ptr;
	hdr[CXLFI_HDR_MAGIC] = CXLFI_EP_MAGIC;
	hdr[CXLFI_HDR_HOST] = cxl_pool_host_id(pool);
	hdr[CXLFI_HDR_PID] = (uint64_t)getpid();
	hdr[CXLFI_HDR_MAXEPS] = max;
	hdr[CXLFI_HDR_GEN] = ep->gen;
	cxl_flush(pool, hdr, CXL_LINE);
	cxl_wfence(pool);
	ep->inbox = (uint64_t *)((uint8_t *)ep->self.ptr + CXL_LINE);
	ep->cell_payload =
		cxl_ring_cell_payload((uint32_t)cxlfi_params.cell_size);
	ep->peers = calloc(max, sizeof(*ep->peers));
	ep->tx_scratch = malloc(ep->cell_payload);
	ep->rx_scratch = malloc(ep->cell_payload);
	if (!ep->peers || !ep->tx_scratch || !ep->rx_scratch) {
		cxlfi_ep_unpublish(ep);
		return -FI_ENOMEM;
	}
	if (cxlfi_heartbeat_add(ep)) {
		cxlfi_ep_unpublish(ep);
		return -FI_EOTHER;
	}
	/* the domain's pool regions, for origins that write them directly */
	if ((rc = cxlfi_mrtab_create(ep))) {
		cxlfi_ep_unpublish(ep);
		return rc;
	}
	/* opened with a service address: answer to its name */
	if (ep->info && ep->info->src_addr &&
	    cxlfi_addr_is_ours(pool, ep->info->src_addr,
			       ep->info->src_addrlen) &&
	    (((struct cxlfi_addr *)ep->info->src_addr)->reserved &
	     CXLFI_ADDR_NAMED) &&
	    (rc = cxlfi_svc_claim(ep, ep->info->src_addr))) {
		cxlfi_ep_unpublish(ep);
		return rc;
	}
	ep->dom_next = ep->dom->eps;
	ep->dom->eps = ep;
	CXLFI_INFO(FI_LOG_EP_CTRL, "endpoint %u (gen %u) published\n",
		   ep->index, ep->gen);
	return 0;
}

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
	struct cxlfi_rx *r = ep->rx_cache;

	if (!r)
		return calloc(1, sizeof(*r));
	ep->rx_cache = r->next;
	ep->rx_cached--;
	memset(r, 0, sizeof(*r));
	return r;
}

/* Give a descriptor that nothing refers to any more back to the cache. */
static void rx_put(struct cxlfi_ep *ep, struct cxlfi_rx *r)
{
	if (ep->rx_cached >= CXLFI_RX_CACHE) {
		free(r);
		return;
	}
	r->next = ep->rx_cache;
	ep->rx_cache = r;
	ep->rx_cached++;
}

/*
 * Our channel to peer pe, at close (our handle already closed). Normally
 * unlinked: the storage goes with the receiver's close. But a receiver
 * that is still there and has not found the channel yet (nobody holds it
 * open) would then never see the messages in it, which completed here as
 * sent; a channel exists only once something was sent. So that channel
 * keeps its name: the receiver attaches it as usual, takes the messages,
 * and unlinks it when it finds us gone (scan_inbox).
 */
static void close_channel(cxl_pool *pool, struct cxlfi_peer *pe,
			  const char *name)
{
	struct cxl_obj_stat ch, rcv;
	char rname[64];

	snprintf(rname, sizeof(rname), "cxlfi.ep.%u", pe->index);
	if (cxl_obj_stat(pool, name, &ch) == CXL_OK && ch.refcnt == 0 &&
	    pe->epobj.pool && cxl_obj_stat(pool, rname, &rcv) == CXL_OK &&
	    rcv.off == pe->epobj.off)
		return; /* the same receiver is still published */
	cxl_obj_destroy(pool, name);
}

void cxlfi_ep_unpublish(struct cxlfi_ep *ep)
{
	cxl_pool *pool = ep->dom->pool;
	char name[64];

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
				if (pe->rx && pe->ack_next && !pe->dead) {
					drain(ep, pe);
					waiting |= pe->ack_next;
				}
		} while (waiting && cxlfi_now_ms() < until);
	}
	/* what the application left behind (with FI_CXL_STATS=1, or in the
	 * log at warn level): receives never matched, messages never
	 * received, sends never taken */
	if (ep->self.pool && cxlfi_diag_busy(ep))
		cxlfi_diag_pending(ep, UINT64_MAX);
	/* stop beating before the object goes away */
	if (ep->self.pool)
		cxlfi_heartbeat_remove(ep);
	cxlfi_svc_release(ep);

	cxlfi_xa_destroy(ep); /* before the peers its tokens name */
	for (struct cxlfi_ep **pp = &ep->dom->eps; *pp; pp = &(*pp)->dom_next)
		if (*pp == ep) {
			*pp = ep->dom_next;
			break;
		}
	cxlfi_mrtab_destroy(ep);
	cxlfi_rma_peer_dead(ep, NULL);
	for (size_t j = 0; ep->peers && j < cxlfi_params.max_eps; j++) {
		struct cxlfi_peer *pe = ep->peers[j];

		if (!pe)
			continue;
		if (pe->tx) {
			cxl_ring_detach(pe->tx);
			cxl_obj_close(&pe->txobj);
			snprintf(name, sizeof(name), "cxlfi.ch.%u.%zu",
				 ep->index, j);
			close_channel(pool, pe, name);
		}
		if (pe->rx) {
			cxl_ring_detach(pe->rx);
			cxl_obj_close(&pe->rxobj);
		}
		cxlfi_bulk_close(ep, pe);
		cxlfi_mrtab_close(pe);
		/* a receive (or RMA target) a message was arriving into */
		if (pe->rx_cur) {
			struct cxlfi_rx *m = pe->rx_cur->parent;

			if (m && --m->inflight == 0 && m->released)
				free(m);
			free(pe->rx_cur);
			pe->rx_cur = NULL;
		}
		if (pe->epobj.pool)
			cxl_obj_close(&pe->epobj);
		while (pe->txq) {
			struct cxlfi_tx *t = pe->txq;

			pe->txq = t->next;
			free(t->copy);
			free(t);
		}
		free(pe);
	}
	while (ep->unexp) {
		struct cxlfi_unexp *u = ep->unexp;

		ep->unexp = u->next;
		free(u->buf);
		free(u);
	}
	free_list_rx(ep->trecv);
	free_list_rx(ep->recv);
	free_list_rx(ep->rx_cache);
	ep->trecv = ep->recv = ep->rx_cache = NULL;
	ep->rx_cached = 0;
	free(ep->peers);
	free(ep->tx_scratch);
	free(ep->rx_scratch);
	ep->peers = NULL;
	ep->tx_scratch = ep->rx_scratch = NULL;
	if (ep->self.pool) {
		cxl_obj_close(&ep->self);
		snprintf(name, sizeof(name), "cxlfi.ep.%u", ep->index);
		cxl_obj_destroy(pool, name);
	}
	memset(&ep->self, 0, sizeof(ep->self));
}

struct cxlfi_peer *cxlfi_get_peer(struct cxlfi_ep *ep, uint32_t idx)
{
	struct cxlfi_peer *pe;

	if (idx >= cxlfi_params.max_eps)
		return NULL;
	pe = ep->peers[idx];
	if (!pe) {
		pe = calloc(1, sizeof(*pe));
		if (!pe)
			return NULL;
		pe->index = idx;
		ep->peers[idx] = pe;
	}
	return pe;
}

/* ---- channels --------------------------------------------------------- */

/* Create our channel to peer a and announce it in a's inbox. */
static int connect_peer(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			const struct cxlfi_addr *a)
{
	cxl_pool *pool = ep->dom->pool;
	struct cxl_ring_attr ra = chan_attr();
	size_t len = cxl_ring_footprint(&ra);
	uint64_t *line;
	char name[64];
	int rc;

	if (!pe->epobj.pool) {
		snprintf(name, sizeof(name), "cxlfi.ep.%u", a->index);
		if (cxl_obj_open(pool, name, &pe->epobj)) {
			CXLFI_WARN(FI_LOG_EP_DATA,
				   "peer endpoint %u is not in the pool (it "
				   "closed, or its process died): %s\n",
				   a->index, cxl_errmsg());
			return -FI_EHOSTUNREACH;
		}
		const uint64_t *hdr = pe->epobj.ptr;

		if (pe->epobj.size >= ep_obj_size())
			cxl_inval(pool, hdr, CXL_LINE);
		if (pe->epobj.size < ep_obj_size() ||
		    hdr[CXLFI_HDR_MAGIC] != CXLFI_EP_MAGIC ||
		    hdr[CXLFI_HDR_GEN] != a->gen) {
			CXLFI_WARN(
				FI_LOG_EP_DATA,
				"address of endpoint %u is stale (gen %u, "
				"the pool has gen %llu) or its FI_CXL_MAX_EPS "
				"differs\n",
				a->index, a->gen,
				pe->epobj.size >= ep_obj_size()
					? (unsigned long long)hdr[CXLFI_HDR_GEN]
					: 0ull);
			cxl_obj_close(&pe->epobj);
			return -FI_EHOSTUNREACH;
		}
		cxlfi_watch_start(ep, pe);
	}
	if (a->gen)
		pe->gen = a->gen;
	snprintf(name, sizeof(name), "cxlfi.ch.%u.%u", ep->index, a->index);
	rc = cxl_obj_create(pool, name, len, 0, &pe->txobj);
	if (rc == CXL_EEXIST) {
		/* left by an earlier endpoint with our index: replace it */
		cxl_obj_destroy(pool, name);
		rc = cxl_obj_create(pool, name, len, 0, &pe->txobj);
	}
	if (rc) {
		CXLFI_WARN(FI_LOG_EP_DATA, "cannot create channel %s: %s\n",
			   name, cxl_errmsg());
		return rc == CXL_ENOSPC ? -FI_ENOSPC : -FI_EIO;
	}
	if (cxl_ring_init(pool, pe->txobj.ptr, len, &ra) ||
	    cxl_ring_attach(pool, pe->txobj.ptr, len, CXL_RING_PRODUCER,
			    &pe->tx)) {
		CXLFI_WARN(FI_LOG_EP_DATA, "channel %s: %s\n", name,
			   cxl_errmsg());
		cxl_obj_close(&pe->txobj);
		cxl_obj_destroy(pool, name);
		return -FI_EIO;
	}
	/* Announce: the line is ours alone (single writer); the stamp goes
	 * last, and the whole line is written back as one unit. */
	line = (uint64_t *)((uint8_t *)pe->epobj.ptr +
			    (EP_HDR_LINES + ep->index) * CXL_LINE);
	line[IB_OFF] = pe->txobj.off;
	line[IB_LEN] = len;
	line[IB_GEN] = ep->gen;
	__atomic_store_n(&line[IB_STAMP], (uint64_t)ep->gen << 32 | 1,
			 __ATOMIC_RELEASE);
	cxl_flush(pool, line, CXL_LINE);
	cxl_wfence(pool);
	CXLFI_INFO(FI_LOG_EP_DATA, "channel %u -> %u created\n", ep->index,
		   a->index);
	return 0;
}

/* The old sender of a half-received message is gone: fail the matched
 * receive, or drop the incomplete unexpected message. */
static void drop_partial(struct cxlfi_ep *ep, struct cxlfi_peer *pe, int err)
{
	if (pe->rx_cur && pe->rx_cur->kind != CXLFI_RX_MSG) {
		cxlfi_rma_fail_rx(ep, pe->rx_cur, err);
	} else if (pe->rx_cur) {
		struct cxlfi_rx *r = pe->rx_cur;

		if (ep->rx_cq)
			cxlfi_cq_push_err(ep->rx_cq, r->context,
					  FI_RECV | (r->flags & FI_TAGGED
							     ? FI_TAGGED
							     : FI_MSG),
					  0, r->buf, 0, pe->rx_tag, 0, err);
		cxlfi_cntr_inc(ep->rx_cntr, true);
		/* the slice of a multi-receive buffer: the buffer's release
		 * is still reported when this was its last slice */
		if (r->parent && --r->parent->inflight == 0 &&
		    r->parent->released)
			multi_release(ep, r->parent);
		free(r);
	}
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

/* Everything we sent or asked of peer pe that it will never take up now
 * fails with FI_EHOSTUNREACH: sends queued for ring space, sends waiting
 * for tokens it holds (and its data slots), reads it will never answer. */
static void fail_outgoing(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	while (pe->txq) {
		struct cxlfi_tx *t = pe->txq;

		pe->txq = t->next;
		pe->ntx--;
		tx_done(ep, t, FI_EHOSTUNREACH);
	}
	pe->txq_tail = NULL;
	cxlfi_xa_peer_dead(ep, pe, tx_done);
	cxlfi_rma_peer_dead(ep, pe);
}

/*
 * Endpoint index pe->index belongs to incarnation gen now (an address with
 * that generation was used, or it announced a channel to us). Whatever
 * was under way with an older incarnation on our side is over, as if it
 * had died: our channel to it (a new one is announced in the new
 * incarnation's inbox), sends and RMA queued for it, its region table and
 * its endpoint object. Posted receives stay: they may be meant for the
 * new incarnation. A message half received from the old one is dropped
 * where its channel is replaced (scan_inbox).
 */
static void peer_renew(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint32_t gen)
{
	cxl_pool *pool = ep->dom->pool;
	char name[64];

	if (pe->gen == gen)
		return;
	if (pe->gen) {
		CXLFI_INFO(FI_LOG_EP_DATA,
			   "endpoint %u is a new incarnation (gen %u, was "
			   "%u)\n",
			   pe->index, gen, pe->gen);
		fail_outgoing(ep, pe);
		if (pe->tx) {
			cxl_ring_detach(pe->tx);
			cxl_obj_close(&pe->txobj);
			pe->tx = NULL;
			snprintf(name, sizeof(name), "cxlfi.ch.%u.%u",
				 ep->index, pe->index);
			cxl_obj_destroy(pool, name);
		}
		cxlfi_mrtab_close(pe);
		if (pe->epobj.pool) {
			const uint64_t *hdr = pe->epobj.ptr;

			cxl_inval(pool, hdr, CXL_LINE);
			if (hdr[CXLFI_HDR_GEN] != gen)
				cxl_obj_close(&pe->epobj);
		}
		pe->dead = false;
	}
	pe->gen = gen;
}

bool cxlfi_ep_current(cxl_pool *pool, uint64_t index, uint64_t gen)
{
	struct cxl_obj o;
	char name[64];
	bool cur = false;

	if (index >= cxlfi_params.max_eps)
		return false;
	snprintf(name, sizeof(name), "cxlfi.ep.%llu",
		 (unsigned long long)index);
	if (cxl_obj_open(pool, name, &o))
		return false;
	if (o.size >= ep_obj_size()) {
		const uint64_t *hdr = o.ptr;

		/* its owner wrote the header: read it fresh */
		cxl_inval(pool, hdr, CXL_LINE);
		cur = hdr[CXLFI_HDR_MAGIC] == CXLFI_EP_MAGIC &&
		      hdr[CXLFI_HDR_GEN] == gen;
	}
	cxl_obj_close(&o);
	return cur;
}

/* Open the endpoint object of a sender that announced a channel, to watch
 * its heartbeat (it must be the incarnation that announced). */
static void watch_sender(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			 uint64_t gen)
{
	char name[64];
	const uint64_t *hdr;

	peer_renew(ep, pe, (uint32_t)gen);

	if (pe->epobj.pool) {
		hdr = pe->epobj.ptr;
		cxl_inval(ep->dom->pool, hdr, CXL_LINE);
		if (hdr[CXLFI_HDR_GEN] == gen)
			return;
		cxl_obj_close(&pe->epobj); /* an older incarnation's */
	}
	snprintf(name, sizeof(name), "cxlfi.ep.%u", pe->index);
	if (cxl_obj_open(ep->dom->pool, name, &pe->epobj))
		return;
	hdr = pe->epobj.ptr;
	cxl_inval(ep->dom->pool, hdr, CXL_LINE);
	if (pe->epobj.size < ep_obj_size() || hdr[CXLFI_HDR_GEN] != gen) {
		cxl_obj_close(&pe->epobj);
		return;
	}
	pe->dead = false;
	cxlfi_watch_start(ep, pe);
}

/*
 * Look for channels announced to us since the last scan, in the next
 * CXLFI_INBOX_CHUNK lines of the inbox (round robin). Each line read costs
 * an invalidation and a miss to the pool, so a scan step is bounded and
 * the whole inbox is covered every max_eps / CXLFI_INBOX_CHUNK steps.
 */
static void scan_inbox(struct cxlfi_ep *ep)
{
	cxl_pool *pool = ep->dom->pool;
	uint32_t first = ep->inbox_next, end;
	char name[64];

	if (first >= cxlfi_params.max_eps)
		first = 0;
	end = first + CXLFI_INBOX_CHUNK;
	if (end > cxlfi_params.max_eps)
		end = (uint32_t)cxlfi_params.max_eps;
	ep->inbox_next = end;
	/* one invalidation of the chunk: its lines, a single fence */
	cxl_inval(pool, ep->inbox + (size_t)first * 8,
		  (size_t)(end - first) * CXL_LINE);
	for (uint32_t j = first; j < end; j++) {
		uint64_t *line = ep->inbox + (size_t)j * 8;
		struct cxlfi_peer *pe = ep->peers[j];
		uint64_t stamp;

		stamp = __atomic_load_n(&line[IB_STAMP], __ATOMIC_ACQUIRE);
		if (!stamp || (pe && pe->rx_seen == stamp))
			continue;
		if (!(pe = cxlfi_get_peer(ep, j)))
			return;
		pe->rx_seen = stamp;
		if (pe->rx) { /* a new incarnation of that sender */
			cxl_ring_detach(pe->rx);
			cxl_obj_close(&pe->rxobj);
			pe->rx = NULL;
			drop_partial(ep, pe, FI_EIO);
			if (pe->bkrx.pool) /* its bulk area is new too */
				cxl_obj_close(&pe->bkrx);
		}
		snprintf(name, sizeof(name), "cxlfi.ch.%u.%u", j, ep->index);
		if (cxl_obj_open(pool, name, &pe->rxobj))
			continue; /* announced by a sender that is gone */
		if (pe->rxobj.off != line[IB_OFF] ||
		    cxl_ring_attach(pool, pe->rxobj.ptr, pe->rxobj.size,
				    CXL_RING_CONSUMER, &pe->rx)) {
			CXLFI_WARN(FI_LOG_EP_DATA,
				   "channel %s does not match its announcement "
				   "or is damaged; ignoring it\n",
				   name);
			cxl_obj_close(&pe->rxobj);
			pe->rx = NULL;
			continue;
		}
		CXLFI_INFO(FI_LOG_EP_DATA, "channel %u -> %u attached\n", j,
			   ep->index);
		watch_sender(ep, pe, line[IB_GEN]);
		/* a sender that closed before we came left its channel named
		 * (close_channel): we hold it open now, so unlink it */
		if (!pe->epobj.pool)
			cxl_obj_destroy(pool, name);
		if (!pe->in_active) {
			pe->in_active = true;
			pe->next_active = ep->active;
			ep->active = pe;
		}
	}
}

/* ---- sending ------------------------------------------------------------- */

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

	/* a delivery-complete send that is not passed by pointer is
	 * followed by its OP_ACK (push) */
	bool acked = (t->flags & FI_DELIVERY_COMPLETE) && !t->ptr_ok;

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
static int push(struct cxlfi_ep *ep, struct cxlfi_peer *pe, struct cxlfi_tx *t)
{
	size_t P = ep->cell_payload;
	int rc;

	if (!t->started) {
		size_t h = put_hdr(ep->tx_scratch, t);

		if (h + t->len <= P) {
			if (t->len) /* a 0-byte send may have a NULL buffer */
				memcpy(ep->tx_scratch + h, t->buf, t->len);
			rc = cxl_ring_send(pe->tx, ep->tx_scratch, h + t->len,
					   OP_EAGER | tx_op(t), 0);
			if (rc == CXL_EAGAIN)
				return 0;
			if (rc)
				goto err;
			t->off = t->len;
			t->started = true;
			goto ack;
		}
		/* the transfer area exists before the first cell goes out,
		 * so that the message is never left half sent */
		if ((t->len >= cxlfi_params.bulk_min || t->ptr_ok) &&
		    (rc = cxlfi_xa_prepare(ep)))
			return rc;
		memcpy(ep->tx_scratch + h, &(uint64_t){ t->len }, 8);
		h += 8;
		memcpy(ep->tx_scratch + h, t->buf, P - h);
		rc = cxl_ring_send(pe->tx, ep->tx_scratch, P,
				   OP_FIRST | tx_op(t), 0);
		if (rc == CXL_EAGAIN)
			return 0;
		if (rc)
			goto err;
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

static void complete_tx(struct cxlfi_ep *ep, const struct cxlfi_tx *t, int err)
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

/* Complete and free a queued or waiting send. */
static void tx_done(struct cxlfi_ep *ep, struct cxlfi_tx *t, int err)
{
	complete_tx(ep, t, err);
	free(t->copy);
	free(t);
}

/* Retry the queued sends of every blocked peer, in order. */
static void push_pending(struct cxlfi_ep *ep)
{
	struct cxlfi_peer **pp = &ep->txpend;

	while (*pp) {
		struct cxlfi_peer *pe = *pp;

		while (pe->txq) {
			struct cxlfi_tx *t = pe->txq;
			int rc = push(ep, pe, t);

			if (rc == 0)
				break;
			pe->txq = t->next;
			if (!pe->txq)
				pe->txq_tail = NULL;
			pe->ntx--;
			if (rc > 0 && t->wait_tok >= 0)
				continue; /* completes when its token returns */
			tx_done(ep, t, rc < 0 ? FI_EIO : 0);
		}
		if (!pe->txq) {
			pe->in_txlist = false;
			*pp = pe->next_tx;
		} else {
			pp = &pe->next_tx;
		}
	}
}

int cxlfi_peer_for(struct cxlfi_ep *ep, fi_addr_t dest, struct cxlfi_peer **out)
{
	const struct cxlfi_av_entry *e = cxlfi_av_get(ep->av, dest);
	struct cxlfi_peer *pe;
	int rc;

	if (!e)
		return -FI_EINVAL;
	if (!(pe = cxlfi_get_peer(ep, e->addr.index)))
		return -FI_ENOMEM;
	/* one compare per send: an address of a newer incarnation of the
	 * index must not go into the channel of an older one, and a stale
	 * address must not tear down the channel of the current one */
	if (e->addr.gen != pe->gen) {
		if (pe->gen &&
		    !cxlfi_ep_current(ep->dom->pool, pe->index, e->addr.gen))
			return -FI_EHOSTUNREACH;
		peer_renew(ep, pe, e->addr.gen);
	}
	if (pe->dead)
		return -FI_EHOSTUNREACH;
	if (!pe->tx && (rc = connect_peer(ep, pe, &e->addr)))
		return rc;
	*out = pe;
	return 0;
}

int cxlfi_connect_back(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	/* the peer's object is open (watch_sender), so only the index is
	 * used: its generation was checked when its channel was attached */
	struct cxlfi_addr a = { .index = pe->index };

	if (pe->dead)
		return -FI_EHOSTUNREACH;
	if (!pe->epobj.pool)
		return -FI_EHOSTUNREACH;
	return pe->tx ? 0 : connect_peer(ep, pe, &a);
}

ssize_t cxlfi_send(struct cxlfi_ep *ep, const void *buf, size_t len,
		   fi_addr_t dest, uint64_t tag, uint64_t data, uint64_t flags,
		   void *context)
{
	struct cxlfi_tx t = { 0 };
	struct cxlfi_peer *pe;
	int rc;

	if (len > CXLFI_MAX_MSG ||
	    ((flags & FI_INJECT) && len > cxlfi_params.inject_size))
		return -FI_EMSGSIZE;
	if ((rc = cxlfi_peer_for(ep, dest, &pe)))
		return rc;
	t.buf = buf;
	t.len = len;
	t.tag = tag;
	t.data = data;
	t.flags = flags;
	t.context = context;
	return cxlfi_post(ep, pe, &t, false);
}

/* A heap copy of t, with the data of an inject (the caller's only until
 * we return). */
static struct cxlfi_tx *tx_copy(const struct cxlfi_tx *t)
{
	struct cxlfi_tx *q = malloc(sizeof(*q));

	if (!q)
		return NULL;
	*q = *t;
	q->next = NULL;
	q->copy = NULL;
	if (t->flags & FI_INJECT) {
		q->copy = malloc(t->len ? t->len : 1);
		if (!q->copy) {
			free(q);
			return NULL;
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
	t.ptr_ok = t.len >= cxlfi_params.bulk_min && !(t.flags & FI_INJECT) &&
		   t.kind != CXLFI_TX_WRITE &&
		   cxlfi_ptr_usable(ep, t.buf, t.len);
	/* Sends that complete later, when a token returns, live on the heap
	 * from the start; the others only if they have to wait. */
	if ((t.ptr_ok || (t.flags & FI_DELIVERY_COMPLETE)) &&
	    !(q = tx_copy(&t)))
		return -FI_ENOMEM;
	if (!pe->txq) {
		rc = push(ep, pe, q ? q : &t);
		if (rc < 0) {
			if (q) {
				free(q->copy);
				free(q);
			}
			return rc;
		}
		if (rc == 1) {
			if (!q)
				complete_tx(ep, &t, 0);
			else if (q->wait_tok <
				 0) /* sent whole, no token taken */
				tx_done(ep, q, 0);
			/* else: q completes when its token returns */
			return 0;
		}
	} else if (pe->ntx >= TXQ_MAX && !in_progress) {
		cxlfi_progress(ep);
		if (pe->ntx >= TXQ_MAX) {
			if (q) {
				free(q->copy);
				free(q);
			}
			return -FI_EAGAIN;
		}
	}
	/* Queue behind earlier sends to this peer (order). */
	if (!q && !(q = tx_copy(&t)))
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

/* ---- receiving ----------------------------------------------------------- */

static bool rx_matches(const struct cxlfi_rx *r, bool tagged, uint32_t src,
		       uint64_t tag)
{
	if (!!(r->flags & FI_TAGGED) != tagged)
		return false;
	if (tagged && ((r->tag ^ tag) & ~r->ignore))
		return false;
	return r->src == FI_ADDR_UNSPEC || r->src_index == src;
}

static void rx_unlink(struct cxlfi_ep *ep, bool tagged, struct cxlfi_rx *r,
		      struct cxlfi_rx *prev)
{
	struct cxlfi_rx **head = tagged ? &ep->trecv : &ep->recv;
	struct cxlfi_rx **tail = tagged ? &ep->trecv_tail : &ep->recv_tail;

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

	ep->reported++; /* for drain(): messages, RMA and answers alike */
	if (r->kind != CXLFI_RX_MSG) {
		(void)tag;
		(void)src;
		cxlfi_rma_complete_rx(ep, r, total, data, has_data);
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

static void copy_into(struct cxlfi_rx *r, size_t off, const void *p, size_t n)
{
	if (off < r->len)
		memcpy((uint8_t *)r->buf + off, p,
		       n < r->len - off ? n : r->len - off);
}

static void unexp_append(struct cxlfi_ep *ep, struct cxlfi_unexp *u)
{
	if (ep->unexp_tail)
		ep->unexp_tail->next = u;
	else
		ep->unexp = u;
	ep->unexp_tail = u;
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
	ep->unexp_bytes -= u->len;
}

/* A message (or its first chunk) arrived from peer pe. */
static int on_message(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint32_t op,
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
		drop_partial(ep, pe, FI_EIO);
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
			cxlfi_rma_read_request(ep, pe, m, n);
		else
			cxlfi_atomic_request(ep, pe, m, n);
		return 0;
	}
	if (write || (op & OPF_READRSP)) {
		/* RMA: the target buffer is known, nothing to match. A write
		 * the target refuses goes to a sink, and its error travels
		 * back with the write's acknowledgement. */
		int err = 0;

		if (write)
			r = cxlfi_rma_write_target(ep, tag, addr, total, &err);
		else
			r = cxlfi_rma_read_answer(ep, pe, tag, total,
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
		copy_into(r, 0, m, n);
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

/* n more bytes of the message in progress from pe are in place (ring
 * chunk or bulk slot): advance, and complete the receive at the end. */
static void chunk_arrived(struct cxlfi_ep *ep, struct cxlfi_peer *pe, size_t n)
{
	pe->rx_off += n;
	pe->rx_left -= n;
	if (pe->ux_cur)
		pe->ux_cur->have = pe->rx_off;
	if (pe->rx_left)
		return;
	if (pe->rx_cur)
		complete_rx(ep, pe->rx_cur, pe->rx_total, pe->rx_tag,
			    pe->rx_data, pe->index, pe->rx_op & OPF_TAGGED,
			    pe->rx_op & OPF_DATA);
	pe->rx_cur = NULL;
	pe->ux_cur = NULL;
}

/* Room in the unexpected message in progress for need bytes in all. */
static bool ux_reserve(struct cxlfi_ep *ep, struct cxlfi_peer *pe, size_t need)
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
		drop_partial(ep, pe, FI_ENOMEM);
		return false;
	}
	u->buf = b;
	u->cap = cap;
	return true;
}

static void on_chunk(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		     const uint8_t *m, size_t n)
{
	if (!pe->rx_left || n > pe->rx_left) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "unexpected chunk from endpoint %u "
			   "dropped\n",
			   pe->index);
		return;
	}
	if (pe->rx_cur)
		copy_into(pe->rx_cur, pe->rx_off, m, n);
	else if (ux_reserve(ep, pe, pe->rx_off + n))
		memcpy(pe->ux_cur->buf + pe->rx_off, m, n);
	else
		return;
	chunk_arrived(ep, pe, n);
}

/* A bulk descriptor: its chunk goes straight from the bulk slot into the
 * matched receive (or the unexpected buffer), without a staging copy. */
static void on_bulk(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    const uint8_t *m, size_t n)
{
	uint8_t *dst = NULL;
	size_t cap = 0, got;

	if (!pe->rx_left) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "unexpected bulk chunk from endpoint %u dropped\n",
			   pe->index);
		cxlfi_bulk_take(ep, pe, m, n, NULL, 0); /* still free it */
		return;
	}
	if (pe->rx_cur && pe->rx_off < pe->rx_cur->len) {
		dst = (uint8_t *)pe->rx_cur->buf + pe->rx_off;
		cap = pe->rx_cur->len - pe->rx_off;
	} else if (pe->ux_cur) {
		cap = pe->rx_left < CXLFI_XA_SLOT_SIZE ? pe->rx_left
						       : CXLFI_XA_SLOT_SIZE;
		if (!ux_reserve(ep, pe, pe->rx_off + cap)) {
			cxlfi_bulk_take(ep, pe, m, n, NULL, 0); /* free it */
			return;
		}
		dst = pe->ux_cur->buf + pe->rx_off;
	}
	got = cxlfi_bulk_take(ep, pe, m, n, dst, cap);
	if (!got || got > pe->rx_left) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "bad bulk descriptor from endpoint %u; the message "
			   "fails\n",
			   pe->index);
		drop_partial(ep, pe, FI_EIO);
		return;
	}
	chunk_arrived(ep, pe, got);
}

/* A pointer descriptor: the rest of the message is in the pool, in the
 * sender's buffer. One copy into the receive (or unexpected) buffer. */
static void on_ptr(struct cxlfi_ep *ep, struct cxlfi_peer *pe, const uint8_t *m,
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
		if (!ux_reserve(ep, pe, pe->rx_off + pe->rx_left)) {
			cxlfi_ptr_take(ep, pe, m, n, 0, NULL,
				       0); /* return it */
			return;
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
		if (pe->rx_left)
			drop_partial(ep, pe, FI_EIO);
		return;
	}
	chunk_arrived(ep, pe, got);
}

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
 */
static void drain(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	bool stream = pe->rx_hits >= STREAM_HITS, stop = false;

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
		rc = cxl_ring_recv(pe->rx, ep->rx_scratch, ep->cell_payload, &n,
				   &op);
		if (rc == CXL_EAGAIN) {
			if (!k)
				pe->rx_hits = 0;
			return;
		}
		if (rc) {
			CXLFI_WARN(FI_LOG_EP_DATA,
				   "channel from endpoint %u failed: %s\n",
				   pe->index, cxl_errmsg());
			return;
		}
		cxlfi_stats.ring_msgs++;
		if (!k && pe->rx_hits < STREAM_HITS)
			pe->rx_hits++;
		if ((op & OP_MASK) == OP_EAGER || (op & OP_MASK) == OP_FIRST)
			pe->ack_next = op & OPF_ACKNEXT;
		else if ((op & OP_MASK) == CXLFI_OP_ACK)
			pe->ack_next = false;
		if ((op & OP_MASK) == CXLFI_OP_BULK)
			on_bulk(ep, pe, ep->rx_scratch, n);
		else if ((op & OP_MASK) == CXLFI_OP_PTR)
			on_ptr(ep, pe, ep->rx_scratch, n);
		else if ((op & OP_MASK) == CXLFI_OP_ACK)
			cxlfi_ack_take(ep, pe, ep->rx_scratch, n);
		else if ((op & OP_MASK) == OP_CONT)
			on_chunk(ep, pe, ep->rx_scratch, n);
		else
			on_message(ep, pe, op, ep->rx_scratch, n);
		if (!stream && ep->reported != reported)
			stop = true;
		if (stop && !pe->ack_next)
			return;
	}
}

void cxlfi_peer_dead(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	struct cxlfi_rx **lists[2] = { &ep->trecv, &ep->recv };

	pe->dead = true;
	fail_outgoing(ep, pe);
	/* a message from it that will never be finished */
	drop_partial(ep, pe, FI_EHOSTUNREACH);
	/* receives that can only be matched by it */
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
			if (ep->rx_cq)
				cxlfi_cq_push_err(
					ep->rx_cq, r->context,
					FI_RECV | (l == 0 ? FI_TAGGED : FI_MSG),
					0, r->buf, 0, r->tag, 0,
					FI_EHOSTUNREACH);
			cxlfi_cntr_inc(ep->rx_cntr, true);
			if (r->inflight)
				r->released = true;
			else
				free(r);
			r = next;
		}
	}
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
	if (ep->progress_calls++ % cxlfi_params.inbox_poll == 0)
		scan_inbox(ep);
	cxlfi_watch_peers(ep);
	if (ep->xa_waiting)
		cxlfi_xa_poll(ep, tx_done);
	if (ep->txpend)
		push_pending(ep);
	for (struct cxlfi_peer *pe = ep->active; pe; pe = pe->next_active)
		if (pe->rx)
			drain(ep, pe);
	if (cxlfi_params.stats)
		account_poll(&c0, cells0);
}

/* ---- posting receives -------------------------------------------------- */

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
static void deliver_unexp(struct cxlfi_ep *ep, struct cxlfi_unexp *u,
			  struct cxlfi_rx *r)
{
	copy_into(r, 0, u->buf, u->have);
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

	cxlfi_progress(ep);
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
		free(u->buf);
		free(u);
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
		src_index = e->addr.index;
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
			free(u->buf);
			free(u);
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
	struct cxlfi_rx **lists[2] = { &ep->trecv, &ep->recv };
	struct cxlfi_rx **tails[2] = { &ep->trecv_tail, &ep->recv_tail };

	for (int l = 0; l < 2; l++) {
		struct cxlfi_rx *prev = NULL;

		for (struct cxlfi_rx **pp = lists[l]; *pp;
		     prev = *pp, pp = &(*pp)->next) {
			struct cxlfi_rx *r = *pp;

			if (r->context != context)
				continue;
			*pp = r->next;
			if (*tails[l] == r)
				*tails[l] = prev;
			if (ep->rx_cq)
				cxlfi_cq_push_err(
					ep->rx_cq, context,
					FI_RECV | (l == 0 ? FI_TAGGED : FI_MSG),
					0, r->buf, 0, r->tag, 0, FI_ECANCELED);
			if (r->inflight) /* slices still arriving own it */
				r->released = true;
			else
				free(r);
			return 0;
		}
	}
	return -FI_ENOENT;
}
