/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datatype layout (datatype.h). Two ways to learn a type map, each used
 * where it is cheapest and exact:
 *
 *  - A walk of the constructors (MPI_Type_get_envelope/get_contents) says
 *    whether a dense type is in memory order (named, or dup, contiguous
 *    and resized over one) and which predefined type a derived one is
 *    built of. It needs no memory of the type's size.
 *  - A probe with MPI_Pack maps the segments of any other type: the
 *    probe covers the true extent of one element, and each of its bytes
 *    holds one byte of its own offset (plane p: offset >> 8p & 0xff), so
 *    the packed bytes of plane p say, for every packed byte, byte p of
 *    the offset it came from. One plane per byte of the true extent (1
 *    to 8 passes) gives every offset. The library's own MPI_Pack defines
 *    the type map, so the result is right for every constructor (vector,
 *    indexed, struct, subarray, darray, resized, overlaps, out-of-order
 *    blocks) with no per-combiner code, on MPICH and Open MPI alike.
 *    Count > 1 replicates the element's segments at multiples of the
 *    extent (the MPI definition of count).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datatype.h"

/* constructors followed at most, down to a named type */
#define DT_MAX_DEPTH 64

/* Free a handle from MPI_Type_get_contents (named ones are not freed). */
static void drop(MPI_Datatype dt)
{
	int a, b, c, comb;

	if (dt == MPI_DATATYPE_NULL)
		return;
	if (PMPI_Type_get_envelope(dt, &a, &b, &c, &comb) == MPI_SUCCESS &&
	    comb != MPI_COMBINER_NAMED)
		PMPI_Type_free(&dt);
}

/*
 * One step down a datatype's constructor: its combiner and, unless it is
 * a named type, the first datatype it was built from (*next, to be freed
 * by the caller with drop()). The other constituent handles are freed.
 * Returns -1 if the step fails.
 */
static int unwrap(MPI_Datatype dt, MPI_Datatype *next)
{
	int ni, na, nd, comb;
	int *ints;
	MPI_Aint *aints;
	MPI_Datatype *dts;

	*next = MPI_DATATYPE_NULL;
	if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
		return -1;
	if (comb == MPI_COMBINER_NAMED)
		return comb;
	ints = malloc(sizeof(int) * (size_t)(ni + 1));
	aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
	dts = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
	if (ints && aints && dts && nd >= 1 &&
	    PMPI_Type_get_contents(dt, ni, na, nd, ints, aints, dts) ==
		    MPI_SUCCESS) {
		*next = dts[0];
		for (int i = 1; i < nd; i++)
			drop(dts[i]);
	}
	free(ints), free(aints), free(dts);
	return *next == MPI_DATATYPE_NULL ? -1 : comb;
}

/* Is dt's type map in memory order with no gaps inside an element (a
 * named type, or dup, contiguous and resized over one)? Then its packed
 * form is a plain copy of [true lb, true lb + size). Other types with no
 * gaps may still list their blocks out of order: they are mapped. */
static bool in_order(MPI_Datatype dt)
{
	MPI_Datatype cur = dt, next;
	bool yes = false;

	for (int depth = 0; depth < DT_MAX_DEPTH; depth++) {
		int comb = unwrap(cur, &next);

		if (cur != dt)
			drop(cur);
		if (comb == MPI_COMBINER_NAMED) {
			yes = true;
			break;
		}
		if (comb != MPI_COMBINER_DUP &&
		    comb != MPI_COMBINER_CONTIGUOUS &&
		    comb != MPI_COMBINER_RESIZED) {
			drop(next);
			break;
		}
		cur = next;
	}
	return yes;
}

MPI_Datatype dt_basic(MPI_Datatype dt)
{
	MPI_Datatype cur = dt, next;

	for (int depth = 0; depth < DT_MAX_DEPTH; depth++) {
		int comb = unwrap(cur, &next);

		if (comb == MPI_COMBINER_NAMED)
			return cur; /* named: nothing to free */
		if (cur != dt)
			drop(cur);
		if (comb < 0)
			return MPI_DATATYPE_NULL;
		cur = next;
	}
	if (cur != dt)
		drop(cur);
	return MPI_DATATYPE_NULL;
}

