/* SPDX-License-Identifier: BSD-3-Clause */
/* Fabric and domain objects. */
#include <stdlib.h>
#include <string.h>

#include "cxlfi.h"

static int fabric_close(struct fid *fid)
{
	struct cxlfi_fabric *f = (struct cxlfi_fabric *)fid;

	if (f->refs)
		return -FI_EBUSY;
	cxlfi_stats_report(&f->coh0);
	cxlfi_pool_put();
	free(f);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = cxlfi_no_bind,
	.control = cxlfi_no_control,
	.ops_open = cxlfi_no_ops_open,
	.tostr = NULL,
	.ops_set = NULL,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = cxlfi_domain_open,
	.passive_ep = cxlfi_no_passive_ep,
	.eq_open = cxlfi_eq_open,
	.wait_open = cxlfi_no_wait_open,
	.trywait = cxlfi_no_trywait,
	.domain2 = NULL,
};

int cxlfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context)
{
	struct cxlfi_fabric *f;
	int rc;

	if (attr && attr->name && strcmp(attr->name, CXLFI_NAME))
		return -FI_EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	if ((rc = cxlfi_pool_get(&f->pool))) {
		free(f);
		return rc;
	}
	cxl_coh_counters_get(&f->coh0);
	f->fid.fid.fclass = FI_CLASS_FABRIC;
	f->fid.fid.context = context;
	f->fid.fid.ops = &fabric_fi_ops;
	f->fid.ops = &fabric_ops;
	*fabric = &f->fid;
	return 0;
}

/* ---- domain ------------------------------------------------------------ */

static int domain_close(struct fid *fid)
{
	struct cxlfi_domain *d = (struct cxlfi_domain *)fid;

	if (d->refs)
		return -FI_EBUSY;
	d->fabric->refs--;
	pthread_mutex_destroy(&d->lock);
	fi_freeinfo(d->info);
	free(d);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = cxlfi_no_bind,
	.control = cxlfi_no_control,
	.ops_open = cxlfi_no_ops_open,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = cxlfi_av_open,
	.cq_open = cxlfi_cq_open,
	.endpoint = cxlfi_endpoint,
	.scalable_ep = cxlfi_no_scalable_ep,
	.cntr_open = cxlfi_cntr_open,
	.poll_open = cxlfi_poll_open,
	.stx_ctx = cxlfi_no_stx,
	.srx_ctx = cxlfi_no_srx,
	.query_atomic = cxlfi_query_atomic,
	.query_collective = NULL,
	.endpoint2 = NULL,
};

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = cxlfi_mr_reg,
	.regv = cxlfi_mr_regv,
	.regattr = cxlfi_mr_regattr,
};

int cxlfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **dom, void *context)
{
	struct cxlfi_fabric *f = (struct cxlfi_fabric *)fabric;
	struct cxlfi_domain *d;

	if (info && info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, CXLFI_NAME))
		return -FI_EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	d->info = info ? fi_dupinfo(info) : NULL;
	if (info && !d->info) {
		free(d);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&d->lock, NULL);
	d->locking = !(info && info->domain_attr &&
		       info->domain_attr->threading == FI_THREAD_DOMAIN);
	d->fabric = f;
	d->pool = f->pool;
	d->mr_key_next = 1;
	{
		int mode = info && info->domain_attr
				   ? info->domain_attr->mr_mode
				   : 0;

		/* FI_MR_BASIC (old API) means both */
		d->mr_virt = mode & (FI_MR_VIRT_ADDR | FI_MR_BASIC);
		d->mr_prov_key = mode & (FI_MR_PROV_KEY | FI_MR_BASIC);
	}
	d->fid.fid.fclass = FI_CLASS_DOMAIN;
	d->fid.fid.context = context;
	d->fid.fid.ops = &domain_fi_ops;
	d->fid.ops = &domain_ops;
	d->fid.mr = &mr_ops;
	f->refs++;
	*dom = &d->fid;
	return 0;
}
