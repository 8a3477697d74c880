/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memory layout of (buffer, count, datatype): the one owner of
 * datatype layout in libcxlmpi, used by RMA on pool windows (rma.c) and by
 * stream requests (stream_request.c, stream_channel.c).
 *
 *  - dt_span_of: size, packed bytes, the range of memory touched, and
 *    whether the data is a plain copy of one contiguous range;
 *  - dt_map_of: the data as a list of contiguous segments in type-map
 *    order, so that a thread that must not call MPI can gather and
 *    scatter it with plain copies (dt_gather, dt_scatter);
 *  - dt_lines: the cache lines a type map touches (for coherence);
 *  - dt_basic: the predefined type a derived one is built of.
 *
 * Every PMPI call's return code is checked; none is made on a type that
 * is not committed.
 */
#ifndef CXLMPI_DATATYPE_H
#define CXLMPI_DATATYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

/* count elements of a datatype, as laid out in memory */
struct dt_span {
	MPI_Count count;
	MPI_Datatype dt;
	MPI_Count size;	    /* data bytes of one element */
	MPI_Count bytes;    /* data bytes of all: count x size, packed */
	MPI_Count tlb, ext; /* true lower bound; extent (element stride) */
	MPI_Count text;	    /* true extent of one element */
	MPI_Count lo, hi;   /* range touched, relative to the buffer */
	bool contig;	    /* the data is [lo, lo + bytes), in order */
};

/* The span of count elements of dt. MPI_ERR_COUNT: count < 0 or a range
 * beyond MPI_Count; MPI_ERR_TYPE: a null or uncommitted type. */
int dt_span_of(MPI_Datatype dt, MPI_Count count, struct dt_span *s);

/* dt_map_of: a limit given by the caller (segments, probe size) or the
 * address space would be exceeded */
#define DT_ELIMIT (-2)

/*
 * Segment i is bytes [off, off + len) from the buffer, packed bytes
 * [pos, pos + len) of the data; adjacent segments are coalesced. seg ==
 * NULL: the data is one segment, bytes [first, first + bytes).
 */
struct dt_seg {
	int64_t off;
	uint64_t len, pos;
};
struct dt_map {
	struct dt_seg *seg;
	uint64_t nseg;
	int64_t first;
};

/* The segments of s (s->bytes > 0), at most max_segs of them, found with
 * a probe of at most max_probe bytes (the true extent of one element).
 * Returns MPI_SUCCESS, MPI_ERR_NO_MEM, MPI_ERR_TYPE or DT_ELIMIT, with
 * the cause and its fix in why. */
int dt_map_of(const struct dt_span *s, uint64_t max_segs, uint64_t max_probe,
	      struct dt_map *m, char *why, size_t whylen);
void dt_map_free(struct dt_map *m);
/* Copy packed bytes [pos, pos + n) of the data in buf to dst / from src
 * (pos + n <= the packed size). No MPI call: any thread may use them. */
void dt_gather(const struct dt_map *m, const uint8_t *buf, uint64_t pos,
	       void *dst, uint64_t n);
void dt_scatter(const struct dt_map *m, uint8_t *buf, uint64_t pos,
		const void *src, uint64_t n);

/* The lines of size line that the type map of s touches at p (s->bytes
 * int-sized): map[i] != 0 for line first + i * line, i < *nlines. The
 * caller frees the map; NULL: no memory. */
uint8_t *dt_lines(const uint8_t *p, const struct dt_span *s, size_t line,
		  uintptr_t *first, size_t *nlines);

/* The predefined type dt is built of (accumulate types have exactly one);
 * MPI_DATATYPE_NULL if there is none. Not to be freed. */
MPI_Datatype dt_basic(MPI_Datatype dt);

#endif
