/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Array placement for 'cxlbench stream'.
 *
 * Page interleaving is built in place, over the array's pool object:
 * the object's range of this process's pool mapping stays where it is,
 * and every DRAM page of the pattern gets an anonymous page mapped over
 * it (MAP_FIXED). Clearing the layout maps the object back in one piece:
 * the pool file or device at the object's offset (MAP_FIXED of the pool
 * fd), or, in the emulated mode, fresh cache pages reloaded from the
 * pool.
 *
 * Why over the object, and not a fresh range with the pool file mapped
 * into it: in the emulated mode the pool pages this process reads and
 * writes are the emulator's private cache, which exists only at the pool
 * mapping; a second mapping of the pool file would bypass the emulator
 * and its flushes would then overwrite the data. Built over the object,
 * the array's pool pages are pool memory in every mode, and cxl_flush()
 * and cxl_inval() reach them by their addresses as usual.
 *
 * A devdax mapping can only be split on 2 MiB boundaries, and a hugetlbfs
 * one on huge pages: those pools interleave at 2 MiB.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cxlbench.h"
#include "stream_place.h"

#define OBJ_ALIGN (2ull << 20)
#define PAGE_4K 4096ull
#define HUGETLBFS_MAGIC_ 0x958458f6
#define MAP_MARGIN 1024 /* mappings left to the rest of the process */

static const char arr_name[ARR_N] = { 'a', 'b', 'c' };

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

static uint64_t pool_gran(const char *path)
{
	struct statfs fs;

	if (!strncmp(path, "/dev/dax", 8))
		return OBJ_ALIGN;
	if (!statfs(path, &fs) && (unsigned long)fs.f_type == HUGETLBFS_MAGIC_)
		return (uint64_t)fs.f_bsize > OBJ_ALIGN ? (uint64_t)fs.f_bsize
							: OBJ_ALIGN;
	return PAGE_4K;
}

int stream_mem_init(struct stream_mem *m, cxl_pool *pool, size_t n,
		    const char *prefix)
{
	char sz[32];

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->n = n;
	m->bytes = round_up((uint64_t)n * sizeof(double), OBJ_ALIGN);
	snprintf(m->prefix, sizeof(m->prefix), "%s", prefix);
	for (int i = 0; i < ARR_N; i++) {
		void *d = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (d == MAP_FAILED) {
			fprintf(stderr,
				"cxlbench: cannot map %s of DRAM for array "
				"%c: %s; lower --n\n",
				bench_fmt_size(m->bytes, sz, sizeof(sz)),
				arr_name[i], strerror(errno));
			stream_mem_fini(m);
			return -1;
		}
		m->dram[i] = d;
	}
	if (!pool)
		return 0;
	m->pool = pool;
	m->emulated = cxl_pool_mode(pool) == CXL_COH_EMULATED;
	m->gran = pool_gran(cxl_pool_path(pool));
	if (!m->emulated) {
		m->fd = open(cxl_pool_path(pool), O_RDWR | O_CLOEXEC);
		if (m->fd < 0) {
			fprintf(stderr,
				"cxlbench: cannot open the pool %s to map its "
				"pages: %s; run as a user who may write the "
				"pool\n",
				cxl_pool_path(pool), strerror(errno));
			stream_mem_fini(m);
			return -1;
		}
	}
	for (int i = 0; i < ARR_N; i++) {
		char name[CXL_NAME_MAX + 1];
		int rc;

		snprintf(name, sizeof(name), "%s-%c", prefix, arr_name[i]);
		/* Zeroing faults every page in before anything is timed. */
		rc = cxl_obj_create(pool, name, m->bytes,
				    CXL_OBJ_ALIGN_2M | CXL_OBJ_ZERO,
				    &m->obj[i]);
		if (rc) {
			fprintf(stderr,
				"cxlbench: cannot create the %s pool object "
				"for array %c: %s\n",
				bench_fmt_size(m->bytes, sz, sizeof(sz)),
				arr_name[i], cxl_errmsg());
			stream_mem_fini(m);
			return -1;
		}
		m->have_obj[i] = true;
	}
	return 0;
}

