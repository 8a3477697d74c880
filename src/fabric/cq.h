/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion queues (cq.c). Included by cxlfi.h, after the definitions all
 * objects share. */
#ifndef CXLFI_CQ_H
#define CXLFI_CQ_H

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
	/* where the network link writes its completions (fi_peer(3)) */
	struct fipeer_cq peer;
	struct fipeer_cq_owner_ops peer_ops;
};

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

#endif
