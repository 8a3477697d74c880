/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SPSC ring in pool memory (see ring.h for the layout rules).
 *
 * Object layout:
 *   line 0  geometry, written once by init; magic stored last
 *   line 1  producer-owned: tail, stored at detach so a producer can resume
 *   line 2  consumer-owned: head (messages consumed), non-temporal store
 *   line 3+ ncells cells of cell_size bytes
 * Message line 0: stamp u64 | len u32 | tag u32 | 48 payload bytes
 * Message line k: stamp u64 | 56 payload bytes
 * A message starts at a cell and takes the lines it needs; with a span
 * above 1 it goes on into the next cells (wrapping at the ring's end), and
 * every one of its lines carries the stamp of its first cell. Sequence
 * numbers and the head count cells.
 *
 * Coherence per message (flush mode, message of L lines):
 *   producer: L line write-backs + 1 sfence (none with CXL_RING_NOFENCE);
 *   consumer: max(L, poll_lines) invalidations + 1 fence (2 if L exceeds
 *   the sweep: poll_lines after an empty poll, else the previous
 *   message's lines), plus one head store + fence every head_batch cells
 *   (the fence the caller's, with cxl_ring_lazy_head).
 *   A consumer that copies data a message named (a data slot) sweeps the
 *   next poll's lines with that data (cxl_ring_inval_with): a stream of
 *   such messages costs one fence each, not two.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RING_MAGIC 0x31474e49524c5843ull /* "CXLRING1" */
#define RING_HDR_LINES 3u
#define RING_MAX_CELL (1u << 20)
#define RING_MAX_CELLS (1u << 24)
#define L0_PAYLOAD 48u
#define LK_PAYLOAD 56u

struct ring_geom {
	uint64_t magic;
	uint64_t ident; /* arena object identity, 0 for raw rings */
	uint32_t cell_size, ncells, poll_lines, head_batch;
	uint32_t span, pad; /* cells one message may take */
};

struct cell0 {
	uint64_t stamp;
	uint32_t len;
	uint32_t tag;
	uint8_t data[L0_PAYLOAD];
};

struct cellk {
	uint64_t stamp;
	uint8_t data[LK_PAYLOAD];
};

struct cxl_ring {
	cxl_pool *pool;
	uint8_t *mem;
	struct ring_geom g;
	uint8_t *cells;
	uint64_t *tail_line; /* line 1 */
	uint64_t *head_line; /* line 2 */
	enum cxl_ring_role role;
	uint64_t seq;	/* next message to send / receive */
	uint64_t other; /* producer: cached head; consumer: published head */
	uint32_t cell_lines;
	uint32_t sweep;	    /* consumer: lines the next poll invalidates */
	uint32_t ahead;	    /* consumer: lines of the next message already
			     * swept (cxl_ring_inval_with), not read since */
	bool lazy_head;	    /* consumer: head stores wait for the caller's
			     * fence (cxl_ring_lazy_head) */
	bool read_ahead;    /* consumer: cxl_ring_read_ahead */
	bool with_data;	    /* consumer: the last message named data that
			     * cxl_ring_inval_with swept: so will the next,
			     * and that sweep reads ahead for free */
	bool unfenced;	    /* consumer: such a store since the last ask */
	struct cxl_obj obj; /* when created/opened by name */
	bool named;
};

static void attr_defaults(struct cxl_ring_attr *a,
			  const struct cxl_ring_attr *in)
{
	*a = in ? *in : (struct cxl_ring_attr){ 0 };
	if (!a->cell_size)
		a->cell_size = 256;
	if (!a->ncells)
		a->ncells = 64;
	if (!a->poll_lines)
		a->poll_lines = 2;
	if (a->poll_lines > a->cell_size / CXL_LINE)
		a->poll_lines = a->cell_size / CXL_LINE;
	if (!a->head_batch)
		a->head_batch = a->ncells / 4 ? a->ncells / 4 : 1;
	if (!a->span)
		a->span = 1;
}

/* A span of at most ncells - head_batch + 1 cells always fits once the
 * consumer has taken everything: it leaves fewer than head_batch cells
 * unreported. */
static int check_geom(const struct ring_geom *g, size_t len)
{
	if (g->cell_size < CXL_LINE || g->cell_size % CXL_LINE ||
	    g->cell_size > RING_MAX_CELL || g->ncells < 2 ||
	    g->ncells > RING_MAX_CELLS || g->poll_lines < 1 ||
	    g->poll_lines > g->cell_size / CXL_LINE || g->head_batch < 1 ||
	    g->head_batch > g->ncells || g->span < 1 ||
	    g->span > g->ncells - g->head_batch + 1)
		return cxl_seterr(CXL_EINVAL,
				  "ring geometry invalid: cell_size "
				  "%u (multiple of 64, 64..%u), ncells %u "
				  "(2..%u), poll_lines %u, head_batch %u "
				  "(1..ncells), span %u (1..ncells - "
				  "head_batch + 1)",
				  g->cell_size, RING_MAX_CELL, g->ncells,
				  RING_MAX_CELLS, g->poll_lines, g->head_batch,
				  g->span);
	if ((uint64_t)g->cell_size * g->ncells + RING_HDR_LINES * CXL_LINE >
	    len)
		return cxl_seterr(CXL_ETOOSMALL,
				  "ring needs %llu bytes but has "
				  "%zu",
				  (unsigned long long)g->cell_size * g->ncells +
					  RING_HDR_LINES * CXL_LINE,
				  len);
	return CXL_OK;
}

CXL_EXPORT size_t cxl_ring_cell_payload(uint32_t cell_size)
{
	if (cell_size < CXL_LINE)
		return 0;
	return L0_PAYLOAD + LK_PAYLOAD * (cell_size / CXL_LINE - 1);
}

CXL_EXPORT size_t cxl_ring_footprint(const struct cxl_ring_attr *attr)
{
	struct cxl_ring_attr a;

	attr_defaults(&a, attr);
	return RING_HDR_LINES * CXL_LINE + (size_t)a.cell_size * a.ncells;
}

static int ring_init(cxl_pool *p, void *mem, size_t len,
		     const struct cxl_ring_attr *attr, uint64_t ident)
{
	struct ring_geom *g = mem, ng;
	struct cxl_ring_attr a;
	int rc;

	if (!p || !mem || ((uintptr_t)mem % CXL_LINE))
		return cxl_seterr(CXL_EINVAL, "cxl_ring_init: memory must be "
					      "64-byte aligned pool memory");
	attr_defaults(&a, attr);
	ng = (struct ring_geom){ .ident = ident,
				 .cell_size = a.cell_size,
				 .ncells = a.ncells,
				 .poll_lines = a.poll_lines,
				 .head_batch = a.head_batch,
				 .span = a.span };
	if ((rc = check_geom(&ng, len)))
		return rc;
	/* Retire any old ring here, clear every stamp, then publish. */
	cxl_nt_store64(p, &g->magic, 0);
	cxl_wfence(p);
	memset((uint8_t *)mem + CXL_LINE, 0, cxl_ring_footprint(&a) - CXL_LINE);
	cxl_flush(p, (uint8_t *)mem + CXL_LINE,
		  cxl_ring_footprint(&a) - CXL_LINE);
	memcpy(g, &ng, sizeof(ng));
	cxl_flush(p, g, CXL_LINE);
	cxl_wfence(p); /* geometry and zeroed cells before the magic */
	cxl_flag_set(p, &g->magic, RING_MAGIC);
	return CXL_OK;
}

CXL_EXPORT int cxl_ring_init(cxl_pool *p, void *mem, size_t len,
			     const struct cxl_ring_attr *attr)
{
	return ring_init(p, mem, len, attr, 0);
}

static int ring_attach(cxl_pool *p, void *mem, size_t len,
		       enum cxl_ring_role role, uint64_t ident,
		       uint32_t timeout_ms, cxl_ring **out)
{
	struct ring_geom *g = mem;
	struct cxl_backoff b;
	struct cxl_ring *r;
	int rc;

	if (!p || !mem || !out ||
	    (role != CXL_RING_PRODUCER && role != CXL_RING_CONSUMER) ||
	    len < RING_HDR_LINES * CXL_LINE || (uintptr_t)mem % CXL_LINE ||
	    !cxl_pool_ptr(p, cxl_pool_offset(p, mem), len))
		return cxl_seterr(CXL_EINVAL,
				  "cxl_ring_attach: need a role and "
				  "64-byte aligned pool memory");
	cxl_backoff_init(&b, timeout_ms);
	for (;;) {
		if (cxl_nt_load64(p, &g->magic) == RING_MAGIC) {
			cxl_inval(p, g, CXL_LINE);
			if (g->ident == ident)
				break;
		}
		if (!timeout_ms || cxl_backoff_wait(&b))
			return cxl_seterr(
				timeout_ms ? CXL_ETIMEDOUT : CXL_EINVAL,
				"no initialised ring at pool offset "
				"%llu%s",
				(unsigned long long)cxl_pool_offset(p, mem),
				timeout_ms ? " (its creator did not "
					     "finish in time)"
					   : "");
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return cxl_seterr(CXL_ENOMEM, "ring: out of memory");
	r->g = *g; /* private copy: the pool's geometry is validated once */
	if ((rc = check_geom(&r->g, len))) {
		free(r);
		return cxl_seterr(CXL_ECORRUPT,
				  "ring at pool offset %llu has "
				  "a corrupt header: %s",
				  (unsigned long long)cxl_pool_offset(p, mem),
				  cxl_errmsg());
	}
	r->pool = p;
	r->mem = mem;
	r->role = role;
	r->tail_line = (uint64_t *)((uint8_t *)mem + CXL_LINE);
	r->head_line = (uint64_t *)((uint8_t *)mem + 2 * CXL_LINE);
	r->cells = (uint8_t *)mem + RING_HDR_LINES * CXL_LINE;
	r->cell_lines = r->g.cell_size / CXL_LINE;
	if (role == CXL_RING_PRODUCER) {
		r->seq = cxl_nt_load64(p, r->tail_line);
		r->other = cxl_nt_load64(p, r->head_line);
		if (r->other > r->seq || r->seq - r->other > r->g.ncells) {
			free(r);
			return cxl_seterr(
				CXL_ECORRUPT,
				"ring at pool offset "
				"%llu: head/tail indices are "
				"inconsistent",
				(unsigned long long)cxl_pool_offset(p, mem));
		}
	} else {
		r->seq = r->other = cxl_nt_load64(p, r->head_line);
	}
	*out = r;
	return CXL_OK;
}

CXL_EXPORT int cxl_ring_attach(cxl_pool *p, void *mem, size_t len,
			       enum cxl_ring_role role, cxl_ring **out)
{
	return ring_attach(p, mem, len, role, 0, 0, out);
}

CXL_EXPORT void cxl_ring_detach(cxl_ring *r)
{
	if (!r)
		return;
	if (r->role == CXL_RING_PRODUCER) {
		cxl_ring_fence(r);
		cxl_flag_set(r->pool, r->tail_line, r->seq);
	} else if (r->other != r->seq) {
		cxl_flag_set(r->pool, r->head_line, r->seq);
	} else if (r->unfenced) { /* a lazy head store still owed its fence */
		cxl_wfence(r->pool);
	}
	if (r->named)
		cxl_obj_close(&r->obj);
	free(r);
}

static uint64_t obj_ident(const struct cxl_obj *o)
{
	return (uint64_t)o->idx << 32 | o->gen | 1ull << 63;
}

CXL_EXPORT int cxl_ring_create(cxl_pool *p, const char *name,
			       const struct cxl_ring_attr *attr,
			       enum cxl_ring_role role, cxl_ring **out)
{
	struct cxl_obj o;
	size_t len = cxl_ring_footprint(attr);
	int rc;

	if (!out)
		return cxl_seterr(CXL_EINVAL, "cxl_ring_create: out is NULL");
	if ((rc = cxl_obj_create(p, name, len, 0, &o)))
		return rc;
	if ((rc = ring_init(p, o.ptr, len, attr, obj_ident(&o))) ||
	    (rc = ring_attach(p, o.ptr, len, role, obj_ident(&o), 0, out))) {
		cxl_obj_close(&o);
		cxl_obj_destroy(p, name);
		return rc;
	}
	(*out)->obj = o;
	(*out)->named = true;
	return CXL_OK;
}

CXL_EXPORT int cxl_ring_open(cxl_pool *p, const char *name,
			     enum cxl_ring_role role, cxl_ring **out)
{
	struct cxl_obj o;
	int rc;

	if (!out)
		return cxl_seterr(CXL_EINVAL, "cxl_ring_open: out is NULL");
	if ((rc = cxl_obj_open(p, name, &o)))
		return rc;
	/* The creator may still be initialising: wait (bounded) for the
	 * header that carries this object's identity. */
	rc = ring_attach(p, o.ptr, o.size, role, obj_ident(&o),
			 p->opts.lock_timeout_ms, out);
	if (rc) {
		cxl_obj_close(&o);
		return rc;
	}
	(*out)->obj = o;
	(*out)->named = true;
	return CXL_OK;
}

CXL_EXPORT void cxl_ring_close(cxl_ring *r)
{
	cxl_ring_detach(r);
}

CXL_EXPORT void cxl_ring_attr_get(const cxl_ring *r, struct cxl_ring_attr *a)
{
	a->cell_size = r->g.cell_size;
	a->ncells = r->g.ncells;
	a->poll_lines = r->g.poll_lines;
	a->head_batch = r->g.head_batch;
	a->span = r->g.span;
}

CXL_EXPORT size_t cxl_ring_max_msg(const cxl_ring *r)
{
	return L0_PAYLOAD +
	       LK_PAYLOAD * ((size_t)r->g.span * r->cell_lines - 1);
}

static inline uint32_t lines_for(size_t len)
{
	return len <= L0_PAYLOAD
		       ? 1
		       : 1 + (uint32_t)((len - L0_PAYLOAD + LK_PAYLOAD - 1) /
					LK_PAYLOAD);
}

static inline uint8_t *cell_at(const struct cxl_ring *r, uint64_t seq)
{
	return r->cells + (size_t)(seq % r->g.ncells) * r->g.cell_size;
}

/* Line k of the message whose line 0 is at c0. The cells lie end to end
 * (cell_lines lines each) and a message spans fewer cells than the ring
 * has, so its lines are consecutive but for one wrap at the ring's end:
 * no division per line (two per line were a tenth of a 1 KiB send). */
static inline uint8_t *line_from(const struct cxl_ring *r, const uint8_t *c0,
				 uint32_t k)
{
	size_t all = (size_t)r->g.ncells * r->g.cell_size;
	size_t off = (size_t)(c0 - r->cells) + (size_t)k * CXL_LINE;

	return r->cells + (off < all ? off : off - all);
}

/* Line k of the message that starts at cell seq. */
static inline uint8_t *line_at(const struct cxl_ring *r, uint64_t seq,
			       uint32_t k)
{
	return line_from(r, cell_at(r, seq), k);
}

/* Write back (or invalidate) lines [k, k + n) of the message at seq: one
 * range, or two where the message wraps at the ring's end. */
static void lines_apply(const struct cxl_ring *r, uint64_t seq, uint32_t k,
			uint32_t n, bool inval)
{
	uint8_t *at = line_at(r, seq, k);
	uint8_t *end = r->cells + (size_t)r->g.ncells * r->g.cell_size;
	size_t len = (size_t)n * CXL_LINE;
	size_t first = len < (size_t)(end - at) ? len : (size_t)(end - at);

	if (inval) { /* one fence for both ranges */
		cxl_inval2(r->pool, at, first, r->cells, len - first);
		return;
	}
	cxl_flush(r->pool, at, first);
	if (len > first)
		cxl_flush(r->pool, r->cells, len - first);
}

CXL_EXPORT int cxl_ring_send(cxl_ring *r, const void *buf, size_t len,
			     uint32_t tag, unsigned flags)
{
	cxl_pool *p = r->pool;
	const uint8_t *src = buf;
	uint64_t stamp = r->seq + 1;
	struct cell0 *c0;
	uint32_t nl, nc;
	size_t n;

	if (CXL_UNLIKELY(r->role != CXL_RING_PRODUCER ||
			 len > cxl_ring_max_msg(r)))
		return cxl_seterr(CXL_EINVAL,
				  "ring send: %zu bytes exceeds "
				  "the message payload of %zu (or not the "
				  "producer)",
				  len, cxl_ring_max_msg(r));
	nl = lines_for(len);
	nc = (nl + r->cell_lines - 1) / r->cell_lines;
	if (r->seq + nc - r->other > r->g.ncells) {
		/* Looks full: refresh the consumer's head (uncached). */
		uint64_t h = cxl_nt_load64(p, r->head_line);

		if (h > r->seq || r->seq - h > r->g.ncells)
			return cxl_seterr(CXL_ECORRUPT,
					  "ring: consumer head "
					  "%llu impossible for tail %llu",
					  (unsigned long long)h,
					  (unsigned long long)r->seq);
		r->other = h;
		if (r->seq + nc - h > r->g.ncells)
			return CXL_EAGAIN;
	}
	c0 = (struct cell0 *)cell_at(r, r->seq);
	/* Payload first, stamp last in each line (release), and line 0 last of
	 * all: in coherent mode a reader that sees line 0's stamp then finds
	 * the whole message; in the flush modes each line is written back as
	 * one unit and carries its own stamp, so order does not matter and
	 * no fence separates the header from the data. */
	for (uint32_t k = nl - 1; k >= 1; k--) {
		struct cellk *ck =
			(struct cellk *)line_from(r, (uint8_t *)c0, k);
		size_t at = L0_PAYLOAD + (size_t)(k - 1) * LK_PAYLOAD;

		/* every line but the last is full: a copy of constant size,
		 * which the compiler inlines */
		if (k == nl - 1)
			memcpy(ck->data, src + at, len - at);
		else
			memcpy(ck->data, src + at, LK_PAYLOAD);
		__atomic_store_n(&ck->stamp, stamp, __ATOMIC_RELEASE);
	}
	n = len < L0_PAYLOAD ? len : L0_PAYLOAD;
	if (n) /* buf may be NULL for an empty message */
		memcpy(c0->data, src, n);
	c0->len = (uint32_t)len;
	c0->tag = tag;
	__atomic_store_n(&c0->stamp, stamp, __ATOMIC_RELEASE);
	/* Line 0 last: a poller that sees its stamp then rarely finds the
	 * other lines missing. The emulator writes back synchronously, in
	 * call order, so there line 0 goes first: a consumer that read a line
	 * before its own stamp says it is there gets stale bytes. */
	if (p->coh == CXL_COH_EMULATED)
		cxl_flush(p, c0, CXL_LINE);
	if (nl > 1)
		lines_apply(r, r->seq, 1, nl - 1, false);
	if (p->coh != CXL_COH_EMULATED)
		cxl_flush(p, c0, CXL_LINE);
	if (!(flags & CXL_RING_NOFENCE))
		cxl_wfence(p); /* message in the pool before send returns */
	r->seq += nc;
	return CXL_OK;
}

CXL_EXPORT int cxl_ring_send_ready(cxl_ring *r)
{
	uint64_t h;

	if (r->seq - r->other < r->g.ncells)
		return 1;
	h = cxl_nt_load64(r->pool, r->head_line);
	if (h > r->seq || r->seq - h > r->g.ncells)
		return 0; /* corrupt head: the next send reports it */
	r->other = h;
	return r->seq - h < r->g.ncells;
}

/* A poll sweeps the lines a message like the last (n lines) would take,
 * and at least poll_lines. */
static inline uint32_t sweep_lines(const struct cxl_ring *r, uint32_t n)
{
	return n > r->g.poll_lines ? n : r->g.poll_lines;
}

/* Start loading n lines of the message whose line 0 is at c0 (swept and
 * fenced before): their misses then overlap what the caller does next. A
 * line loaded before its producer wrote it back carries an older stamp
 * and is swept again by the receive that reads it. Always inlined: GCC
 * takes a function that only prefetches for one without effects and
 * drops the calls. */
static inline __attribute__((always_inline)) void
prefetch_lines(const struct cxl_ring *r, const uint8_t *c0, uint32_t n)
{
	/* emulated: private copies, no misses; coherent: loading lines the
	 * producer may still write only moves them back and forth */
	if (r->pool->coh == CXL_COH_EMULATED ||
	    r->pool->coh == CXL_COH_COHERENT)
		return;
	for (uint32_t k = 0; k < n; k++)
		__builtin_prefetch(line_from(r, c0, k), 0, 3);
}

CXL_EXPORT void cxl_ring_inval_with(cxl_ring *r, const void *p, size_t n)
{
	uint32_t lines = sweep_lines(r, r->sweep);
	uint8_t *at = line_at(r, r->seq, 0);
	uint8_t *end = r->cells + (size_t)r->g.ncells * r->g.cell_size;

	/* only a consumer's, only lines that do not wrap (rare), and not
	 * again when a read ahead swept them */
	r->with_data = true; /* read by a consumer only */
	if (r->role != CXL_RING_CONSUMER || r->ahead ||
	    (size_t)lines * CXL_LINE > (size_t)(end - at)) {
		cxl_inval(r->pool, p, n);
		return;
	}
	/* one fence for both: the next recv reads the stamp without one */
	cxl_inval2(r->pool, p, n, at, (size_t)lines * CXL_LINE);
	r->ahead = lines;
	if (r->read_ahead) /* in a stream: start loading them (sweep_next) */
		prefetch_lines(r, at, lines);
}

CXL_EXPORT void cxl_ring_read_ahead(cxl_ring *r, int on)
{
	if (r->role == CXL_RING_CONSUMER)
		r->read_ahead = on != 0;
}

/*
 * Read ahead: sweep the nl lines that the message after seq would take
 * (as many as the one being taken) and start loading them, so that their
 * misses overlap the copy of this message and the caller's work on it.
 * Not when they could reach cells of the message not yet copied.
 */
static uint32_t sweep_next(struct cxl_ring *r, uint64_t next, uint32_t nl,
			   uint32_t nc)
{
	uint32_t lines = sweep_lines(r, nl);
	const uint8_t *c0 = cell_at(r, next);

	/* coherent: nothing to sweep, and loading lines the producer may
	 * still write only moves them back and forth */
	if (r->pool->coh == CXL_COH_COHERENT ||
	    (uint64_t)nc + (lines - 1) / r->cell_lines + 1 > r->g.ncells)
		return 0;
	/* one fence: the evictions complete before the prefetches below */
	lines_apply(r, next, 0, lines, true);
	prefetch_lines(r, c0, lines);
	return lines;
}

CXL_EXPORT void cxl_ring_fence(cxl_ring *r)
{
	cxl_wfence(r->pool);
}

static void publish_head(struct cxl_ring *r)
{
	if (r->lazy_head) { /* visible at the caller's next fence */
		cxl_nt_store64(r->pool, r->head_line, r->seq);
		r->unfenced = true;
	} else {
		cxl_flag_set(r->pool, r->head_line, r->seq);
	}
	r->other = r->seq;
}

CXL_EXPORT void cxl_ring_lazy_head(cxl_ring *r, int on)
{
	if (r->role == CXL_RING_CONSUMER)
		r->lazy_head = on != 0;
}

CXL_EXPORT int cxl_ring_head_unfenced(cxl_ring *r)
{
	bool u = r->unfenced;

	r->unfenced = false;
	return u;
}

/*
 * With a span of 1, line 0 of a cell is written by every message, so it
 * holds either the expected stamp or the previous lap's (0 on the first
 * lap). Any other line, and line 0 too when messages span cells, is
 * written only by the messages that reach it, all of which started
 * before: any older stamp means "not written yet". Anything newer cannot
 * come from a correct producer.
 */
static int stamp_state(const struct cxl_ring *r, uint64_t s, uint64_t want,
		       bool first_line)
{
	if (s == want)
		return CXL_OK;
	if (first_line && r->g.span == 1
		    ? (want <= r->g.ncells && s == 0) ||
			      (want > r->g.ncells && s == want - r->g.ncells)
		    : s < want)
		return CXL_EAGAIN;
	return cxl_seterr(CXL_ECORRUPT,
			  "ring cell %llu carries stamp %llu; "
			  "expected %llu (or an older one)",
			  (unsigned long long)((want - 1) % r->g.ncells),
			  (unsigned long long)s, (unsigned long long)want);
}

CXL_EXPORT int cxl_ring_recv(cxl_ring *r, void *buf, size_t cap, size_t *len,
			     uint32_t *tag)
{
	uint64_t want = r->seq + 1;
	struct cell0 *c0 = (struct cell0 *)cell_at(r, r->seq);
	uint8_t *dst = buf;
	uint32_t nl, nc, msg_len, sweep = r->ahead, ahead;
	bool early = false; /* lines [0, sweep) swept before this call */
	size_t left, n;
	int rc = CXL_EAGAIN;
	bool coherent = r->pool->coh == CXL_COH_COHERENT;

	if (CXL_UNLIKELY(r->role != CXL_RING_CONSUMER))
		return cxl_seterr(CXL_EINVAL, "ring recv on the producer side");
	/* Swept ahead with the caller's data: the stamp decides. A line swept
	 * before the producer wrote it holds an older stamp (lines move as
	 * units), and is then swept again below. */
	r->ahead = 0;
	if (sweep) {
		rc = stamp_state(r,
				 __atomic_load_n(&c0->stamp, __ATOMIC_ACQUIRE),
				 want, true);
		if (rc != CXL_EAGAIN && rc)
			return rc;
		early = !rc;
	}
	if (!early) {
		/* One sweep: right after a message, as many lines as it had
		 * (a stream of like messages then costs one sweep and one
		 * fence each); after an empty poll, poll_lines, so that
		 * waiting stays cheap. */
		sweep = sweep_lines(r, r->sweep);
		lines_apply(r, r->seq, 0, sweep, true);
		rc = stamp_state(r,
				 __atomic_load_n(&c0->stamp, __ATOMIC_ACQUIRE),
				 want, true);
	}
	/* An empty poll does not publish the head: the producer sees at most
	 * head_batch - 1 unreported cells as used, fewer than ncells, so it is
	 * never stuck on an idle consumer, and a ping-pong keeps paying one
	 * head store per head_batch messages instead of one per message. */
	if (rc) {
		r->sweep = 0;
		return rc;
	}
	msg_len = c0->len;
	if (msg_len > cxl_ring_max_msg(r))
		return cxl_seterr(CXL_ECORRUPT,
				  "ring cell claims %u bytes; a "
				  "message holds at most %zu",
				  msg_len, cxl_ring_max_msg(r));
	nl = lines_for(msg_len);
	nc = (nl + r->cell_lines - 1) / r->cell_lines;
	/* the lines the poll's sweep did not cover */
	if (nl > sweep)
		lines_apply(r, r->seq, sweep, nl - sweep, true);
	/* coherent: line 0's stamp, stored last with release and read with
	 * acquire, vouches for the others; each is checked as it is copied */
	for (uint32_t k = 1; !coherent && k < nl; k++) {
		struct cellk *ck =
			(struct cellk *)line_from(r, (uint8_t *)c0, k);

		rc = stamp_state(r,
				 __atomic_load_n(&ck->stamp, __ATOMIC_ACQUIRE),
				 want, false);
		if (rc == CXL_EAGAIN && early && k < sweep) {
			/* swept ahead before the producer wrote it: sweep
			 * the rest of the message now */
			lines_apply(r, r->seq, k, nl - k, true);
			early = false;
			rc = stamp_state(
				r,
				__atomic_load_n(&ck->stamp, __ATOMIC_ACQUIRE),
				want, false);
		}
		if (rc)
			return rc; /* EAGAIN: later lines not visible yet */
	}
	if (len)
		*len = msg_len;
	if (msg_len > cap)
		return cxl_seterr(CXL_ETRUNC,
				  "ring message of %u bytes does "
				  "not fit the %zu-byte buffer; it stays "
				  "queued",
				  msg_len, cap);
	if (tag)
		*tag = c0->tag;
	/* after the last stamp check, before the copy: the header's fields
	 * were read above, the payload is still in this cache */
	ahead = r->read_ahead && !r->with_data
			? sweep_next(r, r->seq + nc, nl, nc)
			: 0;
	r->with_data = false;
	n = msg_len < L0_PAYLOAD ? msg_len : L0_PAYLOAD;
	if (n) /* buf may be NULL when cap is 0 */
		memcpy(dst, c0->data, n);
	dst += n;
	left = msg_len - n;
	for (uint32_t k = 1; k < nl; k++) {
		struct cellk *ck =
			(struct cellk *)line_from(r, (uint8_t *)c0, k);

		if (coherent &&
		    (rc = stamp_state(
			     r, __atomic_load_n(&ck->stamp, __ATOMIC_RELAXED),
			     want, false)))
			return rc;
		if (k == nl - 1) { /* the last line, full or not */
			memcpy(dst, ck->data, left);
			break;
		}
		memcpy(dst, ck->data, LK_PAYLOAD); /* constant: inlined */
		dst += LK_PAYLOAD;
		left -= LK_PAYLOAD;
	}
	r->seq += nc;
	r->sweep = nl;
	r->ahead = ahead;
	if (r->seq - r->other >= r->g.head_batch)
		publish_head(r);
	return CXL_OK;
}
