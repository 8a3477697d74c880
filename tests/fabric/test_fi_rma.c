/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FI_RMA through the libfabric API (rma.c): writes and reads of every
 * protocol size into and out of a registered region of the peer, checked
 * byte for byte; remote CQ data; counters; refused accesses (unknown key,
 * out of bounds, no access right) completing in error at the origin; and
 * a region in the pool, which the origin writes and reads directly: those
 * complete while the target does not progress at all, and the target then
 * sees the written bytes. Rank 0 is the origin, rank 1 the target; the
 * target only progresses (or, paused, nothing).
 */
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "fitest.h"

static enum cxl_coh_mode mode;
static struct tpool tp;
static int p01[2], p10[2], stop[2], keys[2], pause_[2], resume_[2];
/* counters close only after the endpoint they are bound to */
static struct fid_cntr *cntrs[3];
static int ncntrs;

#define REGION (3u << 20)
#define POOL_REGION (1u << 20)
#define KEY_RW 0x5151
#define KEY_RO 0x5252
#define KEY_POOL 0x5353

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 10));
}

static bool same(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 7 + seed + (i >> 10)))
			return false;
	return true;
}

/* Wait for one completion of the origin; its error code (0: success). */
static int one(struct fi *f, void *ctx)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int rc = fi_wait_cq(f, &e, &err, NULL, 20);

	CHECK((rc ? err.op_context : e.op_context) == ctx);
	if (!rc)
		CHECK(e.flags & FI_RMA);
	return rc;
}

