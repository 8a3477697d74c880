/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * STREAM arrays as persistent objects of PMDK's libpmemobj: one pool
 * (pmemobj_create), three arrays (pmemobj_alloc), pmemobj_persist() after
 * each kernel. A devdax device is used whole (size 0), as PMDK does on
 * real persistent memory and on a CXL region exposed as devdax.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream_pmemobj.h"

#ifdef CXLBENCH_HAVE_PMEMOBJ
#include <libpmemobj.h>

#define LAYOUT "cxlbench-stream"
#define ALLOC_ROUND (256u << 10) /* PMDK's chunk size */

struct pmo {
	PMEMobjpool *pop;
	char path[512];
	bool created_file;
};

bool pmo_available(const char **version)
{
	/* the package's version, from pkg-config (tools/CMakeLists.txt) */
	*version = CXLBENCH_PMEMOBJ_VERSION;
	return true;
}

int pmo_open(const char *path, size_t n, struct pmo **out, double *arr[3])
{
	bool dax = !strncmp(path, "/dev/dax", 8);
	size_t bytes = (n * sizeof(double) + ALLOC_ROUND - 1) / ALLOC_ROUND *
		       ALLOC_ROUND;
	/* three arrays, PMDK's metadata and headers, and room to spare */
	size_t size = 3 * bytes + bytes / 8 + (64u << 20);
	struct pmo *m = calloc(1, sizeof(*m));

	if (!m) {
		fprintf(stderr, "cxlbench pmem: out of memory\n");
		return -1;
	}
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->pop = pmemobj_create(path, LAYOUT, dax ? 0 : size, 0600);
	if (!m->pop) {
		fprintf(stderr,
			"cxlbench pmem: pmemobj_create(%s, %zu bytes) failed: "
			"%s; %s\n",
			path, dax ? (size_t)0 : size, pmemobj_errormsg(),
			errno == EEXIST ? "remove the file or give another "
					  "--pmem-file"
			: dax		? "the device must hold no other pool "
					  "(pmempool rm), and be large enough"
					: "give --pmem-file a path on a file "
					  "system with room for it");
		free(m);
		return -1;
	}
	m->created_file = !dax;
	for (int i = 0; i < 3; i++) {
		PMEMoid oid;

		if (pmemobj_alloc(m->pop, &oid, bytes, 1, NULL, NULL)) {
			fprintf(stderr,
				"cxlbench pmem: pmemobj_alloc of %zu bytes in "
				"%s failed: %s; give a smaller --n, or a "
				"larger device\n",
				bytes, path, pmemobj_errormsg());
			pmo_close(m);
			return -1;
		}
		arr[i] = pmemobj_direct(oid);
	}
	*out = m;
	return 0;
}

void pmo_persist(struct pmo *m, const void *p, size_t len)
{
	pmemobj_persist(m->pop, p, len);
}

void pmo_close(struct pmo *m)
{
	if (!m)
		return;
	pmemobj_close(m->pop);
	if (m->created_file && unlink(m->path))
		fprintf(stderr,
			"cxlbench pmem: cannot remove %s: %s; delete it by "
			"hand\n",
			m->path, strerror(errno));
	free(m);
}

#else /* !CXLBENCH_HAVE_PMEMOBJ */

struct pmo {
	int unused;
};

bool pmo_available(const char **version)
{
	*version = "";
	return false;
}

int pmo_open(const char *path, size_t n, struct pmo **out, double *arr[3])
{
	(void)path, (void)n, (void)out, (void)arr;
	fprintf(stderr, "cxlbench pmem: built without libpmemobj: install "
			"libpmemobj-dev (scripts/setup.sh) and rebuild\n");
	return -1;
}

void pmo_persist(struct pmo *m, const void *p, size_t len)
{
	(void)m, (void)p, (void)len;
}

void pmo_close(struct pmo *m)
{
	(void)m;
}

#endif
