/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Process and host registration, job namespaces and garbage collection.
 *
 * Liveness: a host can tell for certain only whether its own processes are
 * alive (pid + start time). So each host reclaims its own dead processes,
 * automatically on attach and on 'cxlpool gc'. A crashed host is declared
 * dead by an administrator ('cxlpool gc --dead-host N'), which releases its
 * process slots and its bakery entry.
 *
 * Objects of a named job are reclaimed once no live process of the job is
 * attached anywhere; objects of the global namespace persist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static struct proc_ent *proc_read(struct cxl_pool *p, uint32_t i)
{
	struct proc_ent *e = pool_proc(p, i);

	md_rd(p, e, sizeof(*e));
	return e;
}

static void proc_clear(struct cxl_pool *p, uint32_t i)
{
	struct proc_ent *e = pool_proc(p, i);

	memset(e, 0, sizeof(*e));
	md_wr(p, e, sizeof(*e));
}

/* Release slots of this host's processes that no longer exist. */
static uint64_t reap_local(struct cxl_pool *p)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = proc_read(p, i);

		if (e->state != PROC_LIVE || e->host != p->host_id)
			continue;
		if (!cxl_proc_alive((int)e->pid, e->starttime)) {
			proc_clear(p, i);
			n++;
		}
	}
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Reclaim objects whose job has no live process. only_job != 0 restricts
 * the scan to that job (used on detach).
 */
static int reclaim(struct cxl_pool *p, uint64_t only_job, uint64_t *objs)
{
	uint64_t global = cxl_job_id(CXL_JOB_GLOBAL), hwm, nlive = 0, n = 0;
	uint64_t *live = malloc(sizeof(uint64_t) * p->hdr.max_procs);

	if (!live)
		return cxl_seterr(CXL_ENOMEM, "gc: out of memory");
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = proc_read(p, i);

		if (e->state == PROC_LIVE)
			live[nlive++] = e->job_id;
	}
	qsort(live, nlive, sizeof(uint64_t), cmp_u64);
	md_rd(p, &pool_ctl(p)->obj_hwm, sizeof(uint64_t));
	hwm = pool_ctl(p)->obj_hwm;
	if (hwm > p->hdr.capacity)
		hwm = p->hdr.capacity;
	for (uint64_t i = 0; i < hwm; i++) {
		struct obj_ent *e = pool_obj(p, i);

		md_rd(p, e, CXL_LINE);
		if (e->state != OBJ_LIVE && e->state != OBJ_UNLINKED)
			continue;
		if (e->job_id == global || (only_job && e->job_id != only_job))
			continue;
		if (bsearch(&e->job_id, live, nlive, sizeof(uint64_t), cmp_u64))
			continue;
		md_rd(p, e->name, sizeof(e->name));
		if (e->state == OBJ_LIVE &&
		    cxl_name_valid(e->name, sizeof(e->name)))
			cxl_hash_remove_locked(p, i, e->name, e->job_id);
		cxl_obj_release_locked(p, i);
		n++;
	}
	free(live);
	if (objs)
		*objs += n;
	return CXL_OK;
}

int cxl_arena_reclaim_jobs(struct cxl_pool *p, uint64_t *objs)
{
	return reclaim(p, 0, objs);
}

int cxl_arena_attach_proc(struct cxl_pool *p)
{
	uint32_t free_slot = UINT32_MAX;
	struct proc_ent *e;
	int rc;

	if ((rc = cxl_host_check_locked(p)))
		return rc;
	if (!p->opts.no_reap && reap_local(p))
		(void)reclaim(p, 0, NULL);
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		e = proc_read(p, i);
		if (e->state == PROC_FREE) {
			free_slot = i;
			break;
		}
	}
	if (free_slot == UINT32_MAX)
		return cxl_seterr(CXL_ENOPROC,
				  "process table of %s is full "
				  "(%u slots): run 'cxlpool gc', or reformat "
				  "with a larger CXL_MAX_PROCS",
				  p->opts.path, p->hdr.max_procs);
	e = pool_proc(p, free_slot);
	memset(e, 0, sizeof(*e));
	e->host = p->host_id;
	e->pid = (uint32_t)getpid();
	e->starttime = cxl_proc_starttime((int)e->pid);
	e->job_id = p->job_id;
	e->attach_ns = cxl_now_ns();
	e->rundir = p->rundir_id;
	strcpy(e->job, p->opts.job);
	e->state = PROC_LIVE;
	md_wr(p, e, sizeof(*e));
	p->proc_slot = free_slot + 1;
	cxl_host_adopt_locked(p);
	return CXL_OK;
}

