/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock of every deadline and timestamp in libcxlshm. A
 * utility below the arena: it calls nothing else in the library. */
#include <time.h>

#include "internal.h"

CXL_EXPORT uint64_t cxl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
