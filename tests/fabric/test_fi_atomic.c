/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FI_ATOMIC through the libfabric API (atomic.c), rank 0 the origin and
 * rank 1 the target:
 *  - which datatypes and operations are valid, with their counts, through
 *    the endpoint and fi_query_atomic;
 *  - the result of every operation kind, against values computed here:
 *    wrapping integer arithmetic, min/max, logical and bitwise operations,
 *    read, write, every compare-and-swap variant and the masked swap, on
 *    an unaligned target too;
 *  - atomicity: the origin and the target itself add 1 to the same words
 *    (in private memory and in a region in the pool) at the same time;
 *    every fetched value is seen once, and the totals are exact;
 *  - ordering: an atomic not yet completed, then a read of the same pool
 *    region (which would otherwise be direct), sees the atomic applied;
 *  - fi_inject_atomic, completions flags and counters, and refused atomics
 *    (unknown key, read-only region, out of bounds, bad counts).
 */
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>

#include "fitest.h"

static enum cxl_coh_mode mode;
static struct tpool tp;
static int p01[2], p10[2], keys[2], go[2], done[2];
static struct fid_cntr *cntrs[2];
static int ncntrs;

#define REGION 4096
#define KEY_RW 0x6161
#define KEY_RO 0x6262
#define KEY_POOL 0x6363
#define ADDS 2000
#define OFF_ADD 1024 /* the word both ranks add to, in both regions */

/* One completion for ctx: its error (0: success) and flags. */
static int one(struct fi *f, void *ctx, uint64_t *flags)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int rc = fi_wait_cq(f, &e, &err, NULL, 20);

	CHECK((rc ? err.op_context : e.op_context) == ctx);
	if (flags)
		*flags = rc ? err.flags : e.flags;
	return rc;
}

static void put(struct fi *f, const void *v, size_t n, uint64_t off)
{
	int ctx;

	TRY(fi_write(f->ep, v, n, NULL, f->peer, off, KEY_RW, &ctx));
	CHECK(one(f, &ctx, NULL) == 0);
}

static void get(struct fi *f, void *v, size_t n, uint64_t off)
{
	int ctx;

	TRY(fi_read(f->ep, v, n, NULL, f->peer, off, KEY_RW, &ctx));
	CHECK(one(f, &ctx, NULL) == 0);
}

/*
 * One case: the target starts as init, gets op with operand (and compare
 * for the compare kinds); it must then hold want, and the fetched values
 * must be init. n elements of size sz at offset off.
 */
static void kase(struct fi *f, const char *what, enum fi_datatype dt,
		 enum fi_op op, size_t n, size_t sz, uint64_t off,
		 const void *init, const void *operand, const void *compare,
		 const void *want)
{
	uint8_t got[64], now[64];
	uint64_t fl;
	int ctx;

	fi_phase = what;
	put(f, init, n * sz, off);
	memset(got, 0xee, sizeof(got));
	if (compare)
		TRY(fi_compare_atomic(f->ep, operand, n, NULL, compare, NULL,
				      got, NULL, f->peer, off, KEY_RW, dt, op,
				      &ctx));
	else
		TRY(fi_fetch_atomic(f->ep, operand, n, NULL, got, NULL, f->peer,
				    off, KEY_RW, dt, op, &ctx));
	CHECK(one(f, &ctx, &fl) == 0);
	CHECK(fl == (FI_ATOMIC | FI_READ));
	get(f, now, n * sz, off);
	if (memcmp(got, init, n * sz) || memcmp(now, want, n * sz)) {
		fprintf(stderr, "case %s: wrong\n", what);
		CHECK(0);
	} else {
		CHECK(1);
	}
}

