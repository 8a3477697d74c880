/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared setup for the provider tests: one endpoint per process, the peer's
 * address exchanged over pipes, CQ waiting with a deadline. */
#ifndef CXLMPI_FITEST_H
#define CXLMPI_FITEST_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "testutil.h"

struct fi {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *rxc;
	struct fid_ep *ep;
	fi_addr_t peer;
	int rank;
};

#define TRY(call)                                                          \
	do {                                                               \
		int rc_ = (int)(call);                                     \
		if (rc_) {                                                 \
			fprintf(stderr, "%s:%d: %s = %d (%s)\n", __FILE__, \
				__LINE__, #call, rc_, fi_strerror(-rc_));  \
			exit(3);                                           \
		}                                                          \
	} while (0)

/* Phase name printed when a wait times out. */
extern const char *fi_phase;
/* Capabilities fi_setup asks for besides messaging (e.g. FI_RMA). */
extern uint64_t fi_extra_caps;
/* Threading level fi_setup asks for (FI_THREAD_UNSPEC: the provider's
 * default, FI_THREAD_SAFE); fi_test_threading sets it from the command. */
extern enum fi_threading fi_threading;
/* --thread-domain 1: FI_THREAD_DOMAIN, as MPICH and Open MPI ask for it
 * (the provider then takes no domain lock). */
void fi_test_threading(int argc, char **argv);

/* Open everything for rank (also its CXL_HOST_ID) and exchange addresses. */
/* One endpoint on emulated host rank (CXL_HOST_ID), enabled: fabric,
 * domain, AV, CQ for both directions, a receive counter; caps besides
 * messaging as asked. */
void fi_test_open(struct fi *f, int rank, uint64_t caps);
void fi_setup(struct fi *f, int rank, int to_peer, int from_peer);
void fi_teardown(struct fi *f);
/* The same, closing n more counters bound to the endpoint. */
void fi_teardown_cntrs(struct fi *f, struct fid_cntr **cntrs, int n);
/* One completion (0) or error entry (-err, entry in *err); exits after
 * timeout_s seconds without either. */
int fi_wait_cq(struct fi *f, struct fi_cq_tagged_entry *e,
	       struct fi_cq_err_entry *err, fi_addr_t *src, int timeout_s);
/* Wait for n completions that must be failures of operations with a dead
 * peer: counts FI_EHOSTUNREACH sends and receives, and anything else. */
void fi_wait_unreachable(struct fi *f, int n, int *tx, int *rx, int *other);
/* Environment for a private pool in tp, in the given coherence mode. */
void fi_test_env(const struct tpool *tp, enum cxl_coh_mode mode);

#endif
