/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synchronization in pool memory without cross-host atomics:
 *  - flags/doorbells: one writer, any number of pollers;
 *  - the atomic-free barrier of cMPI §3.4: one sequence word per
 *    participant, each on its own cache line;
 *  - adaptive polling with a deadline, used by every wait.
 */
#ifndef CXLSHM_SYNC_H
#define CXLSHM_SYNC_H

#include <stdint.h>

#include "pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- adaptive polling -------------------------------------------------- */

/*
 * Spin, then yield, then sleep with exponential growth up to
 * CXL_POLL_MAX_SLEEP_US. timeout_ms == 0 means wait forever.
 */
struct cxl_backoff {
	uint64_t deadline_ns; /* 0: none */
	uint32_t iter;
	uint32_t sleep_us;
};

void cxl_backoff_init(struct cxl_backoff *b, uint32_t timeout_ms);
/* Wait one step. Returns CXL_ETIMEDOUT once the deadline has passed. */
int cxl_backoff_wait(struct cxl_backoff *b);

uint64_t cxl_now_ns(void);

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

#ifdef __cplusplus
}
#endif
#endif
