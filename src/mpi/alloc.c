/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alloc_mem and MPI_Free_mem in the pool: an arena object per
 * allocation, in the process's shared attachment (cxl_pool_attach_shared),
 * which the provider shares. A send from such a buffer passes a pointer
 * (the receiver copies once), and windows over it are direct windows
 * (window.c). With the info key "cxl_pool" = "false", or
 * CXLMPI_ALLOC_MEM=0, or no pool configured (CXL_POOL unset), the MPI
 * library's own allocator is used, unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

cxl_pool *pool;
unsigned long mem_seq;
static int pool_state; /* 0 untried, 1 attached, -1 not available */
static struct pool_mem *mems;

cxl_pool *get_pool(void)
{
	const struct cxlmpi_config *cfg = cxlmpi_config();
	struct cxl_pool_opts o;

	if (pool_state)
		return pool_state > 0 ? pool : NULL;
	pool_state = -1;
	if (!cfg->alloc_mem || !cfg->pool)
		return NULL; /* not wanted, or no pool: the MPI's allocator */
	if (cxl_opts_from_env(&o) || cxl_pool_attach_shared(&o, &pool)) {
		fprintf(stderr,
			"libcxlmpi: cannot attach the pool (%s); MPI_Alloc_mem "
			"uses the MPI library's allocator\n",
			cxl_errmsg());
		return NULL;
	}
	pool_state = 1;
	return pool;
}

/* A pool object name of this process: host id and pid, so that jobs on
 * different hosts of one pool never pick the same name. */
void obj_name(char *buf, size_t len, const char *kind)
{
	snprintf(buf, len, "cxlmpi.%s.h%u.%ld.%lu", kind,
		 (unsigned)cxl_pool_host_id(pool), (long)getpid(), ++mem_seq);
}

bool info_says_no(MPI_Info info)
{
	char v[16];
	int flag = 0;

	if (info == MPI_INFO_NULL)
		return false;
	PMPI_Info_get(info, "cxl_pool", sizeof(v) - 1, v, &flag);
	return flag && (!strcmp(v, "false") || !strcmp(v, "0"));
}

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
	cxl_pool *p = info_says_no(info) || size <= 0 ? NULL : get_pool();
	struct pool_mem *m;

	if (!p || !(m = calloc(1, sizeof(*m))))
		return PMPI_Alloc_mem(size, info, baseptr);
	obj_name(m->name, sizeof(m->name), "mem");
	if (cxl_obj_create(p, m->name, (uint64_t)size, CXL_OBJ_ALIGN_2M,
			   &m->obj)) {
		fprintf(stderr,
			"libcxlmpi: no pool memory for %lld bytes (%s); using "
			"the MPI library's allocator\n",
			(long long)size, cxl_errmsg());
		free(m);
		return PMPI_Alloc_mem(size, info, baseptr);
	}
	m->next = mems;
	mems = m;
	*(void **)baseptr = m->obj.ptr;
	return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
	for (struct pool_mem **pp = &mems; *pp; pp = &(*pp)->next) {
		struct pool_mem *m = *pp;

		if (m->obj.ptr != base)
			continue;
		*pp = m->next;
		cxl_obj_close(&m->obj);
		cxl_obj_destroy(pool, m->name);
		free(m);
		return MPI_SUCCESS;
	}
	return PMPI_Free_mem(base);
}
