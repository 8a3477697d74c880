/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ring API in one process: sizes up to the cell payload, full/empty,
 * truncation, corrupt cells and headers, named rings, and the coherence
 * cost per message in flush mode (the target: at most 2 lines and
 * 1 fence per side for a message of up to 64 bytes).
 */
#include <string.h>

#include "internal.h"
#include "testutil.h"

static enum cxl_coh_mode mode;

static void test_basic(cxl_pool *p)
{
	struct cxl_ring_attr a = { .cell_size = 256, .ncells = 8 };
	struct cxl_obj o;
	cxl_ring *tx, *rx;
	uint8_t buf[512], out[512];
	size_t len;
	uint32_t tag;
	size_t max = cxl_ring_cell_payload(256);
	int nsent = 0;

	CHECK(max == 48 + 3 * 56);
	REQUIRE(cxl_obj_create(p, "ring", cxl_ring_footprint(&a), 0, &o) ==
		CXL_OK);
	CHECK_RC(cxl_ring_attach(p, o.ptr, o.size, CXL_RING_CONSUMER, &rx),
		 CXL_EINVAL); /* not initialised yet */
	CHECK_RC(cxl_ring_init(p, o.ptr, o.size, &a), CXL_OK);
	CHECK_RC(cxl_ring_attach(p, o.ptr, o.size, CXL_RING_PRODUCER, &tx),
		 CXL_OK);
	CHECK_RC(cxl_ring_attach(p, o.ptr, o.size, CXL_RING_CONSUMER, &rx),
		 CXL_OK);
	CHECK(cxl_ring_max_msg(tx) == max);
	CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, &tag), CXL_EAGAIN);

	/* every size from 0 to the cell payload, crossing line boundaries */
	for (size_t n = 0; n <= max; n++) {
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)(n * 31 + i);
		REQUIRE(cxl_ring_send(tx, buf, n, (uint32_t)n, 0) == CXL_OK);
		memset(out, 0, sizeof(out));
		REQUIRE(cxl_ring_recv(rx, out, sizeof(out), &len, &tag) ==
			CXL_OK);
		CHECK(len == n && tag == n && !memcmp(out, buf, n));
	}
	CHECK_RC(cxl_ring_send(tx, buf, max + 1, 0, 0), CXL_EINVAL);
	CHECK_RC(cxl_ring_send(rx, buf, 8, 0, 0), CXL_EINVAL);
	CHECK_RC(cxl_ring_recv(tx, out, 8, &len, NULL), CXL_EINVAL);

	/* the ring is full after ncells minus the consumer's unreported
	 * cells (fewer than head_batch), and drains in order */
	CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, &tag), CXL_EAGAIN);
	for (int i = 0; i < 8; i++) {
		int rc = cxl_ring_send(tx, &i, sizeof(i), 0, CXL_RING_NOFENCE);

		if (rc == CXL_EAGAIN) {
			nsent = i;
			break;
		}
		CHECK_RC(rc, CXL_OK);
		nsent = i + 1;
	}
	cxl_ring_fence(tx);
	CHECK(nsent > 8 - 2 && nsent <= 8); /* head_batch is 8/4 = 2 */
	CHECK_RC(cxl_ring_send(tx, buf, 1, 0, 0), CXL_EAGAIN);
	/* truncation leaves the message queued and reports its size */
	CHECK_RC(cxl_ring_recv(rx, out, 2, &len, NULL), CXL_ETRUNC);
	CHECK(len == sizeof(int));
	for (int i = 0; i < nsent; i++) {
		int v = -1;

		CHECK_RC(cxl_ring_recv(rx, &v, sizeof(v), &len, NULL), CXL_OK);
		CHECK(v == i);
	}
	CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL), CXL_EAGAIN);
	/* drained: the idle consumer leaves the producer room (at least
	 * ncells - head_batch + 1 cells) without publishing on empty polls */
	for (int i = 0; i < 8 - 2 + 1; i++)
		CHECK_RC(cxl_ring_send(tx, &i, sizeof(i), 0, 0), CXL_OK);

	/* a corrupt cell is reported, not trusted */
	{
		/* the next cell to read: max + 1 sized messages, then nsent */
		uint64_t consumed = max + 1 + (uint64_t)nsent;
		uint8_t *cell = (uint8_t *)o.ptr + 3 * 64 +
				(consumed % a.ncells) * a.cell_size;
		uint64_t saved;

		cxl_inval(p, cell, 64);
		memcpy(&saved, cell, 8);
		*(uint64_t *)cell = 0xdeadbeefull; /* bogus stamp */
		cxl_flush(p, cell, 64);
		CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL),
			 CXL_ECORRUPT);
		memcpy(cell, &saved, 8);
		*(uint32_t *)(cell + 8) = 100000; /* impossible length */
		cxl_flush(p, cell, 64);
		CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL),
			 CXL_ECORRUPT);
	}
	cxl_ring_detach(tx);
	cxl_ring_detach(rx);

	/* a corrupt header is refused at attach */
	{
		uint32_t *g = (uint32_t *)((uint8_t *)o.ptr + 16);

		cxl_inval(p, o.ptr, 64);
		g[0] = 100; /* cell_size not a multiple of 64 */
		cxl_flush(p, o.ptr, 64);
		CHECK_RC(cxl_ring_attach(p, o.ptr, o.size, CXL_RING_CONSUMER,
					 &rx),
			 CXL_ECORRUPT);
		g[0] = 256;
		g[1] = 1u << 30; /* ncells beyond the object */
		cxl_flush(p, o.ptr, 64);
		CHECK_RC(cxl_ring_attach(p, o.ptr, o.size, CXL_RING_CONSUMER,
					 &rx),
			 CXL_ECORRUPT);
	}
	CHECK_RC(cxl_ring_init(p, o.ptr, 100, &a), CXL_ETOOSMALL);
	a.cell_size = 100;
	CHECK_RC(cxl_ring_init(p, o.ptr, o.size, &a), CXL_EINVAL);
	cxl_obj_close(&o);
	cxl_obj_destroy(p, "ring");
}

