/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the provider's pool structures, written by a hostile
 * peer. Nothing a peer puts in the pool may crash endpoint A, hang it, or
 * make it touch memory outside the pool mapping and its own buffers.
 *
 * Each input opens two endpoints in this process through the provider's
 * own entry points (no libfabric core loading involved): A, the victim,
 * and B, whose pool structures the input then controls. B first sends A
 * a small and a large message, so that the channel B -> A and B's
 * transfer area exist, and registers a pool region, so that its region
 * table has an entry; A registers a private region (key 9), the target
 * of atomic requests the input sends. Then the input is a list of records:
 *
 *   0 [op u16][len u16][bytes]   a raw message on the channel B -> A:
 *                                any op code, flags and payload
 *   1 [off u32][len u8][bytes]   patch B's transfer area
 *   2 [off u16][len u8][bytes]   patch B's endpoint object
 *   3 [off u16][len u8][bytes]   patch B's region table
 *   4 [off u16][len u8][bytes]   patch A's inbox (lines B announces in)
 *   5 [len u32][tag u64][f u8]   A posts a receive (tagged or not, any
 *                                source or B, possibly multi-receive)
 *   6 [n u8]                     A and B progress n times
 *   7 [w u8][key u64][addr u64][len u32]  A reads or writes B's memory,
 *                                or (w & 4) does an atomic on it
 *
 * and at the end both progress a while, then close.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cxlfi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
const char *__asan_default_options(void);
struct fi_provider *fi_prov_ini(void); /* prov.c */

/* A hostile total length must make malloc fail, not abort the process. */
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

#define MAX_RECV (1u << 20)
#define REGION (64u << 10)

static struct fi_provider *prov;
static struct fi_info *info;
static uint8_t *bufs;	    /* receive buffers of A */
static uint8_t *local;	    /* A's RMA source and destination */
static uint64_t a_mem[512]; /* A's registered region (key 9) */
static uint64_t a_res[16];  /* results of A's atomics: written later */

struct node {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "fuzz_fabric setup: %s: %d (%s)\n", what, rc,
		fi_strerror(-rc));
	exit(1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char dir[64], pool[96];
	struct fi_info *hints;
	int rc;

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/dev/shm/cxlfuzzfi-%d", (int)getpid());
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	mkdir(dir, 0700);
	setenv("CXL_POOL", pool, 1);
	setenv("CXL_RUNDIR", dir, 1);
	setenv("CXL_POOL_SIZE", "64M", 1);
	setenv("CXL_ARENA_CAPACITY", "1024", 1);
	setenv("CXL_COHERENCE", "coherent", 1);
	setenv("CXL_JOB", "fuzz", 1);
	setenv("FI_CXL_MAX_EPS", "8", 1);
	setenv("FI_CXL_INBOX_POLL", "1", 1);
	setenv("FI_CXL_UNEXP_LIMIT", "4194304", 1);
	setenv("FI_LOG_LEVEL", "none", 1);
	prov = fi_prov_ini();
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps =
		FI_TAGGED | FI_MSG | FI_MULTI_RECV | FI_DIRECTED_RECV | FI_RMA;
	hints->domain_attr->mr_mode = 0;
	if ((rc = prov->getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info)))
		die("getinfo", rc);
	fi_freeinfo(hints);
	bufs = malloc(4 * MAX_RECV);
	local = malloc(MAX_RECV);
	if (!bufs || !local)
		die("malloc", -FI_ENOMEM);
	return 0;
}

static int open_node(struct node *n)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096 };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };

	if (prov->fabric(info->fabric_attr, &n->fabric, NULL) ||
	    fi_domain(n->fabric, info, &n->domain, NULL) ||
	    fi_av_open(n->domain, &ava, &n->av, NULL) ||
	    fi_cq_open(n->domain, &cqa, &n->cq, NULL) ||
	    fi_endpoint(n->domain, info, &n->ep, NULL) ||
	    fi_ep_bind(n->ep, &n->av->fid, 0) ||
	    fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(n->ep))
		return -1;
	return 0;
}

