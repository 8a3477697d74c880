/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pool channel of a matched send/receive pair: a ring of nslots
 * message slots (CXLMPI_STREAM_SLOTS, 4 by default), each one header line
 * written only by the sender and cap bytes of data, and one credit line
 * written only by the receiver. Message k (from 1) uses slot (k-1) % nslots;
 * the sender may fill it once the receiver has consumed message k - nslots.
 * No tag matching and no message through the MPI library: a copy, a flush
 * and one flag.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

/*
 * CXLMPI_STREAM_SLOTS: 1..STREAM_MAX_SLOTS; 0 if invalid. Unset: 16
 * slots for a capacity of up to SLOTS_SMALL_CAP (at most 66 KiB of pool
 * per channel), else 4. More slots make the sender re-read the credit
 * and the receiver publish it less often (chan_credit: every half of the
 * slots); each is a device round trip or write (docs/benchmarks.md,
 * "Decisions").
 */
#define SLOTS_SMALL_CAP 4096u
static uint64_t slots_from_env(uint64_t cap)
{
	uint32_t v = cxlmpi_config()->stream_slots;

	if (!v)
		return cap <= SLOTS_SMALL_CAP ? STREAM_MAX_SLOTS : 4;
	return v;
}

/* this thread has issued write-backs or NT stores that no fence has
 * completed yet (chan_drain) */
static _Thread_local bool chan_unfenced;

/* flags of this thread's sends whose data is written but not yet fenced
 * (chan_flags_out) */
#define FLAGS_MAX 32
/* Largest message whose flag waits for chan_flags_out: deferring the
 * flags of small sends saves fences, while a large one is better seen at
 * once, so that the receiver copies it out while the next is written
 * (docs/benchmarks.md, "Decisions"). */
#define FLAG_DEFER_MAX 4096u
static _Thread_local struct {
	uint64_t *at, v;
} flag_q[FLAGS_MAX];
static _Thread_local unsigned nflag_q;

/* Lines of a message of len bytes in stamped lines: the flag line, then
 * stamped lines. For len <= CHAN_SMALL never more than a slot of 64 +
 * stream_round_line(len) holds (1 + ceil((len - 48) / 56) <= 1 + ceil(len /
 * 64)); a channel that takes larger ones in stamped lines has longer
 * slots (slot_stride). */
static unsigned small_lines(uint64_t len)
{
	if (len <= CHAN_INLINE)
		return 1;
	return 1 + (unsigned)((len - CHAN_INLINE + CHAN_LINE_DATA - 1) /
			      CHAN_LINE_DATA);
}

/* The largest message a channel of capacity cap sends in stamped lines:
 * every message when cap <= CHAN_STAMP_MAX, else those of CHAN_SMALL
 * bytes or fewer. Both sides know cap from the descriptor. */
static uint64_t stamp_max(uint64_t cap)
{
	return cap <= CHAN_STAMP_MAX ? cap : CHAN_SMALL;
}

/* A plain channel's: only messages that fit the flag's line. */
static uint64_t plain_stamp_max(uint64_t cap)
{
	return cap < CHAN_INLINE ? cap : CHAN_INLINE;
}

/* Bytes per slot: the header line and the data, or the stamped lines of
 * the largest stamped message (smax, 0: none), whichever is longer. */
static uint64_t slot_stride(uint64_t cap, uint64_t smax)
{
	uint64_t plain = CXL_LINE + stream_round_line(cap);
	uint64_t stamped = (uint64_t)small_lines(smax) * CXL_LINE;

	return stamped > plain ? stamped : plain;
}

static uint64_t *slot_hdr(struct chan *c, uint64_t k)
{
	return (uint64_t *)(c->base + CHAN_SLOTS +
			    ((k - 1) % c->nslots) * c->stride);
}

uint64_t *chan_slot(const struct chan *c, uint64_t k)
{
	return (uint64_t *)(c->base + CHAN_SLOTS +
			    ((k - 1) % c->nslots) * c->stride);
}

unsigned chan_lines(uint64_t len)
{
	return small_lines(len);
}

bool chan_stamped(const struct chan *c, uint64_t len)
{
	return c->smax && len <= c->smax;
}

int chan_create(struct chan *c, uint64_t cap, int peer, bool plain,
		struct chan_desc *d)
{
	cxl_pool *p = stream_pool();
	struct chan_hdr *h;
	int rc;

