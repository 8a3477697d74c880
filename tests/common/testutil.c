/* SPDX-License-Identifier: BSD-3-Clause */
#include "testutil.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int t_failed, t_passed;

void tpool_init(struct tpool *tp, const char *tag)
{
	snprintf(tp->dir, sizeof(tp->dir), "/dev/shm/cxltest-%s-%d", tag,
		 (int)getpid());
	snprintf(tp->path, sizeof(tp->path), "%s/pool", tp->dir);
	tpool_cleanup(tp);
	REQUIRE(mkdir(tp->dir, 0700) == 0);
}

void tpool_cleanup(struct tpool *tp)
{
	DIR *d = opendir(tp->dir);
	struct dirent *de;
	char f[600];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%s", tp->dir, de->d_name);
		unlink(f);
	}
	closedir(d);
	rmdir(tp->dir);
}

void topts(struct cxl_pool_opts *o, const struct tpool *tp,
	   enum cxl_coh_mode mode, uint32_t host, uint64_t size)
{
	cxl_opts_default(o);
	snprintf(o->path, sizeof(o->path), "%s", tp->path);
	snprintf(o->rundir, sizeof(o->rundir), "%s", tp->dir);
	o->size = size ? size : 32u << 20;
	o->mode = mode;
	o->mode_set = 1;
	o->host_id = host;
	o->capacity = 4096;
	o->max_hosts = 16;
	o->max_procs = 64;
	o->lock_timeout_ms = 20000;
}

static const char *argval(int argc, char **argv, const char *flag)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], flag))
			return argv[i + 1];
	return NULL;
}

enum cxl_coh_mode targ_mode(int argc, char **argv)
{
	const char *m = argval(argc, argv, "--mode");

	if (!m || !strcmp(m, "coherent"))
		return CXL_COH_COHERENT;
	if (!strcmp(m, "flush"))
		return CXL_COH_FLUSH;
	if (!strcmp(m, "uncached"))
		return CXL_COH_UNCACHED;
	if (!strcmp(m, "emulated"))
		return CXL_COH_EMULATED;
	fprintf(stderr, "unknown --mode %s\n", m);
	exit(2);
}

long targ_long(int argc, char **argv, const char *flag, long def)
{
	const char *v = argval(argc, argv, flag);

	return v ? strtol(v, NULL, 0) : def;
}

int run_pair(int (*fn)(int i, int to_peer, int from_peer, void *arg), void *arg)
{
	int p[2][2], bad = 0; /* p[0]: 0 -> 1, p[1]: 1 -> 0 */
	pid_t pid[2];

	REQUIRE(pipe(p[0]) == 0 && pipe(p[1]) == 0);
	fflush(NULL);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		REQUIRE(pid[i] >= 0);
		if (pid[i] == 0) {
			int to = p[i][1], from = p[1 - i][0], rc;

			close(p[i][0]);
			close(p[1 - i][1]);
			rc = fn(i, to, from, arg);
			fflush(NULL); /* _exit does not */
			_exit(rc ? 1 : 0);
		}
	}
	for (int i = 0; i < 2; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	for (int i = 0; i < 2; i++) {
		int st;

		waitpid(pid[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "child %d failed (status 0x%x)\n", i,
				st);
			bad++;
		}
	}
	return bad;
}

int run_children(int n, int (*fn)(int i, void *arg), void *arg)
{
	pid_t *pids = calloc((size_t)n, sizeof(pid_t));
	int bad = 0;

	REQUIRE(pids);
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		REQUIRE(pids[i] >= 0);
		if (pids[i] == 0) {
			int rc = fn(i, arg);

			fflush(NULL); /* _exit does not: keep the child's output
				       */
			_exit(rc ? 1 : 0);
		}
	}
	for (int i = 0; i < n; i++) {
		int st;

		waitpid(pids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "child %d failed (status 0x%x)\n", i,
				st);
			bad++;
		}
	}
	free(pids);
	return bad;
}

int t_report(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, t_passed, t_failed);
	return t_failed ? 1 : 0;
}

uint64_t t_rand(uint64_t *s)
{
	/* xorshift64*: deterministic per seed, good enough for test data */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

void mp_group_args(struct mp_group *g, int argc, char **argv, const char *tag,
		   int procs, int hosts, int rounds)
{
	g->mode = targ_mode(argc, argv);
	g->procs = (int)targ_long(argc, argv, "--procs", procs);
	g->hosts = (int)targ_long(argc, argv, "--hosts", hosts);
	g->rounds = (int)targ_long(argc, argv, "--rounds", rounds);
	REQUIRE(g->procs > 0 && g->hosts > 0 && g->rounds >= 0);
	tpool_init(&g->tp, tag);
}

void mp_group_run(struct mp_group *g, int (*fn)(int i, void *arg),
		  const char *what)
{
	uint64_t t0 = cxl_now_ns();

	CHECK(run_children(g->procs, fn, g) == 0);
	printf("%d processes on %d hosts, %d %s (%s): %.2f s\n", g->procs,
	       g->hosts, g->rounds, what, cxl_coh_mode_name(g->mode),
	       (double)(cxl_now_ns() - t0) / 1e9);
	tpool_cleanup(&g->tp);
}

void t_net_on_loopback(void)
{
	setenv("FI_TCP_IFACE", "lo", 0);
}
