/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network path of an endpoint (docs/multipool.md): with FI_CXL_NET
 * set, each endpoint owns a link to a network provider (net.c) for the
 * peers outside our pool. Here: opening it with the endpoint's CQs and
 * receive queue as owners, telling it the AV's network peers, sending to
 * them, and the owner side of the CQs (the completions it writes). The
 * receive queue's owner side is matching, in recv.c.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define NETTXQ_MAX 1024u /* sends queued on an endpoint before -FI_EAGAIN */

/* A send on the link: what the user asked for, and the endpoint whose
 * counters and statistics it moves. */
struct cxlfi_nettx {
	/* the endpoint's outstanding sends (prev, next), or its queue of
	 * sends waiting to be posted (next) */
	struct cxlfi_nettx *prev, *next;
	struct cxlfi_fl_node fl; /* in the endpoint's cache */
	struct cxlfi_ep *ep;
	struct cxlfi_tx tx; /* reported as a send through the pool is */
	fi_addr_t na;	    /* the peer, in the link's AV */
	uint64_t tag, data;
	const void *buf;
	bool cached;	/* room for FI_CXL_INJECT_SIZE bytes: reusable */
	uint8_t copy[]; /* an inject's bytes */
};

/* A send record with room for n bytes of an inject. Records with room for
 * any inject are kept for reuse (a stream of injects would otherwise
 * allocate and free a few KiB per send), without zeroing: every field is
 * set by the caller. */
static struct cxlfi_nettx *nettx_get(struct cxlfi_ep *ep, size_t n)
{
	struct cxlfi_nettx *t = NULL;

	if (n <= cxlfi_params.inject_size) {
		t = CXLFI_FL_OBJ(cxlfi_fl_take(&ep->nettx_cache),
				 struct cxlfi_nettx, fl);
		if (t)
			return t;
		n = cxlfi_params.inject_size;
	}
	t = malloc(sizeof(*t) + n);
	if (t)
		t->cached = n == cxlfi_params.inject_size;
	return t;
}

static void nettx_put(struct cxlfi_nettx *t)
{
	if (!t->cached || !cxlfi_fl_give(&t->ep->nettx_cache, &t->fl))
		free(t);
}

static void nettx_unlink(struct cxlfi_nettx *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		t->ep->net_tx = t->next;
	if (t->next)
		t->next->prev = t->prev;
}

static void send_done(struct cxlfi_nettx *t, int err)
{
	nettx_unlink(t);
	if (!err)
		cxlfi_stats.net_sent++;
	cxlfi_tx_report(t->ep, &t->tx, err);
	nettx_put(t);
}

/* The link writes a completion into our CQ: a receive's (its context is
 * our entry, recv.c) or a send's (its context is our struct cxlfi_nettx). */
static ssize_t cq_write(struct fipeer_cq *pc, void *ctx, uint64_t flags,
			size_t len, void *buf, uint64_t data, uint64_t tag,
			fi_addr_t src)
{
	(void)pc;
	(void)buf;
	(void)src; /* the entry's source, which the link gave at matching */
	if (flags & FI_RECV)
		cxlfi_rx_net_done(ctx, len, data, tag,
				  flags & FI_REMOTE_CQ_DATA, 0);
	else if (ctx)
		send_done(ctx, 0);
	return 0;
}

static ssize_t cq_writeerr(struct fipeer_cq *pc,
			   const struct fi_cq_err_entry *e)
{
	(void)pc;
	if (e->flags & FI_RECV)
		cxlfi_rx_net_done(e->op_context, e->len + e->olen, e->data,
				  e->tag, e->flags & FI_REMOTE_CQ_DATA,
				  e->err ? e->err : FI_EIO);
	else if (e->op_context)
		send_done(e->op_context, e->err ? e->err : FI_EIO);
	return 0;
}

