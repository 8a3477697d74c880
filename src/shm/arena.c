/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Named objects: a multi-level hash index (hashidx.c) over an object
 * table.
 *
 * The object table is the source of truth; the hash index and the heap's
 * free lists can be rebuilt from it (repair.c). An object entry's line 0
 * (state, extent, refcount) is its commit line: create writes the name
 * line first and the commit line last.
 *
 * Every call runs under the arena lock, invalidates what it reads and
 * writes back what it writes (internal.h md_rd/md_wr).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static int check_name(const char *name)
{
	size_t n;

	if (!name)
		return cxl_seterr(CXL_EINVAL, "object name is NULL");
	n = strnlen(name, CXL_NAME_MAX + 1);
	if (n == 0)
		return cxl_seterr(CXL_EINVAL, "object name is empty");
	if (n > CXL_NAME_MAX)
		return cxl_seterr(CXL_ENAMETOOLONG,
				  "object name '%.20s...' is "
				  "longer than %d bytes: shorten it",
				  name, CXL_NAME_MAX);
	return CXL_OK;
}

/* Read and validate an object entry (both lines). */
static struct obj_ent *obj_read(struct cxl_pool *p, uint64_t idx)
{
	struct obj_ent *e = pool_obj(p, idx);

	md_rd(p, e, sizeof(*e));
	return e;
}

static bool obj_sane(struct cxl_pool *p, const struct obj_ent *e)
{
	return e->state <= OBJ_UNLINKED &&
	       cxl_name_valid(e->name, sizeof(e->name)) &&
	       (e->state == OBJ_FREE ||
		(e->asize && e->off < p->hdr.heap_size &&
		 e->asize <= p->hdr.heap_size - e->off && e->size <= e->asize));
}

/*
 * Find name in job. Returns the object index, or -1. *slot_out receives
 * the index slot that refers to it.
 */
static int64_t lookup(struct cxl_pool *p, const char *name, uint64_t job_id,
		      uint64_t *slot_out, int *err)
{
	uint64_t h = cxl_hash_key(name, job_id);

	*err = CXL_OK;
	for (unsigned l = 0; l < p->hdr.hash_levels; l++) {
		uint64_t s = cxl_hash_slot(p, h, l);
		struct hash_slot *sl = pool_slot(p, s);
		struct obj_ent *e;
		uint64_t idx;

		md_rd(p, sl, sizeof(*sl));
		if (!sl->idx1 || sl->tag != (uint32_t)(h >> 32))
			continue;
		idx = sl->idx1 - 1ull;
		if (idx >= p->hdr.capacity) {
			*err = cxl_seterr(CXL_ECORRUPT,
					  "hash slot %llu names "
					  "object %llu beyond the capacity "
					  "%llu; run 'cxlpool fsck --repair'",
					  (unsigned long long)s,
					  (unsigned long long)idx,
					  (unsigned long long)p->hdr.capacity);
			return -1;
		}
		e = obj_read(p, idx);
		if (e->state == OBJ_LIVE && e->job_id == job_id &&
		    cxl_name_valid(e->name, sizeof(e->name)) &&
		    !strcmp(e->name, name)) {
			if (!obj_sane(p, e)) {
				*err = cxl_seterr(CXL_ECORRUPT,
						  "object '%s' "
						  "has an impossible extent; "
						  "run 'cxlpool fsck --repair'",
						  name);
				return -1;
			}
			*slot_out = s;
			return (int64_t)idx;
		}
	}
	return -1;
}

static int entry_alloc(struct cxl_pool *p, uint64_t *idx)
{
	struct arena_ctl *c = pool_ctl(p);

	md_rd(p, c, 2 * sizeof(uint64_t)); /* obj_free, obj_hwm */
	if (c->obj_free) {
		uint64_t i = c->obj_free - 1;
		struct obj_ent *e;

		if (i >= p->hdr.capacity)
			goto bad;
		e = obj_read(p, i);
		if (e->state != OBJ_FREE)
			goto bad;
		c->obj_free = e->next_free;
		md_wr(p, &c->obj_free, sizeof(uint64_t));
		*idx = i;
		return CXL_OK;
	}
	if (c->obj_hwm < p->hdr.capacity) {
		*idx = c->obj_hwm++;
		md_wr(p, &c->obj_hwm, sizeof(uint64_t));
		return CXL_OK;
	}
	return cxl_seterr(CXL_ENOMETA,
			  "object table full: %llu objects "
			  "exist; destroy some, or reformat with a larger "
			  "CXL_ARENA_CAPACITY",
			  (unsigned long long)p->hdr.capacity);
bad:
	return cxl_seterr(CXL_ECORRUPT, "object free list is damaged; run "
					"'cxlpool fsck --repair'");
}