static void test_named(cxl_pool *p)
{
	cxl_ring *tx, *rx;
	char msg[] = "hello through the pool";
	char out[64];
	size_t len;

	CHECK_RC(cxl_ring_create(p, "named", NULL, CXL_RING_PRODUCER, &tx),
		 CXL_OK);
	CHECK_RC(cxl_ring_create(p, "named", NULL, CXL_RING_PRODUCER, &rx),
		 CXL_EEXIST);
	CHECK_RC(cxl_ring_open(p, "named", CXL_RING_CONSUMER, &rx), CXL_OK);
	CHECK_RC(cxl_ring_send(tx, msg, sizeof(msg), 7, 0), CXL_OK);
	CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL), CXL_OK);
	CHECK(len == sizeof(msg) && !strcmp(out, msg));
	/* a producer that detaches and comes back resumes where it was */
	cxl_ring_close(tx);
	CHECK_RC(cxl_ring_open(p, "named", CXL_RING_PRODUCER, &tx), CXL_OK);
	CHECK_RC(cxl_ring_send(tx, "again", 6, 0, 0), CXL_OK);
	CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL), CXL_OK);
	CHECK(len == 6 && !strcmp(out, "again"));
	cxl_ring_close(tx);
	cxl_ring_close(rx);
	CHECK_RC(cxl_obj_destroy(p, "named"), CXL_OK);
	CHECK_RC(cxl_ring_open(p, "named", CXL_RING_CONSUMER, &rx), CXL_ENOENT);
}

/*
 * Messages that span cells: every size up to span cells, wrapping at the
 * ring's end, flow control by cells, a stamp in a later cell checked, and
 * in the flush modes one fence per side (two on receive once the message
 * outgrows the poll) however many lines the message takes.
 */
static uint64_t cells_for(size_t n)
{
	uint64_t lines = n <= 48 ? 1 : 1 + (n - 48 + 55) / 56;

	return (lines + 3) / 4; /* 4 lines per 256-byte cell */
}

