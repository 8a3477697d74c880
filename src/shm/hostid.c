/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host identity and host-table slots, without cross-host atomics.
 *
 * Identity. A host is named by a key: FNV-1a 64 of CXL_HOST_KEY if set,
 * else of /etc/machine-id and the UTS host name. The key is stable across
 * reboots (the boot id is kept next to it, to tell an old boot's processes
 * from live ones) and distinct for the UTS namespaces that cxlrun uses as
 * emulated hosts. Without a machine id the boot id stands in for it, so a
 * reboot then claims a new slot.
 *
 * Claiming. A slot is owned while its door (claim_y) is closed. A host
 * that attaches without CXL_HOST_ID
 *  1. takes the slot whose door is closed and whose key is its own (a
 *     later process of the same host, or the same host after a reboot),
 *     else a closed door with no owner whose X is its key (a claim of
 *     this host that did not finish);
 *  2. otherwise enters the splitter of a slot whose door is open
 *     (Moir and Anderson): store X := key; if the door is closed, lose;
 *     close the door; win if X is still key. At most one of any set of
 *     concurrent claimers wins, and a claimer alone always wins. The
 *     winner stores its key right away, then fills in its identity under
 *     the arena lock, which it now may take as that slot.
 * Processes of one host claim one at a time (a host-local flock per key in
 * CXL_RUNDIR), and the owner's last process releases the slot under the
 * same flock, so a slot is never adopted by key while it is being freed.
 * Slots are tried from one derived from the key, so that hosts attaching
 * at once seldom meet in one splitter. Two claimers that do meet can both
 * lose and leave the door closed with no owner; 'cxlpool info' shows such
 * a slot as "claim incomplete" and 'cxlpool gc --dead-host N' frees it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* First line of a small text file, without trailing white space. */
static bool read_line(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	if (!fgets(out, (int)cap, f)) {
		fclose(f);
		return false;
	}
	fclose(f);
	n = strlen(out);
	while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
	return n > 0;
}

/* The boot id as 16 bytes ("b6c1...-..." without the dashes). */
static void read_boot_id(uint8_t out[16])
{
	char s[64];
	int k = 0;

	memset(out, 0, 16);
	if (!read_line("/proc/sys/kernel/random/boot_id", s, sizeof(s)))
		return;
	for (const char *c = s; *c && k < 32; c++) {
		int v = *c >= '0' && *c <= '9'	 ? *c - '0'
			: *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
						 : -1;

		if (v < 0)
			continue;
		out[k / 2] = (uint8_t)(out[k / 2] << 4 | v);
		k++;
	}
}

void cxl_host_ident_init(struct cxl_pool *p)
{
	struct host_ident *id = &p->ident;
	char machine[128] = "", buf[256];
	struct utsname u;

	memset(id, 0, sizeof(*id));
	read_boot_id(id->boot_id);
	if (uname(&u) == 0)
		snprintf(id->nodename, sizeof(id->nodename), "%.47s",
			 u.nodename);
	if (p->opts.host_key[0]) {
		snprintf(buf, sizeof(buf), "key:%s", p->opts.host_key);
		snprintf(id->show, sizeof(id->show), "key %.27s",
			 p->opts.host_key);
	} else {
		if (!read_line("/etc/machine-id", machine, sizeof(machine)) &&
		    !read_line("/var/lib/dbus/machine-id", machine,
			       sizeof(machine))) {
			/* no stable id: this boot is the identity */
			for (int i = 0; i < 16; i++)
				snprintf(machine + 2 * i, 3, "%02x",
					 id->boot_id[i]);
			id->no_machine_id = true;
		}
		snprintf(buf, sizeof(buf), "machine:%s/%s", machine,
			 id->nodename);
		snprintf(id->show, sizeof(id->show), "%s %.12s",
			 id->no_machine_id ? "boot" : "machine", machine);
	}
	id->key = cxl_fnv1a(buf, strlen(buf), FNV_SEED);
	if (id->key == 0) /* 0 means "no owner" in the pool */
		id->key = 1;
}

