/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data layout of a point-to-point stream request: (buf, count,
 * datatype) as a list of contiguous segments, in type-map order, found
 * once by the host thread at MPIS_Send_init/MPIS_Recv_init. The progress
 * thread then gathers a message from the segments and scatters it into
 * them with plain copies and no MPI call (stream_channel.c).
 *
 * How the layout is found: MPI_Pack of a probe. The probe covers the true
 * extent of one element, and each of its bytes holds one byte of its own
 * offset (plane p: offset >> 8p & 0xff), so the packed bytes of plane p
 * say, for every packed byte, byte p of the offset it came from. One
 * plane per byte of the true extent (1 to 4 passes) gives every offset.
 *
 * Why a probe, and not a walk of MPI_Type_get_envelope/get_contents: the
 * library's own MPI_Pack defines the type map, so the result is right for
 * every constructor (vector, indexed, struct, subarray, darray, resized,
 * duplicates, overlaps, out-of-order blocks) with no per-combiner code,
 * and it uses the same calls on MPICH and Open MPI. The costs, at init
 * only: temporary memory of the element's true extent plus its size, and
 * up to 4 packs of one element. Count > 1 replicates the element's
 * segments at multiples of the extent (the MPI definition of count).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

/* The runs of the packed element found so far: seg[i] covers packed
 * bytes [pos, pos + len); off holds the bytes of the source offset of
 * its first byte that the planes read so far have determined. */
struct runs {
	struct seg *seg;
	uint64_t n, cap;
};

static int runs_push(struct runs *r, uint64_t pos, uint64_t len, int64_t off)
{
	if (r->n == r->cap) {
		uint64_t cap = r->cap ? 2 * r->cap : 64;
		struct seg *s;

		if (cap > STREAM_MAX_SEGS)
			cap = STREAM_MAX_SEGS;
		if (r->n == cap)
			return MPIS_UNSUPPORTED_BEHAVIOR;
		s = realloc(r->seg, cap * sizeof(*s));
		if (!s)
			return MPI_ERR_NO_MEM;
		r->seg = s;
		r->cap = cap;
	}
	r->seg[r->n++] = (struct seg){ .off = off, .len = len, .pos = pos };
	return MPIS_SUCCESS;
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
		const struct seg *s = &in->seg[r];

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
	return MPIS_SUCCESS;
}