	if (!p)
		return MPIS_NOT_READY;
	memset(c, 0, sizeof(*c));
	c->nslots = slots_from_env(cap);
	c->cap = cap;
	/* a receive into GPU memory: its messages are read in one copy,
	 * not line by line, but those that fit the flag's line go there,
	 * so that one read of the line gets the flag and the data */
	c->smax = plain ? plain_stamp_max(cap) : stamp_max(cap);
	c->stride = slot_stride(cap, c->smax);
	stream_obj_name(c->name, sizeof(c->name), "chan");
	if (cxl_obj_create(p, c->name, CHAN_SLOTS + c->nslots * c->stride,
			   CXL_OBJ_ZERO, &c->obj))
		return stream_fail(
			MPI_ERR_NO_MEM,
			"no pool memory for a channel of %llu "
			"slots of %llu bytes (%s); enlarge the pool "
			"(CXL_POOL_SIZE) or lower CXLMPI_STREAM_SLOTS",
			(unsigned long long)c->nslots, (unsigned long long)cap,
			cxl_errmsg());
	c->base = c->obj.ptr;
	c->creator = true;
	c->peer = peer;
	rc = beat_get(d->beat);
	if (rc) {
		chan_close(c);
		return rc;
	}
	c->has_beat = true;
	h = (struct chan_hdr *)c->base;
	h->magic = CHAN_MAGIC;
	h->nslots = c->nslots;
	h->cap = cap;
	h->stride = c->stride;
	h->size = c->obj.size;
	h->smax = c->smax;
	/* the header reaches the pool before the descriptor is sent */
	cxl_flush(p, h, sizeof(*h));
	cxl_wfence(p);
	memset(d->name, 0, sizeof(d->name));
	d->magic = CHAN_MAGIC;
	d->nslots = c->nslots;
	d->cap = cap;
	d->stride = c->stride;
	d->size = c->obj.size;
	d->smax = c->smax;
	snprintf(d->name, sizeof(d->name), "%s", c->name);
	return MPIS_SUCCESS;
}

/*
 * The sender's line: the name of its heartbeat, so that a receiver
 * waiting on this channel can tell a dead sender from a slow one. Word by
 * word with NT stores, the name before the magic that announces it.
 */
static int publish_beat(struct chan *c, uint64_t need)
{
	cxl_pool *p = c->obj.pool;
	uint64_t *line = (uint64_t *)(c->base + CHAN_SENDER);
	int rc;

	/* word 7: our size, for a receiver on a GPU stream (its copy engine
	 * copies a fixed length); fenced with the name below */
	cxl_nt_store64(p, line + 7, need);
	rc = beat_publish(p, line + 1);
	if (rc) {
		chan_close(c);
		return rc;
	}
	c->has_beat = true;
	/* the name and size are in the pool (beat_publish fenced) before
	 * the magic */
	cxl_nt_store64(p, line, CHAN_MAGIC);
	cxl_wfence(p);
	return MPIS_SUCCESS;
}

/* The sender opens the receiver's channel; need: the bytes it sends. */
int chan_open(struct chan *c, const struct chan_desc *d, uint64_t need,
	      int peer)
{
	cxl_pool *p = stream_pool();
	const struct chan_hdr *h;

	if (!p)
		return MPIS_NOT_READY;
	memset(c, 0, sizeof(*c));
	if (!d->magic)
		return stream_fail(
			MPI_ERR_OTHER,
			"the receiver (rank %d) could not create the "
			"channel; its own message names the cause",
			peer);
	/* the descriptor came from another process: check it all */
	if (d->magic != CHAN_MAGIC || !memchr(d->name, 0, sizeof(d->name)) ||
	    d->nslots < 1 || d->nslots > STREAM_MAX_SLOTS ||
	    d->cap > STREAM_MAX_BYTES ||
	    (d->smax != stamp_max(d->cap) &&
	     d->smax != plain_stamp_max(d->cap)) ||
	    d->stride != slot_stride(d->cap, d->smax) ||
	    d->size < CHAN_SLOTS + d->nslots * d->stride ||
	    !beat_name_ok(d->beat))
		return stream_fail(MPI_ERR_OTHER,
				   "bad channel descriptor from the receiver "
				   "(version mismatch of libcxlmpi between "
				   "the ranks?)");
	if (need > d->cap)
		return stream_fail(MPI_ERR_TRUNCATE,
				   "send of %llu bytes matched with a receive "
				   "of %llu bytes; make the receive larger",
				   (unsigned long long)need,
				   (unsigned long long)d->cap);
	if (cxl_obj_open(p, d->name, &c->obj))
		return stream_fail(MPI_ERR_OTHER,
				   "cannot open channel %s (%s); both ranks "
				   "need the same pool and CXL_JOB",
				   d->name, cxl_errmsg());
	h = c->obj.ptr;
	/* read the receiver's header from the pool, not a stale line */
	cxl_inval(p, h, sizeof(*h));
	if (c->obj.size < d->size || h->magic != CHAN_MAGIC ||
	    h->nslots != d->nslots || h->cap != d->cap ||
	    h->stride != d->stride || h->size != d->size ||
	    h->smax != d->smax) {
		cxl_obj_close(&c->obj);
		return stream_fail(MPI_ERR_OTHER,
				   "channel %s in the pool does not match its "
				   "descriptor",
				   d->name);
	}
	snprintf(c->name, sizeof(c->name), "%s", d->name);
	c->nslots = d->nslots;
	c->cap = d->cap;
	c->stride = d->stride;
	c->smax = d->smax;
	c->base = c->obj.ptr;
	c->peer = peer;
	memcpy(c->peer_beat, d->beat, sizeof(c->peer_beat));
	return publish_beat(c, need);
}

