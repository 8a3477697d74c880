/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Crash consistency of STREAM-PMem's persistence (docs/characterization.md,
 * "Committing an iteration"). A writer process runs STREAM's Add kernel
 * over persistent arrays in the pool, x_k = x_(k-1) + b, alternating
 * between two data arrays, and commits every iteration k:
 *   1. retire the commit slot k % 2 (the record of k - 2, whose array it
 *      is about to overwrite): magic = 0, written back, fenced;
 *   2. x[k % 2] = x[(k-1) % 2] + b, with a checksum of the result;
 *   3. write back x[k % 2], fence;
 *   4. the record {k, checksum, seal} in slot k % 2, written back, fenced;
 *   5. tell the test "k is committed" (a pipe).
 * The test kills the writer with SIGKILL at a random time, attaches as
 * another host, and checks that
 *   - the newest valid record is at least the last iteration the writer
 *     announced (an acknowledged commit is never lost) and at most one
 *     more;
 *   - every valid record's array is intact: checksum, and values exactly
 *     x_k[j] = j + k (j + 1) (no torn iteration visible as committed).
 * The next round's writer recovers from the newest record and goes on.
 *
 * In the emulated mode a killed process loses every line it did not
 * write back, so a missing write-back fails the test; --negative data
 * (skip step 3's write-back) and --negative commit (skip the record's)
 * check that it does: they pass only when the checker catches the loss.
 * In the flush mode a killed process loses nothing (its stores are in
 * memory), so that run checks the protocol and the recovery only.
 *
 * --backend pmemobj runs the same protocol on PMDK's libpmemobj (arrays
 * pmemobj_zalloc'ed, pmemobj_persist), reopened with pmemobj_open after
 * each kill.
 *
 *   mp_stream_crash --mode flush|emulated [--backend cxl|pmemobj]
 *                   [--rounds 8] [--n 262144] [--seed S]
 *                   [--negative data|commit]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef CXL_HAVE_PMEMOBJ
#include <libpmemobj.h>
#endif

#include "testutil.h"

#define MAGIC 0x53545245414d4b31ull /* "STREAMK1" */
#define WRITER_HOST 1
#define CHECKER_HOST 2

/* One commit record: alone on its 64-byte line. */
struct commit {
	uint64_t magic, iter, n, sum, seal;
	uint64_t pad[3];
};

enum neg {
	NEG_NONE,
	NEG_DATA,
	NEG_COMMIT
};

static enum cxl_coh_mode mode;
static struct tpool tp;
static size_t n_elems;
static enum neg negative;
static bool use_pmemobj;

/* ---- the persistent store: pool objects, or a pmemobj pool ------------- */

struct store {
	double *x[2], *b;
	struct commit *slot; /* [2] */
	cxl_pool *pool;
	struct cxl_obj obj[4];
#ifdef CXL_HAVE_PMEMOBJ
	PMEMobjpool *pop;
#endif
};

#ifdef CXL_HAVE_PMEMOBJ
struct proot {
	struct commit slot[2];
	PMEMoid x[2], b;
};
#endif

static const char *const obj_names[4] = { "sc-x0", "sc-x1", "sc-b",
					  "sc-commit" };

/* Write back [p, p + len) and fence: durable, and ordered before any
 * later store. */
static void persist(struct store *s, const void *p, size_t len)
{
#ifdef CXL_HAVE_PMEMOBJ
	if (use_pmemobj) {
		pmemobj_persist(s->pop, p, len);
		return;
	}
#endif
	cxl_flush(s->pool, p, len);
	cxl_wfence(s->pool);
}

/* Drop this host's copy before reading what another process wrote. */
static void inval(struct store *s, const void *p, size_t len)
{
	if (!use_pmemobj)
		cxl_inval(s->pool, p, len);
}

