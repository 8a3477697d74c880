/* SPDX-License-Identifier: BSD-3-Clause */
/* Counters (cntr.c). Included by cxlfi.h, after the definitions all objects
 * share. */
#ifndef CXLFI_CNTR_H
#define CXLFI_CNTR_H

struct cxlfi_cntr {
	struct fid_cntr fid;
	struct cxlfi_domain *dom;
	uint64_t value, err;
	bool mr_bound; /* bound to a memory region (fi_mr_bind) */
	struct cxlfi_ep **eps;
	size_t neps;
	int refs;
};

/* cntr.c: counters */
int cxlfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr, void *context);
int cxlfi_cntr_attach_ep(struct cxlfi_cntr *c, struct cxlfi_ep *ep);
void cxlfi_cntr_detach_ep(struct cxlfi_cntr *c, struct cxlfi_ep *ep);
void cxlfi_cntr_inc(struct cxlfi_cntr *c, bool err);
/* For poll sets: progress, then value + errors. */
uint64_t cxlfi_cntr_events(struct cxlfi_cntr *c);

#endif