int dt_span_of(MPI_Datatype dt, MPI_Count count, struct dt_span *s)
{
	MPI_Count lb, last;

	memset(s, 0, sizeof(*s));
	s->count = count;
	s->dt = dt;
	s->contig = true;
	if (count < 0)
		return MPI_ERR_COUNT;
	/* an uncommitted type fails here (MPICH), or has no size (both) */
	if (dt == MPI_DATATYPE_NULL ||
	    PMPI_Type_size_x(dt, &s->size) != MPI_SUCCESS ||
	    s->size == MPI_UNDEFINED || s->size < 0 ||
	    PMPI_Type_get_extent_x(dt, &lb, &s->ext) != MPI_SUCCESS ||
	    PMPI_Type_get_true_extent_x(dt, &s->tlb, &s->text) != MPI_SUCCESS)
		return MPI_ERR_TYPE;
	if (__builtin_mul_overflow(s->size, count, &s->bytes))
		return MPI_ERR_COUNT;
	if (!s->bytes)
		return MPI_SUCCESS;
	/* start of the last element; the span cannot overflow either */
	if (__builtin_mul_overflow(count - 1, s->ext, &last) ||
	    __builtin_add_overflow(last, s->tlb, &last))
		return MPI_ERR_COUNT;
	s->lo = last < s->tlb ? last : s->tlb;
	if (__builtin_add_overflow(last > s->tlb ? last : s->tlb, s->text,
				   &s->hi))
		return MPI_ERR_COUNT;
	s->contig = s->size == s->text && (count == 1 || s->ext == s->text) &&
		    in_order(dt);
	return MPI_SUCCESS;
}

/* ---- the segment map -------------------------------------------------- */

/* The runs of the packed element found so far: seg[i] covers packed
 * bytes [pos, pos + len); off holds the bytes of the source offset of
 * its first byte that the planes read so far have determined. */
struct runs {
	struct dt_seg *seg;
	uint64_t n, cap, max;
};

static int runs_push(struct runs *r, uint64_t pos, uint64_t len, int64_t off)
{
	if (r->n == r->cap) {
		uint64_t cap = r->cap ? 2 * r->cap : 64;
		struct dt_seg *s;

		if (cap > r->max)
			cap = r->max;
		if (r->n == cap)
			return DT_ELIMIT;
		s = realloc(r->seg, cap * sizeof(*s));
		if (!s)
			return MPI_ERR_NO_MEM;
		r->seg = s;
		r->cap = cap;
	}
	r->seg[r->n++] = (struct dt_seg){ .off = off, .len = len, .pos = pos };
	return MPI_SUCCESS;
}

/*
 * Plane p: pk[i] is byte p of the source offset of packed byte i. Split
 * every run where byte p breaks the run's sequence, and add byte p to
 * each run's offset. Below the last plane the comparison is modulo 256,
 * since carries into higher bytes are checked by the next plane; at the
 * last plane it is exact, so that a run cannot wrap around the probe.
 */
static int plane(struct runs *in, struct runs *out, const uint8_t *pk,
		 unsigned p, bool last)
{
	uint64_t low = p ? (1ull << (8 * p)) - 1 : 0;
	int rc;

	out->n = 0;
	for (uint64_t r = 0; r < in->n; r++) {
		const struct dt_seg *s = &in->seg[r];

		for (uint64_t j0 = 0, j; j0 < s->len; j0 = j) {
			uint64_t base = (((uint64_t)s->off + j0) & low) |
					(uint64_t)pk[s->pos + j0] << (8 * p);

			for (j = j0 + 1; j < s->len; j++) {
				uint64_t v = (base + j - j0) >> (8 * p);

				if ((last ? v : v & 0xff) != pk[s->pos + j])
					break;
			}
			rc = runs_push(out, s->pos + j0, j - j0, (int64_t)base);
			if (rc)
				return rc;
		}
	}
	return MPI_SUCCESS;
}

/* The segments of one element (offsets from the true lower bound). */
static int probe_element(const struct dt_span *s, uint64_t max_segs,
			 struct runs *res, char *why, size_t whylen)
{
	uint64_t size = (uint64_t)s->size, text = (uint64_t)s->text;
	struct runs a = { .max = max_segs }, b = { .max = max_segs };
	uint8_t *probe = malloc(text), *pk = malloc(size);
	unsigned planes = 1;
	int rc;