static int store_open(struct store *s, uint32_t host, bool create)
{
	memset(s, 0, sizeof(*s));
#ifdef CXL_HAVE_PMEMOBJ
	if (use_pmemobj) {
		char path[256];
		struct proot *r;
		size_t bytes = n_elems * sizeof(double);

		snprintf(path, sizeof(path), "%s/pmemobj.pool", tp.dir);
		s->pop = create ? pmemobj_create(path, "mp_stream_crash",
						 3 * bytes + (32u << 20), 0600)
				: pmemobj_open(path, "mp_stream_crash");
		if (!s->pop) {
			fprintf(stderr, "pmemobj %s %s: %s\n",
				create ? "create" : "open", path,
				pmemobj_errormsg());
			return -1;
		}
		r = pmemobj_direct(pmemobj_root(s->pop, sizeof(*r)));
		/* The allocator sets each PMEMoid atomically, persisted. */
		for (int i = 0; create && i < 3; i++)
			if (pmemobj_zalloc(s->pop, i < 2 ? &r->x[i] : &r->b,
					   bytes, 1)) {
				fprintf(stderr, "pmemobj_zalloc: %s\n",
					pmemobj_errormsg());
				return -1;
			}
		s->x[0] = pmemobj_direct(r->x[0]);
		s->x[1] = pmemobj_direct(r->x[1]);
		s->b = pmemobj_direct(r->b);
		s->slot = r->slot;
		return s->x[0] && s->x[1] && s->b ? 0 : -1;
	}
#endif
	{
		struct cxl_pool_opts o;

		topts(&o, &tp, mode, host,
		      (64u << 20) +
			      (4 * n_elems * sizeof(double) + (2u << 20)) /
				      (2u << 20) * (2u << 20));
		if (cxl_pool_attach(&o, &s->pool)) {
			fprintf(stderr, "attach: %s\n", cxl_errmsg());
			return -1;
		}
		for (int i = 0; i < 4; i++) {
			uint64_t len = i < 3 ? n_elems * sizeof(double)
					     : 2 * sizeof(struct commit);
			int rc = create ? cxl_obj_create(s->pool, obj_names[i],
							 len, CXL_OBJ_ZERO,
							 &s->obj[i])
					: cxl_obj_open(s->pool, obj_names[i],
						       &s->obj[i]);

			if (rc) {
				fprintf(stderr, "object %s: %s\n", obj_names[i],
					cxl_errmsg());
				return -1;
			}
		}
		s->x[0] = s->obj[0].ptr;
		s->x[1] = s->obj[1].ptr;
		s->b = s->obj[2].ptr;
		s->slot = s->obj[3].ptr;
		return 0;
	}
}

static void store_close(struct store *s)
{
#ifdef CXL_HAVE_PMEMOBJ
	if (use_pmemobj) {
		pmemobj_close(s->pop);
		return;
	}
#endif
	for (int i = 0; i < 4; i++)
		if (s->obj[i].ptr)
			cxl_obj_close(&s->obj[i]);
	cxl_pool_detach(s->pool);
}

/* ---- records and data --------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t w)
{
	return (h ^ w) * 0x100000001b3ull;
}

static uint64_t seal_of(const struct commit *c)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = mix(h, c->magic);
	h = mix(h, c->iter);
	h = mix(h, c->n);
	return mix(h, c->sum);
}

static uint64_t checksum(const double *x, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull, w;

	for (size_t j = 0; j < n; j++) {
		memcpy(&w, &x[j], sizeof(w));
		h = mix(h, w);
	}
	return h;
}

static bool valid_record(const struct commit *c)
{
	return c->magic == MAGIC && c->n == n_elems && c->seal == seal_of(c);
}

/* Newest valid record, or -1. */
static int64_t newest(struct store *s)
{
	int64_t best = -1;

	inval(s, s->slot, 2 * sizeof(struct commit));
	for (int i = 0; i < 2; i++)
		if (valid_record(&s->slot[i]) &&
		    (int64_t)s->slot[i].iter > best)
			best = (int64_t)s->slot[i].iter;
	return best;
}

static void commit(struct store *s, uint64_t k, uint64_t sum)
{
	struct commit *c = &s->slot[k % 2];

	c->iter = k;
	c->n = n_elems;
	c->sum = sum;
	c->magic = MAGIC;
	c->seal = seal_of(c);
	/* Written back and fenced after the data: a record that reaches
	 * the pool finds its array there. */
	if (negative != NEG_COMMIT || k == 0)
		persist(s, c, sizeof(*c));
}

/* ---- the writer --------------------------------------------------------- */

