/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Large messages through a bulk area (a first step of the rendezvous
 * protocol of issue 3).
 *
 * Chunked through ring cells, a byte is copied three times in 56-byte
 * strided pieces. A message of FI_CXL_BULK_MIN bytes or more instead moves
 * its continuation through "cxlfi.bk.<A>.<B>", created by sender A on its
 * first large message to B:
 *
 *   line 0      magic, slot count, slot size (written once by A)
 *   line 1      done: chunks B has consumed (written only by B, NT store)
 *   4096 + k*S  slot k of S bytes
 *
 * A copies a chunk into the next free slot (one wide copy, written back),
 * fences, and sends a small OP_BULK descriptor {slot, length} through the
 * ring. B invalidates the slot, copies it straight into the receive buffer
 * and advances done. A slot is free again when done has passed it, so no
 * slot is ever written while B reads it. Two wide copies instead of three
 * strided ones; no cross-host atomics; one writer per line.
 */
#include <stdio.h>
#include <string.h>

#include "cxlfi.h"

#define BULK_MAGIC 0x4b4c554249464343ull /* "CCFIBULK" */
#define BULK_HDR 4096u

struct bulk_desc {
	uint32_t slot;
	uint32_t len;
};

static uint8_t *slot_ptr(const struct cxl_obj *o, uint32_t k)
{
	return (uint8_t *)o->ptr + BULK_HDR + (size_t)k * CXLFI_BULK_SLOT;
}

static int bulk_open_tx(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	cxl_pool *pool = ep->dom->pool;
	size_t len = BULK_HDR + (size_t)CXLFI_BULK_SLOTS * CXLFI_BULK_SLOT;
	uint64_t *hdr;
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "cxlfi.bk.%u.%u", ep->index, pe->index);
	rc = cxl_obj_create(pool, name, len, CXL_OBJ_ALIGN_2M, &pe->bktx);
	if (rc == CXL_EEXIST) { /* an earlier endpoint's with our index */
		cxl_obj_destroy(pool, name);
		rc = cxl_obj_create(pool, name, len, CXL_OBJ_ALIGN_2M,
				    &pe->bktx);
	}
	if (rc) {
		CXLFI_WARN(FI_LOG_EP_DATA, "cannot create bulk area %s: %s\n",
			   name, cxl_errmsg());
		return rc == CXL_ENOSPC ? -FI_ENOSPC : -FI_EIO;
	}
	hdr = pe->bktx.ptr;
	memset(hdr, 0, 2 * CXL_LINE);
	hdr[0] = BULK_MAGIC;
	hdr[1] = CXLFI_BULK_SLOTS;
	hdr[2] = CXLFI_BULK_SLOT;
	/* header and a zero done counter in the pool before any descriptor */
	cxl_flush(pool, hdr, 2 * CXL_LINE);
	cxl_wfence(pool);
	pe->bk_sent = pe->bk_done_seen = 0;
	return 0;
}

int cxlfi_bulk_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    struct cxlfi_tx *t)
{
	cxl_pool *pool = ep->dom->pool;
	struct bulk_desc d;
	uint64_t *done;
	size_t n;
	int rc;

	if (!pe->bktx.pool && (rc = bulk_open_tx(ep, pe)))
		return rc;
	done = (uint64_t *)((uint8_t *)pe->bktx.ptr + CXL_LINE);
	if (pe->bk_sent - pe->bk_done_seen >= CXLFI_BULK_SLOTS) {
		uint64_t v = cxl_nt_load64(pool, done);

		if (v > pe->bk_sent) /* impossible: B is broken */
			return -FI_EIO;
		pe->bk_done_seen = v;
		if (pe->bk_sent - v >= CXLFI_BULK_SLOTS)
			return 0;
	}
	/* the descriptor must fit before the slot is written */
	if (!cxl_ring_send_ready(pe->tx))
		return 0;
	d.slot = (uint32_t)(pe->bk_sent % CXLFI_BULK_SLOTS);
	n = t->len - t->off < CXLFI_BULK_SLOT ? t->len - t->off
					      : CXLFI_BULK_SLOT;
	d.len = (uint32_t)n;
	/* chunk written back and fenced before its descriptor is sent */
	cxl_copy_to_pool(pool, slot_ptr(&pe->bktx, d.slot), t->buf + t->off, n);
	cxl_wfence(pool);
	rc = cxl_ring_send(pe->tx, &d, sizeof(d), CXLFI_OP_BULK, 0);
	if (rc)
		return rc == CXL_EAGAIN ? 0
					: -FI_EIO; /* EAGAIN: not after ready */
	pe->bk_sent++;
	t->off += n;
	return 1;
}

static int bulk_open_rx(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	cxl_pool *pool = ep->dom->pool;
	const uint64_t *hdr;
	char name[64];

	snprintf(name, sizeof(name), "cxlfi.bk.%u.%u", pe->index, ep->index);
	if (cxl_obj_open(pool, name, &pe->bkrx))
		return -1;
	hdr = pe->bkrx.ptr;
	cxl_inval(pool, hdr, CXL_LINE);
	/* geometry from the pool is checked before any slot is touched */
	if (pe->bkrx.size < BULK_HDR || hdr[0] != BULK_MAGIC ||
	    hdr[1] != CXLFI_BULK_SLOTS || hdr[2] != CXLFI_BULK_SLOT ||
	    pe->bkrx.size < BULK_HDR + hdr[1] * hdr[2]) {
		CXLFI_WARN(FI_LOG_EP_DATA, "bulk area %s is malformed\n", name);
		cxl_obj_close(&pe->bkrx);
		return -1;
	}
	pe->bk_done = 0;
	return 0;
}

size_t cxlfi_bulk_take(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		       const uint8_t *m, size_t n, uint8_t *dst, size_t cap)
{
	cxl_pool *pool = ep->dom->pool;
	struct bulk_desc d;
	const uint8_t *src;
	uint64_t *done;

	if (n != sizeof(d) || (!pe->bkrx.pool && bulk_open_rx(ep, pe)))
		return 0;
	memcpy(&d, m, sizeof(d));
	if (d.slot >= CXLFI_BULK_SLOTS || d.len == 0 ||
	    d.len > CXLFI_BULK_SLOT || d.slot != pe->bk_done % CXLFI_BULK_SLOTS)
		return 0;
	src = slot_ptr(&pe->bkrx, d.slot);
	cxl_inval(pool, src, d.len);
	if (dst)
		memcpy(dst, src, d.len < cap ? d.len : cap);
	/* the slot is free for A once done passes it */
	done = (uint64_t *)((uint8_t *)pe->bkrx.ptr + CXL_LINE);
	cxl_flag_set(pool, done, ++pe->bk_done);
	return d.len;
}

void cxlfi_bulk_close(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	char name[64];

	if (pe->bktx.pool) {
		cxl_obj_close(&pe->bktx);
		snprintf(name, sizeof(name), "cxlfi.bk.%u.%u", ep->index,
			 pe->index);
		cxl_obj_destroy(ep->dom->pool, name);
	}
	if (pe->bkrx.pool)
		cxl_obj_close(&pe->bkrx);
}