int cxl_host_claimlock(struct cxl_pool *p)
{
	char path[512], suffix[48];
	struct cxl_backoff b;

	if (p->claim_fd < 0) {
		snprintf(suffix, sizeof(suffix), "-claim-%016llx.lock",
			 (unsigned long long)p->ident.key);
		int rc = cxl_runfile_open(p, suffix, "host claim lock file",
					  path, sizeof(path), &p->claim_fd);

		if (rc)
			return rc;
	}
	cxl_backoff_init(&b, p->opts.lock_timeout_ms);
	while (flock(p->claim_fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return cxl_seterr(CXL_ESYS,
					  "flock on the host claim lock "
					  "failed: %s",
					  strerror(errno));
		if (cxl_backoff_wait(&b))
			return cxl_seterr(CXL_ETIMEDOUT,
					  "another process of this host held "
					  "its claim lock in %s for more than "
					  "%u ms (CXL_LOCK_TIMEOUT_MS); is it "
					  "stuck attaching to %s?",
					  p->opts.rundir,
					  p->opts.lock_timeout_ms,
					  p->opts.path);
	}
	return CXL_OK;
}

void cxl_host_claimunlock(struct cxl_pool *p)
{
	if (p->claim_fd >= 0)
		flock(p->claim_fd, LOCK_UN);
}

/* Moir-Anderson splitter on the slot's claim line. */
bool cxl_host_splitter(struct cxl_pool *p, uint32_t s, uint64_t key)
{
	struct host_ent *h = pool_host(p, s);

	cxl_nt_store64(p, &h->claim_x, key);
	cxl_fence(p); /* X visible before we look at the door */
	if (cxl_nt_load64(p, &h->claim_y))
		return false;
	cxl_nt_store64(p, &h->claim_y, 1);
	cxl_fence(p); /* door closed before we look at X again */
	return cxl_nt_load64(p, &h->claim_x) == key;
}

int cxl_host_choose(struct cxl_pool *p)
{
	uint32_t n = p->hdr.max_hosts, start;
	uint64_t key = p->ident.key;

	uint32_t orphan = n;

	p->host_claimed = false;
	/* 1. our own slot; failing that, a closed door with no owner whose X
	 * is ours (we hold the claim lock: no process of ours is claiming
	 * now, and another host's claimer would have changed X). The latter
	 * is a claim of ours that won and did not finish, or one that lost
	 * to a door closed by others while a process of ours won elsewhere:
	 * so the owned slot comes first, or one host would hold two ids. */
	for (uint32_t s = 0; s < n; s++) {
		struct host_ent *h = pool_host(p, s);
		uint64_t k = cxl_nt_load64(p, &h->key);

		if (!cxl_nt_load64(p, &h->claim_y))
			continue;
		if (k == key) {
			p->host_id = s;
			return CXL_OK;
		}
		if (k == 0 && orphan == n &&
		    cxl_nt_load64(p, &h->claim_x) == key)
			orphan = s;
	}
	if (orphan < n) {
		p->host_id = orphan;
		p->host_claimed = true;
		return CXL_OK;
	}
	/* 2. a free slot: the one we had before, then one never used, then
	 * any; each pass starts at a slot derived from the key */
	start = (uint32_t)((key >> 17) % n);
	for (int pass = 0; pass < 3; pass++) {
		for (uint32_t i = 0; i < n; i++) {
			uint32_t s = (start + i) % n;
			struct host_ent *h = pool_host(p, s);
			uint64_t last = cxl_nt_load64(p, &h->last_key);

			if (cxl_nt_load64(p, &h->claim_y))
				continue;
			if ((pass == 0 && last != key) ||
			    (pass == 1 && last != 0))
				continue;
			if (!cxl_host_splitter(p, s, key))
				continue;
			/* ours: say so at once, to shrink the window in which
			 * the slot is claimed but shows no owner */
			cxl_nt_store64(p, &h->key, key);
			cxl_wfence(p);
			p->host_id = s;
			p->host_claimed = true;
			return CXL_OK;
		}
	}
	return cxl_seterr(CXL_EHOSTID,
			  "no free host slot in pool %s: all %u are owned "
			  "by other hosts ('cxlpool info' lists them). Run "
			  "'cxlpool gc --dead-host N' for hosts that are "
			  "gone, or reformat with a larger CXL_MAX_HOSTS",
			  p->opts.path, n);
}

/* Live process entries of host s (any state of those processes). */
static uint32_t count_procs(struct cxl_pool *p, uint32_t s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = pool_proc(p, i);

		md_rd(p, e, sizeof(*e));
		n += e->state == PROC_LIVE && e->host == s;
	}
	return n;
}

uint64_t cxl_host_clear_procs_locked(struct cxl_pool *p, uint32_t s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = pool_proc(p, i);

		md_rd(p, e, sizeof(*e));
		if (e->state == PROC_LIVE && e->host == s) {
			memset(e, 0, sizeof(*e));
			md_wr(p, e, sizeof(*e));
			n++;
		}
	}
	return n;
}

