/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The windows libcxlmpi keeps coherent: a list, with the snapshot each
 * keeps of its memory. The layer below the window calls (window.c), their
 * synchronisation (epoch.c) and the coherence points (coherence.c), which
 * all look windows up here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct pool_win *win_list;

struct pool_win *win_find(MPI_Win win)
{
	for (struct pool_win *w = win_list; w; w = w->next)
		if (w->win == win)
			return w;
	return NULL;
}

struct pool_win *win_track(MPI_Win win, MPI_Comm comm, uint8_t *base,
			   size_t size, bool own)
{
	/* hardware-coherent: nothing to write back or invalidate */
	bool coherent = cxl_pool_mode(pool) == CXL_COH_COHERENT;
	struct pool_win *w = calloc(1, sizeof(*w));

	if (!w || (!coherent && !(w->shadow = malloc(size ? size : 1)))) {
		fprintf(stderr,
			"libcxlmpi: no memory for the snapshot of a "
			"window of %zu bytes; it is not kept coherent\n",
			size);
		free(w);
		return NULL;
	}
	w->win = win;
	PMPI_Comm_rank(comm, &w->rank);
	w->base = base;
	w->size = size;
	if (size && own && w->shadow) {
		cxl_flush(pool, base, size);
		cxl_wfence(pool);
	} else if (size && w->shadow) {
		cxl_inval(pool, base, size);
	}
	if (size && w->shadow)
		memcpy(w->shadow, base, size);
	w->next = win_list;
	win_list = w;
	return w;
}

struct pool_win *win_entry(MPI_Win win)
{
	struct pool_win *w = win_find(win);

	if (!w && (w = calloc(1, sizeof(*w)))) {
		w->win = win;
		w->next = win_list;
		win_list = w;
	}
	return w;
}

void win_unlink(struct pool_win *w)
{
	for (struct pool_win **pp = &win_list; w && *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
}

void win_untrack(struct pool_win *w)
{
	win_unlink(w);
	if (w)
		free(w->shadow);
	free(w);
}
