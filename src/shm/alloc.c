/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Heap allocator: a buddy system over 64-byte granules, with trimming.
 *
 * - Block of order o: 64 << o bytes, aligned to its size (heap-relative;
 *   the heap starts on 2 MiB, so orders >= 15 are 2 MiB-aligned).
 * - Free blocks are linked per order through their first line
 *   (struct free_blk); heads live in the arena control block.
 * - The order map (one byte per granule, out of band) marks the first
 *   granule of every free block (OM_FREE|o) and allocated piece
 *   (OM_ALLOC|o). Merging consults it, never the heap contents alone.
 * - An allocation of n bytes takes one block of order ceil(log2(n/64)),
 *   keeps the first n bytes as a run of decreasing power-of-two pieces and
 *   frees the tail, so waste is below 64 bytes (plus alignment).
 *
 * Every link, order and offset read from the pool is validated before
 * use; a failed check returns CXL_ECORRUPT and changes nothing further.
 * Caller holds the arena lock. All reads invalidate, all writes write back.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define GRAN 64u

static inline uint64_t bsize(unsigned o)
{
	return (uint64_t)GRAN << o;
}

static unsigned max_order(const struct cxl_pool *p)
{
	unsigned o = 0;

	while (o < BUDDY_MAX_ORDER && bsize(o + 1) <= p->hdr.heap_size)
		o++;
	return o;
}

static uint8_t om_get(struct cxl_pool *p, uint64_t off)
{
	uint8_t *b = p->base + p->hdr.ordermap_off + off / GRAN;

	md_rd(p, b, 1);
	return *b;
}

static void om_set(struct cxl_pool *p, uint64_t off, uint8_t v)
{
	uint8_t *b = p->base + p->hdr.ordermap_off + off / GRAN;

	*b = v;
	md_wr(p, b, 1);
}

static struct free_blk *blk(struct cxl_pool *p, uint64_t off)
{
	return (struct free_blk *)(pool_heap(p) + off);
}

static int corrupt(const char *what, uint64_t off)
{
	return cxl_seterr(CXL_ECORRUPT,
			  "heap %s at heap offset %llu fails "
			  "validation; run 'cxlpool fsck --repair'",
			  what, (unsigned long long)off);
}

/* A free-list link (offset + 1, 0 = end) must name a free block of order
 * o that lies inside the heap and carries the free-block header. */
static int check_link(struct cxl_pool *p, uint64_t link, unsigned o)
{
	uint64_t off;
	struct free_blk *b;

	if (!link)
		return CXL_OK;
	off = link - 1;
	if (off >= p->hdr.heap_size || off % bsize(o) ||
	    bsize(o) > p->hdr.heap_size - off)
		return corrupt("free-list link", off);
	if (om_get(p, off) != (OM_FREE | o))
		return corrupt("order map for a free block", off);
	b = blk(p, off);
	md_rd(p, b, sizeof(*b));
	if (b->magic != FREEBLK_MAGIC || b->order != o)
		return corrupt("free-block header", off);
	return CXL_OK;
}

static void ctl_add_free(struct cxl_pool *p, int64_t delta)
{
	struct arena_ctl *c = pool_ctl(p);

	md_rd(p, &c->heap_free, sizeof(c->heap_free));
	c->heap_free += (uint64_t)delta;
	md_wr(p, &c->heap_free, sizeof(c->heap_free));
}

static int list_push(struct cxl_pool *p, uint64_t off, unsigned o)
{
	struct arena_ctl *c = pool_ctl(p);
	struct free_blk *b = blk(p, off);
	uint64_t head;
	int rc;

	md_rd(p, &c->free_head[o], sizeof(uint64_t));
	head = c->free_head[o];
	if ((rc = check_link(p, head, o)))
		return rc;
	if (head) {
		struct free_blk *h = blk(p, head - 1);

		h->prev = off + 1;
		md_wr(p, h, sizeof(*h));
	}
	b->magic = FREEBLK_MAGIC;
	b->order = o;
	b->next = head;
	b->prev = 0;
	md_wr(p, b, sizeof(*b));
	c->free_head[o] = off + 1;
	md_wr(p, &c->free_head[o], sizeof(uint64_t));
	om_set(p, off, (uint8_t)(OM_FREE | o));
	ctl_add_free(p, (int64_t)bsize(o));
	return CXL_OK;
}

static int list_remove(struct cxl_pool *p, uint64_t off, unsigned o)
{
	struct arena_ctl *c = pool_ctl(p);
	struct free_blk *b = blk(p, off);
	int rc;

	if ((rc = check_link(p, off + 1, o)) ||
	    (rc = check_link(p, b->prev, o)) ||
	    (rc = check_link(p, b->next, o)))
		return rc;
	if (b->prev) {
		struct free_blk *pv = blk(p, b->prev - 1);

		if (pv->next != off + 1)
			return corrupt("free-list back link", off);
		pv->next = b->next;
		md_wr(p, pv, sizeof(*pv));
	} else {
		md_rd(p, &c->free_head[o], sizeof(uint64_t));
		if (c->free_head[o] != off + 1)
			return corrupt("free-list head", off);
		c->free_head[o] = b->next;
		md_wr(p, &c->free_head[o], sizeof(uint64_t));
	}
	if (b->next) {
		struct free_blk *nx = blk(p, b->next - 1);

		nx->prev = b->prev;
		md_wr(p, nx, sizeof(*nx));
	}
	b->magic = 0;
	md_wr(p, b, sizeof(*b));
	om_set(p, off, 0);
	ctl_add_free(p, -(int64_t)bsize(o));
	return CXL_OK;
}