static void test_span(cxl_pool *p)
{
	struct cxl_ring_attr a = { .cell_size = 256, .ncells = 8, .span = 5 };
	uint8_t buf[2048], out[2048];
	struct cxl_coh_counters c0, c1;
	cxl_ring *tx, *rx;
	struct cxl_obj o;
	uint64_t cells = 0; /* consumed */
	size_t max, len;
	uint32_t tag;

	a.span = 8; /* more than ncells - head_batch + 1 = 7 */
	CHECK_RC(cxl_ring_create(p, "span", &a, CXL_RING_PRODUCER, &tx),
		 CXL_EINVAL);
	a.span = 5;
	REQUIRE(cxl_ring_create(p, "span", &a, CXL_RING_PRODUCER, &tx) ==
		CXL_OK);
	REQUIRE(cxl_ring_open(p, "span", CXL_RING_CONSUMER, &rx) == CXL_OK);
	REQUIRE(cxl_obj_open(p, "span", &o) == CXL_OK);
	max = cxl_ring_max_msg(tx);
	CHECK(max == cxl_ring_cell_payload(5 * 256) && max == 48 + 19 * 56);
	CHECK(max < sizeof(buf));
	CHECK_RC(cxl_ring_send(tx, buf, max + 1, 0, 0), CXL_EINVAL);
	/* every size, so that messages start at every cell and wrap */
	for (size_t n = 0; n <= max; n++) {
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)(n * 7 + i * 13);
		REQUIRE(cxl_ring_send(tx, buf, n, (uint32_t)n, 0) == CXL_OK);
		memset(out, 0xee, sizeof(out));
		REQUIRE(cxl_ring_recv(rx, out, sizeof(out), &len, &tag) ==
			CXL_OK);
		CHECK(len == n && tag == n && !memcmp(out, buf, n));
		CHECK(out[n] == 0xee);
		cells += cells_for(n);
	}
	/* flow control counts cells: one 5-cell message and two 1-cell ones
	 * fill 7 of 8 cells; the next 5-cell message waits for the consumer */
	CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL), CXL_EAGAIN);
	REQUIRE(cxl_ring_send(tx, buf, max, 1, 0) == CXL_OK);
	REQUIRE(cxl_ring_send(tx, buf, 8, 2, 0) == CXL_OK);
	REQUIRE(cxl_ring_send(tx, buf, 8, 3, 0) == CXL_OK);
	CHECK_RC(cxl_ring_send(tx, buf, max, 4, 0), CXL_EAGAIN);
	CHECK(cxl_ring_send_ready(tx) == 1); /* room for one cell */
	for (uint32_t want = 1; want <= 3; want++) {
		CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, &tag),
			 CXL_OK);
		CHECK(tag == want);
		cells += cells_for(len);
	}
	/* a bogus (newer) stamp in the message's third cell is corruption */
	REQUIRE(cxl_ring_send(tx, buf, max, 5, 0) == CXL_OK);
	{
		uint64_t saved;
		uint8_t *line = (uint8_t *)o.ptr + 3 * 64 +
				((cells + 2) % a.ncells) * a.cell_size;

		cxl_inval(p, line, 64);
		memcpy(&saved, line, 8);
		*(uint64_t *)line = saved + 1000;
		cxl_flush(p, line, 64);
		cxl_wfence(p);
		CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL),
			 CXL_ECORRUPT);
		/* an older stamp there: not written yet, try again */
		*(uint64_t *)line = saved - 1;
		cxl_flush(p, line, 64);
		cxl_wfence(p);
		CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL),
			 CXL_EAGAIN);
		*(uint64_t *)line = saved;
		cxl_flush(p, line, 64);
		cxl_wfence(p);
		CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, &tag),
			 CXL_OK);
		CHECK(tag == 5 && len == max && !memcmp(out, buf, max));
	}
	if (mode != CXL_COH_COHERENT) {
		/* 1 KiB (19 lines over 5 cells): 19 write-backs and one fence
		 * to send. To take it after an empty poll: the poll's 2 lines,
		 * then one sweep of the other 17, 2 fences; a like message
		 * right after: one sweep of 19 and one fence */
		CHECK_RC(cxl_ring_recv(rx, out, sizeof(out), &len, NULL),
			 CXL_EAGAIN);
		for (int k = 0; k < 2; k++) {
			cxl_coh_counters_get(&c0);
			REQUIRE(cxl_ring_send(tx, buf, 1024, 6, 0) == CXL_OK);
			cxl_coh_counters_get(&c1);
			CHECK(c1.flush_lines - c0.flush_lines == 19);
			CHECK(c1.fences - c0.fences -
				      (c1.nt_loads - c0.nt_loads) ==
			      1);
			cxl_coh_counters_get(&c0);
			REQUIRE(cxl_ring_recv(rx, out, sizeof(out), &len,
					      NULL) == CXL_OK);
			cxl_coh_counters_get(&c1);
			CHECK(c1.inval_lines - c0.inval_lines == 19);
			CHECK(c1.fences - c0.fences -
				      (c1.nt_stores - c0.nt_stores) ==
			      (k ? 1u : 2u));
		}
	}
	cxl_ring_close(tx);
	cxl_ring_close(rx);
	cxl_obj_close(&o);
	cxl_obj_destroy(p, "span");
}

/* Coherence operations per message, counted. Meaningful in the flush,
 * uncached and emulated modes (coherent mode issues none). */