static void entry_free(struct cxl_pool *p, uint64_t idx)
{
	struct arena_ctl *c = pool_ctl(p);
	struct obj_ent *e = pool_obj(p, idx);

	md_rd(p, &c->obj_free, sizeof(uint64_t));
	e->state = OBJ_FREE;
	e->refcnt = 0;
	e->gen++;
	e->next_free = c->obj_free;
	md_wr(p, e, CXL_LINE);
	c->obj_free = idx + 1;
	md_wr(p, &c->obj_free, sizeof(uint64_t));
}

static void ctl_count(struct cxl_pool *p, int64_t dlive, int64_t dunlinked)
{
	struct arena_ctl *c = pool_ctl(p);

	md_rd(p, &c->live, 2 * sizeof(uint64_t));
	c->live += (uint64_t)dlive;
	c->unlinked += (uint64_t)dunlinked;
	md_wr(p, &c->live, 2 * sizeof(uint64_t));
}

/* Free an object's storage and entry (it must be out of the index). */
void cxl_obj_release_locked(struct cxl_pool *p, uint64_t idx)
{
	struct obj_ent *e = obj_read(p, idx);

	ctl_count(p, e->state == OBJ_LIVE ? -1 : 0,
		  e->state == OBJ_UNLINKED ? -1 : 0);
	/* A damaged extent is leaked rather than freed into the lists;
	 * fsck --repair recovers it from the object table. */
	if (obj_sane(p, e))
		(void)cxl_heap_free(p, e->off, e->asize);
	entry_free(p, idx);
}

static void fill_obj(struct cxl_pool *p, uint64_t idx, struct obj_ent *e,
		     struct cxl_obj *o)
{
	o->pool = p;
	o->off = p->hdr.heap_off + e->off;
	o->ptr = pool_heap(p) + e->off;
	o->size = e->size;
	o->idx = (uint32_t)idx;
	o->gen = e->gen;
}

static const char *job_name(struct cxl_pool *p)
{
	return p->opts.job;
}

CXL_EXPORT int cxl_obj_create(cxl_pool *p, const char *name, uint64_t size,
			      unsigned flags, struct cxl_obj *out)
{
	uint64_t idx = 0, slot, off, asize;
	struct obj_ent *e;
	int rc, err;

	if (!p || !out)
		return cxl_seterr(CXL_EINVAL, "cxl_obj_create: NULL argument");
	if ((rc = check_name(name)))
		return rc;
	if (size == 0 || (flags & ~(CXL_OBJ_ALIGN_2M | CXL_OBJ_ZERO)))
		return cxl_seterr(CXL_EINVAL,
				  "cxl_obj_create('%s'): size must "
				  "be > 0 and flags a set of CXL_OBJ_*",
				  name);
	if ((rc = cxl_arena_lock(p)))
		return rc;
	if (lookup(p, name, p->job_id, &slot, &err) >= 0 || err) {
		rc = err ? err
			 : cxl_seterr(CXL_EEXIST,
				      "object '%s' already exists "
				      "in job '%s': open it, or destroy it "
				      "first",
				      name, job_name(p));
		goto out;
	}
	if ((rc = entry_alloc(p, &idx)))
		goto out;
	rc = cxl_heap_alloc(
		p, size, flags & CXL_OBJ_ALIGN_2M ? POOL_HEAP_ALIGN : CXL_LINE,
		&off, &asize);
	if (rc) {
		entry_free(p, idx);
		goto out;
	}
	if ((rc = cxl_hash_insert_locked(p, idx, name, p->job_id))) {
		cxl_heap_free(p, off, asize);
		entry_free(p, idx);
		goto out;
	}
	e = obj_read(p, idx);
	memset(e->name, 0, sizeof(e->name));
	strcpy(e->name, name);
	md_wr(p, e->name, sizeof(e->name));
	e->flags = flags;
	e->refcnt = 1; /* the creator's handle */
	e->gen++;
	e->off = off;
	e->size = size;
	e->asize = asize;
	e->job_id = p->job_id;
	e->next_free = 0;
	e->creator_host = p->host_id;
	e->creator_pid = (uint32_t)getpid();
	e->state = OBJ_LIVE;
	/* commit line last: the name line is already in the pool */
	md_wr(p, e, CXL_LINE);
	ctl_count(p, 1, 0);
	fill_obj(p, idx, e, out);
out:
	cxl_arena_unlock(p);
	if (rc == CXL_OK && (flags & CXL_OBJ_ZERO)) {
		memset(out->ptr, 0, size);
		cxl_flush(p, out->ptr, size);
		cxl_wfence(p);
	}
	return rc;
}

/*
 * Common start of open, stat and destroy: validate the name, take the
 * arena lock and find the name in this attachment's job. Returns the
 * object index with the lock held, or -1 with *rc set and the lock free.
 */