static void semantics(struct fi *f)
{
	{
		int32_t a[4] = { 1, 2, 3, -4 }, b[4] = { 10, 20, 30, 40 };
		int32_t w[4] = { 11, 22, 33, 36 };

		kase(f, "int32 sum", FI_INT32, FI_SUM, 4, 4, 0, a, b, NULL, w);
		kase(f, "int32 sum, unaligned", FI_INT32, FI_SUM, 4, 4, 3, a, b,
		     NULL, w);
	}
	{
		int8_t a = 127, b = 1, w = -128;

		kase(f, "int8 sum wraps", FI_INT8, FI_SUM, 1, 1, 8, &a, &b,
		     NULL, &w);
	}
	{
		uint16_t a = 300, b = 300, w = (uint16_t)(90000 % 65536);

		kase(f, "uint16 prod wraps", FI_UINT16, FI_PROD, 1, 2, 16, &a,
		     &b, NULL, &w);
	}
	{
		int64_t a[2] = { -5, 7 }, b[2] = { -9, 9 };
		int64_t wmin[2] = { -9, 7 }, wmax[2] = { -5, 9 };

		kase(f, "int64 min", FI_INT64, FI_MIN, 2, 8, 32, a, b, NULL,
		     wmin);
		kase(f, "int64 max", FI_INT64, FI_MAX, 2, 8, 32, a, b, NULL,
		     wmax);
	}
	{
		double a[2] = { 1.5, -2 }, b[2] = { 2.25, 0.5 };
		double w[2] = { 3.75, -1.5 };
		float fa = 1.5f, fb = 4, fw = 6;

		kase(f, "double sum", FI_DOUBLE, FI_SUM, 2, 8, 64, a, b, NULL,
		     w);
		kase(f, "float prod", FI_FLOAT, FI_PROD, 1, 4, 80, &fa, &fb,
		     NULL, &fw);
	}
	{
		uint32_t a = 0xf0f0f0f0u, b = 0x0ff00ff0u;
		uint32_t wand = 0x00f000f0u, wor = 0xfff0fff0u,
			 wxor = 0xff00ff00u;

		kase(f, "uint32 band", FI_UINT32, FI_BAND, 1, 4, 96, &a, &b,
		     NULL, &wand);
		kase(f, "uint32 bor", FI_UINT32, FI_BOR, 1, 4, 96, &a, &b, NULL,
		     &wor);
		kase(f, "uint32 bxor", FI_UINT32, FI_BXOR, 1, 4, 96, &a, &b,
		     NULL, &wxor);
	}
	{
		int16_t a[4] = { 0, 0, 5, 5 }, b[4] = { 0, 3, 0, 3 };
		int16_t wor[4] = { 0, 1, 1, 1 }, wand[4] = { 0, 0, 0, 1 };
		int16_t wxor[4] = { 0, 1, 1, 0 };

		kase(f, "int16 lor", FI_INT16, FI_LOR, 4, 2, 112, a, b, NULL,
		     wor);
		kase(f, "int16 land", FI_INT16, FI_LAND, 4, 2, 112, a, b, NULL,
		     wand);
		kase(f, "int16 lxor", FI_INT16, FI_LXOR, 4, 2, 112, a, b, NULL,
		     wxor);
	}
	{
		uint64_t a = 41, b = 99;

		kase(f, "uint64 write", FI_UINT64, FI_ATOMIC_WRITE, 1, 8, 128,
		     &a, &b, NULL, &b);
		kase(f, "uint64 read", FI_UINT64, FI_ATOMIC_READ, 1, 8, 128, &a,
		     NULL, NULL, &a);
	}
	{
		/* target 5, new 9; compare c: swap if c <op> 5 */
		int32_t t = 5, v = 9;
		struct {
			enum fi_op op;
			int32_t c;
			bool swap;
			const char *name;
		} cs[] = {
			{ FI_CSWAP, 5, true, "cswap equal" },
			{ FI_CSWAP, 3, false, "cswap unequal" },
			{ FI_CSWAP_NE, 3, true, "cswap_ne" },
			{ FI_CSWAP_NE, 5, false, "cswap_ne equal" },
			{ FI_CSWAP_LE, 3, true, "cswap_le" },
			{ FI_CSWAP_LE, 7, false, "cswap_le not" },
			{ FI_CSWAP_LT, 5, false, "cswap_lt equal" },
			{ FI_CSWAP_LT, 3, true, "cswap_lt" },
			{ FI_CSWAP_GE, 5, true, "cswap_ge equal" },
			{ FI_CSWAP_GE, 3, false, "cswap_ge not" },
			{ FI_CSWAP_GT, 7, true, "cswap_gt" },
			{ FI_CSWAP_GT, 5, false, "cswap_gt equal" },
		};

		for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
			kase(f, cs[i].name, FI_INT32, cs[i].op, 1, 4, 144, &t,
			     &v, &cs[i].c, cs[i].swap ? &v : &t);
	}
	{
		uint16_t t = 0xf0f0, v = 0x1234, m = 0x00ff, w = 0xf034;

		kase(f, "uint16 mswap", FI_UINT16, FI_MSWAP, 1, 2, 160, &t, &v,
		     &m, &w);
	}
}

