/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Automatic host ids (hostid.c): processes that attach without CXL_HOST_ID
 * get one id per host from the pool.
 *
 *  - many processes of several emulated hosts (CXL_HOST_KEY) attaching at
 *    once: one id per host, distinct across hosts, for several rounds;
 *  - hosts as UTS namespaces with their own host names (as cxlrun makes
 *    them), no key given: one id per namespace (needs CAP_SYS_ADMIN);
 *  - a host declared dead gets its slot back, a new host takes another;
 *  - the same host after a reboot finds its slot, and its old boot's
 *    processes are dropped;
 *  - a full host table, and a claim with no owner, are reported and
 *    'gc --dead-host' frees the latter;
 *  - the splitter itself, hammered by threads: never two winners.
 */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"

#define HOSTS 6
#define PER_HOST 4

struct shared {
	volatile int go;
	volatile int ready;
	volatile int id[HOSTS * PER_HOST];
	volatile int rc[HOSTS * PER_HOST];
};

static struct cxl_pool_opts base;
static struct shared *sh;
static int use_uts; /* hosts as UTS namespaces instead of keys */

static int attach_child(int i, void *arg)
{
	struct cxl_pool_opts o = base;
	int host = i / PER_HOST;
	cxl_pool *p;

	(void)arg;
	if (use_uts) {
		char name[32];

		snprintf(name, sizeof(name), "hostid-ns-%d", host);
		/* each process makes its own namespace, with its host's name:
		 * same machine id and name, same identity */
		if (unshare(CLONE_NEWUTS) != 0 ||
		    sethostname(name, strlen(name)) != 0)
			return 77;
	} else {
		snprintf(o.host_key, sizeof(o.host_key), "emulated-host-%d",
			 host);
	}
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (!sh->go)
		;
	sh->rc[i] = cxl_pool_attach(&o, &p);
	if (sh->rc[i] != CXL_OK) {
		fprintf(stderr, "child %d: %s\n", i, cxl_errmsg());
		__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
		return 1;
	}
	sh->id[i] = (int)cxl_pool_host_id(p);
	/* stay attached until every process has its id */
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (sh->ready < 2 * HOSTS * PER_HOST)
		usleep(1000);
	return cxl_pool_detach(p) == CXL_OK ? 0 : 1;
}

static void start_children(int n, pid_t *pids)
{
	for (int i = 0; i < n; i++) {
		fflush(NULL);
		pids[i] = fork();
		REQUIRE(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(attach_child(i, NULL));
	}
}

/* Returns false if the children could not make namespaces. */
static bool concurrent_round(int round)
{
	const int n = HOSTS * PER_HOST;
	pid_t pids[HOSTS * PER_HOST];
	int skipped = 0, failed = 0;

	memset((void *)sh, 0, sizeof(*sh));
	start_children(n, pids);
	while (sh->ready < n) {
		int st;
		/* a child that gave up (no namespaces) never gets ready */
		pid_t w = waitpid(-1, &st, WNOHANG);

		if (w > 0) {
			skipped += WIFEXITED(st) && WEXITSTATUS(st) == 77;
			failed++;
			break;
		}
		usleep(1000);
	}
	sh->go = 1;
	for (int i = 0; i < n; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) < 0)
			continue;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
			skipped++;
		else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	if (skipped)
		return false;
	CHECK(failed == 0);
	for (int h = 0; h < HOSTS; h++) {
		int id = sh->id[h * PER_HOST];

		for (int k = 1; k < PER_HOST; k++)
			CHECK(sh->id[h * PER_HOST + k] == id);
		for (int g = 0; g < h; g++)
			CHECK(sh->id[g * PER_HOST] != id);
		CHECK(id >= 0 && id < (int)base.max_hosts);
	}
	if (failed)
		fprintf(stderr, "round %d: %d children failed\n", round,
			failed);
	return true;
}

struct host_count {
	int state, n;
};

static int host_visit(const struct cxl_host_stat *st, void *arg)
{
	struct host_count *x = arg;

	x->n += !x->state || (int)st->state == x->state;
	return 0;
}