static int64_t find_locked(cxl_pool *p, const char *name, const char *op,
			   uint64_t *slot, int *rc)
{
	int64_t idx;
	int err;

	if ((*rc = check_name(name)) || (*rc = cxl_arena_lock(p)))
		return -1;
	idx = lookup(p, name, p->job_id, slot, &err);
	if (idx >= 0)
		return idx;
	*rc = err ? err
		  : cxl_seterr(CXL_ENOENT,
			       "cannot %s '%s': no such object in job '%s'; "
			       "create it first, or check CXL_JOB",
			       op, name, job_name(p));
	cxl_arena_unlock(p);
	return -1;
}

CXL_EXPORT int cxl_obj_open(cxl_pool *p, const char *name, struct cxl_obj *out)
{
	struct obj_ent *e;
	uint64_t slot;
	int64_t idx;
	int rc;

	if (!p || !out)
		return cxl_seterr(CXL_EINVAL, "cxl_obj_open: NULL argument");
	if ((idx = find_locked(p, name, "open", &slot, &rc)) < 0)
		return rc;
	e = pool_obj(p, (uint64_t)idx);
	if (e->refcnt == UINT32_MAX) {
		rc = cxl_seterr(CXL_EBUSY,
				"object '%s' has 2^32-1 open handles", name);
	} else {
		e->refcnt++;
		md_wr(p, e, CXL_LINE);
		fill_obj(p, (uint64_t)idx, e, out);
	}
	cxl_arena_unlock(p);
	return rc;
}

CXL_EXPORT int cxl_obj_close(struct cxl_obj *o)
{
	struct cxl_pool *p;
	struct obj_ent *e;
	int rc;

	if (!o || !o->pool)
		return cxl_seterr(CXL_EINVAL, "cxl_obj_close: not an open "
					      "object");
	p = o->pool;
	if (o->idx >= p->hdr.capacity)
		return cxl_seterr(CXL_EINVAL, "cxl_obj_close: bad handle");
	if ((rc = cxl_arena_lock(p)))
		return rc;
	e = obj_read(p, o->idx);
	if (e->state == OBJ_FREE || e->gen != o->gen) {
		rc = cxl_seterr(CXL_ESTALE,
				"object at index %u was reclaimed "
				"while open (its job ended or 'cxlpool gc' "
				"ran); the handle is gone",
				o->idx);
	} else if (e->refcnt == 0) {
		rc = cxl_seterr(CXL_ECORRUPT,
				"object '%.63s' closed more often "
				"than opened",
				e->name);
	} else {
		e->refcnt--;
		md_wr(p, e, CXL_LINE);
		if (e->refcnt == 0 && e->state == OBJ_UNLINKED)
			cxl_obj_release_locked(p, o->idx);
	}
	cxl_arena_unlock(p);
	o->pool = NULL;
	o->ptr = NULL;
	return rc;
}

CXL_EXPORT int cxl_obj_destroy(cxl_pool *p, const char *name)
{
	struct hash_slot *sl;
	struct obj_ent *e;
	uint64_t slot;
	int64_t idx;
	int rc;

	if (!p)
		return cxl_seterr(CXL_EINVAL, "cxl_obj_destroy: NULL pool");
	if ((idx = find_locked(p, name, "destroy", &slot, &rc)) < 0)
		return rc;
	sl = pool_slot(p, slot);
	e = pool_obj(p, (uint64_t)idx);
	sl->idx1 = 0;
	sl->tag = 0;
	md_wr(p, sl, sizeof(*sl));
	if (e->refcnt == 0) {
		cxl_obj_release_locked(p, (uint64_t)idx);
	} else {
		e->state = OBJ_UNLINKED;
		md_wr(p, e, CXL_LINE);
		ctl_count(p, -1, 1);
	}
	cxl_arena_unlock(p);
	return CXL_OK;
}

static void fill_stat(struct cxl_pool *p, const struct obj_ent *e,
		      struct cxl_obj_stat *st)
{
	memset(st, 0, sizeof(*st));
	if (cxl_name_valid(e->name, sizeof(e->name)))
		strcpy(st->name, e->name);
	else
		strcpy(st->name, "<corrupt name>");
	st->job_id = e->job_id;
	st->off = p->hdr.heap_off + e->off;
	st->size = e->size;
	st->alloc_size = e->asize;
	st->refcnt = e->refcnt;
	st->unlinked = e->state == OBJ_UNLINKED;
	st->creator_host = e->creator_host;
	st->creator_pid = e->creator_pid;
}

CXL_EXPORT int cxl_obj_stat(cxl_pool *p, const char *name,
			    struct cxl_obj_stat *st)
{
	uint64_t slot;
	int64_t idx;
	int rc;

