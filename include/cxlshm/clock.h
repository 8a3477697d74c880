/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The clock and adaptive polling: the utility layer below the pool, the
 * arena and the sync primitives (src/shm/clock.c, backoff.c). Nothing here
 * touches a pool.
 */
#ifndef CXLSHM_CLOCK_H
#define CXLSHM_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC). */
uint64_t cxl_now_ns(void);

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

#ifdef __cplusplus
}
#endif

#endif