int cxl_host_check_locked(struct cxl_pool *p)
{
	struct host_ent *h = pool_host(p, p->host_id);
	uint64_t key = p->ident.key;
	uint32_t others;

	md_rd(p, h->nodename, CXL_LINE);
	md_rd(p, &h->key, CXL_LINE);
	if (p->opts.host_id == CXL_HOST_AUTO) {
		/* chosen outside the lock: still ours? (only an administrator's
		 * 'gc --dead-host' can have freed it since) */
		if (!cxl_nt_load64(p, &h->claim_y) ||
		    (h->key != key && h->key != 0))
			return CXL_EAGAIN;
	} else if (h->key && h->key != key &&
		   (others = count_procs(p, p->host_id))) {
		char other[49];

		/* Another machine uses this id while it has processes: both
		 * would run the bakery as one host, which breaks the lock. */
		cxl_pool_text(other, sizeof(other), h->nodename,
			      sizeof(h->nodename));
		return cxl_seterr(CXL_EHOSTID,
				  "CXL_HOST_ID=%u is in use by host '%s' (%u "
				  "processes) in pool %s: unset CXL_HOST_ID "
				  "to get an id from the pool, or give every "
				  "host its own; if '%s' is gone, run "
				  "'cxlpool gc --dead-host %u'",
				  p->host_id, other, others, p->opts.path,
				  other, p->host_id);
	}
	/* Our slot from an earlier boot: its processes died with it. */
	if (h->key == key &&
	    memcmp(h->boot_id, p->ident.boot_id, sizeof(h->boot_id)))
		(void)cxl_host_clear_procs_locked(p, p->host_id);
	return CXL_OK;
}

/*
 * All processes of one host must share one CXL_RUNDIR: the host lock that
 * puts them in the arena lock one at a time is a file there. Two rundirs
 * under one host id means two processes in the bakery as one host at
 * once, which breaks the lock ('died holding the arena lock', damaged
 * metadata). So before the lock, a process of host h looks for live
 * processes of h (same machine: their pids can be checked) registered
 * with another rundir, and refuses. The rundir's identity is its device
 * and inode, so two paths of one directory are one rundir.
 */
int cxl_host_rundir_check(struct cxl_pool *p)
{
	struct stat st;

	if (stat(p->opts.rundir, &st) != 0)
		return cxl_seterr(CXL_EENV, "CXL_RUNDIR=%s: %s", p->opts.rundir,
				  strerror(errno));
	p->rundir_id = cxl_fnv1a(&st.st_dev, sizeof(st.st_dev), FNV_SEED);
	p->rundir_id = cxl_fnv1a(&st.st_ino, sizeof(st.st_ino), p->rundir_id);
	p->rundir_id |= 1; /* 0 means none */
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = pool_proc(p, i);

		/* without the lock: an entry may be changing; a torn one is
		 * at worst a false alarm that the next attach clears */
		md_rd(p, e, sizeof(*e));
		if (e->state != PROC_LIVE || e->host != p->host_id ||
		    !e->rundir || e->rundir == p->rundir_id ||
		    !cxl_proc_alive((int)e->pid, e->starttime))
			continue;
		return cxl_seterr(CXL_EHOSTID,
				  "host %u of pool %s is in use by process "
				  "%u with another CXL_RUNDIR than %s: every "
				  "process of one host must use the same "
				  "CXL_RUNDIR (the host's lock files are "
				  "there). Give this process that CXL_RUNDIR, "
				  "or its own host identity (CXL_HOST_KEY)",
				  p->host_id, p->opts.path, e->pid,
				  p->opts.rundir);
	}
	return CXL_OK;
}

void cxl_host_adopt_locked(struct cxl_pool *p)
{
	struct host_ent *h = pool_host(p, p->host_id);

	/* an explicit CXL_HOST_ID closes the door, so that claimers pass */
	if (!cxl_nt_load64(p, &h->claim_y)) {
		cxl_nt_store64(p, &h->claim_x, p->ident.key);
		cxl_nt_store64(p, &h->claim_y, 1);
	}
	memcpy(h->nodename, p->ident.nodename, sizeof(h->nodename));
	h->status = HOST_ACTIVE;
	h->seen_ns = cxl_now_ns();
	md_wr(p, h->nodename, CXL_LINE);
	h->key = p->ident.key;
	memcpy(h->boot_id, p->ident.boot_id, sizeof(h->boot_id));
	memcpy(h->ident, p->ident.show, sizeof(h->ident));
	md_wr(p, &h->key, CXL_LINE);
}

