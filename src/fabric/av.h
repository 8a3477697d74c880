/* SPDX-License-Identifier: BSD-3-Clause */
/* Address vectors (av.c). Included by cxlfi.h, after the definitions all
 * objects share. */
#ifndef CXLFI_AV_H
#define CXLFI_AV_H

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

/* av.c */
int cxlfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av, void *context);
/* Entry for fi_addr, or NULL (logged) if invalid. */
const struct cxlfi_av_entry *cxlfi_av_get(struct cxlfi_av *av, fi_addr_t a);
/* fi_addr of the peer with that endpoint index, or FI_ADDR_NOTAVAIL. */
fi_addr_t cxlfi_av_reverse(struct cxlfi_av *av, uint32_t index);

#endif
