/* SPDX-License-Identifier: BSD-3-Clause */
/* RDM endpoints: object life cycle, binding, names, options, op tables. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cxlfi.h"

static int ep_close(struct fid *fid)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fid;
	struct cxlfi_domain *d = ep->dom;

	cxlfi_dom_lock(d);
	cxlfi_ep_unpublish(ep);
	cxlfi_netpath_close(ep);
	if (ep->av) {
		cxlfi_eps_del(ep->av->eps, &ep->av->neps, ep);
		ep->av->refs--;
	}
	if (ep->eq)
		cxlfi_eq_ref(ep->eq, -1);
	/* leave the progress lists, then drop the references */
	if (ep->tx_cq) {
		cxlfi_cq_detach_ep(ep->tx_cq, ep);
		ep->tx_cq->refs--;
	}
	if (ep->rx_cq) {
		cxlfi_cq_detach_ep(ep->rx_cq, ep);
		ep->rx_cq->refs--;
	}
	{
		struct cxlfi_cntr **cs[] = { &ep->tx_cntr,  &ep->rx_cntr,
					     &ep->rd_cntr,  &ep->wr_cntr,
					     &ep->rrd_cntr, &ep->rwr_cntr };

		for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
			if (*cs[i]) {
				cxlfi_cntr_detach_ep(*cs[i], ep);
				(*cs[i])->refs--;
			}
	}
	d->refs--;
	cxlfi_dom_unlock(d);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fid;
	int rc = 0;

	cxlfi_dom_lock(ep->dom);
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		if (ep->av) {
			rc = -FI_EINVAL;
			break;
		}
		rc = cxlfi_eps_add(&((struct cxlfi_av *)bfid)->eps,
				   &((struct cxlfi_av *)bfid)->neps, ep);
		if (rc)
			break;
		ep->av = (struct cxlfi_av *)bfid;
		ep->av->refs++;
		break;
	case FI_CLASS_CQ: {
		struct cxlfi_cq *cq = (struct cxlfi_cq *)bfid;

		if (!(flags & (FI_TRANSMIT | FI_RECV))) {
			rc = -FI_EINVAL;
			break;
		}
		/* one CQ per direction: a second bind would leak the first
		 * CQ's reference and leave it on the progress list */
		if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
		    ((flags & FI_RECV) && ep->rx_cq)) {
			rc = -FI_EINVAL;
			break;
		}
		rc = cxlfi_cq_attach_ep(cq, ep);
		if (rc)
			break;
		/* one reference per direction bound */
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_cq_flags = flags;
			cq->refs++;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_cq_flags = flags;
			cq->refs++;
		}
		break;
	}
	case FI_CLASS_CNTR: {
		struct cxlfi_cntr *c = (struct cxlfi_cntr *)bfid;

		if (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			      FI_REMOTE_READ | FI_REMOTE_WRITE)) {
			rc = -FI_EINVAL;
			break;
		}
		const struct {
			uint64_t flag;
			struct cxlfi_cntr **slot;
		} b[] = {
			{ FI_SEND, &ep->tx_cntr },
			{ FI_RECV, &ep->rx_cntr },
			{ FI_READ, &ep->rd_cntr },
			{ FI_WRITE, &ep->wr_cntr },
			{ FI_REMOTE_READ, &ep->rrd_cntr },
			{ FI_REMOTE_WRITE, &ep->rwr_cntr },
		};

		for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++)
			if ((flags & b[i].flag) && !*b[i].slot) {
				*b[i].slot = c;
				c->refs++;
			}
		/* reading the counter progresses the endpoint (once) */
		if (flags)
			rc = cxlfi_cntr_attach_ep(c, ep);
		break;
	}
	case FI_CLASS_EQ:
		/* nothing raises events on an RDM endpoint over the pool
		 * (no connections), but the binding is legal */
		if (ep->eq) {
			rc = -FI_EINVAL;
			break;
		}
		ep->eq = (struct fid_eq *)bfid;
		cxlfi_eq_ref(ep->eq, 1);
		break;
	default:
		rc = -FI_EINVAL;
	}
	cxlfi_dom_unlock(ep->dom);
	return rc;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fid;
	int rc = 0;

	switch (command) {
	case FI_ENABLE:
		cxlfi_dom_lock(ep->dom);
		if (!ep->av || (!ep->tx_cq && !ep->tx_cntr) ||
		    (!ep->rx_cq && !ep->rx_cntr))
			rc = -FI_ENOCQ;
		else if (!ep->enabled) {
			/* FI_RMA_EVENT with a remote counter bound: each
			 * access to our regions must pass through us to be
			 * counted (no direct RMA to them, mrtab.c) */
			ep->rma_events = ep->info &&
					 (ep->info->caps & FI_RMA_EVENT) &&
					 (ep->rwr_cntr || ep->rrd_cntr);
			rc = cxlfi_ep_publish(ep);
			if (!rc)
				rc = cxlfi_netpath_open(ep);
		}
		if (!rc)
			ep->enabled = true;
		cxlfi_dom_unlock(ep->dom);
		return rc;
	case FI_GETOPSFLAG: {
		uint64_t *f = arg;

		*f = (*f & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	}
	case FI_SETOPSFLAG: {
		uint64_t *f = arg;

		if (*f & FI_TRANSMIT)
			ep->tx_op_flags = *f & ~FI_TRANSMIT;
		else
			ep->rx_op_flags = *f & ~FI_RECV;
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = cxlfi_no_ops_open,
};

static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fid;
	ssize_t rc;

	cxlfi_dom_lock(ep->dom);
	rc = cxlfi_cancel(ep, context);
	cxlfi_dom_unlock(ep->dom);
	return rc;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fid;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV && *optlen >= sizeof(size_t)) {
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fid;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV && optlen == sizeof(size_t)) {
		ep->min_multi_recv = *(const size_t *)optval;
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static ssize_t ep_rx_size_left(struct fid_ep *ep)
{
	(void)ep;
	return 65536;
}

static ssize_t ep_tx_size_left(struct fid_ep *ep)
{
	(void)ep;
	return (ssize_t)cxlfi_params.ncells;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = cxlfi_no_tx_ctx,
	.rx_ctx = cxlfi_no_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fid;
	struct cxlfi_netaddr a = { 0 };
	struct cxl_pool_info pi;
	size_t n = *addrlen;
	int rc = 0;

	cxlfi_dom_lock(ep->dom);
	/* a name before fi_enable: publish now, the name must be stable;
	 * with FI_CXL_NET it includes the network link's */
	if (!ep->self.pool)
		rc = cxlfi_ep_publish(ep);
	if (!rc)
		rc = cxlfi_netpath_open(ep);
	cxlfi_dom_unlock(ep->dom);
	if (rc)
		return rc;
	cxl_pool_info(ep->dom->pool, &pi);
	a.a.magic = CXLFI_ADDR_MAGIC;
	a.a.version = 1;
	memcpy(a.a.pool_uuid, pi.uuid, sizeof(a.a.pool_uuid));
	a.a.host = cxl_pool_host_id(ep->dom->pool);
	a.a.index = ep->index;
	a.a.gen = ep->gen;
	if (ep->net) {
		a.a.reserved = CXLFI_ADDR_NET;
		a.a.pad = (uint32_t)ep->net->namelen;
		memcpy(a.net, ep->net->name, ep->net->namelen);
		/* the RMA endpoint's port after it, where it fits */
		if (ep->net->namelen + sizeof(ep->net->rma_port) <=
		    sizeof(a.net))
			memcpy(a.net + ep->net->namelen, &ep->net->rma_port,
			       sizeof(ep->net->rma_port));
	}
	*addrlen = cxlfi_addrlen();
	if (n < *addrlen)
		return -FI_ETOOSMALL;
	memcpy(addr, &a, *addrlen);
	return 0;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid;
	(void)addr;
	(void)addrlen;
	return -FI_ENOSYS;
}

static int ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep;
	(void)addr;
	(void)addrlen;
	return -FI_ENOSYS;
}

static int ep_connect(struct fid_ep *ep, const void *addr, const void *param,
		      size_t paramlen)
{
	(void)ep;
	(void)addr;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS; /* RDM: connectionless */
}

static int ep_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

static int ep_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	(void)ep;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int ep_reject(struct fid_pep *pep, fid_t handle, const void *param,
		     size_t paramlen)
{
	(void)pep;
	(void)handle;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int ep_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep;
	(void)flags;
	return -FI_ENOSYS;
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = ep_listen,
	.accept = ep_accept,
	.reject = ep_reject,
	.shutdown = ep_shutdown,
	.join = NULL,
};

/* The protocol's upcalls (cxlfi.h), wired once from here: the layer
 * that holds both ends. */
static pthread_once_t upcalls_once = PTHREAD_ONCE_INIT;

static void upcalls_set(void)
{
	cxlfi_up = (struct cxlfi_upcalls){
		.progress = cxlfi_progress,
		.peer_dead = cxlfi_peer_dead,
		.rx_broken = cxlfi_rx_broken,
		.rma_write_target = cxlfi_rma_write_target,
		.rma_read_request = cxlfi_rma_read_request,
		.rma_read_answer = cxlfi_rma_read_answer,
		.atomic_request = cxlfi_atomic_request,
		.rma_complete_rx = cxlfi_rma_complete_rx,
		.rma_fail_rx = cxlfi_rma_fail_rx,
		.rma_peer_dead = cxlfi_rma_peer_dead,
		.av_net_insert = cxlfi_netpath_av_insert,
	};
}

int cxlfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **out, void *context)
{
	struct cxlfi_domain *d = (struct cxlfi_domain *)domain;
	struct cxlfi_ep *ep;

	if (info && info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_ENOPROTOOPT;
	pthread_once(&upcalls_once, upcalls_set);
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = info ? fi_dupinfo(info) : NULL;
	ep->dom = d;
	ep->tx_op_flags = info && info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info && info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->directed = !info || !info->caps || (info->caps & FI_DIRECTED_RECV);

	ep->fid.fid.fclass = FI_CLASS_EP;
	ep->fid.fid.context = context;
	ep->fid.fid.ops = &ep_fi_ops;
	ep->fid.ops = &ep_ops;
	ep->fid.cm = &ep_cm_ops;
	ep->fid.msg = &cxlfi_msg_ops;
	ep->fid.tagged = &cxlfi_tagged_ops;
	ep->fid.rma = &cxlfi_rma_ops;
	ep->fid.atomic = &cxlfi_atomic_ops;
	cxlfi_dom_ref(d, 1);
	*out = &ep->fid;
	return 0;
}
