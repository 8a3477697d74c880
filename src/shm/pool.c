/* SPDX-License-Identifier: BSD-3-Clause */
/* Attaching to and detaching from a pool. */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static bool is_devdax_path(const char *path)
{
	return strncmp(path, "/dev/dax", 8) == 0;
}

static void pool_free(struct cxl_pool *p)
{
	if (!p)
		return;
	cxl_hostlock_close(p);
	if (p->claim_fd >= 0)
		close(p->claim_fd);
	if (p->mode == CXL_COH_EMULATED)
		cxl_emu_detach(p);
	cxl_unmap(p->resv, p->resv_len);
	if (p->fd >= 0)
		close(p->fd);
	pthread_mutex_destroy(&p->mtx);
	free(p);
}

/* Read the header as it is in the pool: invalidate first in the flush
 * modes; in emulation the shared view is still mapped at base. */
static void read_hdr(struct cxl_pool *p, struct pool_hdr *h)
{
	cxl_inval(p, p->base, sizeof(*h));
	memcpy(h, p->base, sizeof(*h));
}

static int map_backend(struct cxl_pool *p, bool *created)
{
	struct stat st;
	int rc;

	*created = false;
	rc = is_devdax_path(p->opts.path) ? cxl_backend_devdax_open(p)
					  : cxl_backend_file_open(p, created);
	/* the run files follow the pool's permissions (runfile.c) */
	if (!rc && fstat(p->fd, &st) == 0) {
		p->pool_mode = st.st_mode & 0666;
		p->pool_gid = st.st_gid;
	}
	return rc;
}

static int pool_open(const struct cxl_pool_opts *o, struct cxl_pool **out,
		     bool for_format)
{
	struct cxl_pool *p;
	bool created;
	int rc;

	*out = NULL;
	if (!o || !o->path[0])
		return cxl_seterr(
			CXL_EENV,
			"no pool configured: set CXL_POOL "
			"to a DAX device (/dev/daxX.Y) or a pool file "
			"(e.g. /dev/shm/cxlpool)");
	p = calloc(1, sizeof(*p));
	if (!p)
		return cxl_seterr(CXL_ENOMEM,
				  "out of memory for a pool handle");
	p->opts = *o;
	p->fd = -1;
	p->hostlock_fd = -1;
	p->claim_fd = -1;
	pthread_mutex_init(&p->mtx, NULL);
	p->backend = is_devdax_path(o->path) ? BACKEND_DEVDAX : BACKEND_FILE;
	/* Real CXL memory defaults to flush; a file on one machine is
	 * coherent unless the emulation or another mode is asked for. */
	p->mode = o->mode_set
			  ? o->mode
			  : (p->backend == BACKEND_DEVDAX ? CXL_COH_FLUSH
							  : CXL_COH_COHERENT);
	/* formatting and the header work on the shared view: the emulator's
	 * private cache comes last (cxl_emu_attach) */
	p->coh = p->mode == CXL_COH_EMULATED ? CXL_COH_COHERENT : p->mode;
	if ((rc = cxl_coh_select(p)))
		goto fail;
	cxl_cost_setup(p);
	if ((rc = map_backend(p, &created)))
		goto fail;

	if (created || for_format) {
		/* Formatting works on the shared view, before any private
		 * emulator copy exists; a format/remove handle keeps that view.
		 * The file creator still holds its flock, so it is the only
		 * formatter of a new file. */
		if (created) {
			rc = cxl_format_mapped(p, o);
			flock(p->fd, LOCK_UN);
			if (rc) {
				unlink(o->path);
				goto fail;
			}
		}
		if (for_format) {
			*out = p;
			return CXL_OK;
		}
	}
	read_hdr(p, &p->hdr);
	if ((rc = cxl_hdr_validate(&p->hdr, p->size, o->path)))
		goto fail;
	p->size = p->hdr.pool_size;
	if (o->host_id != CXL_HOST_AUTO && o->host_id >= p->hdr.max_hosts) {
		rc = cxl_seterr(CXL_EENV,
				"CXL_HOST_ID=%u, but pool %s was "
				"formatted for %u hosts (ids 0..%u): unset "
				"CXL_HOST_ID to get an id from the pool, use "
				"a smaller id, or reformat with a larger "
				"CXL_MAX_HOSTS",
				o->host_id, o->path, p->hdr.max_hosts,
				p->hdr.max_hosts - 1);
		goto fail;
	}
	if (p->mode == CXL_COH_EMULATED && (rc = cxl_emu_attach(p)))
		goto fail;
	p->host_id = o->host_id == CXL_HOST_AUTO ? 0 : o->host_id;
	p->job_id = cxl_job_id(o->job);
	cxl_host_ident_init(p);
	*out = p;
	return CXL_OK;
fail:
	pool_free(p);
	return rc;
}

