/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libfabric provider "cxl": RDM endpoints over a CXL shared-memory pool.
 *
 * Objects: fabric -> domain -> {av, cq, cntr, mr, ep}. One process-wide
 * pool attachment (libcxlshm) is shared by all of them.
 *
 * Endpoints and channels (docs/fabric.md):
 *  - an endpoint publishes itself as the arena object "cxlfi.ep.<i>"; its
 *    index i and a per-incarnation nonce (its generation) form its
 *    address, together with the pool uuid;
 *  - the object holds the endpoint's inbox: one 64-byte line per possible
 *    sender index, written only by that sender;
 *  - the first send from A to B creates the ring object
 *    "cxlfi.ch.<A>.<B>" (A produces, B consumes) and announces it in B's
 *    inbox line A. Channels exist only between peers that talk, so pool
 *    memory grows with the pairs in use, not with N^2 x cells;
 *  - progress polls only the channels that exist, and scans the next
 *    CXLFI_INBOX_CHUNK inbox lines every FI_CXL_INBOX_POLL calls.
 */
#ifndef CXLFI_H
#define CXLFI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "cxlshm/cxlshm.h"

#define CXLFI_NAME "cxl"
#define CXLFI_PROV_VERSION FI_VERSION(0, 1)
#define CXLFI_ADDR_MAGIC 0x41445843u /* "CXDA" */
#define CXLFI_EP_MAGIC 0x50454946584c4343ull
#define CXLFI_TAG_FORMAT 0xaaaaaaaaaaaaaaaaull /* 64 tag bits, incl. 63 */
#define CXLFI_CQ_DATA_SIZE 8
#define CXLFI_MAX_MSG (1ull << 40)
#define CXLFI_INJECT_MAX (64u << 10) /* FI_CXL_INJECT_SIZE upper bound */
/* RMA reads and atomics up to this size are ordered before later writes
 * (their answer takes its data when the request is executed) */
#define CXLFI_ORDER_WAR_MAX 4096u

extern struct fi_provider cxlfi_prov;

#define CXLFI_WARN(subsys, ...) FI_WARN(&cxlfi_prov, subsys, __VA_ARGS__)
/* attr.c: what the provider offers, as templates fi_getinfo copies */
/* Capabilities offered */
#define CXLFI_CAPS                                                             \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV |           \
	 FI_SOURCE | FI_MULTI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_RMA | \
	 FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |   \
	 FI_RMA_EVENT)
/* The transmit and receive halves of them (fi_getinfo(3), "Capabilities") */
#define CXLFI_TX_CAPS \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE)
#define CXLFI_RX_CAPS                                                         \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV |     \
	 FI_RMA_EVENT)
/* Per peer, in posting order: sends among themselves, and RMA and
 * atomics among themselves (a write after a read only up to
 * CXLFI_ORDER_WAR_MAX bytes: a larger read's answer may take its data
 * after a later write was applied), and not across sends and RMA (direct
 * RMA does not wait for sends still in the channel). docs/fabric.md,
 * "RMA". */
#define CXLFI_MSG_ORDER                                              \
	(FI_ORDER_SAS | FI_ORDER_WAW | FI_ORDER_RAR | FI_ORDER_RAW | \
	 FI_ORDER_WAR | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW |        \
	 FI_ORDER_RMA_WAR | FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR | \
	 FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)

extern const struct fi_tx_attr cxlfi_tx_attr;
extern const struct fi_rx_attr cxlfi_rx_attr;
extern const struct fi_ep_attr cxlfi_ep_attr;
extern const struct fi_domain_attr cxlfi_domain_attr;
extern const struct fi_fabric_attr cxlfi_fabric_attr;

/* report.c: on stderr at any log level (a cause the user must see) */
void cxlfi_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Before a refusal that ends the job: give a report time to be read. */
void cxlfi_report_linger(void);
/* An object could not be created in the pool (rc: a CXL_E* code): said
 * on stderr once per cause; returns -FI_ENOSPC for a full heap or object
 * table, else -FI_EIO. */
int cxlfi_pool_failure(int rc, const char *what, const char *name);
#define CXLFI_INFO(subsys, ...) FI_INFO(&cxlfi_prov, subsys, __VA_ARGS__)

