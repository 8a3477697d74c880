/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pools: a byte range that every process on every host maps MAP_SHARED.
 *
 * Backends: a devdax character device (/dev/daxX.Y), or a file on tmpfs or
 * hugetlbfs that emulates one. The coherence mode is a property of the
 * attachment, not of the pool: see coherence.h.
 */
#ifndef CXLSHM_POOL_H
#define CXLSHM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cxl_pool cxl_pool;

enum cxl_coh_mode {
	CXL_COH_COHERENT = 0, /* hardware-coherent: no flushes */
	CXL_COH_FLUSH,	      /* flush after writes, invalidate before reads */
	CXL_COH_UNCACHED, /* non-temporal stores for data, invalidate reads */
	CXL_COH_EMULATED, /* non-coherent emulation (private cache copy) */
};

enum cxl_flush_insn {
	CXL_FLUSH_AUTO = 0, /* clflushopt if present, else clflush */
	CXL_FLUSH_CLFLUSHOPT,
	CXL_FLUSH_CLWB,
	CXL_FLUSH_CLFLUSH,
};

/*
 * CXL device cost model (CXL_COST_MODEL; docs/costmodel.md). The coherence
 * primitives busy-wait for what these operations cost on the device, on
 * top of what they cost on this machine.
 */
#define CXL_COST_NAME_MAX 15
struct cxl_cost_params {
	char name[CXL_COST_NAME_MAX + 1]; /* preset; "none": model off */
	uint32_t load_ns;  /* a line read from the device (miss, uncached) */
	uint32_t wb_ns;	   /* write-back of a line: issue to completion */
	uint32_t nt_ns;	   /* non-temporal store: issue to completion */
	uint32_t fence_ns; /* added to every fence */
	double bw_gbs;	   /* device bandwidth per thread and direction, GB/s
			      (1e9 bytes/s) */
};

#define CXL_NAME_MAX 63		 /* object and job names, excluding the NUL */
#define CXL_HOST_AUTO UINT32_MAX /* host_id: claim one from the pool */
#define CXL_JOB_GLOBAL "global"

/* Everything that configures an attachment; see docs/env.md. */
struct cxl_pool_opts {
	char path[256];		  /* CXL_POOL */
	uint64_t size;		  /* CXL_POOL_SIZE: size of a new file pool */
	int create;		  /* CXL_POOL_CREATE: create+format if absent */
	enum cxl_coh_mode mode;	  /* CXL_COHERENCE */
	int mode_set;		  /* mode given explicitly (else per backend) */
	enum cxl_flush_insn insn; /* CXL_FLUSH_INSN */
	uint32_t host_id;	  /* CXL_HOST_ID; CXL_HOST_AUTO (default) */
	char host_key[CXL_NAME_MAX + 1]; /* CXL_HOST_KEY: identity override */
	char job[CXL_NAME_MAX + 1];	 /* CXL_JOB */
	uint64_t capacity;	  /* CXL_ARENA_CAPACITY: objects, at format */
	uint32_t max_hosts;	  /* CXL_MAX_HOSTS, at format */
	uint32_t max_procs;	  /* CXL_MAX_PROCS, at format */
	uint32_t lock_timeout_ms; /* CXL_LOCK_TIMEOUT_MS */
	uint32_t peer_timeout_ms; /* CXL_PEER_TIMEOUT_MS (liveness.h) */
	char rundir[256];	  /* CXL_RUNDIR: host-local lock files */
	int no_reap;		  /* skip reclaiming dead processes at attach
				   * ('cxlpool info' and 'ls' show them; 'gc' reclaims) */
	struct cxl_cost_params cost; /* CXL_COST_MODEL, CXL_COST_* */
};

/* Fill with built-in defaults (no environment). */
void cxl_opts_default(struct cxl_pool_opts *o);

/*
 * Defaults overridden by CXL_* environment variables. Returns CXL_EENV
 * naming the variable on an invalid value.
 */
int cxl_opts_from_env(struct cxl_pool_opts *o);

/* Parse "64M", "2G", "4096" etc. Returns CXL_EINVAL on garbage. */
int cxl_parse_size(const char *s, uint64_t *out);

