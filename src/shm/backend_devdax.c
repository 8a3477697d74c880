/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devdax backend: /dev/daxX.Y, the CXL memory exposed as a character
 * device. Its size and alignment come from sysfs; the mapping must start on
 * the device alignment (2 MiB here; 1 GiB-aligned devices need 1 GiB).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

static int sysfs_u64(unsigned maj, unsigned min, const char *attr,
		     uint64_t *out)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/%s", maj, min, attr);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fscanf(f, "%" SCNu64, out) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

int cxl_backend_devdax_open(struct cxl_pool *p)
{
	const char *path = p->opts.path;
	struct stat st;
	uint64_t size, align = 2u << 20;
	int fd;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			return cxl_seterr(CXL_ENODEV,
					  "DAX device %s does not "
					  "exist: list devices with 'daxctl "
					  "list' and set CXL_POOL to one of "
					  "them",
					  path);
		if (e == EACCES || e == EPERM)
			return cxl_seterr(CXL_EACCES,
					  "permission denied "
					  "opening %s: add this user to the "
					  "device's group or run 'chmod g+rw "
					  "%s'",
					  path, path);
		return cxl_seterr(CXL_ESYS, "cannot open %s: %s", path,
				  strerror(e));
	}
	if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
		close(fd);
		return cxl_seterr(CXL_ENODEV,
				  "%s is not a character device; "
				  "a file pool must not live under /dev/dax",
				  path);
	}
	if (sysfs_u64(major(st.st_rdev), minor(st.st_rdev), "size", &size)) {
		close(fd);
		return cxl_seterr(CXL_ENODEV,
				  "cannot read the size of %s from "
				  "/sys/dev/char/%u:%u/size: is it a devdax "
				  "device (daxctl reconfigure-device "
				  "--mode=devdax)?",
				  path, major(st.st_rdev), minor(st.st_rdev));
	}
	sysfs_u64(major(st.st_rdev), minor(st.st_rdev), "align", &align);
	if (align > (2u << 20)) {
		close(fd);
		return cxl_seterr(CXL_ENOTSUP,
				  "%s has alignment %" PRIu64
				  "; libcxlshm maps at 2 MiB: reconfigure it "
				  "with 'daxctl reconfigure-device --align=2M'",
				  path, align);
	}
	if (size < POOL_MIN_SIZE) {
		close(fd);
		return cxl_seterr(CXL_ETOOSMALL,
				  "%s is %" PRIu64 " bytes; a "
				  "pool needs at least %u MiB",
				  path, size, POOL_MIN_SIZE >> 20);
	}
	p->fd = fd;
	p->size = ALIGN_DOWN(size, 2u << 20);
	return cxl_map_aligned(fd, p->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			       "DAX device", &p->resv, &p->resv_len, &p->base);
}