static void cq_peer_init(struct cxlfi_cq *cq)
{
	cq->peer_ops = (struct fipeer_cq_owner_ops){
		.size = sizeof(cq->peer_ops),
		.write = cq_write,
		.writeerr = cq_writeerr,
	};
	cq->peer.fid.fclass = FI_CLASS_PEER_CQ;
	cq->peer.owner_ops = &cq->peer_ops;
}

/* Tell the link of ep about the network peer at fa. */
static int map_insert(struct cxlfi_ep *ep, fi_addr_t fa)
{
	const struct cxlfi_av_entry *e = &ep->av->tab[fa];
	fi_addr_t na;
	int rc;

	if (fa >= ep->net_map_n) {
		size_t n = ep->net_map_n ? ep->net_map_n : 64;
		fi_addr_t *m;

		while (n <= fa)
			n *= 2;
		fi_addr_t *r;

		m = realloc(ep->net_map, n * sizeof(*m));
		if (!m)
			return -FI_ENOMEM;
		ep->net_map = m;
		r = realloc(ep->net_rma_map, n * sizeof(*r));
		if (!r)
			return -FI_ENOMEM;
		ep->net_rma_map = r;
		for (size_t i = ep->net_map_n; i < n; i++)
			m[i] = r[i] = FI_ADDR_NOTAVAIL;
		ep->net_map_n = n;
	}
	rc = cxlfi_net_insert(ep->net, e->netname, e->netlen, fa, &na);
	if (rc) {
		cxlfi_report("FI_CXL_NET=%s: the network provider refused "
			     "the address of peer %llu (host %u of another "
			     "pool): %s; check that every process uses the "
			     "same FI_CXL_NET",
			     cxlfi_params.net, (unsigned long long)fa,
			     e->addr.host, fi_strerror(-rc));
		return rc;
	}
	if (ep->net_map[fa] == FI_ADDR_NOTAVAIL)
		ep->net_peers++;
	ep->net_map[fa] = na;
	/* its RMA endpoint: our message address's form, its port (the two
	 * bytes after the address); none, and RMA to it is refused */
	if (ep->net->rma_port) {
		uint16_t port;
		uint8_t rname[CXLFI_NET_NAME_MAX];

		memcpy(&port, e->netname + e->netlen, sizeof(port));
		if (e->netlen + sizeof(port) <= CXLFI_NET_NAME_MAX &&
		    cxlfi_net_rma_name(e->netname, e->netlen, port, rname) &&
		    fi_av_insert(ep->net->rma_av, rname, 1, &na, 0, NULL) == 1)
			ep->net_rma_map[fa] = na;
	}
	return 0;
}

/*
 * FI_PROVIDER hides the core providers it does not list (libfabric
 * registers them hidden), and a utility provider such as ofi_rxm looks
 * its core up without seeing hidden ones: FI_PROVIDER=cxl leaves
 * tcp;ofi_rxm no tcp to open. The core (the first name of FI_CXL_NET)
 * must be listed beside cxl. NULL when it is, else the advice.
 */
static const char *filter_hides_core(char *buf, size_t len)
{
	const char *f = getenv("FI_PROVIDER");
	char core[64], list[256], *save = NULL;

	snprintf(core, sizeof(core), "%s", cxlfi_params.net);
	core[strcspn(core, ";")] = 0;
	if (!f || !*f || *f == '^' || strlen(f) >= sizeof(list))
		return NULL;
	snprintf(list, sizeof(list), "%s", f);
	for (char *t = strtok_r(list, ",", &save); t;
	     t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, core))
			return NULL;
	snprintf(buf, len,
		 " FI_PROVIDER=%s hides %s, which %s needs: set "
		 "FI_PROVIDER=%s,%s (MPI libraries still choose cxl, which "
		 "offers more of what they ask for)",
		 f, core, cxlfi_params.net, f, core);
	return buf;
}

