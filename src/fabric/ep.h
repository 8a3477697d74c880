/* SPDX-License-Identifier: BSD-3-Clause */
/* Endpoints (ep.c): their state, their peers, and what they have posted.
 * Included by cxlfi.h, after the definitions all objects share. */
#ifndef CXLFI_EP_H
#define CXLFI_EP_H

#include "fabric.h"   /* cxlfi_ep_settle reads the domain */
#include "freelist.h" /* the caches of released objects */

/* A receive posted by the application. */
struct cxlfi_rx {
	struct cxlfi_rx *next;
	struct cxlfi_fl_node fl; /* in the endpoint's cache */
	void *buf;
	size_t len;
	fi_addr_t src;	    /* FI_ADDR_UNSPEC: any source */
	uint32_t src_index; /* endpoint index of src, if directed */
	uint64_t tag, ignore;
	uint64_t flags; /* FI_TAGGED or FI_MSG, FI_COMPLETION... */
	void *context;
	/* FI_MULTI_RECV: a buffer that takes message after message */
	struct cxlfi_rx *parent; /* for the slice of one message */
	size_t used;		 /* bytes handed out */
	unsigned inflight;	 /* slices not yet completed */
	bool released;		 /* out of the queue; last slice reports */
	uint8_t kind;		 /* CXLFI_RX_*: what completes it */
};

/* Kinds of receive-side targets (cxlfi_rx.kind) and sends (cxlfi_tx). */
enum {
	CXLFI_RX_MSG = 0,     /* a posted receive */
	CXLFI_RX_WRITE = 1,   /* target of an RMA write (rma.c) */
	CXLFI_RX_READRSP = 2, /* origin buffer of an RMA read (rma.c) */
	CXLFI_RX_SINK = 3,    /* discards a refused write or stray answer */
	CXLFI_RX_ATOMRSP = 4, /* result buffer of an atomic (atomic.c) */
	CXLFI_TX_MSG = 0,     /* fi_send and friends */
	CXLFI_TX_WRITE = 1,   /* fi_write: header carries key and address */
	CXLFI_TX_READREQ = 2, /* fi_read's request (internal, no report) */
	CXLFI_TX_READRSP = 3, /* the target's answer (internal) */
	CXLFI_TX_ATOMREQ = 4, /* an atomic's request (atomic.c; no report) */
	CXLFI_TX_ATOMRSP = 5, /* its answer, sent as a read answer */
};

/* A message that arrived before its receive was posted. */
struct cxlfi_unexp {
	struct cxlfi_unexp *next;
	uint32_t src_index;
	uint64_t tag, data;
	uint32_t op;
	size_t len, have; /* total, bytes received so far */
	size_t cap;	  /* bytes allocated at buf: grows as data arrives */
	uint8_t *buf;
	bool claimed; /* FI_CLAIM'ed by a peek */
	void *claim_ctx;
	bool tagged;
	/* a message the network provider holds for us (recv.c, the
	 * receive queue's owner side): started when matched */
	struct cxlfi_netrx *net;
};

/* A network message's receive entry (fi_peer(3)): what we hand the
 * network provider, and what it hands back. rx: the receive it fills
 * (NULL while unexpected); its CQ entries name this, not the user's
 * context (cq.c translates). */
struct cxlfi_netrx {
	struct fipeer_rx_entry e;
	struct iovec iov;
	void *desc;
	struct cxlfi_ep *ep;
	struct cxlfi_rx *rx;
	struct cxlfi_fl_node fl; /* in the endpoint's cache */
	bool reported;		 /* its completion was written */
};

/* A send waiting for ring space (keeps per-peer order). */
struct cxlfi_tx {
	struct cxlfi_tx *next;
	struct cxlfi_fl_node fl; /* in the endpoint's cache */
	const uint8_t *buf;	 /* user buffer, or copy for inject */
	uint8_t *copy;
	size_t copy_cap; /* bytes copy holds room for */
	size_t len, off; /* bytes already sent */
	uint64_t tag, data;
	uint32_t op;
	uint64_t flags;
	void *context;
	bool started;	   /* first cell sent */
	bool bulk;	   /* later chunks go through the transfer area */
	bool ptr_ok;	   /* buffer lies in the pool: pass its offset */
	bool acked;	   /* FI_DELIVERY_COMPLETE's OP_ACK sent */
	bool slot_done;	   /* delivery complete by the last slot's token */
	int wait_tok;	   /* transfer-area token to wait for, or -1 */
	uint8_t kind;	   /* CXLFI_TX_* */
	uint64_t rma_addr; /* CXLFI_TX_WRITE: target address (tag: key) */
	int rma_err;	   /* CXLFI_TX_READRSP: error reported to the origin */
	uint32_t peer;	   /* destination endpoint index */
};

