/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Arena repair: rebuild everything derived from the object table.
 *
 * The object table is authoritative. Repair drops entries that are
 * impossible (bad state, unterminated name, extent outside the heap or
 * overlapping an earlier object), then rebuilds the hash index, the heap
 * order map and free lists, the object free list and the counters.
 */
#include <string.h>

#include "internal.h"

int cxl_arena_repair_locked(struct cxl_pool *p, uint64_t *problems)
{
	struct arena_ctl *c = pool_ctl(p);
	uint64_t hwm, bad = 0, live = 0, unlinked = 0, free_head = 0;
	uint64_t slots = p->hdr.obj_off - p->hdr.hash_off;
	int rc;

	md_rd(p, c, sizeof(*c));
	hwm = c->obj_hwm;
	if (hwm > p->hdr.capacity) {
		bad++;
		hwm = p->hdr.capacity;
	}
	/* derived state from scratch */
	memset(p->base + p->hdr.hash_off, 0, slots);
	md_wr(p, p->base + p->hdr.hash_off, slots);
	memset(p->base + p->hdr.ordermap_off, 0, p->hdr.heap_size / 64);
	md_wr(p, p->base + p->hdr.ordermap_off, p->hdr.heap_size / 64);
	if ((rc = cxl_heap_init(p)))
		return rc;

	for (uint64_t i = hwm; i-- > 0;) {
		struct obj_ent *e = pool_obj(p, i);
		bool ok;

		md_rd(p, e, sizeof(*e));
		if (e->state == OBJ_FREE)
			goto make_free;
		ok = e->state <= OBJ_UNLINKED &&
		     cxl_name_valid(e->name, sizeof(e->name)) &&
		     cxl_heap_reserve(p, e->off, e->asize) == CXL_OK &&
		     e->size <= e->asize;
		if (ok && e->state == OBJ_LIVE &&
		    cxl_hash_insert_locked(p, i, e->name, e->job_id) != CXL_OK)
			ok = false;
		if (ok) {
			live += e->state == OBJ_LIVE;
			unlinked += e->state == OBJ_UNLINKED;
			continue;
		}
		bad++;
make_free:
		e->state = OBJ_FREE;
		e->refcnt = 0;
		e->next_free = free_head;
		md_wr(p, e, CXL_LINE);
		free_head = i + 1;
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

CXL_EXPORT int cxl_arena_repair(cxl_pool *p, uint64_t *problems)
{
	int rc;

	if (!p)
		return cxl_seterr(CXL_EINVAL, "cxl_arena_repair: NULL pool");
	if ((rc = cxl_arena_lock(p)))
		return rc;
	rc = cxl_arena_repair_locked(p, problems);
	cxl_arena_unlock(p);
	return rc;
}
