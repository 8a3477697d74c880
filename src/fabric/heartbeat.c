/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness of endpoints, for failing operations on dead peers instead of
 * hanging.
 *
 * Each process runs one thread that advances the heartbeat word of each of
 * its endpoints every CXLFI_HEARTBEAT_MS (a non-temporal store into the
 * endpoint object's header line, which only the owner writes). It runs
 * regardless of the application, so a rank that computes for hours without
 * calling into MPI is still alive to its peers.
 *
 * Progress watches the heartbeats of the peers it has channels with
 * (cxlfi_watch_peers): a heartbeat that has not moved for
 * FI_CXL_PEER_TIMEOUT_MS marks the peer dead.
 */
#include <stdlib.h>
#include <time.h>

#include "cxlfi.h"

static pthread_mutex_t hb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cxlfi_ep **hb_eps;
static size_t hb_n, hb_cap;
static pthread_t hb_thread;
static bool hb_running, hb_stop;

static void *hb_main(void *arg)
{
	struct timespec ts = { 0, CXLFI_HEARTBEAT_MS * 1000000L };
	uint64_t beat = 0;

	(void)arg;
	pthread_mutex_lock(&hb_lock);
	while (!hb_stop) {
		beat++;
		for (size_t i = 0; i < hb_n; i++) {
			uint64_t *hdr = hb_eps[i]->self.ptr;

			cxl_flag_set(hb_eps[i]->dom->pool, &hdr[CXLFI_HDR_BEAT],
				     beat);
		}
		/* the host is alive too (cxlpool gc --dead-host asks) */
		if (hb_n)
			cxl_host_beat(hb_eps[0]->dom->pool);
		pthread_mutex_unlock(&hb_lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&hb_lock);
	}
	pthread_mutex_unlock(&hb_lock);
	return NULL;
}

int cxlfi_heartbeat_add(struct cxlfi_ep *ep)
{
	int rc = 0;

	pthread_mutex_lock(&hb_lock);
	if (hb_n == hb_cap) {
		size_t cap = hb_cap ? 2 * hb_cap : 8;
		struct cxlfi_ep **v = realloc(hb_eps, cap * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&hb_lock);
			return -FI_ENOMEM;
		}
		hb_eps = v;
		hb_cap = cap;
	}
	hb_eps[hb_n++] = ep;
	if (!hb_running) {
		hb_stop = false;
		if (pthread_create(&hb_thread, NULL, hb_main, NULL) == 0)
			hb_running = true;
		else
			rc = -FI_EOTHER;
	}
	pthread_mutex_unlock(&hb_lock);
	if (rc)
		CXLFI_WARN(FI_LOG_EP_CTRL,
			   "cannot start the heartbeat thread: "
			   "peers would declare this endpoint dead\n");
	return rc;
}

void cxlfi_heartbeat_remove(struct cxlfi_ep *ep)
{
	bool join = false;

	pthread_mutex_lock(&hb_lock);
	for (size_t i = 0; i < hb_n; i++)
		if (hb_eps[i] == ep) {
			hb_eps[i] = hb_eps[--hb_n];
			break;
		}
	if (!hb_n && hb_running) {
		hb_stop = true;
		hb_running = false;
		join = true;
	}
	if (!hb_n) { /* the thread sees hb_n == 0 and touches nothing */
		free(hb_eps);
		hb_eps = NULL;
		hb_cap = 0;
	}
	pthread_mutex_unlock(&hb_lock);
	if (join)
		pthread_join(hb_thread, NULL);
}

/* Start watching a peer whose endpoint object is open. */
void cxlfi_watch_start(struct cxlfi_ep *ep, struct cxlfi_peer *pe)
{
	const uint64_t *hdr = pe->epobj.ptr;

	pe->hb_last = cxl_nt_load64(ep->dom->pool, &hdr[CXLFI_HDR_BEAT]);
	pe->hb_ms = cxlfi_watch_now_ms();
}

/*
 * Whether peer pe declared this endpoint dead: we did not run for longer
 * than its FI_CXL_PEER_TIMEOUT_MS (stopped, swapped out, starved) and it
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
		     "longer than its FI_CXL_PEER_TIMEOUT_MS (stopped, "
		     "swapped out or starved of CPU?); operations with it fail "
		     "with FI_EHOSTUNREACH. Raise FI_CXL_PEER_TIMEOUT_MS on "
		     "every rank if such pauses are expected",
		     pe->index, (unsigned long long)hdr[CXLFI_HDR_HOST],
		     (unsigned long long)hdr[CXLFI_HDR_PID], ep->index);
	cxlfi_up.peer_dead(ep, pe);
	return true;
}

/* Called from progress; looks at most every CXLFI_WATCH_MS. A peer found
 * dead has its operations failed through the upcall cxlfi_up.peer_dead. */
void cxlfi_watch_peers(struct cxlfi_ep *ep)
{
	uint64_t now = cxlfi_watch_now_ms();

	if (now - ep->watch_ms < CXLFI_WATCH_MS)
		return;
	ep->watch_ms = now;
	for (size_t j = 0; j < cxlfi_params.max_eps; j++) {
		struct cxlfi_peer *pe = ep->peers[j];
		const uint64_t *hdr;
		uint64_t hb;

		if (!pe || pe->dead || !pe->epobj.pool)
			continue;
		hdr = pe->epobj.ptr;
		if (declared_dead_by(ep, pe))
			continue;
		hb = cxl_nt_load64(ep->dom->pool, &hdr[CXLFI_HDR_BEAT]);
		if (hb != pe->hb_last) {
			pe->hb_last = hb;
			pe->hb_ms = now;
		} else if (now - pe->hb_ms > cxlfi_params.peer_timeout_ms &&
			   hb == CXLFI_BEAT_CLOSED) {
			/* closed normally (MPI_Finalize), no news; only now,
			 * as for a death, so that what it sent before is
			 * taken first */
			CXLFI_INFO(FI_LOG_EP_DATA,
				   "endpoint %u closed; its operations fail "
				   "with FI_EHOSTUNREACH\n",
				   pe->index);
			cxlfi_up.peer_dead(ep, pe);
		} else if (now - pe->hb_ms > cxlfi_params.peer_timeout_ms) {
			/* on stderr: the MPI library says only "No route
			 * to host", not which peer or which setting */
			cxlfi_report("endpoint %u (host %llu, pid %llu) has "
				     "not shown a heartbeat for %llu ms "
				     "(FI_CXL_PEER_TIMEOUT_MS): declared dead; "
				     "its operations fail with "
				     "FI_EHOSTUNREACH",
				     pe->index,
				     (unsigned long long)hdr[CXLFI_HDR_HOST],
				     (unsigned long long)hdr[CXLFI_HDR_PID],
				     (unsigned long long)(now - pe->hb_ms));
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