/* An RMA read waiting for its answer (rma.c). */
struct cxlfi_rdreq {
	struct cxlfi_rdreq *next;
	uint64_t rid;
	uint32_t peer;
	void *buf;
	size_t len;
	uint64_t flags;
	void *context;
	bool atomic; /* an atomic's answer (atomic.c), not a read's */
};

/* A token of our transfer area (bulk.c). */
struct cxlfi_tok {
	uint64_t gen;		 /* of the current or last hand-off */
	uint32_t peer;		 /* endpoint index it was handed to */
	bool busy;		 /* handed out, not yet returned */
	struct cxlfi_tx *waiter; /* send completing on its return */
};

/* Everything one endpoint knows about one peer endpoint index. */
struct cxlfi_peer {
	uint32_t index;
	cxl_ring *tx, *rx;
	struct cxl_obj txobj, rxobj;
	uint64_t rx_seen; /* inbox stamp consumed */
	bool ack_next;	  /* the last message announced an OP_ACK after it */
	unsigned rx_hits; /* drains in a row whose first look found one */
	unsigned stream_need; /* rx_hits that make a stream (0: STREAM_HITS) */
	bool rx_stream;	      /* this drain takes a stream (progress.c) */
	bool lazy_head;	      /* rx publishes its head unfenced (chan.c) */
	struct cxlfi_tx *txq, *txq_tail;
	/* an incoming chunked message in progress */
	struct cxlfi_rx *rx_cur;    /* matched receive, or NULL */
	struct cxlfi_unexp *ux_cur; /* or the unexpected buffer */
	size_t rx_left, rx_off, rx_total;
	uint64_t rx_tag, rx_data;
	uint32_t rx_op;
	struct cxl_obj epobj; /* the peer's "cxlfi.ep.<i>" */
	struct cxl_watch hb;  /* its heartbeat */
	struct cxl_obj bkrx;  /* its transfer area, opened on first use */
	uint32_t xa_slots;    /* our data slots it holds */
	int ack_err;	      /* error of its last RMA write, for its OP_ACK */
	/* its pool region table (mrtab.c), for direct RMA */
	struct cxl_obj mrtab;
	uint64_t mr_ver;	    /* version of the cached copy */
	struct cxlfi_mrc *mr_cache; /* the copy */
	size_t mr_n;
	bool mr_virt;	      /* its RMA addresses are virtual */
	uint32_t rma_pending; /* RMA through the channel, not completed */
	bool dead;
	bool rx_broken; /* its channel to us failed a check: not drained */
	uint32_t gen;	/* incarnation of the peer we deal with (0: none yet) */
	size_t ntx;	/* queued sends */
	struct cxlfi_peer *next_active; /* list of peers with an rx ring */
	struct cxlfi_peer *next_tx;	/* list of peers with queued sends */
	bool in_active, in_txlist;
};

