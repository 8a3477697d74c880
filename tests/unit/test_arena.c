/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Arena API: life cycle, reference counts, reuse of space, alignment, job
 * namespaces, garbage collection of a crashed job, repair, and every error
 * path. Run per coherence mode: test_arena --mode coherent|emulated.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"

static enum cxl_coh_mode mode;

static cxl_pool *attach(const struct tpool *tp, uint32_t host, const char *job)
{
	struct cxl_pool_opts o;
	cxl_pool *p;

	topts(&o, tp, mode, host, 0);
	if (job)
		snprintf(o.job, sizeof(o.job), "%s", job);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	return p;
}

static int count_cb(const struct cxl_obj_stat *st, void *arg)
{
	(void)st;
	(*(int *)arg)++;
	return 0;
}

static int stop_cb(const struct cxl_obj_stat *st, void *arg)
{
	(void)st;
	(void)arg;
	return 42;
}

static void test_lifecycle(const struct tpool *tp)
{
	cxl_pool *p = attach(tp, 0, NULL);
	struct cxl_obj a, b;
	struct cxl_obj_stat st;
	struct cxl_arena_stat as0, as1;
	char longname[80];
	int n = 0;

	CHECK_RC(cxl_arena_stat(p, &as0), CXL_OK);
	CHECK(as0.live == 0 && as0.procs_live == 1 && as0.hosts_active == 1);
	CHECK(as0.heap_free == as0.heap_size);

	CHECK_RC(cxl_obj_create(p, "alpha", 1000, CXL_OBJ_ZERO, &a), CXL_OK);
	CHECK(a.size == 1000 && a.ptr && a.off % 64 == 0);
	CHECK(((uint8_t *)a.ptr)[999] == 0);
	memset(a.ptr, 7, 1000);
	cxl_flush(p, a.ptr, 1000);
	cxl_wfence(p);
	CHECK_RC(cxl_obj_create(p, "alpha", 10, 0, &b), CXL_EEXIST);
	CHECK(strstr(cxl_errmsg(), "alpha") != NULL);
	CHECK_RC(cxl_obj_open(p, "alpha", &b), CXL_OK);
	CHECK(b.off == a.off && b.ptr == a.ptr);
	CHECK_RC(cxl_obj_stat(p, "alpha", &st), CXL_OK);
	CHECK(st.refcnt == 2 && st.size == 1000 && st.alloc_size == 1024);
	CHECK(!strcmp(st.name, "alpha") && !strcmp(st.job, "global"));

	/* destroy while open: name gone at once, storage after last close */
	CHECK_RC(cxl_obj_destroy(p, "alpha"), CXL_OK);
	CHECK_RC(cxl_obj_open(p, "alpha", &a), CXL_ENOENT);
	CHECK_RC(cxl_obj_stat(p, "alpha", &st), CXL_ENOENT);
	CHECK_RC(cxl_obj_destroy(p, "alpha"), CXL_ENOENT);
	CHECK_RC(cxl_obj_list(p, count_cb, &n), CXL_OK);
	CHECK(n == 1); /* unlinked but still open */
	CHECK_RC(cxl_arena_stat(p, &as1), CXL_OK);
	CHECK(as1.live == 0 && as1.unlinked == 1);
	CHECK(as1.heap_free == as0.heap_free - 1024);
	/* a new object of the same name is independent */
	{
		struct cxl_obj c;

		CHECK_RC(cxl_obj_create(p, "alpha", 64, 0, &c), CXL_OK);
		CHECK(c.off != b.off);
		CHECK(((uint8_t *)b.ptr)[10] == 7); /* old one untouched */
		CHECK_RC(cxl_obj_close(&c), CXL_OK);
		CHECK_RC(cxl_obj_destroy(p, "alpha"), CXL_OK);
	}
	CHECK_RC(cxl_obj_close(&a), CXL_OK);
	CHECK_RC(cxl_obj_close(&b), CXL_OK);
	CHECK_RC(cxl_arena_stat(p, &as1), CXL_OK);
	CHECK(as1.live == 0 && as1.unlinked == 0);
	CHECK(as1.heap_free == as0.heap_free);
	CHECK_RC(cxl_obj_close(&b), CXL_EINVAL); /* handle already closed */

	/* argument errors */
	memset(longname, 'x', sizeof(longname));
	longname[64] = '\0';
	CHECK_RC(cxl_obj_create(p, longname, 64, 0, &a), CXL_ENAMETOOLONG);
	longname[63] = '\0'; /* 63 bytes is the documented maximum */
	CHECK_RC(cxl_obj_create(p, longname, 64, 0, &a), CXL_OK);
	CHECK_RC(cxl_obj_stat(p, longname, &st), CXL_OK);
	CHECK(strlen(st.name) == 63);
	CHECK_RC(cxl_obj_close(&a), CXL_OK);
	CHECK_RC(cxl_obj_destroy(p, longname), CXL_OK);
	CHECK_RC(cxl_obj_create(p, "", 64, 0, &a), CXL_EINVAL);
	CHECK_RC(cxl_obj_create(p, NULL, 64, 0, &a), CXL_EINVAL);
	CHECK_RC(cxl_obj_create(p, "zero", 0, 0, &a), CXL_EINVAL);
	CHECK_RC(cxl_obj_create(p, "flags", 64, 0x80, &a), CXL_EINVAL);
	CHECK_RC(cxl_obj_open(p, "nope", &a), CXL_ENOENT);
	CHECK(strstr(cxl_errmsg(), "CXL_JOB") != NULL);

	/* list visits every object and stops on a non-zero callback */
	CHECK_RC(cxl_obj_create(p, "l1", 64, 0, &a), CXL_OK);
	CHECK_RC(cxl_obj_create(p, "l2", 64, 0, &b), CXL_OK);
	n = 0;
	CHECK_RC(cxl_obj_list(p, count_cb, &n), CXL_OK);
	CHECK(n == 2);
	CHECK(cxl_obj_list(p, stop_cb, NULL) == 42);
	cxl_obj_close(&a);
	cxl_obj_close(&b);
	CHECK_RC(cxl_obj_destroy(p, "l1"), CXL_OK);
	CHECK_RC(cxl_obj_destroy(p, "l2"), CXL_OK);
	cxl_pool_detach(p);
}

