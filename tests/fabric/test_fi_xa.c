/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider's transfer area, through the libfabric API:
 *
 *  - FI_DELIVERY_COMPLETE: a send completes only once the receiver has
 *    consumed the message. While the receiver does not progress, it must
 *    not complete (a plain send of the same size completes at once);
 *  - pointer passing: a send from a buffer in the pool (this process
 *    attaches the pool with cxl_pool_attach_shared, as libcxlmpi does, so
 *    it shares the provider's mapping) is copied once by the receiver, and
 *    completes only when it has been. Checked for an expected and an
 *    unexpected receive, with the data verified;
 *  - large sends from ordinary memory through the data slots, many in
 *    flight, verified.
 *
 * Linked against the shared libcxlshm, like the provider.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitest.h"

static enum cxl_coh_mode mode;
static struct tpool tp;
static int p01[2], p10[2], go[2], done[2];

#define PTR_LEN (512u << 10) /* below the data slots one peer may hold */

/* delivery-complete sizes: one cell, chunked cells, one data slot (the
 * whole message in the flush and emulated modes, up to XFER_WHOLE_MAX),
 * a first cell of payload and one slot, two data slots; the last three
 * complete by the last slot's token, not by an OP_ACK */
static const size_t dc_sizes[] = { 100, 600, 16384, 16400, 100000 };
#define DC_SIZES (sizeof(dc_sizes) / sizeof(dc_sizes[0]))

static void signal_peer(int fd)
{
	REQUIRE(write(fd, "x", 1) == 1);
}

static void wait_peer(int fd)
{
	char c;

	REQUIRE(read(fd, &c, 1) == 1);
}

/* Poll the CQ for ms milliseconds; the number of completions seen. */
static int poll_for(struct fi *f, int ms)
{
	struct fi_cq_tagged_entry e;
	uint64_t t0 = cxl_now_ns();
	int n = 0;

	while (cxl_now_ns() - t0 < (uint64_t)ms * 1000000ull)
		if (fi_cq_read(f->cq, &e, 1) == 1)
			n++;
	return n;
}

static ssize_t tsend_flags(struct fi *f, const void *buf, size_t len,
			   uint64_t tag, uint64_t flags, void *ctx)
{
	struct iovec iov = { (void *)buf, len };
	struct fi_msg_tagged m = { .msg_iov = &iov,
				   .iov_count = 1,
				   .addr = f->peer,
				   .tag = tag,
				   .context = ctx };

	return fi_tsendmsg(f->ep, &m, flags | FI_COMPLETION);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed + (i >> 12));
}

static bool same(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 131 + seed + (i >> 12)))
			return false;
	return true;
}

static void sender(struct fi *f)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct cxl_pool_opts o;
	struct cxl_obj obj;
	cxl_pool *pool;
	uint64_t v = 42;
	uint8_t *big;

	fi_phase = "delivery complete";
	/* a plain send completes while the receiver sleeps ... */
	TRY(tsend_flags(f, &v, 8, 1, 0, &v));
	CHECK(poll_for(f, 100) == 1);
	/* ... one with FI_DELIVERY_COMPLETE does not */
	TRY(tsend_flags(f, &v, 8, 2, FI_DELIVERY_COMPLETE, &v));
	CHECK(poll_for(f, 300) == 0);
	signal_peer(go[1]);
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	CHECK(e.op_context == &v && (e.flags & FI_SEND));
	wait_peer(done[0]);
	/* chunked and transfer-area sizes: no completion while the receiver
	 * sleeps; it stops progressing as soon as its receive completes, so
	 * the OP_ACK behind the message, or the token of its last slot,
	 * must be returned in that same progress call */
	for (unsigned k = 0; k < DC_SIZES; k++) {
		uint8_t *p = malloc(dc_sizes[k]);

		REQUIRE(p);
		fill(p, dc_sizes[k], 30 + k);
		TRY(tsend_flags(f, p, dc_sizes[k], 3 + k, FI_DELIVERY_COMPLETE,
				p));
		CHECK(poll_for(f, 300) == 0);
		signal_peer(go[1]);
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
		CHECK(e.op_context == p);
		wait_peer(done[0]);
		free(p);
	}

	fi_phase = "pointer passing";
	REQUIRE(cxl_opts_from_env(&o) == CXL_OK);
	REQUIRE(cxl_pool_attach_shared(&o, &pool) == CXL_OK);
	REQUIRE(cxl_obj_create(pool, "xa.test.buf", 2 * PTR_LEN, 0, &obj) ==
		CXL_OK);
	for (unsigned k = 0; k < 2; k++) {
		uint8_t *p = (uint8_t *)obj.ptr + k * PTR_LEN;

		fill(p, PTR_LEN, 7 + k);
		TRY(tsend_flags(f, p, PTR_LEN, 10 + k, 0, p));
		/* the receiver copies from our buffer: no completion before */
		CHECK(poll_for(f, 300) == 0);
		signal_peer(go[1]);
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
		CHECK(e.op_context == p);
		wait_peer(done[0]);
	}
	cxl_obj_close(&obj);
	cxl_obj_destroy(pool, "xa.test.buf");
	cxl_pool_detach(pool);

	fi_phase = "data slots";
	/* 12 sends of 1 MiB + 3 bytes from ordinary memory, back to back */
	big = malloc((1u << 20) + 3);
	REQUIRE(big);
	for (unsigned k = 0; k < 12; k++) {
		fill(big, (1u << 20) + 3, 100 + k);
		TRY(tsend_flags(f, big, (1u << 20) + 3, 20 + k, 0, big));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	}
	free(big);
	wait_peer(done[0]);
}