void chan_close(struct chan *c)
{
	if (!c->base)
		return;
	cxl_obj_close(&c->obj);
	if (c->creator)
		cxl_obj_destroy(stream_pool(), c->name);
	c->base = NULL;
	watch_close(&c->watch);
	if (c->has_beat)
		beat_put();
	c->has_beat = false;
}

/* Receiver, while it waits: is the sender alive? Its heartbeat's name is
 * read from the sender's line once the sender has opened the channel. */
static int recv_watch(struct chan *c, cxl_pool *p)
{
	const uint64_t *line = (const uint64_t *)(c->base + CHAN_SENDER);

	char name[STREAM_BEAT_NAME];

	/* the name was written before the magic we read */
	if (!c->peer_beat[0] && (c->watch.polls & 63) == 63 &&
	    cxl_nt_load64(p, line) == CHAN_MAGIC &&
	    beat_read_name(p, line + 1, name))
		memcpy(c->peer_beat, name, sizeof(name));
	return watch_peer(&c->watch, c->peer_beat[0] ? c->peer_beat : NULL,
			  c->peer, "receive");
}

uint64_t chan_sender_bytes(const struct chan *c)
{
	cxl_pool *p = c->obj.pool;
	const uint64_t *line = (const uint64_t *)(c->base + CHAN_SENDER);

	/* the size was written and fenced before the magic we read */
	if (cxl_nt_load64(p, line) != CHAN_MAGIC)
		return 0;
	return cxl_nt_load64(p, line + 7);
}

int chan_watch(struct chan *c)
{
	if (c->creator)
		return recv_watch(c, c->obj.pool);
	return watch_peer(&c->watch, c->peer_beat, c->peer, "send");
}

/*
 * The slot's flag word: the message's sequence number (mod 2^32) in the
 * high half, its length (<= STREAM_MAX_BYTES < 2^32) in the low half, so
 * that one uncached store publishes both and one uncached load reads them.
 */
static uint64_t flag_word(uint64_t k, uint64_t len)
{
	return (k & 0xffffffffu) << 32 | len;
}

uint64_t chan_flag(uint64_t k, uint64_t len)
{
	return flag_word(k, len);
}

/*
 * Sender: packed bytes [pos, pos + n) of the message into the slot at
 * dst, written back (cxl_copy_to_pool). A non-contiguous buffer is first
 * gathered into the request's bounce buffer (n <= CHAN_CHUNK), so that
 * the pool sees the same single cxl_copy_to_pool as a contiguous one:
 * each line written once, streamed from 4 KiB on. A cxl_copy_to_pool per
 * segment would write a line back once per segment in it and stream
 * nothing but segments of 4 KiB or more; one path serves every mode
 * (docs/benchmarks.md, "Decisions").
 */
static void copy_in(cxl_pool *p, uint8_t *dst, const uint8_t *src, uint64_t pos,
		    uint64_t n, const struct dlayout *dl)
{
	if (dl->map.seg) {
		dt_gather(&dl->map, src, pos, dl->bounce, n);
		cxl_copy_to_pool(p, dst, dl->bounce, n);
	} else {
		cxl_copy_to_pool(p, dst, src + pos, n);
	}
}