static void test_align_and_big(const struct tpool *tp)
{
	cxl_pool *p = attach(tp, 0, NULL);
	struct cxl_obj a, b, c;

	CHECK_RC(cxl_obj_create(p, "small", 100, 0, &a), CXL_OK);
	CHECK_RC(cxl_obj_create(p, "huge-aligned", 3u << 20, CXL_OBJ_ALIGN_2M,
				&b),
		 CXL_OK);
	CHECK((uintptr_t)b.ptr % (2u << 20) == 0);
	CHECK_RC(cxl_obj_create(p, "aligned-small", 64, CXL_OBJ_ALIGN_2M, &c),
		 CXL_OK);
	CHECK((uintptr_t)c.ptr % (2u << 20) == 0);
	/* no overlap */
	CHECK(a.off + 100 <= b.off || b.off + (3u << 20) <= a.off);
	CHECK(c.off + 64 <= b.off || b.off + (3u << 20) <= c.off);
	cxl_obj_close(&a);
	cxl_obj_close(&b);
	cxl_obj_close(&c);
	cxl_obj_destroy(p, "small");
	cxl_obj_destroy(p, "huge-aligned");
	cxl_obj_destroy(p, "aligned-small");
	cxl_pool_detach(p);
}

/* Fill the pool, free it, fill again: destroy really returns space. */
static void test_full_and_reuse(const struct tpool *tp)
{
	cxl_pool *p = attach(tp, 0, NULL);
	struct cxl_arena_stat as0, as1;
	struct cxl_obj o;
	char name[32];
	int n1 = 0, n2 = 0, rc;

	CHECK_RC(cxl_arena_stat(p, &as0), CXL_OK);
	for (;; n1++) {
		snprintf(name, sizeof(name), "fill%d", n1);
		rc = cxl_obj_create(p, name, 1u << 20, 0, &o);
		if (rc)
			break;
		cxl_obj_close(&o);
	}
	CHECK_RC(rc, CXL_ENOSPC);
	CHECK(strstr(cxl_errmsg(), "CXL_POOL_SIZE") != NULL);
	CHECK(n1 > 10);
	/* a small object still fits in the leftovers */
	CHECK_RC(cxl_obj_create(p, "crumb", 64, 0, &o), CXL_OK);
	cxl_obj_close(&o);
	CHECK_RC(cxl_obj_destroy(p, "crumb"), CXL_OK);
	for (int i = 0; i < n1; i++) {
		snprintf(name, sizeof(name), "fill%d", i);
		CHECK_RC(cxl_obj_destroy(p, name), CXL_OK);
	}
	CHECK_RC(cxl_arena_stat(p, &as1), CXL_OK);
	CHECK(as1.heap_free == as0.heap_free);
	CHECK(as1.largest_free == as0.largest_free);
	for (;; n2++) {
		snprintf(name, sizeof(name), "fill%d", n2);
		if (cxl_obj_create(p, name, 1u << 20, 0, &o))
			break;
		cxl_obj_close(&o);
	}
	CHECK(n2 == n1);
	for (int i = 0; i < n2; i++) {
		snprintf(name, sizeof(name), "fill%d", i);
		cxl_obj_destroy(p, name);
	}
	cxl_pool_detach(p);
}