/*
 * Take a host slot and a process slot. The host's claim lock is held
 * throughout, so that no process of this host frees the slot meanwhile.
 */
static int attach_host(struct cxl_pool *p)
{
	bool autoid = p->opts.host_id == CXL_HOST_AUTO;
	int rc;

	if ((rc = cxl_host_claimlock(p)))
		return rc;
	for (int tries = 0;; tries++) {
		if (autoid && (rc = cxl_host_choose(p)))
			break;
		if ((rc = cxl_hostlock_open(p)) ||
		    (rc = cxl_host_rundir_check(p)))
			break;
		if ((rc = cxl_arena_lock(p)) == CXL_OK) {
			rc = cxl_arena_attach_proc(p);
			cxl_arena_unlock(p);
		}
		if (rc != CXL_EAGAIN || !autoid)
			break;
		cxl_hostlock_close(p); /* the slot was freed: choose again */
		if (tries == 8) {
			rc = cxl_seterr(CXL_EHOSTID,
					"host slot %u of pool %s was freed "
					"while this host was attaching, %d "
					"times; is someone running 'cxlpool gc "
					"--dead-host' for this host?",
					p->host_id, p->opts.path, tries + 1);
			break;
		}
	}
	cxl_host_claimunlock(p);
	return rc;
}

CXL_EXPORT int cxl_pool_attach(const struct cxl_pool_opts *o, cxl_pool **out)
{
	struct cxl_pool *p;
	int rc;

	if (!out)
		return cxl_seterr(CXL_EINVAL, "cxl_pool_attach: out is NULL");
	if ((rc = pool_open(o, &p, false)))
		return rc;
	if ((rc = attach_host(p))) {
		pool_free(p);
		return rc;
	}
	*out = p;
	return CXL_OK;
}

/* Shared attachments of this process (cxl_pool_attach_shared). */
static pthread_mutex_t shared_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct cxl_pool *shared_list;

/* The same pool file (not a new one made at the same path since: a
 * removed and re-created pool file is another pool), host, job, mode. */
static bool same_attachment(const struct cxl_pool *p, const char *real,
			    const struct stat *st,
			    const struct cxl_pool_opts *o)
{
	return p->attach_pid == getpid() && !strcmp(p->shared_path, real) &&
	       p->shared_dev == st->st_dev && p->shared_ino == st->st_ino &&
	       p->opts.host_id == o->host_id && !strcmp(p->opts.job, o->job) &&
	       p->opts.insn == o->insn && (!o->mode_set || p->mode == o->mode);
}

CXL_EXPORT int cxl_pool_attach_shared(const struct cxl_pool_opts *o,
				      cxl_pool **out)
{
	char real[4096];
	struct cxl_pool *p;
	struct stat st;
	int rc;

	if (!o || !out)
		return cxl_seterr(CXL_EINVAL,
				  "cxl_pool_attach_shared: NULL argument");
	pthread_mutex_lock(&shared_mtx);
	if (realpath(o->path, real) && stat(real, &st) == 0) {
		for (p = shared_list; p; p = p->shared_next)
			if (same_attachment(p, real, &st, o)) {
				p->shared_refs++;
				*out = p;
				pthread_mutex_unlock(&shared_mtx);
				return CXL_OK;
			}
	}
	/* under the mutex, so that concurrent callers get one attachment */
	rc = cxl_pool_attach(o, &p);
	if (rc == CXL_OK) {
		if (!realpath(o->path, p->shared_path))
			snprintf(p->shared_path, sizeof(p->shared_path), "%s",
				 o->path);
		/* the file we mapped, whatever the path names later */
		if ((p->fd >= 0 && fstat(p->fd, &st) == 0) ||
		    stat(p->shared_path, &st) == 0) {
			p->shared_dev = st.st_dev;
			p->shared_ino = st.st_ino;
		}
		p->attach_pid = getpid();
		p->shared_refs = 1;
		p->shared_next = shared_list;
		shared_list = p;
		*out = p;
	}
	pthread_mutex_unlock(&shared_mtx);
	return rc;
}

