/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pool footprint of the cxl provider: N endpoints (one process, through
 * the libfabric API), every endpoint sends one message to every other, so
 * all N(N-1) channels exist; then every endpoint sends one 4 KiB message
 * (FI_CXL_BULK_MIN or more, default 1 KiB) to the next, so each creates
 * its transfer area. The pool's heap use is read from the arena before
 * and after each step. Prints one line per N.
 *
 *   fabric_footprint N [N...]     (CXL_POOL etc. from the environment;
 *                                  FI_PROVIDER_PATH must reach libcxl-fi.so)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "cxlshm/cxlshm.h"

#define TRY(call)                                                     \
	do {                                                          \
		int rc_ = (int)(call);                                \
		if (rc_) {                                            \
			fprintf(stderr, "%s = %d (%s)\n", #call, rc_, \
				fi_strerror(-rc_));                   \
			exit(1);                                      \
		}                                                     \
	} while (0)

static uint64_t heap_used(cxl_pool *p)
{
	struct cxl_arena_stat st;

	if (cxl_arena_stat(p, &st)) {
		fprintf(stderr, "arena stat: %s\n", cxl_errmsg());
		exit(1);
	}
	return st.heap_size - st.heap_free;
}

static void measure(cxl_pool *pool, struct fi_info *info, int n)
{
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep **ep = calloc((size_t)n, sizeof(*ep));
	fi_addr_t *fa = calloc((size_t)n, sizeof(*fa));
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_CONTEXT,
				  .size = (size_t)n * n + 16 };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	uint64_t before = heap_used(pool), after_eps, after, after_xa;
	static char big[4096];
	char c = 'x';

	TRY(fi_fabric(info->fabric_attr, &fab, NULL));
	TRY(fi_domain(fab, info, &dom, NULL));
	TRY(fi_av_open(dom, &ava, &av, NULL));
	TRY(fi_cq_open(dom, &cqa, &cq, NULL));
	for (int i = 0; i < n; i++) {
		char name[64];
		size_t len = sizeof(name);

		TRY(fi_endpoint(dom, info, &ep[i], NULL));
		TRY(fi_ep_bind(ep[i], &av->fid, 0));
		TRY(fi_ep_bind(ep[i], &cq->fid, FI_TRANSMIT | FI_RECV));
		TRY(fi_enable(ep[i]));
		TRY(fi_getname(&ep[i]->fid, name, &len));
		if (fi_av_insert(av, name, 1, &fa[i], 0, NULL) != 1)
			exit(1);
	}
	after_eps = heap_used(pool);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j)
				TRY(fi_inject(ep[i], &c, 1, fa[j]));
	after = heap_used(pool);
	for (int i = 0; n > 1 && i < n; i++)
		TRY(fi_send(ep[i], big, sizeof(big), NULL, fa[(i + 1) % n],
			    NULL));
	after_xa = heap_used(pool);
	printf("endpoints %4d  channels %6d  endpoint objects %10.1f KiB  "
	       "channels %10.1f MiB  per pair %.1f KiB  transfer areas "
	       "%8.1f MiB  total %10.1f MiB\n",
	       n, n * (n - 1), (double)(after_eps - before) / 1024,
	       (double)(after - after_eps) / 1048576,
	       n > 1 ? (double)(after - after_eps) / (n * (n - 1)) / 1024 : 0,
	       (double)(after_xa - after) / 1048576,
	       (double)(after_xa - before) / 1048576);
	fflush(stdout);
	for (int i = 0; i < n; i++)
		TRY(fi_close(&ep[i]->fid));
	TRY(fi_close(&cq->fid));
	TRY(fi_close(&av->fid));
	TRY(fi_close(&dom->fid));
	TRY(fi_close(&fab->fid));
	free(ep);
	free(fa);
}

int main(int argc, char **argv)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	cxl_pool *pool;

	if (argc < 2) {
		fprintf(stderr, "usage: fabric_footprint N [N...]\n");
		return 2;
	}
	if (cxl_pool_attach_env(&pool)) {
		fprintf(stderr, "fabric_footprint: %s\n", cxl_errmsg());
		return 1;
	}
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("cxl");
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	for (int a = 1; a < argc; a++)
		measure(pool, info, atoi(argv[a]));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	cxl_pool_detach(pool);
	return 0;
}
