/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Arena check: everything repair (repair.c) would rebuild, read and
 * compared with the object table, without writing anything. Each
 * inconsistency is described to the caller's report function and
 * counted; `cxlpool fsck` prints them, `cxlpool fsck --repair` then
 * rebuilds. Every offset, index and link read from the pool is checked
 * against the geometry before it is followed, and every walk is bounded,
 * so a corrupt or hostile pool cannot make the check fault or loop.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct check {
	struct cxl_pool *p;
	cxl_check_report_fn fn;
	void *arg;
	uint64_t problems;
};

static void bad(struct check *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void bad(struct check *k, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	k->problems++;
	if (!k->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	k->fn(msg, k->arg);
}

struct heap_extent *
cxl_obj_extents(struct cxl_pool *p, uint64_t hwm,
		void (*on_bad)(struct cxl_pool *p, uint64_t i,
			       const struct obj_ent *e, void *arg),
		void *arg, size_t *n, uint64_t *live, uint64_t *unlinked)
{
	struct heap_extent *ext = malloc(sizeof(*ext) * (hwm ? hwm : 1));

	*n = 0;
	*live = *unlinked = 0;
	if (!ext) {
		cxl_seterr(CXL_ENOMEM, "out of memory for %llu extents",
			   (unsigned long long)hwm);
		return NULL;
	}
	for (uint64_t i = 0; i < hwm; i++) {
		struct obj_ent *e = pool_obj(p, i);

		md_rd(p, e, sizeof(*e));
		if (e->state == OBJ_FREE)
			continue;
		if (!cxl_obj_entry_ok(p, e)) {
			on_bad(p, i, e, arg);
			continue;
		}
		*live += e->state == OBJ_LIVE;
		*unlinked += e->state == OBJ_UNLINKED;
		ext[(*n)++] = (struct heap_extent){ e->off, e->asize, i };
	}
	qsort(ext, *n, sizeof(*ext), cxl_extent_cmp);
	return ext;
}

static void report_entry(struct cxl_pool *p, uint64_t i,
			 const struct obj_ent *e, void *arg)
{
	bad(arg,
	    "object entry %llu is impossible (state %u, extent %llu+%llu in "
	    "a heap of %llu)",
	    (unsigned long long)i, e->state, (unsigned long long)e->off,
	    (unsigned long long)e->asize, (unsigned long long)p->hdr.heap_size);
}

/* The object table, its counters, and the overlap of live extents;
 * returns the extents of the valid entries (sorted), *n of them. */
static struct heap_extent *check_objects(struct check *k, uint64_t hwm,
					 size_t *n)
{
	struct cxl_pool *p = k->p;
	struct arena_ctl *c = pool_ctl(p);
	uint64_t live, unlinked;
	struct heap_extent *ext =
		cxl_obj_extents(p, hwm, report_entry, k, n, &live, &unlinked);

	if (!ext)
		return NULL;
	for (size_t i = 1; i < *n; i++)
		if (ext[i].off < ext[i - 1].off + ext[i - 1].asize)
			bad(k, "objects %llu and %llu overlap in the heap",
			    (unsigned long long)ext[i - 1].idx,
			    (unsigned long long)ext[i].idx);
	md_rd(p, c, sizeof(*c));
	if (c->live != live || c->unlinked != unlinked)
		bad(k,
		    "object counts say %llu live and %llu unlinked; the "
		    "table holds %llu and %llu",
		    (unsigned long long)c->live,
		    (unsigned long long)c->unlinked, (unsigned long long)live,
		    (unsigned long long)unlinked);
	return ext;
}

/* The free list of object entries: every free entry below the high-water
 * mark once, nothing else, no cycle. */
static void check_free_entries(struct check *k, uint64_t hwm)
{
	struct cxl_pool *p = k->p;
	uint64_t link = pool_ctl(p)->obj_free, steps = 0, nfree = 0;

	for (uint64_t i = 0; i < hwm; i++) {
		struct obj_ent *e = pool_obj(p, i);

		nfree += e->state == OBJ_FREE;
	}
	while (link && steps <= hwm) {
		struct obj_ent *e;

		if (link > hwm) {
			bad(k,
			    "the free list of object entries links to "
			    "entry %llu, beyond the %llu in use",
			    (unsigned long long)(link - 1),
			    (unsigned long long)hwm);
			return;
		}
		e = pool_obj(p, link - 1);
		md_rd(p, e, CXL_LINE);
		if (e->state != OBJ_FREE) {
			bad(k,
			    "the free list of object entries holds entry "
			    "%llu, which is in use",
			    (unsigned long long)(link - 1));
			return;
		}
		steps++;
		link = e->next_free;
	}
	if (link)
		bad(k, "the free list of object entries has a cycle");
	else if (steps != nfree)
		bad(k,
		    "the free list of object entries links %llu of the "
		    "%llu free entries",
		    (unsigned long long)steps, (unsigned long long)nfree);
}

/* The hash index: each live object in exactly one of its candidate
 * slots, and no slot naming anything else. */
static void check_index(struct check *k, uint64_t hwm)
{
	struct cxl_pool *p = k->p;
	uint64_t slots = p->hdr.obj_off - p->hdr.hash_off;
	uint64_t nslots = slots / sizeof(struct hash_slot), used = 0;
	uint64_t live = 0;

	md_rd(p, p->base + p->hdr.hash_off, slots);
	for (uint64_t s = 0; s < nslots; s++) {
		struct hash_slot *sl = pool_slot(p, s);
		struct obj_ent *e;
		bool home = false;
		uint64_t h;

		if (!sl->idx1)
			continue;
		used++;
		if (sl->idx1 > hwm) {
			bad(k,
			    "index slot %llu names object entry %u, beyond "
			    "the %llu in use",
			    (unsigned long long)s, sl->idx1 - 1,
			    (unsigned long long)hwm);
			continue;
		}
		e = pool_obj(p, sl->idx1 - 1);
		if (e->state != OBJ_LIVE || !cxl_obj_entry_ok(p, e)) {
			bad(k,
			    "index slot %llu names object entry %u, which "
			    "is not a live object",
			    (unsigned long long)s, sl->idx1 - 1);
			continue;
		}
		h = cxl_hash_key(e->name, e->job_id);
		for (unsigned l = 0; l < p->hdr.hash_levels; l++)
			home |= cxl_hash_slot(p, h, l) == s;
		if (!home || sl->tag != (uint32_t)(h >> 32))
			bad(k,
			    "index slot %llu names '%s', whose name does "
			    "not hash there",
			    (unsigned long long)s, e->name);
	}
	for (uint64_t i = 0; i < hwm; i++) {
		struct obj_ent *e = pool_obj(p, i);
		unsigned found = 0;
		uint64_t h;

		if (e->state != OBJ_LIVE || !cxl_obj_entry_ok(p, e))
			continue;
		live++;
		h = cxl_hash_key(e->name, e->job_id);
		for (unsigned l = 0; l < p->hdr.hash_levels; l++)
			found += pool_slot(p, cxl_hash_slot(p, h, l))->idx1 ==
				 i + 1;
		if (found != 1)
			bad(k,
			    "live object '%s' (entry %llu) is in %u of its "
			    "index slots; it must be in one",
			    e->name, (unsigned long long)i, found);
	}
	if (used != live)
		bad(k, "the index has %llu used slots for %llu live objects",
		    (unsigned long long)used, (unsigned long long)live);
}

static void report_heap(const char *msg, void *arg)
{
	bad(arg, "%s", msg);
}

int cxl_arena_check_locked(struct cxl_pool *p, cxl_check_report_fn fn,
			   void *arg, uint64_t *problems)
{
	struct check k = { .p = p, .fn = fn, .arg = arg };
	struct arena_ctl *c = pool_ctl(p);
	struct heap_extent *ext;
	uint64_t hwm;
	size_t n;

	md_rd(p, c, sizeof(*c));
	hwm = c->obj_hwm;
	if (hwm > p->hdr.capacity) {
		bad(&k,
		    "the object high-water mark %llu exceeds the "
		    "capacity %llu",
		    (unsigned long long)hwm,
		    (unsigned long long)p->hdr.capacity);
		hwm = p->hdr.capacity;
	}
	ext = check_objects(&k, hwm, &n);
	if (!ext)
		return cxl_seterr(CXL_ENOMEM,
				  "check: out of memory for %llu "
				  "extents",
				  (unsigned long long)hwm);
	check_free_entries(&k, hwm);
	check_index(&k, hwm);
	cxl_heap_check(p, ext, n, report_heap, &k);
	free(ext);
	if (problems)
		*problems = k.problems;
	return CXL_OK;
}

CXL_EXPORT int cxl_arena_check(cxl_pool *p, cxl_check_report_fn fn, void *arg,
			       uint64_t *problems)
{
	int rc;

	if (!p)
		return cxl_seterr(CXL_EINVAL, "cxl_arena_check: NULL pool");
	if ((rc = cxl_arena_lock(p)))
		return rc;
	rc = cxl_arena_check_locked(p, fn, arg, problems);
	cxl_arena_unlock(p);
	return rc;
}
