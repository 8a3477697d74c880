/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the STREAM arrays live: local DRAM (anonymous memory, placed by
 * the first touch), the pool (one object per array), or page-interleaved
 * over both. See stream_place.c for how the interleaving is mapped.
 */
#ifndef CXLBENCH_STREAM_PLACE_H
#define CXLBENCH_STREAM_PLACE_H

#include "stream.h"

/* Elements [first, first + count) of an array lie in the pool. */
struct stream_seg {
	size_t first, count;
};

/* The memory of one attachment's runs: three DRAM arrays, three objects. */
struct stream_mem {
	cxl_pool *pool;
	int fd;		/* the pool file or device (maps pages back), or -1 */
	bool emulated;	/* pool pages are the emulator's private cache */
	uint64_t gran;	/* smallest interleave granularity: 4 KiB, or 2 MiB
			 * for devdax and hugetlbfs */
	size_t n;	/* elements per array */
	uint64_t bytes; /* per array: n doubles rounded up to 2 MiB */
	double *dram[ARR_N];
	struct cxl_obj obj[ARR_N];
	bool have_obj[ARR_N];
	bool damaged; /* a page could not be mapped back: never destroy */
	char prefix[32];
};

/* One placement of the three arrays. */
struct stream_layout {
	char where[ARR_N]; /* 'D' DRAM, 'P' pool, 'I' interleaved */
	unsigned rd, rp;   /* 'I': DRAM pages, then pool pages, repeated */
	uint64_t gran;	   /* 'I': bytes per page */
	double *v[ARR_N];
	double frac[ARR_N]; /* share of each array in the pool */
	struct stream_seg *seg[ARR_N];
	size_t nseg[ARR_N];
	struct stream_seg whole; /* 'P': [0, n) */
	struct stream_seg *iseg; /* 'I': pool runs, shared by the arrays */
	size_t niseg;
	bool overlaid;
};

/*
 * DRAM arrays always; with pool set, also one zeroed 2 MiB-aligned object
 * per array named <prefix>-a/b/c. Returns 0, or -1 after a message.
 */
int stream_mem_init(struct stream_mem *m, cxl_pool *pool, size_t n,
		    const char *prefix);
/* Destroy the objects (unless damaged) and free everything. */
int stream_mem_fini(struct stream_mem *m);

/*
 * Granularity for interleaving all three arrays rd:rp: m->gran, doubled
 * while the mappings it needs would not fit under vm.max_map_count. A
 * raised granularity is explained in note (empty otherwise).
 */
uint64_t stream_ileave_gran(const struct stream_mem *m, unsigned rd,
			    unsigned rp, char *note, size_t cap);

/* Place the arrays ("DPD", "III"...); 'I' maps the interleaving. */
int stream_layout_set(struct stream_mem *m, struct stream_layout *l,
		      const char where[ARR_N], unsigned rd, unsigned rp,
		      uint64_t gran);
/* Undo the interleaving (the object pages come back). */
int stream_layout_clear(struct stream_mem *m, struct stream_layout *l);

/* Write back (no fence) / invalidate the pool part of array i. */
void stream_layout_flush(cxl_pool *p, const struct stream_layout *l, int i);
void stream_layout_inval(cxl_pool *p, const struct stream_layout *l, int i);

#endif