/* FI_CXL_* parameters (fi_cxl(7)), read once at fi_prov_ini/getinfo. */
struct cxlfi_params {
	size_t max_eps;	    /* FI_CXL_MAX_EPS: endpoint indices per pool */
	size_t cell_size;   /* FI_CXL_CELL_SIZE: ring cell bytes */
	size_t ncells;	    /* FI_CXL_CELLS: cells per channel */
	size_t inbox_poll;  /* FI_CXL_INBOX_POLL: progress calls per scan */
	size_t unexp_limit; /* FI_CXL_UNEXP_LIMIT: unexpected bytes */
	int stats;	    /* FI_CXL_STATS: print counts at fabric close */
	size_t inject_size; /* FI_CXL_INJECT_SIZE: largest fi_inject */
	size_t bulk_min;    /* FI_CXL_BULK_MIN: bulk area from this size */
	size_t eager_max;   /* FI_CXL_EAGER_MAX: one ring message up to */
	size_t idle_polls;  /* FI_CXL_IDLE_POLLS: empty reads before sleeping */
	size_t idle_sleep_us;  /* FI_CXL_IDLE_SLEEP_US: longest idle sleep */
	size_t read_spin_ns;   /* FI_CXL_READ_SPIN_NS: empty-read poll time */
	size_t hang_report_ms; /* FI_CXL_HANG_REPORT_MS: report a long wait */
};

/* Endpoint object header line, words (written by its owner only). */
enum {
	CXLFI_HDR_MAGIC = 0,
	CXLFI_HDR_HOST = 1,
	CXLFI_HDR_PID = 2,
	CXLFI_HDR_MAXEPS = 3,
	CXLFI_HDR_GEN = 4,
	CXLFI_HDR_BEAT = 5, /* heartbeat (include/cxlshm/liveness.h) */
};
/* The beat of an endpoint that closed normally (never a heartbeat). */
#define CXLFI_BEAT_CLOSED UINT64_MAX
#define CXLFI_INBOX_CHUNK 16u /* inbox lines per scan step */
/* Empty CQ reads closer together than this are one caller's wait loop. */
#define CXLFI_WAIT_LOOP_GAP_NS 5000u
/* A wait loop spins in its first millisecond only. */
#define CXLFI_SPIN_WINDOW_NS 1000000u
/* Spin credit: the most, what a wait that a spin ends earns, and how
 * often a CQ without credit spins anyway to see whether it pays again. */
#define CXLFI_SPIN_CREDIT_MAX 16
#define CXLFI_SPIN_REWARD 4
#define CXLFI_SPIN_PROBE 32u
/* A spin in the coherent mode reads the clock once per this many polls. */
#define CXLFI_SPIN_CLOCK_STRIDE 8u
#define CXLFI_LINGER_MS 2000u /* fi_close: time for queued sends */
/* fi_av_insert of a service address: how long its server may take to
 * publish it */
#define CXLFI_RESOLVE_WAIT_MS 3000u
#define CXLFI_WATCH_MS 250
#define CXLFI_RX_CACHE 64u /* receive descriptors an endpoint keeps */

/* Process-wide message counts (under the domain lock of the ep). */
struct cxlfi_stats {
	uint64_t sent, recv, bytes;
	uint64_t direct_rma; /* RMA operations done directly in the pool */
	uint64_t atomics;    /* atomics executed here, as the target */
	uint64_t read_spins; /* empty CQ reads that kept polling (read_spin) */
	uint64_t spin_hits;  /* ... and found a completion while they did */
	uint64_t ring_msgs;  /* ring cells taken by progress (any op) */
};
extern struct cxlfi_stats cxlfi_stats;
/* Print them with the coherence operations since the fabric opened. */
void cxlfi_stats_report(const struct cxl_coh_counters *since);
extern struct cxlfi_params cxlfi_params;

/* An endpoint object: its header line, one inbox line per index, then
 * the verdicts: one word per index, the incarnation (gen) of that peer
 * which this endpoint declared dead (0: none). Only the owner writes
 * them; a peer that finds its own gen there was stalled past the
 * timeout and stops using this endpoint (heartbeat.c). */
#define CXLFI_EP_HDR_LINES 1u
static inline size_t cxlfi_ep_verdict_off(void)
{
	return (CXLFI_EP_HDR_LINES + cxlfi_params.max_eps) * CXL_LINE;
}
static inline size_t cxlfi_ep_obj_size(void)
{
	size_t words = cxlfi_params.max_eps * sizeof(uint64_t);

	return cxlfi_ep_verdict_off() +
	       (words + CXL_LINE - 1) / CXL_LINE * CXL_LINE;
}
static inline uint64_t *cxlfi_ep_verdicts(void *obj)
{
	return (uint64_t *)((uint8_t *)obj + cxlfi_ep_verdict_off());
}