static void receiver(struct fi *f)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t a = 0, b = 0;
	uint8_t *buf = malloc((1u << 20) + 3);

	REQUIRE(buf);
	fi_phase = "delivery complete";
	wait_peer(go[0]); /* no progress until the sender has checked */
	TRY(fi_trecv(f->ep, &a, 8, NULL, f->peer, 1, 0, &a));
	TRY(fi_trecv(f->ep, &b, 8, NULL, f->peer, 2, 0, &b));
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	CHECK(a == 42 && b == 42);
	signal_peer(done[1]);
	for (unsigned k = 0; k < DC_SIZES; k++) {
		wait_peer(go[0]);
		TRY(fi_trecv(f->ep, buf, dc_sizes[k], NULL, f->peer, 3 + k, 0,
			     buf));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
		CHECK(e.len == dc_sizes[k] && same(buf, dc_sizes[k], 30 + k));
		signal_peer(done[1]); /* and no progress until the next one */
	}

	fi_phase = "pointer passing";
	/* expected: the receive is posted before the data is taken */
	wait_peer(go[0]);
	memset(buf, 0, PTR_LEN);
	TRY(fi_trecv(f->ep, buf, PTR_LEN, NULL, f->peer, 10, 0, buf));
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	CHECK(e.len == PTR_LEN && same(buf, PTR_LEN, 7));
	signal_peer(done[1]);
	/* unexpected: taken into a provider buffer first */
	wait_peer(go[0]);
	CHECK(poll_for(f, 100) == 0);
	memset(buf, 0, PTR_LEN);
	TRY(fi_trecv(f->ep, buf, PTR_LEN, NULL, f->peer, 11, 0, buf));
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	CHECK(e.len == PTR_LEN && same(buf, PTR_LEN, 8));
	signal_peer(done[1]);

	fi_phase = "data slots";
	for (unsigned k = 0; k < 12; k++) {
		memset(buf, 0, (1u << 20) + 3);
		TRY(fi_trecv(f->ep, buf, (1u << 20) + 3, NULL, f->peer, 20 + k,
			     0, buf));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
		CHECK(e.len == (1u << 20) + 3 &&
		      same(buf, (1u << 20) + 3, 100 + k));
	}
	signal_peer(done[1]);
	free(buf);
}

static int child(int rank, void *arg)
{
	struct fi f;

	(void)arg;
	fi_setup(&f, rank, rank ? p10[1] : p01[1], rank ? p01[0] : p10[0]);
	if (rank == 0)
		sender(&f);
	else
		receiver(&f);
	fi_teardown(&f);
	printf("rank %d: %d passed, %d failed\n", rank, t_passed, t_failed);
	fflush(stdout);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	mode = targ_mode(argc, argv);
	tpool_init(&tp, "fixa");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_xa", 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0);
	REQUIRE(pipe(go) == 0 && pipe(done) == 0);
	CHECK(run_children(2, child, NULL) == 0);
	tpool_cleanup(&tp);
	return t_report("test_fi_xa");
}