static void origin(struct fi *f)
{
	static const size_t sizes[] = { 0,     1,    8,	     200,
					1000,  4096, 100000, (2u << 20) + 5,
					REGION };
	uint8_t *src = malloc(REGION), *dst = malloc(REGION);
	struct fid_cntr *rdc, *wc;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	uint64_t reads = 0, writes = 0;
	int ctx;

	REQUIRE(src && dst);
	TRY(fi_cntr_open(f->domain, &ca, &rdc, NULL));
	TRY(fi_cntr_open(f->domain, &ca, &wc, NULL));
	/* counters bind to an enabled endpoint as well */
	TRY(fi_ep_bind(f->ep, &rdc->fid, FI_READ));
	TRY(fi_ep_bind(f->ep, &wc->fid, FI_WRITE));

	fi_phase = "write and read back";
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], off = n == REGION ? 0 : 4096 + i;

		fill(src, n, (unsigned)i);
		TRY(fi_write(f->ep, src, n, NULL, f->peer, off, KEY_RW, &ctx));
		CHECK(one(f, &ctx) == 0);
		writes++;
		memset(dst, 0, n);
		TRY(fi_read(f->ep, dst, n, NULL, f->peer, off, KEY_RW, &ctx));
		CHECK(one(f, &ctx) == 0);
		reads++;
		CHECK(same(dst, n, (unsigned)i));
	}
	CHECK(fi_cntr_read(rdc) == reads && fi_cntr_read(wc) == writes);

	fi_phase = "pipelined";
	/* 32 writes in flight, then 32 reads in flight, completed later */
	for (int k = 0; k < 32; k++) {
		fill(src + k * 65536, 65536, 200 + k);
		TRY(fi_write(f->ep, src + k * 65536, 65536, NULL, f->peer,
			     (uint64_t)k * 65536, KEY_RW, NULL));
	}
	for (int k = 0; k < 32; k++)
		CHECK(one(f, NULL) == 0);
	memset(dst, 0, 32 * 65536);
	for (int k = 0; k < 32; k++)
		TRY(fi_read(f->ep, dst + k * 65536, 65536, NULL, f->peer,
			    (uint64_t)k * 65536, KEY_RW, NULL));
	for (int k = 0; k < 32; k++)
		CHECK(one(f, NULL) == 0);
	for (int k = 0; k < 32; k++)
		CHECK(same(dst + k * 65536, 65536, 200 + k));

	fi_phase = "write with data";
	{
		uint64_t v = 0x1122334455667788ull;

		TRY(fi_writedata(f->ep, &v, 8, NULL, 0xfeed, f->peer, 0, KEY_RW,
				 &ctx));
		CHECK(one(f, &ctx) == 0);
	}

	fi_phase = "refused";
	TRY(fi_write(f->ep, src, 8, NULL, f->peer, 0, 0x9999, &ctx));
	CHECK(one(f, &ctx) == -FI_EKEYREJECTED);
	TRY(fi_write(f->ep, src, 64, NULL, f->peer, REGION - 32, KEY_RW, &ctx));
	CHECK(one(f, &ctx) == -FI_EINVAL);
	TRY(fi_write(f->ep, src, 8, NULL, f->peer, 0, KEY_RO, &ctx));
	CHECK(one(f, &ctx) == -FI_EACCES);
	TRY(fi_read(f->ep, dst, 16, NULL, f->peer, (uint64_t)-8, KEY_RW, &ctx));
	CHECK(one(f, &ctx) == -FI_EINVAL);
	TRY(fi_read(f->ep, dst, 8, NULL, f->peer, 0, 0x9999, &ctx));
	CHECK(one(f, &ctx) == -FI_EKEYREJECTED);
	/* the read-only region reads fine */
	TRY(fi_read(f->ep, dst, 4096, NULL, f->peer, 0, KEY_RO, &ctx));
	CHECK(one(f, &ctx) == 0);
	CHECK(same(dst, 4096, 77));

	fi_phase = "pool region, direct";
	/* the target stops progressing: only direct RMA can complete */
	REQUIRE(write(pause_[1], "p", 1) == 1);
	usleep(50000);
	memset(dst, 0, POOL_REGION);
	TRY(fi_read(f->ep, dst, POOL_REGION, NULL, f->peer, 0, KEY_POOL, &ctx));
	CHECK(one(f, &ctx) == 0);
	CHECK(same(dst, POOL_REGION, 99));
	fill(src, POOL_REGION / 2, 55);
	TRY(fi_write(f->ep, src, POOL_REGION / 2, NULL, f->peer,
		     POOL_REGION / 4, KEY_POOL, &ctx));
	CHECK(one(f, &ctx) == 0);
	memset(dst, 0, POOL_REGION / 2);
	TRY(fi_read(f->ep, dst, POOL_REGION / 2, NULL, f->peer, POOL_REGION / 4,
		    KEY_POOL, &ctx));
	CHECK(one(f, &ctx) == 0);
	CHECK(same(dst, POOL_REGION / 2, 55));
	/* direct RMA checks bounds and rights as well (no target needed) */
	TRY(fi_read(f->ep, dst, 64, NULL, f->peer, POOL_REGION - 32, KEY_POOL,
		    &ctx));
	REQUIRE(write(resume_[1], "r", 1) == 1);
	CHECK(one(f, &ctx) == -FI_EINVAL); /* refused by the target */

	REQUIRE(write(stop[1], "x", 1) == 1);
	cntrs[ncntrs++] = rdc;
	cntrs[ncntrs++] = wc;
	free(src);
	free(dst);
}

