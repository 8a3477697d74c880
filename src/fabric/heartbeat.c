/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness of endpoints, for failing operations on dead peers instead of
 * hanging.
 *
 * The heartbeat word of each endpoint (in its object's header line, which
 * only the owner writes) is advanced by libcxlshm's liveness service, the
 * one beat thread of the process (include/cxlshm/liveness.h).
 *
 * Progress watches the heartbeats of the peers it has channels with
 * (cxlfi_watch_peers): a heartbeat that has not moved for the pool's
 * CXL_PEER_TIMEOUT_MS marks the peer dead.
 */
#include "cxlfi.h"

static uint64_t *beat_word(struct cxlfi_ep *ep)
{
	return &((uint64_t *)ep->self.ptr)[CXLFI_HDR_BEAT];
}

int cxlfi_heartbeat_add(struct cxlfi_ep *ep)
{
	int rc = cxl_beat_add(ep->dom->pool, beat_word(ep));

	if (rc)
		cxlfi_report("cannot start the heartbeat of endpoint %u: %s",
			     ep->index, cxl_errmsg());
	return rc ? -FI_EOTHER : 0;
}

void cxlfi_heartbeat_remove(struct cxlfi_ep *ep)
{
	cxl_beat_remove(ep->dom->pool, beat_word(ep));
}

/* Start watching a peer whose endpoint object is open. */
void cxlfi_watch_start(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	const uint64_t *hdr = pe->epobj.ptr;

	cxl_watch_start(ep->dom->pool, &hdr[CXLFI_HDR_BEAT], &pe->hb,
			cxlfi_watch_now_ms());
}

/*
 * Whether peer pe declared this endpoint dead: we did not run for longer
 * than its CXL_PEER_TIMEOUT_MS (stopped, swapped out, starved) and it
 * has failed and forgotten what it had with us. Going on would leave our
 * sends to it unread and our receives from it unanswered, so we fail
 * them too, once, with a line on stderr.
 */
static bool declared_dead_by(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	const uint64_t *hdr = pe->epobj.ptr;
	uint64_t v = cxl_nt_load64(
		ep->dom->pool, &cxlfi_ep_verdicts(pe->epobj.ptr)[ep->index]);

	if (v != ep->gen)
		return false;
	cxlfi_report("endpoint %u (host %llu, pid %llu) declared endpoint %u "
		     "of this process dead: this process did not run for "
		     "longer than its CXL_PEER_TIMEOUT_MS (stopped, "
		     "swapped out or starved of CPU?); operations with it fail "
		     "with FI_EHOSTUNREACH. Raise CXL_PEER_TIMEOUT_MS on "
		     "every rank if such pauses are expected",
		     pe->index, (unsigned long long)hdr[CXLFI_HDR_HOST],
		     (unsigned long long)hdr[CXLFI_HDR_PID], ep->index);
	cxlfi_up.peer_dead(ep, pe);
	return true;
}

/* Called from progress; looks at most every CXLFI_WATCH_MS. A peer found
 * dead has its operations failed through the upcall cxlfi_up.peer_dead.
 * The clock is read once per CXLFI_WATCH_CALLS progress calls (counted by
 * cxlfi_progress): it cost more than the rest of a poll of the network
 * link, and even calls that sleep (FI_CXL_IDLE_SLEEP_US) add at most a
 * few ms to the period. */
void cxlfi_watch_peers(struct cxlfi_ep *ep)
{
	uint64_t now, timeout;

	if (ep->progress_calls % CXLFI_WATCH_CALLS)
		return;
	now = cxlfi_watch_now_ms();
	if (now - ep->watch_ms < CXLFI_WATCH_MS)
		return;
	ep->watch_ms = now;
	timeout = cxl_pool_peer_timeout_ms(ep->dom->pool);
	for (size_t j = 0; j < cxlfi_params.max_eps; j++) {
		struct cxlfi_peer *pe = ep->peers[j];
		const uint64_t *hdr;
		uint64_t still;

		if (!pe || pe->dead || !pe->epobj.pool)
			continue;
		hdr = pe->epobj.ptr;
		if (declared_dead_by(ep, pe))
			continue;
		still = cxl_watch_still_ms(ep->dom->pool, &hdr[CXLFI_HDR_BEAT],
					   &pe->hb, now);
		if (still <= timeout)
			continue;
		if (cxl_watch_last(&pe->hb) == CXLFI_BEAT_CLOSED) {
			/* closed normally (MPI_Finalize), no news; only now,
			 * as for a death, so that what it sent before is
			 * taken first */
			CXLFI_INFO(FI_LOG_EP_DATA,
				   "endpoint %u closed; its operations fail "
				   "with FI_EHOSTUNREACH\n",
				   pe->index);
			cxlfi_up.peer_dead(ep, pe);
		} else {
			/* on stderr: the MPI library says only "No route
			 * to host", not which peer or which setting */
			cxlfi_report("endpoint %u (host %llu, pid %llu) has "
				     "not shown a heartbeat for %llu ms "
				     "(CXL_PEER_TIMEOUT_MS): declared dead; "
				     "its operations fail with "
				     "FI_EHOSTUNREACH",
				     pe->index,
				     (unsigned long long)hdr[CXLFI_HDR_HOST],
				     (unsigned long long)hdr[CXLFI_HDR_PID],
				     (unsigned long long)still);
			/* Tell it, should it run again (a stopped process):
			 * the verdict word is ours alone; an NT store, fenced,
			 * so that it reaches the pool before we forget the
			 * peer. */
			cxl_flag_set(
				ep->dom->pool,
				&cxlfi_ep_verdicts(ep->self.ptr)[pe->index],
				pe->gen);
			cxlfi_up.peer_dead(ep, pe);
			/* the caller most likely aborts the job next */
			cxlfi_report_linger();
		}
	}
}