/* The segments of one element (offsets from the true lower bound). */
static int probe_element(MPI_Datatype dt, uint64_t size, MPI_Count tlb,
			 uint64_t text, struct runs *res)
{
	struct runs a = { 0 }, b = { 0 };
	uint8_t *probe = malloc(text), *pk = malloc(size);
	unsigned planes = 1;
	int rc;

	if (!probe || !pk) {
		rc = stream_fail(MPI_ERR_NO_MEM,
				 "no memory for the layout probe of a "
				 "datatype (%llu + %llu bytes); use a type "
				 "with a smaller extent or pack the data",
				 (unsigned long long)text,
				 (unsigned long long)size);
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
		rc = PMPI_Pack((uint8_t *)probe - tlb, 1, dt, pk, (int)size,
			       &pos, MPI_COMM_SELF);
		if (rc == MPI_SUCCESS && (uint64_t)pos != size)
			rc = stream_fail(MPI_ERR_TYPE,
					 "MPI_Pack of one element gave %d "
					 "bytes, its type size is %llu",
					 pos, (unsigned long long)size);
		if (!rc)
			rc = plane(&a, &b, pk, p, p == planes - 1);
		t = a, a = b, b = t;
	}
	if (rc == MPIS_UNSUPPORTED_BEHAVIOR)
		rc = stream_fail(rc,
				 "the datatype has more than %u contiguous "
				 "pieces per element; use larger blocks or "
				 "pack the data (MPI_Pack)",
				 STREAM_MAX_SEGS);
	else if (rc == MPI_ERR_NO_MEM)
		rc = stream_fail(rc,
				 "no memory for the layout of a datatype "
				 "(%llu pieces so far); use larger blocks or "
				 "pack the data (MPI_Pack)",
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

/* Is dt a predefined type? Then its bytes are in memory order. */
static bool named(MPI_Datatype dt)
{
	int ni, na, nd, comb;

	return PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) ==
		       MPI_SUCCESS &&
	       comb == MPI_COMBINER_NAMED;
}

int dtype_layout(const void *buf, MPI_Count count, MPI_Datatype dt, bool sender,
		 uint8_t **first, uint64_t *bytes, struct dlayout *dl)
{
	MPI_Count size, tlb, text, lb, ext;
	struct runs el = { 0 };
	uint64_t n, k = 0;
	int64_t next;
	bool abut;
	int rc;

	memset(dl, 0, sizeof(*dl));
	if (count < 0)
		return MPI_ERR_COUNT;
	if (dt == MPI_DATATYPE_NULL)
		return MPI_ERR_TYPE;
	if (PMPI_Type_size_x(dt, &size) != MPI_SUCCESS ||
	    PMPI_Type_get_true_extent_x(dt, &tlb, &text) != MPI_SUCCESS ||
	    PMPI_Type_get_extent_x(dt, &lb, &ext) != MPI_SUCCESS ||
	    size == MPI_UNDEFINED || size < 0)
		return stream_fail(MPI_ERR_TYPE,
				   "the datatype is not a committed type; "
				   "call MPI_Type_commit first");
	if (size && (uint64_t)count > STREAM_MAX_BYTES / (uint64_t)size)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "a stream request carries at most %llu "
				   "bytes (count %lld x type size %lld); "
				   "split the message",
				   (unsigned long long)STREAM_MAX_BYTES,
				   (long long)count, (long long)size);
	*bytes = (uint64_t)count * (uint64_t)size;
	*first = (uint8_t *)buf;
	if (!*bytes)
		return MPIS_SUCCESS;
	/* a predefined type, dense (size == true extent), and elements that
	 * follow each other: one segment, no probe */
	if (size == text && (count == 1 || size == ext) && named(dt)) {
		*first = (uint8_t *)buf + tlb;
		return MPIS_SUCCESS;
	}
	if ((uint64_t)text > STREAM_MAX_BYTES)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "the datatype's true extent (%lld bytes) "
				   "is more than %llu; libcxlmpi maps its "
				   "layout with a probe of that size; use a "
				   "type with a smaller extent or pack the "
				   "data",
				   (long long)text,
				   (unsigned long long)STREAM_MAX_BYTES);
	rc = probe_element(dt, (uint64_t)size, tlb, (uint64_t)text, &el);
	if (rc)
		return rc;
	for (uint64_t j = 0; j < el.n; j++)
		el.seg[j].off += tlb;
	/* count elements at multiples of the extent; the last segment of
	 * one element may continue into the first of the next */
	abut = !__builtin_add_overflow((int64_t)ext, el.seg[0].off, &next) &&
	       el.seg[el.n - 1].off + (int64_t)el.seg[el.n - 1].len == next;
	if (__builtin_mul_overflow((uint64_t)count, el.n, &n) ||
	    n - (abut ? (uint64_t)count - 1 : 0) > STREAM_MAX_SEGS) {
		free(el.seg);
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "%lld elements of %llu contiguous pieces "
				   "each are more than %u pieces; use larger "
				   "blocks, a smaller count, or pack the data "
				   "(MPI_Pack)",
				   (long long)count, (unsigned long long)el.n,
				   STREAM_MAX_SEGS);
	}
	n -= abut ? (uint64_t)count - 1 : 0;
	if (n == 1) {
		/* contiguous after all: the single-segment path */
		*first = (uint8_t *)buf + el.seg[0].off;
		free(el.seg);
		return MPIS_SUCCESS;
	}
	dl->seg = malloc(n * sizeof(*dl->seg));
	if (sender)
		dl->bounce = malloc(*bytes < CHAN_CHUNK ? *bytes : CHAN_CHUNK);
	if (!dl->seg || (sender && !dl->bounce)) {
		free(el.seg);
		dtype_free(dl);
		return stream_fail(MPI_ERR_NO_MEM,
				   "no memory for the layout of a datatype "
				   "(%llu segments); use larger blocks or "
				   "pack the data",
				   (unsigned long long)n);
	}
	for (uint64_t i = 0; i < (uint64_t)count; i++) {
		int64_t d;

		if (__builtin_mul_overflow((int64_t)i, (int64_t)ext, &d))
			goto overflow;
		for (uint64_t j = 0; j < el.n; j++) {
			int64_t off;
			struct seg *s = &dl->seg[k];

			if (__builtin_add_overflow(d, el.seg[j].off, &off))
				goto overflow;
			if (k && s[-1].off + (int64_t)s[-1].len == off) {
				s[-1].len += el.seg[j].len;
				continue;
			}
			*s = (struct seg){ .off = off,
					   .len = el.seg[j].len,
					   .pos = i * (uint64_t)size +
						  el.seg[j].pos };
			k++;
		}
	}
	free(el.seg);
	dl->nseg = k;
	return MPIS_SUCCESS;
overflow:
	free(el.seg);
	dtype_free(dl);
	return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
			   "count %lld x extent %lld overflows the address "
			   "space; check the count and the datatype's extent",
			   (long long)count, (long long)ext);
}

void dtype_free(struct dlayout *dl)
{
	free(dl->seg);
	free(dl->bounce);
	memset(dl, 0, sizeof(*dl));
}

/* The segment that holds packed byte pos (pos < the packed size). */
static const struct seg *seg_at(const struct dlayout *dl, uint64_t pos)
{
	uint64_t lo = 0, hi = dl->nseg;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (dl->seg[mid].pos <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return &dl->seg[lo];
}

void dtype_gather(const struct dlayout *dl, const uint8_t *buf, uint64_t pos,
		  void *dst, uint64_t n)
{
	uint8_t *d = dst;

	for (const struct seg *s = n ? seg_at(dl, pos) : NULL; n; s++) {
		uint64_t in = pos - s->pos, m = s->len - in;

		if (m > n)
			m = n;
		memcpy(d, buf + s->off + in, m);
		d += m, pos += m, n -= m;
	}
}

void dtype_scatter(const struct dlayout *dl, uint8_t *buf, uint64_t pos,
		   const void *src, uint64_t n)
{
	const uint8_t *p = src;

	for (const struct seg *s = n ? seg_at(dl, pos) : NULL; n; s++) {
		uint64_t in = pos - s->pos, m = s->len - in;

		if (m > n)
			m = n;
		memcpy(buf + s->off + in, p, m);
		p += m, pos += m, n -= m;
	}
}
