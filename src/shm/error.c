/* SPDX-License-Identifier: BSD-3-Clause */
/* Error codes and the thread-local "what happened and how to fix it". */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static _Thread_local char errbuf[512];

static const char *const names[CXL_ERR_MAX] = {
	[CXL_OK] = "CXL_OK",
	[CXL_EINVAL] = "CXL_EINVAL",
	[CXL_EENV] = "CXL_EENV",
	[CXL_ENODEV] = "CXL_ENODEV",
	[CXL_EACCES] = "CXL_EACCES",
	[CXL_ETOOSMALL] = "CXL_ETOOSMALL",
	[CXL_EFOREIGN] = "CXL_EFOREIGN",
	[CXL_EVERSION] = "CXL_EVERSION",
	[CXL_ENAMETOOLONG] = "CXL_ENAMETOOLONG",
	[CXL_EEXIST] = "CXL_EEXIST",
	[CXL_ENOENT] = "CXL_ENOENT",
	[CXL_ENOSPC] = "CXL_ENOSPC",
	[CXL_ENOMETA] = "CXL_ENOMETA",
	[CXL_ECORRUPT] = "CXL_ECORRUPT",
	[CXL_ETIMEDOUT] = "CXL_ETIMEDOUT",
	[CXL_EAGAIN] = "CXL_EAGAIN",
	[CXL_ETRUNC] = "CXL_ETRUNC",
	[CXL_EHOSTID] = "CXL_EHOSTID",
	[CXL_ENOPROC] = "CXL_ENOPROC",
	[CXL_ESTALE] = "CXL_ESTALE",
	[CXL_EBUSY] = "CXL_EBUSY",
	[CXL_ENOTSUP] = "CXL_ENOTSUP",
	[CXL_ENOMEM] = "CXL_ENOMEM",
	[CXL_ESYS] = "CXL_ESYS",
};

CXL_EXPORT const char *cxl_strerror(int err)
{
	if (err < 0 || err >= CXL_ERR_MAX || !names[err])
		return "CXL_E(unknown)";
	return names[err];
}

CXL_EXPORT const char *cxl_errmsg(void)
{
	return errbuf;
}

int cxl_seterr(int code, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(errbuf, sizeof(errbuf), "%s: ", cxl_strerror(code));

	if (n < 0 || (size_t)n >= sizeof(errbuf))
		return code;
	va_start(ap, fmt);
	vsnprintf(errbuf + n, sizeof(errbuf) - (size_t)n, fmt, ap);
	va_end(ap);
	return code;
}
