/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Addresses that fi_getinfo hands out before an endpoint exists
 * (docs/fabric.md, "Addresses"):
 *  - the local address: this pool and host, no endpoint yet
 *    (CXLFI_ADDR_ANY); an endpoint opened with it takes a free index;
 *  - a service address: fi_getinfo(node, service) names an endpoint by
 *    its service (or, without one, its node) string. The address carries
 *    a 64-bit hash of the name (CXLFI_ADDR_NAMED). An endpoint opened
 *    with it as source claims the pool object "cxlfi.svc.<hash>", one
 *    line that says which endpoint index and generation answer to the
 *    name; an AV resolves a service address through that object when it
 *    is inserted. So a client that knows only the server's service (as
 *    libfabric's fabtests do) reaches it without an out-of-band exchange.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cxlfi.h"

bool cxlfi_ep_current(cxl_pool *pool, uint64_t index, uint64_t gen)
{
	struct cxl_obj o;
	char name[64];
	bool cur = false;

	if (index >= cxlfi_params.max_eps)
		return false;
	snprintf(name, sizeof(name), "cxlfi.ep.%llu",
		 (unsigned long long)index);
	if (cxl_obj_open(pool, name, &o))
		return false;
	if (o.size >= cxlfi_ep_obj_size()) {
		const uint64_t *hdr = o.ptr;

		/* its owner wrote the header: read it fresh */
		cxl_inval(pool, hdr, CXL_LINE);
		cur = hdr[CXLFI_HDR_MAGIC] == CXLFI_EP_MAGIC &&
		      hdr[CXLFI_HDR_GEN] == gen;
	}
	cxl_obj_close(&o);
	return cur;
}

/* Words of the service object's line (written by its owner only). */
enum {
	SVC_MAGIC,
	SVC_INDEX,
	SVC_GEN,
	SVC_HOST,
	SVC_PID,
	SVC_HASH
};
#define CXLFI_SVC_MAGIC 0x4356535f4c584346ull /* "FCXL_SVC" */

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h ? h : 1;
}

static void addr_base(cxl_pool *pool, struct cxlfi_addr *a)
{
	struct cxl_pool_info pi;

	memset(a, 0, sizeof(*a));
	cxl_pool_info(pool, &pi);
	a->magic = CXLFI_ADDR_MAGIC;
	a->version = 1;
	memcpy(a->pool_uuid, pi.uuid, sizeof(a->pool_uuid));
	a->host = cxl_pool_host_id(pool);
	a->index = CXLFI_INDEX_NONE;
}

void cxlfi_addr_local(cxl_pool *pool, struct cxlfi_addr *a)
{
	addr_base(pool, a);
	a->reserved = CXLFI_ADDR_ANY;
}

void cxlfi_addr_named(cxl_pool *pool, const char *name, struct cxlfi_addr *a)
{
	uint64_t h = name_hash(name);

	addr_base(pool, a);
	a->reserved = CXLFI_ADDR_NAMED;
	a->gen = (uint32_t)h;
	a->pad = (uint32_t)(h >> 32);
}

static uint64_t addr_hash(const struct cxlfi_addr *a)
{
	return (uint64_t)a->gen | (uint64_t)a->pad << 32;
}

static void svc_name(char *buf, size_t len, const struct cxlfi_addr *a)
{
	snprintf(buf, len, "cxlfi.svc.%016llx",
		 (unsigned long long)addr_hash(a));
}

int cxlfi_addr_resolve(cxl_pool *pool, const struct cxlfi_addr *in,
		       struct cxlfi_addr *out, bool quiet)
{
	struct cxl_obj o;
	char name[64];
	uint64_t w[SVC_HASH + 1];

