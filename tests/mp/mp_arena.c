/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Concurrent arena create/open/destroy from many processes on several
 * emulated hosts (distinct CXL host ids), with no cross-host atomics.
 *
 * Each process creates its own objects (filled with a pattern), verifies
 * and destroys some of them, and fights over a small set of shared names.
 * Afterwards the parent checks that no object was lost or duplicated, that
 * every survivor still holds its pattern, that no two live objects
 * overlap, and that the metadata is consistent (repair finds nothing).
 *
 *   mp_arena --mode coherent|emulated [--procs 8] [--hosts 4] [--ops 10000]
 */
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define NSHARED 16

static enum cxl_coh_mode mode;
static struct tpool tp;
static int nprocs, nhosts, nops;

struct result {
	int64_t shared_net[NSHARED]; /* successful creates - destroys */
	uint32_t nsurv;
	uint32_t surv[]; /* ids k of surviving own objects */
};
/* sizeof(struct result) has tail padding past surv[0]: use the offset */
#define SURV_OFF offsetof(struct result, surv)

/* Room for every survivor: ~nprocs * nops / 4 objects of ~4 KiB. */
static void arena_opts(struct cxl_pool_opts *o, uint32_t host)
{
	topts(o, &tp, mode, host, 256u << 20);
	o->capacity = 65536;
}

static uint64_t pattern(int i, uint32_t k, uint64_t word)
{
	return ((uint64_t)i << 48) ^ ((uint64_t)k << 16) ^ word;
}

static uint64_t obj_size(int i, uint32_t k)
{
	uint64_t s = (uint64_t)i * 7919 + k * 104729;

	return 64 + s % 8000;
}

static void fill(cxl_pool *p, struct cxl_obj *o, int i, uint32_t k)
{
	uint64_t *w = o->ptr;

	for (uint64_t j = 0; j < o->size / 8; j++)
		w[j] = pattern(i, k, j);
	cxl_flush(p, o->ptr, o->size);
	cxl_wfence(p);
}

static bool verify(cxl_pool *p, struct cxl_obj *o, int i, uint32_t k)
{
	const uint64_t *w = o->ptr;

	if (o->size != obj_size(i, k))
		return false;
	cxl_inval(p, o->ptr, o->size);
	for (uint64_t j = 0; j < o->size / 8; j++)
		if (w[j] != pattern(i, k, j))
			return false;
	return true;
}

static int worker(int i, void *arg)
{
	struct cxl_pool_opts o;
	struct result *r;
	uint32_t *live, nlive = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
	cxl_pool *p;
	char name[32], path[200];
	int fd, rc, errors = 0;

	(void)arg;
	arena_opts(&o, (uint32_t)(i % nhosts));
	if (cxl_pool_attach(&o, &p)) {
		fprintf(stderr, "worker %d attach: %s\n", i, cxl_errmsg());
		return 1;
	}
	r = calloc(1, sizeof(*r) + sizeof(uint32_t) * (size_t)nops);
	live = calloc((size_t)nops, sizeof(uint32_t));
	REQUIRE(r && live);
	for (uint32_t k = 0; k < (uint32_t)nops; k++) {
		uint64_t dice = t_rand(&rng) % 100;
		struct cxl_obj ob;

		if (dice < 50 || nlive == 0) { /* create own */
			snprintf(name, sizeof(name), "p%d-%u", i, k);
			rc = cxl_obj_create(p, name, obj_size(i, k), 0, &ob);
			if (rc) {
				fprintf(stderr, "create %s: %s\n", name,
					cxl_errmsg());
				errors++;
				continue;
			}
			fill(p, &ob, i, k);
			cxl_obj_close(&ob);
			live[nlive++] = k;
		} else if (dice < 75) { /* verify + destroy own */
			uint32_t slot = (uint32_t)(t_rand(&rng) % nlive);
			uint32_t kk = live[slot];

			snprintf(name, sizeof(name), "p%d-%u", i, kk);
			if (cxl_obj_open(p, name, &ob) ||
			    !verify(p, &ob, i, kk)) {
				fprintf(stderr, "object %s lost or damaged\n",
					name);
				errors++;
				continue;
			}
			cxl_obj_close(&ob);
			if (cxl_obj_destroy(p, name)) {
				errors++;
				continue;
			}
			live[slot] = live[--nlive];
		} else { /* contend for a shared name */
			int s = (int)(t_rand(&rng) % NSHARED);

			snprintf(name, sizeof(name), "shared%d", s);
			if (dice < 88) {
				rc = cxl_obj_create(p, name, 128, 0, &ob);
				if (rc == CXL_OK) {
					r->shared_net[s]++;
					cxl_obj_close(&ob);
				} else if (rc != CXL_EEXIST) {
					errors++;
				}
			} else {
				rc = cxl_obj_destroy(p, name);
				if (rc == CXL_OK)
					r->shared_net[s]--;
				else if (rc != CXL_ENOENT)
					errors++;
			}
		}
	}
	r->nsurv = nlive;
	memcpy(r->surv, live, nlive * sizeof(uint32_t));
	snprintf(path, sizeof(path), "%s/result-%d", tp.dir, i);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, r, SURV_OFF + nlive * sizeof(uint32_t)) ==
		(ssize_t)(SURV_OFF + nlive * sizeof(uint32_t)));
	close(fd);
	cxl_pool_detach(p);
	return errors != 0;
}