/* Capacity 4096 objects: the table fills with ENOMETA, cleanly. */
static void test_meta_full(const struct tpool *tp)
{
	cxl_pool *p = attach(tp, 0, NULL);
	struct cxl_obj o;
	char name[32];
	int n = 0, rc;

	for (;; n++) {
		snprintf(name, sizeof(name), "m%d", n);
		rc = cxl_obj_create(p, name, 64, 0, &o);
		if (rc)
			break;
		cxl_obj_close(&o);
	}
	CHECK_RC(rc, CXL_ENOMETA);
	CHECK(strstr(cxl_errmsg(), "CXL_ARENA_CAPACITY") != NULL);
	/* the multi-level index must reach (nearly) the full capacity */
	CHECK(n >= 4096 * 98 / 100);
	printf("metadata full after %d of 4096 objects\n", n);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		CHECK_RC(cxl_obj_destroy(p, name), CXL_OK);
	}
	CHECK_RC(cxl_obj_create(p, "after", 64, 0, &o), CXL_OK);
	cxl_obj_close(&o);
	cxl_obj_destroy(p, "after");
	cxl_pool_detach(p);
}

/* Jobs: namespaces are separate; a crashed job's objects are reclaimed;
 * a cleanly ended job's objects go with its last process. */
static void test_jobs(const struct tpool *tp)
{
	cxl_pool *g = attach(tp, 0, NULL), *a, *b;
	struct cxl_obj o, o2;
	struct cxl_arena_stat as0, as1;
	uint64_t np = 0, no = 0;
	pid_t pid;
	int st;

	CHECK_RC(cxl_arena_stat(g, &as0), CXL_OK);
	a = attach(tp, 1, "jobA");
	b = attach(tp, 2, "jobB");
	CHECK_RC(cxl_obj_create(a, "same", 128, 0, &o), CXL_OK);
	CHECK_RC(cxl_obj_create(b, "same", 256, 0, &o2), CXL_OK);
	CHECK(o.off != o2.off);
	CHECK_RC(cxl_obj_open(g, "same", &o), CXL_ENOENT);
	cxl_obj_close(&o2);
	/* jobB ends: its objects go with it, jobA's stay */
	cxl_pool_detach(b);
	{
		struct cxl_obj x;

		CHECK_RC(cxl_obj_open(a, "same", &x), CXL_OK);
		cxl_obj_close(&x);
	}
	cxl_obj_close(&o);
	cxl_pool_detach(a);
	CHECK_RC(cxl_arena_stat(g, &as1), CXL_OK);
	CHECK(as1.live == as0.live && as1.heap_free == as0.heap_free);

	/* a job that crashes without detaching */
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		cxl_pool *c = attach(tp, 3, "crashy");
		struct cxl_obj x;

		for (int i = 0; i < 5; i++) {
			char n[16];

			snprintf(n, sizeof(n), "leak%d", i);
			if (cxl_obj_create(c, n, 4096, 0, &x))
				_exit(1);
		}
		_exit(0); /* no close, no detach */
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_RC(cxl_arena_stat(g, &as1), CXL_OK);
	CHECK(as1.live == as0.live + 5 && as1.procs_live == 2);
	/* gc on another host cannot judge host 3's processes... */
	CHECK_RC(cxl_arena_gc(g, -1, &np, &no), CXL_OK);
	CHECK(np == 0 && no == 0);
	/* ...host 3 itself can, when its next process attaches */
	{
		cxl_pool *h3 = attach(tp, 3, "other");

		CHECK_RC(cxl_arena_stat(g, &as1), CXL_OK);
		CHECK(as1.live == as0.live && as1.procs_live == 2);
		CHECK(as1.heap_free == as0.heap_free);
		cxl_pool_detach(h3);
	}
	/* gc --dead-host: a host declared dead loses its processes */
	a = attach(tp, 5, "jobA");
	CHECK_RC(cxl_obj_create(a, "x", 64, 0, &o), CXL_OK);
	CHECK_RC(cxl_arena_gc(g, 0, &np, &no), CXL_EINVAL); /* own host */
	CHECK_RC(cxl_arena_gc(g, 999, &np, &no), CXL_EINVAL);
	CHECK_RC(cxl_arena_gc(g, 5, &np, &no), CXL_OK);
	CHECK(np == 1 && no == 1);
	CHECK_RC(cxl_obj_close(&o), CXL_ESTALE);
	cxl_pool_detach(a);
	CHECK_RC(cxl_arena_stat(g, &as1), CXL_OK);
	CHECK(as1.live == as0.live && as1.heap_free == as0.heap_free);
	cxl_pool_detach(g);
}

