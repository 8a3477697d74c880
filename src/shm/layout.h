/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Byte-level layout of a pool, layout version 1. docs/pool-layout.md
 * describes the same structures; keep them in step.
 *
 * Every offset stored in the pool is pool-relative (or heap-relative where
 * named so) and 64-bit. Nothing read from the pool is trusted: readers
 * validate offsets, lengths, indices and names before use.
 *
 * Regions, each starting on a 64-byte line (the heap on 2 MiB):
 *   header      4 KiB    identity + geometry, immutable after format
 *   ctl         1 line+  arena control (free lists...), under the lock
 *   hosts       max_hosts * 256 B
 *   procs       max_procs * 128 B
 *   hash        sum(level buckets) * 8 B
 *   objs        capacity * 128 B
 *   ordermap    heap_size / 64 B, one byte per 64-byte heap granule
 *   heap        the data region, buddy-allocated in 64-byte granules
 */
#ifndef CXLSHM_LAYOUT_H
#define CXLSHM_LAYOUT_H

#include <stdint.h>

#define POOL_MAGIC 0x004c4f4f504c5843ull /* "CXLPOOL\0" little-endian */
#define POOL_LAYOUT_VERSION 1u
#define POOL_HDR_SIZE 4096u
#define POOL_HEAP_ALIGN (2u << 20)
#define POOL_MIN_SIZE (4u << 20)

#define HASH_MAX_LEVELS 8u
#define BUDDY_MAX_ORDER 40u /* 64 B << 40 = 64 TiB heap */

/* Header: written once by format; magic is stored last. */
struct pool_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint64_t pool_size;
	uint8_t uuid[16];
	uint64_t format_ns;
	uint32_t max_hosts;
	uint32_t max_procs;
	uint32_t hash_levels;
	uint32_t reserved0;
	uint64_t capacity;
	uint64_t ctl_off;
	uint64_t host_off;
	uint64_t proc_off;
	uint64_t hash_off;
	uint64_t obj_off;
	uint64_t ordermap_off;
	uint64_t heap_off;
	uint64_t heap_size;
	uint64_t level_buckets[HASH_MAX_LEVELS];
	uint64_t level_off[HASH_MAX_LEVELS]; /* slot index of each level */
	uint64_t csum; /* FNV-1a of the bytes from version up to here */
};

/* Arena control block: only the arena lock holder writes it. */
struct arena_ctl {
	uint64_t obj_free; /* first free object entry + 1; 0 = none */
	uint64_t obj_hwm; /* entries >= hwm were never used (implicitly free) */
	uint64_t live;	  /* objects in state LIVE */
	uint64_t unlinked;   /* objects in state UNLINKED */
	uint64_t heap_free;  /* bytes on the free lists */
	uint64_t lock_gen;   /* critical sections entered (diagnostics) */
	uint64_t owner_host; /* last lock holder: host, pid, time */
	uint64_t owner_pid;
	uint64_t owner_ns;
	uint64_t reserved[7];
	uint64_t free_head[BUDDY_MAX_ORDER + 1]; /* heap offset + 1 per order */
};

/*
 * Host table entry, 256 B, one line per writer rule (docs/pool-layout.md,
 * "Host table"). A slot is owned while claim_y != 0; its owner is the host
 * whose identity key is in `key` (or, before the owner wrote it, the
 * claimer that won the splitter).
 */
struct host_ent {
	/* line 0: bakery lock, written only by the owner, non-temporal */
	uint64_t choosing;
	uint64_t number;
	uint64_t beat; /* the owner's clock at its last cxl_host_beat */
	uint64_t pad0[5];
	/* line 1: status, written under the arena lock by the owner */
	char nodename[48];
	uint64_t status; /* HOST_* */
	uint64_t seen_ns;
	/* line 2: the slot's claim splitter, written by any claiming host
	 * with non-temporal stores (hostid.c) */
	uint64_t claim_x; /* identity key of the last claimer to enter */
	uint64_t claim_y; /* door: non-zero once a claimer went through */
	uint64_t pad2[6];
	/* line 3: the owner's identity, written under the arena lock by the
	 * owner (and cleared by the releaser) */
	uint64_t key;	   /* owner's identity key; 0: no owner */
	uint64_t last_key; /* previous owner: preferred when it claims again */
	uint8_t boot_id[16]; /* owner's boot id at its last attach */
	char ident[32];	     /* identity shown by 'cxlpool info' */
};
enum {
	HOST_UNUSED = 0,
	HOST_ACTIVE = 1,
	HOST_DEAD = 2
};

/* Process table entry, 128 B, written under the arena lock. */
struct proc_ent {
	uint32_t state; /* PROC_* */
	uint32_t host;
	uint32_t pid;
	uint32_t gen;
	uint64_t starttime; /* /proc/<pid>/stat field 22, against pid reuse */
	uint64_t job_id;
	uint64_t attach_ns;
	uint64_t rundir; /* its CXL_RUNDIR's identity (hostid.c); 0: none */
	uint64_t reserved[2];
	char job[64];
};
enum {
	PROC_FREE = 0,
	PROC_LIVE = 1
};

/* Object table entry, 128 B. Line 0 is the commit line. */
struct obj_ent {
	uint32_t state; /* OBJ_* */
	uint32_t flags;
	uint32_t refcnt;
	uint32_t gen;
	uint64_t off;	/* heap-relative */
	uint64_t size;	/* requested */
	uint64_t asize; /* allocated, multiple of 64 */
	uint64_t job_id;
	uint64_t next_free; /* free-list link: index + 1 */
	uint32_t creator_host;
	uint32_t creator_pid;
	/* line 1 */
	char name[64];
};
enum {
	OBJ_FREE = 0,
	OBJ_LIVE = 1,
	OBJ_UNLINKED = 2
};

/* Hash slot: object index + 1 (0 = empty) and 32 bits of the key hash. */
struct hash_slot {
	uint32_t idx1;
	uint32_t tag;
};

/* Order-map byte for the granule that starts a block. */
#define OM_FREE 0x80u
#define OM_ALLOC 0x40u
#define OM_ORDER(b) ((b) & 0x3fu)

/* First line of a free heap block (the rest of the block is unused). */
#define FREEBLK_MAGIC 0x4b4c424545524658ull /* "XFREEBLK" */
struct free_blk {
	uint64_t magic;
	uint64_t order;
	uint64_t next; /* heap offset + 1 */
	uint64_t prev; /* heap offset + 1 */
};

_Static_assert(sizeof(struct pool_hdr) <= POOL_HDR_SIZE, "header");
_Static_assert(sizeof(struct host_ent) == 256, "host_ent");
_Static_assert(sizeof(struct proc_ent) == 128, "proc_ent");
_Static_assert(sizeof(struct obj_ent) == 128, "obj_ent");
_Static_assert(sizeof(struct hash_slot) == 8, "hash_slot");
_Static_assert(sizeof(struct free_blk) <= 64, "free_blk");

#endif
