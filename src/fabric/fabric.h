/* SPDX-License-Identifier: BSD-3-Clause */
/* The fabric and its domains (fabric.c). Included by cxlfi.h, after the
 * definitions all objects share. */
#ifndef CXLFI_FABRIC_H
#define CXLFI_FABRIC_H

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

/* fabric.c: the fabric and its domains */
int cxlfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context);
int cxlfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **dom, void *context);

#endif
