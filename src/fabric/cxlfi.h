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
#include "net.h"

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
	char net[64];	       /* FI_CXL_NET: network provider, "" for none */
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
#define CXLFI_WATCH_CALLS 16u /* progress calls per look at the clock */

/* Process-wide message counts (under the domain lock of the ep). */
struct cxlfi_stats {
	uint64_t sent, recv, bytes;
	uint64_t direct_rma; /* RMA operations done directly in the pool */
	uint64_t atomics;    /* atomics executed here, as the target */
	uint64_t read_spins; /* empty CQ reads that kept polling (read_spin) */
	uint64_t spin_hits;  /* ... and found a completion while they did */
	uint64_t ring_msgs;  /* ring cells taken by progress (any op) */
	/* messages through the network link (netpath.c), of sent / recv */
	uint64_t net_sent, net_recv;
	/* looks at the link (netpath.c), and the time the quiet ones took */
	uint64_t net_looks, net_quiet_looks, net_quiet_ns;
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
/* NET: the network provider's address follows (struct cxlfi_netaddr),
 * pad bytes of it (docs/multipool.md, "Routing") */
#define CXLFI_ADDR_NET 0x4u
#define CXLFI_INDEX_NONE UINT32_MAX

/* With a network link (FI_CXL_NET set) every address of ours has this
 * form, 64 bytes (MPICH's limit): the pool part, then the address of
 * the network provider's endpoint (pad bytes; 0 when there is none). */
#define CXLFI_NET_NAME_MAX 24u
struct cxlfi_netaddr {
	struct cxlfi_addr a;
	uint8_t net[CXLFI_NET_NAME_MAX];
};
/* Bytes of an address of ours: sizeof either struct, by FI_CXL_NET. */
static inline size_t cxlfi_addrlen(void)
{
	return cxlfi_params.net[0] ? sizeof(struct cxlfi_netaddr)
				   : sizeof(struct cxlfi_addr);
}

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
/* Is this a network-only host, on a private pool (docs/multipool.md)? */
bool cxlfi_netonly(void);

/* The provider's objects: one header each */
#include "attr.h"
#include "av.h"
#include "cntr.h"
#include "cq.h"
#include "ep.h"
#include "eq.h"
#include "fabric.h"
#include "mr.h"
#include "pollset.h"

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
/* netpath.c: the network link of an endpoint (docs/multipool.md) */
/* Opens it (FI_CXL_NET set) and hands it the AV's network peers. */
int cxlfi_netpath_open(struct cxlfi_ep *ep);
void cxlfi_netpath_close(struct cxlfi_ep *ep);
/* A network peer inserted at fa: every bound endpoint's link learns it;
 * non-zero (reported) when one cannot. */
int cxlfi_netpath_av_insert(struct cxlfi_av *av, fi_addr_t fa);
/* A send to a network peer: posted, or queued while the link cannot take
 * it yet (it is connecting, or full) as a send in the pool queues behind
 * a full ring; -FI_EAGAIN only when that queue is full too. */
ssize_t cxlfi_netpath_send(struct cxlfi_ep *ep, fi_addr_t dest, const void *buf,
			   size_t len, uint64_t tag, uint64_t data,
			   uint64_t flags, void *context);
/* Post the queued sends, in order, while the link takes them. */
void cxlfi_netpath_flush(struct cxlfi_ep *ep);
/* netrma.c: RMA and atomics to peers outside the pool, over the link's
 * RMA endpoint (domain lock held) */
int cxlfi_netrma_open(struct cxlfi_ep *ep);
void cxlfi_netrma_close(struct cxlfi_ep *ep);
/* now: read its CQ whatever the idle cadence (a quiet link's look) */
void cxlfi_netrma_progress(struct cxlfi_ep *ep, bool now);
/* data: the remote CQ data, with FI_REMOTE_CQ_DATA in flags */
ssize_t cxlfi_netrma_write(struct cxlfi_ep *ep, fi_addr_t dest, const void *buf,
			   size_t len, uint64_t addr, uint64_t key,
			   uint64_t data, uint64_t flags, void *ctx);
ssize_t cxlfi_netrma_read(struct cxlfi_ep *ep, fi_addr_t src, void *buf,
			  size_t len, uint64_t addr, uint64_t key,
			  uint64_t flags, void *ctx);
/* req: atomic.c's request message, n bytes; result gets reslen bytes */
ssize_t cxlfi_netrma_atomic(struct cxlfi_ep *ep, fi_addr_t dest,
			    const void *req, size_t n, void *result,
			    size_t reslen, bool fetch, uint64_t flags,
			    void *ctx);
/* A look at the link polls its sockets (system calls: 0.4-2 us), ten
 * times what a progress call through the pool costs or more, and a message
 * through the pool that arrives during one waits for it. While the link is
 * quiet (no send of ours outstanding or queued, no receive posted that a
 * network peer may match, no RMA over it, no traffic for
 * CXLFI_NET_HOT_CALLS calls, enough to wait for an answer over it), a look is
 * due once the quiet gap has passed since the last: CXLFI_NET_QUIET_SHARE
 * times what looks cost, or 1/CXLFI_NET_QUIET_SLOW of the time the link has
 * been quiet, whichever is longer, and at most CXLFI_NET_QUIET_MAX_NS. The
 * looks then take at most 1/16 of a rank's waits on the pool just after the
 * link carried traffic, under 1 % after a few milliseconds of silence (a
 * fixed 1/16 measured 1.05-1.09x the pool-only latency), and a message
 * from a network peer to a quiet endpoint waits at most 1/16 of the silence
 * before it, and at most 256 us. The clock is read every
 * CXLFI_NET_CLOCK_EVERY progress calls (docs/multipool.md). */
#define CXLFI_NET_QUIET_SHARE 16u
#define CXLFI_NET_QUIET_SLOW 16u
#define CXLFI_NET_QUIET_MAX_NS 256000u
#define CXLFI_NET_CLOCK_EVERY 8u
#define CXLFI_NET_HOT_CALLS 64u
/* RMA over the link under way or lately (netrma.c) */
bool cxlfi_netrma_busy(const struct cxlfi_ep *ep);
/* netpath.c: a look at the link (quiet: the RMA endpoint's CQ too), and
 * one only if due while it is quiet */
void cxlfi_netpath_look(struct cxlfi_ep *ep, bool quiet);
void cxlfi_netpath_quiet_look(struct cxlfi_ep *ep);
static inline void cxlfi_netpath_progress(struct cxlfi_ep *ep)
{
	if (!ep->net_peers)
		return;
	if (!ep->net_tx && !ep->net_txq && !ep->net_hot && !ep->net_rx_posted &&
	    !cxlfi_netrma_busy(ep)) {
		if (ep->progress_calls % CXLFI_NET_CLOCK_EVERY == 0)
			cxlfi_netpath_quiet_look(ep);
		return;
	}
	if (ep->net_hot)
		ep->net_hot--;
	ep->net_quiet_since_ns = 0; /* busy: the silence starts again */
	cxlfi_netpath_look(ep, false);
}
/* recv.c: the owner side of our receive queue for the link, and the end
 * of a receive the link filled (err: 0, FI_ETRUNC or the failure) */
void cxlfi_rx_srx_init(struct cxlfi_ep *ep);
/* frees the link's cached receive entries, once the link is closed */
void cxlfi_rx_net_cache_free(struct cxlfi_ep *ep);
void cxlfi_rx_net_done(struct cxlfi_netrx *n, size_t total, uint64_t data,
		       uint64_t tag, bool has_data, int err);
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
	/* netpath.c, for av.c (a network peer inserted) */
	int (*av_net_insert)(struct cxlfi_av *av, fi_addr_t fa);
};
extern struct cxlfi_upcalls cxlfi_up; /* upcall.c */