int stream_mem_fini(struct stream_mem *m)
{
	int ret = 0;

	for (int i = 0; i < ARR_N; i++) {
		char name[CXL_NAME_MAX + 1];

		if (m->dram[i])
			munmap(m->dram[i], m->bytes);
		m->dram[i] = NULL;
		if (!m->have_obj[i] || m->damaged)
			continue;
		snprintf(name, sizeof(name), "%s-%c", m->prefix, arr_name[i]);
		if (cxl_obj_destroy(m->pool, name) ||
		    cxl_obj_close(&m->obj[i])) {
			fprintf(stderr,
				"cxlbench: cannot remove pool object %s: "
				"%s\n",
				name, cxl_errmsg());
			ret = -1;
		}
		m->have_obj[i] = false;
	}
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	return ret;
}

/* ---- interleaving ------------------------------------------------------ */

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static long count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	long n = 0;
	int ch;

	if (!f)
		return 0;
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* Mappings one interleaved array splits into: a DRAM and a pool mapping
 * per period of the pattern. */
static uint64_t maps_needed(uint64_t bytes, uint64_t gran, unsigned rd,
			    unsigned rp)
{
	uint64_t pages = bytes / gran, period = rd + rp;

	return 2 * ((pages + period - 1) / period) + 1;
}

uint64_t stream_ileave_gran(const struct stream_mem *m, unsigned rd,
			    unsigned rp, char *note, size_t cap)
{
	long max = read_long("/proc/sys/vm/max_map_count");
	long have = count_maps(), room;
	uint64_t g = m->gran, need;
	char a[32], b[32];

	note[0] = '\0';
	if (max <= 0)
		return g;
	room = max - have - MAP_MARGIN;
	while (g < OBJ_ALIGN &&
	       ARR_N * maps_needed(m->bytes, g, rd, rp) > (uint64_t)room)
		g *= 2;
	if (g == m->gran)
		return g;
	need = ARR_N * maps_needed(m->bytes, m->gran, rd, rp) + have +
	       MAP_MARGIN;
	snprintf(note, cap,
		 "%u:%u at %s needs %llu mappings and vm.max_map_count is "
		 "%ld: interleaving at %s instead; 'sysctl -w "
		 "vm.max_map_count=%llu' (as root) restores %s pages",
		 rd, rp, bench_fmt_size(m->gran, a, sizeof(a)),
		 (unsigned long long)need, max, bench_fmt_size(g, b, sizeof(b)),
		 (unsigned long long)need, a);
	return g;
}

/* Page i of the pattern rd:rp lies in DRAM? */
static bool dram_page(uint64_t i, unsigned rd, unsigned rp)
{
	return i % (rd + rp) < rd;
}

