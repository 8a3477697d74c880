/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pool region table of an endpoint: direct RMA (docs/fabric.md).
 *
 * A registered region that lies in the pool can be reached by the origin
 * itself, with no work at the target. Each endpoint publishes its domain's
 * pool regions in "cxlfi.mr.<index>", written only by its owner:
 *
 *   line 0      magic, entries N, version (odd while an update is under
 *               way), and whether addresses are virtual (the owner's
 *               FI_MR_VIRT_ADDR: the origin interprets them the same way)
 *   line 1 + i  entry i: key, pool offset, length, access, base address,
 *               and a nonzero word when in use
 *
 * An update makes the version odd, writes the entry back, then makes the
 * version even again (a sequence lock with a single writer). An origin
 * reads the version, and if it changed since its last look, re-reads the
 * entries and keeps a private copy, valid only if the version was even and
 * unchanged across the read. Every RMA operation re-reads the version
 * line, so a region closed at the target is never written afterwards.
 * Every entry read from the pool is checked against the pool mapping
 * before it is used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlfi.h"

#define MRT_MAGIC 0x3130544d52494643ull /* "CFIRMT01" */
#define MRT_ENTRIES 255u
#define MRT_SIZE ((1 + MRT_ENTRIES) * CXL_LINE)

enum {
	E_KEY,
	E_OFF,
	E_LEN,
	E_ACCESS,
	E_BASE,
	E_USED
};
enum {
	H_MAGIC,
	H_ENTRIES,
	H_VERSION,
	H_VIRT
};

static uint64_t *mrt_line(const struct cxl_obj *o, uint32_t i)
{
	return (uint64_t *)((uint8_t *)o->ptr + (size_t)i * CXL_LINE);
}

/* Make the version odd or even again; written back at once. */
static void set_version(struct cxlfi_ep *ep, uint64_t v)
{
	cxl_pool *pool = ep->dom->pool;
	uint64_t *hdr = mrt_line(&ep->mrtab, 0);

	/* entries before an even version, an odd version before entries */
	cxl_wfence(pool);
	__atomic_store_n(&hdr[H_VERSION], v, __ATOMIC_RELEASE);
	cxl_flush(pool, hdr, CXL_LINE);
	cxl_wfence(pool);
	ep->mrtab_ver = v;
}

static void put_entry(struct cxlfi_ep *ep, uint32_t i, const struct cxlfi_mr *m)
{
	uint64_t *e = mrt_line(&ep->mrtab, 1 + i);

	memset(e, 0, CXL_LINE);
	if (m) {
		e[E_KEY] = m->fid.key;
		e[E_OFF] = m->pool_off;
		e[E_LEN] = m->len;
		e[E_ACCESS] = m->access;
		e[E_BASE] = (uint64_t)(uintptr_t)m->buf;
		e[E_USED] = 1;
	}
	cxl_flush(ep->dom->pool, e, CXL_LINE);
}

/* Rewrite the whole table from the domain's pool regions. */
void cxlfi_mrtab_sync(struct cxlfi_ep *ep)
{
	uint32_t i = 0;

	if (!ep->mrtab.pool)
		return;
	set_version(ep, ep->mrtab_ver | 1);
	/* FI_RMA_EVENT: the target counts every access to its regions, so
	 * none may be accessed behind its back: publish none, and origins
	 * go through the channel */
	for (struct cxlfi_mr *m = ep->dom->mrs;
	     m && i < MRT_ENTRIES && !ep->rma_events; m = m->next)
		if (m->in_pool && !m->rwr_cntr && !m->rrd_cntr)
			put_entry(ep, i++, m);
	for (; i < MRT_ENTRIES; i++)
		put_entry(ep, i, NULL);
	set_version(ep, (ep->mrtab_ver | 1) + 1);
}

int cxlfi_mrtab_create(struct cxlfi_ep *ep)
{
	cxl_pool *pool = ep->dom->pool;
	uint64_t *hdr;
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "cxlfi.mr.%u", ep->index);
	rc = cxl_obj_create(pool, name, MRT_SIZE, 0, &ep->mrtab);
	if (rc == CXL_EEXIST) { /* an earlier endpoint's with our index */
		cxl_obj_destroy(pool, name);
		rc = cxl_obj_create(pool, name, MRT_SIZE, 0, &ep->mrtab);
	}
	if (rc)
		return cxlfi_pool_failure(rc, "the region table", name);
	hdr = ep->mrtab.ptr;
	memset(hdr, 0, CXL_LINE);
	hdr[H_MAGIC] = MRT_MAGIC;
	hdr[H_ENTRIES] = MRT_ENTRIES;
	hdr[H_VIRT] = ep->dom->mr_virt;
	ep->mrtab_ver = 0;
	cxlfi_mrtab_sync(ep);
	return 0;
}