static void count_problem(const char *problem, void *arg)
{
	(void)problem;
	++*(uint64_t *)arg;
}

/* The check finds a free-list head or an object free list that points
 * into the wrong place, without following it anywhere harmful. */
static void test_check_links(const struct tpool *tp)
{
	cxl_pool *p = attach(tp, 0, NULL);
	struct arena_ctl *c = pool_ctl(p);
	uint64_t problems = 0, saved_head, saved_free;
	struct cxl_obj o;
	int order = -1;

	REQUIRE(cxl_obj_create(p, "links", 4096, 0, &o) == CXL_OK);
	cxl_inval(p, c, sizeof(*c));
	for (int k = 0; k <= (int)BUDDY_MAX_ORDER && order < 0; k++)
		if (c->free_head[k])
			order = k;
	REQUIRE(order >= 0);
	saved_head = c->free_head[order];
	saved_free = c->obj_free;
	/* a head into the middle of the live object, and one past the heap */
	for (int k = 0; k < 2; k++) {
		c->free_head[order] = k ? p->hdr.heap_size * 2 + 1 : o.off + 65;
		cxl_flush(p, c, sizeof(*c));
		CHECK_RC(cxl_arena_check(p, NULL, NULL, &problems), CXL_OK);
		CHECK(problems >= 1);
	}
	c->free_head[order] = saved_head;
	/* an object free list that names a live entry */
	c->obj_free = 1;
	cxl_flush(p, c, sizeof(*c));
	CHECK_RC(cxl_arena_check(p, NULL, NULL, &problems), CXL_OK);
	CHECK(problems >= 1);
	c->obj_free = saved_free;
	cxl_flush(p, c, sizeof(*c));
	cxl_wfence(p);
	CHECK_RC(cxl_arena_check(p, NULL, NULL, &problems), CXL_OK);
	CHECK(problems == 0);
	cxl_obj_close(&o);
	cxl_obj_destroy(p, "links");
	cxl_pool_detach(p);
}