CXL_EXPORT bool cxl_pool_matches(const cxl_pool *p,
				 const struct cxl_pool_opts *o)
{
	char real[4096];
	struct stat st;

	return p && o && p->shared_refs && realpath(o->path, real) &&
	       stat(real, &st) == 0 && same_attachment(p, real, &st, o);
}

CXL_EXPORT int cxl_pool_attach_env(cxl_pool **out)
{
	struct cxl_pool_opts o;
	int rc;

	if ((rc = cxl_opts_from_env(&o)))
		return rc;
	return cxl_pool_attach(&o, out);
}

CXL_EXPORT int cxl_pool_detach(cxl_pool *p)
{
	int rc;

	if (!p)
		return CXL_OK;
	if (p->shared_refs) {
		struct cxl_pool **pp;

		pthread_mutex_lock(&shared_mtx);
		if (--p->shared_refs) { /* other users remain */
			pthread_mutex_unlock(&shared_mtx);
			return CXL_OK;
		}
		for (pp = &shared_list; *pp && *pp != p;
		     pp = &(*pp)->shared_next)
			;
		if (*pp)
			*pp = p->shared_next;
		pthread_mutex_unlock(&shared_mtx);
	}
	/* under the claim lock: our host's slot may be freed here */
	if ((rc = cxl_host_claimlock(p)) == CXL_OK) {
		if ((rc = cxl_arena_lock(p)) == CXL_OK) {
			cxl_arena_detach_proc(p);
			cxl_arena_unlock(p);
		}
		cxl_host_claimunlock(p);
	}
	pool_free(p);
	return rc;
}

static int count_live_procs(struct cxl_pool *p)
{
	int n = 0;

	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = pool_proc(p, i);

		cxl_inval(p, e, sizeof(*e));
		n += e->state == PROC_LIVE;
	}
	return n;
}

CXL_EXPORT int cxl_pool_format(const struct cxl_pool_opts *o, int force)
{
	struct cxl_pool *p;
	struct pool_hdr h;
	int rc;

	if ((rc = pool_open(o, &p, true)))
		return rc;
	if (p->hdr.magic == POOL_MAGIC) /* we just created and formatted it */
		goto out;
	if (p->backend == BACKEND_FILE && flock(p->fd, LOCK_EX | LOCK_NB)) {
		rc = cxl_seterr(CXL_EBUSY,
				"pool file %s is being created or "
				"formatted by another process; try again",
				o->path);
		goto out;
	}
	read_hdr(p, &h);
	if (!force && cxl_hdr_validate(&h, p->size, o->path) == CXL_OK) {
		p->hdr = h;
		int live = count_live_procs(p);

		if (live) {
			rc = cxl_seterr(CXL_EBUSY,
					"pool %s has %d attached "
					"process(es); formatting would destroy "
					"their objects: stop them (or run "
					"'cxlpool gc'), or pass --force",
					o->path, live);
			goto out;
		}
	}
	rc = cxl_format_mapped(p, o);
out:
	pool_free(p);
	return rc;
}

/* Delete <rundir>/cxlshm-<uuid>* (host lock files, emulator line locks). */
static void remove_run_files(const char *rundir, const uint8_t uuid[16])
{
	char pattern[600], hex[33];
	glob_t g;

	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
	snprintf(pattern, sizeof(pattern), "%s/cxlshm-%s*", rundir, hex);
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			unlink(g.gl_pathv[i]);
		globfree(&g);
	}
}

