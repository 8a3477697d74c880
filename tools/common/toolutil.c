/* SPDX-License-Identifier: BSD-3-Clause */
#include "toolutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tool_tmp_pool_create(const char *prog, struct cxl_pool_opts *o, char *dir,
			 size_t dirlen)
{
	snprintf(dir, dirlen, "/dev/shm/%s-%d.XXXXXX", prog, (int)getpid());
	if (!mkdtemp(dir)) {
		fprintf(stderr,
			"%s: cannot create a temporary pool directory in "
			"/dev/shm: %s; mount a tmpfs on /dev/shm, or give an "
			"existing pool with --pool PATH\n",
			prog, strerror(errno));
		dir[0] = '\0';
		return -1;
	}
	snprintf(o->path, sizeof(o->path), "%s/pool", dir);
	snprintf(o->rundir, sizeof(o->rundir), "%s", dir);
	o->create = 1;
	return 0;
}

void tool_tmp_pool_remove(const char *prog, char *dir)
{
	struct dirent *e;
	DIR *d;

	if (!dir[0])
		return;
	d = opendir(dir);
	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	if (rmdir(dir))
		fprintf(stderr,
			"%s: cannot remove the temporary pool directory %s: "
			"%s; delete it by hand\n",
			prog, dir, strerror(errno));
	dir[0] = '\0';
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double tool_median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
