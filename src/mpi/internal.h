/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libcxlmpi internals: pool memory, windows over it, and the state of a
 * direct window (RMA and synchronization done by libcxlmpi in the pool).
 */
#ifndef CXLMPI_INTERNAL_H
#define CXLMPI_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "config.h"
#include "cxlshm/cxlshm.h"

/* One MPI_Alloc_mem allocation in the pool. */
struct pool_mem {
	struct pool_mem *next;
	struct cxl_obj obj;
	char name[64];
};

/* A rank's window memory, as every rank of a direct window sees it. */
struct win_target {
	uint8_t *base;
	MPI_Aint size;
	int unit;
};

/*
 * Synchronization object of a direct window (docs/pool-layout.md): a
 * header line, then one row per rank, written only by that rank:
 *   word 0               barrier sequence number
 *   ROW_LOCK + t         its bakery word for the lock of target t
 *   ROW_ACC + t          its bakery word for target t's accumulate lock
 *   ROW_POST + o         posts it made to origin o (PSCW), a count
 *   ROW_DONE + t         completes it made to target t, a count
 * Rows are padded to whole lines.
 */
#define ROW_LOCK(n) 1
#define ROW_ACC(n) (1 + (n))
#define ROW_POST(n) (1 + 2 * (n))
#define ROW_DONE(n) (1 + 3 * (n))
#define ROW_WORDS(n) ((((uint64_t)(n) * 4 + 1) + 7) & ~(uint64_t)7)
#define WSYNC_MAGIC 0x434e5953574c5843ull /* "CXLWSYNC" */

/* held[t]: the lock we hold on target t */
#define HELD_SHARED 1
#define HELD_EXCL 2
#define HELD_TAKEN 4 /* a bakery lock was taken (not MPI_MODE_NOCHECK) */

struct win_direct {
	int n, me;
	struct win_target *tgt;
	struct cxl_obj sync;
	char syncname[64];
	uint64_t *rows, stride; /* row r at rows + r * stride (words) */
	uint64_t barrier_seq;
	uint64_t *post_sent, *post_seen, *done_sent, *done_seen;
	uint8_t *held;
	uint8_t all_held;     /* lock_all: HELD_SHARED [| HELD_TAKEN] */
	int *access, naccess; /* targets of the current start */
	int *expose, nexpose; /* origins of the current post */
	uint32_t timeout_ms;
};

/* One window over pool memory. */
struct pool_win {
	struct pool_win *next;
	MPI_Win win;
	uint8_t *base;	 /* the range kept coherent: the window, or for a */
	size_t size;	 /* shared window the whole object (all segments) */
	uint8_t *shadow; /* that range as of the last invalidation */
	int rank;	 /* ours in the window's communicator */
	void *owned;	 /* MPI_Win_allocate: our MPI_Alloc_mem memory */
	/* MPI_Win_allocate_shared across hosts: one object, rank segments */
	struct cxl_obj shobj;
	char shname[64];
	int nranks;
	MPI_Aint *seg_off, *seg_size;
	int *seg_unit;
	struct win_direct *d; /* NULL: RMA and sync by the MPI library */
};

/* alloc.c */
extern cxl_pool *pool;
extern unsigned long mem_seq;
cxl_pool *get_pool(void);
bool info_says_no(MPI_Info info);
void obj_name(char *buf, size_t len, const char *kind);

/* wintab.c: the windows kept coherent (below window, epoch, coherence) */
extern struct pool_win *win_list;
struct pool_win *win_find(MPI_Win win);
/* Keep [base, base+size) of win coherent at synchronization points. The
 * caller's stores so far are written back (own=true: nobody else can
 * have written that memory yet) or the range is read fresh (shared). */
struct pool_win *win_track(MPI_Win win, MPI_Comm comm, uint8_t *base,
			   size_t size, bool own);
/* Forget a window win_track() made. */
void win_untrack(struct pool_win *w);
/* The entry of win, made (untracked) if there is none; NULL: no memory. */
struct pool_win *win_entry(MPI_Win win);
/* Take w off the list (the caller frees it). */
void win_unlink(struct pool_win *w);

/* window.c */
int direct_setup(struct pool_win *w, MPI_Comm comm, uint8_t *mine,
		 MPI_Aint size, int unit);
void direct_free(struct pool_win *w);

/* coherence.c */
void publish_w(struct pool_win *w);
void refresh_w(struct pool_win *w);
void publish_range(struct pool_win *w, const uint8_t *p, size_t len);
void shadow_sync(struct pool_win *w, const uint8_t *p, size_t len);

/* epoch.c */
int direct_barrier(struct pool_win *w);
int direct_lock(struct pool_win *w, int kind, int t, bool exclusive);
void direct_unlock(struct pool_win *w, int kind, int t);
int win_fail(struct pool_win *w, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* counters for CXLMPI_STATS (stats.c) */
struct cxlmpi_stats {
	unsigned long puts, gets, accs, locks, syncs;
};
extern struct cxlmpi_stats cxlmpi_stats;

#endif
