/* SPDX-License-Identifier: BSD-3-Clause */
/* libcxlshm internals shared between the files of src/shm. */
#ifndef CXLSHM_INTERNAL_H
#define CXLSHM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cxlshm/cxlshm.h"
#include "layout.h"

#define CXL_EXPORT __attribute__((visibility("default")))
#define CXL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define CXL_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((uint64_t)(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((uint64_t)(a) - 1))

enum cxl_backend {
	BACKEND_FILE = 1,
	BACKEND_DEVDAX = 2
};

/* Non-coherent emulation state (emu.c). */
struct emu_state {
	uint8_t *shared; /* the pool as all hosts see it ("memory") */
	_Atomic uint64_t *linelock; /* per-line-stripe seqlocks, host-local */
	size_t nlocks;
	void *lock_map;
	size_t lock_map_len;
	uint64_t pid_tag; /* our pid << 32: a locked word names its holder */
};

/* The cost model of an attachment, in picoseconds (costmodel.c). */
struct cost_rt {
	bool on; /* CXL_COST_MODEL set and the mode not coherent */
	uint64_t load_ps, wb_ps, nt_ps, fence_ps;
	uint64_t line_ps; /* one 64-byte line at the device bandwidth */
};

/* This host's identity (hostid.c). */
struct host_ident {
	uint64_t key;	     /* FNV-1a 64 of the identity string, never 0 */
	uint8_t boot_id[16]; /* /proc/sys/kernel/random/boot_id */
	char nodename[48];   /* uname -n, for display */
	char show[32];	     /* identity for display */
	bool no_machine_id;  /* no /etc/machine-id: the boot id stands in */
};

struct cxl_pool {
	struct cxl_pool_opts opts;
	enum cxl_backend backend;
	int fd;
	mode_t pool_mode; /* the pool's rw bits and group: its run files' */
	gid_t pool_gid;
	uint8_t *base; /* this process's view: the private "cache" in emulation
			*/
	uint64_t size;
	void *resv; /* reservation including guard pages */
	size_t resv_len;
	enum cxl_coh_mode
		mode; /* configured (CXL_COHERENCE or the backend's) */
	/* the mode the coherence operations act in: mode, once its view
	 * exists; in emulation the shared view (coherent) until the
	 * emulator's private cache is set up (cxl_emu_attach) */
	enum cxl_coh_mode coh;
	enum cxl_flush_insn insn;
	struct cost_rt cost;
	struct emu_state emu;
	void *emu_resv; /* reservation of the shared view in emulation */
	size_t emu_resv_len;

	struct pool_hdr
		hdr; /* validated private copy; immutable after format */

	/* arena state of this attachment */
	pthread_mutex_t mtx; /* serialises this process's threads */
	int hostlock_fd;     /* flock: serialises this host's processes */
	uint32_t host_id;
	struct host_ident ident;
	int claim_fd;	    /* flock: serialises this host's claims */
	bool host_claimed;  /* host_id came from a new claim */
	uint32_t proc_slot; /* index + 1 in the process table; 0 = none */
	uint64_t
		rundir_id; /* identity of opts.rundir (cxl_host_rundir_check) */
	uint64_t job_id;
	bool in_cs;
	bool took_over; /* acquired the lock from a dead holder of this host */
	/* cxl_pool_attach_shared: users of this attachment, and its key */
	int shared_refs;	/* 0: not shared */
	char shared_path[4096]; /* realpath of opts.path */
	dev_t shared_dev;	/* and the file it named at attach */
	ino_t shared_ino;
	pid_t attach_pid;	      /* the process that attached */
	struct cxl_pool *shared_next; /* list of shared attachments */
};

/* error.c */
int cxl_seterr(int code, const char *fmt, ...) CXL_PRINTF(2, 3);

/* util.c */
/* Text read from the pool (a host name, an identity), for a message: at
 * most n bytes up to a NUL, each byte outside printable ASCII as '?'. */
void cxl_pool_text(char *dst, size_t dstsz, const char *src, size_t n);
uint64_t cxl_fnv1a(const void *p, size_t n, uint64_t h);
#define FNV_SEED 0xcbf29ce484222325ull
uint64_t cxl_job_id(const char *job);
/* Copy a NUL-terminated name out of pool memory; false if not terminated. */
bool cxl_name_valid(const char *pool_name, size_t cap);
uint64_t cxl_proc_starttime(int pid);
bool cxl_proc_alive(int pid, uint64_t starttime);

