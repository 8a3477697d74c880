/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pool geometry, formatting and header validation.
 *
 * Format writes every region, writes it back, fences, and only then stores
 * the magic (and writes that back): a reader that sees the magic sees a
 * complete pool. Readers validate the whole header, so a corrupt or foreign
 * header can never make region accessors point outside the mapping.
 */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"

static bool is_prime(uint64_t n)
{
	if (n < 2)
		return false;
	for (uint64_t d = 2; d * d <= n; d++)
		if (n % d == 0)
			return false;
	return true;
}

static uint64_t prime_at_most(uint64_t n)
{
	if (n < 3)
		return 3;
	while (!is_prime(n))
		n--;
	return n;
}

/* Level l gets ~1.25 * capacity / 2^l buckets, each a distinct prime, so
 * the index holds ~2.5x capacity slots and a key has one slot per level. */
static void hash_geometry(struct pool_hdr *h)
{
	uint64_t slot = 0;

	h->hash_levels = HASH_MAX_LEVELS;
	for (unsigned l = 0; l < HASH_MAX_LEVELS; l++) {
		uint64_t b = prime_at_most((h->capacity * 5 / 4) >> l);

		/* tiny capacities clamp to the same prime: take the next
		 * unused one so every level still hashes differently */
		for (unsigned k = 0; k < l; k++) {
			if (h->level_buckets[k] == b) {
				do
					b++;
				while (!is_prime(b));
				k = (unsigned)-1; /* rescan from level 0 */
			}
		}
		h->level_buckets[l] = b;
		h->level_off[l] = slot;
		slot += b;
	}
}

static uint64_t hash_slots(const struct pool_hdr *h)
{
	uint64_t n = 0;

	for (unsigned l = 0; l < h->hash_levels; l++)
		n += h->level_buckets[l];
	return n;
}

static int geometry(struct pool_hdr *h, const struct cxl_pool_opts *o,
		    uint64_t size)
{
	uint64_t off, meta, heap;

	memset(h, 0, sizeof(*h));
	h->version = POOL_LAYOUT_VERSION;
	h->hdr_size = POOL_HDR_SIZE;
	h->pool_size = size;
	h->max_hosts = o->max_hosts;
	h->max_procs = o->max_procs;
	h->capacity = o->capacity;
	hash_geometry(h);

	off = POOL_HDR_SIZE;
	h->ctl_off = off;
	off = ALIGN_UP(off + sizeof(struct arena_ctl), CXL_LINE);
	h->host_off = off;
	off += (uint64_t)h->max_hosts * sizeof(struct host_ent);
	h->proc_off = off;
	off += (uint64_t)h->max_procs * sizeof(struct proc_ent);
	h->hash_off = off;
	off = ALIGN_UP(off + hash_slots(h) * sizeof(struct hash_slot),
		       CXL_LINE);
	h->obj_off = off;
	off += h->capacity * sizeof(struct obj_ent);
	h->ordermap_off = off;
	meta = off;

	/* heap + heap/64 order-map bytes + alignment slack must fit */
	if (size < meta + 2 * POOL_HEAP_ALIGN)
		goto small;
	heap = ALIGN_DOWN((size - meta - POOL_HEAP_ALIGN) / 65 * 64, CXL_LINE);
	h->heap_off = ALIGN_UP(meta + heap / 64, POOL_HEAP_ALIGN);
	if (h->heap_off >= size)
		goto small;
	if (h->heap_off + heap > size)
		heap = ALIGN_DOWN(size - h->heap_off, CXL_LINE);
	if (heap < 64 * 1024)
		goto small;
	h->heap_size = heap;
	return CXL_OK;
small:
	return cxl_seterr(CXL_ETOOSMALL,
			  "pool of %llu bytes is too small: metadata for "
			  "CXL_ARENA_CAPACITY=%llu objects, CXL_MAX_HOSTS=%u "
			  "and CXL_MAX_PROCS=%u takes %llu bytes; lower "
			  "those or use a pool of at least %llu bytes",
			  (unsigned long long)size,
			  (unsigned long long)o->capacity, o->max_hosts,
			  o->max_procs, (unsigned long long)meta,
			  (unsigned long long)ALIGN_UP(
				  meta + meta / 8 + 4 * POOL_HEAP_ALIGN,
				  POOL_HEAP_ALIGN));
}

/* Covers every field after the magic (which is stored last, separately). */
static uint64_t hdr_csum(const struct pool_hdr *h)
{
	const size_t from = offsetof(struct pool_hdr, version);

	return cxl_fnv1a((const uint8_t *)h + from,
			 offsetof(struct pool_hdr, csum) - from, FNV_SEED);
}

/* Zero a pool region and write it back. */
static void zero_region(struct cxl_pool *p, uint64_t off, uint64_t len)
{
	memset(p->base + off, 0, len);
	cxl_flush(p, p->base + off, len);
}

