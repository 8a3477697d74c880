/* SPDX-License-Identifier: BSD-3-Clause */
/* Poll sets (poll.c). Included by cxlfi.h, after the definitions all objects
 * share. */
#ifndef CXLFI_POLLSET_H
#define CXLFI_POLLSET_H

/* poll.c */
int cxlfi_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		    struct fid_poll **pollset);

#endif
