/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The part of libfabric's peer API (fi_peer(3), libfabric 2.3 and later)
 * that the provider uses to own a network provider (net.c,
 * docs/multipool.md). The installed headers may be older (Debian's 1.17
 * declares a different receive-entry layout in fi_ext.h), so the layouts
 * are declared here under names of our own; each struct has exactly the
 * members, order and types that fi_peer(3) gives its counterpart, which
 * is what the peer provider, built with the 2.3+ headers, reads and
 * writes. The run-time gate (cxlfi_net_version_ok) keeps them away from
 * an older libfabric.
 */
#ifndef CXLFI_PEER_API_H
#define CXLFI_PEER_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

/* libfabric from which these layouts hold */
#define CXLFI_PEER_API_MIN FI_VERSION(2, 3)

/* struct fid_peer_cq, fi_ops_cq_owner, fi_peer_cq_context */
struct fipeer_cq;
struct fipeer_cq_owner_ops {
	size_t size;
	ssize_t (*write)(struct fipeer_cq *cq, void *context, uint64_t flags,
			 size_t len, void *buf, uint64_t data, uint64_t tag,
			 fi_addr_t src);
	ssize_t (*writeerr)(struct fipeer_cq *cq,
			    const struct fi_cq_err_entry *err);
};
struct fipeer_cq {
	struct fid fid;
	struct fipeer_cq_owner_ops *owner_ops;
};
struct fipeer_cq_context {
	size_t size;
	struct fipeer_cq *cq;
};

/* struct fid_peer_cntr, fi_ops_cntr_owner, fi_peer_cntr_context */
struct fipeer_cntr;
struct fipeer_cntr_owner_ops {
	size_t size;
	void (*inc)(struct fipeer_cntr *cntr);
	void (*incerr)(struct fipeer_cntr *cntr);
};
struct fipeer_cntr {
	struct fid fid;
	struct fipeer_cntr_owner_ops *owner_ops;
};
struct fipeer_cntr_context {
	size_t size;
	struct fipeer_cntr *cntr;
};

/* struct fi_peer_rx_entry (2.3+: no list links at its head) */
struct fipeer_srx;
struct fipeer_rx_entry {
	struct fipeer_srx *srx;
	fi_addr_t addr;
	size_t msg_size;
	uint64_t tag;
	uint64_t cq_data;
	uint64_t flags;
	void *context;
	size_t count;
	void **desc;
	void *peer_context;  /* the peer's: its state of the message */
	void *owner_context; /* ours */
	struct iovec *iov;
};

/* struct fi_peer_match_attr */
struct fipeer_match_attr {
	fi_addr_t addr;
	size_t msg_size;
	uint64_t tag;
};

/* struct fi_ops_srx_owner: called by the peer */
struct fipeer_srx_owner_ops {
	size_t size;
	int (*get_msg)(struct fipeer_srx *srx, struct fipeer_match_attr *attr,
		       struct fipeer_rx_entry **entry);
	int (*get_tag)(struct fipeer_srx *srx, struct fipeer_match_attr *attr,
		       struct fipeer_rx_entry **entry);
	int (*queue_msg)(struct fipeer_rx_entry *entry);
	int (*queue_tag)(struct fipeer_rx_entry *entry);
	void (*foreach_unspec_addr)(
		struct fipeer_srx *srx,
		fi_addr_t (*get_addr)(struct fipeer_rx_entry *entry));
	void (*free_entry)(struct fipeer_rx_entry *entry);
};

/* struct fi_ops_srx_peer: filled in by the peer, called by us */
struct fipeer_srx_peer_ops {
	size_t size;
	int (*start_msg)(struct fipeer_rx_entry *entry);
	int (*start_tag)(struct fipeer_rx_entry *entry);
	int (*discard_msg)(struct fipeer_rx_entry *entry);
	int (*discard_tag)(struct fipeer_rx_entry *entry);
};

/* struct fid_peer_srx, fi_peer_srx_context */
struct fipeer_srx {
	struct fid_ep ep_fid;
	struct fipeer_srx_owner_ops *owner_ops;
	struct fipeer_srx_peer_ops *peer_ops;
};
struct fipeer_srx_context {
	size_t size;
	struct fipeer_srx *srx;
};

#endif