	if (!probe || !pk) {
		rc = MPI_ERR_NO_MEM;
		snprintf(why, whylen,
			 "no memory for the layout probe of a datatype (%llu "
			 "+ %llu bytes); use a type with a smaller extent or "
			 "pack the data",
			 (unsigned long long)text, (unsigned long long)size);
		goto out;
	}
	while (planes < 8 && (text - 1) >> (8 * planes))
		planes++;
	rc = runs_push(&a, 0, size, 0);
	for (unsigned p = 0; !rc && p < planes; p++) {
		int pos = 0;
		struct runs t;

		for (uint64_t o = 0; o < text; o++)
			probe[o] = (uint8_t)(o >> (8 * p));
		/* the type's byte at displacement d is probe[d - tlb] */
		rc = PMPI_Pack((uint8_t *)probe - s->tlb, 1, s->dt, pk,
			       (int)size, &pos, MPI_COMM_SELF);
		if (rc == MPI_SUCCESS && (uint64_t)pos != size) {
			rc = MPI_ERR_TYPE;
			snprintf(why, whylen,
				 "MPI_Pack of one element gave %d bytes, its "
				 "type size is %llu",
				 pos, (unsigned long long)size);
		} else if (rc != MPI_SUCCESS) {
			snprintf(why, whylen,
				 "MPI_Pack of one element failed (%d); "
				 "check the datatype",
				 rc);
		}
		if (!rc)
			rc = plane(&a, &b, pk, p, p == planes - 1);
		t = a, a = b, b = t;
	}
	if (rc == DT_ELIMIT)
		snprintf(why, whylen,
			 "the datatype has more than %llu contiguous pieces "
			 "per element; use larger blocks or pack the data "
			 "(MPI_Pack)",
			 (unsigned long long)max_segs);
	else if (rc == MPI_ERR_NO_MEM)
		snprintf(why, whylen,
			 "no memory for the layout of a datatype (%llu "
			 "pieces so far); use larger blocks or pack the data "
			 "(MPI_Pack)",
			 (unsigned long long)(a.n > b.n ? a.n : b.n));
out:
	free(probe);
	free(pk);
	free(b.seg);
	if (rc)
		free(a.seg);
	else
		*res = a;
	return rc;
}

int dt_map_of(const struct dt_span *s, uint64_t max_segs, uint64_t max_probe,
	      struct dt_map *m, char *why, size_t whylen)
{
	struct runs el = { 0 };
	uint64_t n, k = 0, count = (uint64_t)s->count;
	int64_t next, ext = (int64_t)s->ext;
	bool abut;
	int rc;

	memset(m, 0, sizeof(*m));
	if (s->contig) {
		m->first = s->lo;
		return MPI_SUCCESS;
	}
	if ((uint64_t)s->text > max_probe) {
		snprintf(why, whylen,
			 "the datatype's true extent (%lld bytes) is more than "
			 "%llu; libcxlmpi maps its layout with a probe of that "
			 "size; use a type with a smaller extent or pack the "
			 "data",
			 (long long)s->text, (unsigned long long)max_probe);
		return DT_ELIMIT;
	}
	rc = probe_element(s, max_segs, &el, why, whylen);
	if (rc)
		return rc;
	for (uint64_t j = 0; j < el.n; j++)
		el.seg[j].off += s->tlb;
	/* count elements at multiples of the extent; the last segment of
	 * one element may continue into the first of the next */
	abut = !__builtin_add_overflow(ext, el.seg[0].off, &next) &&
	       el.seg[el.n - 1].off + (int64_t)el.seg[el.n - 1].len == next;
	if (__builtin_mul_overflow(count, el.n, &n) ||
	    n - (abut ? count - 1 : 0) > max_segs) {
		snprintf(why, whylen,
			 "%lld elements of %llu contiguous pieces each are "
			 "more than %llu pieces; use larger blocks, a smaller "
			 "count, or pack the data (MPI_Pack)",
			 (long long)count, (unsigned long long)el.n,
			 (unsigned long long)max_segs);
		free(el.seg);
		return DT_ELIMIT;
	}
	n -= abut ? count - 1 : 0;
	if (n == 1) {
		/* contiguous after all: one segment */
		m->first = el.seg[0].off;
		free(el.seg);
		return MPI_SUCCESS;
	}
	if (!(m->seg = malloc(n * sizeof(*m->seg)))) {
		free(el.seg);
		snprintf(why, whylen,
			 "no memory for the layout of a datatype (%llu "
			 "segments); use larger blocks or pack the data",
			 (unsigned long long)n);
		return MPI_ERR_NO_MEM;
	}
	for (uint64_t i = 0; i < count; i++) {
		int64_t d;

		if (__builtin_mul_overflow((int64_t)i, ext, &d))
			goto overflow;
		for (uint64_t j = 0; j < el.n; j++) {
			int64_t off;
			struct dt_seg *g = &m->seg[k];

			if (__builtin_add_overflow(d, el.seg[j].off, &off))
				goto overflow;
			if (k && g[-1].off + (int64_t)g[-1].len == off) {
				g[-1].len += el.seg[j].len;
				continue;
			}
			*g = (struct dt_seg){ .off = off,
					      .len = el.seg[j].len,
					      .pos = i * (uint64_t)s->size +
						     el.seg[j].pos };
			k++;
		}
	}
	free(el.seg);
	m->nseg = k;
	return MPI_SUCCESS;
overflow:
	free(el.seg);
	dt_map_free(m);
	snprintf(why, whylen,
		 "count %lld x extent %lld overflows the address space; check "
		 "the count and the datatype's extent",
		 (long long)count, (long long)ext);
	return DT_ELIMIT;
}

