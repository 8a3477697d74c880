/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network link (net.h): one endpoint of the network provider per
 * endpoint of ours, in a fabric and domain of its own (a domain of
 * ofi_rxm takes one imported receive queue). Its CQs are opened with
 * FI_PEER around the owner's CQs, its receive queue is the owner's
 * (fi_srx_context with FI_PEER), and its AV maps each peer to the owner's
 * fi_addr_t (FI_AV_USER_ID), so nothing it reports needs translating.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "net.h"

/*
 * libfabric's flag for a provider that embeds another (include/ofi.h,
 * bit 60 from 1.17 to 2.6; efa finds shm with it): providers that
 * FI_PROVIDER excludes are still registered, hidden, and this flag finds
 * them. A job runs with FI_PROVIDER=cxl, which hides tcp.
 */
#define CXLFI_GETINFO_HIDDEN (1ULL << 60)

bool cxlfi_net_version_ok(uint32_t *version)
{
	uint32_t v = fi_version();

	if (version)
		*version = v;
	return FI_MAJOR(v) > FI_MAJOR(CXLFI_PEER_API_MIN) ||
	       (FI_MAJOR(v) == FI_MAJOR(CXLFI_PEER_API_MIN) &&
		FI_MINOR(v) >= FI_MINOR(CXLFI_PEER_API_MIN));
}

static struct fi_info *net_hints(const char *prov)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->fabric_attr->prov_name = strdup(prov);
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	h->caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE |
		  FI_DIRECTED_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM;
	h->ep_attr->type = FI_EP_RDM;
	/* The owner serialises every call into the link (its domain lock)
	 * and drives its progress, data and control alike, from its own
	 * progress calls. Manual progress must be asked for, as MPICH does
	 * for its own: rxm otherwise returns FI_THREAD_SAFE whatever the
	 * threading hint, and then takes a mutex in every progress call and
	 * every send. */
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->caps =
		FI_PEER | FI_AV_USER_ID | FI_LOCAL_COMM | FI_REMOTE_COMM;
	/* no mode bit we would have to honour: no FI_MR_LOCAL, no
	 * FI_CONTEXT; messages only (RMA to network peers is refused) */
	h->domain_attr->mr_mode = 0;
	h->mode = 0;
	/* MPI's matching order needs send-after-send per peer */
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	return h;
}

#define STEP(call, what)                                                      \
	do {                                                                  \
		rc = (call);                                                  \
		if (rc) {                                                     \
			snprintf(why, whylen,                                 \
				 "%s of network provider \"%s\" failed: %s",  \
				 what, prov, fi_strerror(rc < 0 ? -rc : rc)); \
			goto fail;                                            \
		}                                                             \
	} while (0)

bool cxlfi_net_rma_name(const void *name, size_t namelen, uint16_t port,
			void *out)
{
	struct sockaddr_in a;

	if (namelen != sizeof(a) || !port)
		return false;
	memcpy(&a, name, sizeof(a));
	if (a.sin_family != AF_INET)
		return false;
	a.sin_port = port;
	memcpy(out, &a, sizeof(a));
	return true;
}

/* The RMA endpoint: on the same domain, with an AV, a CQ and a receive
 * queue of its own. Where it cannot be opened, or its address is not our
 * message address with another port, the link has none (rma_port 0) and
 * RMA to network peers is refused (netrma.c). */
static void rma_open(struct cxlfi_net *n)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct sockaddr_in me, it;
	size_t len = sizeof(it);

	if (n->namelen != sizeof(me))
		return;
	memcpy(&me, n->name, sizeof(me));
	if (fi_av_open(n->domain, &ava, &n->rma_av, NULL) ||
	    fi_cq_open(n->domain, &cqa, &n->rma_cq, NULL) ||
	    fi_endpoint(n->domain, n->info, &n->rma_ep, NULL) ||
	    fi_ep_bind(n->rma_ep, &n->rma_av->fid, 0) ||
	    fi_ep_bind(n->rma_ep, &n->rma_cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(n->rma_ep) || fi_getname(&n->rma_ep->fid, &it, &len) ||
	    len != sizeof(it) || me.sin_family != AF_INET ||
	    it.sin_family != AF_INET ||
	    me.sin_addr.s_addr != it.sin_addr.s_addr)
		return;
	n->rma_port = it.sin_port;
}