/* Repair rebuilds a wrecked index and free lists from the object table. */
static void test_repair(const struct tpool *tp)
{
	uint64_t reported = 0;
	cxl_pool *p = attach(tp, 0, NULL);
	struct cxl_obj o[8];
	struct cxl_arena_stat as0, as1;
	uint64_t problems = 99;
	char name[16];

	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		REQUIRE(cxl_obj_create(p, name, 1000 * (uint64_t)(i + 1), 0,
				       &o[i]) == CXL_OK);
		memset(o[i].ptr, i, o[i].size);
		cxl_flush(p, o[i].ptr, o[i].size);
	}
	cxl_obj_destroy(p, "r3");
	CHECK_RC(cxl_arena_stat(p, &as0), CXL_OK);
	CHECK_RC(cxl_arena_check(p, count_problem, &reported, &problems),
		 CXL_OK);
	CHECK(problems == 0 && reported == 0);
	CHECK_RC(cxl_arena_repair(p, &problems), CXL_OK);
	CHECK(problems == 0);
	CHECK_RC(cxl_arena_stat(p, &as1), CXL_OK);
	CHECK(as1.live == as0.live && as1.unlinked == as0.unlinked &&
	      as1.heap_free == as0.heap_free);

	/* wreck the derived metadata: hash index and order map zeroed */
	{
		struct cxl_pool *ip = p;
		uint64_t hlen = ip->hdr.obj_off - ip->hdr.hash_off;

		memset(ip->base + ip->hdr.hash_off, 0, hlen);
		memset(ip->base + ip->hdr.ordermap_off, 0,
		       ip->hdr.heap_size / 64);
		cxl_flush(ip, ip->base + ip->hdr.hash_off, hlen);
		cxl_flush(ip, ip->base + ip->hdr.ordermap_off,
			  ip->hdr.heap_size / 64);
	}
	{
		struct cxl_obj x;

		CHECK_RC(cxl_obj_open(p, "r1", &x), CXL_ENOENT);
	}
	/* the check finds it, says so per problem, and writes nothing:
	 * a second check finds the same, and the object is still lost */
	CHECK_RC(cxl_arena_check(p, count_problem, &reported, &problems),
		 CXL_OK);
	CHECK(problems >= 7 && reported == problems);
	{
		uint64_t again = 0;
		struct cxl_obj x;

		CHECK_RC(cxl_arena_check(p, NULL, NULL, &again), CXL_OK);
		CHECK(again == problems);
		CHECK_RC(cxl_obj_open(p, "r1", &x), CXL_ENOENT);
	}
	CHECK_RC(cxl_arena_repair(p, &problems), CXL_OK);
	CHECK_RC(cxl_arena_check(p, NULL, NULL, &problems), CXL_OK);
	CHECK(problems == 0);
	CHECK_RC(cxl_arena_stat(p, &as1), CXL_OK);
	CHECK(as1.live == as0.live && as1.heap_free == as0.heap_free);
	for (int i = 0; i < 8; i++) {
		struct cxl_obj x;

		snprintf(name, sizeof(name), "r%d", i);
		if (i == 3) {
			CHECK_RC(cxl_obj_open(p, name, &x), CXL_ENOENT);
			continue;
		}
		CHECK_RC(cxl_obj_open(p, name, &x), CXL_OK);
		CHECK(x.off == o[i].off);
		cxl_inval(p, x.ptr, x.size);
		CHECK(((uint8_t *)x.ptr)[x.size - 1] == (uint8_t)i);
		cxl_obj_close(&x);
	}
	/* a new allocation does not land on a live object */
	{
		struct cxl_obj x;

		CHECK_RC(cxl_obj_create(p, "new", 5000, 0, &x), CXL_OK);
		for (int i = 0; i < 8; i++)
			CHECK(i == 3 || x.off + 5000 <= o[i].off ||
			      o[i].off + o[i].size <= x.off);
		cxl_obj_close(&x);
		cxl_obj_destroy(p, "new");
	}
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		cxl_obj_close(&o[i]);
		cxl_obj_destroy(p, name);
	}
	cxl_pool_detach(p);
}

/* A process killed while holding the arena lock: the next process of its
 * host takes over and repairs; no other host hangs. */
static void test_die_in_lock(const struct tpool *tp)
{
	cxl_pool *p = attach(tp, 0, NULL), *q;
	struct cxl_obj o;
	pid_t pid;
	int st, fds[2];
	char c;

	REQUIRE(pipe(fds) == 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		cxl_pool *cp = attach(tp, 1, NULL);

		if (cxl_arena_lock(cp))
			_exit(1);
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		pause(); /* killed holding the lock */
		_exit(1);
	}
	REQUIRE(read(fds[0], &c, 1) == 1);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	close(fds[0]);
	close(fds[1]);
	/* host 1 still holds a bakery ticket: host 0 must not get the lock,
	 * and must give up in bounded time, naming host 1 */
	{
		struct cxl_pool_opts o2;
		cxl_pool *fast;

		topts(&o2, tp, mode, 2, 0);
		o2.lock_timeout_ms = 300;
		CHECK_RC(cxl_pool_attach(&o2, &fast), CXL_ETIMEDOUT);
		CHECK(strstr(cxl_errmsg(), "host 1") != NULL);
	}
	/* the next process of host 1 takes the dead one's turn and repairs */
	q = attach(tp, 1, NULL);
	CHECK_RC(cxl_obj_create(p, "after-crash", 64, 0, &o), CXL_OK);
	cxl_obj_close(&o);
	cxl_obj_destroy(p, "after-crash");
	cxl_pool_detach(q);
	cxl_pool_detach(p);
}

int main(int argc, char **argv)
{
	struct tpool tp;

	mode = targ_mode(argc, argv);
	tpool_init(&tp, "arena");
	test_lifecycle(&tp);
	test_align_and_big(&tp);
	test_full_and_reuse(&tp);
	test_meta_full(&tp);
	test_jobs(&tp);
	test_check_links(&tp);
	test_repair(&tp);
	test_die_in_lock(&tp);
	tpool_cleanup(&tp);
	return t_report("test_arena");
}