int cxlfi_netpath_open(struct cxlfi_ep *ep)
{
	struct cxlfi_net_owner o;
	char why[512];
	int rc;

	if (!cxlfi_params.net[0] || ep->net)
		return 0;
	if (!ep->tx_cq || !ep->rx_cq) {
		cxlfi_report("FI_CXL_NET=%s: an endpoint needs a transmit and "
			     "a receive CQ bound before fi_enable or "
			     "fi_getname (the network provider completes "
			     "into them); bind both, or unset FI_CXL_NET",
			     cxlfi_params.net);
		return -FI_ENOCQ;
	}
	cq_peer_init(ep->tx_cq);
	cq_peer_init(ep->rx_cq);
	cxlfi_rx_srx_init(ep);
	o = (struct cxlfi_net_owner){ &ep->tx_cq->peer, &ep->rx_cq->peer,
				      &ep->srx, true };
	rc = cxlfi_net_open(cxlfi_params.net, &o, &ep->net, why, sizeof(why));
	if (rc) {
		char hint[512];
		const char *h = filter_hides_core(hint, sizeof(hint));

		if (h)
			cxlfi_report("FI_CXL_NET=%s: %s.%s", cxlfi_params.net,
				     why, h);
		else
			cxlfi_report("FI_CXL_NET=%s: %s. Set FI_CXL_NET to a "
				     "network provider that fi_info lists with "
				     "FI_PEER (such as tcp;ofi_rxm), or unset "
				     "it for a pool-only job",
				     cxlfi_params.net, why);
		return rc;
	}
	if (ep->net->namelen > CXLFI_NET_NAME_MAX) {
		cxlfi_report("FI_CXL_NET=%s: its addresses have %zu bytes, "
			     "more than the %u an address of ours carries; "
			     "choose another network provider",
			     cxlfi_params.net, ep->net->namelen,
			     CXLFI_NET_NAME_MAX);
		cxlfi_net_close(ep->net);
		ep->net = NULL;
		return -FI_ETOOSMALL;
	}
	if ((rc = cxlfi_netrma_open(ep)))
		return rc;
	/* the peers inserted before we were bound or enabled */
	for (fi_addr_t fa = 0; ep->av && fa < ep->av->count; fa++)
		if (ep->av->tab[fa].valid && ep->av->tab[fa].net &&
		    (rc = map_insert(ep, fa)))
			return rc;
	return 0;
}

/* Linger, as the pool path does at close (cxlfi_ep_unpublish): sends
 * still queued for the link (injected ones above all: no completion
 * told the caller they were not out) and sends the link has not
 * completed get up to CXLFI_LINGER_MS to go out. */
static void linger(struct cxlfi_ep *ep)
{
	uint64_t until = cxlfi_now_ms() + CXLFI_LINGER_MS;

	while ((ep->net_txq || ep->net_tx) && cxlfi_now_ms() < until) {
		cxlfi_net_progress(ep->net);
		cxlfi_netpath_flush(ep);
	}
	if (ep->net_txq || ep->net_tx)
		CXLFI_WARN(FI_LOG_EP_CTRL,
			   "endpoint %u closed with %zu sends to network peers "
			   "queued and some not completed after %u ms; they "
			   "are dropped\n",
			   ep->index, ep->net_ntxq, CXLFI_LINGER_MS);
}

void cxlfi_netpath_close(struct cxlfi_ep *ep)
{
	if (!ep->net)
		return;
	linger(ep);
	cxlfi_net_close(ep->net); /* hands back every receive entry */
	ep->net = NULL;
	cxlfi_rx_net_cache_free(ep);
	cxlfi_netrma_close(ep);
	/* sends the link never completed or never took: nothing reports
	 * them now */
	while (ep->net_tx) {
		struct cxlfi_nettx *t = ep->net_tx;

		ep->net_tx = t->next;
		free(t);
	}
	while (ep->net_txq) {
		struct cxlfi_nettx *t = ep->net_txq;

		ep->net_txq = t->next;
		free(t);
	}
	for (struct cxlfi_fl_node *n; (n = cxlfi_fl_take(&ep->nettx_cache));)
		free(CXLFI_FL_OBJ(n, struct cxlfi_nettx, fl));
	ep->net_txq_tail = NULL;
	ep->net_ntxq = 0;
	free(ep->net_map);
	free(ep->net_rma_map);
	ep->net_map = ep->net_rma_map = NULL;
	ep->net_map_n = ep->net_peers = 0;
}

