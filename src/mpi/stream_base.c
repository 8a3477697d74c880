/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bottom of the stream files: the pool attachment of stream-triggered
 * MPI, names of its pool objects, its one error-reporting path and the
 * busy-wait policy of its waits. Everything above (channels, heartbeats,
 * collectives, matching, both queue backends) uses these and nothing
 * here calls up.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "stream.h"

static cxl_pool *spool;

cxl_pool *stream_pool(void)
{
	struct cxl_pool_opts o;

	if (spool)
		return spool;
	spool = get_pool();
	if (spool || !cxlmpi_config()->pool)
		return spool;
	/* MPI_Alloc_mem is not in the pool (CXLMPI_ALLOC_MEM=0): attach */
	if (cxl_opts_from_env(&o) || cxl_pool_attach_shared(&o, &spool)) {
		spool = NULL;
		stream_fail(MPIS_NOT_READY, "cannot attach the pool (%s)",
			    cxl_errmsg());
	}
	return spool;
}

/* As obj_name (alloc.c), but on the stream's attachment, which exists
 * also when MPI_Alloc_mem is not in the pool (CXLMPI_ALLOC_MEM=0). */
void stream_obj_name(char *buf, size_t len, const char *kind)
{
	snprintf(buf, len, "cxlmpi.%s.h%u.%ld.%lu", kind,
		 (unsigned)cxl_pool_host_id(spool), (long)getpid(), ++mem_seq);
}

int stream_fail(int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one write: the lines of several ranks do not interleave */
	fprintf(stderr, "libcxlmpi: stream: %s\n", msg);
	return code;
}