struct ext {
	uint64_t off, len;
};

static struct ext *exts;
static size_t nexts, nobjs_seen;

static int collect(const struct cxl_obj_stat *st, void *arg)
{
	(void)arg;
	exts[nexts++] = (struct ext){ st->off, st->alloc_size };
	nobjs_seen++;
	return 0;
}

static int cmp_ext(const void *a, const void *b)
{
	const struct ext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

int main(int argc, char **argv)
{
	struct cxl_pool_opts o;
	struct cxl_arena_stat as;
	int64_t net[NSHARED] = { 0 };
	uint64_t expected = 0, problems = 1;
	cxl_pool *p;
	uint64_t t0;

	mode = targ_mode(argc, argv);
	nprocs = (int)targ_long(argc, argv, "--procs", 8);
	nhosts = (int)targ_long(argc, argv, "--hosts", 4);
	nops = (int)targ_long(argc, argv, "--ops", 10000);
	tpool_init(&tp, "mparena");
	arena_opts(&o, 0);
	/* format up front so the workers time only the operations */
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	cxl_pool_detach(p);

	t0 = cxl_now_ns();
	CHECK(run_children(nprocs, worker, NULL) == 0);
	printf("%d processes on %d hosts x %d operations (%s): %.2f s\n",
	       nprocs, nhosts, nops, cxl_coh_mode_name(mode),
	       (double)(cxl_now_ns() - t0) / 1e9);

	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	for (int i = 0; i < nprocs; i++) {
		char path[200], name[32];
		struct result hdr, *r;
		int fd;

		snprintf(path, sizeof(path), "%s/result-%d", tp.dir, i);
		fd = open(path, O_RDONLY);
		REQUIRE(fd >= 0);
		REQUIRE(read(fd, &hdr, SURV_OFF) == SURV_OFF);
		r = malloc(sizeof(hdr) + hdr.nsurv * sizeof(uint32_t));
		REQUIRE(r);
		memcpy(r, &hdr, SURV_OFF);
		REQUIRE(read(fd, r->surv, hdr.nsurv * sizeof(uint32_t)) ==
			(ssize_t)(hdr.nsurv * sizeof(uint32_t)));
		close(fd);
		for (int s = 0; s < NSHARED; s++)
			net[s] += r->shared_net[s];
		/* every survivor is there and intact */
		for (uint32_t j = 0; j < r->nsurv; j++) {
			struct cxl_obj ob;
			uint32_t k = r->surv[j];
			const uint64_t *w;
			bool ok = true;

			snprintf(name, sizeof(name), "p%d-%u", i, k);
			if (cxl_obj_open(p, name, &ob)) {
				CHECK(!"survivor missing");
				continue;
			}
			w = ob.ptr;
			cxl_inval(p, ob.ptr, ob.size);
			for (uint64_t x = 0; x < ob.size / 8; x++)
				ok &= w[x] == pattern(i, k, x);
			CHECK(ok && ob.size == obj_size(i, k));
			cxl_obj_close(&ob);
		}
		expected += r->nsurv;
		free(r);
	}
	/* shared names: exists iff net creates - destroys is 1 */
	for (int s = 0; s < NSHARED; s++) {
		struct cxl_obj_stat st;
		char name[32];
		int rc;

		snprintf(name, sizeof(name), "shared%d", s);
		rc = cxl_obj_stat(p, name, &st);
		CHECK(net[s] == 0 || net[s] == 1);
		CHECK((rc == CXL_OK) == (net[s] == 1));
		expected += rc == CXL_OK;
	}
	/* nothing lost, nothing duplicated, nothing overlapping */
	REQUIRE(cxl_arena_stat(p, &as) == CXL_OK);
	exts = calloc(as.capacity, sizeof(*exts));
	REQUIRE(exts);
	CHECK_RC(cxl_obj_list(p, collect, NULL), CXL_OK);
	CHECK(nobjs_seen == expected);
	CHECK(as.live == expected && as.unlinked == 0);
	qsort(exts, nexts, sizeof(*exts), cmp_ext);
	for (size_t i = 1; i < nexts; i++)
		CHECK(exts[i - 1].off + exts[i - 1].len <= exts[i].off);
	/* every derived structure agrees with the table after the race */
	CHECK_RC(cxl_arena_check(p, NULL, NULL, &problems), CXL_OK);
	CHECK(problems == 0);
	CHECK_RC(cxl_arena_repair(p, &problems), CXL_OK);
	CHECK(problems == 0);
	printf("%llu live objects verified, %zu extents disjoint\n",
	       (unsigned long long)expected, nexts);
	cxl_pool_detach(p);
	tpool_cleanup(&tp);
	return t_report("mp_arena");
}
