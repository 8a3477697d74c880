/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host-local run files of a pool: <CXL_RUNDIR>/cxlshm-<uuid><suffix>
 * (host lock, claim lock, the emulator's line locks). Every user who may
 * attach the pool must be able to open them, so a run file takes the
 * pool's own read/write permission bits and group (docs/security.md,
 * "Sharing a pool"): a pool that is group-shared (chgrp, chmod 660) gets
 * group-shared run files, a private pool private ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* O_CREAT on a file of another user in a sticky directory fails where
 * fs.protected_regular is set, even when its mode allows the open: open
 * an existing file without it, and create only what is not there. */
static int open_or_create(const char *path, mode_t mode, bool *created)
{
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(path, O_RDWR | O_CLOEXEC);

		if (fd >= 0 || errno != ENOENT)
			return fd;
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0) {
			*created = true;
			return fd;
		}
		if (errno != EEXIST)
			return -1;
	}
	errno = EAGAIN;
	return -1;
}

int cxl_runfile_open(struct cxl_pool *p, const char *suffix, const char *what,
		     char *path, size_t cap, int *out)
{
	mode_t mode = p->pool_mode & 0666;
	bool created = false;
	char hex[33];
	struct stat st;
	int fd;

	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", p->hdr.uuid[i]);
	snprintf(path, cap, "%s/cxlshm-%s%s", p->opts.rundir, hex, suffix);
	fd = open_or_create(path, mode ? mode : 0600, &created);
	if (fd < 0 && errno == EACCES && stat(path, &st) == 0)
		return cxl_seterr(
			CXL_EACCES,
			"cannot open the %s %s: it belongs to uid %u "
			"with mode %03o, and this user may attach the "
			"pool but not open it; its owner or root can "
			"'chmod %03o %s' (and chgrp it to the pool's "
			"group), or remove it while nothing uses the "
			"pool",
			what, path, (unsigned)st.st_uid,
			(unsigned)(st.st_mode & 07777),
			(unsigned)(mode ? mode : 0600), path);
	if (fd < 0)
		return cxl_seterr(errno == EACCES ? CXL_EACCES : CXL_ESYS,
				  "cannot open the %s %s: %s; set CXL_RUNDIR "
				  "to an existing host-local directory that "
				  "every user of the pool can write (one per "
				  "host, the same for all its processes)",
				  what, path, strerror(errno));
	if (created) {
		/* exactly the pool's bits (the umask took some) and group;
		 * a creator outside that group keeps its own, and says so
		 * only where another user then fails to open the file */
		if (fchmod(fd, mode ? mode : 0600) != 0 ||
		    (fchown(fd, (uid_t)-1, p->pool_gid) != 0 &&
		     errno != EPERM)) {
			int e = errno;

			close(fd);
			return cxl_seterr(CXL_ESYS,
					  "cannot set the mode of %s: %s", path,
					  strerror(e));
		}
	}
	*out = fd;
	return CXL_OK;
}
