/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory regions (mr.c) and the pool region tables of direct RMA (mrtab.c).
 * Included by cxlfi.h, after the definitions all objects share. */
#ifndef CXLFI_MR_H
#define CXLFI_MR_H

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

/* mr.c */
int cxlfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr, void *context);
int cxlfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context);
int cxlfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr);

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

#endif