static void report(int fd, uint64_t k)
{
	if (write(fd, &k, sizeof(k)) != (ssize_t)sizeof(k))
		_exit(3);
}

static int writer(int fd, bool first)
{
	struct store s;
	size_t bytes = n_elems * sizeof(double);
	uint64_t k;

	if (store_open(&s, WRITER_HOST, first))
		return 1;
	if (first) {
		for (size_t j = 0; j < n_elems; j++) {
			s.x[0][j] = (double)j;
			s.b[j] = (double)(j + 1);
		}
		persist(&s, s.x[0], bytes);
		persist(&s, s.b, bytes);
		commit(&s, 0, checksum(s.x[0], n_elems));
		k = 0;
	} else {
		int64_t r = newest(&s);

		if (r < 0) {
			fprintf(stderr, "writer: no valid commit record\n");
			return 1;
		}
		k = (uint64_t)r;
		/* The arrays were written by the killed process. */
		inval(&s, s.x[k % 2], bytes);
		inval(&s, s.b, bytes);
	}
	report(fd, k);
	for (;;) {
		struct commit *old = &s.slot[(k + 1) % 2];
		const double *src = s.x[k % 2], *b = s.b;
		double *dst = s.x[(k + 1) % 2];
		uint64_t h = 0xcbf29ce484222325ull, w;

		k++;
		/* 1. retire the record of the array about to be overwritten */
		old->magic = 0;
		if (negative != NEG_COMMIT)
			persist(&s, old, sizeof(*old));
		/* 2. STREAM Add, checksummed */
		for (size_t j = 0; j < n_elems; j++) {
			dst[j] = src[j] + b[j];
			memcpy(&w, &dst[j], sizeof(w));
			h = mix(h, w);
		}
		/* 3. the data reaches the pool before the record */
		if (negative != NEG_DATA)
			persist(&s, dst, bytes);
		else if (!use_pmemobj)
			cxl_wfence(s.pool);
		/* 4. the record */
		commit(&s, k, h);
		report(fd, k);
	}
}

/* ---- the checker -------------------------------------------------------- */

/* Returns the number of problems found; *committed gets the newest. */
static int check(int64_t reported, int64_t *committed)
{
	struct store s;
	size_t bytes = n_elems * sizeof(double);
	int bad = 0;

	REQUIRE(store_open(&s, CHECKER_HOST, false) == 0);
	*committed = newest(&s);
	if (*committed < reported) {
		fprintf(stderr,
			"  acknowledged commit lost: the writer announced "
			"iteration %lld, the pool's newest record is %lld\n",
			(long long)reported, (long long)*committed);
		bad++;
	}
	if (*committed > reported + 1) {
		fprintf(stderr,
			"  record from the future: %lld, announced %lld\n",
			(long long)*committed, (long long)reported);
		bad++;
	}
	for (int i = 0; i < 2; i++) {
		const struct commit *c = &s.slot[i];
		const double *x;
		size_t wrong = 0;

		if (!valid_record(c))
			continue;
		x = s.x[c->iter % 2];
		inval(&s, x, bytes);
		for (size_t j = 0; j < n_elems; j++)
			if (x[j] !=
			    (double)j + (double)c->iter * (double)(j + 1))
				wrong++;
		if (checksum(x, n_elems) != c->sum || wrong) {
			fprintf(stderr,
				"  torn iteration visible as committed: record "
				"%llu (slot %d) has %zu wrong values, checksum "
				"%s\n",
				(unsigned long long)c->iter, i, wrong,
				checksum(x, n_elems) == c->sum ? "ok"
							       : "mismatch");
			bad++;
		}
	}
	store_close(&s);
	return bad;
}

/* ---- rounds ------------------------------------------------------------- */

/* A SIGKILL can land while the emulator holds a line's seqlock (a real
 * cache has no such lock): drop the stale lock file before anyone
 * attaches again. No process is attached now. */
