/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synchronization in pool memory without cross-host atomics:
 *  - flags/doorbells: one writer, any number of pollers;
 *  - the atomic-free barrier of cMPI §3.4: one sequence word per
 *    participant, each on its own cache line;
 *  - a reader-writer lock (Lamport's bakery), one word per participant.
 * Their waits use the adaptive polling of clock.h.
 */
#ifndef CXLSHM_SYNC_H
#define CXLSHM_SYNC_H

#include <stdint.h>

#include "clock.h"
#include "pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- flags ------------------------------------------------------------- */

/* The flag must sit alone on its 64-byte line (one writer per line). */
void cxl_flag_set(cxl_pool *pool, uint64_t *flag, uint64_t v);
uint64_t cxl_flag_get(cxl_pool *pool, const uint64_t *flag);
/* Wait until *flag >= v. */
int cxl_flag_wait_ge(cxl_pool *pool, const uint64_t *flag, uint64_t v,
		     uint32_t timeout_ms);

/* --- barrier ----------------------------------------------------------- */

typedef struct cxl_barrier cxl_barrier;

/* Pool bytes for an n-participant barrier. */
uint64_t cxl_barrier_footprint(uint32_t n);

/* Create (first participant) or open the named barrier for n members. */
int cxl_barrier_open(cxl_pool *pool, const char *name, uint32_t n,
		     uint32_t rank, cxl_barrier **out);
int cxl_barrier_wait(cxl_barrier *b, uint32_t timeout_ms);
void cxl_barrier_close(cxl_barrier *b);

/* --- reader-writer bakery lock --------------------------------------- */

/*
 * A lock shared by n participants, made of loads and stores only
 * (Lamport's bakery; holders in shared mode do not exclude each other).
 * Participant j's word for the lock is words[j * stride]; only j writes
 * it, and the caller lays the words out so that no cache line holds words
 * of two participants. Words start zeroed. Waits back off adaptively and
 * give up after timeout_ms (0: never) with CXL_ETIMEDOUT naming the
 * participant that blocks; a ticket no correct participant can hold
 * (2^61 or more) gives CXL_ECORRUPT. Either way the caller's request is
 * withdrawn. idle, when not NULL, runs between polls.
 */
struct cxl_bakery {
	cxl_pool *pool;
	uint64_t *words;
	uint64_t stride; /* in words */
	uint32_t n, me;
	void (*idle)(void *arg);
	void *idle_arg;
};

int cxl_bakery_lock(const struct cxl_bakery *b, int exclusive,
		    uint32_t timeout_ms);
void cxl_bakery_unlock(const struct cxl_bakery *b);

#ifdef __cplusplus
}
#endif
#endif
