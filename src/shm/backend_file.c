/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * File backend: a pool emulated by a file on tmpfs (/dev/shm) or hugetlbfs.
 * A missing file is created unnamed and linked under its name, or with
 * O_EXCL, so exactly one process creates (and then formats) it; see
 * pool.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

#define TMPFS_MAGIC_ 0x01021994
#define HUGETLBFS_MAGIC_ 0x958458f6
#define RAMFS_MAGIC_ 0x858458f6
#ifndef STATX_ATTR_DAX
#define STATX_ATTR_DAX 0x00200000
#endif

/*
 * A pool file must be memory: tmpfs, hugetlbfs or ramfs, or a file that
 * the kernel maps directly (DAX, on a persistent-memory file system). On
 * a disk file system every store would end up written back to the disk,
 * and the pool would not be the memory it stands for: refused, never a
 * silent slow path. 0, or the file system's magic number.
 */
static long disk_fs(int fd)
{
	struct statfs sf;
	struct statx sx;

	if (fstatfs(fd, &sf) != 0)
		return 0; /* cannot tell: let the mapping decide */
	if (sf.f_type == TMPFS_MAGIC_ || sf.f_type == HUGETLBFS_MAGIC_ ||
	    sf.f_type == RAMFS_MAGIC_)
		return 0;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) == 0 &&
	    (sx.stx_attributes & STATX_ATTR_DAX))
		return 0;
	return sf.f_type ? (long)sf.f_type : 1;
}

static int open_err(const char *path, int e, bool creating)
{
	if (e == EACCES || e == EPERM || e == EROFS)
		return cxl_seterr(CXL_EACCES,
				  "permission denied %s pool file "
				  "%s: give this user read/write access to it "
				  "(and its directory), or point CXL_POOL "
				  "elsewhere",
				  creating ? "creating" : "opening", path);
	if ((e == ENOENT || e == ENOTDIR) && creating)
		return cxl_seterr(CXL_ENODEV,
				  "cannot create pool file %s: its "
				  "directory does not exist; create the "
				  "directory or point CXL_POOL elsewhere",
				  path);
	if (e == ENOENT || e == ENOTDIR)
		return cxl_seterr(CXL_ENODEV,
				  "pool file %s does not exist: "
				  "create it with 'cxlpool format %s --size "
				  "1G', or set CXL_POOL_CREATE=1 to create it "
				  "on first use",
				  path, path);
	return cxl_seterr(CXL_ESYS, "cannot open pool file %s: %s", path,
			  strerror(e));
}

static int disk_refusal(const char *path, long magic)
{
	return cxl_seterr(CXL_ENODEV,
			  "pool file %s is on a disk file system "
			  "(magic 0x%lx), not in memory: the kernel "
			  "would write the pool back to the disk. Put "
			  "it on tmpfs (e.g. CXL_POOL=/dev/shm/pool) or "
			  "hugetlbfs, or use a DAX device /dev/daxX.Y",
			  path, magic);
}

