/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Matching: a persistent send and receive are paired once, through the
 * MPI library, and from then on through the pool only. The receiver
 * creates the channel (its capacity is the receive's size) and sends its
 * descriptor to the sender in one ordinary MPI message with the request's
 * tag on its communicator; the sender opens the channel on arrival.
 * MPIS_Match never blocks, so ranks may match their sends and receives
 * in any order; the sender's side completes at the first of
 * MPIS_Is_matched (a test), MPIS_Wait on an MPIS_Imatch request, or the
 * first start (a wait). MPIS_Matchall posts all receives first, then
 * completes every request before it returns.
 * Collectives are matched collectively (stream_coll.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

int match_post(MPIS_Request r)
{
	int rc;

	if (r->kind == SR_BARRIER || r->kind == SR_ALLREDUCE) {
		rc = coll_post(r);
		if (rc == MPIS_SUCCESS)
			r->state = SR_ONGOING;
		return rc;
	}
	if (r->peer == MPI_PROC_NULL) {
		r->state = SR_MATCHED;
		return MPIS_SUCCESS;
	}
	if (r->kind == SR_RECV) {
		rc = chan_create(&r->ch, r->bytes, r->peer,
				 gpu_device_memory(r->buf), &r->desc);
		if (rc) {
			/* tell the sender (magic 0), so that its match fails
			 * instead of waiting forever; stays unmatched */
			if (r->hs != MPI_REQUEST_NULL)
				PMPI_Wait(&r->hs, MPI_STATUS_IGNORE);
			memset(&r->desc, 0, sizeof(r->desc));
			PMPI_Isend(&r->desc, sizeof(r->desc), MPI_BYTE, r->peer,
				   r->tag, r->comm, &r->hs);
			return rc;
		}
		rc = PMPI_Isend(&r->desc, sizeof(r->desc), MPI_BYTE, r->peer,
				r->tag, r->comm, &r->hs);
		if (rc != MPI_SUCCESS) {
			chan_close(&r->ch);
			return rc;
		}
		r->has_chan = true;
		r->state = SR_MATCHED;
		return MPIS_SUCCESS;
	}
	rc = PMPI_Irecv(&r->desc, sizeof(r->desc), MPI_BYTE, r->peer, r->tag,
			r->comm, &r->hs);
	if (rc == MPI_SUCCESS)
		r->state = SR_ONGOING;
	return rc;
}

/* Complete a posted match (sender: open the channel). With !block, only
 * test; returns MPIS_NOT_READY if the descriptor has not arrived. */
int match_finish(MPIS_Request r, bool block)
{
	int flag = 1, rc;

	if (r->kind == SR_RECV || r->kind == SR_MATCH || r->state != SR_ONGOING)
		return MPIS_SUCCESS;
	if (block)
		rc = PMPI_Wait(&r->hs, MPI_STATUS_IGNORE);
	else
		rc = PMPI_Test(&r->hs, &flag, MPI_STATUS_IGNORE);
	if (rc != MPI_SUCCESS)
		return rc;
	if (!flag)
		return MPIS_NOT_READY;
	if (r->kind != SR_SEND) {
		rc = coll_join(r);
		r->state = rc ? SR_UNMATCHED : SR_MATCHED;
		return rc;
	}
	rc = chan_open(&r->ch, &r->desc, r->bytes, r->peer);
	if (rc) {
		/* the pairing failed: back to unmatched, nothing kept */
		r->state = SR_UNMATCHED;
		return rc;
	}
	r->has_chan = true;
	r->state = SR_MATCHED;
	return MPIS_SUCCESS;
}

static void set_status(MPIS_Request r, MPI_Status *st)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	st->MPI_SOURCE = r->kind == SR_RECV ? r->peer : MPI_ANY_SOURCE;
	st->MPI_TAG = r->kind == SR_RECV ? r->tag : MPI_ANY_TAG;
	st->MPI_ERROR = MPI_SUCCESS;
}

static int check_unmatched(MPIS_Request *req)
{
	if (!req || !*req || (*req)->kind == SR_MATCH ||
	    (*req)->state != SR_UNMATCHED)
		return MPIS_INVALID_REQUEST_STATE;
	return MPIS_SUCCESS;
}

int MPIS_Match(MPIS_Request *req, MPI_Status *status)
{
	int rc = check_unmatched(req);

	if (rc)
		return rc;
	rc = match_post(*req);
	if (!rc) {
		/* never block here: the peer may be matching its own send */
		rc = match_finish(*req, false);
		if (rc == MPIS_NOT_READY)
			rc = MPIS_SUCCESS;
	}
	if (!rc)
		set_status(*req, status);
	return rc;
}

int MPIS_Queue_match(MPIS_Queue queue, MPIS_Request *req, MPI_Status *status)
{
	if (queue == MPIS_QUEUE_NULL)
		return MPIS_NOT_READY;
	return MPIS_Match(req, status);
}

/* Receives first, so that every descriptor is on its way before any
 * sender waits for one; then sends; collectives in the given order. */
int MPIS_Matchall(int n, MPIS_Request reqs[], MPI_Status *statuses)
{
	int rc;

	if (n < 0)
		return MPI_ERR_COUNT;
	for (int i = 0; i < n; i++) {
		rc = check_unmatched(&reqs[i]);
		if (rc)
			return rc;
		for (int j = 0; j < i; j++)
			if (reqs[j] == reqs[i])
				return MPIS_INVALID_REQUEST_STATE;
	}
	for (int pass = 0; pass < 3; pass++) {
		for (int i = 0; i < n; i++) {
			MPIS_Request r = reqs[i];
			int want = r->kind == SR_RECV	? 0
				   : r->kind == SR_SEND ? 1
							: 2;

			if (want != pass)
				continue;
			rc = match_post(r);
			if (rc)
				return rc;
		}
	}
	for (int i = 0; i < n; i++) {
		rc = match_finish(reqs[i], true);
		if (rc)
			return rc;
		if (statuses != MPI_STATUSES_IGNORE)
			set_status(reqs[i], &statuses[i]);
	}
	return MPIS_SUCCESS;
}

int MPIS_Imatch(MPIS_Request *req, MPIS_Request *match_req)
{
	MPIS_Request m;
	int rc = check_unmatched(req);

	if (rc)
		return rc;
	if (!match_req)
		return MPI_ERR_ARG;
	m = calloc(1, sizeof(*m));
	if (!m)
		return MPI_ERR_NO_MEM;
	rc = match_post(*req);
	if (rc) {
		free(m);
		return rc;
	}
	m->kind = SR_MATCH;
	m->state = SR_ONGOING;
	m->target = *req;
	*match_req = m;
	return MPIS_SUCCESS;
}

int MPIS_Is_matched(MPIS_Request *req, int *flag)
{
	int rc;

	if (!req || !*req || (*req)->kind == SR_MATCH || !flag)
		return MPIS_INVALID_REQUEST_STATE;
	rc = match_finish(*req, false);
	if (rc && rc != MPIS_NOT_READY)
		return rc;
	*flag = (*req)->state == SR_MATCHED;
	return MPIS_SUCCESS;
}