static void validity(struct fi *f)
{
	struct fi_atomic_attr attr;
	size_t n = 0, nc = 0;

	fi_phase = "validity";
	CHECK(fi_atomicvalid(f->ep, FI_UINT64, FI_SUM, &n) == 0 && n >= 8);
	CHECK(fi_query_atomic(f->domain, FI_UINT64, FI_SUM, &attr, 0) == 0 &&
	      attr.count == n && attr.size == 8);
	CHECK(fi_compare_atomicvalid(f->ep, FI_UINT64, FI_CSWAP, &nc) == 0 &&
	      nc == n / 2);
	CHECK(fi_query_atomic(f->domain, FI_UINT64, FI_CSWAP, &attr,
			      FI_COMPARE_ATOMIC) == 0 &&
	      attr.count == nc);
	CHECK(fi_fetch_atomicvalid(f->ep, FI_INT8, FI_ATOMIC_READ, &n) == 0);
	CHECK(fi_atomicvalid(f->ep, FI_INT8, FI_ATOMIC_READ, &n) ==
	      -FI_EOPNOTSUPP);
	CHECK(fi_atomicvalid(f->ep, FI_DOUBLE, FI_BOR, &n) == -FI_EOPNOTSUPP);
	CHECK(fi_atomicvalid(f->ep, FI_LONG_DOUBLE, FI_SUM, &n) ==
	      -FI_EOPNOTSUPP);
	CHECK(fi_atomicvalid(f->ep, FI_DOUBLE_COMPLEX, FI_SUM, &n) ==
	      -FI_EOPNOTSUPP);
	CHECK(fi_compare_atomicvalid(f->ep, FI_FLOAT, FI_MSWAP, &n) ==
	      -FI_EOPNOTSUPP);
	CHECK(fi_atomicvalid(f->ep, FI_INT32, FI_CSWAP, &n) == -FI_EOPNOTSUPP);
	CHECK(fi_query_atomic(f->domain, FI_DOUBLE, FI_LXOR, &attr, 0) ==
	      -FI_EOPNOTSUPP);
}

static void refused(struct fi *f, struct fid_cntr *wc)
{
	uint64_t v = 1, r, before = fi_cntr_read(wc), fl;
	size_t max;
	int ctx;

	fi_phase = "refused";
	TRY(fi_atomic(f->ep, &v, 1, NULL, f->peer, 0, 0x9999, FI_UINT64, FI_SUM,
		      &ctx));
	CHECK(one(f, &ctx, &fl) == -FI_EKEYREJECTED);
	CHECK(fl == (FI_ATOMIC | FI_WRITE));
	TRY(fi_fetch_atomic(f->ep, &v, 1, NULL, &r, NULL, f->peer, 0, KEY_RO,
			    FI_UINT64, FI_SUM, &ctx));
	CHECK(one(f, &ctx, NULL) == -FI_EACCES);
	TRY(fi_atomic(f->ep, &v, 1, NULL, f->peer, REGION - 4, KEY_RW,
		      FI_UINT64, FI_SUM, &ctx));
	CHECK(one(f, &ctx, NULL) == -FI_EINVAL);
	CHECK(fi_cntr_readerr(wc) == 2 && fi_cntr_read(wc) == before);
	/* refused at once, nothing sent */
	REQUIRE(fi_atomicvalid(f->ep, FI_UINT64, FI_SUM, &max) == 0);
	CHECK(fi_atomic(f->ep, &v, 0, NULL, f->peer, 0, KEY_RW, FI_UINT64,
			FI_SUM, &ctx) == -FI_EINVAL);
	CHECK(fi_atomic(f->ep, &v, max + 1, NULL, f->peer, 0, KEY_RW, FI_UINT64,
			FI_SUM, &ctx) == -FI_EINVAL);
	CHECK(fi_atomic(f->ep, &v, 1, NULL, f->peer, 0, KEY_RW, FI_LONG_DOUBLE,
			FI_SUM, &ctx) == -FI_EOPNOTSUPP);
}