static void target(struct fi *f)
{
	uint8_t *region = malloc(REGION), *ro = malloc(4096);
	struct fid_cntr *rwc;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_mr *mr, *mro, *mrp;
	struct cxl_pool_opts o;
	struct cxl_obj obj;
	cxl_pool *pool;
	struct pollfd pfd = { .fd = stop[0], .events = POLLIN };
	int data_seen = 0;

	REQUIRE(region && ro);
	fill(ro, 4096, 77);
	TRY(fi_cntr_open(f->domain, &ca, &rwc, NULL));
	TRY(fi_ep_bind(f->ep, &rwc->fid, FI_REMOTE_WRITE));
	TRY(fi_mr_reg(f->domain, region, REGION,
		      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, KEY_RW, 0, &mr,
		      NULL));
	CHECK(fi_mr_key(mr) == KEY_RW);
	TRY(fi_mr_reg(f->domain, ro, 4096, FI_REMOTE_READ, 0, KEY_RO, 0, &mro,
		      NULL));
	/* a requested key already in use is refused */
	{
		struct fid_mr *dup;

		CHECK(fi_mr_reg(f->domain, ro, 64, FI_REMOTE_READ, 0, KEY_RO, 0,
				&dup, NULL) == -FI_ENOKEY);
	}
	/* a region in the pool, through the provider's own attachment */
	REQUIRE(cxl_opts_from_env(&o) == CXL_OK);
	REQUIRE(cxl_pool_attach_shared(&o, &pool) == CXL_OK);
	REQUIRE(cxl_obj_create(pool, "rma.test.region", POOL_REGION, 0, &obj) ==
		CXL_OK);
	fill(obj.ptr, POOL_REGION, 99);
	/* our stores reach the pool before origins read it directly */
	cxl_flush(pool, obj.ptr, POOL_REGION);
	cxl_wfence(pool);
	TRY(fi_mr_reg(f->domain, obj.ptr, POOL_REGION,
		      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, KEY_POOL, 0, &mrp,
		      NULL));
	REQUIRE(write(keys[1], "k", 1) == 1);
	/* progress until the origin is done; count remote CQ data */
	while (poll(&pfd, 1, 0) == 0) {
		struct fi_cq_tagged_entry e;
		struct pollfd pp = { .fd = pause_[0], .events = POLLIN };
		char c;

		if (poll(&pp, 1, 0) == 1) { /* paused: no progress at all */
			REQUIRE(read(pause_[0], &c, 1) == 1);
			REQUIRE(read(resume_[0], &c, 1) == 1);
			/* the origin's direct write is in the pool */
			cxl_inval(pool, obj.ptr, POOL_REGION);
			CHECK(same((uint8_t *)obj.ptr + POOL_REGION / 4,
				   POOL_REGION / 2, 55));
		}

		if (fi_cq_read(f->cq, &e, 1) == 1) {
			CHECK((e.flags & FI_REMOTE_WRITE) &&
			      (e.flags & FI_REMOTE_CQ_DATA) &&
			      e.data == 0xfeed && e.len == 8);
			data_seen++;
		}
	}
	CHECK(data_seen == 1);
	/* writes through the channel (direct ones involve no target) */
	CHECK(fi_cntr_read(rwc) == 9 + 32 + 1);
	{
		uint64_t v;

		memcpy(&v, region, 8);
		CHECK(v == 0x1122334455667788ull);
	}
	TRY(fi_close(&mrp->fid));
	TRY(fi_close(&mro->fid));
	TRY(fi_close(&mr->fid));
	cntrs[ncntrs++] = rwc;
	cxl_obj_close(&obj);
	cxl_obj_destroy(pool, "rma.test.region");
	cxl_pool_detach(pool);
	free(region);
	free(ro);
}

static int child(int rank, void *arg)
{
	struct fi f;
	char c;

	(void)arg;
	fi_extra_caps =
		FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	fi_setup(&f, rank, rank ? p10[1] : p01[1], rank ? p01[0] : p10[0]);
	if (rank == 0) {
		REQUIRE(read(keys[0], &c, 1) == 1); /* regions registered */
		origin(&f);
	} else {
		target(&f);
	}
	fi_teardown_cntrs(&f, cntrs, ncntrs);
	printf("rank %d: %d passed, %d failed\n", rank, t_passed, t_failed);
	fflush(stdout);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	mode = targ_mode(argc, argv);
	tpool_init(&tp, "firma");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_rma", 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0);
	REQUIRE(pipe(stop) == 0 && pipe(keys) == 0);
	REQUIRE(pipe(pause_) == 0 && pipe(resume_) == 0);
	CHECK(run_children(2, child, NULL) == 0);
	tpool_cleanup(&tp);
	return t_report("test_fi_rma");
}