/* The address of an endpoint, as fi_getname returns it. */
struct cxlfi_addr {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved; /* 0, or CXLFI_ADDR_ANY / CXLFI_ADDR_NAMED */
	uint8_t pool_uuid[16];
	uint32_t host;
	uint32_t index; /* endpoint index in the pool */
	uint32_t gen;	/* nonce of this incarnation of the endpoint */
	uint32_t pad;
};
/* Addresses fi_getinfo hands out before an endpoint exists (addr.c):
 * ANY, this host with no endpoint yet; NAMED, the endpoint that serves a
 * service name, whose 64-bit hash is in gen (low) and pad (high). */
#define CXLFI_ADDR_ANY 0x1u
#define CXLFI_ADDR_NAMED 0x2u
#define CXLFI_INDEX_NONE UINT32_MAX

/* addr.c */
void cxlfi_addr_local(cxl_pool *pool, struct cxlfi_addr *a);
void cxlfi_addr_named(cxl_pool *pool, const char *name, struct cxlfi_addr *a);
/* Is addr (len bytes) a cxl address of this pool, of any kind? */
bool cxlfi_addr_is_ours(cxl_pool *pool, const void *addr, size_t len);
/* A NAMED address to the endpoint that serves it now (0), or
 * -FI_EADDRNOTAVAIL; an endpoint address is copied as it is. */
int cxlfi_addr_resolve(cxl_pool *pool, const struct cxlfi_addr *in,
		       struct cxlfi_addr *out, bool quiet);
/* Is incarnation gen the endpoint published at index now? */
bool cxlfi_ep_current(cxl_pool *pool, uint64_t index, uint64_t gen);

/* Process-wide pool attachment, shared by every fabric. */
int cxlfi_pool_get(cxl_pool **pool);
void cxlfi_pool_put(void);
/* Checked at getinfo: is a pool configured and can it be opened? */
int cxlfi_pool_probe(void);

struct cxlfi_fabric {
	struct fid_fabric fid;
	cxl_pool *pool;
	int refs;
	struct cxl_coh_counters coh0; /* at open, for FI_CXL_STATS */
};

struct cxlfi_domain {
	struct fid_domain fid;
	struct cxlfi_fabric *fabric;
	cxl_pool *pool;
	pthread_mutex_t lock; /* serialises everything below (THREAD_SAFE) */
	bool locking; /* false under FI_THREAD_DOMAIN: the caller serialises */
	struct fi_info *info;
	uint64_t mr_key_next;
	struct cxlfi_mr *mrs; /* registered regions (rma.c looks keys up) */
	unsigned mr_counted;  /* regions with a counter bound (fi_mr_bind) */
	struct cxlfi_ep *eps; /* enabled endpoints (they publish pool MRs) */
	bool mr_virt;	      /* FI_MR_VIRT_ADDR: RMA addresses are VAs */
	bool mr_prov_key;     /* FI_MR_PROV_KEY: we choose the keys */
	int refs;
};

/*
 * The domain lock. Under FI_THREAD_DOMAIN the application serialises all
 * calls on the objects of a domain itself (fi_domain(3)); MPICH and Open
 * MPI ask for it. Then nothing else in the process touches the domain's
 * state (the heartbeat thread has its own lock and writes only pool
 * words), and the lock is not taken.
 */
static inline void cxlfi_dom_lock(struct cxlfi_domain *d)
{
	if (d->locking)
		pthread_mutex_lock(&d->lock);
}

static inline void cxlfi_dom_unlock(struct cxlfi_domain *d)
{
	if (d->locking)
		pthread_mutex_unlock(&d->lock);
}

/* An object of the domain opens (+1) or closes (-1). */
static inline void cxlfi_dom_ref(struct cxlfi_domain *d, int delta)
{
	cxlfi_dom_lock(d);
	d->refs += delta;
	cxlfi_dom_unlock(d);
}

/*
 * Closes an object of domain d whose bound-reference count is *refs:
 * -FI_EBUSY while something is bound to it, else drops its reference on
 * the domain. Both counts change under the domain lock, as binds do.
 */