/* Add 1 to the word at OFF_ADD of key, ADDS times, one at a time; the
 * fetched values must grow. */
static void adds(struct fi *f, fi_addr_t to, uint64_t key, uint64_t base)
{
	uint64_t one_ = 1, prev = 0, got;
	bool grows = true;
	int ctx;

	for (int i = 0; i < ADDS; i++) {
		TRY(fi_fetch_atomic(f->ep, &one_, 1, NULL, &got, NULL, to,
				    base + OFF_ADD, key, FI_UINT64, FI_SUM,
				    &ctx));
		CHECK(one(f, &ctx, NULL) == 0);
		grows &= i == 0 || got > prev;
		prev = got;
	}
	CHECK(grows);
}

static void origin(struct fi *f)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *rdc, *wc;
	uint64_t v, r, pool_base;
	int ctx;
	char c;

	TRY(fi_cntr_open(f->domain, &ca, &rdc, NULL));
	TRY(fi_cntr_open(f->domain, &ca, &wc, NULL));
	TRY(fi_ep_bind(f->ep, &rdc->fid, FI_READ));
	TRY(fi_ep_bind(f->ep, &wc->fid, FI_WRITE));
	REQUIRE(read(keys[0], &pool_base, sizeof(pool_base)) ==
		sizeof(pool_base));

	validity(f);
	semantics(f);
	refused(f, wc);

	fi_phase = "inject, then a fetch sees it";
	v = 5;
	put(f, &(uint64_t){ 10 }, 8, 200);
	TRY(fi_inject_atomic(f->ep, &v, 1, f->peer, 200, KEY_RW, FI_UINT64,
			     FI_SUM));
	TRY(fi_fetch_atomic(f->ep, NULL, 1, NULL, &r, NULL, f->peer, 200,
			    KEY_RW, FI_UINT64, FI_ATOMIC_READ, &ctx));
	CHECK(one(f, &ctx, NULL) == 0 && r == 15);

	fi_phase = "an atomic in flight, then a read of the pool region";
	v = 7;
	TRY(fi_atomic(f->ep, &v, 1, NULL, f->peer, pool_base + 8, KEY_POOL,
		      FI_UINT64, FI_SUM, &ctx));
	TRY(fi_read(f->ep, &r, 8, NULL, f->peer, pool_base + 8, KEY_POOL, &c));
	CHECK(one(f, &ctx, NULL) == 0);
	CHECK(one(f, &c, NULL) == 0);
	CHECK(r == 7);

	/* atomics count as writes, fetching ones as reads; the reads
	 * include this test's fi_read calls */
	CHECK(fi_cntr_read(wc) > 0 && fi_cntr_read(rdc) > 0);

	fi_phase = "concurrent adds";
	REQUIRE(write(go[1], "g", 1) == 1);
	adds(f, f->peer, KEY_RW, 0);
	adds(f, f->peer, KEY_POOL, pool_base);
	REQUIRE(write(done[1], "d", 1) == 1);
	cntrs[ncntrs++] = rdc;
	cntrs[ncntrs++] = wc;
}

