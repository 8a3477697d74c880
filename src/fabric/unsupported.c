/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The atomic op table for endpoints until FI_ATOMIC is offered (issue 5):
 * every entry answers -FI_ENOSYS, so no op pointer an application can
 * reach is NULL.
 */
#include <rdma/fi_atomic.h>

#include "cxlfi.h"

/* Stubs ignore their arguments by definition. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static ssize_t a_write(struct fid_ep *ep, const void *buf, size_t count,
		       void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
		       enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t a_writev(struct fid_ep *ep, const struct fi_ioc *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype dt,
			enum fi_op op, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t a_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			  uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t a_inject(struct fid_ep *ep, const void *buf, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key,
			enum fi_datatype dt, enum fi_op op)
{
	return -FI_ENOSYS;
}

static ssize_t a_readwrite(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, void *res, void *res_desc,
			   fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t a_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			    void **desc, size_t count, struct fi_ioc *resv,
			    void **res_desc, size_t res_count, fi_addr_t dest,
			    uint64_t addr, uint64_t key, enum fi_datatype dt,
			    enum fi_op op, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t a_readwritemsg(struct fid_ep *ep,
			      const struct fi_msg_atomic *msg,
			      struct fi_ioc *resv, void **res_desc,
			      size_t res_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t a_compwrite(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, const void *cmp, void *cmp_desc,
			   void *res, void *res_desc, fi_addr_t dest,
			   uint64_t addr, uint64_t key, enum fi_datatype dt,
			   enum fi_op op, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t a_compwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			    void **desc, size_t count,
			    const struct fi_ioc *cmpv, void **cmp_desc,
			    size_t cmp_count, struct fi_ioc *resv,
			    void **res_desc, size_t res_count, fi_addr_t dest,
			    uint64_t addr, uint64_t key, enum fi_datatype dt,
			    enum fi_op op, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t a_compwritemsg(struct fid_ep *ep,
			      const struct fi_msg_atomic *msg,
			      const struct fi_ioc *cmpv, void **cmp_desc,
			      size_t cmp_count, struct fi_ioc *resv,
			      void **res_desc, size_t res_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int a_valid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op,
		   size_t *count)
{
	return -FI_ENOSYS;
}

struct fi_ops_atomic cxlfi_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = a_write,
	.writev = a_writev,
	.writemsg = a_writemsg,
	.inject = a_inject,
	.readwrite = a_readwrite,
	.readwritev = a_readwritev,
	.readwritemsg = a_readwritemsg,
	.compwrite = a_compwrite,
	.compwritev = a_compwritev,
	.compwritemsg = a_compwritemsg,
	.writevalid = a_valid,
	.readwritevalid = a_valid,
	.compwritevalid = a_valid,
};