static inline int cxlfi_dom_close_child(struct cxlfi_domain *d, const int *refs)
{
	int rc = 0;

	cxlfi_dom_lock(d);
	if (*refs)
		rc = -FI_EBUSY;
	else
		d->refs--;
	cxlfi_dom_unlock(d);
	return rc;
}

struct cxlfi_av_entry {
	struct cxlfi_addr addr;
	bool valid;
};

struct cxlfi_av {
	struct fid_av fid;
	struct cxlfi_domain *dom;
	enum fi_av_type type;
	bool events;	   /* FI_EVENT: inserts report to the bound EQ */
	struct fid_eq *eq; /* bound event queue */
	struct cxlfi_av_entry *tab;
	size_t count, cap;
	int refs;
};

/* CQ entry kept in the tagged format (a superset of the others). */
struct cxlfi_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
};

struct cxlfi_cqerr {
	struct fi_cq_err_entry e;
	struct cxlfi_cqerr *next;
};

/* Read spin of one CQ (cq.c). A "wait" runs from the first empty read
 * after a completion to the next completion. */
struct cxlfi_spin {
	uint64_t empty_ns; /* when the last empty read ended */
	uint64_t wait_ns;  /* when the current wait began (0: none) */
	int credit;	   /* losing waits it can still afford to spin in */
	uint32_t waits;	   /* waits begun without credit (probe count) */
	bool probe;	   /* this wait spins to test whether spinning pays */
	bool spun, hit;	   /* this wait spun; a spin found its completion */
};

struct cxlfi_cq {
	struct fid_cq fid;
	struct cxlfi_domain *dom;
	enum fi_cq_format format;
	struct cxlfi_cqe *ring;
	size_t cap, head, count;
	struct cxlfi_cqerr *err_head, *err_tail;
	struct cxlfi_ep **eps; /* bound endpoints, progressed on read */
	size_t neps;
	int refs;
	uint64_t empty_reads;	/* consecutive reads that found nothing */
	uint32_t idle_us;	/* current idle sleep */
	struct cxlfi_spin spin; /* read spin state (cq.c) */
	atomic_bool signaled;	/* fi_cq_signal: end one fi_cq_sread */
	uint32_t hang_polls;	/* empty reads since the clock was read */
	uint64_t wait_since_ms; /* first empty read of this wait (0: none) */
	uint64_t hang_said_ms;	/* last report of this wait (diag.c) */
};

struct cxlfi_cntr {
	struct fid_cntr fid;
	struct cxlfi_domain *dom;
	uint64_t value, err;
	bool mr_bound; /* bound to a memory region (fi_mr_bind) */
	struct cxlfi_ep **eps;
	size_t neps;
	int refs;
};

struct cxlfi_mr {
	struct fid_mr fid;
	struct cxlfi_domain *dom;
	const void *buf;
	size_t len;
	uint64_t access;
	struct cxlfi_mr *next; /* the domain's regions, for RMA key lookup */
	bool in_pool;	       /* lies in the pool: reachable directly */
	uint64_t pool_off;     /* its pool offset then */
	/* counters bound with fi_mr_bind: each remote write or read of the
	 * region counts (so it is never published for direct RMA) */
	struct cxlfi_cntr *rwr_cntr, *rrd_cntr;
};

/* An origin's copy of one entry of a peer's pool region table. */
struct cxlfi_mrc {
	uint64_t key, off, len, access, base;
};

/* A receive posted by the application. */
struct cxlfi_rx {
	struct cxlfi_rx *next;
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
};

/* A send waiting for ring space (keeps per-peer order). */
struct cxlfi_tx {
	struct cxlfi_tx *next;
	const uint8_t *buf; /* user buffer, or copy for inject */
	uint8_t *copy;
	size_t len, off; /* bytes already sent */
	uint64_t tag, data;
	uint32_t op;
	uint64_t flags;
	void *context;
	bool started;	   /* first cell sent */
	bool bulk;	   /* later chunks go through the transfer area */
	bool ptr_ok;	   /* buffer lies in the pool: pass its offset */
	bool acked;	   /* FI_DELIVERY_COMPLETE's OP_ACK sent */
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
	/* completed receive descriptors kept for the next posts (at most
	 * CXLFI_RX_CACHE): a post then needs no malloc and no free */
	struct cxlfi_rx *rx_cache;
	unsigned rx_cached;
	struct cxlfi_unexp *unexp, *unexp_tail;
	size_t unexp_bytes;
	uint64_t progress_calls;
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
	bool warned_unexp;
	uint64_t watch_ms;     /* last peer liveness check */
	struct cxl_obj xa;     /* our transfer area "cxlfi.bk.<index>" */
	struct cxlfi_tok *tok; /* its tokens (CXLFI_XA_TOKENS) */
	size_t xa_waiting;     /* sends waiting for a token's return */
	struct cxl_obj mrtab;  /* our pool region table "cxlfi.mr.<i>" */
	uint64_t mrtab_ver;
	struct cxl_obj svc; /* "cxlfi.svc.<hash>" if we serve a name */
	char svc_name[64];
	struct cxlfi_ep *dom_next; /* in dom->eps */
};

