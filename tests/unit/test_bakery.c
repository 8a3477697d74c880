/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bakery lock in one process, with the other participants' words
 * written by hand: uncontended acquisition in both modes, readers sharing,
 * a writer or an earlier reader blocking (timeout, request withdrawn), a
 * participant still choosing, and corrupt tickets.
 * Mutual exclusion across hosts is tests/mp/mp_bakery.c.
 */
#include <string.h>

#include "internal.h"
#include "testutil.h"

#define N 4
#define STRIDE 8 /* one line per participant */
#define CHOOSING (1ull << 63)
#define EXCL (1ull << 62)

static uint64_t *words;

/* Participant j's word, as j would have written it. */
static void set(cxl_pool *p, uint32_t j, uint64_t v)
{
	cxl_nt_store64(p, &words[j * STRIDE], v);
	cxl_fence(p);
}

static struct cxl_bakery as(cxl_pool *p, uint32_t me)
{
	return (struct cxl_bakery){
		.pool = p, .words = words, .stride = STRIDE, .n = N, .me = me
	};
}

static void reset(cxl_pool *p)
{
	for (uint32_t j = 0; j < N; j++)
		set(p, j, 0);
}

int main(int argc, char **argv)
{
	enum cxl_coh_mode mode = targ_mode(argc, argv);
	struct cxl_pool_opts o;
	struct cxl_bakery b;
	struct tpool tp;
	struct cxl_obj obj;
	cxl_pool *p;

	tpool_init(&tp, "bakery");
	topts(&o, &tp, mode, 0, 0);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	/* the test plays every participant in this process: in the
	 * emulated mode its own stores are seen through the same cache,
	 * and the lock's words bypass it (non-temporal stores and loads) */
	REQUIRE(cxl_obj_create(p, "bk", N * STRIDE * 8, CXL_OBJ_ZERO, &obj) ==
		CXL_OK);
	words = obj.ptr;

	/* uncontended: ticket 1, then released to 0 */
	b = as(p, 0);
	CHECK_RC(cxl_bakery_lock(&b, 1, 100), CXL_OK);
	CHECK(cxl_nt_load64(p, &words[0]) == (1 | EXCL));
	cxl_bakery_unlock(&b);
	CHECK(cxl_nt_load64(p, &words[0]) == 0);

	/* a reader holding ticket 3 admits readers, takes a higher ticket */
	reset(p);
	set(p, 2, 3);
	CHECK_RC(cxl_bakery_lock(&b, 0, 100), CXL_OK);
	CHECK(cxl_nt_load64(p, &words[0]) == 4);
	cxl_bakery_unlock(&b);
	/* ... but not a writer, which times out and withdraws */
	CHECK_RC(cxl_bakery_lock(&b, 1, 50), CXL_ETIMEDOUT);
	CHECK(strstr(cxl_errmsg(), "participant 2 of 4") != NULL);
	CHECK(cxl_nt_load64(p, &words[0]) == 0);

	/* a writer with an earlier ticket blocks a reader */
	reset(p);
	set(p, 3, 1 | EXCL);
	CHECK_RC(cxl_bakery_lock(&b, 0, 50), CXL_ETIMEDOUT);
	/* a participant still choosing blocks everyone */
	reset(p);
	set(p, 1, CHOOSING);
	CHECK_RC(cxl_bakery_lock(&b, 0, 50), CXL_ETIMEDOUT);

	/* corrupt tickets: refused at once, request withdrawn */
	reset(p);
	set(p, 3, EXCL - 1);
	CHECK_RC(cxl_bakery_lock(&b, 1, 0), CXL_ECORRUPT);
	CHECK(strstr(cxl_errmsg(), "participant 3 of 4") != NULL);
	CHECK(cxl_nt_load64(p, &words[0]) == 0);
	set(p, 3, 1ull << 61);
	CHECK_RC(cxl_bakery_lock(&b, 0, 0), CXL_ECORRUPT);
	set(p, 3, (1ull << 61) - 2); /* high but possible: served */
	CHECK_RC(cxl_bakery_lock(&b, 0, 50), CXL_OK);
	cxl_bakery_unlock(&b);

	cxl_obj_close(&obj);
	cxl_obj_destroy(p, "bk");
	cxl_pool_detach(p);
	tpool_cleanup(&tp);
	return t_report("test_bakery");
}