/*
 * Receiver: packed bytes [pos, pos + n) of the message from the slot at
 * src into the buffer. cxl_copy_from_pool is an invalidation of the
 * lines and a copy: for a non-contiguous buffer the same invalidation,
 * then the copy is a scatter straight out of the slot, with no bounce.
 */
static void copy_out(cxl_pool *p, uint8_t *dst, const uint8_t *src,
		     uint64_t pos, uint64_t n, const struct dlayout *dl)
{
	if (dl->map.seg) {
		/* read the sender's data from the pool, not stale lines */
		cxl_inval(p, src, n);
		dt_scatter(&dl->map, dst, pos, src, n);
	} else {
		cxl_copy_from_pool(p, dst + pos, src, n);
	}
}

/*
 * A small message: the flag line (flag, an empty chunk word, the first 48
 * bytes) and stamped lines (sequence number k, then 56 bytes), every word
 * of each line written, then written back with no fence (chan_drain).
 *
 * A line is written back as one unit, so each line is either the old one
 * or the new one as a whole: the receiver takes the message once the
 * flag and every stamp say k. No fence is needed between the data and
 * the flag, and nothing stale goes out: an earlier object at this offset
 * may have left our cached copy of these lines stale, and a partly
 * written line would write its stale words back.
 */
static void send_small(struct chan *c, uint64_t *hdr, uint64_t k,
		       const void *src, uint64_t len, const struct dlayout *dl)
{
	uint64_t w[(CHAN_STAMP_MAX + CXL_LINE) / 8]; /* room < len + 56 */
	unsigned nl = small_lines(len);
	/* the payload the lines hold, padded with zeros */
	size_t room = CHAN_INLINE + (size_t)(nl - 1) * CHAN_LINE_DATA;

	if (dl->map.seg)
		dt_gather(&dl->map, src, 0, w, len);
	else
		memcpy(w, src, len);
	memset((uint8_t *)w + len, 0, room - len);
	for (unsigned j = nl - 1; j >= 1; j--) {
		uint64_t *ln = hdr + j * (CXL_LINE / 8);
		const uint64_t *d =
			w + (CHAN_INLINE + (j - 1) * CHAN_LINE_DATA) / 8;

		for (unsigned i = 1; i < CXL_LINE / 8; i++)
			ln[i] = d[i - 1];
		__atomic_store_n(&ln[0], k, __ATOMIC_RELEASE);
	}
	for (unsigned i = 0; i < CHAN_INLINE / 8; i++)
		hdr[CHAN_INLINE_OFF / 8 + i] = w[i];
	hdr[1] = 0; /* no chunk announced */
	/* coherent mode: the data is visible before the flag (x86 keeps
	 * stores in order; release for the compiler) */
	__atomic_store_n(hdr, flag_word(k, len), __ATOMIC_RELEASE);
	cxl_flush(c->obj.pool, hdr, (size_t)nl * CXL_LINE);
	chan_unfenced = true;
}

/* Receiver: the stamped lines of small message k in the flag line's
 * slot, invalidated by the poll that saw the flag. 0: all there (copied
 * to w); 1: some not yet in the pool; -1: a stamp from the future. */
static int recv_small(const uint64_t *hdr, uint64_t k, uint64_t len,
		      uint64_t *w)
{
	unsigned nl = small_lines(len);

	for (unsigned j = 1; j < nl; j++) {
		const uint64_t *ln = hdr + j * (CXL_LINE / 8);
		uint64_t st = __atomic_load_n(&ln[0], __ATOMIC_ACQUIRE);
		uint64_t *d = w + (CHAN_INLINE + (j - 1) * CHAN_LINE_DATA) / 8;

		if (st > k)
			return -1;
		if (st != k)
			return 1;
		for (unsigned i = 1; i < CXL_LINE / 8; i++)
			d[i - 1] = ln[i];
	}
	for (unsigned i = 0; i < CHAN_INLINE / 8; i++)
		w[i] = hdr[CHAN_INLINE_OFF / 8 + i];
	return 0;
}

/* Sender, message k: wait for the slot, copy, write back, then the flag.
 * src and dl: the request's buffer and layout (stream.h). */
