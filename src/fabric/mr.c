/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration. Messaging needs none (data is copied through the
 * pool), so a registration only records the region and hands out a
 * provider key; FI_MR_LOCAL users get a valid descriptor. RMA on
 * registered memory comes with the rendezvous protocol (issue 3/5).
 */
#include <stdlib.h>

#include "cxlfi.h"

static int mr_close(struct fid *fid)
{
	free(fid);
	return 0;
}

/* FI_MR_ENDPOINT: a region is bound to an endpoint and enabled before
 * use. Nothing to do for messaging, but both must succeed. */
static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)flags;
	return bfid->fclass == FI_CLASS_EP || bfid->fclass == FI_CLASS_CNTR
		       ? 0
		       : -FI_EINVAL;
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
	struct cxlfi_mr *m;

	(void)offset;
	(void)requested_key;
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
	pthread_mutex_lock(&d->lock);
	m->fid.key = d->mr_key_next++;
	pthread_mutex_unlock(&d->lock);
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