/*
 * Format a pool: explicit, destructive. Refuses (CXL_EBUSY) if the pool
 * holds a valid header with live processes unless force is set.
 */
int cxl_pool_format(const struct cxl_pool_opts *o, int force);

/*
 * Remove a pool: unlink a pool file (a DAX device only loses its header),
 * and delete its host-local run files (lock files, emulator state) from
 * o->rundir. Refuses (CXL_EBUSY) while processes are attached unless force
 * is set.
 */
int cxl_pool_remove(const struct cxl_pool_opts *o, int force);

/*
 * Attach. A missing file pool is created and formatted when o->create is
 * set; exactly one process wins that race (it holds an flock while
 * formatting, the others wait for the header to appear).
 */
int cxl_pool_attach(const struct cxl_pool_opts *o, cxl_pool **out);

/*
 * A handle belongs to the process that attached; a child made by fork()
 * must attach on its own (the handle holds a process-table slot, host
 * lock descriptors and, in emulation, a private cache).
 */

/*
 * As cxl_pool_attach, but one attachment per pool, host id, job,
 * coherence mode and flush instruction in this process: a later call with
 * the same ones returns the same handle (the same mapping), counted, and
 * cxl_pool_detach releases it when the last user does. The libfabric
 * provider and libcxlmpi attach this way, so that a buffer one of them
 * allocates in the pool is recognised as pool memory by the other
 * (pointer passing). Thread-safe.
 */
int cxl_pool_attach_shared(const struct cxl_pool_opts *o, cxl_pool **out);

/*
 * Whether p is what cxl_pool_attach_shared(o) would return now: attached
 * by this process (not inherited across fork), of the file that o->path
 * names now (not one removed and re-created since), with o's host id,
 * job, flush instruction and, if set, mode.
 */
bool cxl_pool_matches(const cxl_pool *p, const struct cxl_pool_opts *o);

/* Attach using cxl_opts_from_env(). */
int cxl_pool_attach_env(cxl_pool **out);

/* Release this process's slot and unmap. NULL is accepted. */
int cxl_pool_detach(cxl_pool *p);

void *cxl_pool_base(const cxl_pool *p);
uint64_t cxl_pool_size(const cxl_pool *p);
/*
 * The pool as a device of this host sees it with DMA (a GPU's copy engine
 * or stream memory operations): the memory itself, not this process's
 * cache. The same cxl_pool_size bytes as cxl_pool_base, at another address
 * in the emulated mode (the shared view, which stands for the memory);
 * cxl_pool_base otherwise. Writes a device makes there reach the pool
 * without a flush; a host reader still invalidates before reading.
 */
void *cxl_pool_dma_base(const cxl_pool *p);
enum cxl_coh_mode cxl_pool_mode(const cxl_pool *p);
/* Flush instruction in use (CXL_FLUSH_AUTO when the mode flushes none). */
enum cxl_flush_insn cxl_pool_flush_insn(const cxl_pool *p);
uint32_t cxl_pool_host_id(const cxl_pool *p);
const char *cxl_pool_path(const cxl_pool *p);

/* Pool-relative offset of a pointer into the mapping, or UINT64_MAX. */
uint64_t cxl_pool_offset(const cxl_pool *p, const void *ptr);

/* Pointer for [off, off+len) if it lies inside the mapping, else NULL. */
void *cxl_pool_ptr(const cxl_pool *p, uint64_t off, uint64_t len);

/* Identity and geometry from the pool header. */
struct cxl_pool_info {
	uint8_t uuid[16];
	uint32_t layout_version;
	uint32_t max_hosts, max_procs;
	uint64_t pool_size, capacity;
	uint64_t heap_off, heap_size;
	uint64_t meta_bytes; /* header + tables + index + order map */
	uint64_t format_ns;  /* CLOCK_REALTIME at format */
};
void cxl_pool_info(const cxl_pool *p, struct cxl_pool_info *out);

const char *cxl_coh_mode_name(enum cxl_coh_mode m);
const char *cxl_flush_insn_name(enum cxl_flush_insn i);

#ifdef __cplusplus
}
#endif
#endif