	if (!p || !st)
		return cxl_seterr(CXL_EINVAL, "cxl_obj_stat: NULL argument");
	if ((idx = find_locked(p, name, "stat", &slot, &rc)) < 0)
		return rc;
	fill_stat(p, pool_obj(p, (uint64_t)idx), st);
	strcpy(st->job, p->opts.job);
	cxl_arena_unlock(p);
	return CXL_OK;
}

/* Names of the jobs with live processes, read once per listing batch. */
struct job_names {
	uint64_t *id;
	char (*name)[CXL_NAME_MAX + 1];
	uint32_t n;
};

static void job_names_load(struct cxl_pool *p, struct job_names *j)
{
	j->n = 0;
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *pe = pool_proc(p, i);

		md_rd(p, pe, sizeof(*pe));
		if (pe->state != PROC_LIVE ||
		    !cxl_name_valid(pe->job, sizeof(pe->job)))
			continue;
		j->id[j->n] = pe->job_id;
		strcpy(j->name[j->n++], pe->job);
	}
}

/* Job name for an id: "global", a live job's name, or "" if unknown. */
static void job_name_of(const struct job_names *j, uint64_t id, char *out)
{
	out[0] = '\0';
	if (id == cxl_job_id(CXL_JOB_GLOBAL)) {
		strcpy(out, CXL_JOB_GLOBAL);
		return;
	}
	for (uint32_t i = 0; i < j->n; i++)
		if (j->id[i] == id) {
			strcpy(out, j->name[i]);
			return;
		}
}

#define LIST_BATCH 1024u

CXL_EXPORT int cxl_obj_list(cxl_pool *p, cxl_obj_visit_fn fn, void *arg)
{
	struct cxl_obj_stat *batch;
	struct job_names jobs;
	uint64_t cursor = 0;
	int rc = CXL_OK;

	if (!p || !fn)
		return cxl_seterr(CXL_EINVAL, "cxl_obj_list: NULL argument");
	batch = calloc(LIST_BATCH, sizeof(*batch));
	jobs.id = calloc(p->hdr.max_procs, sizeof(*jobs.id));
	jobs.name = calloc(p->hdr.max_procs, sizeof(*jobs.name));
	if (!batch || !jobs.id || !jobs.name) {
		rc = cxl_seterr(CXL_ENOMEM, "cxl_obj_list: out of memory");
		goto done;
	}
	/* Collect under the lock, call back outside it, so callbacks may use
	 * the arena themselves. */
	for (;;) {
		unsigned n = 0;
		uint64_t hwm;

		if ((rc = cxl_arena_lock(p)))
			break;
		job_names_load(p, &jobs);
		md_rd(p, &pool_ctl(p)->obj_hwm, sizeof(uint64_t));
		hwm = pool_ctl(p)->obj_hwm;
		if (hwm > p->hdr.capacity)
			hwm = p->hdr.capacity;
		for (; cursor < hwm && n < LIST_BATCH; cursor++) {
			struct obj_ent *e = obj_read(p, cursor);

			if (e->state != OBJ_LIVE && e->state != OBJ_UNLINKED)
				continue;
			fill_stat(p, e, &batch[n]);
			job_name_of(&jobs, e->job_id, batch[n].job);
			n++;
		}
		cxl_arena_unlock(p);
		for (unsigned i = 0; i < n; i++)
			if ((rc = fn(&batch[i], arg)))
				goto done;
		if (cursor >= hwm)
			break;
	}
done:
	free(batch);
	free(jobs.id);
	free(jobs.name);
	return rc;
}

CXL_EXPORT int cxl_arena_stat(cxl_pool *p, struct cxl_arena_stat *st)
{
	struct arena_ctl *c;
	int rc;

	if (!p || !st)
		return cxl_seterr(CXL_EINVAL, "cxl_arena_stat: NULL argument");
	if ((rc = cxl_arena_lock(p)))
		return rc;
	c = pool_ctl(p);
	md_rd(p, c, offsetof(struct arena_ctl, lock_gen));
	memset(st, 0, sizeof(*st));
	st->capacity = p->hdr.capacity;
	st->live = c->live;
	st->unlinked = c->unlinked;
	st->heap_size = p->hdr.heap_size;
	st->heap_free = c->heap_free;
	st->largest_free = cxl_heap_largest_free(p);
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *pe = pool_proc(p, i);

		md_rd(p, pe, sizeof(*pe));
		st->procs_live += pe->state == PROC_LIVE;
	}
	for (uint32_t i = 0; i < p->hdr.max_hosts; i++) {
		struct host_ent *h = pool_host(p, i);

		md_rd(p, &h->status, sizeof(h->status));
		st->hosts_active += h->status == HOST_ACTIVE;
	}
	cxl_arena_unlock(p);
	return CXL_OK;
}

/* Repair under the lock (repair.c rebuilds; the lock is above it). */
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