void cxlfi_mrtab_destroy(struct cxlfi_ep *ep)
{
	char name[64];

	if (!ep->mrtab.pool)
		return;
	set_version(ep, ep->mrtab_ver | 1); /* readers stop trusting it */
	cxl_obj_close(&ep->mrtab);
	snprintf(name, sizeof(name), "cxlfi.mr.%u", ep->index);
	cxl_obj_destroy(ep->dom->pool, name);
}

/* ---- origin side -------------------------------------------------------- */

static void forget(struct cxlfi_peer *pe)
{
	free(pe->mr_cache);
	pe->mr_cache = NULL;
	pe->mr_n = 0;
}

void cxlfi_mrtab_close(struct cxlfi_peer *pe)
{
	forget(pe);
	if (pe->mrtab.pool)
		cxl_obj_close(&pe->mrtab);
}

/* The peer's current version, or 1 (odd: do not trust) on any problem. */
static uint64_t peer_version(cxl_pool *pool, struct cxlfi_peer *pe)
{
	const uint64_t *hdr;
	char name[64];

	if (!pe->mrtab.pool) {
		snprintf(name, sizeof(name), "cxlfi.mr.%u", pe->index);
		if (cxl_obj_open(pool, name, &pe->mrtab))
			return 1;
		hdr = pe->mrtab.ptr;
		cxl_inval(pool, hdr, CXL_LINE);
		/* geometry from the pool, checked once */
		if (pe->mrtab.size < MRT_SIZE || hdr[H_MAGIC] != MRT_MAGIC ||
		    hdr[H_ENTRIES] != MRT_ENTRIES) {
			cxl_obj_close(&pe->mrtab);
			return 1;
		}
		pe->mr_ver = 1; /* nothing cached yet */
		pe->mr_virt = hdr[H_VIRT] != 0;
	}
	return cxl_nt_load64(pool, mrt_line(&pe->mrtab, 0) + H_VERSION);
}

static bool refresh(cxl_pool *pool, struct cxlfi_peer *pe, uint64_t v)
{
	struct cxlfi_mrc *c;
	size_t n = 0;

	forget(pe);
	c = calloc(MRT_ENTRIES, sizeof(*c));
	if (!c)
		return false;
	cxl_inval(pool, mrt_line(&pe->mrtab, 1), MRT_ENTRIES * CXL_LINE);
	for (uint32_t i = 0; i < MRT_ENTRIES; i++) {
		const uint64_t *e = mrt_line(&pe->mrtab, 1 + i);

		if (!__atomic_load_n(&e[E_USED], __ATOMIC_ACQUIRE))
			continue;
		c[n].key = e[E_KEY];
		c[n].off = e[E_OFF];
		c[n].len = e[E_LEN];
		c[n].access = e[E_ACCESS];
		c[n].base = e[E_BASE];
		/* the region must lie in the pool mapping */
		if (cxl_pool_ptr(pool, c[n].off, c[n].len))
			n++;
	}
	/* valid only if no update ran meanwhile */
	if (cxl_nt_load64(pool, mrt_line(&pe->mrtab, 0) + H_VERSION) != v) {
		free(c);
		return false;
	}
	pe->mr_cache = c;
	pe->mr_n = n;
	pe->mr_ver = v;
	return true;
}

void *cxlfi_mrtab_target(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			 uint64_t key, uint64_t addr, size_t len,
			 uint64_t access)
{
	cxl_pool *pool = ep->dom->pool;
	uint64_t v = peer_version(pool, pe), off;

	if (v & 1)
		return NULL; /* no table, or an update under way */
	if (v != pe->mr_ver && !refresh(pool, pe, v))
		return NULL;
	for (size_t i = 0; i < pe->mr_n; i++) {
		const struct cxlfi_mrc *c = &pe->mr_cache[i];

		if (c->key != key)
			continue;
		if ((c->access & access) != access)
			return NULL; /* the target reports the error */
		off = pe->mr_virt ? addr - c->base : addr;
		if ((pe->mr_virt && addr < c->base) || off > c->len ||
		    len > c->len - off)
			return NULL;
		return cxl_pool_ptr(pool, c->off + off, len ? len : 1);
	}
	return NULL;
}
