/* SPDX-License-Identifier: BSD-3-Clause */
/* "Not supported" entries for ops tables (libfabric exports none). */
#include "cxlfi.h"

int cxlfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

int cxlfi_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

int cxlfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

int cxlfi_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_pep **pep, void *context)
{
	(void)fabric;
	(void)info;
	(void)pep;
	(void)context;
	return -FI_ENOSYS;
}

int cxlfi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		       struct fid_wait **waitset)
{
	(void)fabric;
	(void)attr;
	(void)waitset;
	return -FI_ENOSYS;
}

int cxlfi_no_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric;
	(void)fids;
	(void)count;
	return -FI_ENOSYS;
}

int cxlfi_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **sep, void *context)
{
	(void)domain;
	(void)info;
	(void)sep;
	(void)context;
	return -FI_ENOSYS;
}

int cxlfi_no_stx(struct fid_domain *domain, struct fi_tx_attr *attr,
		 struct fid_stx **stx, void *context)
{
	(void)domain;
	(void)attr;
	(void)stx;
	(void)context;
	return -FI_ENOSYS;
}

int cxlfi_no_srx(struct fid_domain *domain, struct fi_rx_attr *attr,
		 struct fid_ep **rx_ep, void *context)
{
	(void)domain;
	(void)attr;
	(void)rx_ep;
	(void)context;
	return -FI_ENOSYS;
}

int cxlfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		    struct fid_ep **tx_ep, void *context)
{
	(void)sep;
	(void)index;
	(void)attr;
	(void)tx_ep;
	(void)context;
	return -FI_ENOSYS;
}

int cxlfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context)
{
	(void)sep;
	(void)index;
	(void)attr;
	(void)rx_ep;
	(void)context;
	return -FI_ENOSYS;
}