void cxl_host_release_locked(struct cxl_pool *p, uint32_t s)
{
	struct host_ent *h = pool_host(p, s);

	md_rd(p, h->nodename, CXL_LINE);
	md_rd(p, &h->key, CXL_LINE);
	memset(h->nodename, 0, sizeof(h->nodename));
	h->status = HOST_UNUSED;
	md_wr(p, h->nodename, CXL_LINE);
	if (h->key)
		h->last_key = h->key;
	h->key = 0;
	md_wr(p, &h->key, CXL_LINE);
	/* owner gone before the door opens: a claimer that sees the door
	 * open never sees the old owner's key */
	cxl_wfence(p);
	cxl_nt_store64(p, &h->claim_x, 0);
	cxl_nt_store64(p, &h->claim_y, 0);
	cxl_wfence(p);
}

CXL_EXPORT void cxl_host_beat(cxl_pool *p)
{
	struct host_ent *h;

	if (!p || p->host_id >= p->hdr.max_hosts)
		return;
	h = pool_host(p, p->host_id);
	/* line 0 is this host's alone (bakery): a non-temporal store, which
	 * the fence sends on its way rather than leaving it combining */
	cxl_nt_store64(p, &h->beat, cxl_now_ns());
	cxl_wfence(p);
}

CXL_EXPORT int cxl_host_alive(cxl_pool *p, uint32_t host, unsigned window_ms,
			      int *alive)
{
	const struct timespec step = { 0, 10 * 1000000L };
	uint64_t t0, first;
	struct host_ent *h;

	if (!p || !alive)
		return cxl_seterr(CXL_EINVAL, "cxl_host_alive: NULL argument");
	if (host >= p->hdr.max_hosts)
		return cxl_seterr(CXL_EINVAL,
				  "host %u: the pool has hosts 0..%u", host,
				  p->hdr.max_hosts - 1);
	h = pool_host(p, host);
	first = cxl_nt_load64(p, &h->beat);
	t0 = cxl_now_ns();
	*alive = 0;
	while (!*alive && cxl_now_ns() - t0 < (uint64_t)window_ms * 1000000u) {
		nanosleep(&step, NULL);
		*alive = cxl_nt_load64(p, &h->beat) != first;
	}
	return CXL_OK;
}

CXL_EXPORT int cxl_host_list(cxl_pool *p, cxl_host_visit_fn fn, void *arg)
{
	struct cxl_host_stat *v;
	int rc;

	if (!p || !fn)
		return cxl_seterr(CXL_EINVAL, "cxl_host_list: NULL argument");
	v = calloc(p->hdr.max_hosts, sizeof(*v)); /* v[s]: slot s */
	if (!v)
		return cxl_seterr(CXL_ENOMEM, "cxl_host_list: out of memory");
	if ((rc = cxl_arena_lock(p))) {
		free(v);
		return rc;
	}
	for (uint32_t s = 0; s < p->hdr.max_hosts; s++) {
		struct host_ent *h = pool_host(p, s);
		struct cxl_host_stat *st = &v[s];
		uint64_t door = cxl_nt_load64(p, &h->claim_y);

		md_rd(p, h->nodename, CXL_LINE);
		md_rd(p, &h->key, CXL_LINE);
		if (!door && h->status != HOST_ACTIVE)
			continue; /* free: state stays 0 */
		st->id = s;
		st->state = h->status == HOST_ACTIVE ? CXL_HOST_ACTIVE
			    : h->key		     ? CXL_HOST_CLAIMING
						     : CXL_HOST_INCOMPLETE;
		cxl_pool_text(st->nodename, sizeof(st->nodename), h->nodename,
			      sizeof(h->nodename));
		cxl_pool_text(st->ident, sizeof(st->ident), h->ident,
			      sizeof(h->ident));
		st->this_host = s == p->host_id;
		st->other_boot = h->key &&
				 memcmp(h->boot_id, p->ident.boot_id, 16) &&
				 h->key == p->ident.key;
	}
	/* process counts in one pass (host read from the pool: bounded) */
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = pool_proc(p, i);

		md_rd(p, e, sizeof(*e));
		if (e->state == PROC_LIVE && e->host < p->hdr.max_hosts)
			v[e->host].procs++;
	}
	cxl_arena_unlock(p);
	rc = CXL_OK;
	for (uint32_t s = 0; s < p->hdr.max_hosts && !rc; s++)
		if (v[s].state)
			rc = fn(&v[s], arg);
	free(v);
	return rc;
}