void cxl_arena_detach_proc(struct cxl_pool *p)
{
	uint32_t same_host = 0, same_job = 0;

	if (p->proc_slot) {
		struct proc_ent *e = proc_read(p, p->proc_slot - 1);

		/* only clear it if it is still ours (gc may have taken it) */
		if (e->state == PROC_LIVE && e->pid == (uint32_t)getpid() &&
		    e->host == p->host_id)
			proc_clear(p, p->proc_slot - 1);
		p->proc_slot = 0;
	}
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = proc_read(p, i);

		if (e->state != PROC_LIVE)
			continue;
		same_host += e->host == p->host_id;
		same_job += e->job_id == p->job_id;
	}
	if (!same_job && p->job_id != cxl_job_id(CXL_JOB_GLOBAL))
		(void)reclaim(p, p->job_id, NULL);
	if (!same_host) /* our host's last process: free its slot */
		cxl_host_release_locked(p, p->host_id);
}

CXL_EXPORT int cxl_proc_list(cxl_pool *p, cxl_proc_visit_fn fn, void *arg)
{
	struct cxl_proc_stat *v;
	uint32_t n = 0;
	int rc;

	if (!p || !fn)
		return cxl_seterr(CXL_EINVAL, "cxl_proc_list: NULL argument");
	v = calloc(p->hdr.max_procs, sizeof(*v));
	if (!v)
		return cxl_seterr(CXL_ENOMEM, "cxl_proc_list: out of memory");
	if ((rc = cxl_arena_lock(p))) {
		free(v);
		return rc;
	}
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = proc_read(p, i);
		struct host_ent *h;

		if (e->state != PROC_LIVE || e->host >= p->hdr.max_hosts)
			continue;
		v[n].host = e->host;
		v[n].pid = e->pid;
		if (cxl_name_valid(e->job, sizeof(e->job)))
			strcpy(v[n].job, e->job);
		h = pool_host(p, e->host);
		md_rd(p, h->nodename, sizeof(h->nodename));
		snprintf(v[n].nodename, sizeof(v[n].nodename), "%.47s",
			 h->nodename);
		v[n].attach_ns = e->attach_ns;
		v[n].alive =
			e->host != p->host_id
				? -1
				: cxl_proc_alive((int)e->pid, e->starttime);
		n++;
	}
	cxl_arena_unlock(p);
	rc = CXL_OK;
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = fn(&v[i], arg);
	free(v);
	return rc;
}

CXL_EXPORT int cxl_arena_gc(cxl_pool *p, int dead_host,
			    uint64_t *procs_reclaimed, uint64_t *objs)
{
	uint64_t np = 0, no = 0;
	int rc;

	if (!p)
		return cxl_seterr(CXL_EINVAL, "cxl_arena_gc: NULL pool");
	if (dead_host >= 0) {
		struct host_ent *h;

		if ((uint32_t)dead_host >= p->hdr.max_hosts)
			return cxl_seterr(CXL_EINVAL,
					  "--dead-host %d: the pool "
					  "has hosts 0..%u",
					  dead_host, p->hdr.max_hosts - 1);
		if ((uint32_t)dead_host == p->host_id)
			return cxl_seterr(CXL_EINVAL,
					  "--dead-host %d is this "
					  "host's id; run gc on another "
					  "host",
					  dead_host);
		/* Clear its bakery entry first: a dead host holding a ticket
		 * would otherwise keep us out of the lock forever. This is the
		 * one write to another host's bakery line, and only an
		 * administrator's decision allows it. */
		h = pool_host(p, (uint32_t)dead_host);
		cxl_nt_store64(p, &h->choosing, 0);
		cxl_nt_store64(p, &h->number, 0);
		cxl_wfence(p);
	}
	if ((rc = cxl_arena_lock(p)))
		return rc;
	if (dead_host >= 0) {
		np += cxl_host_clear_procs_locked(p, (uint32_t)dead_host);
		cxl_host_release_locked(p, (uint32_t)dead_host);
	}
	np += reap_local(p);
	rc = reclaim(p, 0, &no);
	cxl_arena_unlock(p);
	if (procs_reclaimed)
		*procs_reclaimed = np;
	if (objs)
		*objs = no;
	return rc;
}
