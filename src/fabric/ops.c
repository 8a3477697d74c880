/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fi_msg and fi_tagged entry points. They take the domain lock, decide
 * whether the operation reports a completion (FI_SELECTIVE_COMPLETION
 * honours FI_COMPLETION), and call the protocol (proto.h).
 */
#include "cxlfi.h"

#define CXLFI_INTERNAL_COMP FI_COMPLETION /* "write a CQ entry" */

#define INJECT_OP CXLFI_INJECT_OP

uint64_t cxlfi_tx_flags(struct cxlfi_ep *ep, uint64_t flags)
{
	bool sel = ep->tx_cq_flags & FI_SELECTIVE_COMPLETION;

	if ((flags & INJECT_OP) || (sel && !(flags & FI_COMPLETION)) ||
	    !ep->tx_cq)
		return flags & ~(CXLFI_INTERNAL_COMP | INJECT_OP);
	return (flags | CXLFI_INTERNAL_COMP) & ~INJECT_OP;
}

static uint64_t rx_flags(struct cxlfi_ep *ep, uint64_t flags)
{
	bool sel = ep->rx_cq_flags & FI_SELECTIVE_COMPLETION;

	if ((sel && !(flags & FI_COMPLETION)) || !ep->rx_cq)
		return flags & ~CXLFI_INTERNAL_COMP;
	return flags | CXLFI_INTERNAL_COMP;
}

static ssize_t do_send(struct fid_ep *fep, const void *buf, size_t len,
		       fi_addr_t dest, uint64_t tag, uint64_t data,
		       uint64_t flags, void *ctx)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fep;
	ssize_t rc;

	cxlfi_dom_lock(ep->dom);
	if (!ep->enabled)
		rc = -FI_EOPBADSTATE;
	else if (cxlfi_av_is_net(ep->av, dest)) /* outside our pool */
		rc = cxlfi_netpath_send(ep, dest, buf, len, tag, data,
					cxlfi_tx_flags(ep, flags), ctx);
	else
		rc = cxlfi_send(ep, buf, len, dest, tag, data,
				cxlfi_tx_flags(ep, flags), ctx);
	cxlfi_dom_unlock(ep->dom);
	return rc;
}

static ssize_t do_recv(struct fid_ep *fep, void *buf, size_t len, fi_addr_t src,
		       uint64_t tag, uint64_t ignore, uint64_t flags, void *ctx)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fep;
	ssize_t rc;

	/* without FI_DIRECTED_RECV the source address is ignored
	 * (fi_msg(3)) */
	if (!ep->directed)
		src = FI_ADDR_UNSPEC;
	cxlfi_dom_lock(ep->dom);
	if (!ep->enabled)
		rc = -FI_EOPBADSTATE;
	else
		rc = cxlfi_recv(ep, buf, len, src, tag, ignore,
				rx_flags(ep, flags), ctx);
	cxlfi_dom_unlock(ep->dom);
	return rc;
}

/* The provider takes one iovec per operation (iov_limit 1): its buffer,
 * or none for count 0; more is -FI_EINVAL. */
static ssize_t do_sendv(struct fid_ep *fep, const struct iovec *iov,
			size_t count, fi_addr_t dest, uint64_t tag,
			uint64_t data, uint64_t flags, void *ctx)
{
	if (count > 1)
		return -FI_EINVAL;
	return do_send(fep, count ? iov[0].iov_base : NULL,
		       count ? iov[0].iov_len : 0, dest, tag, data, flags, ctx);
}

static ssize_t do_recvv(struct fid_ep *fep, const struct iovec *iov,
			size_t count, fi_addr_t src, uint64_t tag,
			uint64_t ignore, uint64_t flags, void *ctx)
{
	if (count > 1)
		return -FI_EINVAL;
	return do_recv(fep, count ? iov[0].iov_base : NULL,
		       count ? iov[0].iov_len : 0, src, tag, ignore, flags,
		       ctx);
}

#define EPF(fep) (((struct cxlfi_ep *)(fep))->tx_op_flags)
#define EPR(fep) (((struct cxlfi_ep *)(fep))->rx_op_flags)

/* ---- fi_msg ---------------------------------------------------------
 * One function per form that fi_msg(3) and fi_tagged(3) define (plain,
 * iovec, msg struct, inject, with data), each the same one call to
 * do_send/do_recv with that form's arguments: the repetition is the
 * API's, the logic is in do_*. */

