/* SPDX-License-Identifier: BSD-3-Clause */
/* Event queues (eq.c). Included by cxlfi.h, after the definitions all objects
 * share. */
#ifndef CXLFI_EQ_H
#define CXLFI_EQ_H

/* eq.c: event queues (application events only; nothing raises one) */
int cxlfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq, void *context);
/* A bound endpoint or AV takes (+1) or drops (-1) a reference. */
void cxlfi_eq_ref(struct fid_eq *eq, int delta);
/* Queue an event (buf: e.g. a struct fi_eq_entry) or, with err, an error
 * entry (buf: a struct fi_eq_err_entry). 0 or -FI_*. */
int cxlfi_eq_report(struct fid_eq *eq, uint32_t event, const void *buf,
		    size_t len, bool err);

#endif
