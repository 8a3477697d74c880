/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arena: named objects in a pool, with a POSIX-shm-like life cycle.
 *
 * Names live in a job namespace (CXL_JOB; "global" when unset). Objects of
 * the global namespace persist until destroyed. Objects of a named job are
 * reclaimed once no live process of that job is attached, which is also how
 * a crashed job's objects are found and freed.
 *
 * destroy() behaves like shm_unlink(): the name disappears at once, the
 * storage is freed after the last close.
 */
#ifndef CXLSHM_ARENA_H
#define CXLSHM_ARENA_H

#include <stdint.h>

#include "pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* create() flags */
#define CXL_OBJ_ALIGN_2M 0x1u /* 2 MiB-aligned start (huge-page friendly) */
#define CXL_OBJ_ZERO 0x2u     /* zero the storage (and write it back) */

struct cxl_obj {
	cxl_pool *pool;
	void *ptr;     /* start of the object in this process's mapping */
	uint64_t off;  /* pool-relative offset */
	uint64_t size; /* requested size */
	uint32_t idx;  /* object-table index (internal) */
	uint32_t gen;  /* generation of that entry when opened (internal) */
};

struct cxl_obj_stat {
	char name[CXL_NAME_MAX + 1];
	char job[CXL_NAME_MAX + 1]; /* only set by cxl_obj_list */
	uint64_t job_id;
	uint64_t off, size, alloc_size;
	uint32_t refcnt;
	uint32_t unlinked; /* destroyed but still open somewhere */
	uint32_t creator_host;
	uint32_t creator_pid;
};

/* Create name (in this attachment's job) and open it. */
int cxl_obj_create(cxl_pool *p, const char *name, uint64_t size, unsigned flags,
		   struct cxl_obj *out);

/* Open an existing object of this attachment's job. */
int cxl_obj_open(cxl_pool *p, const char *name, struct cxl_obj *out);

/* Drop the reference; frees storage if destroyed and last. */
int cxl_obj_close(struct cxl_obj *o);

/* Unlink name; storage goes with the last close. */
int cxl_obj_destroy(cxl_pool *p, const char *name);

int cxl_obj_stat(cxl_pool *p, const char *name, struct cxl_obj_stat *st);

/*
 * Visit every live or unlinked object of every job. Stops and returns the
 * callback's value when it is non-zero.
 */
typedef int (*cxl_obj_visit_fn)(const struct cxl_obj_stat *st, void *arg);
int cxl_obj_list(cxl_pool *p, cxl_obj_visit_fn fn, void *arg);

/* Arena-wide figures. */
struct cxl_arena_stat {
	uint64_t capacity, live, unlinked;
	uint64_t heap_size, heap_free, largest_free;
	uint32_t procs_live, hosts_active;
};
int cxl_arena_stat(cxl_pool *p, struct cxl_arena_stat *st);

/* Attached processes, as recorded in the pool. */
struct cxl_proc_stat {
	uint32_t host;
	uint32_t pid;
	char job[CXL_NAME_MAX + 1];
	char nodename[48];
	uint64_t attach_ns; /* CLOCK_MONOTONIC of its host at attach */
	int alive;	    /* 1 alive, 0 dead, -1 unknown (other host) */
};
typedef int (*cxl_proc_visit_fn)(const struct cxl_proc_stat *st, void *arg);
int cxl_proc_list(cxl_pool *p, cxl_proc_visit_fn fn, void *arg);

/* One slot of the host table, as 'cxlpool info' shows it. */
enum cxl_host_state {
	CXL_HOST_ACTIVE = 1,	/* owned, processes attached or attaching */
	CXL_HOST_CLAIMING = 2,	/* owned, owner not attached yet */
	CXL_HOST_INCOMPLETE = 3 /* claimed with no owner: two claimers met
				 * and both lost; 'cxlpool gc --dead-host' */
};
struct cxl_host_stat {
	uint32_t id;
	enum cxl_host_state state;
	char nodename[48]; /* the owner's host name */
	char ident[32];	   /* its identity: "machine <id>" or "key <KEY>" */
	uint32_t procs;	   /* process-table entries of this host */
	int this_host;	   /* the caller's own host */
	int other_boot;	   /* this host, as recorded by an earlier boot */
};
typedef int (*cxl_host_visit_fn)(const struct cxl_host_stat *st, void *arg);
/* Visit every slot that is not free, in id order. */
int cxl_host_list(cxl_pool *p, cxl_host_visit_fn fn, void *arg);

/*
 * Garbage collection: release the slots of this host's dead processes,
 * then reclaim the objects of jobs that no live process belongs to.
 * dead_host >= 0 additionally declares that host dead (administrator
 * decision after it crashed or was rebooted). Counts are optional.
 */
int cxl_arena_gc(cxl_pool *p, int dead_host, uint64_t *procs_reclaimed,
		 uint64_t *objs_reclaimed);

/*
 * Host liveness. A process whose host is alive calls cxl_host_beat now
 * and then (the libfabric provider's heartbeat thread does, every 100
 * ms): it stores this host's clock into its host table entry. Any host
 * can then tell whether host h is alive: cxl_host_alive watches that
 * word for window_ms and sets *alive to 1 if it moved, 0 if not (a
 * crashed host, or one none of whose processes beats). CXL_OK, or
 * CXL_EINVAL for a host the pool does not have.
 */
void cxl_host_beat(cxl_pool *p);
int cxl_host_alive(cxl_pool *p, uint32_t host, unsigned window_ms, int *alive);

/*
 * Before attaching: an administrator declares host `host` of the pool that
 * o names dead. Unless force, its beat is watched for window_ms first: if
 * it moves, *alive is 1 and nothing is written. Otherwise its bakery line
 * (choosing, ticket) is cleared, the one write to another host's line, so
 * that a ticket it left (crashed, or garbage written there) cannot keep
 * the attach that follows out of the arena lock. Then cxl_arena_gc(p,
 * host, ...) frees its slot and processes. Needs no arena lock.
 */
int cxl_host_declare_dead(const struct cxl_pool_opts *o, uint32_t host,
			  unsigned window_ms, int force, int *alive);

/*
 * Check, without writing: the object table, its counters and free list,
 * the hash index, and the allocator's free lists and order map, against
 * each other. Each inconsistency is described to fn (if not NULL);
 * problems receives their number (0 for a clean pool). `cxlpool fsck`.
 */
typedef void (*cxl_check_report_fn)(const char *problem, void *arg);
int cxl_arena_check(cxl_pool *p, cxl_check_report_fn fn, void *arg,
		    uint64_t *problems);

/*
 * Rebuild the hash index and allocator from the object table (the source
 * of truth), dropping impossible entries. Used after a process died inside
 * the arena lock; `cxlpool fsck --repair` calls it after cxl_arena_check.
 * problems receives the number of object entries it had to drop.
 */
int cxl_arena_repair(cxl_pool *p, uint64_t *problems);

#ifdef __cplusplus
}
#endif
#endif
