/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reports a user must see whatever FI_LOG_LEVEL says: a configuration or
 * attach error that keeps the provider from being offered, and a fault
 * that fails operations (a corrupted channel). MPI libraries print only
 * "getinfo failed" or an errno, so the cause and its fix go to stderr
 * here, once per cause; the libfabric log gets the same line at info
 * level (at warn it would print it twice).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cxlfi.h"

static bool reported; /* something went to stderr */

void cxlfi_report(const char *fmt, ...)
{
	char line[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* one write: lines of concurrent ranks do not interleave */
	dprintf(STDERR_FILENO, "libfabric:cxl:%d: %s\n", (int)getpid(), line);
	CXLFI_INFO(FI_LOG_CORE, "%s\n", line);
	reported = true;
}

/*
 * The first time the provider refuses fi_getinfo after a report, wait a
 * moment. An MPI library aborts the job right after, and its launcher
 * (hydra) may tear the ranks' stderr pipes down before it forwarded the
 * report: under load 2 runs in 30 lost it. 200 ms, once per process,
 * only on this failure path.
 */
void cxlfi_report_linger(void)
{
	static bool lingered;
	const struct timespec t = { 0, 200 * 1000000L };

	if (reported && !lingered) {
		lingered = true;
		nanosleep(&t, NULL);
	}
}