/*
 * The fence owed for eager cells sent without one (cxlfi_xfer_push). Each
 * of their lines carries its own stamp, so no order among them or with
 * later stores matters to a reader; the fence only bounds when they have
 * reached the pool. It is paid once per batch: at the next progress call
 * or CQ read, before any completion of theirs is reported.
 */
static inline void cxlfi_ep_settle(struct cxlfi_ep *ep)
{
	if (ep->fence_due) {
		ep->fence_due = false;
		cxl_wfence(ep->dom->pool);
	}
}

/* fabric.c: the fabric and its domains */
int cxlfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context);
int cxlfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **dom, void *context);

/* eq.c: event queues (application events only; nothing raises one) */
int cxlfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq, void *context);
/* A bound endpoint or AV takes (+1) or drops (-1) a reference. */
void cxlfi_eq_ref(struct fid_eq *eq, int delta);
/* Queue an event (buf: e.g. a struct fi_eq_entry) or, with err, an error
 * entry (buf: a struct fi_eq_err_entry). 0 or -FI_*. */
int cxlfi_eq_report(struct fid_eq *eq, uint32_t event, const void *buf,
		    size_t len, bool err);

/* av.c */
int cxlfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av, void *context);
/* Entry for fi_addr, or NULL (logged) if invalid. */
const struct cxlfi_av_entry *cxlfi_av_get(struct cxlfi_av *av, fi_addr_t a);
/* fi_addr of the peer with that endpoint index, or FI_ADDR_NOTAVAIL. */
fi_addr_t cxlfi_av_reverse(struct cxlfi_av *av, uint32_t index);

/* cq.c: completion queues, and the endpoint lists of CQs and counters */
int cxlfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq, void *context);
int cxlfi_cq_push(struct cxlfi_cq *cq, void *ctx, uint64_t flags, size_t len,
		  void *buf, uint64_t data, uint64_t tag, fi_addr_t src);
int cxlfi_cq_push_err(struct cxlfi_cq *cq, void *ctx, uint64_t flags,
		      size_t len, void *buf, uint64_t data, uint64_t tag,
		      size_t olen, int err);
int cxlfi_cq_attach_ep(struct cxlfi_cq *cq, struct cxlfi_ep *ep);
void cxlfi_cq_detach_ep(struct cxlfi_cq *cq, struct cxlfi_ep *ep);
/* For poll sets: progress, then does the CQ hold an entry or an error? */
bool cxlfi_cq_ready(struct cxlfi_cq *cq);
/* A CQ's or counter's bound endpoints: add once, remove, progress all. */
int cxlfi_eps_add(struct cxlfi_ep ***eps, size_t *n, struct cxlfi_ep *ep);
void cxlfi_eps_del(struct cxlfi_ep **eps, size_t *n, struct cxlfi_ep *ep);
void cxlfi_eps_progress(struct cxlfi_ep **eps, size_t n);

/* cntr.c: counters */
int cxlfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr, void *context);
int cxlfi_cntr_attach_ep(struct cxlfi_cntr *c, struct cxlfi_ep *ep);
void cxlfi_cntr_detach_ep(struct cxlfi_cntr *c, struct cxlfi_ep *ep);
void cxlfi_cntr_inc(struct cxlfi_cntr *c, bool err);
/* For poll sets: progress, then value + errors. */
uint64_t cxlfi_cntr_events(struct cxlfi_cntr *c);

/* poll.c */
int cxlfi_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		    struct fid_poll **pollset);

/* mr.c */
int cxlfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr, void *context);
int cxlfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context);
int cxlfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr);

/* ep.c */
int cxlfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context);
extern struct fi_ops_msg cxlfi_msg_ops;
extern struct fi_ops_tagged cxlfi_tagged_ops;

