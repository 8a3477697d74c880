/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Mapping helper shared by the backends and the emulator: every pool view
 * starts on a 2 MiB boundary (devdax requires it; huge pages like it) and
 * is surrounded by PROT_NONE guard regions, so a stray access just past
 * either end faults instead of touching unrelated memory.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define MAP_ALIGN (2ull << 20)
#define GUARD (2ull << 20)

int cxl_map_aligned(int fd, uint64_t size, int prot, int flags,
		    const char *what, void **resv, size_t *resv_len,
		    uint8_t **base)
{
	size_t len = size + 2 * GUARD + MAP_ALIGN;
	uint8_t *r, *start;
	void *m;

	r = mmap(NULL, len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return cxl_seterr(CXL_ENOMEM,
				  "cannot reserve %llu bytes of "
				  "address space for the %s: %s",
				  (unsigned long long)len, what,
				  strerror(errno));
	start = (uint8_t *)ALIGN_UP((uintptr_t)r + GUARD, MAP_ALIGN);
	m = mmap(start, size, prot, flags | MAP_FIXED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;

		munmap(r, len);
		return cxl_seterr(e == EACCES ? CXL_EACCES : CXL_ENOMEM,
				  "cannot map %llu bytes of the %s: %s",
				  (unsigned long long)size, what, strerror(e));
	}
	*resv = r;
	*resv_len = len;
	*base = start;
	return CXL_OK;
}

void cxl_unmap(void *resv, size_t len)
{
	if (resv)
		munmap(resv, len);
}
