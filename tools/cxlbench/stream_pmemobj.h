/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * STREAM arrays in a PMDK libpmemobj pool (stream_pmemobj.c). Built only
 * when pkg-config finds libpmemobj (CXLBENCH_HAVE_PMEMOBJ); otherwise
 * pmo_open() says what to install.
 */
#ifndef CXLBENCH_STREAM_PMEMOBJ_H
#define CXLBENCH_STREAM_PMEMOBJ_H

#include <stdbool.h>
#include <stddef.h>

struct pmo;

/* Whether this build has libpmemobj, and its version ("" when not). */
bool pmo_available(const char **version);

/*
 * Create a pmemobj pool at path (a file, created; or a devdax device,
 * used whole) and allocate three arrays of n doubles in it. Returns 0,
 * or -1 after a message naming the problem and the fix.
 */
int pmo_open(const char *path, size_t n, struct pmo **out, double *arr[3]);

/* pmemobj_persist(): write back [p, p + len) and fence. */
void pmo_persist(struct pmo *m, const void *p, size_t len);

/* Close the pool; a file that pmo_open created is removed. */
void pmo_close(struct pmo *m);

#endif