/* Slots not free (state 0), or in the given state. */
static int count_hosts(cxl_pool *p, int state)
{
	struct host_count v = { state, 0 };

	REQUIRE(cxl_host_list(p, host_visit, &v) == CXL_OK);
	return v.n;
}

static void test_concurrent(struct tpool *tp, enum cxl_coh_mode mode)
{
	cxl_pool *p;

	topts(&base, tp, mode, CXL_HOST_AUTO, 0);
	use_uts = 0;
	for (int r = 0; r < 3; r++)
		REQUIRE(concurrent_round(r));
	/* every host's last process freed its slot */
	base.host_key[0] = '\0';
	strcpy(base.host_key, "observer");
	REQUIRE(cxl_pool_attach(&base, &p) == CXL_OK);
	CHECK(count_hosts(p, 0) == 1);
	CHECK(count_hosts(p, CXL_HOST_INCOMPLETE) == 0);
	cxl_pool_detach(p);

	use_uts = 1;
	base.host_key[0] = '\0';
	if (!concurrent_round(0))
		printf("mp_hostid: UTS namespace round skipped (no "
		       "CAP_SYS_ADMIN)\n");
	use_uts = 0;
}

static cxl_pool *attach_key(const char *key)
{
	struct cxl_pool_opts o = base;
	cxl_pool *p;

	snprintf(o.host_key, sizeof(o.host_key), "%s", key);
	if (cxl_pool_attach(&o, &p) != CXL_OK) {
		fprintf(stderr, "attach %s: %s\n", key, cxl_errmsg());
		return NULL;
	}
	return p;
}

/* A process of host `key` attaches and dies without detaching. */
static void crash_attach(const char *key)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(attach_key(key) ? 0 : 1);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

struct proc_count {
	uint32_t host;
	int n;
};

static int proc_visit(const struct cxl_proc_stat *st, void *arg)
{
	struct proc_count *x = arg;

	x->n += st->host == x->host;
	return 0;
}

static int proc_count_host(cxl_pool *p, uint32_t host)
{
	struct proc_count v = { host, 0 };

	REQUIRE(cxl_proc_list(p, proc_visit, &v) == CXL_OK);
	return v.n;
}

/* Make host's process entries look alive to a pid check (ours). */
static void poke_alive(cxl_pool *p, uint32_t host)
{
	for (uint32_t i = 0; i < p->hdr.max_procs; i++) {
		struct proc_ent *e = pool_proc(p, i);

		cxl_inval(p, e, sizeof(*e));
		if (e->state != PROC_LIVE || e->host != host)
			continue;
		e->pid = (uint32_t)getpid();
		e->starttime = cxl_proc_starttime(getpid());
		cxl_flush(p, e, sizeof(*e));
	}
	cxl_wfence(p);
}

static void test_dead_and_reboot(struct tpool *tp, enum cxl_coh_mode mode)
{
	cxl_pool *a, *b, *c, *a2;
	uint32_t ida, idb;

	topts(&base, tp, mode, CXL_HOST_AUTO, 0);
	/* later processes of a host find its slot */
	REQUIRE((a = attach_key("A")) && (a2 = attach_key("A")));
	CHECK(cxl_pool_host_id(a) == cxl_pool_host_id(a2));
	ida = cxl_pool_host_id(a);
	cxl_pool_detach(a2);
	cxl_pool_detach(a);

	/* host A crashes; host B declares it dead */
	crash_attach("A");
	REQUIRE((b = attach_key("B")));
	idb = cxl_pool_host_id(b);
	CHECK(idb != ida);
	CHECK(proc_count_host(b, ida) == 1);
	CHECK_RC(cxl_arena_gc(b, (int)ida, NULL, NULL), CXL_OK);
	CHECK(proc_count_host(b, ida) == 0);
	/* a new host does not take A's old slot while others are free ... */
	REQUIRE((c = attach_key("C")));
	CHECK(cxl_pool_host_id(c) != ida && cxl_pool_host_id(c) != idb);
	/* ... and A, back, gets it again */
	REQUIRE((a = attach_key("A")));
	CHECK(cxl_pool_host_id(a) == ida);
	cxl_pool_detach(a);
	cxl_pool_detach(c);

	/* A crashes again, then "reboots": its slot keeps the old boot id
	 * and a process entry of that boot; poke another boot id in, and
	 * make the entry look alive, so that only the boot id can tell */
	crash_attach("A");
	poke_alive(b, ida);
	{
		struct host_ent *h = pool_host(b, ida);

		cxl_inval(b, h->boot_id, sizeof(h->boot_id));
		h->boot_id[0] ^= 0xff;
		cxl_flush(b, h->boot_id, sizeof(h->boot_id));
		cxl_wfence(b);
	}
	CHECK(proc_count_host(b, ida) == 1);
	REQUIRE((a = attach_key("A")));
	CHECK(cxl_pool_host_id(a) == ida);
	/* the old boot's process is gone; ours is there */
	CHECK(proc_count_host(b, ida) == 1);
	cxl_pool_detach(a);
	CHECK(proc_count_host(b, ida) == 0);
	cxl_pool_detach(b);
}