/* An unnamed file (O_TMPFILE) in the directory of path, or -1 (errno). */
static int open_unnamed(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (!slash) {
		strcpy(dir, ".");
	} else if (n == 0) {
		strcpy(dir, "/");
	} else if (n >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	} else {
		memcpy(dir, path, n);
		dir[n] = '\0';
	}
	return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

/*
 * Create the pool file path, sized, and locked (LOCK_EX, held until the
 * header is written, so that losers of the creation race never see half
 * a pool). It is made unnamed (O_TMPFILE) and named (linkat) only once
 * it is known to be memory: a process refused, or killed meanwhile,
 * leaves nothing behind. Where the file system has no O_TMPFILE it is
 * made by name with O_EXCL (and unlinked again if refused). *fdp: the
 * file; -1 with errno set if it could not be opened; the other process's
 * file if that one created it first (*created stays false).
 */
static int create_pool_file(struct cxl_pool *p, const char *path, int *fdp,
			    bool *created)
{
	bool named = false;
	char proc[64];
	int fd, e;

	*fdp = -1;
	fd = open_unnamed(path);
	if (fd < 0 &&
	    (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			if (errno == EEXIST) /* another process made it first */
				*fdp = open(path, O_RDWR | O_CLOEXEC);
			return CXL_OK; /* else errno for open_err */
		}
		named = true;
	} else if (fd < 0) {
		return CXL_OK;
	} else if (disk_fs(fd)) {
		long magic = disk_fs(fd);

		close(fd);
		return disk_refusal(path, magic);
	}
	if (flock(fd, LOCK_EX) != 0 ||
	    ftruncate(fd, (off_t)p->opts.size) != 0) {
		e = errno;
		close(fd);
		if (named)
			unlink(path);
		return cxl_seterr(e == ENOSPC ? CXL_ENOSPC : CXL_ESYS,
				  "cannot size new pool file %s to %llu bytes: "
				  "%s; free space or lower CXL_POOL_SIZE",
				  path, (unsigned long long)p->opts.size,
				  strerror(e));
	}
	if (!named) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW)) {
			e = errno;
			close(fd);
			if (e == EEXIST) { /* another process made it first */
				*fdp = open(path, O_RDWR | O_CLOEXEC);
				return CXL_OK;
			}
			return cxl_seterr(CXL_ESYS,
					  "cannot name the new pool file %s "
					  "(linkat of %s): %s; is /proc "
					  "mounted?",
					  path, proc, strerror(e));
		}
	}
	*created = true;
	*fdp = fd;
	return CXL_OK;
}

int cxl_backend_file_open(struct cxl_pool *p, bool *created)
{
	const char *path = p->opts.path;
	struct stat st;
	int fd;

	*created = false;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && p->opts.create) {
		int rc;

		if (p->opts.size < POOL_MIN_SIZE || p->opts.size % (2u << 20))
			return cxl_seterr(CXL_ETOOSMALL,
					  "CXL_POOL_SIZE=%llu: a "
					  "pool must be a multiple of 2 MiB "
					  "and at least %u MiB",
					  (unsigned long long)p->opts.size,
					  POOL_MIN_SIZE >> 20);
		if ((rc = create_pool_file(p, path, &fd, created)))
			return rc;
	}
	if (fd < 0)
		return open_err(path, errno,
				p->opts.create &&
					(errno == ENOENT || errno == ENOTDIR));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cxl_seterr(CXL_ENODEV,
				  "%s is not a regular file: a "
				  "file pool must be a file on tmpfs or "
				  "hugetlbfs; for a DAX device use /dev/daxX.Y",
				  path);
	}
	if (disk_fs(fd)) {
		long magic = disk_fs(fd);

		close(fd);
		if (*created) /* ours, empty: gone again */
			unlink(path);
		return disk_refusal(path, magic);
	}
	if (!*created) {
		/* Another process may be creating it: wait for its lock. Its
		 * O_EXCL open comes before its flock, so an empty file means
		 * the creator has not taken the lock yet: wait for it (up to
		 * CXL_LOCK_TIMEOUT_MS), rather than take the file as too small.
		 */
		uint64_t t0 = cxl_now_ns();

		for (;;) {
			if (flock(fd, LOCK_SH) != 0 || fstat(fd, &st) != 0) {
				close(fd);
				return cxl_seterr(CXL_ESYS,
						  "cannot lock %s: %s", path,
						  strerror(errno));
			}
			flock(fd, LOCK_UN);
			if (st.st_size > 0 || !p->opts.create ||
			    cxl_now_ns() - t0 >
				    (uint64_t)p->opts.lock_timeout_ms *
					    1000000ull)
				break;
			usleep(1000);
		}
	}
	p->fd = fd;
	p->size = *created ? p->opts.size : (uint64_t)st.st_size;
	if (p->size < POOL_MIN_SIZE) {
		close(fd);
		p->fd = -1;
		return cxl_seterr(CXL_ETOOSMALL,
				  "pool file %s is %llu bytes; a "
				  "pool needs at least %u MiB: reformat it "
				  "with 'cxlpool format %s --size 64M' or "
				  "larger",
				  path, (unsigned long long)p->size,
				  POOL_MIN_SIZE >> 20, path);
	}
	p->size = ALIGN_DOWN(p->size, CXL_LINE);
	return cxl_map_aligned(fd, p->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			       "pool file", &p->resv, &p->resv_len, &p->base);
}
