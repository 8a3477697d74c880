/* SPDX-License-Identifier: BSD-3-Clause */
#include "fitest.h"

#include <string.h>
#include <unistd.h>

void fi_test_open(struct fi *f, int rank, uint64_t caps)
{
	char host[16];
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };

	/* each rank is its own emulated host */
	snprintf(host, sizeof(host), "%d", rank);
	setenv("CXL_HOST_ID", host, 1);
	f->rank = rank;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_SOURCE | caps;
	hints->domain_attr->threading = fi_threading;
	hints->fabric_attr->prov_name = strdup("cxl");
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &f->info));
	fi_freeinfo(hints);
	/* the level asked for is the level granted */
	CHECK(f->info->domain_attr->threading ==
	      (fi_threading == FI_THREAD_UNSPEC ? FI_THREAD_SAFE
						: fi_threading));
	TRY(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	TRY(fi_domain(f->fabric, f->info, &f->domain, NULL));
	TRY(fi_av_open(f->domain, &ava, &f->av, NULL));
	TRY(fi_cq_open(f->domain, &cqa, &f->cq, NULL));
	TRY(fi_cntr_open(f->domain, &ca, &f->rxc, NULL));
	TRY(fi_endpoint(f->domain, f->info, &f->ep, NULL));
	TRY(fi_ep_bind(f->ep, &f->av->fid, 0));
	TRY(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_ep_bind(f->ep, &f->rxc->fid, FI_RECV));
	TRY(fi_enable(f->ep));
}

void fi_setup(struct fi *f, int rank, int to_peer, int from_peer)
{
	char name[64], peer[64];
	size_t len = sizeof(name);

	fi_test_open(f, rank, fi_extra_caps);
	/* fi_getname sizing: too small reports the size */
	{
		size_t small = 4;

		CHECK(fi_getname(&f->ep->fid, name, &small) == -FI_ETOOSMALL);
		CHECK(small > 4 && small <= sizeof(name));
	}
	TRY(fi_getname(&f->ep->fid, name, &len));
	REQUIRE(write(to_peer, &len, sizeof(len)) == sizeof(len));
	REQUIRE(write(to_peer, name, len) == (ssize_t)len);
	REQUIRE(read(from_peer, &len, sizeof(len)) == sizeof(len));
	REQUIRE(read(from_peer, peer, len) == (ssize_t)len);
	CHECK(fi_av_insert(f->av, peer, 1, &f->peer, 0, NULL) == 1);
	/* an address of another pool or format is refused */
	{
		char bogus[64];
		fi_addr_t fa;

		memcpy(bogus, peer, len);
		bogus[8] ^= 0x5a; /* the pool uuid */
		CHECK(fi_av_insert(f->av, bogus, 1, &fa, 0, NULL) == 0);
		CHECK(fa == FI_ADDR_NOTAVAIL);
	}
}

void fi_teardown(struct fi *f)
{
	fi_teardown_cntrs(f, NULL, 0);
}

void fi_teardown_cntrs(struct fi *f, struct fid_cntr **cntrs, int n)
{
	TRY(fi_close(&f->ep->fid));
	/* counters close only after the endpoint they are bound to */
	for (int i = 0; i < n; i++)
		TRY(fi_close(&cntrs[i]->fid));
	TRY(fi_close(&f->rxc->fid));
	TRY(fi_close(&f->cq->fid));
	TRY(fi_close(&f->av->fid));
	TRY(fi_close(&f->domain->fid));
	TRY(fi_close(&f->fabric->fid));
	fi_freeinfo(f->info);
}

const char *fi_phase = "setup";
uint64_t fi_extra_caps;
enum fi_threading fi_threading = FI_THREAD_UNSPEC;

void fi_test_threading(int argc, char **argv)
{
	if (targ_long(argc, argv, "--thread-domain", 0))
		fi_threading = FI_THREAD_DOMAIN;
}

int fi_wait_cq(struct fi *f, struct fi_cq_tagged_entry *e,
	       struct fi_cq_err_entry *err, fi_addr_t *src, int timeout_s)
{
	uint64_t t0 = cxl_now_ns();

	for (;;) {
		ssize_t n = fi_cq_readfrom(f->cq, e, 1, src);

		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			REQUIRE(fi_cq_readerr(f->cq, err, 0) == 1);
			return -err->err;
		}
		REQUIRE(n == -FI_EAGAIN);
		if (cxl_now_ns() - t0 > (uint64_t)timeout_s * 1000000000ull) {
			fprintf(stderr, "rank %d: no completion in %d s (%s)\n",
				f->rank, timeout_s, fi_phase);
			exit(4);
		}
	}
}

void fi_wait_unreachable(struct fi *f, int n, int *tx, int *rx, int *other)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	*tx = *rx = *other = 0;
	while (*tx + *rx + *other < n) {
		int rc = fi_wait_cq(f, &e, &err, NULL, 30);

		if (rc == -FI_EHOSTUNREACH && (err.flags & FI_SEND))
			(*tx)++;
		else if (rc == -FI_EHOSTUNREACH && (err.flags & FI_RECV))
			(*rx)++;
		else
			(*other)++;
	}
}

void fi_test_env(const struct tpool *tp, enum cxl_coh_mode mode)
{
	setenv("CXL_POOL", tp->path, 1);
	setenv("CXL_RUNDIR", tp->dir, 1);
	setenv("CXL_POOL_SIZE", "64M", 1);
	setenv("CXL_ARENA_CAPACITY", "4096", 1);
	setenv("CXL_MAX_PROCS", "64", 1);
	setenv("CXL_MAX_HOSTS", "16", 1);
	setenv("CXL_COHERENCE", cxl_coh_mode_name(mode), 1);
	setenv("FI_CXL_INBOX_POLL", "8", 1);
}
