/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Channels and peers (proto.h): endpoint publication and close, the
 * per-pair rings and their announcement in the receiver's inbox, the
 * incarnations of peer endpoints, and resolving a destination to a
 * channel. A peer's new incarnation fails what was under way with the
 * old one through send.c and recv.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

/* Inbox line written by sender j into receiver's object, line 1 + j. */
enum {
	IB_STAMP = 0,
	IB_OFF = 1,
	IB_LEN = 2,
	IB_GEN = 3
};

size_t cxlfi_chan_span(void)
{
	size_t need = cxlfi_params.eager_max + CXLFI_EAGER_HDR_MAX, span = 1;

	/* a message over k cells holds what one cell of k times the size
	 * does: its lines go on across the cell boundaries */
	while (cxl_ring_cell_payload(
		       (uint32_t)(span * cxlfi_params.cell_size)) < need)
		span++;
	return span;
}

static struct cxl_ring_attr chan_attr(void)
{
	struct cxl_ring_attr a = {
		.cell_size = (uint32_t)cxlfi_params.cell_size,
		.ncells = (uint32_t)cxlfi_params.ncells,
		.poll_lines = 2,
		.span = (uint32_t)cxlfi_chan_span(),
	};

	return a;
}

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
		rc = cxl_obj_create(pool, name, cxlfi_ep_obj_size(),
				    CXL_OBJ_ZERO, &ep->self);
	}
	if (rc == CXL_EEXIST) {
		cxlfi_report("cannot publish an endpoint in the pool %s: all "
			     "FI_CXL_MAX_EPS=%zu indices are taken; raise "
			     "FI_CXL_MAX_EPS, give each job its own CXL_JOB (a "
			     "crashed job's endpoints are then reclaimed), or "
			     "remove stale 'cxlfi.ep.*' objects with 'cxlpool "
			     "gc' or 'cxlpool rm'",
			     cxl_pool_path(pool), max);
		cxlfi_report_linger();
		return -FI_EADDRNOTAVAIL;
	}
	if (rc)
		return cxlfi_pool_failure(rc, "the endpoint object", name);
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
	ep->eager_payload = cxl_ring_cell_payload(
		(uint32_t)(cxlfi_chan_span() * cxlfi_params.cell_size));
	ep->peers = calloc(max, sizeof(*ep->peers));
	ep->tx_scratch = malloc(ep->eager_payload);
	ep->rx_scratch = malloc(ep->eager_payload);
	ep->rx_cap = ep->eager_payload;
	if (!ep->peers || !ep->tx_scratch || !ep->rx_scratch) {
		cxlfi_chan_unpublish(ep);
		return -FI_ENOMEM;
	}
	if (cxlfi_heartbeat_add(ep)) {
		cxlfi_chan_unpublish(ep);
		return -FI_EOTHER;
	}
	/* the domain's pool regions, for origins that write them directly */
	if ((rc = cxlfi_mrtab_create(ep))) {
		cxlfi_chan_unpublish(ep);
		return rc;
	}
	/* opened with a service address: answer to its name */
	if (ep->info && ep->info->src_addr &&
	    cxlfi_addr_is_ours(pool, ep->info->src_addr,
			       ep->info->src_addrlen) &&
	    (((struct cxlfi_addr *)ep->info->src_addr)->reserved &
	     CXLFI_ADDR_NAMED) &&
	    (rc = cxlfi_svc_claim(ep, ep->info->src_addr))) {
		cxlfi_chan_unpublish(ep);
		return rc;
	}
	ep->dom_next = ep->dom->eps;
	ep->dom->eps = ep;
	CXLFI_INFO(FI_LOG_EP_CTRL, "endpoint %u (gen %u) published\n",
		   ep->index, ep->gen);
	return 0;
}

/*
 * Our channel to peer pe, at close (our handle already closed). Normally
 * unlinked: the storage goes with the receiver's close. But a receiver
 * that is still there and has not found the channel yet (nobody holds it
 * open) would then never see the messages in it, which completed here as
 * sent; a channel exists only once something was sent. So that channel
 * keeps its name: the receiver attaches it as usual, takes the messages,
 * and unlinks it when it finds us gone (cxlfi_chan_scan_inbox).
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

/*
 * Channels to us that a closed sender kept named for us (close_channel)
 * and that we hold no longer, or never attached: nobody holds them open
 * (a live sender does), so unlink them. After our endpoint's name is
 * gone: a sender that closes later finds us unpublished and unlinks its
 * channel itself; one that closed before has dropped its handle, so we
 * see refcnt 0 here. Either way no name outlives both.
 */
static void unlink_kept_channels(struct cxlfi_ep *ep)
{
	cxl_pool *pool = ep->dom->pool;
	struct cxl_obj_stat st;
	char name[64];

	for (size_t j = 0; j < cxlfi_params.max_eps; j++) {
		snprintf(name, sizeof(name), "cxlfi.ch.%zu.%u", j, ep->index);
		if (cxl_obj_stat(pool, name, &st) == CXL_OK && !st.unlinked &&
		    st.refcnt == 0)
			cxl_obj_destroy(pool, name);
	}
}

/* The rest of closing an endpoint (progress.c lingers first): what it
 * left pending is reported, its heartbeat, service name, transfer area,
 * region table and channels go, and its pool object is removed. */
