/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Arena repair: rebuild everything derived from the object table.
 *
 * The object table is authoritative. Repair drops entries that are
 * impossible (bad state, unterminated name, extent outside the heap, or
 * overlapping another object), then rebuilds the heap order map and free
 * lists from the gaps between the surviving extents, the hash index, the
 * object free list and the counters. Object contents are never written.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int cxl_extent_cmp(const void *a, const void *b)
{
	const struct heap_extent *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

bool cxl_obj_entry_ok(const struct cxl_pool *p, const struct obj_ent *e)
{
	return e->state <= OBJ_UNLINKED &&
	       cxl_name_valid(e->name, sizeof(e->name)) && e->asize &&
	       e->off % CXL_LINE == 0 && e->asize % CXL_LINE == 0 &&
	       e->off < p->hdr.heap_size &&
	       e->asize <= p->hdr.heap_size - e->off && e->size <= e->asize;
}

static void drop(struct cxl_pool *p, uint64_t idx)
{
	struct obj_ent *e = pool_obj(p, idx);

	e->state = OBJ_FREE;
	e->refcnt = 0;
	md_wr(p, e, CXL_LINE);
}

/* An impossible object entry: dropped, and counted in *arg. */
static void drop_bad(struct cxl_pool *p, uint64_t i, const struct obj_ent *e,
		     void *arg)
{
	(void)e;
	drop(p, i);
	++*(uint64_t *)arg;
}

int cxl_arena_repair_locked(struct cxl_pool *p, uint64_t *problems)
{
	struct arena_ctl *c = pool_ctl(p);
	uint64_t hwm, bad = 0, live = 0, unlinked = 0, free_head = 0;
	uint64_t live0, unlinked0;
	uint64_t slots = p->hdr.obj_off - p->hdr.hash_off;
	struct heap_extent *ext;
	size_t n = 0, kept = 0;
	int rc;

	md_rd(p, c, sizeof(*c));
	hwm = c->obj_hwm;
	if (hwm > p->hdr.capacity) {
		bad++;
		hwm = p->hdr.capacity;
	}
	/* the counts are made below, after the overlaps are dropped */
	ext = cxl_obj_extents(p, hwm, drop_bad, &bad, &n, &live0, &unlinked0);
	if (!ext)
		return CXL_ENOMEM;
	/* keep the first of any overlapping pair */
	for (size_t i = 0; i < n; i++) {
		if (kept &&
		    ext[i].off < ext[kept - 1].off + ext[kept - 1].asize) {
			drop(p, ext[i].idx);
			bad++;
			continue;
		}
		ext[kept++] = ext[i];
	}
	rc = cxl_heap_rebuild(p, ext, kept);
	free(ext);
	if (rc)
		return rc;

	memset(p->base + p->hdr.hash_off, 0, slots);
	md_wr(p, p->base + p->hdr.hash_off, slots);
	for (uint64_t i = hwm; i-- > 0;) {
		struct obj_ent *e = pool_obj(p, i);

		md_rd(p, e, CXL_LINE);
		if (e->state == OBJ_LIVE &&
		    cxl_hash_insert_locked(p, i, e->name, e->job_id)) {
			/* index full for this key: cannot keep it reachable */
			cxl_heap_free(p, e->off, e->asize);
			drop(p, i);
			bad++;
		}
		if (e->state == OBJ_FREE) {
			e->next_free = free_head;
			md_wr(p, e, CXL_LINE);
			free_head = i + 1;
			continue;
		}
		live += e->state == OBJ_LIVE;
		unlinked += e->state == OBJ_UNLINKED;
	}
	c->obj_free = free_head;
	c->obj_hwm = hwm;
	c->live = live;
	c->unlinked = unlinked;
	md_wr(p, c, 4 * sizeof(uint64_t));
	if (problems)
		*problems = bad;
	return CXL_OK;
}
