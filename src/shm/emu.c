/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Non-coherent pool emulation (CXL_COHERENCE=emulated).
 *
 * Model (docs/coherence.md, "The emulator"):
 *  - The shared file is the pool memory. Each process gets a private copy
 *    of it at attach time: its cache, holding every line.
 *  - Ordinary loads and stores touch only the private copy.
 *  - cxl_flush() writes whole 64-byte lines private -> shared;
 *    cxl_inval() reloads whole lines shared -> private;
 *    cxl_nt_store64() writes the word to both; cxl_nt_load64() reloads the
 *    line, then reads it.
 *  - Each line moves as one unit (a per-line seqlock), as a CXL.mem
 *    write-back of a 64-byte line does.
 * So a missing flush loses a write, a missing invalidate reads stale data,
 * and two hosts writing one line clobber each other's bytes on write-back.
 * Every process is its own cache domain, which is stricter than hardware
 * (processes of one host share a cache there).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define EMU_NLOCKS 65536u /* stripes; power of two */

static inline _Atomic uint64_t *line_lock(struct cxl_pool *p, uint64_t line)
{
	return &p->emu.linelock[line & (p->emu.nlocks - 1)];
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#endif
}

/*
 * A line lock word: bit 0 set while a copy is in progress (seqlock),
 * bits 1..31 a sequence that every lock and unlock advances, bits 32..63
 * the holder's pid. A process killed inside a copy would leave its stripe
 * locked for good and every later process spinning on it; a waiter that
 * has spun EMU_SPIN_CHECK times checks the holder and, if it is gone,
 * unlocks on its behalf. The line it was copying may then be torn, as a
 * line written back by a host that lost power may be; the arena lock's
 * take-over repairs the metadata (lock.c).
 */
#define EMU_SPIN_CHECK 4096u
#define EMU_SEQ_MASK 0xffffffffull

static void break_if_dead(_Atomic uint64_t *l, uint64_t s)
{
	pid_t pid = (pid_t)(s >> 32);

	if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
		atomic_compare_exchange_strong_explicit(
			l, &s, (s + 1) & EMU_SEQ_MASK, memory_order_acq_rel,
			memory_order_relaxed);
}

/* Writer side of the line seqlock: odd while a copy is in progress. */
static void wr_lock(const struct cxl_pool *p, _Atomic uint64_t *l)
{
	unsigned spins = 0;
	uint64_t s;

	for (;;) {
		s = atomic_load_explicit(l, memory_order_relaxed);
		if (!(s & 1) &&
		    atomic_compare_exchange_weak_explicit(
			    l, &s, ((s + 1) & EMU_SEQ_MASK) | p->emu.pid_tag,
			    memory_order_acquire, memory_order_relaxed))
			return;
		if ((s & 1) && ++spins % EMU_SPIN_CHECK == 0)
			break_if_dead(l, s);
		cpu_relax();
	}
}

static void wr_unlock(_Atomic uint64_t *l)
{
	uint64_t s = atomic_load_explicit(l, memory_order_relaxed);

	/* ours: even again, no holder */
	atomic_store_explicit(l, (s + 1) & EMU_SEQ_MASK, memory_order_release);
}

void cxl_emu_flush(struct cxl_pool *p, uint64_t off, uint64_t nlines)
{
	for (uint64_t i = 0; i < nlines; i++, off += CXL_LINE) {
		_Atomic uint64_t *l = line_lock(p, off / CXL_LINE);

		uint64_t *dst = (uint64_t *)(p->emu.shared + off);
		const uint64_t *src = (const uint64_t *)(p->base + off);

		wr_lock(p, l);
		/* Word 0 last, with release: a device of this host that
		 * reads the memory without the line lock (a GPU's stream
		 * wait on word 0, then a copy) and finds word 0 new finds
		 * the whole line new, as after a CXL line write. */
		for (unsigned w = 1; w < CXL_LINE / 8; w++)
			__atomic_store_n(&dst[w], src[w], __ATOMIC_RELAXED);
		__atomic_store_n(&dst[0], src[0], __ATOMIC_RELEASE);
		wr_unlock(l);
	}
}

void cxl_emu_inval(struct cxl_pool *p, uint64_t off, uint64_t nlines)
{
	for (uint64_t i = 0; i < nlines; i++, off += CXL_LINE) {
		_Atomic uint64_t *l = line_lock(p, off / CXL_LINE);
		uint64_t s1, s2;
		unsigned spins = 0;

		do {
			while ((s1 = atomic_load_explicit(
					l, memory_order_acquire)) &
			       1) {
				if (++spins % EMU_SPIN_CHECK == 0)
					break_if_dead(l, s1);
				cpu_relax();
			}
			memcpy(p->base + off, p->emu.shared + off, CXL_LINE);
			atomic_thread_fence(memory_order_acquire);
			s2 = atomic_load_explicit(l, memory_order_relaxed);
		} while (s1 != s2);
	}
}

