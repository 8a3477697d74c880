/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration. Messaging needs none (data is copied through the
 * pool). For RMA (rma.c) a registration records the region under its key
 * in the domain: a write or read arriving from a peer names the key and
 * an address (virtual with FI_MR_VIRT_ADDR, else an offset into the
 * region), and cxlfi_mr_target checks both before any byte is touched.
 * Keys are ours with FI_MR_PROV_KEY, else the requested ones (unique).
 */
#include <stdlib.h>

#include "cxlfi.h"

static int mr_close(struct fid *fid)
{
	struct cxlfi_mr *m = (struct cxlfi_mr *)fid;
	struct cxlfi_domain *d = m->dom;
	struct cxlfi_mr **pp;

	cxlfi_dom_lock(d);
	for (pp = &d->mrs; *pp && *pp != m; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = m->next;
	if (m->in_pool) /* origins must stop writing it directly */
		for (struct cxlfi_ep *ep = d->eps; ep; ep = ep->dom_next)
			cxlfi_mrtab_sync(ep);
	if (m->rwr_cntr)
		m->rwr_cntr->refs--;
	if (m->rrd_cntr)
		m->rrd_cntr->refs--;
	if (m->rwr_cntr || m->rrd_cntr)
		d->mr_counted--;
	cxlfi_dom_unlock(d);
	free(m);
	return 0;
}

static struct cxlfi_mr *mr_find(struct cxlfi_domain *d, uint64_t key)
{
	for (struct cxlfi_mr *m = d->mrs; m; m = m->next)
		if (m->fid.key == key)
			return m;
	return NULL;
}

void *cxlfi_mr_target(struct cxlfi_domain *d, uint64_t key, uint64_t addr,
		      size_t len, uint64_t access, int *err)
{
	struct cxlfi_mr *m = mr_find(d, key);
	uint64_t off;

	if (!m) {
		*err = FI_EKEYREJECTED;
		return NULL;
	}
	if ((m->access & access) != access) {
		*err = FI_EACCES;
		return NULL;
	}
	off = d->mr_virt ? addr - (uint64_t)(uintptr_t)m->buf : addr;
	/* the whole range inside the region, without overflow */
	if ((d->mr_virt && addr < (uint64_t)(uintptr_t)m->buf) ||
	    off > m->len || len > m->len - off) {
		*err = FI_EINVAL;
		return NULL;
	}
	*err = 0;
	return (uint8_t *)m->buf + off;
}

void cxlfi_mr_count(struct cxlfi_domain *d, uint64_t key, uint64_t access)
{
	struct cxlfi_mr *m;

	/* every channel RMA and atomic calls this: no second walk of the
	 * region list unless some region counts */
	if (!d->mr_counted)
		return;
	m = mr_find(d, key);
	if (m)
		cxlfi_cntr_inc(access == FI_REMOTE_WRITE ? m->rwr_cntr
							 : m->rrd_cntr,
			       false);
}

/*
 * FI_MR_ENDPOINT: a region is bound to an endpoint and enabled before use;
 * nothing to do for messaging. A counter bound with FI_REMOTE_WRITE and/or
 * FI_REMOTE_READ counts the remote accesses to the region (fi_mr(3)); the
 * region then leaves the region tables, so that no origin accesses it
 * directly, unseen.
 */
static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct cxlfi_mr *m = (struct cxlfi_mr *)fid;
	struct cxlfi_domain *d = m->dom;
	struct cxlfi_cntr *c = (struct cxlfi_cntr *)bfid;

	if (bfid->fclass == FI_CLASS_EP)
		return 0;
	if (bfid->fclass != FI_CLASS_CNTR || !flags ||
	    (flags & ~(uint64_t)(FI_REMOTE_WRITE | FI_REMOTE_READ)))
		return -FI_EINVAL;
	cxlfi_dom_lock(d);
	c->mr_bound = true;
	if (!m->rwr_cntr && !m->rrd_cntr)
		d->mr_counted++;
	if ((flags & FI_REMOTE_WRITE) && !m->rwr_cntr) {
		m->rwr_cntr = c;
		c->refs++;
	}
	if ((flags & FI_REMOTE_READ) && !m->rrd_cntr) {
		m->rrd_cntr = c;
		c->refs++;
	}
	if (m->in_pool)
		for (struct cxlfi_ep *ep = d->eps; ep; ep = ep->dom_next)
			cxlfi_mrtab_sync(ep);
	cxlfi_dom_unlock(d);
	return 0;
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)arg;
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mr_bind,
	.control = mr_control,
	.ops_open = cxlfi_no_ops_open,
};

int cxlfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr, void *context)
{
	struct cxlfi_domain *d = (struct cxlfi_domain *)fid;
	const struct cxlfi_mr *old;
	struct cxlfi_mr *m;

	(void)offset;
	if (fid->fclass != FI_CLASS_DOMAIN || flags)
		return -FI_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->dom = d;
	m->buf = buf;
	m->len = len;
	m->access = access;
	m->fid.fid.fclass = FI_CLASS_MR;
	m->fid.fid.context = context;
	m->fid.fid.ops = &mr_fi_ops;
	m->fid.mem_desc = m;
	cxlfi_dom_lock(d);
	if (d->mr_prov_key) {
		m->fid.key = d->mr_key_next++;
	} else if ((old = mr_find(d, requested_key))) {
		CXLFI_WARN(FI_LOG_MR,
			   "fi_mr_reg: key %#llx is in use by the region "
			   "%p+%zu of this domain; close it first or ask for "
			   "FI_MR_PROV_KEY\n",
			   (unsigned long long)requested_key, old->buf,
			   old->len);
		cxlfi_dom_unlock(d);
		free(m);
		return -FI_ENOKEY;
	} else {
		m->fid.key = requested_key;
	}
	m->next = d->mrs;
	d->mrs = m;
	/* a region in the pool is published for direct RMA */
	m->pool_off = len ? cxl_pool_offset(d->pool, buf) : UINT64_MAX;
	m->in_pool = m->pool_off != UINT64_MAX &&
		     cxl_pool_offset(d->pool, (const uint8_t *)buf + len - 1) !=
			     UINT64_MAX;
	if (m->in_pool)
		for (struct cxlfi_ep *ep = d->eps; ep; ep = ep->dom_next)
			cxlfi_mrtab_sync(ep);
	cxlfi_dom_unlock(d);
	*mr = &m->fid;
	return 0;
}

int cxlfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context)
{
	if (count != 1)
		return -FI_EINVAL;
	return cxlfi_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access,
			    offset, requested_key, flags, mr, context);
}

int cxlfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr)
{
	if (!attr || attr->iov_count != 1)
		return -FI_EINVAL;
	return cxlfi_mr_reg(fid, attr->mr_iov[0].iov_base,
			    attr->mr_iov[0].iov_len, attr->access, attr->offset,
			    attr->requested_key, flags, mr, attr->context);
}