static void test_costs(cxl_pool *p)
{
	struct cxl_ring_attr a = { .cell_size = 256,
				   .ncells = 64,
				   .head_batch = 16 };
	struct cxl_coh_counters c0, c1;
	cxl_ring *tx, *rx;
	uint8_t buf[64] = { 1 }, out[64], big[200] = { 2 };
	const int n = 1024;
	size_t len;

	if (mode == CXL_COH_COHERENT)
		return;
	REQUIRE(cxl_ring_create(p, "cost", &a, CXL_RING_PRODUCER, &tx) ==
		CXL_OK);
	REQUIRE(cxl_ring_open(p, "cost", CXL_RING_CONSUMER, &rx) == CXL_OK);
	for (int i = 0; i < n; i += 32) {
		cxl_coh_counters_get(&c0);
		for (int k = 0; k < 32; k++)
			REQUIRE(cxl_ring_send(tx, buf, 48, 0, 0) == CXL_OK);
		cxl_coh_counters_get(&c1);
		/* 48 B (one line): exactly 1 line and 1 fence per send; the
		 * producer refreshes its view of the head (one uncached load
		 * and its fence) at most once, when the ring looks full */
		CHECK(c1.flush_lines - c0.flush_lines == 32);
		CHECK(c1.nt_loads - c0.nt_loads <= 1);
		CHECK(c1.fences - c0.fences - (c1.nt_loads - c0.nt_loads) ==
		      32);
		cxl_coh_counters_get(&c0);
		for (int k = 0; k < 32; k++)
			REQUIRE(cxl_ring_recv(rx, out, 64, &len, NULL) ==
				CXL_OK);
		cxl_coh_counters_get(&c1);
		/* 2 lines invalidated + 1 fence per receive, plus one head
		 * store (and fence) per 16 messages */
		CHECK(c1.inval_lines - c0.inval_lines == 64);
		CHECK(c1.fences - c0.fences == 32 + 2);
		CHECK(c1.nt_stores - c0.nt_stores == 2);
	}
	/* a lazy head: stored as often, its fence left to the caller */
	cxl_ring_lazy_head(rx, 1);
	CHECK(!cxl_ring_head_unfenced(rx));
	for (int k = 0; k < 32; k++)
		REQUIRE(cxl_ring_send(tx, buf, 48, 0, 0) == CXL_OK);
	cxl_coh_counters_get(&c0);
	for (int k = 0; k < 32; k++)
		REQUIRE(cxl_ring_recv(rx, out, 64, &len, NULL) == CXL_OK);
	cxl_coh_counters_get(&c1);
	CHECK(c1.nt_stores - c0.nt_stores == 2 && c1.fences - c0.fences == 32);
	CHECK(cxl_ring_head_unfenced(rx) && !cxl_ring_head_unfenced(rx));
	cxl_ring_fence(rx);
	cxl_ring_lazy_head(rx, 0);
	/* 64-byte messages take 2 lines: 2 write-backs, still 1 fence */
	cxl_coh_counters_get(&c0);
	REQUIRE(cxl_ring_send(tx, buf, 64, 0, 0) == CXL_OK);
	cxl_coh_counters_get(&c1);
	CHECK(c1.flush_lines - c0.flush_lines == 2);
	CHECK(c1.fences - c0.fences - (c1.nt_loads - c0.nt_loads) == 1);
	cxl_coh_counters_get(&c0);
	REQUIRE(cxl_ring_recv(rx, out, 64, &len, NULL) == CXL_OK);
	cxl_coh_counters_get(&c1);
	CHECK(c1.inval_lines - c0.inval_lines == 2 &&
	      c1.fences - c0.fences == 1);

	/* Swept ahead with other data (one fence for both): a message that
	 * was there by then costs its receive no sweep and no fence; the
	 * lines of a longer one beyond the sweep are swept by the receive
	 * (messages sent after the sweep: mp_ring, two processes) */
	REQUIRE(cxl_ring_send(tx, buf, 48, 7, 0) == CXL_OK);
	cxl_coh_counters_get(&c0);
	cxl_ring_inval_with(rx, out, sizeof(out)); /* private: ignored */
	cxl_coh_counters_get(&c1);
	CHECK(c1.inval_lines - c0.inval_lines == 2 &&
	      c1.fences - c0.fences == 1);
	c0 = c1;
	REQUIRE(cxl_ring_recv(rx, out, 64, &len, NULL) == CXL_OK);
	cxl_coh_counters_get(&c1);
	CHECK(len == 48 && c1.inval_lines == c0.inval_lines &&
	      c1.fences == c0.fences);
	cxl_ring_inval_with(rx, out, sizeof(out));
	CHECK_RC(cxl_ring_recv(rx, out, 64, &len, NULL), CXL_EAGAIN);
	cxl_ring_inval_with(rx, out, sizeof(out));
	REQUIRE(cxl_ring_send(tx, big, sizeof(big), 9, 0) == CXL_OK);
	cxl_coh_counters_get(&c0);
	REQUIRE(cxl_ring_recv(rx, out, 64, &len, NULL) == CXL_ETRUNC);
	REQUIRE(cxl_ring_recv(rx, buf, 64, &len, NULL) == CXL_ETRUNC);
	cxl_coh_counters_get(&c1);
	CHECK(len == sizeof(big) && c1.fences - c0.fences >= 1);

	/* Read ahead: a receive sweeps the next message's lines (one fence)
	 * before it returns; the next receive then sweeps nothing. A look
	 * ahead that came too early sweeps again; data swept with a message
	 * (cxl_ring_inval_with) stands in for the look ahead. */
	REQUIRE(cxl_ring_recv(rx, big, sizeof(big), &len, NULL) == CXL_OK);
	CHECK_RC(cxl_ring_recv(rx, out, 64, &len, NULL), CXL_EAGAIN);
	cxl_ring_read_ahead(rx, 1);
	for (int k = 0; k < 3; k++)
		REQUIRE(cxl_ring_send(tx, big, sizeof(big), 3, 0) == CXL_OK);
	cxl_coh_counters_get(&c0);
	for (int k = 0; k < 3; k++)
		REQUIRE(cxl_ring_recv(rx, big, sizeof(big), &len, NULL) ==
			CXL_OK);
	cxl_coh_counters_get(&c1);
	/* 200 B: 4 lines. The first receive sweeps 2 lines, then the other
	 * 2 (2 fences); each reads 4 ahead (1 fence); the second and the
	 * third sweep nothing of their own */
	CHECK(len == sizeof(big) && big[0] == 2);
	CHECK(c1.inval_lines - c0.inval_lines == 4 + 3 * 4);
	CHECK(c1.fences - c0.fences == 2 + 3);
	cxl_coh_counters_get(&c0);
	CHECK_RC(cxl_ring_recv(rx, out, 64, &len, NULL), CXL_EAGAIN);
	cxl_coh_counters_get(&c1);
	/* ahead too early: the empty look sweeps again */
	CHECK(c1.inval_lines - c0.inval_lines == 4 &&
	      c1.fences - c0.fences == 1);
	REQUIRE(cxl_ring_send(tx, buf, 48, 4, 0) == CXL_OK);
	REQUIRE(cxl_ring_send(tx, buf, 48, 5, 0) == CXL_OK);
	cxl_coh_counters_get(&c0);
	REQUIRE(cxl_ring_recv(rx, out, 64, &len, NULL) == CXL_OK);
	cxl_coh_counters_get(&c1);
	/* after an empty look: a sweep of 2 lines, then 2 ahead */
	CHECK(len == 48 && c1.inval_lines - c0.inval_lines == 4 &&
	      c1.fences - c0.fences == 2);
	cxl_ring_inval_with(rx, out, sizeof(out)); /* private: ignored */
	cxl_coh_counters_get(&c0);
	REQUIRE(cxl_ring_recv(rx, out, 64, &len, NULL) == CXL_OK);
	cxl_coh_counters_get(&c1);
	/* swept by the look ahead; after a message that named data, no
	 * look ahead (that data's sweep takes the ring's lines along) */
	CHECK(len == 48 && c1.inval_lines == c0.inval_lines &&
	      c1.fences == c0.fences);
	REQUIRE(cxl_ring_send(tx, buf, 48, 6, 0) == CXL_OK);
	cxl_coh_counters_get(&c0);
	REQUIRE(cxl_ring_recv(rx, out, 64, &len, NULL) == CXL_OK);
	cxl_coh_counters_get(&c1);
	CHECK(len == 48 && c1.fences - c0.fences == 2);
	cxl_ring_read_ahead(rx, 0);
	cxl_ring_close(tx);
	cxl_ring_close(rx);
	cxl_obj_destroy(p, "cost");
}

int main(int argc, char **argv)
{
	struct tpool tp;
	struct cxl_pool_opts o;
	cxl_pool *p;

	mode = targ_mode(argc, argv);
	tpool_init(&tp, "ring");
	topts(&o, &tp, mode, 0, 0);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	test_basic(p);
	test_named(p);
	test_costs(p);
	test_span(p);
	cxl_pool_detach(p);
	tpool_cleanup(&tp);
	return t_report("test_ring");
}
