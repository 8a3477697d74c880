/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arena's hash index: where a name hashes to at each level, and
 * adding or removing an object's slot. Below the arena (arena.c) and its
 * repair (repair.c), which both rebuild or use it under the arena lock.
 */
#include <string.h>

#include "internal.h"

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t cxl_hash_key(const char *name, uint64_t job_id)
{
	return cxl_fnv1a(name, strlen(name),
			 cxl_fnv1a(&job_id, sizeof(job_id), FNV_SEED));
}

uint64_t cxl_hash_slot(struct cxl_pool *p, uint64_t h, unsigned l)
{
	return p->hdr.level_off[l] +
	       mix64(h + l * 0x9e3779b97f4a7c15ull) % p->hdr.level_buckets[l];
}

/* Insert and remove walk the same candidate slots, level by level
 * (cxl_hash_slot): the first free one takes an entry, the one holding it
 * gives it up. */
int cxl_hash_insert_locked(struct cxl_pool *p, uint64_t idx, const char *name,
			   uint64_t job_id)
{
	uint64_t h = cxl_hash_key(name, job_id);

	for (unsigned l = 0; l < p->hdr.hash_levels; l++) {
		struct hash_slot *sl = pool_slot(p, cxl_hash_slot(p, h, l));

		md_rd(p, sl, sizeof(*sl));
		if (sl->idx1)
			continue;
		sl->idx1 = (uint32_t)(idx + 1);
		sl->tag = (uint32_t)(h >> 32);
		md_wr(p, sl, sizeof(*sl));
		return CXL_OK;
	}
	return cxl_seterr(CXL_ENOMETA,
			  "hash index full: all %u candidate "
			  "slots for '%s' are taken; reformat with a larger "
			  "CXL_ARENA_CAPACITY (now %llu)",
			  p->hdr.hash_levels, name,
			  (unsigned long long)p->hdr.capacity);
}

int cxl_hash_remove_locked(struct cxl_pool *p, uint64_t idx, const char *name,
			   uint64_t job_id)
{
	uint64_t h = cxl_hash_key(name, job_id);

	for (unsigned l = 0; l < p->hdr.hash_levels; l++) {
		struct hash_slot *sl = pool_slot(p, cxl_hash_slot(p, h, l));

		md_rd(p, sl, sizeof(*sl));
		if (sl->idx1 == idx + 1) {
			sl->idx1 = 0;
			sl->tag = 0;
			md_wr(p, sl, sizeof(*sl));
			return CXL_OK;
		}
	}
	return CXL_ENOENT;
}