int chan_send(struct chan *c, uint64_t k, const void *src, uint64_t len,
	      const struct dlayout *dl)
{
	cxl_pool *p = c->obj.pool;
	uint64_t *hdr = slot_hdr(c, k), *consumed;
	unsigned spins = 0;

	if (len > c->cap)
		return MPI_ERR_TRUNCATE;
	consumed = (uint64_t *)(c->base + CHAN_CONSUMED);
	/* credit: the receiver's line (uncached load), read only when the
	 * last value read does not free the slot already */
	while (k > c->nslots && c->credit < k - c->nslots) {
		uint64_t v = cxl_nt_load64(p, consumed);

		if (v >= k)
			return MPI_ERR_OTHER; /* corrupt: not sent yet */
		if (v > c->credit) {
			c->credit = v;
			continue;
		}
		if (watch_peer(&c->watch, c->peer_beat, c->peer, "send"))
			return MPI_ERR_OTHER;
		stream_spin(&spins);
	}
	/* the data, written back to the pool (copy_to_pool flushes); a
	 * large message in chunks, each announced in the progress word so
	 * that the receiver copies out while we copy in */
	for (uint64_t off = 0; len > CHAN_CHUNK && off < len;) {
		uint64_t n = len - off < CHAN_CHUNK ? len - off : CHAN_CHUNK;

		copy_in(p, (uint8_t *)hdr + CXL_LINE + off, src, off, n, dl);
		off += n;
		/* the chunk is in the pool before its announcement */
		cxl_wfence(p);
		cxl_nt_store64(p, &hdr[1], flag_word(k, off));
	}
	if (chan_stamped(c, len)) {
		send_small(c, hdr, k, src, len, dl);
		return MPI_SUCCESS;
	}
	if (len <= CHAN_CHUNK)
		copy_in(p, (uint8_t *)hdr + CXL_LINE, src, 0, len, dl);
	/* the flag goes after a fence that puts the data in the pool
	 * (chan_flags_out). Up to FLAG_DEFER_MAX bytes later, so that the
	 * sends of a startall share one fence; a larger message's flag at
	 * once, so that its receiver copies out while we write the next */
	if (nflag_q == FLAGS_MAX)
		chan_flags_out();
	flag_q[nflag_q].at = hdr;
	flag_q[nflag_q++].v = flag_word(k, len);
	if (len > FLAG_DEFER_MAX)
		chan_flags_out();
	return MPI_SUCCESS;
}

/*
 * The flags of this thread's sends that are not in stamped lines: one
 * fence puts the data of all of them in the pool, then each flag is
 * NT-stored. Called before anything that waits for another thread or
 * host (stream_spin, every wait's step), before a wait retires its
 * requests (a freed channel must not get a flag later), and by
 * chan_drain: no flag stays behind while we wait, compute or sleep.
 */
void chan_flags_out(void)
{
	cxl_pool *p;

	if (!nflag_q)
		return;
	p = stream_pool();
	cxl_wfence(p); /* every queued message's data before any flag */
	for (unsigned i = 0; i < nflag_q; i++)
		cxl_nt_store64(p, flag_q[i].at, flag_q[i].v);
	nflag_q = 0;
	chan_unfenced = true;
}

/*
 * The last write-back or NT store of a send, and a receive's credit, are
 * left unfenced: the thread's next fence completes them, and it comes
 * soon. A poll fences (cxl_nt_load64), so does the next send before its
 * flag; successive sends thus pipeline their write-backs (a halo's 6
 * faces pay about one fence instead of 6). What else the progress thread
 * does, it does after chan_drain: before a host work item, and before it
 * goes idle, so that no flag waits in a write-combining buffer while the
 * thread computes or sleeps.
 */
void chan_drain(void)
{
	chan_flags_out();
	if (chan_unfenced) {
		chan_unfenced = false;
		cxl_wfence(stream_pool());
	}
}

/* Receiver, message k: wait for the flag, copy out, give the credit.
 * dst and dl: the request's buffer and layout; max: its packed size. */
