/* SPDX-License-Identifier: BSD-3-Clause */
#include "toolutil.h"

#include "cxlshm/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

int tool_pool_opts(const char *prog, const char *pool_arg,
		   struct cxl_pool_opts *o, char *tmp_dir, size_t dirlen)
{
	if (cxl_opts_from_env(o)) {
		fprintf(stderr, "%s: invalid environment: %s\n", prog,
			cxl_errmsg());
		return -1;
	}
	if (pool_arg) {
		if (strlen(pool_arg) >= sizeof(o->path)) {
			fprintf(stderr,
				"%s: --pool path is longer than %zu bytes; "
				"use a shorter path or a symlink\n",
				prog, sizeof(o->path) - 1);
			return -1;
		}
		strcpy(o->path, pool_arg);
	} else if (!o->path[0] &&
		   tool_tmp_pool_create(prog, o, tmp_dir, dirlen)) {
		return -1;
	}
	if (!getenv("CXL_JOB"))
		snprintf(o->job, sizeof(o->job), "%s-%d", prog, (int)getpid());
	return 0;
}

int tool_usage_error(const char *prog, int c, const char *arg)
{
	if (c == ':')
		fprintf(stderr, "%s: %s needs a value; see '%s --help'\n", prog,
			arg, prog);
	else if (c)
		fprintf(stderr,
			"%s: unknown or malformed option '%s'; see '%s "
			"--help'\n",
			prog, arg, prog);
	else
		fprintf(stderr,
			"%s: unexpected argument '%s'; options start with "
			"--, see '%s --help'\n",
			prog, arg, prog);
	return 2;
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

FILE *tool_csv_open(const char *prog, const char *path, const char *header)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr,
			"%s: cannot create CSV file %s: %s; give --csv a path "
			"in a writable directory\n",
			prog, path, strerror(errno));
		return NULL;
	}
	fputs(header, f);
	return f;
}

int tool_csv_close(const char *prog, FILE **f, const char *path)
{
	int bad;

	if (!*f)
		return 0;
	bad = ferror(*f);
	bad |= fclose(*f) != 0;
	*f = NULL;
	if (bad) {
		fprintf(stderr,
			"%s: writing CSV file %s failed: %s; check the free "
			"space of its file system\n",
			prog, path, strerror(errno));
		return -1;
	}
	return 0;
}

void tool_catch_signals(void (*fn)(int))
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESETHAND; /* a second signal kills at once */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}
