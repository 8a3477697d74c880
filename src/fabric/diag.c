/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an endpoint is waiting for, when a wait lasts (docs/fabric.md,
 * "Diagnosing a hang"). A CQ read that has found nothing for
 * FI_CXL_HANG_REPORT_MS while operations are pending describes, per bound
 * endpoint: the posted receives that nothing matched (tags, sources), the
 * unexpected messages that no receive took, sends queued for ring space
 * (their receiver does not drain), sends waiting for an acknowledgement,
 * RMA reads without an answer, messages half received, and the peers
 * declared dead. The report goes to the libfabric log (FI_LOG_LEVEL=warn,
 * FI_LOG_PROV=cxl) and, with FI_CXL_STATS=1, to stderr; it repeats at
 * most once per FI_CXL_HANG_REPORT_MS.
 */
#include <stdarg.h>
#include <stdio.h>

#include "cxlfi.h"

#define SHOW 4 /* entries listed per kind */

static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	CXLFI_WARN(FI_LOG_EP_DATA, "%s\n", line);
	if (cxlfi_params.stats)
		fprintf(stderr, "cxl-hang: %s\n", line);
}

/* Posted receives, except multi-receive buffers (MPICH keeps some posted
 * all the time: they are not waits). */
static size_t count_posted(const struct cxlfi_rx *r)
{
	size_t n = 0;

	for (; r; r = r->next)
		n += !(r->flags & FI_MULTI_RECV);
	return n;
}

static void show_posted(const struct cxlfi_ep *ep, const struct cxlfi_rx *r,
			const char *kind)
{
	size_t n = count_posted(r), shown = 0;

	if (!n)
		return;
	say("endpoint %u: %zu %s receive(s) posted, unmatched", ep->index, n,
	    kind);
	for (; r && shown < SHOW; r = r->next) {
		char src[32];

		if (r->flags & FI_MULTI_RECV)
			continue;
		shown++;

		if (r->src == FI_ADDR_UNSPEC)
			snprintf(src, sizeof(src), "any source");
		else
			snprintf(src, sizeof(src), "endpoint %u", r->src_index);
		say("  tag %#llx ignore %#llx from %s, %zu bytes",
		    (unsigned long long)r->tag, (unsigned long long)r->ignore,
		    src, r->len);
	}
}

bool cxlfi_diag_busy(const struct cxlfi_ep *ep)
{
	if (count_posted(ep->trecv) || count_posted(ep->recv) || ep->unexp ||
	    ep->txpend || ep->xa_waiting || ep->reads)
		return true;
	for (const struct cxlfi_peer *pe = ep->active; pe; pe = pe->next_active)
		if (pe->rx_left)
			return true;
	return false;
}

void cxlfi_diag_pending(const struct cxlfi_ep *ep, uint64_t waited_ms)
{
	size_t nu = 0, ndead = 0, nreads = 0;

	if (waited_ms == UINT64_MAX)
		say("endpoint %u (gen %u) closed with operations pending:",
		    ep->index, ep->gen);
	else
		say("endpoint %u (gen %u): no completion for %llu ms; "
		    "pending:",
		    ep->index, ep->gen, (unsigned long long)waited_ms);
	show_posted(ep, ep->trecv, "tagged");
	show_posted(ep, ep->recv, "untagged");
	for (const struct cxlfi_unexp *u = ep->unexp; u; u = u->next)
		nu++;
	if (nu)
		say("endpoint %u: %zu unexpected message(s) (%zu bytes) that "
		    "no receive took",
		    ep->index, nu, ep->unexp_bytes);
	nu = 0;
	for (const struct cxlfi_unexp *u = ep->unexp; u && nu < SHOW;
	     u = u->next, nu++)
		say("  from endpoint %u, %s tag %#llx, %zu of %zu bytes%s",
		    u->src_index, u->tagged ? "tagged" : "untagged",
		    (unsigned long long)u->tag, u->have, u->len,
		    u->claimed ? ", claimed by a peek" : "");
	for (const struct cxlfi_rdreq *q = ep->reads; q; q = q->next)
		nreads++;
	if (nreads)
		say("endpoint %u: %zu RMA read(s) or atomic(s) without an "
		    "answer",
		    ep->index, nreads);
	if (ep->xa_waiting)
		say("endpoint %u: %zu send(s) waiting for their receiver's "
		    "acknowledgement (delivery complete, pointer passing, "
		    "RMA write)",
		    ep->index, ep->xa_waiting);
	for (size_t j = 0; ep->peers && j < cxlfi_params.max_eps; j++) {
		const struct cxlfi_peer *pe = ep->peers[j];

		if (!pe)
			continue;
		if (pe->dead)
			ndead++;
		if (pe->ntx)
			say("endpoint %u: %zu send(s) to endpoint %u queued "
			    "for ring space: it does not drain its channel%s",
			    ep->index, pe->ntx, pe->index,
			    pe->dead ? " (declared dead)" : "");
		if (pe->rx_left)
			say("endpoint %u: a message from endpoint %u is half "
			    "received (%zu of %zu bytes)",
			    ep->index, pe->index, pe->rx_total - pe->rx_left,
			    pe->rx_total);
	}
	if (ndead)
		say("endpoint %u: %zu peer(s) declared dead (no heartbeat "
		    "for CXL_PEER_TIMEOUT_MS)",
		    ep->index, ndead);
}