static ssize_t m_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, void *ctx)
{
	(void)desc;
	return do_recv(ep, buf, len, src, 0, 0, EPR(ep) | FI_MSG, ctx);
}

static ssize_t m_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t src, void *ctx)
{
	(void)desc;
	return do_recvv(ep, iov, count, src, 0, 0, EPR(ep) | FI_MSG, ctx);
}

static ssize_t m_recvmsg(struct fid_ep *ep, const struct fi_msg *m,
			 uint64_t flags)
{
	return do_recvv(ep, m->msg_iov, m->iov_count, m->addr, 0, 0,
			flags | FI_MSG, m->context);
}

static ssize_t m_send(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, void *ctx)
{
	(void)desc;
	return do_send(ep, buf, len, dest, 0, 0, EPF(ep) | FI_MSG, ctx);
}

static ssize_t m_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t dest, void *ctx)
{
	(void)desc;
	return do_sendv(ep, iov, count, dest, 0, 0, EPF(ep) | FI_MSG, ctx);
}

static ssize_t m_sendmsg(struct fid_ep *ep, const struct fi_msg *m,
			 uint64_t flags)
{
	return do_sendv(ep, m->msg_iov, m->iov_count, m->addr, 0, m->data,
			flags | FI_MSG, m->context);
}

static ssize_t m_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest)
{
	return do_send(ep, buf, len, dest, 0, 0, INJECT_OP | FI_INJECT | FI_MSG,
		       NULL);
}

static ssize_t m_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest, void *ctx)
{
	(void)desc;
	return do_send(ep, buf, len, dest, 0, data,
		       EPF(ep) | FI_MSG | FI_REMOTE_CQ_DATA, ctx);
}

static ssize_t m_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest)
{
	return do_send(ep, buf, len, dest, 0, data,
		       INJECT_OP | FI_INJECT | FI_MSG | FI_REMOTE_CQ_DATA,
		       NULL);
}

struct fi_ops_msg cxlfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = m_recv,
	.recvv = m_recvv,
	.recvmsg = m_recvmsg,
	.send = m_send,
	.sendv = m_sendv,
	.sendmsg = m_sendmsg,
	.inject = m_inject,
	.senddata = m_senddata,
	.injectdata = m_injectdata,
};

/* ---- fi_tagged ------------------------------------------------------ */

static ssize_t t_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	(void)desc;
	return do_recv(ep, buf, len, src, tag, ignore, EPR(ep) | FI_TAGGED,
		       ctx);
}

static ssize_t t_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, void *ctx)
{
	(void)desc;
	return do_recvv(ep, iov, count, src, tag, ignore, EPR(ep) | FI_TAGGED,
			ctx);
}

static ssize_t t_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *m,
			 uint64_t flags)
{
	return do_recvv(ep, m->msg_iov, m->iov_count, m->addr, m->tag,
			m->ignore, flags | FI_TAGGED, m->context);
}

static ssize_t t_send(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, uint64_t tag, void *ctx)
{
	(void)desc;
	return do_send(ep, buf, len, dest, tag, 0, EPF(ep) | FI_TAGGED, ctx);
}

static ssize_t t_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t dest, uint64_t tag, void *ctx)
{
	(void)desc;
	return do_sendv(ep, iov, count, dest, tag, 0, EPF(ep) | FI_TAGGED, ctx);
}

static ssize_t t_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *m,
			 uint64_t flags)
{
	return do_sendv(ep, m->msg_iov, m->iov_count, m->addr, m->tag, m->data,
			flags | FI_TAGGED, m->context);
}

static ssize_t t_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t tag)
{
	return do_send(ep, buf, len, dest, tag, 0,
		       INJECT_OP | FI_INJECT | FI_TAGGED, NULL);
}

static ssize_t t_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest,
			  uint64_t tag, void *ctx)
{
	(void)desc;
	return do_send(ep, buf, len, dest, tag, data,
		       EPF(ep) | FI_TAGGED | FI_REMOTE_CQ_DATA, ctx);
}

static ssize_t t_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest, uint64_t tag)
{
	return do_send(ep, buf, len, dest, tag, data,
		       INJECT_OP | FI_INJECT | FI_TAGGED | FI_REMOTE_CQ_DATA,
		       NULL);
}

struct fi_ops_tagged cxlfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = t_recv,
	.recvv = t_recvv,
	.recvmsg = t_recvmsg,
	.send = t_send,
	.sendv = t_sendv,
	.sendmsg = t_sendmsg,
	.inject = t_inject,
	.senddata = t_senddata,
	.injectdata = t_injectdata,
};