/* Free one block with buddy merging. */
static int free_block(struct cxl_pool *p, uint64_t off, unsigned o)
{
	unsigned mo = max_order(p);
	int rc;

	while (o < mo) {
		uint64_t buddy = off ^ bsize(o);

		if (buddy + bsize(o) > p->hdr.heap_size ||
		    om_get(p, buddy) != (OM_FREE | o))
			break;
		if ((rc = list_remove(p, buddy, o)))
			return rc;
		off = off < buddy ? off : buddy;
		o++;
	}
	return list_push(p, off, o);
}

/* Largest aligned piece starting at pos that ends by end. */
static unsigned piece_order(const struct cxl_pool *p, uint64_t pos,
			    uint64_t end)
{
	unsigned o = 0, mo = max_order(p);

	while (o < mo && pos % bsize(o + 1) == 0 && pos + bsize(o + 1) <= end)
		o++;
	return o;
}

int cxl_heap_init(struct cxl_pool *p)
{
	return cxl_heap_rebuild(p, NULL, 0);
}

uint64_t cxl_heap_round(uint64_t size, uint64_t align)
{
	uint64_t n = ALIGN_UP(size ? size : 1, GRAN);

	/* a run that starts on an align boundary: at least align long */
	return align > GRAN && n < align ? align : n;
}

int cxl_heap_alloc(struct cxl_pool *p, uint64_t size, uint64_t align,
		   uint64_t *off_out, uint64_t *asize)
{
	struct arena_ctl *c = pool_ctl(p);
	unsigned k = 0, j, mo = max_order(p);
	uint64_t n, off, end;
	int rc;

	if (size > p->hdr.heap_size)
		goto nospace;
	n = cxl_heap_round(size, align);
	while (k <= mo && bsize(k) < n)
		k++;
	if (k > mo)
		goto nospace;
	for (j = k; j <= mo; j++) {
		md_rd(p, &c->free_head[j], sizeof(uint64_t));
		if (c->free_head[j])
			break;
	}
	if (j > mo)
		goto nospace;
	off = c->free_head[j] - 1;
	if ((rc = list_remove(p, off, j)))
		return rc;
	while (j > k) { /* split: keep the lower half */
		j--;
		if ((rc = list_push(p, off + bsize(j), j)))
			return rc;
	}
	/* keep [off, off+n) as decreasing pieces, free the tail */
	end = off + bsize(k);
	for (uint64_t pos = off; pos < off + n;) {
		unsigned o = piece_order(p, pos, off + n);

		om_set(p, pos, (uint8_t)(OM_ALLOC | o));
		pos += bsize(o);
	}
	for (uint64_t pos = off + n; pos < end;) {
		unsigned o = piece_order(p, pos, end);

		if ((rc = free_block(p, pos, o)))
			return rc;
		pos += bsize(o);
	}
	*off_out = off;
	*asize = n;
	return CXL_OK;
nospace:
	md_rd(p, &c->heap_free, sizeof(c->heap_free));
	return cxl_seterr(CXL_ENOSPC,
			  "pool is full: %llu bytes requested, "
			  "%llu free, largest free block %llu; destroy "
			  "objects ('cxlpool ls', 'cxlpool gc') or use a "
			  "larger pool (CXL_POOL_SIZE)",
			  (unsigned long long)size,
			  (unsigned long long)c->heap_free,
			  (unsigned long long)cxl_heap_largest_free(p));
}

/* Check a run [off, off+asize) before freeing or trusting it. */
static int check_run(struct cxl_pool *p, uint64_t off, uint64_t asize,
		     bool want_alloc)
{
	if (!asize || off % GRAN || asize % GRAN || off >= p->hdr.heap_size ||
	    asize > p->hdr.heap_size - off)
		return corrupt("object extent", off);
	if (!want_alloc)
		return CXL_OK;
	for (uint64_t pos = off; pos < off + asize;) {
		unsigned o = piece_order(p, pos, off + asize);

		if (om_get(p, pos) != (OM_ALLOC | o))
			return corrupt("allocated piece", pos);
		pos += bsize(o);
	}
	return CXL_OK;
}

int cxl_heap_free(struct cxl_pool *p, uint64_t off, uint64_t asize)
{
	int rc;

	if ((rc = check_run(p, off, asize, true)))
		return rc;
	for (uint64_t pos = off; pos < off + asize;) {
		unsigned o = piece_order(p, pos, off + asize);

		om_set(p, pos, 0);
		if ((rc = free_block(p, pos, o)))
			return rc;
		pos += bsize(o);
	}
	return CXL_OK;
}