int cxlfi_net_open(const char *prov, const struct cxlfi_net_owner *owner,
		   struct cxlfi_net **out, char *why, size_t whylen)
{
	struct fipeer_cq_context txc = { sizeof(txc), owner->tx_cq };
	struct fipeer_cq_context rxc = { sizeof(rxc), owner->rx_cq };
	struct fipeer_srx_context srxc = { sizeof(srxc), owner->srx };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .flags = FI_PEER };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_rx_attr rxa = { .op_flags = FI_PEER };
	struct fi_info *hints;
	struct cxlfi_net *n;
	uint64_t sel;
	uint32_t v;
	int rc;

	*out = NULL;
	if (!cxlfi_net_version_ok(&v)) {
		snprintf(why, whylen,
			 "network peers need libfabric %u.%u or later for "
			 "its peer API; the libfabric loaded is %u.%u "
			 "(set LD_LIBRARY_PATH to a newer one, e.g. the one "
			 "of the MPICH or Open MPI wheel, or run pool-only)",
			 FI_MAJOR(CXLFI_PEER_API_MIN),
			 FI_MINOR(CXLFI_PEER_API_MIN), FI_MAJOR(v),
			 FI_MINOR(v));
		return -FI_ENOSYS;
	}
	n = calloc(1, sizeof(*n));
	hints = net_hints(prov);
	if (!n || !hints) {
		free(n);
		fi_freeinfo(hints);
		snprintf(why, whylen, "out of memory opening the network link");
		return -FI_ENOMEM;
	}
	rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL,
			NULL, CXLFI_GETINFO_HIDDEN, hints, &n->info);
	if (rc == -FI_ENODATA) {
		/* a provider without manual progress: its own model (the
		 * same semantics, only its locks and threads cost more) */
		hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
		hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
		rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
				NULL, NULL, CXLFI_GETINFO_HIDDEN, hints,
				&n->info);
	}
	fi_freeinfo(hints);
	STEP(rc, "fi_getinfo (RDM, tagged, FI_PEER, FI_AV_USER_ID)");
	STEP(fi_fabric(n->info->fabric_attr, &n->fabric, NULL), "fi_fabric");
	STEP(fi_domain(n->fabric, n->info, &n->domain, NULL), "fi_domain");
	STEP(fi_av_open(n->domain, &ava, &n->av, NULL), "fi_av_open");
	STEP(fi_cq_open(n->domain, &cqa, &n->tx_cq, &txc),
	     "fi_cq_open (FI_PEER, transmit)");
	if (owner->rx_cq == owner->tx_cq) {
		n->rx_cq = n->tx_cq;
	} else {
		STEP(fi_cq_open(n->domain, &cqa, &n->rx_cq, &rxc),
		     "fi_cq_open (FI_PEER, receive)");
	}
	STEP(fi_srx_context(n->domain, &rxa, &n->srx, &srxc),
	     "fi_srx_context (FI_PEER)");
	STEP(fi_endpoint(n->domain, n->info, &n->ep, NULL), "fi_endpoint");
	STEP(fi_ep_bind(n->ep, &n->av->fid, 0), "binding the AV");
	sel = owner->selective ? FI_SELECTIVE_COMPLETION : 0;
	if (n->rx_cq == n->tx_cq) {
		STEP(fi_ep_bind(n->ep, &n->tx_cq->fid,
				FI_TRANSMIT | FI_RECV | sel),
		     "binding the CQ");
	} else {
		STEP(fi_ep_bind(n->ep, &n->tx_cq->fid, FI_TRANSMIT | sel),
		     "binding the transmit CQ");
		STEP(fi_ep_bind(n->ep, &n->rx_cq->fid, FI_RECV | sel),
		     "binding the receive CQ");
	}
	STEP(fi_ep_bind(n->ep, &n->srx->fid, 0), "binding the receive queue");
	STEP(fi_enable(n->ep), "fi_enable");
	n->namelen = sizeof(n->name);
	rc = fi_getname(&n->ep->fid, n->name, &n->namelen);
	if (rc == -FI_ETOOSMALL || (!rc && n->namelen > sizeof(n->name))) {
		snprintf(why, whylen,
			 "network provider \"%s\" has addresses of %zu bytes; "
			 "an address of ours carries at most %u (choose "
			 "another network provider)",
			 prov, n->namelen, CXLFI_NET_ADDR_MAX);
		rc = -FI_ETOOSMALL;
		goto fail;
	}
	STEP(rc, "fi_getname");
	rma_open(n);
	*out = n;
	return 0;
fail:
	cxlfi_net_close(n);
	return rc < 0 ? rc : -rc;
}

#undef STEP

#define FID(p) ((p) ? &(p)->fid : NULL)

void cxlfi_net_close(struct cxlfi_net *n)
{
	if (!n)
		return;
	/* endpoints first: they hold the CQs, the AVs and the receive
	 * queue; the domain and fabric last */
	struct fid *order[] = {
		FID(n->rma_ep), FID(n->rma_cq),
		FID(n->rma_av), FID(n->ep),
		FID(n->srx),	n->rx_cq != n->tx_cq ? FID(n->rx_cq) : NULL,
		FID(n->tx_cq),	FID(n->av),
		FID(n->domain), FID(n->fabric),
	};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (order[i])
			fi_close(order[i]);
	if (n->info)
		fi_freeinfo(n->info);
	free(n);
}

int cxlfi_net_insert(struct cxlfi_net *n, const void *name, size_t namelen,
		     fi_addr_t id, fi_addr_t *net)
{
	fi_addr_t a = id; /* in: our id; out: the link's address */
	int rc;

	if (!namelen || namelen > CXLFI_NET_ADDR_MAX)
		return -FI_EINVAL;
	rc = fi_av_insert(n->av, name, 1, &a, FI_AV_USER_ID, NULL);
	if (rc != 1)
		return rc < 0 ? rc : -FI_EINVAL;
	*net = a;
	return 0;
}

void cxlfi_net_progress(struct cxlfi_net *n)
{
	struct fi_cq_tagged_entry e;

	/* Completions go straight to the owner (FI_PEER): this read only
	 * drives the provider's progress and returns nothing. One CQ is
	 * enough: a read progresses every endpoint bound to the CQ, sends
	 * and receives alike (the util CQ's progress), and a second read
	 * would poll the sockets twice per call. */
	(void)fi_cq_read(n->tx_cq, &e, 0);
}