/* The protocol (domain lock held; its layers: proto.h).
 * chan.c: endpoint publication, channels and peers */
int cxlfi_ep_publish(struct cxlfi_ep *ep);
/* The largest header of an eager message: tag, RMA address, CQ data. */
#define CXLFI_EAGER_HDR_MAX 24u
/* Cells of FI_CXL_CELL_SIZE that one eager message of FI_CXL_EAGER_MAX
 * bytes and the largest header takes. */
size_t cxlfi_chan_span(void);
ssize_t cxlfi_send(struct cxlfi_ep *ep, const void *buf, size_t len,
		   fi_addr_t dest, uint64_t tag, uint64_t data, uint64_t flags,
		   void *context);
/* recv.c: receives and matching */
ssize_t cxlfi_recv(struct cxlfi_ep *ep, void *buf, size_t len, fi_addr_t src,
		   uint64_t tag, uint64_t ignore, uint64_t flags,
		   void *context);
ssize_t cxlfi_cancel(struct cxlfi_ep *ep, void *context);
/* Fail everything pending with a peer found dead. */
void cxlfi_peer_dead(struct cxlfi_ep *ep, struct cxlfi_peer *pe);
/* Peer pe's channel to us is corrupt: what it would deliver fails. */
void cxlfi_rx_broken(struct cxlfi_ep *ep, struct cxlfi_peer *pe);
/* progress.c: progress, and closing an endpoint */
void cxlfi_progress(struct cxlfi_ep *ep);
void cxlfi_ep_unpublish(struct cxlfi_ep *ep);

/*
 * Upcalls: the few calls that run up against the layering (proto.h),
 * through this table instead of a call cycle. ep.c sets it once, when the
 * first endpoint opens; nothing calls through it before (a CQ or the
 * heartbeat progresses only endpoints that exist).
 */
struct cxlfi_upcalls {
	/* progress.c, for cq.c (a read progresses) and send.c/recv.c */
	void (*progress)(struct cxlfi_ep *ep);
	/* recv.c, for heartbeat.c (a peer found dead) */
	void (*peer_dead)(struct cxlfi_ep *ep, struct cxlfi_peer *pe);
	/* recv.c, for progress.c (a channel failed its checks) */
	void (*rx_broken)(struct cxlfi_ep *ep, struct cxlfi_peer *pe);
	/* rma.c and atomic.c, for what arrives on a channel (recv.c) and
	 * the peers that go away (send.c, chan.c); as declared below */
	struct cxlfi_rx *(*rma_write_target)(struct cxlfi_ep *ep, uint64_t key,
					     uint64_t addr, size_t len,
					     int *err);
	void (*rma_read_request)(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
				 const uint8_t *m, size_t n);
	struct cxlfi_rx *(*rma_read_answer)(struct cxlfi_ep *ep,
					    struct cxlfi_peer *pe, uint64_t rid,
					    size_t len, int err);
	void (*atomic_request)(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			       const uint8_t *m, size_t n);
	void (*rma_complete_rx)(struct cxlfi_ep *ep, struct cxlfi_rx *r,
				size_t total, uint64_t data, bool has_data);
	void (*rma_fail_rx)(struct cxlfi_ep *ep, struct cxlfi_rx *r, int err);
	void (*rma_peer_dead)(struct cxlfi_ep *ep, struct cxlfi_peer *pe);
};
extern struct cxlfi_upcalls cxlfi_up; /* upcall.c */

/* bulk.c: the transfer area (large messages, pointer passing, acks) */
/* messages of cxlfi_params.bulk_min bytes or more use it */
#define CXLFI_OP_BULK 4u /* ring op: a chunk in a data slot */
#define CXLFI_OP_PTR 5u	 /* ring op: the rest of the message in the pool */
#define CXLFI_OP_ACK 6u	 /* ring op: return a token (delivery complete) */
#define CXLFI_XA_TOKENS 128u
#define CXLFI_XA_SLOT_SIZE (64u << 10) /* largest chunk of one OP_BULK */
/* Length an OP_PTR descriptor covers if its range lies in the pool, else
 * 0 (checked before the receiver makes room for it). */