void cxlfi_chan_unpublish(struct cxlfi_ep *ep)
{
	cxl_pool *pool = ep->dom->pool;
	char name[64];

	/* what the application left behind (with FI_CXL_STATS=1, or in the
	 * log at warn level): receives never matched, messages never
	 * received, sends never taken */
	if (ep->self.pool && cxlfi_diag_busy(ep))
		cxlfi_diag_pending(ep, UINT64_MAX);
	/* stop beating before the object goes away, and say that we closed:
	 * a peer still watching then knows it was no death */
	if (ep->self.pool) {
		cxlfi_heartbeat_remove(ep);
		cxl_flag_set(pool, &((uint64_t *)ep->self.ptr)[CXLFI_HDR_BEAT],
			     CXLFI_BEAT_CLOSED);
	}
	cxlfi_svc_release(ep);

	cxlfi_xa_destroy(ep); /* before the peers its tokens name */
	for (struct cxlfi_ep **pp = &ep->dom->eps; *pp; pp = &(*pp)->dom_next)
		if (*pp == ep) {
			*pp = ep->dom_next;
			break;
		}
	cxlfi_mrtab_destroy(ep);
	cxlfi_up.rma_peer_dead(ep, NULL);
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
	cxlfi_rx_free_all(ep);
	cxlfi_tx_free_cache(ep);
	free(ep->peers);
	free(ep->tx_scratch);
	free(ep->rx_scratch);
	ep->peers = NULL;
	ep->tx_scratch = ep->rx_scratch = NULL;
	if (ep->self.pool) {
		cxl_obj_close(&ep->self);
		snprintf(name, sizeof(name), "cxlfi.ep.%u", ep->index);
		cxl_obj_destroy(pool, name);
		unlink_kept_channels(ep);
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

		if (pe->epobj.size >= cxlfi_ep_obj_size())
			cxl_inval(pool, hdr, CXL_LINE);
		if (pe->epobj.size < cxlfi_ep_obj_size() ||
		    hdr[CXLFI_HDR_MAGIC] != CXLFI_EP_MAGIC ||
		    hdr[CXLFI_HDR_GEN] != a->gen) {
			CXLFI_WARN(
				FI_LOG_EP_DATA,
				"address of endpoint %u is stale (gen %u, "
				"the pool has gen %llu) or its FI_CXL_MAX_EPS "
				"differs\n",
				a->index, a->gen,
				pe->epobj.size >= cxlfi_ep_obj_size()
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
	if (rc)
		return cxlfi_pool_failure(rc, "the channel", name);
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
			    (CXLFI_EP_HDR_LINES + ep->index) * CXL_LINE);
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

/*
 * Endpoint index pe->index belongs to incarnation gen now (an address with
 * that generation was used, or it announced a channel to us). Whatever
 * was under way with an older incarnation on our side is over, as if it
 * had died: our channel to it (a new one is announced in the new
 * incarnation's inbox), sends and RMA queued for it, its region table and
 * its endpoint object. Posted receives stay: they may be meant for the
 * new incarnation. A message half received from the old one is dropped
 * where its channel is replaced (cxlfi_chan_scan_inbox).
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
		cxlfi_tx_fail_peer(ep, pe);
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
	if (pe->epobj.size < cxlfi_ep_obj_size() || hdr[CXLFI_HDR_GEN] != gen) {
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
void cxlfi_chan_scan_inbox(struct cxlfi_ep *ep)
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
			cxlfi_rx_abort(ep, pe, FI_EIO);
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
		/* its head stores wait for our next fence (drain); a
		 * coherent pool needs none */
		pe->lazy_head = cxl_pool_mode(pool) != CXL_COH_COHERENT;
		cxl_ring_lazy_head(pe->rx, pe->lazy_head);
		/* a sender's messages may be larger than ours (its own
		 * FI_CXL_EAGER_MAX): room for them, bounded by its ring */
		if (cxl_ring_max_msg(pe->rx) > ep->rx_cap) {
			uint8_t *b = realloc(ep->rx_scratch,
					     cxl_ring_max_msg(pe->rx));

			if (!b) {
				CXLFI_WARN(FI_LOG_EP_DATA,
					   "out of memory for the %zu-byte "
					   "messages of channel %s; ignoring "
					   "it\n",
					   cxl_ring_max_msg(pe->rx), name);
				cxl_ring_detach(pe->rx);
				cxl_obj_close(&pe->rxobj);
				pe->rx = NULL;
				continue;
			}
			ep->rx_scratch = b;
			ep->rx_cap = cxl_ring_max_msg(pe->rx);
		}
		pe->rx_broken = false; /* a new ring, checked afresh */
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

int cxlfi_peer_for(struct cxlfi_ep *ep, fi_addr_t dest, struct cxlfi_peer **out)
{
	const struct cxlfi_av_entry *e = cxlfi_av_get(ep->av, dest);
	struct cxlfi_peer *pe;
	int rc;

	if (!e)
		return -FI_EINVAL;
	if (e->net) {
		/* sends to it take the network link (ops.c); what comes here
		 * is RMA or an atomic, which the link does not carry */
		static bool said;

		if (!said)
			cxlfi_report("RMA and atomics to a peer outside the "
				     "pool (fi_addr %llu, over FI_CXL_NET=%s) "
				     "are not supported; they fail with "
				     "FI_EOPNOTSUPP (docs/multipool.md)",
				     (unsigned long long)dest,
				     cxlfi_params.net);
		said = true;
		return -FI_EOPNOTSUPP;
	}
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
