/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libcxlshm across hosts that are really separate: one process per host,
 * started by the caller on each host (cxlvm guests over one /dev/dax, or
 * emulated hosts), attached through CXL_POOL and the other CXL_* variables,
 * with its host id from the pool.
 *
 *   xhost --rank R --ranks N [--msgs M] [--rounds K]
 *
 * Every process runs the same checks, in lock step through a pool
 * barrier:
 *   1. hosts: the N processes got N distinct host ids;
 *   2. arena: each creates an object, fills it; all read all the others';
 *      then all race to create the same K names (exactly one wins each);
 *   3. rings: rank 2i sends M checksummed messages to rank 2i+1, and back;
 *   4. bakery: K increments each of a plain (non-atomic) pool counter
 *      under a reader-writer bakery lock; the total is N*K;
 *   5. barrier: K rounds; nobody leaves round k before all entered it.
 * Prints "xhost: rank R host H (NAME): N checks, B bad" and exits 1 on
 * any bad check or error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlshm/cxlshm.h"

#define TIMEOUT_MS 120000u
#define MAX_RANKS 64

static int rank, nranks, checks, bad;
static cxl_pool *pool;
static cxl_barrier *bar;

#define CHECK(c)                                                             \
	do {                                                                 \
		checks++;                                                    \
		if (!(c)) {                                                  \
			bad++;                                               \
			fprintf(stderr, "xhost: rank %d: %s:%d: %s\n", rank, \
				__FILE__, __LINE__, #c);                     \
		}                                                            \
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "xhost: rank %d: %s: %s\n", rank, what, cxl_errmsg());
	exit(1);
}

static void sync_all(void)
{
	if (cxl_barrier_wait(bar, TIMEOUT_MS))
		die("barrier");
}

static uint64_t pattern(int r, uint64_t i)
{
	return (uint64_t)r * 0x9e3779b97f4a7c15ull ^
	       (i * 0xff51afd7ed558ccdull);
}

/* Shared results: one line per rank. */
struct line {
	uint64_t v[8];
};

static struct line *results(struct cxl_obj *o)
{
	int rc = cxl_obj_create(pool, "xhost.results",
				sizeof(struct line) * MAX_RANKS, 0, o);

	if (rc == CXL_EEXIST)
		rc = cxl_obj_open(pool, "xhost.results", o);
	if (rc)
		die("results object");
	return o->ptr;
}

static void publish(struct line *l, uint64_t v0, uint64_t v1)
{
	l[rank].v[0] = v0;
	l[rank].v[1] = v1;
	cxl_flush(pool, &l[rank], sizeof(*l)); /* write back our line */
	cxl_wfence(pool);
}

static const struct line *peer_line(struct line *l, int r)
{
	cxl_inval(pool, &l[r], sizeof(*l)); /* fresh copy of its line */
	return &l[r];
}

static void test_hosts(struct line *l)
{
	publish(l, cxl_pool_host_id(pool) + 1, 0);
	sync_all();
	for (int r = 0; r < nranks; r++)
		for (int s = 0; s < r; s++)
			CHECK(peer_line(l, r)->v[0] != peer_line(l, s)->v[0]);
	sync_all();
}