size_t cxlfi_ptr_len(struct cxlfi_ep *ep, const uint8_t *desc, size_t n);
/* Each push: 1 done, 0 no ring cell or token yet (retry), < 0 error. */
int cxlfi_bulk_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    struct cxlfi_tx *t);
int cxlfi_ptr_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		   struct cxlfi_tx *t);
int cxlfi_ack_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		   struct cxlfi_tx *t);
/* Create our transfer area now if it does not exist (0 or -FI_*). */
int cxlfi_xa_prepare(struct cxlfi_ep *ep);
/* Does [buf, buf+len) lie in the pool mapping (pointer passing)? */
bool cxlfi_ptr_usable(struct cxlfi_ep *ep, const void *buf, size_t len);
/* Descriptors received: copy to dst (up to cap; NULL drops), return the
 * token. The length the descriptor covers, or 0 if it is invalid. */
size_t cxlfi_bulk_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		       const uint8_t *desc, size_t n, uint8_t *dst, size_t cap);
size_t cxlfi_ptr_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		      const uint8_t *desc, size_t n, size_t want, uint8_t *dst,
		      size_t cap);
void cxlfi_ack_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    const uint8_t *desc, size_t n);
/* Sender: complete the sends whose tokens came back / whose peer died. */
void cxlfi_xa_poll(struct cxlfi_ep *ep,
		   void (*done)(struct cxlfi_ep *, struct cxlfi_tx *, int));
void cxlfi_xa_peer_dead(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			void (*done)(struct cxlfi_ep *, struct cxlfi_tx *,
				     int));
void cxlfi_xa_destroy(struct cxlfi_ep *ep);
/* data slots handed to live receivers and not returned yet */
unsigned cxlfi_xa_in_flight(struct cxlfi_ep *ep);
void cxlfi_bulk_close(struct cxlfi_ep *ep, struct cxlfi_peer *pe);

/* chan.c and send.c, for rma.c and atomic.c */
struct cxlfi_peer *cxlfi_get_peer(struct cxlfi_ep *ep, uint32_t idx);
/* Post t (copied) to pe: as cxlfi_send after the address is resolved.
 * From progress (in_progress) it never progresses itself. */
ssize_t cxlfi_post(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		   const struct cxlfi_tx *t, bool in_progress);
/* Resolve dest to a connected peer. */
int cxlfi_peer_for(struct cxlfi_ep *ep, fi_addr_t dest,
		   struct cxlfi_peer **out);
/* A channel back to a peer that has sent to us (for read answers). */
int cxlfi_connect_back(struct cxlfi_ep *ep, struct cxlfi_peer *pe);

/* fi_inject*() never report a completion; FI_INJECT given to fi_sendmsg
 * only allows reusing the buffer at once, and completes as usual. */
#define CXLFI_INJECT_OP (1ull << 63)
/* ops.c: the flags a transmit operation runs with (FI_COMPLETION set when
 * it reports; INJECT_OP-marked operations never do). */
uint64_t cxlfi_tx_flags(struct cxlfi_ep *ep, uint64_t flags);

/* rma.c: FI_RMA executed by the target's progress */
extern struct fi_ops_rma cxlfi_rma_ops;
/* The target's answer to a read or an atomic (kind CXLFI_TX_READRSP or
 * CXLFI_TX_ATOMRSP, tag rid): len bytes of buf, copied now if copy, or
 * err. From progress; rma.c */
void cxlfi_rma_answer(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint8_t kind,
		      uint64_t rid, const void *buf, size_t len, bool copy,
		      int err);
/* The peer of an RMA or atomic to dest on an enabled endpoint. */
int cxlfi_rma_peer(struct cxlfi_ep *ep, fi_addr_t dest, struct cxlfi_peer **pe);
struct cxlfi_rdreq *cxlfi_rdreq_new(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
				    void *buf, size_t len, uint64_t flags,
				    void *ctx, bool atomic);
ssize_t cxlfi_rdreq_post(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			 struct cxlfi_rdreq *q, uint8_t kind, const void *msg,
			 size_t n);
/* atomic.c */
extern struct fi_ops_atomic cxlfi_atomic_ops;
void cxlfi_atomic_request(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			  const uint8_t *m, size_t n);
int cxlfi_query_atomic(struct fid_domain *domain, enum fi_datatype dt,
		       enum fi_op op, struct fi_atomic_attr *attr,
		       uint64_t flags);
/* An arriving write: the target buffer as a receive (NULL: *err set). */
struct cxlfi_rx *cxlfi_rma_write_target(struct cxlfi_ep *ep, uint64_t key,
					uint64_t addr, size_t len, int *err);
