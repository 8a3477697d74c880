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
 * The first time the provider refuses fi_getinfo or fails an endpoint
 * after a report, wait a moment: an MPI library aborts the job right
 * after, and its launcher (hydra) may tear the ranks' stderr pipes down,
 * or die itself of SIGPIPE, before it forwarded the report
 * (docs/reliability.md). 200 ms, once per process, only on these failure
 * paths.
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

/*
 * An object the provider needs could not be created in the pool. A full
 * heap or object table is the users' to fix (the message from libcxlshm
 * names CXL_POOL_SIZE or CXL_ARENA_CAPACITY), so it goes to stderr, once
 * per cause and process; the MPI library would show only the errno.
 */
int cxlfi_pool_failure(int rc, const char *what, const char *name)
{
	static bool said[3];
	int k = rc == CXL_ENOSPC ? 0 : rc == CXL_ENOMETA ? 1 : 2;

	if (!said[k]) {
		said[k] = true;
		cxlfi_report("cannot create %s %s in the pool: %s", what, name,
			     cxl_errmsg());
		/* the caller most likely aborts the job next */
		cxlfi_report_linger();
	} else {
		CXLFI_WARN(FI_LOG_EP_CTRL, "cannot create %s %s: %s\n", what,
			   name, cxl_errmsg());
	}
	return k < 2 ? -FI_ENOSPC : -FI_EIO;
}