struct cxlfi_ep {
	struct fid_ep fid;
	struct cxlfi_domain *dom;
	struct fi_info *info;
	struct cxlfi_av *av;
	struct fid_eq *eq; /* bound event queue, if any (eq.c) */
	struct cxlfi_cq *tx_cq, *rx_cq;
	uint64_t tx_cq_flags, rx_cq_flags;
	struct cxlfi_cntr *tx_cntr, *rx_cntr;
	struct cxlfi_cntr *rd_cntr, *wr_cntr;	/* FI_READ, FI_WRITE */
	struct cxlfi_cntr *rrd_cntr, *rwr_cntr; /* FI_REMOTE_READ/_WRITE */
	struct cxlfi_rdreq *reads;		/* RMA reads in flight */
	uint64_t rid_next;
	bool enabled;
	uint32_t index;		   /* our endpoint index */
	uint32_t gen;		   /* per-incarnation nonce, in our address */
	struct cxl_obj self;	   /* "cxlfi.ep.<index>" */
	uint64_t *inbox;	   /* max_eps lines of 8 words */
	struct cxlfi_peer **peers; /* by peer index, lazily allocated */
	struct cxlfi_peer *active; /* peers with an rx ring */
	struct cxlfi_rx *trecv, *trecv_tail, *recv, *recv_tail;
	/* released objects kept for reuse (freelist.h): receive
	 * descriptors, the network link's receive entries, and send records
	 * with their inject copies (a stream that outruns its ring then
	 * queues without allocating) */
	struct cxlfi_freelist rx_cache, netrx_cache, tx_cache;
	struct cxlfi_unexp *unexp, *unexp_tail;
	size_t unexp_bytes;
	uint64_t progress_calls; /* inbox scan, peer watch, quiet link */
	uint64_t reported;   /* operations completed (CQ entry or counter) */
	uint32_t inbox_next; /* first inbox line of the next scan step */
	uint64_t tx_op_flags, rx_op_flags;
	bool directed;	 /* FI_DIRECTED_RECV: receives honour their source */
	bool rma_events; /* remote RMA counted: no direct RMA to our regions */
	size_t min_multi_recv;
	struct cxlfi_peer *txpend;	  /* peers with queued sends */
	uint8_t *tx_scratch, *rx_scratch; /* one ring message each */
	size_t cell_payload;		  /* payload of one ring cell */
	size_t eager_payload; /* of one ring message (cells it may span) */
	size_t rx_cap;	      /* rx_scratch: the largest sender's message */
	bool fence_due;	      /* eager cells written back, not fenced yet */
	bool lazy_fence_due;  /* stores that need only become visible
			       * (returned tokens, ring heads): unfenced */
	bool warned_unexp;
	uint64_t watch_ms;     /* last peer liveness check */
	struct cxl_obj xa;     /* our transfer area "cxlfi.bk.<index>" */
	struct cxlfi_tok *tok; /* its tokens (CXLFI_XA_TOKENS) */
	size_t xa_waiting;     /* sends waiting for a token's return */
	uint32_t xa_free;      /* data slots not handed out */
	struct cxl_obj mrtab;  /* our pool region table "cxlfi.mr.<i>" */
	uint64_t mrtab_ver;
	struct cxl_obj svc; /* "cxlfi.svc.<hash>" if we serve a name */
	char svc_name[64];
	struct cxlfi_ep *dom_next; /* in dom->eps */
	/* the network link (netpath.c, docs/multipool.md) */
	struct cxlfi_net *net;
	fi_addr_t *net_map; /* AV fi_addr -> the link's, FI_ADDR_NOTAVAIL */
	size_t net_map_n;
	size_t net_peers;     /* network peers inserted: poll the link */
	unsigned net_hot;     /* progress calls left that look at the link */
	size_t net_rx_posted; /* posted receives a network peer may match */
	uint64_t net_look_ns; /* when the last look at the link ended */
	uint64_t net_look_cost_ns;   /* a look's cost, running average */
	uint64_t net_quiet_since_ns; /* when the link fell quiet; 0: busy */
	struct fipeer_srx srx; /* our receive queue, as the link sees it */
	struct fipeer_srx_owner_ops srx_ops;
	struct cxlfi_nettx *net_tx; /* sends on the link not completed */
	/* sends the link could not take yet (-FI_EAGAIN), in order */
	struct cxlfi_nettx *net_txq, *net_txq_tail;
	size_t net_ntxq;
	struct cxlfi_freelist nettx_cache; /* send records kept for reuse */
	struct netrma *net_rma;		   /* RMA over the link (netrma.c) */
	fi_addr_t *net_rma_map;		   /* AV fi_addr -> the RMA AV's */
};

/*
 * The fence owed for eager cells sent without one (cxlfi_xfer_push). Each
 * of their lines carries its own stamp, so no order among them or with
 * later stores matters to a reader; the fence only bounds when they have
 * reached the pool. It is paid once per batch: at the next progress call
 * or CQ read, before any completion of theirs is reported. The same fence
 * covers lazy_fence_due's stores (returned tokens, ring heads). These
 * flags are per endpoint, fences per thread: where several threads share
 * an endpoint, another thread's fence leaves this thread's stores to the
 * processor's own drain, which makes them only later.
 */
static inline void cxlfi_ep_settle(struct cxlfi_ep *ep)
{
	if (ep->fence_due) {
		ep->fence_due = false;
		ep->lazy_fence_due = false; /* the same fence */
		cxl_wfence(ep->dom->pool);
	}
}

/* cxlfi_ep_settle, and the fence for lazy_fence_due's stores too if no
 * fence has covered them since (a progress call's start, closing) */
static inline void cxlfi_ep_settle_all(struct cxlfi_ep *ep)
{
	ep->fence_due |= ep->lazy_fence_due;
	cxlfi_ep_settle(ep);
}

/* ep.c */
int cxlfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context);
extern struct fi_ops_msg cxlfi_msg_ops;
extern struct fi_ops_tagged cxlfi_tagged_ops;

#endif
