/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network link of an endpoint (net.c, docs/multipool.md): the
 * endpoint of a network provider (such as "tcp;ofi_rxm")
 * that carries the messages to peers outside our pool. We own its
 * completions and its receive queue through the peer API (peer_api.h):
 * it writes into our CQs and asks our matching for receive buffers.
 *
 * This file depends on libfabric only, so that a test can drive a link
 * with an owner of its own (tests/fabric/test_fi_netlink.c).
 */
#ifndef CXLFI_NET_H
#define CXLFI_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peer_api.h"

/* The longest network address an address of ours carries (docs/
 * multipool.md, "Routing": 64 bytes in all, MPICH's limit). */
#define CXLFI_NET_ADDR_MAX 24u

/* What the owner gives a link: the owner side of its CQs (tx and rx may
 * be the same) and of its receive queue. They must outlive the link. */
struct cxlfi_net_owner {
	struct fipeer_cq *tx_cq, *rx_cq;
	struct fipeer_srx *srx;
	/* only operations posted with FI_COMPLETION are reported (the CQs
	 * are bound with FI_SELECTIVE_COMPLETION) */
	bool selective;
};

struct cxlfi_net {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *tx_cq, *rx_cq; /* the peer's, opened with FI_PEER */
	struct fid_ep *srx;	      /* the peer's handle of our SRX */
	struct fid_ep *ep;
	uint8_t name[CXLFI_NET_ADDR_MAX];
	size_t namelen;
	/* a second endpoint of our own for RMA and atomics (netrma.c): its
	 * own AV, CQ and receive queue; its address is ours but for the
	 * port (rma_port, network order), so an IPv4 address of 16 bytes
	 * carries both (0: none, RMA refused) */
	struct fid_ep *rma_ep;
	struct fid_av *rma_av;
	struct fid_cq *rma_cq;
	uint16_t rma_port;
};

/* True when the libfabric that loaded us has the peer API layouts of
 * peer_api.h (2.3 or later); *version gets its fi_version(). */
bool cxlfi_net_version_ok(uint32_t *version);

/* Opens a link on the network provider named prov (a libfabric provider
 * name such as "tcp;ofi_rxm"). 0, or a negative fi_errno with why[]
 * naming the step, the provider and the fix. */
int cxlfi_net_open(const char *prov, const struct cxlfi_net_owner *owner,
		   struct cxlfi_net **out, char *why, size_t whylen);
void cxlfi_net_close(struct cxlfi_net *n);

/* A peer's network address (namelen bytes of its fi_getname) into the
 * link's AV under our fi_addr_t id: the network provider then reports
 * id as the source of what that peer sends. *net gets the address to
 * send to. */
int cxlfi_net_insert(struct cxlfi_net *n, const void *name, size_t namelen,
		     fi_addr_t id, fi_addr_t *net);

/* Progress: completions go to the owner's CQs, unexpected messages to
 * its receive queue. */
void cxlfi_net_progress(struct cxlfi_net *n);

/* The RMA endpoint's address of a peer whose message address is name
 * (namelen bytes) and whose RMA port is port: a copy of name with the
 * port replaced; false if name is not an IPv4 socket address. */
bool cxlfi_net_rma_name(const void *name, size_t namelen, uint16_t port,
			void *out);

#endif
