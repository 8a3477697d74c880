/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CXL cost model (CXL_COST_MODEL, docs/costmodel.md) charges what it
 * models, and counts it exactly:
 *  - CXL_COST_* parsing: a bad value fails naming the variable;
 *  - reads (cxl_inval, cxl_copy_from_pool, cxl_nt_load64) are charged
 *    fence + load + (n-1) lines at the bandwidth, exactly;
 *  - flushed lines complete wb + (n-1) lines after issue, and the next
 *    fence waits for them: N fences after M lines take at least that plus
 *    N fence costs; work between flush and fence overlaps the write-back;
 *  - the coherent mode, and the model off, charge nothing.
 * The parameters are large (tens of us) so that the lower bounds are well
 * above the clock's resolution; upper bounds are generous. This checks the
 * charging, not the speed of anything.
 */
#include <string.h>
#include <time.h>

#include "internal.h"
#include "testutil.h"

#define LOAD 20000u	  /* ns */
#define WB 30000u	  /* ns */
#define NT 25000u	  /* ns */
#define FENCE 5000u	  /* ns */
#define BW 1.0		  /* GB/s: one 64-byte line per 64 ns */
#define LINE_NS 64u	  /* 64 bytes at BW */
#define SLACK 50000000ull /* 50 ms: upper bounds allow a busy machine */

static enum cxl_coh_mode mode;
static struct tpool tp;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static cxl_pool *attach(const char *model)
{
	struct cxl_pool_opts o;
	cxl_pool *p;

	topts(&o, &tp, mode, 0, 0);
	REQUIRE(cxl_cost_preset(model, &o.cost) == CXL_OK);
	if (strcmp(model, "none")) {
		o.cost.load_ns = LOAD;
		o.cost.wb_ns = WB;
		o.cost.nt_ns = NT;
		o.cost.fence_ns = FENCE;
		o.cost.bw_gbs = BW;
	}
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	return p;
}

