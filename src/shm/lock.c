/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arena lock, built from loads, stores, flushes and fences only.
 *
 * Two levels:
 *  1. processes of one host serialise on a host-local flock (and threads
 *     of one process on a mutex), so at most one contender per host;
 *  2. hosts run Lamport's bakery algorithm over the host table. Host h
 *     writes only line 0 of its own entry (choosing, number), always with
 *     non-temporal stores followed by a fence, and reads other hosts'
 *     entries with uncached loads. Bakery needs no read-modify-write and
 *     tolerates non-atomic reads, which is exactly what a non-coherent pool
 *     without cross-host atomics offers (docs/coherence.md has the proof
 *     sketch).
 *
 * A process that dies in the critical section releases its flock (the
 * kernel does that), but leaves its host's bakery number set. The next
 * process of that host sees the number, knows it takes over a broken
 * critical section, and rebuilds the derived metadata (cxl_arena_repair).
 * A whole host that dies while holding or requesting the lock blocks the
 * others until an administrator clears it with 'cxlpool gc --dead-host N';
 * until then every waiter gives up after CXL_LOCK_TIMEOUT_MS with
 * CXL_ETIMEDOUT naming that host, instead of hanging.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "internal.h"

int cxl_hostlock_open(struct cxl_pool *p)
{
	char path[512], suffix[32];

	snprintf(suffix, sizeof(suffix), "-host%u.lock", p->host_id);
	return cxl_runfile_open(p, suffix, "host lock file", path, sizeof(path),
				&p->hostlock_fd);
}

void cxl_hostlock_close(struct cxl_pool *p)
{
	if (p->hostlock_fd >= 0)
		close(p->hostlock_fd);
	p->hostlock_fd = -1;
}

static int host_flock(struct cxl_pool *p)
{
	struct cxl_backoff b;

	cxl_backoff_init(&b, p->opts.lock_timeout_ms);
	while (flock(p->hostlock_fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return cxl_seterr(CXL_ESYS,
					  "flock on the host lock "
					  "failed: %s",
					  strerror(errno));
		if (cxl_backoff_wait(&b))
			return cxl_seterr(CXL_ETIMEDOUT,
					  "arena lock: another "
					  "process of host %u held the host "
					  "lock for more than %u ms "
					  "(CXL_LOCK_TIMEOUT_MS); is it stuck?",
					  p->host_id, p->opts.lock_timeout_ms);
	}
	return CXL_OK;
}

static int bakery_timeout(struct cxl_pool *p, uint32_t j)
{
	struct host_ent *h = pool_host(p, j);
	char name[49];

	cxl_inval(p, h->nodename, sizeof(h->nodename));
	cxl_pool_text(name, sizeof(name), h->nodename, sizeof(h->nodename));
	return cxl_seterr(CXL_ETIMEDOUT,
			  "arena lock: host %u ('%s') has "
			  "held or requested the lock for more than %u ms "
			  "(CXL_LOCK_TIMEOUT_MS). If that host crashed, run "
			  "'cxlpool gc --dead-host %u' on a live host",
			  j, name, p->opts.lock_timeout_ms, j);
}

static int bakery_acquire(struct cxl_pool *p)
{
	uint32_t me = p->host_id, n = p->hdr.max_hosts;
	struct host_ent *mine = pool_host(p, me);
	uint64_t max = 0, ticket;
	struct cxl_backoff b;

	/* Our own number still set: the previous holder on this host died
	 * inside the critical section (its flock was released by the kernel).
	 * Take over its turn, and repair once inside. */
	if (cxl_nt_load64(p, &mine->number) != 0)
		p->took_over = true;

	cxl_nt_store64(p, &mine->choosing, 1);
	cxl_fence(p); /* choosing visible before we read the numbers */
	for (uint32_t j = 0; j < n; j++) {
		uint64_t v = cxl_nt_load64(p, &pool_host(p, j)->number);

		if (v > max)
			max = v;
	}
	ticket = max + 1;
	cxl_nt_store64(p, &mine->number, ticket);
	cxl_fence(p); /* number visible before choosing is cleared */
	cxl_nt_store64(p, &mine->choosing, 0);
	cxl_fence(p); /* and before we read the others' state */

	cxl_backoff_init(&b, p->opts.lock_timeout_ms);
	for (uint32_t j = 0; j < n; j++) {
		struct host_ent *h = pool_host(p, j);

		if (j == me)
			continue;
		while (cxl_nt_load64(p, &h->choosing))
			if (cxl_backoff_wait(&b))
				goto timeout;
		for (;;) {
			uint64_t v = cxl_nt_load64(p, &h->number);

			/* Lower ticket, or equal ticket and lower id, wins. */
			if (v == 0 || v > ticket || (v == ticket && j > me))
				break;
			if (cxl_backoff_wait(&b))
				goto timeout;
		}
	}
	return CXL_OK;
timeout:
	for (uint32_t j = 0; j < n; j++) {
		struct host_ent *h = pool_host(p, j);
		uint64_t v;

		if (j == me)
			continue;
		v = cxl_nt_load64(p, &h->number);
		if (cxl_nt_load64(p, &h->choosing) ||
		    (v && (v < ticket || (v == ticket && j < me)))) {
			cxl_nt_store64(p, &mine->number, 0);
			cxl_wfence(p);
			return bakery_timeout(p, j);
		}
	}
	cxl_nt_store64(p, &mine->number, 0);
	cxl_wfence(p);
	return cxl_seterr(CXL_ETIMEDOUT,
			  "arena lock not acquired within %u "
			  "ms (CXL_LOCK_TIMEOUT_MS)",
			  p->opts.lock_timeout_ms);
}

int cxl_arena_lock(struct cxl_pool *p)
{
	struct arena_ctl *c = pool_ctl(p);
	int rc;

	pthread_mutex_lock(&p->mtx);
	if ((rc = host_flock(p)))
		goto fail_mutex;
	p->took_over = false;
	if ((rc = bakery_acquire(p)))
		goto fail_flock;
	p->in_cs = true;
	if (p->took_over) {
		uint64_t problems;

		fprintf(stderr,
			"cxlshm: %s: a process of host %u died holding "
			"the arena lock; rebuilding the arena index\n",
			p->opts.path, p->host_id);
		if ((rc = cxl_arena_repair_locked(p, &problems))) {
			cxl_arena_unlock(p);
			return rc;
		}
	}
	md_rd(p, &c->lock_gen, 4 * sizeof(uint64_t));
	c->lock_gen++;
	c->owner_host = p->host_id;
	c->owner_pid = (uint64_t)getpid();
	c->owner_ns = cxl_now_ns();
	md_wr(p, &c->lock_gen, 4 * sizeof(uint64_t));
	return CXL_OK;
fail_flock:
	flock(p->hostlock_fd, LOCK_UN);
fail_mutex:
	pthread_mutex_unlock(&p->mtx);
	return rc;
}

void cxl_arena_unlock(struct cxl_pool *p)
{
	/* Every metadata write-back of the critical section reaches the pool
	 * before the next holder (which invalidates on read) can enter. */
	cxl_wfence(p);
	cxl_nt_store64(p, &pool_host(p, p->host_id)->number, 0);
	cxl_wfence(p);
	p->in_cs = false;
	flock(p->hostlock_fd, LOCK_UN);
	pthread_mutex_unlock(&p->mtx);
}