/*
 * A claim of host C that lost the splitter to a door closed by others
 * leaves that door closed, no owner, X = C, while C wins another slot.
 * C's next process must join the slot C owns, not the orphan claim.
 */
static void test_lost_claim_of_own_host(struct tpool *tp,
					enum cxl_coh_mode mode)
{
	cxl_pool *c = NULL, *c2;
	char key[16];
	uint32_t s, forged = 0;

	topts(&base, tp, mode, CXL_HOST_AUTO, 0);
	/* a key whose slot is not slot 0, so that an orphan precedes it */
	for (int i = 0; i < 64 && !c; i++) {
		snprintf(key, sizeof(key), "C%d", i);
		REQUIRE((c = attach_key(key)));
		if (cxl_pool_host_id(c) == 0) {
			cxl_pool_detach(c);
			c = NULL;
		}
	}
	REQUIRE(c);
	s = cxl_pool_host_id(c);
	for (uint32_t t = 0; t < s; t++) {
		struct host_ent *h = pool_host(c, t);

		if (cxl_nt_load64(c, &h->claim_y))
			continue;
		cxl_nt_store64(c, &h->claim_x, c->ident.key);
		cxl_nt_store64(c, &h->claim_y, 1);
		forged++;
	}
	cxl_wfence(c);
	CHECK(forged > 0);
	REQUIRE((c2 = attach_key(key)));
	CHECK(cxl_pool_host_id(c2) == s);
	cxl_pool_detach(c2);
	cxl_pool_detach(c);
}

static void test_full_and_incomplete(struct tpool *tp, enum cxl_coh_mode mode)
{
	cxl_pool *p[3];

	topts(&base, tp, mode, CXL_HOST_AUTO, 0);
	base.max_hosts = 2;
	REQUIRE((p[0] = attach_key("one")) && (p[1] = attach_key("two")));
	{
		struct cxl_pool_opts o = base;

		strcpy(o.host_key, "three");
		CHECK_RC(cxl_pool_attach(&o, &p[2]), CXL_EHOSTID);
		CHECK(strstr(cxl_errmsg(), "no free host slot") != NULL);
	}
	/* an explicit id that another host owns is refused */
	{
		struct cxl_pool_opts o = base;

		o.host_id = cxl_pool_host_id(p[1]);
		strcpy(o.host_key, "three");
		CHECK_RC(cxl_pool_attach(&o, &p[2]), CXL_EHOSTID);
		CHECK(strstr(cxl_errmsg(), "is in use by host") != NULL);
	}
	/* two's slot: a claim that both claimers lost (door closed, no
	 * owner) once two has gone */
	{
		uint32_t s = cxl_pool_host_id(p[1]);
		struct host_ent *h = pool_host(p[0], s);

		cxl_pool_detach(p[1]);
		cxl_nt_store64(p[0], &h->claim_x, 12345);
		cxl_nt_store64(p[0], &h->claim_y, 1);
		cxl_wfence(p[0]);
		CHECK(count_hosts(p[0], CXL_HOST_INCOMPLETE) == 1);
		CHECK(attach_key("three") == NULL);
		CHECK_RC(cxl_arena_gc(p[0], (int)s, NULL, NULL), CXL_OK);
		CHECK(count_hosts(p[0], CXL_HOST_INCOMPLETE) == 0);
		REQUIRE((p[2] = attach_key("three")));
		CHECK(cxl_pool_host_id(p[2]) == s);
		cxl_pool_detach(p[2]);
	}
	cxl_pool_detach(p[0]);
	base.max_hosts = 16;
}

