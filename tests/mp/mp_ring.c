/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rings across emulated hosts: --pairs producer/consumer pairs, each on its
 * own two hosts, each carrying --msgs checksummed messages of varying size
 * (every size from 0 to the largest message occurs; odd pairs' messages
 * span up to 3 cells, wrapping at the ring's end). The consumer checks the
 * sequence number, the length and a checksum of every byte: in the
 * emulated mode a line read before it is written back shows as bad.
 * After two of every three messages the consumer sweeps the next poll's
 * lines ahead, with data of its own (cxl_ring_inval_with), before or after
 * the producer wrote them. In alternate blocks of 256 messages it reads
 * ahead (cxl_ring_read_ahead), alone and together with those sweeps.
 *
 *   mp_ring --mode coherent|emulated [--pairs 2] [--msgs 1000000]
 */
#include <string.h>

#include "testutil.h"

static enum cxl_coh_mode mode;
static struct tpool tp;
static long nmsgs;

static size_t msg_len(uint64_t k, size_t max)
{
	return (size_t)((k * 2654435761u) % (max + 1));
}

/* Fill buf with the message k: bytes derived from k, checksum at the end */
static void make_msg(uint8_t *buf, uint64_t k, size_t len)
{
	uint64_t x = k * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	if (len >= 8)
		memcpy(buf, &k, 8);
}

static int side(int i, void *arg)
{
	struct cxl_pool_opts o;
	struct cxl_ring_attr a = { .cell_size = 256, .ncells = 64 };
	int pair = i / 2, producer = (i % 2) == 0;
	uint8_t buf[1024], want[1024];
	char name[32];
	cxl_pool *p;
	cxl_ring *r;
	size_t max, len;
	uint64_t last, idle = 0;
	struct cxl_obj data = { 0 };
	long bad = 0;
	int rc;

	(void)arg;
	a.span = pair % 2 ? 3 : 1;
	topts(&o, &tp, mode, (uint32_t)i, 0);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	snprintf(name, sizeof(name), "ring%d", pair);
	if (producer) {
		REQUIRE(cxl_ring_create(p, name, &a, CXL_RING_PRODUCER, &r) ==
			CXL_OK);
	} else {
		struct cxl_backoff b;

		cxl_backoff_init(&b, 10000);
		while ((rc = cxl_ring_open(p, name, CXL_RING_CONSUMER, &r)) ==
		       CXL_ENOENT)
			REQUIRE(cxl_backoff_wait(&b) == CXL_OK);
		REQUIRE(rc == CXL_OK);
		snprintf(name, sizeof(name), "data%d", pair);
		REQUIRE(cxl_obj_create(p, name, 4096, 0, &data) == CXL_OK);
	}
	max = cxl_ring_max_msg(r);
	last = cxl_now_ns();
	for (uint64_t k = 0; k < (uint64_t)nmsgs;) {
		size_t n = msg_len(k, max);

		if (producer) {
			make_msg(buf, k, n);
			rc = cxl_ring_send(r, buf, n, (uint32_t)k, 0);
		} else {
			uint32_t tag;

			cxl_ring_read_ahead(r, (k >> 8) & 1);
			rc = cxl_ring_recv(r, buf, sizeof(buf), &len, &tag);
			if (rc == CXL_OK) {
				make_msg(want, k, n);
				bad += len != n || tag != (uint32_t)k ||
				       memcmp(buf, want, n);
				if (k % 3)
					cxl_ring_inval_with(r, data.ptr,
							    data.size);
			}
		}
		if (rc == CXL_OK) {
			k++;
			if ((k & 1023) == 0)
				last = cxl_now_ns();
		} else if (rc == CXL_EAGAIN) {
			/* a dead or broken peer fails the test, never hangs */
			if ((++idle & 0xffff) == 0 &&
			    cxl_now_ns() - last > 30000000000ull) {
				fprintf(stderr,
					"%s: no progress for 30 s at "
					"message %llu\n",
					producer ? "send" : "recv",
					(unsigned long long)k);
				return 1;
			}
		} else {
			fprintf(stderr, "%s: %s\n", producer ? "send" : "recv",
				cxl_errmsg());
			return 1;
		}
	}
	if (!producer)
		printf("pair %d: %ld messages, %ld bad\n", pair, nmsgs, bad);
	cxl_ring_close(r);
	if (data.pool)
		cxl_obj_close(&data);
	cxl_pool_detach(p);
	return bad != 0;
}

int main(int argc, char **argv)
{
	long pairs;
	uint64_t t0;

	mode = targ_mode(argc, argv);
	pairs = targ_long(argc, argv, "--pairs", 2);
	nmsgs = targ_long(argc, argv, "--msgs", 1000000);
	tpool_init(&tp, "mpring");
	t0 = cxl_now_ns();
	CHECK(run_children((int)(2 * pairs), side, NULL) == 0);
	printf("%ld pairs x %ld messages (%s): %.2f s\n", pairs, nmsgs,
	       cxl_coh_mode_name(mode), (double)(cxl_now_ns() - t0) / 1e9);
	tpool_cleanup(&tp);
	return t_report("mp_ring");
}