int cxlfi_netpath_av_insert(struct cxlfi_av *av, fi_addr_t fa)
{
	int rc = 0;

	for (size_t i = 0; i < av->neps; i++)
		if (av->eps[i]->net && !rc)
			rc = map_insert(av->eps[i], fa);
	return rc;
}

/* Post send t (queued or not) on the link. An inject within the link's
 * inject size goes through the link's inject calls, not sendmsg with
 * FI_INJECT, which rxm takes on its general path (about twice the
 * instructions per message); it is done once posted, so it is reported
 * here and t is freed (an inject has no completion: the completion flags
 * change nothing). Anything else asks for its completion (the CQ is bound
 * selectively), to count and report it, and is t's context; a larger
 * inject is a send of t's copy, which lives until then (the link reads an
 * inject's buffer in the call only up to its inject size). */
static ssize_t post(struct cxlfi_ep *ep, struct cxlfi_nettx *t)
{
	struct fid_ep *link = ep->net->ep;
	bool tagged = t->tx.flags & FI_TAGGED;
	bool data = t->tx.flags & FI_REMOTE_CQ_DATA;
	ssize_t rc;

	if ((t->tx.flags & FI_INJECT) &&
	    t->tx.len <= ep->net->info->tx_attr->inject_size) {
		if (tagged)
			rc = data ? fi_tinjectdata(link, t->buf, t->tx.len,
						   t->data, t->na, t->tag)
				  : fi_tinject(link, t->buf, t->tx.len, t->na,
					       t->tag);
		else
			rc = data ? fi_injectdata(link, t->buf, t->tx.len,
						  t->data, t->na)
				  : fi_inject(link, t->buf, t->tx.len, t->na);
		if (rc)
			return rc;
		ep->net_hot = CXLFI_NET_HOT_CALLS; /* an answer may follow */
		cxlfi_stats.net_sent++;
		cxlfi_tx_report(ep, &t->tx, 0);
		nettx_put(t);
		return 0;
	}
	struct iovec iov = { (void *)t->buf, t->tx.len };
	void *desc = NULL;
	uint64_t nf =
		FI_COMPLETION |
		(t->tx.flags & (FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE |
				FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE));

	/* outstanding before it is posted: the link may complete it at once */
	t->prev = NULL;
	t->next = ep->net_tx;
	if (ep->net_tx)
		ep->net_tx->prev = t;
	ep->net_tx = t;
	if (tagged) {
		struct fi_msg_tagged m = { &iov,   &desc, 1, t->na,
					   t->tag, 0,	  t, t->data };

		rc = fi_tsendmsg(link, &m, nf);
	} else {
		struct fi_msg m = { &iov, &desc, 1, t->na, t, t->data };

		rc = fi_sendmsg(link, &m, nf);
	}
	if (rc) {
		nettx_unlink(t);
		return rc;
	}
	ep->net_hot = CXLFI_NET_HOT_CALLS; /* an answer may follow */
	return 0;
}