static void target(struct fi *f)
{
	uint8_t *region = calloc(1, REGION), *ro = calloc(1, 64);
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *rwc;
	struct fid_mr *mr, *mro, *mrp;
	struct cxl_pool_opts o;
	struct cxl_obj obj;
	cxl_pool *pool;
	fi_addr_t self;
	char name[64];
	size_t len = sizeof(name);
	uint64_t base, total;
	struct pollfd pg = { .fd = go[0], .events = POLLIN };
	struct pollfd pd = { .fd = done[0], .events = POLLIN };
	char c;

	REQUIRE(region && ro);
	TRY(fi_cntr_open(f->domain, &ca, &rwc, NULL));
	TRY(fi_ep_bind(f->ep, &rwc->fid, FI_REMOTE_WRITE));
	TRY(fi_mr_reg(f->domain, region, REGION,
		      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, KEY_RW, 0, &mr,
		      NULL));
	TRY(fi_mr_reg(f->domain, ro, 64, FI_REMOTE_READ, 0, KEY_RO, 0, &mro,
		      NULL));
	REQUIRE(cxl_opts_from_env(&o) == CXL_OK);
	REQUIRE(cxl_pool_attach_shared(&o, &pool) == CXL_OK);
	REQUIRE(cxl_obj_create(pool, "atomic.test.region", REGION, CXL_OBJ_ZERO,
			       &obj) == CXL_OK);
	TRY(fi_mr_reg(f->domain, obj.ptr, REGION,
		      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, KEY_POOL, 0, &mrp,
		      NULL));
	/* the domain addresses regions by virtual address or by offset */
	base = f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR
		       ? (uint64_t)(uintptr_t)obj.ptr
		       : 0;
	REQUIRE(base == 0); /* fitest asks for no FI_MR_VIRT_ADDR */
	REQUIRE(write(keys[1], &base, sizeof(base)) == sizeof(base));
	/* our own address: we add to ourselves while the origin does */
	TRY(fi_getname(&f->ep->fid, name, &len));
	CHECK(fi_av_insert(f->av, name, 1, &self, 0, NULL) == 1);
	while (poll(&pg, 1, 0) == 0) { /* serve the origin's cases */
		struct fi_cq_tagged_entry e;

		(void)fi_cq_read(f->cq, &e, 1);
	}
	REQUIRE(read(go[0], &c, 1) == 1);
	/* remote writes: the origin's 30 fi_write calls through the channel
	 * and its 2 successful non-fetching atomics (inject, in flight) */
	CHECK(fi_cntr_read(rwc) == 30 + 2);
	/* fi_wait_cq progresses, and so serves the origin meanwhile */
	adds(f, self, KEY_RW, 0);
	adds(f, self, KEY_POOL, 0);
	while (poll(&pd, 1, 0) == 0) {
		struct fi_cq_tagged_entry e;

		(void)fi_cq_read(f->cq, &e, 1);
	}
	memcpy(&total, region + OFF_ADD, 8);
	CHECK(total == 2 * ADDS);
	cxl_inval(pool, (uint8_t *)obj.ptr + OFF_ADD, 8);
	memcpy(&total, (uint8_t *)obj.ptr + OFF_ADD, 8);
	CHECK(total == 2 * ADDS);
	printf("rank 1: %llu adds from 2 ranks in both regions\n",
	       (unsigned long long)total);
	TRY(fi_close(&mrp->fid));
	TRY(fi_close(&mro->fid));
	TRY(fi_close(&mr->fid));
	cntrs[ncntrs++] = rwc;
	cxl_obj_close(&obj);
	cxl_obj_destroy(pool, "atomic.test.region");
	cxl_pool_detach(pool);
	free(region);
	free(ro);
}

static int child(int rank, void *arg)
{
	struct fi f;

	(void)arg;
	fi_extra_caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE |
			FI_REMOTE_READ | FI_REMOTE_WRITE;
	fi_setup(&f, rank, rank ? p10[1] : p01[1], rank ? p01[0] : p10[0]);
	if (rank == 0)
		origin(&f);
	else
		target(&f);
	fi_teardown_cntrs(&f, cntrs, ncntrs);
	printf("rank %d: %d passed, %d failed\n", rank, t_passed, t_failed);
	fflush(stdout);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	mode = targ_mode(argc, argv);
	tpool_init(&tp, "fiatomic");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_atomic", 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0 && pipe(keys) == 0);
	REQUIRE(pipe(go) == 0 && pipe(done) == 0);
	CHECK(run_children(2, child, NULL) == 0);
	tpool_cleanup(&tp);
	return t_report("test_fi_atomic");
}