	*out = *in;
	if (!(in->reserved & CXLFI_ADDR_NAMED))
		return in->reserved & CXLFI_ADDR_ANY ? -FI_EADDRNOTAVAIL : 0;
	svc_name(name, sizeof(name), in);
	if (cxl_obj_open(pool, name, &o)) {
		if (quiet)
			return -FI_EADDRNOTAVAIL;
		CXLFI_WARN(FI_LOG_AV,
			   "no endpoint serves the address of service hash "
			   "%016llx yet (pool object %s): start the server "
			   "first, with the same CXL_POOL and CXL_JOB\n",
			   (unsigned long long)addr_hash(in), name);
		return -FI_EADDRNOTAVAIL;
	}
	if (o.size < CXL_LINE) {
		cxl_obj_close(&o);
		return -FI_EADDRNOTAVAIL;
	}
	/* the owner flushed the line after writing it: invalidate, read,
	 * and trust nothing in it that is not checked */
	cxl_inval(pool, o.ptr, CXL_LINE);
	memcpy(w, o.ptr, sizeof(w));
	cxl_obj_close(&o);
	if (w[SVC_MAGIC] != CXLFI_SVC_MAGIC || w[SVC_HASH] != addr_hash(in) ||
	    w[SVC_INDEX] >= cxlfi_params.max_eps || w[SVC_GEN] == 0 ||
	    w[SVC_GEN] > UINT32_MAX || w[SVC_HOST] > UINT32_MAX) {
		CXLFI_WARN(FI_LOG_AV, "pool object %s is malformed; ignored\n",
			   name);
		return -FI_EADDRNOTAVAIL;
	}
	out->reserved = 0;
	out->index = (uint32_t)w[SVC_INDEX];
	out->gen = (uint32_t)w[SVC_GEN];
	out->host = (uint32_t)w[SVC_HOST];
	out->pad = 0;
	return 0;
}

int cxlfi_svc_claim(struct cxlfi_ep *ep, const struct cxlfi_addr *a)
{
	cxl_pool *pool = ep->dom->pool;
	char name[64];
	uint64_t *w;
	int rc;

	svc_name(name, sizeof(name), a);
	rc = cxl_obj_create(pool, name, CXL_LINE, CXL_OBJ_ZERO, &ep->svc);
	if (rc == CXL_EEXIST) {
		struct cxl_obj o;
		uint64_t idx = UINT64_MAX, gen = 0;

		/* taken: by a live endpoint, or left by a dead one */
		if (!cxl_obj_open(pool, name, &o)) {
			if (o.size >= CXL_LINE) {
				cxl_inval(pool, o.ptr, CXL_LINE);
				idx = ((uint64_t *)o.ptr)[SVC_INDEX];
				gen = ((uint64_t *)o.ptr)[SVC_GEN];
			}
			cxl_obj_close(&o);
		}
		if (cxlfi_ep_current(pool, idx, gen)) {
			CXLFI_WARN(FI_LOG_EP_CTRL,
				   "service address %s is in use by endpoint "
				   "%llu; choose another service (port)\n",
				   name, (unsigned long long)idx);
			return -FI_EADDRINUSE;
		}
		cxl_obj_destroy(pool, name);
		rc = cxl_obj_create(pool, name, CXL_LINE, CXL_OBJ_ZERO,
				    &ep->svc);
	}
	if (rc) {
		CXLFI_WARN(FI_LOG_EP_CTRL,
			   "cannot claim service address %s: %s\n", name,
			   cxl_errmsg());
		return rc == CXL_EEXIST ? -FI_EADDRINUSE : -FI_ENOSPC;
	}
	w = ep->svc.ptr;
	w[SVC_INDEX] = ep->index;
	w[SVC_GEN] = ep->gen;
	w[SVC_HOST] = cxl_pool_host_id(pool);
	w[SVC_PID] = (uint64_t)getpid();
	w[SVC_HASH] = addr_hash(a);
	w[SVC_MAGIC] = CXLFI_SVC_MAGIC;
	/* readers see the whole line or the zeroed one (magic 0): write it
	 * back before anyone resolves through it */
	cxl_flush(pool, w, CXL_LINE);
	cxl_wfence(pool);
	snprintf(ep->svc_name, sizeof(ep->svc_name), "%s", name);
	return 0;
}

void cxlfi_svc_release(struct cxlfi_ep *ep)
{
	if (!ep->svc.pool)
		return;
	cxl_obj_close(&ep->svc);
	cxl_obj_destroy(ep->dom->pool, ep->svc_name);
	memset(&ep->svc, 0, sizeof(ep->svc));
}

bool cxlfi_addr_is_ours(cxl_pool *pool, const void *addr, size_t len)
{
	const struct cxlfi_addr *a = addr;
	struct cxl_pool_info pi;

	if (!addr || len != cxlfi_addrlen() || a->magic != CXLFI_ADDR_MAGIC ||
	    a->version != 1)
		return false;
	cxl_pool_info(pool, &pi);
	return !memcmp(a->pool_uuid, pi.uuid, sizeof(pi.uuid));
}