CXL_EXPORT int cxl_pool_remove(const struct cxl_pool_opts *o, int force)
{
	struct cxl_pool_opts oo = *o;
	struct cxl_pool *p;
	struct pool_hdr h;
	bool valid;
	int rc, live = 0;

	oo.create = 0;
	if ((rc = pool_open(&oo, &p, true)))
		return rc;
	read_hdr(p, &h);
	valid = cxl_hdr_validate(&h, p->size, o->path) == CXL_OK;
	if (valid) {
		p->hdr = h;
		live = count_live_procs(p);
	}
	if (live && !force) {
		rc = cxl_seterr(CXL_EBUSY,
				"pool %s has %d attached process(es): "
				"stop them (or run 'cxlpool gc'), or pass "
				"--force",
				o->path, live);
		goto out;
	}
	if (valid)
		remove_run_files(o->rundir, h.uuid);
	if (p->backend == BACKEND_FILE) {
		if (unlink(o->path) != 0)
			rc = cxl_seterr(CXL_ESYS, "cannot remove %s: %s",
					o->path, strerror(errno));
	} else {
		/* a device cannot be unlinked: retire its identity */
		cxl_nt_store64(p, &((struct pool_hdr *)p->base)->magic, 0);
		cxl_wfence(p);
	}
out:
	pool_free(p);
	return rc;
}

CXL_EXPORT int cxl_host_declare_dead(const struct cxl_pool_opts *o,
				     uint32_t host, unsigned window_ms,
				     int force, int *alive)
{
	struct cxl_pool_opts oo;
	struct cxl_pool *p;
	struct host_ent *h;
	int rc;

	if (!o || !alive)
		return cxl_seterr(CXL_EINVAL,
				  "cxl_host_declare_dead: NULL argument");
	*alive = 0;
	oo = *o;
	oo.create = 0;
	/* the shared view, no slot of ours: nothing here waits for a lock */
	if ((rc = pool_open(&oo, &p, true)))
		return rc;
	read_hdr(p, &p->hdr);
	if ((rc = cxl_hdr_validate(&p->hdr, p->size, o->path)))
		goto out;
	if (host >= p->hdr.max_hosts) {
		rc = cxl_seterr(CXL_EINVAL,
				"--dead-host %u: the pool has hosts "
				"0..%u",
				host, p->hdr.max_hosts - 1);
		goto out;
	}
	if (!force && (rc = cxl_host_alive(p, host, window_ms, alive)))
		goto out;
	if (*alive)
		goto out;
	/* the administrator's decision: the only write to another host's
	 * bakery line; the fence puts it in the pool before we attach */
	h = pool_host(p, host);
	cxl_nt_store64(p, &h->choosing, 0);
	cxl_nt_store64(p, &h->number, 0);
	cxl_wfence(p);
out:
	pool_free(p);
	return rc;
}

CXL_EXPORT void cxl_pool_info(const cxl_pool *p, struct cxl_pool_info *i)
{
	memset(i, 0, sizeof(*i));
	memcpy(i->uuid, p->hdr.uuid, sizeof(i->uuid));
	i->layout_version = p->hdr.version;
	i->max_hosts = p->hdr.max_hosts;
	i->max_procs = p->hdr.max_procs;
	i->pool_size = p->hdr.pool_size;
	i->capacity = p->hdr.capacity;
	i->heap_off = p->hdr.heap_off;
	i->heap_size = p->hdr.heap_size;
	i->meta_bytes = p->hdr.ordermap_off + p->hdr.heap_size / 64;
	i->format_ns = p->hdr.format_ns;
}

CXL_EXPORT void *cxl_pool_base(const cxl_pool *p)
{
	return p->base;
}

CXL_EXPORT void *cxl_pool_dma_base(const cxl_pool *p)
{
	return p->coh == CXL_COH_EMULATED ? p->emu.shared : p->base;
}

CXL_EXPORT uint64_t cxl_pool_size(const cxl_pool *p)
{
	return p->size;
}

CXL_EXPORT enum cxl_coh_mode cxl_pool_mode(const cxl_pool *p)
{
	return p->mode;
}

CXL_EXPORT enum cxl_flush_insn cxl_pool_flush_insn(const cxl_pool *p)
{
	return p->insn;
}

CXL_EXPORT uint32_t cxl_pool_host_id(const cxl_pool *p)
{
	return p->host_id;
}

CXL_EXPORT const char *cxl_pool_path(const cxl_pool *p)
{
	return p->opts.path;
}

CXL_EXPORT uint64_t cxl_pool_offset(const cxl_pool *p, const void *ptr)
{
	uintptr_t b = (uintptr_t)p->base, x = (uintptr_t)ptr;

	return x >= b && x - b < p->size ? x - b : UINT64_MAX;
}

CXL_EXPORT void *cxl_pool_ptr(const cxl_pool *p, uint64_t off, uint64_t len)
{
	if (off > p->size || len > p->size - off)
		return NULL;
	return p->base + off;
}