static void drop_emu_locks(void)
{
	DIR *d = opendir(tp.dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		char path[512];

		if (strncmp(e->d_name, "cxlshm-", 7) || l < 4 ||
		    strcmp(e->d_name + l - 4, ".emu"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", tp.dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Read every announcement; returns the last one (or prev). */
static int64_t drain(int fd, int64_t prev, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v[512];
	ssize_t r;

	if (poll(&p, 1, timeout_ms) <= 0)
		return prev;
	r = read(fd, v, sizeof(v));
	if (r >= (ssize_t)sizeof(v[0]))
		prev = (int64_t)v[r / (ssize_t)sizeof(v[0]) - 1];
	return prev;
}

/* One round: start, wait for the first announcement, kill at a random
 * time, check. Returns the problems found. */
static int round_once(int r, uint64_t *rng)
{
	int fds[2], st, bad;
	int64_t last = -1, committed;
	double kill_after = 0.005 + (double)(t_rand(rng) % 150) / 1000.0, t0;
	pid_t pid;

	REQUIRE(pipe(fds) == 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(writer(fds[1], r == 0));
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	t0 = now_s();
	while (last < 0 && now_s() - t0 < 60)
		last = drain(fds[0], last, 100);
	REQUIRE(last >= 0); /* the writer set up or recovered */
	t0 = now_s();
	while (now_s() - t0 < kill_after)
		last = drain(fds[0], last, 1);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	/* announcements made before the kill are still in the pipe */
	for (int64_t prev = -2; prev != last;) {
		prev = last;
		last = drain(fds[0], last, 0);
	}
	close(fds[0]);
	if (!WIFSIGNALED(st)) {
		fprintf(stderr, "round %d: the writer exited (status 0x%x)\n",
			r, st);
		return 1;
	}
	if (!use_pmemobj && mode == CXL_COH_EMULATED)
		drop_emu_locks();
	bad = check(last, &committed);
	printf("round %d: killed after %.0f ms, announced %lld, committed "
	       "%lld: %s\n",
	       r, 1000 * kill_after, (long long)last, (long long)committed,
	       bad ? "PROBLEM" : "consistent");
	return bad;
}

int main(int argc, char **argv)
{
	long rounds = targ_long(argc, argv, "--rounds", 8);
	uint64_t seed = (uint64_t)targ_long(argc, argv, "--seed", 0);
	int detected = 0;

	mode = targ_mode(argc, argv);
	n_elems = (size_t)targ_long(argc, argv, "--n", 262144);
	for (int i = 1; i + 1 < argc; i++) {
		if (!strcmp(argv[i], "--negative"))
			negative = !strcmp(argv[i + 1], "data")	    ? NEG_DATA
				   : !strcmp(argv[i + 1], "commit") ? NEG_COMMIT
								    : NEG_NONE;
		if (!strcmp(argv[i], "--backend"))
			use_pmemobj = !strcmp(argv[i + 1], "pmemobj");
	}
#ifndef CXL_HAVE_PMEMOBJ
	if (use_pmemobj) {
		fprintf(stderr, "mp_stream_crash: built without libpmemobj; "
				"install libpmemobj-dev and re-run cmake\n");
		return 2;
	}
#endif
	if (negative && (use_pmemobj || mode != CXL_COH_EMULATED)) {
		fprintf(stderr, "mp_stream_crash: --negative needs --mode "
				"emulated and the cxl backend: elsewhere a "
				"killed process loses no cache line\n");
		return 2;
	}
	if (!seed)
		seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
	printf("mp_stream_crash: %s%s, %zu doubles, %ld rounds, seed "
	       "%llu%s\n",
	       use_pmemobj ? "pmemobj" : "cxl, mode ",
	       use_pmemobj ? "" : cxl_coh_mode_name(mode), n_elems, rounds,
	       (unsigned long long)seed,
	       negative == NEG_DATA	? ", data NOT written back"
	       : negative == NEG_COMMIT ? ", records NOT written back"
					: "");
	tpool_init(&tp, "streamcrash");
	for (long r = 0; r < rounds; r++) {
		int bad = round_once((int)r, &seed);

		if (negative) {
			detected += bad > 0;
			if (bad)
				break; /* the loss was caught */
			continue;
		}
		CHECK(bad == 0);
	}
	tpool_cleanup(&tp);
	if (negative) {
		printf("mp_stream_crash: the missing write-back was %s\n",
		       detected ? "detected" : "NOT detected");
		CHECK(detected);
	}
	return t_report("mp_stream_crash");
}