void dt_map_free(struct dt_map *m)
{
	free(m->seg);
	memset(m, 0, sizeof(*m));
}

/* The segment that holds packed byte pos (pos < the packed size). */
static const struct dt_seg *seg_at(const struct dt_map *m, uint64_t pos)
{
	uint64_t lo = 0, hi = m->nseg;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (m->seg[mid].pos <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return &m->seg[lo];
}

void dt_gather(const struct dt_map *m, const uint8_t *buf, uint64_t pos,
	       void *dst, uint64_t n)
{
	uint8_t *d = dst;

	if (!m->seg) {
		memcpy(d, buf + m->first + pos, n);
		return;
	}
	for (const struct dt_seg *s = n ? seg_at(m, pos) : NULL; n; s++) {
		uint64_t in = pos - s->pos, c = s->len - in;

		if (c > n)
			c = n;
		memcpy(d, buf + s->off + in, c);
		d += c, pos += c, n -= c;
	}
}

void dt_scatter(const struct dt_map *m, uint8_t *buf, uint64_t pos,
		const void *src, uint64_t n)
{
	const uint8_t *p = src;

	if (!m->seg) {
		memcpy(buf + m->first + pos, p, n);
		return;
	}
	for (const struct dt_seg *s = n ? seg_at(m, pos) : NULL; n; s++) {
		uint64_t in = pos - s->pos, c = s->len - in;

		if (c > n)
			c = n;
		memcpy(buf + s->off + in, p, c);
		p += c, pos += c, n -= c;
	}
}

/* ---- lines touched ------------------------------------------------------ */

/* Found by unpacking all-ones data into a zeroed image of [lo, hi). */
uint8_t *dt_lines(const uint8_t *p, const struct dt_span *s, size_t line,
		  uintptr_t *first, size_t *nlines)
{
	size_t span = (size_t)(s->hi - s->lo);
	uint8_t *img = calloc(span, 1), *ones = malloc((size_t)s->bytes);
	uint8_t *map = NULL;
	uintptr_t a = (uintptr_t)p + (uintptr_t)s->lo;
	int pos = 0;

	*first = a & ~(uintptr_t)(line - 1);
	*nlines = (a + span - *first + line - 1) / line;
	if (img && ones && (map = calloc(*nlines, 1))) {
		memset(ones, 0xff, (size_t)s->bytes);
		if (PMPI_Unpack(ones, (int)s->bytes, &pos, img - s->lo,
				(int)s->count, s->dt,
				MPI_COMM_SELF) != MPI_SUCCESS) {
			free(map);
			map = NULL;
		} else {
			for (size_t i = 0; i < span; i++)
				if (img[i])
					map[(a + i - *first) / line] = 1;
		}
	}
	free(img);
	free(ones);
	return map;
}