int chan_recv(struct chan *c, uint64_t k, void *dst, uint64_t max,
	      const struct dlayout *dl, bool (*handover)(void *), void *arg)
{
	cxl_pool *p = c->obj.pool;
	uint64_t *hdr = slot_hdr(c, k), w, len, got = 0;
	uint64_t sw[(CHAN_STAMP_MAX + CXL_LINE) / 8]; /* stamped data */
	uint8_t *data = (uint8_t *)hdr + CXL_LINE;
	uint64_t smax = c->smax; /* 0: no message is stamped */
	unsigned spins = 0, full, npoll, inv;
	bool first = true;
	int small;

	/* The first poll invalidates every line a stamped message of this
	 * receive can take, with one fence: a message already there is read
	 * in that one round trip to the pool. Later polls invalidate at most
	 * CHAN_SMALL_LINES; once the flag is there, one more round gets the
	 * rest. Each stamped line says whether it is the new one. */
	full = small_lines(max < smax ? max : smax);
	npoll = full < CHAN_SMALL_LINES ? full : CHAN_SMALL_LINES;
	for (;;) {
		inv = first ? full : npoll;
		first = false;
		cxl_inval(p, hdr, (size_t)inv * CXL_LINE);
		w = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
		if (w >> 32 == (k & 0xffffffffu)) {
			unsigned nl;

			len = w & 0xffffffffu;
			if (len > smax || len > max)
				break;
			nl = small_lines(len);
			if (nl > inv) /* the rest of its lines */
				cxl_inval(p, hdr + (size_t)inv * (CXL_LINE / 8),
					  (size_t)(nl - inv) * CXL_LINE);
			small = recv_small(hdr, k, len, sw);
			if (small < 0)
				return MPI_ERR_OTHER;
			if (!small)
				break;
			/* a stamped line still on its way: poll again */
			first = true;
		} else if (w && w >> 32 != ((k - c->nslots) & 0xffffffffu)) {
			/* only the slot's previous message (or none) */
			return MPI_ERR_OTHER;
		} else if (c->cap > CHAN_CHUNK) {
			/* chunks announced so far (uncached load); whole
			 * lines, within the receive and growing */
			uint64_t v = cxl_nt_load64(p, &hdr[1]), r;

			r = v & 0xffffffffu;
			if (v >> 32 == (k & 0xffffffffu) && r > got) {
				if (r > max || r > c->cap || r % CXL_LINE)
					return MPI_ERR_OTHER;
				/* invalidate and copy the chunks */
				copy_out(p, dst, data + got, got, r - got, dl);
				got = r;
				spins = 0;
				continue;
			}
		}
		if (recv_watch(c, p))
			return MPI_ERR_OTHER;
		if (!got && handover && handover(arg))
			return CHAN_HANDOVER;
		stream_spin(&spins);
	}
	len = w & 0xffffffffu;
	if (len > max || len > c->cap)
		return MPI_ERR_TRUNCATE;
	if (got > len)
		return MPI_ERR_OTHER;
	if (len <= smax) {
		/* copied out of the lines the last poll invalidated */
		if (dl->map.seg)
			dt_scatter(&dl->map, dst, 0, sw, len);
		else
			memcpy(dst, sw, len);
	} else {
		/* invalidate and copy the rest of what the flag published */
		copy_out(p, dst, data + got, got, len - got, dl);
	}
	c->taken = k; /* the credit: chan_credit */
	return MPI_SUCCESS;
}

/*
 * Receiver: publish the credit, the messages consumed, once half the
 * slots (at least 1) are consumed and unpublished. The sender then sees
 * at most that many fewer free slots than there are, never none, so it
 * never waits for a credit we hold back; and half the credits are
 * stored. The queue calls this at the end of a wait, for all its
 * receives at once: each credit is an NT store that the next fence of
 * this thread waits for, and a poll fences, so a credit stored between
 * two receives of one wait would put its completion (a device write, 1.4
 * us on cMPI's device) between them.
 *
 * The loads of the data precede this store (x86 does not reorder a store
 * before earlier loads): the sender may reuse the slot after it. No fence
 * here, off the critical path: see chan_drain.
 */
void chan_credit(struct chan *c)
{
	uint64_t batch = c->nslots / 2 ? c->nslots / 2 : 1;

	if (c->taken - c->given < batch)
		return;
	cxl_nt_store64(c->obj.pool, (uint64_t *)(c->base + CHAN_CONSUMED),
		       c->taken);
	c->given = c->taken;
	chan_unfenced = true;
}

/*
 * Busy-wait step *n (from 0) of a stream wait: libcxlshm's learning spin
 * (cxl_spin_step: pause up to 2 us, then yield), per thread. Here because
 * a waiting thread first publishes its own unfenced flags: nobody may
 * wait for a flag of ours meanwhile.
 */
void stream_spin(unsigned *n)
{
	static _Thread_local struct cxl_spin spin = CXL_SPIN_INIT(2000, 16);

	chan_flags_out();
	cxl_spin_step(&spin, n);
}