void cxl_emu_nt_store64(struct cxl_pool *p, uint64_t off, uint64_t v)
{
	_Atomic uint64_t *l;

	if (off + sizeof(v) > p->size)
		return;
	l = line_lock(p, off / CXL_LINE);
	wr_lock(p, l);
	__atomic_store_n((uint64_t *)(p->emu.shared + off), v,
			 __ATOMIC_SEQ_CST);
	__atomic_store_n((uint64_t *)(p->base + off), v, __ATOMIC_RELAXED);
	wr_unlock(l);
}

/*
 * Load the pool into the cache. Only the data extents of a sparse file are
 * read (SEEK_DATA/SEEK_HOLE): reading a hole of a tmpfs file would allocate
 * it, and the private pages of a hole are zero already. A device without
 * holes (devdax) is read whole.
 */
static void load_cache(struct cxl_pool *p)
{
	uint64_t off = 0;

	while (off < p->size) {
		off_t d = lseek(p->fd, (off_t)off, SEEK_DATA), h;

		if (d < 0) {
			if (errno == ENXIO) /* only a hole remains */
				return;
			d = (off_t)off; /* no hole support: read the rest */
			h = (off_t)p->size;
		} else {
			h = lseek(p->fd, d, SEEK_HOLE);
			if (h < 0)
				h = (off_t)p->size;
		}
		d = (off_t)ALIGN_DOWN((uint64_t)d, CXL_LINE);
		if ((uint64_t)h > p->size)
			h = (off_t)p->size;
		h = (off_t)ALIGN_UP((uint64_t)h, CXL_LINE);
		if ((uint64_t)h > p->size)
			h = (off_t)p->size;
		if (h > d)
			cxl_emu_inval(p, (uint64_t)d,
				      (uint64_t)(h - d) / CXL_LINE);
		off = (uint64_t)h > off ? (uint64_t)h : off + CXL_LINE;
	}
}

int cxl_emu_attach(struct cxl_pool *p)
{
	char path[512];
	size_t len = EMU_NLOCKS * sizeof(uint64_t);
	struct stat st;
	uint8_t *priv;
	int fd, rc;

	if ((rc = cxl_runfile_open(p, ".emu", "emulator's line-lock file", path,
				   sizeof(path), &fd)))
		return rc;
	/* Every attacher sizes it the same; a new file is all zero (unlocked).
	 */
	if (fstat(fd, &st) == 0 && (size_t)st.st_size < len &&
	    ftruncate(fd, (off_t)len) != 0) {
		close(fd);
		return cxl_seterr(CXL_ESYS, "cannot size %s: %s", path,
				  strerror(errno));
	}
	p->emu.lock_map =
		mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p->emu.lock_map == MAP_FAILED) {
		p->emu.lock_map = NULL;
		return cxl_seterr(CXL_ESYS, "cannot map %s: %s", path,
				  strerror(errno));
	}
	p->emu.lock_map_len = len;
	p->emu.linelock = p->emu.lock_map;
	p->emu.nlocks = EMU_NLOCKS;
	p->emu.pid_tag = (uint64_t)getpid() << 32;

	/* The shared mapping becomes "memory"; base becomes the private cache,
	 * an anonymous mapping with the same guard pages and alignment. */
	p->emu.shared = p->base;
	p->emu_resv = p->resv;
	p->emu_resv_len = p->resv_len;
	if (cxl_map_aligned(-1, p->size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			    "emulator cache", &p->resv, &p->resv_len,
			    &priv) != CXL_OK) {
		p->resv = p->emu_resv;
		p->resv_len = p->emu_resv_len;
		p->emu_resv = NULL;
		return CXL_ENOMEM;
	}
	p->base = priv;
	load_cache(p);
	p->coh = CXL_COH_EMULATED; /* the coherence operations use both views */
	return CXL_OK;
}

void cxl_emu_detach(struct cxl_pool *p)
{
	p->coh = CXL_COH_COHERENT;
	if (p->emu.lock_map)
		munmap(p->emu.lock_map, p->emu.lock_map_len);
	p->emu.lock_map = NULL;
	if (p->emu_resv)
		cxl_unmap(p->emu_resv, p->emu_resv_len);
	p->emu_resv = NULL;
}
