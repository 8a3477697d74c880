/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A bounded cache of released objects of one kind, so that an endpoint's
 * hot paths (a posted receive, an entry the network link asks for, a send
 * that has to wait) take and give objects without malloc and free. An
 * object embeds a struct cxlfi_fl_node; a list keeps at most CXLFI_FL_MAX
 * of them, and the caller frees what it does not take. Used under the
 * domain lock, as everything of an endpoint.
 */
#ifndef CXLFI_FREELIST_H
#define CXLFI_FREELIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CXLFI_FL_MAX 64u /* objects one list keeps */

struct cxlfi_fl_node {
	struct cxlfi_fl_node *next;
};

struct cxlfi_freelist {
	struct cxlfi_fl_node *head;
	unsigned n;
};

static inline void *cxlfi_fl_obj(struct cxlfi_fl_node *n, size_t off)
{
	return n ? (char *)n - off : NULL;
}

/* The object of type `type` whose member `member` is node (evaluated
 * once), or NULL. */
#define CXLFI_FL_OBJ(node, type, member) \
	((type *)cxlfi_fl_obj((node), offsetof(type, member)))

/* A kept object's node, or NULL when the list is empty. */
static inline struct cxlfi_fl_node *cxlfi_fl_take(struct cxlfi_freelist *fl)
{
	struct cxlfi_fl_node *n = fl->head;

	if (n) {
		fl->head = n->next;
		fl->n--;
	}
	return n;
}

/* A zeroed object of `size` bytes whose node lies at `off`: a kept one,
 * else a new one; NULL when out of memory. */
static inline void *cxlfi_fl_new(struct cxlfi_freelist *fl, size_t off,
				 size_t size)
{
	void *o = cxlfi_fl_obj(cxlfi_fl_take(fl), off);

	return o ? memset(o, 0, size) : calloc(1, size);
}

#define CXLFI_FL_NEW(fl, type, member) \
	((type *)cxlfi_fl_new((fl), offsetof(type, member), sizeof(type)))

/* Keeps the object of node n; false when the list is full (the caller
 * frees it then). */
static inline bool cxlfi_fl_give(struct cxlfi_freelist *fl,
				 struct cxlfi_fl_node *n)
{
	if (fl->n >= CXLFI_FL_MAX)
		return false;
	n->next = fl->head;
	fl->head = n;
	fl->n++;
	return true;
}

#endif
