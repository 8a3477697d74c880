/* SPDX-License-Identifier: BSD-3-Clause */
/* Flags and the atomic-free barrier (cMPI §3.4); the waits use backoff.c. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- flags -------------------------------------------------------------- */

CXL_EXPORT void cxl_flag_set(cxl_pool *p, uint64_t *flag, uint64_t v)
{
	cxl_nt_store64(p, flag, v);
	cxl_wfence(p); /* make the flag visible now, in order */
}

CXL_EXPORT uint64_t cxl_flag_get(cxl_pool *p, const uint64_t *flag)
{
	return cxl_nt_load64(p, flag);
}

CXL_EXPORT int cxl_flag_wait_ge(cxl_pool *p, const uint64_t *flag, uint64_t v,
				uint32_t timeout_ms)
{
	struct cxl_backoff b;

	cxl_backoff_init(&b, timeout_ms);
	while (cxl_nt_load64(p, flag) < v)
		if (cxl_backoff_wait(&b))
			return cxl_seterr(
				CXL_ETIMEDOUT,
				"flag at pool offset "
				"%llu did not reach %llu within %u "
				"ms; is its writer alive?",
				(unsigned long long)cxl_pool_offset(p, flag),
				(unsigned long long)v, timeout_ms);
	return CXL_OK;
}

/* ---- barrier -------------------------------------------------------------
 * Line 0: {magic ^ object identity, n}. Line 1 + i: participant i's
 * sequence number, written only by i. Entering barrier k, i stores k in its
 * line and waits until every line holds >= k. No read-modify-write, no
 * shared line, one non-temporal store per participant per barrier.
 */
#define BARRIER_MAGIC 0x5249524142584c43ull /* "CLXBARIR" */

struct cxl_barrier {
	cxl_pool *pool;
	struct cxl_obj obj;
	uint64_t *lines; /* line i+1 of the object */
	uint32_t n, rank;
	uint64_t seq;
};

static uint64_t barrier_tag(const struct cxl_obj *o)
{
	return BARRIER_MAGIC ^ ((uint64_t)o->idx << 32 | o->gen);
}

CXL_EXPORT uint64_t cxl_barrier_footprint(uint32_t n)
{
	return (uint64_t)(n + 1) * CXL_LINE;
}

CXL_EXPORT int cxl_barrier_open(cxl_pool *p, const char *name, uint32_t n,
				uint32_t rank, cxl_barrier **out)
{
	struct cxl_barrier *b;
	uint64_t *hdr;
	int rc;

	if (!p || !out || n == 0 || rank >= n)
		return cxl_seterr(CXL_EINVAL,
				  "cxl_barrier_open: need n > 0 "
				  "and rank < n (n=%u rank=%u)",
				  n, rank);
	b = calloc(1, sizeof(*b));
	if (!b)
		return cxl_seterr(CXL_ENOMEM, "barrier: out of memory");
	b->pool = p;
	b->n = n;
	b->rank = rank;
	rc = cxl_obj_create(p, name, cxl_barrier_footprint(n), CXL_OBJ_ZERO,
			    &b->obj);
	if (rc == CXL_OK) {
		hdr = b->obj.ptr;
		hdr[1] = n;
		cxl_flush(p, hdr, CXL_LINE);
		cxl_wfence(p); /* zeroed lines and n before the tag */
		cxl_flag_set(p, &hdr[0], barrier_tag(&b->obj));
	} else if (rc == CXL_EEXIST) {
		struct cxl_backoff bo;

		if ((rc = cxl_obj_open(p, name, &b->obj)))
			goto fail;
		if (b->obj.size < cxl_barrier_footprint(n)) {
			rc = cxl_seterr(CXL_EINVAL,
					"barrier '%s' was created "
					"for fewer than %u participants",
					name, n);
			goto fail_close;
		}
		hdr = b->obj.ptr;
		cxl_backoff_init(&bo, p->opts.lock_timeout_ms);
		while (cxl_nt_load64(p, &hdr[0]) != barrier_tag(&b->obj))
			if (cxl_backoff_wait(&bo)) {
				rc = cxl_seterr(CXL_ETIMEDOUT,
						"barrier '%s' was "
						"never initialised by its "
						"creator",
						name);
				goto fail_close;
			}
		cxl_inval(p, hdr, CXL_LINE);
		if (hdr[1] != n) {
			rc = cxl_seterr(CXL_EINVAL,
					"barrier '%s' has %llu "
					"participants, not %u",
					name, (unsigned long long)hdr[1], n);
			goto fail_close;
		}
	} else {
		goto fail;
	}
	b->lines = (uint64_t *)((uint8_t *)b->obj.ptr + CXL_LINE);
	/* resume after a reopen: our own line holds our last sequence */
	b->seq = cxl_nt_load64(p, &b->lines[(size_t)rank * 8]);
	*out = b;
	return CXL_OK;
fail_close:
	cxl_obj_close(&b->obj);
fail:
	free(b);
	return rc;
}

CXL_EXPORT int cxl_barrier_wait(cxl_barrier *b, uint32_t timeout_ms)
{
	cxl_pool *p = b->pool;
	struct cxl_backoff bo;
	uint64_t k = ++b->seq;

	cxl_flag_set(p, &b->lines[(size_t)b->rank * 8], k);
	cxl_backoff_init(&bo, timeout_ms);
	for (uint32_t j = 0; j < b->n; j++) {
		if (j == b->rank)
			continue;
		while (cxl_nt_load64(p, &b->lines[(size_t)j * 8]) < k)
			if (cxl_backoff_wait(&bo))
				return cxl_seterr(CXL_ETIMEDOUT,
						  "barrier: "
						  "participant %u of %u did "
						  "not arrive at barrier %llu "
						  "within %u ms",
						  j, b->n,
						  (unsigned long long)k,
						  timeout_ms);
	}
	return CXL_OK;
}

CXL_EXPORT void cxl_barrier_close(cxl_barrier *b)
{
	if (!b)
		return;
	cxl_obj_close(&b->obj);
	free(b);
}