/* bulk.c: the transfer area (large messages, pointer passing, acks) */
/* messages of cxlfi_params.bulk_min bytes or more use it */
#define CXLFI_OP_BULK 4u /* ring op: a chunk in a data slot */
#define CXLFI_OP_PTR 5u	 /* ring op: the rest of the message in the pool */
#define CXLFI_OP_ACK 6u	 /* ring op: return a token (delivery complete) */
/* On an OP_BULK, or an OP_FIRST with OPF_SLOT: the slot holds the last
 * bytes of a delivery-complete send, which completes when the token
 * returns; the receiver returns it fenced at once, and no OP_ACK follows */
#define CXLFI_OPF_RETURN (1u << 16)
#define CXLFI_XA_TOKENS 128u
#define CXLFI_XA_SLOT_SIZE (64u << 10) /* largest chunk of one OP_BULK */
/* an OP_BULK descriptor; it also leads an OP_FIRST with OPF_SLOT */
#define CXLFI_DESC_BULK_SIZE 16u
/* Length an OP_PTR descriptor covers if its range lies in the pool, else
 * 0 (checked before the receiver makes room for it). */
size_t cxlfi_ptr_len(struct cxlfi_ep *ep, const uint8_t *desc, size_t n);
/* Each push: 1 done, 0 no ring cell or token yet (retry), < 0 error. */
int cxlfi_bulk_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    struct cxlfi_tx *t);
int cxlfi_ptr_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		   struct cxlfi_tx *t);
/* All of t in one data slot, named by the first cell itself: that cell
 * is the slot's descriptor followed by the h header bytes the caller put
 * at ep->tx_scratch + CXLFI_DESC_BULK_SIZE, sent as ring op op. */
int cxlfi_bulk_push_whole(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			  struct cxlfi_tx *t, size_t h, uint32_t op);
int cxlfi_ack_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		   struct cxlfi_tx *t);
/* Create our transfer area now if it does not exist (0 or -FI_*). */
int cxlfi_xa_prepare(struct cxlfi_ep *ep);
/* Does [buf, buf+len) lie in the pool mapping (pointer passing)? */
bool cxlfi_ptr_usable(struct cxlfi_ep *ep, const void *buf, size_t len);
/* Descriptors received: copy to dst (up to cap; NULL drops), return the
 * token (fenced at once if its sender waits for it: CXLFI_OPF_RETURN).
 * The length the descriptor covers, or 0 if it is invalid. */
size_t cxlfi_bulk_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		       const uint8_t *desc, size_t n, uint8_t *dst, size_t cap,
		       bool waited);
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
/* Execute the atomic request m (n bytes, the peer's word: checked): 0
 * with the prior values in *result (malloc'd, *reslen bytes; none for a
 * non-fetching kind), an FI_* error to answer with, or -1 when m is
 * malformed. *rid is the request's. */
int cxlfi_atomic_exec(struct cxlfi_ep *ep, const uint8_t *m, size_t n,
		      uint64_t *rid, uint8_t **result, size_t *reslen);
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