/* backend_*.c: map the shared pool; fills fd, size, resv, base. */
int cxl_backend_file_open(struct cxl_pool *p, bool *created);
/* runfile.c: open or create <rundir>/cxlshm-<uuid><suffix> with the
 * pool's permissions into *fd (path filled); CXL_OK or CXL_E*. */
int cxl_runfile_open(struct cxl_pool *p, const char *suffix, const char *what,
		     char *path, size_t cap, int *fd);
int cxl_backend_devdax_open(struct cxl_pool *p);
/* Map fd at a 2 MiB-aligned address with PROT_NONE guard pages around. */
int cxl_map_aligned(int fd, uint64_t size, int prot, int flags,
		    const char *what, void **resv, size_t *resv_len,
		    uint8_t **base);
void cxl_unmap(void *resv, size_t len);

/* coherence.c */
void cxl_coh_init(void);
int cxl_coh_select(struct cxl_pool *p);

/* costmodel.c: called by the coherence primitives when p->cost.on */
void cxl_cost_setup(struct cxl_pool *p); /* after the mode is chosen */
void cxl_cost_write(const struct cxl_pool *p, uint64_t nlines, bool nt);
void cxl_cost_fence(const struct cxl_pool *p);
void cxl_cost_fence_read(const struct cxl_pool *p, uint64_t nlines);
uint64_t cxl_cost_charged_ns(void);
void cxl_cost_charged_reset(void);

/* emu.c */
int cxl_emu_attach(struct cxl_pool *p);
void cxl_emu_detach(struct cxl_pool *p);
void cxl_emu_flush(struct cxl_pool *p, uint64_t off, uint64_t nlines);
void cxl_emu_inval(struct cxl_pool *p, uint64_t off, uint64_t nlines);
/* cxl_inval of two ranges (the second may be empty) with one fence. */
void cxl_inval2(struct cxl_pool *p, const void *ptr, size_t len,
		const void *ptr2, size_t len2);
void cxl_emu_nt_store64(struct cxl_pool *p, uint64_t off, uint64_t v);

/* Test-only fault injection: when set, cxl_flush() writes nothing back. */
extern _Atomic int cxl_test_skip_flush;

/* format.c */
int cxl_format_mapped(struct cxl_pool *p, const struct cxl_pool_opts *o);
int cxl_hdr_validate(const struct pool_hdr *h, uint64_t mapped_size,
		     const char *path);

/* lock.c: the arena lock (host flock + bakery among hosts). */
int cxl_arena_lock(struct cxl_pool *p);
void cxl_arena_unlock(struct cxl_pool *p);
int cxl_hostlock_open(struct cxl_pool *p);
void cxl_hostlock_close(struct cxl_pool *p);

/* Metadata access inside the arena lock: invalidate before reading, write
 * back right after writing, so the next holder on any host sees it. */
static inline void md_rd(struct cxl_pool *p, const void *ptr, size_t len)
{
	cxl_inval(p, ptr, len);
}
static inline void md_wr(struct cxl_pool *p, const void *ptr, size_t len)
{
	cxl_flush(p, ptr, len);
}

/* Region accessors: pointers computed from the validated header copy. */
static inline struct arena_ctl *pool_ctl(struct cxl_pool *p)
{
	return (struct arena_ctl *)(p->base + p->hdr.ctl_off);
}
static inline struct host_ent *pool_host(struct cxl_pool *p, uint32_t i)
{
	return (struct host_ent *)(p->base + p->hdr.host_off) + i;
}
static inline struct proc_ent *pool_proc(struct cxl_pool *p, uint32_t i)
{
	return (struct proc_ent *)(p->base + p->hdr.proc_off) + i;
}
static inline struct hash_slot *pool_slot(struct cxl_pool *p, uint64_t i)
{
	return (struct hash_slot *)(p->base + p->hdr.hash_off) + i;
}
static inline struct obj_ent *pool_obj(struct cxl_pool *p, uint64_t i)
{
	return (struct obj_ent *)(p->base + p->hdr.obj_off) + i;
}
static inline uint8_t *pool_heap(struct cxl_pool *p)
{
	return p->base + p->hdr.heap_off;
}