static void close_node(struct node *n)
{
	if (n->ep)
		fi_close(&n->ep->fid);
	if (n->cq)
		fi_close(&n->cq->fid);
	if (n->av)
		fi_close(&n->av->fid);
	if (n->domain)
		fi_close(&n->domain->fid);
	if (n->fabric)
		fi_close(&n->fabric->fid);
}

static void drain_cq(struct node *n)
{
	struct fi_cq_tagged_entry e[8];
	struct fi_cq_err_entry err;

	for (int k = 0; k < 4; k++) {
		ssize_t r = fi_cq_read(n->cq, e, 8);

		if (r == -FI_EAVAIL)
			fi_cq_readerr(n->cq, &err, 0);
		else if (r <= 0)
			break;
	}
}

/* Bounded reads from the input. */
struct in {
	const uint8_t *p;
	size_t n;
};

static bool take(struct in *in, void *dst, size_t k)
{
	if (in->n < k)
		return false;
	memcpy(dst, in->p, k);
	in->p += k;
	in->n -= k;
	return true;
}

static void patch(struct in *in, uint8_t *base, size_t size, size_t off)
{
	uint8_t len;

	if (!take(in, &len, 1) || !size)
		return;
	off %= size;
	if (len > size - off)
		len = (uint8_t)(size - off);
	if (len > in->n)
		len = (uint8_t)in->n;
	memcpy(base + off, in->p, len);
	in->p += len;
	in->n -= len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct node a = { 0 }, b = { 0 };
	struct cxlfi_ep *ea, *eb;
	struct in in = { data, size };
	char name[64];
	size_t len = sizeof(name), nrecv = 0;
	struct fid_mr *mr = NULL, *amr = NULL;
	struct cxl_obj region = { 0 };
	cxl_ring *ring;
	static uint8_t big[8192];
	uint8_t kind;

	if (open_node(&a) || open_node(&b))
		goto out;
	ea = (struct cxlfi_ep *)a.ep;
	eb = (struct cxlfi_ep *)b.ep;
	/* each knows the other */
	if (fi_getname(&b.ep->fid, name, &len) ||
	    fi_av_insert(a.av, name, 1, &a.peer, 0, NULL) != 1)
		goto out;
	len = sizeof(name);
	if (fi_getname(&a.ep->fid, name, &len) ||
	    fi_av_insert(b.av, name, 1, &b.peer, 0, NULL) != 1)
		goto out;
	/* B's channel to A, its transfer area and a pool region of B */
	if (fi_tsend(b.ep, big, 8, NULL, b.peer, 1, NULL) ||
	    fi_tsend(b.ep, big, sizeof(big), NULL, b.peer, 2, NULL))
		goto out;
	if (cxl_obj_create(eb->dom->pool, "fuzz.region", REGION, 0, &region) ==
	    CXL_OK)
		fi_mr_reg(b.domain, region.ptr, REGION,
			  FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 7, 0, &mr, NULL);
	if (!eb->peers[ea->index] || !(ring = eb->peers[ea->index]->tx))
		goto out;
	if (fi_mr_reg(a.domain, a_mem, sizeof(a_mem),
		      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 9, 0, &amr, NULL))
		amr = NULL;

	while (take(&in, &kind, 1)) {
		switch (kind % 8) {
		case 0: { /* a raw message B -> A */
			uint16_t op, n;
			uint8_t msg[512];

			if (!take(&in, &op, 2) || !take(&in, &n, 2))
				break;
			n %= sizeof(msg);
			if (n > in.n)
				n = (uint16_t)in.n;
			take(&in, msg, n);
			/* as B would: with the ring's own framing */
			if (n <= cxl_ring_max_msg(ring))
				cxl_ring_send(ring, msg, n, op, 0);
			break;
		}
		case 1: {
			uint32_t off;

			if (take(&in, &off, 4) && eb->xa.pool)
				patch(&in, eb->xa.ptr, eb->xa.size, off);
			break;
		}
		case 2: {
			uint16_t off;

			if (take(&in, &off, 2))
				patch(&in, eb->self.ptr, eb->self.size, off);
			break;
		}
		case 3: {
			uint16_t off;

			if (take(&in, &off, 2) && eb->mrtab.pool)
				patch(&in, eb->mrtab.ptr, eb->mrtab.size, off);
			break;
		}
		case 4: {
			uint16_t off;

			if (take(&in, &off, 2))
				patch(&in, (uint8_t *)ea->inbox,
				      cxlfi_params.max_eps * CXL_LINE, off);
			break;
		}
		case 5: { /* A posts a receive */
			uint32_t n;
			uint64_t tag;
			uint8_t f;
			uint8_t *p;

			if (!take(&in, &n, 4) || !take(&in, &tag, 8) ||
			    !take(&in, &f, 1) || nrecv >= 64)
				break;
			n %= MAX_RECV;
			p = bufs + (nrecv++ % 4) * MAX_RECV;
			if (f & 1) {
				fi_trecv(a.ep, p, n, NULL,
					 f & 2 ? a.peer : FI_ADDR_UNSPEC, tag,
					 f & 4 ? ~0ull : 0, NULL);
			} else if (f & 8) {
				struct iovec iov = { p, n };
				struct fi_msg m = { .msg_iov = &iov,
						    .iov_count = 1,
						    .addr = FI_ADDR_UNSPEC };

				fi_recvmsg(a.ep, &m, FI_MULTI_RECV);
			} else {
				fi_recv(a.ep, p, n, NULL, FI_ADDR_UNSPEC, NULL);
			}
			break;
		}
		case 6: {
			uint8_t n;

			if (!take(&in, &n, 1))
				break;
			for (unsigned k = 0; k < (n & 15u) + 1; k++) {
				drain_cq(&a);
				drain_cq(&b);
			}
			break;
		}
		case 7: { /* RMA from A to B: direct or through the channel */
			uint8_t w;
			uint64_t key, addr;
			uint32_t n;

			if (!take(&in, &w, 1) || !take(&in, &key, 8) ||
			    !take(&in, &addr, 8) || !take(&in, &n, 4))
				break;
			n %= MAX_RECV;
			if (w & 4) { /* an atomic: fetch-add or compare */
				uint64_t *res = a_res;

				if (w & 8)
					fi_compare_atomic(
						a.ep, local, n % 8 + 1, NULL,
						local + 64, NULL, res, NULL,
						a.peer, addr, w & 2 ? 7 : key,
						FI_UINT64, FI_CSWAP, NULL);
				else
					fi_fetch_atomic(
						a.ep, local, n % 16 + 1, NULL,
						res, NULL, a.peer, addr,
						w & 2 ? 7 : key,
						(enum fi_datatype)(w >> 4),
						FI_SUM, NULL);
				break;
			}
			if (w & 1)
				fi_write(a.ep, local, n, NULL, a.peer, addr,
					 w & 2 ? 7 : key, NULL);
			else
				fi_read(a.ep, local, n, NULL, a.peer, addr,
					w & 2 ? 7 : key, NULL);
			break;
		}
		}
	}
	for (int k = 0; k < 32; k++) {
		drain_cq(&a);
		drain_cq(&b);
	}
out:
	if (mr)
		fi_close(&mr->fid);
	if (amr)
		fi_close(&amr->fid);
	close_node(&a);
	close_node(&b);
	if (region.pool) {
		cxl_pool *pool = region.pool;

		cxl_obj_close(&region);
		cxl_obj_destroy(pool, "fuzz.region");
	}
	return 0;
}