int cxl_format_mapped(struct cxl_pool *p, const struct cxl_pool_opts *o)
{
	struct pool_hdr h;
	struct pool_hdr *ph = (struct pool_hdr *)p->base;
	struct timespec ts;
	int rc;

	if ((rc = geometry(&h, o, p->size)))
		return rc;
	if (getrandom(h.uuid, sizeof(h.uuid), 0) != sizeof(h.uuid))
		return cxl_seterr(CXL_ESYS,
				  "getrandom failed while formatting "
				  "%s",
				  o->path);
	clock_gettime(CLOCK_REALTIME, &ts);
	h.format_ns =
		(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	h.csum = hdr_csum(&h);

	/* Retire the old identity first so no attacher trusts a pool that is
	 * being rewritten. */
	cxl_nt_store64(p, &ph->magic, 0);
	cxl_wfence(p);

	p->hdr = h;
	zero_region(p, h.ctl_off,
		    h.hash_off - h.ctl_off +
			    hash_slots(&h) * sizeof(struct hash_slot));
	if ((rc = cxl_heap_init(p)))
		return rc;

	memcpy(ph, &h, sizeof(h));
	ph->magic = 0;
	cxl_flush(p, ph, sizeof(h));
	/* Everything above must be in the pool before the magic is. */
	cxl_wfence(p);
	cxl_nt_store64(p, &ph->magic, POOL_MAGIC);
	cxl_wfence(p);
	p->hdr.magic = POOL_MAGIC;
	return CXL_OK;
}

int cxl_hdr_validate(const struct pool_hdr *h, uint64_t mapped,
		     const char *path)
{
	uint64_t slots = 0, end;

	if (h->magic != POOL_MAGIC)
		return cxl_seterr(
			CXL_EFOREIGN,
			"%s is not a cxlshm pool (no "
			"pool header): format it with 'cxlpool "
			"format %s' (this erases it), or fix CXL_POOL",
			path, path);
	if (h->version != POOL_LAYOUT_VERSION)
		return cxl_seterr(CXL_EVERSION,
				  "%s has pool layout version %u; "
				  "this libcxlshm reads version %u: use a "
				  "matching libcxlshm, or reformat the pool "
				  "with 'cxlpool format %s' (erases it)",
				  path, h->version, POOL_LAYOUT_VERSION, path);
	if (h->csum != hdr_csum(h))
		return cxl_seterr(CXL_ECORRUPT,
				  "pool header of %s fails its "
				  "checksum: the pool is damaged; reformat "
				  "with 'cxlpool format %s'",
				  path, path);
	/* From here the header is what format wrote; still check geometry
	 * so a checksum collision cannot steer accesses outside the map. */
	if (h->hdr_size != POOL_HDR_SIZE || h->pool_size > mapped ||
	    h->pool_size < POOL_MIN_SIZE)
		goto bad;
	if (h->max_hosts == 0 || h->max_hosts > 4096 || h->max_procs == 0 ||
	    h->max_procs > (1u << 20) || h->capacity < 1 ||
	    h->capacity > (1ull << 31) || h->hash_levels == 0 ||
	    h->hash_levels > HASH_MAX_LEVELS)
		goto bad;
	for (unsigned l = 0; l < h->hash_levels; l++) {
		if (h->level_off[l] != slots || h->level_buckets[l] == 0 ||
		    h->level_buckets[l] > (1ull << 33))
			goto bad;
		slots += h->level_buckets[l];
	}
	if (h->ctl_off != POOL_HDR_SIZE ||
	    h->host_off < h->ctl_off + sizeof(struct arena_ctl) ||
	    h->proc_off < h->host_off + (uint64_t)h->max_hosts * 256 ||
	    h->hash_off < h->proc_off + (uint64_t)h->max_procs * 128 ||
	    h->obj_off < h->hash_off + slots * 8 ||
	    h->ordermap_off < h->obj_off + h->capacity * 128 ||
	    h->heap_off < h->ordermap_off + h->heap_size / 64 ||
	    h->heap_off % POOL_HEAP_ALIGN || h->heap_size % CXL_LINE ||
	    h->heap_size == 0)
		goto bad;
	end = h->heap_off + h->heap_size;
	if (end < h->heap_off || end > h->pool_size)
		goto bad;
	if ((h->ctl_off | h->host_off | h->proc_off | h->hash_off |
	     h->obj_off) %
	    CXL_LINE)
		goto bad;
	return CXL_OK;
bad:
	return cxl_seterr(CXL_ECORRUPT,
			  "pool header of %s describes an "
			  "impossible geometry: the pool is damaged; "
			  "reformat with 'cxlpool format %s'",
			  path, path);
}