/* Map every DRAM page of the pattern over array i's object. */
static int overlay(struct stream_mem *m, const struct stream_layout *l, int i)
{
	uint8_t *base = m->obj[i].ptr;
	uint64_t pages = m->bytes / l->gran;

	for (uint64_t p = 0; p < pages;) {
		uint64_t q = p;
		uint8_t *addr = base + p * l->gran;

		if (!dram_page(p, l->rd, l->rp)) {
			p++;
			continue;
		}
		while (q < pages && dram_page(q, l->rd, l->rp))
			q++;
		if (mmap(addr, (size_t)((q - p) * l->gran),
			 PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED) {
			fprintf(stderr,
				"cxlbench: cannot map DRAM pages over array "
				"%c at %p: %s; %s\n",
				arr_name[i], (void *)addr, strerror(errno),
				errno == ENOMEM ? "raise vm.max_map_count"
						: "report this");
			return -1;
		}
		p = q;
	}
	return 0;
}

/*
 * Map array i's object back in one piece, so that it is one mapping again
 * (pieces of our own descriptor would not merge with the library's). The
 * pool pages under the DRAM ones were never touched. In the emulated mode
 * the object's cache pages are replaced and reloaded from the pool, which
 * holds every line the kernels wrote back.
 */
static int unlay(struct stream_mem *m, int i)
{
	uint8_t *addr = m->obj[i].ptr;
	void *r;

	if (m->emulated)
		r = mmap(addr, m->bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				 MAP_FIXED,
			 -1, 0);
	else
		r = mmap(addr, m->bytes, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, m->fd,
			 (off_t)cxl_pool_offset(m->pool, addr));
	if (r == MAP_FAILED) {
		fprintf(stderr,
			"cxlbench: cannot map the pool's pages of array %c "
			"back at %p: %s; the pool mapping of this process is "
			"damaged, its objects are left to 'cxlpool gc'\n",
			arr_name[i], (void *)addr, strerror(errno));
		return -1;
	}
	/* Invalidate, then read: the emulator's cache of these lines is
	 * gone with the pages it was in. */
	if (m->emulated)
		cxl_inval(m->pool, addr, m->bytes);
	return 0;
}

int stream_layout_set(struct stream_mem *m, struct stream_layout *l,
		      const char where[ARR_N], unsigned rd, unsigned rp,
		      uint64_t gran)
{
	memset(l, 0, sizeof(*l));
	memcpy(l->where, where, ARR_N);
	l->rd = rd;
	l->rp = rp;
	l->gran = gran;
	l->whole = (struct stream_seg){ 0, m->n };
	for (int i = 0; i < ARR_N; i++) {
		if (where[i] == 'D') {
			l->v[i] = m->dram[i];
			continue;
		}
		l->v[i] = m->obj[i].ptr;
		if (where[i] == 'P') {
			l->frac[i] = 1;
			l->seg[i] = &l->whole;
			l->nseg[i] = 1;
		}
	}
	if (!memchr(where, 'I', ARR_N))
		return 0;

	/* The pool runs of the pattern, in elements, clipped to n. */
	{
		uint64_t pages = m->bytes / gran, per = gran / sizeof(double);
		size_t pool_elems = 0;

		l->iseg = calloc(pages / (rd + rp) + 2, sizeof(*l->iseg));
		if (!l->iseg) {
			fprintf(stderr, "cxlbench: out of memory for the "
					"interleaving map; lower --n\n");
			return -1;
		}
		for (uint64_t p = 0; p < pages;) {
			uint64_t q = p;

			if (dram_page(p, rd, rp)) {
				p++;
				continue;
			}
			while (q < pages && !dram_page(q, rd, rp))
				q++;
			if (p * per < m->n) {
				struct stream_seg *s = &l->iseg[l->niseg++];

				s->first = p * per;
				s->count = (q * per < m->n ? q * per : m->n) -
					   s->first;
				pool_elems += s->count;
			}
			p = q;
		}
		for (int i = 0; i < ARR_N; i++) {
			if (where[i] != 'I')
				continue;
			l->seg[i] = l->iseg;
			l->nseg[i] = l->niseg;
			l->frac[i] = (double)pool_elems / (double)m->n;
		}
	}
	l->overlaid = true;
	for (int i = 0; i < ARR_N; i++)
		if (where[i] == 'I' && overlay(m, l, i)) {
			stream_layout_clear(m, l);
			return -1;
		}
	return 0;
}

int stream_layout_clear(struct stream_mem *m, struct stream_layout *l)
{
	int ret = 0;

	for (int i = 0; l->overlaid && i < ARR_N; i++)
		if (l->where[i] == 'I' && unlay(m, i)) {
			/* DRAM pages remain inside the pool mapping: freeing
			 * the objects would write allocator headers there. */
			m->damaged = true;
			ret = -1;
		}
	l->overlaid = false;
	free(l->iseg);
	l->iseg = NULL;
	l->niseg = 0;
	return ret;
}

void stream_layout_flush(cxl_pool *p, const struct stream_layout *l, int i)
{
	for (size_t s = 0; s < l->nseg[i]; s++)
		cxl_flush(p, l->v[i] + l->seg[i][s].first,
			  l->seg[i][s].count * sizeof(double));
}

void stream_layout_inval(cxl_pool *p, const struct stream_layout *l, int i)
{
	for (size_t s = 0; s < l->nseg[i]; s++)
		cxl_inval(p, l->v[i] + l->seg[i][s].first,
			  l->seg[i][s].count * sizeof(double));
}