/* alloc.c: buddy allocator over the heap; caller holds the arena lock. */
int cxl_heap_init(struct cxl_pool *p);
int cxl_heap_alloc(struct cxl_pool *p, uint64_t size, uint64_t align,
		   uint64_t *off, uint64_t *asize);
int cxl_heap_free(struct cxl_pool *p, uint64_t off, uint64_t asize);
/* Rebuild the allocator around sorted, disjoint live extents (repair). */
struct heap_extent {
	uint64_t off, asize, idx;
};
int cxl_heap_rebuild(struct cxl_pool *p, const struct heap_extent *ext,
		     size_t n);
uint64_t cxl_heap_largest_free(struct cxl_pool *p);
/* check.c: the extents of the object entries below hwm that are in use,
 * sorted by offset (overlaps kept); an impossible entry
 * (cxl_obj_entry_ok) goes to on_bad instead. live/unlinked count the
 * entries in those states. NULL, with the error set, without memory. */
struct heap_extent *
cxl_obj_extents(struct cxl_pool *p, uint64_t hwm,
		void (*on_bad)(struct cxl_pool *p, uint64_t i,
			       const struct obj_ent *e, void *arg),
		void *arg, size_t *n, uint64_t *live, uint64_t *unlinked);
/* Free lists, free count and order map against the live extents ext
 * (sorted, valid), each inconsistency to report; writes nothing. */
void cxl_heap_check(struct cxl_pool *p, const struct heap_extent *ext, size_t n,
		    cxl_check_report_fn report, void *arg);
/* Granule size rounding used for asize. */
uint64_t cxl_heap_round(uint64_t size, uint64_t align);

/* hostid.c: host identity and host-table slots. */
void cxl_host_ident_init(struct cxl_pool *p);
int cxl_host_claimlock(struct cxl_pool *p);
void cxl_host_claimunlock(struct cxl_pool *p);
/* One pass through slot s's splitter: true for at most one of any set of
 * concurrent claimers with distinct keys, and for a claimer alone. */
bool cxl_host_splitter(struct cxl_pool *p, uint32_t s, uint64_t key);
/* Pick this host's slot (outside the arena lock; under the claim lock). */
int cxl_host_choose(struct cxl_pool *p);
/* Under the arena lock: is p->host_id usable? CXL_EAGAIN: choose again. */
int cxl_host_check_locked(struct cxl_pool *p);
/* Before the arena lock: refuse a host id that live processes of the same
 * host use with another CXL_RUNDIR (sets p->rundir_id). */
int cxl_host_rundir_check(struct cxl_pool *p);
/* Under the arena lock: record this host as the slot's owner. */
void cxl_host_adopt_locked(struct cxl_pool *p);
/* Under the arena lock: drop host s's process entries; returns how many. */
uint64_t cxl_host_clear_procs_locked(struct cxl_pool *p, uint32_t s);
/* Under the arena lock: free slot s (its owner's last process left, or an
 * administrator declared it dead). */
void cxl_host_release_locked(struct cxl_pool *p, uint32_t s);

/* arena.c / procs.c shared helpers (caller holds the arena lock). */
int cxl_arena_attach_proc(struct cxl_pool *p);
void cxl_arena_detach_proc(struct cxl_pool *p);
int cxl_arena_reclaim_jobs(struct cxl_pool *p, uint64_t *objs);
int cxl_arena_repair_locked(struct cxl_pool *p, uint64_t *problems);
/* repair.c, for check.c too: an object entry that can be true (state,
 * name, extent inside the heap), and extents in heap order (qsort) */
bool cxl_obj_entry_ok(const struct cxl_pool *p, const struct obj_ent *e);
int cxl_extent_cmp(const void *a, const void *b);
/* check.c: what repair would rebuild, compared without writing */
int cxl_arena_check_locked(struct cxl_pool *p, cxl_check_report_fn fn,
			   void *arg, uint64_t *problems);
void cxl_obj_release_locked(struct cxl_pool *p, uint64_t idx);
/* hashidx.c: the hash index (caller holds the arena lock). */
uint64_t cxl_hash_key(const char *name, uint64_t job_id);
uint64_t cxl_hash_slot(struct cxl_pool *p, uint64_t h, unsigned l);
int cxl_hash_remove_locked(struct cxl_pool *p, uint64_t idx, const char *name,
			   uint64_t job_id);
int cxl_hash_insert_locked(struct cxl_pool *p, uint64_t idx, const char *name,
			   uint64_t job_id);

#endif
