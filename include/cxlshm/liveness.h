/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness: one service per process for every user of the pool (the
 * libfabric provider's endpoints, libcxlmpi's stream heartbeat).
 *
 * A beat is a 64-bit pool word that only this process writes. While a
 * beat is registered, one thread per process advances it every
 * CXL_BEAT_MS, whatever the application does (a rank that computes for
 * hours without calling MPI is still alive), and marks the host alive
 * (cxl_host_beat) in every pool that has a registered beat.
 *
 * A watcher samples a peer's beat (cxl_watch_*): a beat that has not moved
 * for the pool's peer timeout (CXL_PEER_TIMEOUT_MS, cxl_pool_peer_timeout_ms)
 * means the peer died, or was stopped or starved that long. What follows
 * from it (failing operations, telling the peer) is the caller's.
 */
#ifndef CXLSHM_LIVENESS_H
#define CXLSHM_LIVENESS_H

#include <stdint.h>

#include "pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* period of the beat thread */
#define CXL_BEAT_MS 100

/*
 * Advance *word (in p's mapping, 8-byte aligned, written by no one else)
 * from now on, starting the beat thread if it is the first beat.
 * CXL_OK, CXL_EINVAL (word outside the mapping), CXL_ENOMEM, or CXL_ESYS
 * if the thread cannot start (the message says so).
 */
int cxl_beat_add(cxl_pool *p, uint64_t *word);
/* Stop advancing *word: once this returns, the thread no longer writes it.
 * The last beat removed stops and joins the thread. */
void cxl_beat_remove(cxl_pool *p, uint64_t *word);

/* A watcher's view of one peer's beat. */
struct cxl_watch {
	uint64_t last;	   /* the value seen last */
	uint64_t moved_ms; /* cxl_now_ns() / 1e6 when it was seen to move */
};

/* Start watching *word (now_ms: cxl_now_ns() / 1000000). */
void cxl_watch_start(cxl_pool *p, const uint64_t *word, struct cxl_watch *w,
		     uint64_t now_ms);
/* Sample *word: milliseconds it has not moved, 0 if it moved since the
 * last sample. Reads the pool's copy, not a stale cached line. */
uint64_t cxl_watch_still_ms(cxl_pool *p, const uint64_t *word,
			    struct cxl_watch *w, uint64_t now_ms);
/* The value of the last sample. */
static inline uint64_t cxl_watch_last(const struct cxl_watch *w)
{
	return w->last;
}

/* CXL_PEER_TIMEOUT_MS of the attachment (300 ... 86400000, default
 * 10000): how long a peer's beat may stand still before it is dead;
 * 0 for no pool. */
uint32_t cxl_pool_peer_timeout_ms(const cxl_pool *p);

#ifdef __cplusplus
}
#endif

#endif
