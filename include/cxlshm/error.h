/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libcxlshm error codes.
 *
 * Every failing call returns one of these (negated nowhere: they are
 * positive) and leaves a thread-local message, cxl_errmsg(), that names the
 * device, variable or size involved and says what to do about it.
 */
#ifndef CXLSHM_ERROR_H
#define CXLSHM_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum cxl_err {
	CXL_OK = 0,
	CXL_EINVAL,	  /* invalid argument to an API call */
	CXL_EENV,	  /* invalid value in a CXL_* environment variable */
	CXL_ENODEV,	  /* pool device or file does not exist */
	CXL_EACCES,	  /* permission denied on the pool device or file */
	CXL_ETOOSMALL,	  /* pool too small for the requested layout */
	CXL_EFOREIGN,	  /* memory is not a cxlshm pool (bad magic) */
	CXL_EVERSION,	  /* pool has another layout version */
	CXL_ENAMETOOLONG, /* object or job name too long */
	CXL_EEXIST,	  /* object already exists */
	CXL_ENOENT,	  /* object does not exist */
	CXL_ENOSPC,	  /* no free space in the pool's data region */
	CXL_ENOMETA,	  /* metadata table (objects or hash index) full */
	CXL_ECORRUPT,	  /* pool metadata failed validation */
	CXL_ETIMEDOUT,	  /* a bounded wait expired (lock, barrier, flag) */
	CXL_EAGAIN,	  /* ring empty or full; try again */
	CXL_ETRUNC,	  /* receive buffer smaller than the message */
	CXL_EHOSTID,	  /* CXL_HOST_ID conflicts with another host */
	CXL_ENOPROC,	  /* process table full */
	CXL_ESTALE,	  /* handle refers to an object that was reclaimed */
	CXL_EBUSY,	  /* pool or object in use; operation refused */
	CXL_ENOTSUP,	  /* mode or instruction not supported on this CPU */
	CXL_ENOMEM,	  /* local (non-pool) memory allocation failed */
	CXL_ESYS,	  /* other system call failure (see message) */
	CXL_ERR_MAX
};

/* Short symbolic name of an error code, e.g. "CXL_ENOSPC". */
const char *cxl_strerror(int err);

/*
 * Detailed message for the last error raised by this thread, naming the
 * problem and the fix. Valid until the next failing libcxlshm call.
 */
const char *cxl_errmsg(void);

#ifdef __cplusplus
}
#endif
#endif
