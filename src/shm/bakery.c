/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A reader-writer lock for participants on different hosts, from loads,
 * stores and fences only: Lamport's bakery over one word per participant.
 *
 * Word layout: bit 63 CHOOSING (taking a ticket), bit 62 EXCLUSIVE, bits
 * 0-61 the ticket (0: not interested). A participant takes the ticket one
 * above every ticket it sees, then waits for every participant that holds
 * an earlier ticket (ties broken by index) and conflicts with it: an
 * exclusive request conflicts with everyone, a shared one with exclusive
 * requests only. Requests are therefore served in ticket order, and a
 * writer is not starved by a stream of readers.
 *
 * Words are written with non-temporal stores and read with uncached
 * loads, so no line of the lock lives in a cache; the full fence after
 * each store orders it before the loads that follow (store-to-load order
 * is what the bakery needs, and x86 gives it only with mfence).
 * Tickets grow by at most one per acquisition, so 62 bits never wrap: a
 * word near the top was not written by a correct participant, and the
 * lock reports the pool corrupt rather than serve anyone.
 */
#include <stdio.h>

#include "internal.h"

#define BK_CHOOSING (1ull << 63)
#define BK_EXCL (1ull << 62)
#define BK_TICKET (BK_EXCL - 1)

static uint64_t *word(const struct cxl_bakery *b, uint32_t j)
{
	return b->words + (uint64_t)j * b->stride;
}

static void put(const struct cxl_bakery *b, uint64_t v)
{
	cxl_nt_store64(b->pool, word(b, b->me), v);
	cxl_fence(b->pool); /* visible before we read the others' words */
}

/* Does j block us, holding ticket t (0 if none) with word v? */
static int blocks(uint64_t v, uint32_t j, uint64_t mine, uint32_t me,
		  int exclusive)
{
	uint64_t t = v & BK_TICKET;

	if (v & BK_CHOOSING)
		return 1; /* still taking a ticket: it may take a lower one */
	if (!t || t > mine || (t == mine && j > me))
		return 0; /* not interested, or behind us */
	return exclusive || (v & BK_EXCL);
}

CXL_EXPORT int cxl_bakery_lock(const struct cxl_bakery *b, int exclusive,
			       uint32_t timeout_ms)
{
	uint64_t max = 0, mine;
	uint32_t culprit = 0;
	struct cxl_backoff bo;

	put(b, BK_CHOOSING);
	for (uint32_t j = 0; j < b->n; j++) {
		uint64_t t = cxl_nt_load64(b->pool, word(b, j)) & BK_TICKET;

		if (j != b->me && t > max)
			max = t, culprit = j;
	}
	if (max >= BK_TICKET / 2) { /* 2^61 acquisitions: never reached */
		put(b, 0);	    /* withdraw */
		return cxl_seterr(CXL_ECORRUPT,
				  "lock: participant %u of %u holds ticket "
				  "%llu, which no correct participant "
				  "reaches; the lock words are corrupt "
				  "(zero them, or recreate the object)",
				  culprit, b->n, (unsigned long long)max);
	}
	mine = max + 1;
	put(b, mine | (exclusive ? BK_EXCL : 0));
	cxl_backoff_init(&bo, timeout_ms);
	for (uint32_t j = 0; j < b->n; j++) {
		if (j == b->me)
			continue;
		while (blocks(cxl_nt_load64(b->pool, word(b, j)), j, mine,
			      b->me, exclusive)) {
			if (b->idle)
				b->idle(b->idle_arg);
			if (cxl_backoff_wait(&bo)) {
				put(b, 0); /* withdraw */
				return cxl_seterr(
					CXL_ETIMEDOUT,
					"lock: participant %u of %u held or "
					"requested it for more than %u ms; is "
					"it alive?",
					j, b->n, timeout_ms);
			}
		}
	}
	return CXL_OK;
}

CXL_EXPORT void cxl_bakery_unlock(const struct cxl_bakery *b)
{
	/* the critical section's write-backs reach the pool before the
	 * release (sfence orders clflushopt and streaming stores) */
	cxl_wfence(b->pool);
	cxl_nt_store64(b->pool, word(b, b->me), 0);
	cxl_wfence(b->pool);
}
