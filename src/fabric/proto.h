/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider's protocol over pool rings, in layers that call downward
 * only (every function runs with the domain lock held):
 *
 *   progress.c  progress dispatch: drains the channels, decodes each ring
 *               op and hands it to the layer below; endpoint close
 *   chan.c      channels and peers: endpoint publication, per-pair rings,
 *               the inbox, peer incarnations, resolving a destination
 *   recv.c      receiving and matching: posted and unexpected messages,
 *               multi-receive, peek/claim, cancel, a dead peer's receives
 *   send.c      sending: per-peer send queues, completions of sends
 *   xfer.c      message transfer on a channel: cells out (eager, chunked,
 *               through the transfer area or by pointer) and the chunks of
 *               a large message in
 *
 * below them bulk.c (transfer area), cq.c, cntr.c, heartbeat.c, mrtab.c, av.c.
 * What runs against that direction, a CQ read that progresses, a peer
 * the heartbeat watch finds dead, and the RMA and atomic requests that
 * arrive on a channel, goes through the table cxlfi_up (cxlfi.h), set
 * once when the first endpoint opens (ep.c).
 *
 * A channel is one SPSC ring "cxlfi.ch.<A>.<B>" per ordered pair of
 * endpoints that talk, created by the sender on its first send. Ring
 * messages carry the operation in the ring's 32-bit tag:
 *
 *   OP_EAGER  [tag u64][data u64 if OPF_DATA][payload]    whole message
 *   OP_FIRST  [tag u64][data u64 if OPF_DATA][total u64][payload]
 *             with OPF_SLOT: [OP_BULK descriptor][tag]...[total], no
 *             payload: all of it is in the descriptor's data slot
 *   OP_CONT   [payload]                                    later chunks
 *   OP_BULK   [tok u32][len u32][gen u64]   later chunk in a data slot
 *   OP_PTR    [tok u32][0 u32][gen u64][off u64][len u64]
 *                                       the rest, in the pool at off
 *   OP_ACK    [tok u32][0 u32][gen u64]   message complete: return tok
 *             (not after a delivery-complete send whose last bytes went
 *             in a data slot: CXLFI_OPF_RETURN, cxlfi.h)
 * (the last three use the sender's transfer area, bulk.c)
 *
 * A sender never interleaves two chunked messages on one channel (its
 * per-peer queue is FIFO), so the chunks of a message arrive back to back.
 * Per-pair order (FI_ORDER_SAS) follows from the ring being FIFO.
 */
#ifndef CXLFI_PROTO_H
#define CXLFI_PROTO_H

#include "cxlfi.h"

#define OP_EAGER 1u
#define OP_FIRST 2u
#define OP_CONT 3u
#define OP_MASK 0xffu
#define OPF_TAGGED (1u << 8)
#define OPF_DATA (1u << 9)
#define OPF_WRITE (1u << 10)   /* RMA write: [key][addr] lead the header */
#define OPF_READREQ (1u << 11) /* RMA read request (rma.c) */
#define OPF_READRSP                                      \
	(1u << 12) /* its answer: tag = request id; with \
		    * OPF_DATA, data = the target's error */
/* atomic request (atomic.c), answered with OPF_READRSP */
#define OPF_ATOMREQ (1u << 13)
/* an OP_ACK follows this message (delivery complete, RMA write) */
#define OPF_ACKNEXT (1u << 14)
/* OP_FIRST: a bulk descriptor (CXLFI_DESC_BULK_SIZE) leads the header,
 * and its data slot holds the whole payload */
#define OPF_SLOT (1u << 15)

/* chan.c */
/* Look for channels announced to us, in the next inbox lines. */
void cxlfi_chan_scan_inbox(struct cxlfi_ep *ep);
/* Close an endpoint once its sends had their time (progress.c). */
void cxlfi_chan_unpublish(struct cxlfi_ep *ep);

/* recv.c */
/* A message (or its first chunk) arrived from peer pe. */
int cxlfi_rx_on_message(struct cxlfi_ep *ep, struct cxlfi_peer *pe, uint32_t op,
			const uint8_t *m, size_t n);
/* What an xfer.c chunk handler returned for the message in progress from
 * pe: 1, it is complete (report it); 0, more to come; < 0, it fails. */
void cxlfi_rx_chunk_done(struct cxlfi_ep *ep, struct cxlfi_peer *pe, int rc);
/* The sender of the message in progress from pe is gone or broke it: fail
 * the matched receive with err, or drop the unexpected message. */
void cxlfi_rx_abort(struct cxlfi_ep *ep, struct cxlfi_peer *pe, int err);
/* Free the receive queues, the descriptor cache and unexpected messages. */
void cxlfi_rx_free_all(struct cxlfi_ep *ep);

/* send.c */
/* Retry the queued sends of every blocked peer, in order. */
void cxlfi_tx_pending(struct cxlfi_ep *ep);
/* Complete (err: FI_* or 0) and free a queued or waiting send. */
void cxlfi_tx_done(struct cxlfi_ep *ep, struct cxlfi_tx *t, int err);
void cxlfi_tx_free_cache(struct cxlfi_ep *ep); /* at close */
/* What a send reports when it is done (err: 0 or its failure): CQ entry
 * or error, counter, statistics; t stays the caller's. */
void cxlfi_tx_report(struct cxlfi_ep *ep, const struct cxlfi_tx *t, int err);
/* Fail all we sent or asked of pe that it will never take up. */
void cxlfi_tx_fail_peer(struct cxlfi_ep *ep, struct cxlfi_peer *pe);

/* xfer.c */
/* Push cells of t. 1: all sent; 0: ring full; < 0: error. */
int cxlfi_xfer_push(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    struct cxlfi_tx *t);
/* Copy n bytes to offset off of receive r, as far as its buffer goes. */
void cxlfi_xfer_copy(struct cxlfi_rx *r, size_t off, const void *p, size_t n);
/* The later parts of a message in progress from pe, by ring op (OP_CONT,
 * OP_BULK, OP_PTR): as cxlfi_rx_chunk_done takes them. */
int cxlfi_xfer_chunk(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		     const uint8_t *m, size_t n);
int cxlfi_xfer_bulk(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
		    const uint8_t *m, size_t n, bool waited);
int cxlfi_xfer_ptr(struct cxlfi_ep *ep, struct cxlfi_peer *pe, const uint8_t *m,
		   size_t n);

#endif