ssize_t cxlfi_netpath_send(struct cxlfi_ep *ep, fi_addr_t dest, const void *buf,
			   size_t len, uint64_t tag, uint64_t data,
			   uint64_t flags, void *context)
{
	fi_addr_t na =
		dest < ep->net_map_n ? ep->net_map[dest] : FI_ADDR_NOTAVAIL;
	bool inject = flags & FI_INJECT;
	struct cxlfi_nettx *t;
	ssize_t rc;

	if (!ep->net || na == FI_ADDR_NOTAVAIL)
		return -FI_EHOSTUNREACH;
	/* an inject's buffer is the caller's again on return: a copy, in
	 * case the send has to wait */
	t = nettx_get(ep, inject ? len : 0);
	if (!t)
		return -FI_ENOMEM;
	t->prev = t->next = NULL;
	t->ep = ep;
	t->na = na;
	t->tag = tag;
	t->data = data;
	t->buf = inject ? memcpy(t->copy, buf, len) : buf;
	t->tx = (struct cxlfi_tx){ .len = len,
				   .flags = flags,
				   .context = context,
				   .kind = CXLFI_TX_MSG };
	/* behind the sends already waiting: one order per endpoint */
	if (ep->net_txq)
		cxlfi_netpath_flush(ep);
	rc = ep->net_txq ? -FI_EAGAIN : post(ep, t);
	if (rc != -FI_EAGAIN) {
		if (rc)
			nettx_put(t);
		return rc;
	}
	if (ep->net_ntxq >= NETTXQ_MAX) {
		nettx_put(t);
		return -FI_EAGAIN;
	}
	t->next = NULL;
	if (ep->net_txq_tail)
		ep->net_txq_tail->next = t;
	else
		ep->net_txq = t;
	ep->net_txq_tail = t;
	ep->net_ntxq++;
	return 0;
}

void cxlfi_netpath_look(struct cxlfi_ep *ep, bool quiet)
{
	/* the RMA endpoint first: a message the link's read finds then
	 * completes without one more socket poll after it */
	cxlfi_stats.net_looks++;
	cxlfi_netrma_progress(ep, quiet);
	cxlfi_net_progress(ep->net);
	if (ep->net_txq)
		cxlfi_netpath_flush(ep);
}

/* A look's cost counts at most this much: a look that was preempted must
 * not keep the link unwatched for long */
#define LOOK_COST_CAP_NS 10000u

/* The quiet link's gap between looks (cxlfi.h): the silence so far
 * makes it longer, the looks' cost never shorter. */
static uint64_t quiet_gap_ns(struct cxlfi_ep *ep, uint64_t now)
{
	uint64_t gap = ep->net_look_cost_ns * CXLFI_NET_QUIET_SHARE, slow;

	if (!ep->net_quiet_since_ns)
		ep->net_quiet_since_ns = now; /* first quiet call since busy */
	slow = (now - ep->net_quiet_since_ns) / CXLFI_NET_QUIET_SLOW;
	if (slow > CXLFI_NET_QUIET_MAX_NS)
		slow = CXLFI_NET_QUIET_MAX_NS;
	return slow > gap ? slow : gap;
}

void cxlfi_netpath_quiet_look(struct cxlfi_ep *ep)
{
	uint64_t t0 = cxl_now_ns(), d;

	if (t0 - ep->net_look_ns < quiet_gap_ns(ep, t0))
		return;
	cxlfi_netpath_look(ep, true);
	cxlfi_stats.net_quiet_looks++;
	ep->net_look_ns = cxl_now_ns();
	d = ep->net_look_ns - t0;
	cxlfi_stats.net_quiet_ns += d;
	d = d < LOOK_COST_CAP_NS ? d : LOOK_COST_CAP_NS;
	/* weight 1/8: one slow look moves it little */
	ep->net_look_cost_ns = (7 * ep->net_look_cost_ns + d) / 8;
}

void cxlfi_netpath_flush(struct cxlfi_ep *ep)
{
	while (ep->net_txq) {
		struct cxlfi_nettx *t = ep->net_txq, *next = t->next;
		ssize_t rc = post(ep, t); /* links t among the outstanding */

		if (rc == -FI_EAGAIN) { /* still the head, in order */
			t->next = next;
			return;
		}
		ep->net_txq = next;
		if (!next)
			ep->net_txq_tail = NULL;
		ep->net_ntxq--;
		if (rc) { /* it was accepted once: it fails as a send */
			cxlfi_tx_report(ep, &t->tx, (int)-rc);
			nettx_put(t);
		}
	}
}
