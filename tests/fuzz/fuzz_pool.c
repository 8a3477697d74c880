/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: corrupted shared memory must never crash the process,
 * hang it, or make it touch memory outside the pool mapping (the mapping
 * has PROT_NONE guard regions, and ASan watches everything else).
 *
 * Setup (once): a small pool with objects, a ring holding messages of
 * several sizes, and a barrier; its bytes are saved as the pristine image.
 * Each input: restore the image, apply the input as patches to the pool
 * header, arena control block, host/process tables, hash index, object
 * table, order map, free-block headers or ring cells, then attach and run
 * every API over it: list, stat, open/close, create, destroy, gc, repair,
 * ring receive, barrier open.
 *
 * Input format: repeated records [region u8][offset u32][len u8][bytes].
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define POOL_SIZE (8u << 20)

static struct cxl_pool_opts opts;
static uint8_t *image; /* pristine pool bytes */
static uint8_t *live;  /* the pool file, mapped by the harness */
static struct pool_hdr hdr;
static uint64_t ring_off, ring_len;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static void die(const char *what)
{
	fprintf(stderr, "fuzz setup: %s: %s\n", what, cxl_errmsg());
	exit(1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct cxl_ring_attr ra = { .cell_size = 256, .ncells = 8 };
	static char dir[64];
	struct cxl_obj o;
	cxl_pool *p;
	cxl_ring *tx;
	cxl_barrier *b;
	uint8_t msg[200];
	int fd;

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/dev/shm/cxlfuzz-%d", (int)getpid());
	mkdir(dir, 0700);
	cxl_opts_default(&opts);
	snprintf(opts.path, sizeof(opts.path), "%s/pool", dir);
	snprintf(opts.rundir, sizeof(opts.rundir), "%s", dir);
	unlink(opts.path);
	opts.size = POOL_SIZE;
	opts.capacity = 64;
	opts.max_hosts = 4;
	opts.max_procs = 8;
	opts.lock_timeout_ms = 2; /* a corrupt bakery entry costs 2 ms */
	if (cxl_pool_attach(&opts, &p))
		die("attach");
	for (int i = 0; i < 6; i++) {
		char n[16];

		snprintf(n, sizeof(n), "obj%d", i);
		if (cxl_obj_create(p, n, 100u << i, 0, &o))
			die("create");
		memset(o.ptr, i, o.size);
		if (i % 2)
			cxl_obj_close(&o);
	}
	cxl_obj_destroy(p, "obj2"); /* unlinked but open */
	cxl_obj_destroy(p, "obj3"); /* freed: free lists get interesting */
	if (cxl_ring_create(p, "ring", &ra, CXL_RING_PRODUCER, &tx))
		die("ring");
	for (unsigned i = 0; i < 6; i++) {
		memset(msg, (int)i, sizeof(msg));
		cxl_ring_send(tx, msg, (size_t)(i * 37) % sizeof(msg), i, 0);
	}
	if (cxl_obj_open(p, "ring", &o))
		die("ring open");
	ring_off = o.off;
	ring_len = o.size;
	cxl_obj_close(&o);
	cxl_ring_close(tx);
	if (cxl_barrier_open(p, "bar", 2, 0, &b))
		die("barrier");
	cxl_barrier_close(b);
	hdr = *(struct pool_hdr *)cxl_pool_base(p);
	/* leave this process registered: the image has a live process */
	fd = open(opts.path, O_RDWR);
	live = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (live == MAP_FAILED)
		die("mmap");
	image = malloc(POOL_SIZE);
	memcpy(image, live, POOL_SIZE);
	cxl_pool_detach(p);
	memcpy(image + hdr.proc_off, live + hdr.proc_off,
	       hdr.hash_off - hdr.proc_off);
	return 0;
}

/* Region base and length for a selector. */
static void region(uint8_t sel, uint64_t *base, uint64_t *len)
{
	switch (sel % 9) {
	case 0:
		*base = 0;
		*len = sizeof(struct pool_hdr);
		break;
	case 1:
		*base = hdr.ctl_off;
		*len = sizeof(struct arena_ctl);
		break;
	case 2:
		*base = hdr.host_off;
		*len = hdr.proc_off - hdr.host_off;
		break;
	case 3:
		*base = hdr.proc_off;
		*len = hdr.hash_off - hdr.proc_off;
		break;
	case 4:
		*base = hdr.hash_off;
		*len = hdr.obj_off - hdr.hash_off;
		break;
	case 5:
		*base = hdr.obj_off;
		*len = 64 * 128;
		break;
	case 6:
		*base = hdr.ordermap_off;
		*len = hdr.heap_size / 64;
		break;
	case 7:
		*base = hdr.heap_off;
		*len = 1u << 16;
		break; /* free blocks */
	default:
		*base = ring_off;
		*len = ring_len;
		break;
	}
}

static int visit(const struct cxl_obj_stat *st, void *arg)
{
	(void)arg;
	return strlen(st->name) > CXL_NAME_MAX; /* must always be bounded */
}

static void exercise(cxl_pool *p)
{
	struct cxl_obj o;
	struct cxl_obj_stat st;
	struct cxl_arena_stat as;
	uint64_t a, b;
	cxl_ring *rx;
	cxl_barrier *bar;
	uint8_t buf[512];
	size_t len;

	cxl_obj_list(p, visit, NULL);
	cxl_arena_stat(p, &as);
	for (int i = 0; i < 6; i++) {
		char n[16];

		snprintf(n, sizeof(n), "obj%d", i);
		if (cxl_obj_stat(p, n, &st) == CXL_OK && st.size > 0)
			(void)st;
		if (cxl_obj_open(p, n, &o) == CXL_OK) {
			/* an object that opens must lie inside the pool */
			if (!cxl_pool_ptr(p, o.off, o.size))
				abort();
			cxl_inval(p, o.ptr, o.size);
			memcpy(buf, o.ptr,
			       o.size < sizeof(buf) ? o.size : sizeof(buf));
			cxl_obj_close(&o);
		}
	}
	if (cxl_obj_create(p, "fresh", 3000, CXL_OBJ_ZERO, &o) == CXL_OK) {
		if (!cxl_pool_ptr(p, o.off, o.size))
			abort();
		cxl_obj_close(&o);
		cxl_obj_destroy(p, "fresh");
	}
	cxl_obj_destroy(p, "obj0");
	cxl_obj_destroy(p, "obj4");
	if (cxl_ring_open(p, "ring", CXL_RING_CONSUMER, &rx) == CXL_OK) {
		for (int i = 0; i < 10; i++)
			if (cxl_ring_recv(rx, buf, sizeof(buf), &len, NULL) ==
				    CXL_OK &&
			    len > sizeof(buf))
				abort();
		cxl_ring_close(rx);
	}
	if (cxl_barrier_open(p, "bar", 2, 1, &bar) == CXL_OK)
		cxl_barrier_close(bar);
	cxl_arena_gc(p, -1, &a, &b);
	cxl_arena_repair(p, &a);
	/* after repair the arena must work again */
	if (cxl_obj_create(p, "after", 100, 0, &o) == CXL_OK) {
		if (!cxl_pool_ptr(p, o.off, o.size))
			abort();
		cxl_obj_close(&o);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cxl_pool *p;

	memcpy(live, image, POOL_SIZE);
	while (size >= 6) {
		uint64_t base, len, off;
		uint32_t o32;
		size_t n = data[5];

		region(data[0], &base, &len);
		memcpy(&o32, data + 1, 4);
		data += 6;
		size -= 6;
		if (n > size)
			n = size;
		off = len ? o32 % len : 0;
		if (n > len - off)
			n = (size_t)(len - off);
		memcpy(live + base + off, data, n);
		data += n;
		size -= n;
	}
	if (cxl_pool_attach(&opts, &p) == CXL_OK) {
		exercise(p);
		cxl_pool_detach(p);
	}
	return 0;
}