static void test_arena(struct line *l, int rounds)
{
	const uint64_t n = 256u << 10; /* words: 2 MiB */
	struct cxl_obj mine, other;
	char name[64];
	int wins = 0;

	snprintf(name, sizeof(name), "xhost.obj%d", rank);
	if (cxl_obj_create(pool, name, n * 8, CXL_OBJ_ALIGN_2M, &mine))
		die("create own object");
	for (uint64_t i = 0; i < n; i++)
		((uint64_t *)mine.ptr)[i] = pattern(rank, i);
	cxl_flush(pool, mine.ptr, n * 8); /* publish before the barrier */
	cxl_wfence(pool);
	sync_all();
	for (int r = 0; r < nranks; r++) {
		uint64_t wrong = 0;

		if (r == rank)
			continue;
		snprintf(name, sizeof(name), "xhost.obj%d", r);
		if (cxl_obj_open(pool, name, &other))
			die("open a peer's object");
		cxl_inval(pool, other.ptr, n * 8);
		for (uint64_t i = 0; i < n; i++)
			wrong += ((uint64_t *)other.ptr)[i] != pattern(r, i);
		CHECK(other.size == n * 8 && wrong == 0);
		cxl_obj_close(&other);
	}
	sync_all();
	/* everybody races for the same names: one creator each */
	for (int k = 0; k < rounds; k++) {
		struct cxl_obj o;
		int rc;

		snprintf(name, sizeof(name), "xhost.race%d", k);
		rc = cxl_obj_create(pool, name, 4096, 0, &o);
		CHECK(rc == CXL_OK || rc == CXL_EEXIST);
		if (rc == CXL_OK) {
			wins++;
			cxl_obj_close(&o);
		}
	}
	publish(l, (uint64_t)wins, 0);
	sync_all();
	{
		uint64_t total = 0;

		for (int r = 0; r < nranks; r++)
			total += peer_line(l, r)->v[0];
		CHECK(total == (uint64_t)rounds);
	}
	sync_all();
	if (rank == 0)
		for (int k = 0; k < rounds; k++) {
			snprintf(name, sizeof(name), "xhost.race%d", k);
			CHECK(cxl_obj_destroy(pool, name) == CXL_OK);
		}
	cxl_obj_close(&mine);
	snprintf(name, sizeof(name), "xhost.obj%d", rank);
	sync_all();
	CHECK(cxl_obj_destroy(pool, name) == CXL_OK);
}

static size_t msg_len(uint64_t k, size_t max)
{
	return (size_t)((k * 2654435761u) % (max + 1));
}

static void msg_fill(uint8_t *b, uint64_t k, size_t len)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(pattern((int)(k & 0xff), i) >> 7);
}

/* Send M messages from `from` to `to` over a fresh named ring. */
static void ring_dir(int from, int to, long msgs)
{
	struct cxl_ring_attr attr = { .cell_size = 512, .ncells = 64 };
	uint8_t buf[512], want[512];
	char name[64];
	cxl_ring *r;

	snprintf(name, sizeof(name), "xhost.ring%d.%d", from, to);
	if (rank == to &&
	    cxl_ring_create(pool, name, &attr, CXL_RING_CONSUMER, &r))
		die("create ring");
	sync_all();
	if (rank == from && cxl_ring_open(pool, name, CXL_RING_PRODUCER, &r))
		die("open ring");
	if (rank == from) {
		size_t max = cxl_ring_max_msg(r);

		for (long k = 0; k < msgs; k++) {
			size_t len = msg_len((uint64_t)k, max);
			struct cxl_backoff b;

			msg_fill(buf, (uint64_t)k, len);
			cxl_backoff_init(&b, TIMEOUT_MS);
			while (cxl_ring_send(r, buf, len, (uint32_t)k, 0) ==
			       CXL_EAGAIN)
				if (cxl_backoff_wait(&b))
					die("ring send: consumer stalled");
		}
	} else if (rank == to) {
		size_t max = cxl_ring_max_msg(r);
		long wrong = 0;

		for (long k = 0; k < msgs; k++) {
			struct cxl_backoff b;
			size_t len;
			uint32_t tag;
			int rc;

			cxl_backoff_init(&b, TIMEOUT_MS);
			while ((rc = cxl_ring_recv(r, buf, sizeof(buf), &len,
						   &tag)) == CXL_EAGAIN)
				if (cxl_backoff_wait(&b))
					die("ring recv: producer stalled");
			msg_fill(want, (uint64_t)k, msg_len((uint64_t)k, max));
			wrong += rc != CXL_OK || tag != (uint32_t)k ||
				 len != msg_len((uint64_t)k, max) ||
				 memcmp(buf, want, len);
		}
		CHECK(wrong == 0);
	}
	sync_all();
	if (rank == from || rank == to)
		cxl_ring_close(r);
	if (rank == to)
		cxl_obj_destroy(pool, name);
}