/* An arriving read request: answer it. */
void cxlfi_rma_read_request(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			    const uint8_t *m, size_t n);
/* An arriving read answer: the origin buffer as a receive, or NULL. */
struct cxlfi_rx *cxlfi_rma_read_answer(struct cxlfi_ep *ep,
				       struct cxlfi_peer *pe, uint64_t rid,
				       size_t len, int err);
/* Completion of an RMA target or origin receive (kind != CXLFI_RX_MSG). */
void cxlfi_rma_complete_rx(struct cxlfi_ep *ep, struct cxlfi_rx *r,
			   size_t total, uint64_t data, bool has_data);
/* An RMA receive that will not finish (its sender died, or broke). */
void cxlfi_rma_fail_rx(struct cxlfi_ep *ep, struct cxlfi_rx *r, int err);
/* Fail the reads waiting for a dead peer (all, if pe is NULL: close). */
void cxlfi_rma_peer_dead(struct cxlfi_ep *ep, struct cxlfi_peer *pe);
/* The region registered under key covering [addr, addr+len), or NULL. */
void *cxlfi_mr_target(struct cxlfi_domain *d, uint64_t key, uint64_t addr,
		      size_t len, uint64_t access, int *err);
/* A remote access (FI_REMOTE_WRITE or FI_REMOTE_READ) to region key was
 * applied: count it on the region's bound counter, if any. */
void cxlfi_mr_count(struct cxlfi_domain *d, uint64_t key, uint64_t access);

/* mrtab.c: pool region tables (direct RMA) */
int cxlfi_mrtab_create(struct cxlfi_ep *ep);
void cxlfi_mrtab_destroy(struct cxlfi_ep *ep);
/* Republish the domain's pool regions (after a registration change). */
void cxlfi_mrtab_sync(struct cxlfi_ep *ep);
/* The pool address of [addr, addr+len) of the peer's region key, if it
 * is a pool region we may access that way; else NULL (use the channel). */
void *cxlfi_mrtab_target(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			 uint64_t key, uint64_t addr, size_t len,
			 uint64_t access);
void cxlfi_mrtab_close(struct cxlfi_peer *pe);

/* addr.c: the service name of an endpoint opened with a NAMED source
 * address, claimed once it is published (0, -FI_EADDRINUSE, ...) */
int cxlfi_svc_claim(struct cxlfi_ep *ep, const struct cxlfi_addr *a);
void cxlfi_svc_release(struct cxlfi_ep *ep);

/* diag.c: what an endpoint waits for (FI_CXL_HANG_REPORT_MS) */
bool cxlfi_diag_busy(const struct cxlfi_ep *ep);
/* waited_ms UINT64_MAX: the endpoint is being closed */
void cxlfi_diag_pending(const struct cxlfi_ep *ep, uint64_t waited_ms);

/* heartbeat.c */
int cxlfi_heartbeat_add(struct cxlfi_ep *ep);
void cxlfi_heartbeat_remove(struct cxlfi_ep *ep);
void cxlfi_watch_start(struct cxlfi_ep *ep, struct cxlfi_peer *pe);
void cxlfi_watch_peers(struct cxlfi_ep *ep);

/* enosys.c: entries for operations the provider does not offer */
int cxlfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int cxlfi_no_control(struct fid *fid, int command, void *arg);
int cxlfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context);
int cxlfi_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_pep **pep, void *context);
int cxlfi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		       struct fid_wait **waitset);
int cxlfi_no_trywait(struct fid_fabric *fabric, struct fid **fids, int count);
int cxlfi_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **sep, void *context);
int cxlfi_no_stx(struct fid_domain *domain, struct fi_tx_attr *attr,
		 struct fid_stx **stx, void *context);
int cxlfi_no_srx(struct fid_domain *domain, struct fi_rx_attr *attr,
		 struct fid_ep **rx_ep, void *context);
int cxlfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		    struct fid_ep **tx_ep, void *context);
int cxlfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context);

/* util */
static inline uint64_t cxlfi_now_ms(void)
{
	return cxl_now_ns() / 1000000ull;
}

/* The clock of the peer watch, which progress reads at every call: the
 * coarse monotonic clock (a tick of a few ms) costs a third of the
 * precise one, and the watch counts in hundreds of ms. Its values are
 * compared only with each other. */
static inline uint64_t cxlfi_watch_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
