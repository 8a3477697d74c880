/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Single-producer single-consumer ring in pool memory (cMPI §3.3), built so
 * that no cross-host atomic instruction and no shared cache line is needed:
 *
 *  - line 0 is written once at init (geometry), line 1 only by the
 *    producer, line 2 only by the consumer (its head index);
 *  - every 64-byte line of a cell starts with an 8-byte stamp, the message
 *    sequence number + 1. A message is complete when all its lines carry
 *    the expected stamp, so the producer needs one fence per message and
 *    no separate tail index;
 *  - the consumer publishes its head with a non-temporal store, batched.
 *
 * Payload capacity of a cell of L lines: 48 + 56 * (L - 1) bytes; a
 * message may go on into the next span - 1 cells (cxl_ring_max_msg), its
 * lines still stamped one by one, so that no fence separates its header
 * from its data and the consumer invalidates its lines in one sweep.
 */
#ifndef CXLSHM_RING_H
#define CXLSHM_RING_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cxl_ring cxl_ring;

enum cxl_ring_role {
	CXL_RING_PRODUCER = 1,
	CXL_RING_CONSUMER = 2
};

struct cxl_ring_attr {
	uint32_t cell_size;  /* bytes, multiple of 64, >= 64 (default 256) */
	uint32_t ncells;     /* >= 2 (default 64) */
	uint32_t poll_lines; /* lines invalidated per poll (default 2) */
	uint32_t head_batch; /* consumer publishes head every N (default n/4) */
	uint32_t span;	     /* cells one message may take (default 1; at
			      * most ncells - head_batch + 1) */
};

/* send() flags */
#define CXL_RING_NOFENCE 0x1u /* caller issues cxl_ring_fence() later */

/* Bytes of pool memory a ring with these attributes needs. */
size_t cxl_ring_footprint(const struct cxl_ring_attr *attr);

/* Largest message a cell of cell_size bytes carries. */
size_t cxl_ring_cell_payload(uint32_t cell_size);

/*
 * Initialise a ring in [mem, mem+len) of pool memory (called once, by
 * either side, before the other attaches) and write it back.
 */
int cxl_ring_init(cxl_pool *pool, void *mem, size_t len,
		  const struct cxl_ring_attr *attr);

/* Attach to an initialised ring; geometry is validated against len. */
int cxl_ring_attach(cxl_pool *pool, void *mem, size_t len,
		    enum cxl_ring_role role, cxl_ring **out);

void cxl_ring_detach(cxl_ring *r);

/* Convenience: the ring as a named arena object. */
int cxl_ring_create(cxl_pool *pool, const char *name,
		    const struct cxl_ring_attr *attr, enum cxl_ring_role role,
		    cxl_ring **out);
int cxl_ring_open(cxl_pool *pool, const char *name, enum cxl_ring_role role,
		  cxl_ring **out);
/* Detach and close the object opened by create/open. */
void cxl_ring_close(cxl_ring *r);

/* Producer: CXL_EAGAIN when full. tag is delivered with the message. */
int cxl_ring_send(cxl_ring *r, const void *buf, size_t len, uint32_t tag,
		  unsigned flags);

/* Producer: would a one-cell send go through now? Refreshes the head
 * (one uncached load) only when the ring looks full. */
int cxl_ring_send_ready(cxl_ring *r);

/* Producer: one fence for all CXL_RING_NOFENCE sends since the last. */
void cxl_ring_fence(cxl_ring *r);

/*
 * Consumer: CXL_EAGAIN when empty; CXL_ETRUNC (message left in the ring,
 * *len set to its size) when cap is too small; CXL_ECORRUPT when the cell
 * fails validation.
 */
int cxl_ring_recv(cxl_ring *r, void *buf, size_t cap, size_t *len,
		  uint32_t *tag);

/*
 * Consumer: invalidate [p, p + n) (data a message named, such as a data
 * slot) and, in the same sweep with one fence, the lines the next
 * cxl_ring_recv polls. That call then reads the next message's stamp
 * without a sweep of its own; if the message was not complete when the
 * lines were swept, it sweeps as usual. Other memory: cxl_inval(p, n).
 */
void cxl_ring_inval_with(cxl_ring *r, const void *p, size_t n);

/*
 * Consumer, for a stream: once a message has passed its checks, sweep the
 * lines the next one would take if as long (one fence) and start loading
 * them before copying this one out, so that their misses overlap the copy
 * and the caller's work. The next cxl_ring_recv then reads its stamp
 * without a sweep of its own, as after cxl_ring_inval_with. When the next
 * message was not there yet, that look was one sweep too many: turn this
 * off (the default) for single messages.
 */
void cxl_ring_read_ahead(cxl_ring *r, int on);

/*
 * Consumer: publish the head (every head_batch cells) with a non-temporal
 * store and no fence of its own: it becomes visible by the caller's next
 * fence (cxl_ring_fence, or any fence of this thread), which the caller
 * must issue soon; a stream of receives then pays no fence for the head.
 * cxl_ring_head_unfenced tells (and forgets) whether a receive since the
 * last call stored the head that way.
 */
void cxl_ring_lazy_head(cxl_ring *r, int on);
int cxl_ring_head_unfenced(cxl_ring *r);

/* Largest message: the payload of span cells. */
size_t cxl_ring_max_msg(const cxl_ring *r);

/* The ring's geometry as initialised (defaults filled in). */
void cxl_ring_attr_get(const cxl_ring *r, struct cxl_ring_attr *out);

#ifdef __cplusplus
}
#endif
#endif