/* Rebuild the order map and free lists around the given live extents,
 * sorted by offset and non-overlapping. Only the gaps between them are
 * written (free-block headers), so object contents are never touched. */
int cxl_heap_rebuild(struct cxl_pool *p, const struct heap_extent *ext,
		     size_t n)
{
	struct arena_ctl *c = pool_ctl(p);
	uint64_t pos = 0;
	int rc;

	memset(p->base + p->hdr.ordermap_off, 0, p->hdr.heap_size / GRAN);
	md_wr(p, p->base + p->hdr.ordermap_off, p->hdr.heap_size / GRAN);
	memset(c->free_head, 0, sizeof(c->free_head));
	md_wr(p, c->free_head, sizeof(c->free_head));
	c->heap_free = 0;
	md_wr(p, &c->heap_free, sizeof(c->heap_free));
	for (size_t i = 0; i <= n; i++) {
		uint64_t gap_end = i < n ? ext[i].off : p->hdr.heap_size;

		gap_end = ALIGN_DOWN(gap_end, GRAN);
		while (pos + GRAN <= gap_end) {
			unsigned o = piece_order(p, pos, gap_end);

			if ((rc = free_block(p, pos, o)))
				return rc;
			pos += bsize(o);
		}
		if (i == n)
			break;
		for (pos = ext[i].off; pos < ext[i].off + ext[i].asize;) {
			unsigned o =
				piece_order(p, pos, ext[i].off + ext[i].asize);

			om_set(p, pos, (uint8_t)(OM_ALLOC | o));
			pos += bsize(o);
		}
	}
	return CXL_OK;
}

uint64_t cxl_heap_largest_free(struct cxl_pool *p)
{
	struct arena_ctl *c = pool_ctl(p);

	for (int o = (int)max_order(p); o >= 0; o--) {
		md_rd(p, &c->free_head[o], sizeof(uint64_t));
		if (c->free_head[o])
			return bsize((unsigned)o);
	}
	return 0;
}

/* The extent of ext[0..n) (sorted) that overlaps [off, off+len), or NULL. */
static const struct heap_extent *overlap(const struct heap_extent *ext,
					 size_t n, uint64_t off, uint64_t len)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* first extent that ends after off */
		size_t mid = lo + (hi - lo) / 2;

		if (ext[mid].off + ext[mid].asize <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ext[lo].off < off + len ? &ext[lo] : NULL;
}

void cxl_heap_check(struct cxl_pool *p, const struct heap_extent *ext, size_t n,
		    cxl_check_report_fn report, void *arg)
{
	struct arena_ctl *c = pool_ctl(p);
	uint64_t free_bytes = 0, used = 0;
	unsigned mo = max_order(p);
	char msg[200];

#define SAY(...)                                         \
	do {                                             \
		snprintf(msg, sizeof(msg), __VA_ARGS__); \
		report(msg, arg);                        \
	} while (0)
	md_rd(p, c, sizeof(*c));
	for (unsigned o = 0; o <= BUDDY_MAX_ORDER; o++) {
		uint64_t link = c->free_head[o], prev = 0, steps = 0;
		uint64_t limit = o <= mo ? p->hdr.heap_size / bsize(o) : 0;

		for (; link && steps <= limit; steps++) {
			struct free_blk *b;

			if (o > mo || check_link(p, link, o)) {
				SAY("free list of order %u: %s", o,
				    cxl_errmsg());
				break;
			}
			b = blk(p, link - 1);
			if (b->prev != prev) {
				SAY("free list of order %u: block at %llu "
				    "has a wrong back link",
				    o, (unsigned long long)(link - 1));
				break;
			}
			if (overlap(ext, n, link - 1, bsize(o)))
				SAY("free block at heap offset %llu (order "
				    "%u) overlaps a live object",
				    (unsigned long long)(link - 1), o);
			free_bytes += bsize(o);
			prev = link;
			link = b->next;
		}
		if (link && steps > limit)
			SAY("free list of order %u has a cycle", o);
	}
	md_rd(p, &c->heap_free, sizeof(c->heap_free));
	if (free_bytes != c->heap_free)
		SAY("the heap's free count says %llu bytes; its free lists "
		    "hold %llu",
		    (unsigned long long)c->heap_free,
		    (unsigned long long)free_bytes);
	for (size_t i = 0; i < n; i++) {
		used += ext[i].asize;
		if (!(om_get(p, ext[i].off) & OM_ALLOC))
			SAY("the order map does not mark object %llu at heap "
			    "offset %llu allocated",
			    (unsigned long long)ext[i].idx,
			    (unsigned long long)ext[i].off);
	}
	if (free_bytes + used != ALIGN_DOWN(p->hdr.heap_size, GRAN))
		SAY("%llu heap bytes are neither free nor in an object",
		    (unsigned long long)(ALIGN_DOWN(p->hdr.heap_size, GRAN) -
					 free_bytes - used));
#undef SAY
}