#define SPLIT_THREADS 2
#define SPLIT_ROUNDS 5000

struct split_arg {
	cxl_pool *p;
	int me;
	_Atomic int *round; /* round the threads may run */
	_Atomic int *done;  /* threads finished with the current round */
	_Atomic int *winners;
};

static void *split_thread(void *v)
{
	struct split_arg *a = v;

	for (int r = 1; r <= SPLIT_ROUNDS; r++) {
		while (*a->round < r)
			;
		if (cxl_host_splitter(a->p, 15, (uint64_t)a->me + 1))
			*a->winners += 1;
		*a->done += 1;
	}
	return NULL;
}

/* Threads with distinct keys race through one splitter, round after
 * round: at most one winner each time; alone, a claimer always wins. */
static void test_splitter(struct tpool *tp, enum cxl_coh_mode mode)
{
	pthread_t t[SPLIT_THREADS];
	struct split_arg a[SPLIT_THREADS];
	_Atomic int round = 0, done = 0, winners = 0;
	int over = 0, none = 0;
	struct host_ent *h;
	cxl_pool *p;

	topts(&base, tp, mode, 0, 0);
	REQUIRE(cxl_pool_attach(&base, &p) == CXL_OK);
	h = pool_host(p, 15);
	CHECK(cxl_host_splitter(p, 15, 77));
	CHECK(!cxl_host_splitter(p, 15, 78)); /* door closed */
	for (int i = 0; i < SPLIT_THREADS; i++) {
		a[i] = (struct split_arg){ p, i, &round, &done, &winners };
		REQUIRE(pthread_create(&t[i], NULL, split_thread, &a[i]) == 0);
	}
	for (int r = 1; r <= SPLIT_ROUNDS; r++) {
		cxl_nt_store64(p, &h->claim_x, 0);
		cxl_nt_store64(p, &h->claim_y, 0);
		cxl_fence(p);
		done = 0;
		winners = 0;
		round = r;
		while (done < SPLIT_THREADS)
			sched_yield(); /* leave the cores to the racers */
		over += winners > 1;
		none += winners == 0;
	}
	for (int i = 0; i < SPLIT_THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(over == 0);
	printf("mp_hostid: splitter, %d rounds of %d threads: %d with two "
	       "winners, %d with none\n",
	       SPLIT_ROUNDS, SPLIT_THREADS, over, none);
	cxl_nt_store64(p, &h->claim_y, 0);
	cxl_pool_detach(p);
}

int main(int argc, char **argv)
{
	enum cxl_coh_mode mode = targ_mode(argc, argv);
	struct tpool tp;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(sh != MAP_FAILED);
	tpool_init(&tp, "hostid-c");
	test_concurrent(&tp, mode);
	tpool_cleanup(&tp);
	tpool_init(&tp, "hostid-d");
	test_dead_and_reboot(&tp, mode);
	tpool_cleanup(&tp);
	tpool_init(&tp, "hostid-s");
	test_splitter(&tp, mode);
	tpool_cleanup(&tp);
	tpool_init(&tp, "hostid-l");
	test_lost_claim_of_own_host(&tp, mode);
	tpool_cleanup(&tp);
	tpool_init(&tp, "hostid-f");
	test_full_and_incomplete(&tp, mode);
	tpool_cleanup(&tp);
	return t_report("mp_hostid");
}
