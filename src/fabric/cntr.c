/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters. Progress is manual: reading a counter progresses the
 * endpoints bound to it, and, for one bound to a memory region, every
 * endpoint of the domain.
 */
#include <stdlib.h>

#include "cxlfi.h"

int cxlfi_cntr_attach_ep(struct cxlfi_cntr *c, struct cxlfi_ep *ep)
{
	return cxlfi_eps_add(&c->eps, &c->neps, ep);
}

void cxlfi_cntr_detach_ep(struct cxlfi_cntr *c, struct cxlfi_ep *ep)
{
	cxlfi_eps_del(c->eps, &c->neps, ep);
}

void cxlfi_cntr_inc(struct cxlfi_cntr *c, bool err)
{
	if (c) {
		if (err)
			c->err++;
		else
			c->value++;
	}
}

/* Progress what can move a counter: its endpoints, and, for a counter
 * bound to a memory region (remote accesses), every endpoint of the
 * domain, since any of them may apply an access to the region. */
static void cntr_progress(struct cxlfi_cntr *c)
{
	cxlfi_eps_progress(c->eps, c->neps);
	if (c->mr_bound)
		for (struct cxlfi_ep *ep = c->dom->eps; ep; ep = ep->dom_next)
			cxlfi_up.progress(ep);
}

static uint64_t cntr_read(struct fid_cntr *fc)
{
	struct cxlfi_cntr *c = (struct cxlfi_cntr *)fc;
	uint64_t v;

	cxlfi_dom_lock(c->dom);
	cntr_progress(c);
	v = c->value;
	cxlfi_dom_unlock(c->dom);
	return v;
}

static uint64_t cntr_readerr(struct fid_cntr *fc)
{
	struct cxlfi_cntr *c = (struct cxlfi_cntr *)fc;
	uint64_t v;

	cxlfi_dom_lock(c->dom);
	v = c->err;
	cxlfi_dom_unlock(c->dom);
	return v;
}

static int cntr_update(struct fid_cntr *fc, uint64_t v, bool err, bool add)
{
	struct cxlfi_cntr *c = (struct cxlfi_cntr *)fc;
	uint64_t *p = err ? &c->err : &c->value;

	cxlfi_dom_lock(c->dom);
	*p = add ? *p + v : v;
	cxlfi_dom_unlock(c->dom);
	return 0;
}

static int cntr_add(struct fid_cntr *c, uint64_t v)
{
	return cntr_update(c, v, false, true);
}

static int cntr_set(struct fid_cntr *c, uint64_t v)
{
	return cntr_update(c, v, false, false);
}

static int cntr_adderr(struct fid_cntr *c, uint64_t v)
{
	return cntr_update(c, v, true, true);
}

static int cntr_seterr(struct fid_cntr *c, uint64_t v)
{
	return cntr_update(c, v, true, false);
}

static int cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct cxlfi_cntr *c = (struct cxlfi_cntr *)fc;
	uint64_t end = timeout >= 0 ? cxlfi_now_ms() + (uint64_t)timeout : 0;
	uint64_t err0 = cntr_readerr(fc);
	struct cxl_backoff b;

	cxl_backoff_init(&b, 0);
	while (cntr_read(fc) < threshold) {
		if (cntr_readerr(fc) != err0)
			return -FI_EAVAIL;
		if (timeout >= 0 && cxlfi_now_ms() >= end)
			return -FI_ETIMEDOUT;
		cxl_backoff_wait(&b);
	}
	(void)c;
	return 0;
}

static int cntr_close(struct fid *fid)
{
	struct cxlfi_cntr *c = (struct cxlfi_cntr *)fid;

	int rc = cxlfi_dom_close_child(c->dom, &c->refs);

	if (rc)
		return rc;
	free(c->eps);
	free(c);
	return 0;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = cxlfi_no_bind,
	.control = cxlfi_no_control,
	.ops_open = cxlfi_no_ops_open,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

int cxlfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **out, void *context)
{
	struct cxlfi_domain *d = (struct cxlfi_domain *)domain;
	struct cxlfi_cntr *c;

	if (attr && attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->dom = d;
	c->fid.fid.fclass = FI_CLASS_CNTR;
	c->fid.fid.context = context;
	c->fid.fid.ops = &cntr_fi_ops;
	c->fid.ops = &cntr_ops;
	cxlfi_dom_ref(d, 1);
	*out = &c->fid;
	return 0;
}

uint64_t cxlfi_cntr_events(struct cxlfi_cntr *c)
{
	uint64_t v;

	cxlfi_dom_lock(c->dom);
	cntr_progress(c);
	v = c->value + c->err;
	cxlfi_dom_unlock(c->dom);
	return v;
}