static void clear_env(void)
{
	static const char *const vars[] = {
		"CXL_COST_MODEL", "CXL_COST_LOAD_NS",  "CXL_COST_WB_NS",
		"CXL_COST_NT_NS", "CXL_COST_FENCE_NS", "CXL_COST_BW_GBS",
	};

	for (unsigned i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* cxl_opts_from_env fails with CXL_EENV and a message naming var */
static void expect_env_error(const char *var)
{
	struct cxl_pool_opts o;

	CHECK_RC(cxl_opts_from_env(&o), CXL_EENV);
	CHECK(strstr(cxl_errmsg(), var) != NULL);
}

static void test_env(void)
{
	struct cxl_cost_params cmpi;
	struct cxl_pool_opts o;

	clear_env();
	CHECK_RC(cxl_opts_from_env(&o), CXL_OK);
	CHECK(!strcmp(o.cost.name, "none"));

	setenv("CXL_COST_MODEL", "no-such-device", 1);
	expect_env_error("CXL_COST_MODEL");
	CHECK(strstr(cxl_errmsg(), "cmpi") != NULL); /* lists the presets */

	setenv("CXL_COST_MODEL", "cmpi", 1);
	REQUIRE(cxl_cost_preset("cmpi", &cmpi) == CXL_OK);
	setenv("CXL_COST_WB_NS", "123", 1);
	CHECK_RC(cxl_opts_from_env(&o), CXL_OK);
	CHECK(!strcmp(o.cost.name, "cmpi"));
	CHECK(o.cost.wb_ns == 123);	       /* the override */
	CHECK(o.cost.load_ns == cmpi.load_ns); /* the rest: the preset */
	CHECK(o.cost.bw_gbs == cmpi.bw_gbs);

	setenv("CXL_COST_WB_NS", "99999999999", 1);
	expect_env_error("CXL_COST_WB_NS");
	setenv("CXL_COST_WB_NS", "12ns", 1);
	expect_env_error("CXL_COST_WB_NS");
	unsetenv("CXL_COST_WB_NS");

	setenv("CXL_COST_BW_GBS", "2.5", 1);
	CHECK_RC(cxl_opts_from_env(&o), CXL_OK);
	CHECK(o.cost.bw_gbs == 2.5);
	setenv("CXL_COST_BW_GBS", "0", 1);
	expect_env_error("CXL_COST_BW_GBS");
	setenv("CXL_COST_BW_GBS", "fast", 1);
	expect_env_error("CXL_COST_BW_GBS");
	setenv("CXL_COST_BW_GBS", "nan", 1);
	expect_env_error("CXL_COST_BW_GBS");

	/* an override without a model would be silently ignored: refused */
	unsetenv("CXL_COST_MODEL");
	expect_env_error("CXL_COST_BW_GBS");
	unsetenv("CXL_COST_BW_GBS");
	setenv("CXL_COST_LOAD_NS", "100", 1);
	expect_env_error("CXL_COST_LOAD_NS");
	clear_env();
}

/* Run fn and return the elapsed ns and the counters it left. */
#define TIMED(elapsed, c, body)             \
	do {                                \
		uint64_t t0_;               \
		cxl_coh_counters_reset();   \
		t0_ = now_ns();             \
		body;                       \
		(elapsed) = now_ns() - t0_; \
		cxl_coh_counters_get(&(c)); \
	} while (0)

static void test_reads(cxl_pool *p, uint8_t *buf, uint8_t *priv)
{
	struct cxl_coh_counters c;
	uint64_t el, want;

	/* 8 lines: the fence (nothing pending), then 1 + 7 pipelined */
	want = FENCE + LOAD + 7 * LINE_NS;
	TIMED(el, c, cxl_inval(p, buf, 8 * 64));
	CHECK(c.inval_lines == 8 && c.fences == 1 && c.flush_lines == 0);
	CHECK(c.cost_ns == want);
	CHECK(el >= want && el < want + SLACK);

	/* a copy out of the pool of 4 KiB: 64 lines */
	want = FENCE + LOAD + 63 * LINE_NS;
	TIMED(el, c, cxl_copy_from_pool(p, priv, buf, 4096));
	CHECK(c.inval_lines == 64 && c.fences == 1);
	CHECK(c.cost_ns == want);
	CHECK(el >= want && el < want + SLACK);

	/* an uncached load: the fence, then one round trip */
	want = FENCE + LOAD;
	TIMED(el, c, (void)cxl_nt_load64(p, (uint64_t *)buf));
	CHECK(c.nt_loads == 1 && c.fences == 1 && c.inval_lines == 0);
	CHECK(c.cost_ns == want);
	CHECK(el >= want && el < want + SLACK);
}

static void test_writes(cxl_pool *p, uint8_t *buf)
{
	struct cxl_coh_counters c;
	uint64_t el, want, lines = 1000, nfences = 3;

	/* M lines then N fences: the first waits for the last line, which
	 * completes WB after it entered the write path, (M-1) lines behind
	 * the first; every fence adds FENCE */
	want = WB + (lines - 1) * LINE_NS + nfences * FENCE;
	TIMED(el, c, {
		memset(buf, 7, lines * 64);
		cxl_flush(p, buf, lines * 64);
		for (uint64_t i = 0; i < nfences; i++)
			cxl_wfence(p);
	});
	CHECK(c.flush_lines == lines && c.fences == nfences);
	CHECK(c.inval_lines == 0 && c.nt_loads == 0);
	/* what the fence waited is the model less the time between the
	 * flush and the fence, so at most the model, at least the fences */
	CHECK(c.cost_ns <= want && c.cost_ns >= nfences * FENCE);
	CHECK(el >= want && el < want + SLACK);

	/* a non-temporal store completes NT after issue */
	want = NT + FENCE;
	TIMED(el, c, {
		cxl_nt_store64(p, (uint64_t *)buf, 9);
		cxl_wfence(p);
	});
	CHECK(c.nt_stores == 1 && c.fences == 1);
	CHECK(c.cost_ns <= want && c.cost_ns >= FENCE);
	CHECK(el >= want && el < want + SLACK);

	/* work between the flush and the fence overlaps the write-back: a
	 * fence after it finds the line complete and costs only FENCE */
	TIMED(el, c, {
		uint64_t t = now_ns();

		buf[0] = 1;
		cxl_flush(p, buf, 1);
		while (now_ns() < t + 2 * WB)
			;
		cxl_wfence(p);
	});
	CHECK(c.flush_lines == 1 && c.fences == 1);
	CHECK(c.cost_ns == FENCE);
	CHECK(el >= 2 * WB + FENCE && el < 2 * WB + FENCE + SLACK);

	/* a flush is completed by the fence inside an invalidation too */
	want = WB + FENCE + LOAD;
	TIMED(el, c, {
		cxl_flush(p, buf, 64);
		cxl_inval(p, buf + 4096, 64);
	});
	CHECK(c.flush_lines == 1 && c.inval_lines == 1 && c.fences == 1);
	CHECK(c.cost_ns <= want && c.cost_ns >= FENCE + LOAD);
	CHECK(el >= want && el < want + SLACK);
}

/* The model off, or the coherent mode: nothing charged, ops still run. */
static void test_uncharged(cxl_pool *p, uint8_t *buf)
{
	struct cxl_coh_counters c;
	struct cxl_cost_params got;
	uint64_t el;

	cxl_pool_cost(p, &got);
	CHECK(!strcmp(got.name, "none"));
	TIMED(el, c, {
		cxl_flush(p, buf, 640);
		cxl_wfence(p);
		cxl_inval(p, buf, 640);
		(void)cxl_nt_load64(p, (uint64_t *)buf);
	});
	(void)el;
	CHECK(c.cost_ns == 0);
	if (mode != CXL_COH_COHERENT)
		CHECK(c.flush_lines == 10 && c.inval_lines == 10);
}

static void run(const char *model)
{
	cxl_pool *p = attach(model);
	static uint8_t priv[4096];
	struct cxl_cost_params got;
	struct cxl_obj o;

	REQUIRE(cxl_obj_create(p, "cost", 128 * 1024, 0, &o) == CXL_OK);
	memset(o.ptr, 0, 128 * 1024);
	cxl_flush(p, o.ptr, 128 * 1024);
	cxl_wfence(p);
	cxl_pool_cost(p, &got);
	if (strcmp(model, "none") && mode != CXL_COH_COHERENT) {
		CHECK(!strcmp(got.name, model) && got.load_ns == LOAD);
		test_reads(p, o.ptr, priv);
		test_writes(p, o.ptr);
	} else {
		test_uncharged(p, o.ptr);
	}
	cxl_obj_close(&o);
	cxl_obj_destroy(p, "cost");
	cxl_pool_detach(p);
}

int main(int argc, char **argv)
{
	mode = targ_mode(argc, argv);
	tpool_init(&tp, "cost");
	test_env();
	run("cmpi"); /* with the test's parameters */
	run("none");
	tpool_cleanup(&tp);
	return t_report("test_costmodel");
}