static void test_rings(long msgs)
{
	for (int lo = 0; lo + 1 < nranks; lo += 2) {
		ring_dir(lo, lo + 1, msgs);
		ring_dir(lo + 1, lo, msgs);
	}
}

static void test_bakery(int rounds)
{
	struct cxl_obj o;
	struct cxl_bakery b;
	uint64_t *counter;
	int rc = cxl_obj_create(pool, "xhost.bakery", 64 * (MAX_RANKS + 1), 0,
				&o);

	if (rc == CXL_EEXIST)
		rc = cxl_obj_open(pool, "xhost.bakery", &o);
	if (rc)
		die("bakery object");
	/* line 0: the counter; line 1 + j: participant j's lock word */
	counter = o.ptr;
	b = (struct cxl_bakery){ .pool = pool,
				 .words = (uint64_t *)o.ptr + 8,
				 .stride = 8,
				 .n = (uint32_t)nranks,
				 .me = (uint32_t)rank };
	sync_all();
	for (int k = 0; k < rounds; k++) {
		if (cxl_bakery_lock(&b, 1, TIMEOUT_MS))
			die("bakery lock");
		cxl_inval(pool, counter, 8); /* the last holder's value */
		*counter += 1;
		cxl_flush(pool, counter, 8); /* before the unlock's fence */
		cxl_bakery_unlock(&b);
	}
	sync_all();
	cxl_inval(pool, counter, 8);
	CHECK(*counter == (uint64_t)nranks * (uint64_t)rounds);
	sync_all();
	cxl_obj_close(&o);
	if (rank == 0)
		cxl_obj_destroy(pool, "xhost.bakery");
}

static void test_barrier(struct line *l, int rounds)
{
	uint64_t early = 0;

	for (int k = 1; k <= rounds; k++) {
		publish(l, (uint64_t)k, 0);
		sync_all();
		for (int r = 0; r < nranks; r++)
			early += peer_line(l, r)->v[0] < (uint64_t)k;
	}
	CHECK(early == 0);
	sync_all();
}

static long arg(int argc, char **argv, const char *flag, long def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], flag))
			return strtol(argv[i + 1], NULL, 10);
	return def;
}

int main(int argc, char **argv)
{
	struct cxl_obj ro;
	struct line *l;
	long msgs;
	int rounds;

	rank = (int)arg(argc, argv, "--rank", -1);
	nranks = (int)arg(argc, argv, "--ranks", 0);
	msgs = arg(argc, argv, "--msgs", 20000);
	rounds = (int)arg(argc, argv, "--rounds", 200);
	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks ||
	    msgs < 1 || rounds < 1) {
		fprintf(stderr, "usage: xhost --rank R --ranks N [--msgs M] "
				"[--rounds K] (1 <= N <= 64, 0 <= R < N)\n");
		return 2;
	}
	if (cxl_pool_attach_env(&pool))
		die("attach (CXL_POOL)");
	if (cxl_barrier_open(pool, "xhost.barrier", (uint32_t)nranks,
			     (uint32_t)rank, &bar))
		die("barrier");
	sync_all();
	l = results(&ro);
	sync_all();
	test_hosts(l);
	test_arena(l, rounds);
	test_rings(msgs);
	test_bakery(rounds);
	test_barrier(l, rounds);
	{
		struct cxl_pool_info pi;
		char host[64] = "";

		gethostname(host, sizeof(host) - 1);
		cxl_pool_info(pool, &pi);
		printf("xhost: rank %d host %u (%s) mode %s: %d checks, %d "
		       "bad\n",
		       rank, cxl_pool_host_id(pool), host,
		       cxl_coh_mode_name(cxl_pool_mode(pool)), checks, bad);
	}
	cxl_obj_close(&ro);
	sync_all();
	cxl_barrier_close(bar);
	if (rank == 0) {
		cxl_obj_destroy(pool, "xhost.results");
		cxl_obj_destroy(pool, "xhost.barrier");
	}
	cxl_pool_detach(pool);
	return bad ? 1 : 0;
}
