/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every way a message can be matched, lost or duplicated, through the
 * libfabric API, two processes on two emulated hosts. Each rank also
 * sends to itself, as MPI libraries do (the case of the issue in which
 * MPICH's MPI_Dist_graph_create went wrong):
 *  1. self and peer messages with one tag; a peek for any source, then a
 *     receive for any source, take the same message (length, source,
 *     data), and each message is received exactly once;
 *  2. directed receives from self and from the peer each get their own
 *     source's messages, in order, while any-source receives wait;
 *  3. peek + FI_CLAIM reserves a message: plain receives skip it, the
 *     claiming receive gets it; peek + FI_DISCARD drops one; a peek that
 *     finds nothing reports FI_ENOMSG;
 *  4. truncation reports FI_ETRUNC with the overflow, and the next
 *     message is whole;
 *  5. a cancelled receive reports FI_ECANCELED and never takes a later
 *     message;
 *  6. a peer that closes and opens a new endpoint on the same index (two
 *     indices in the pool, FI_CXL_MAX_EPS=2): messages to its new address
 *     arrive in both directions, while its old address fails with
 *     FI_EHOSTUNREACH instead of feeding the old incarnation's channel.
 *
 *   test_fi_match --mode coherent|emulated
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitest.h"

static struct tpool tp;
static enum cxl_coh_mode mode;
static int p01[2], p10[2];

/* message payload: sender rank, tag, sequence; then filler */
static void mk(uint8_t *b, size_t n, int rank, uint64_t tag, unsigned seq)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(rank * 91 + tag * 13 + seq * 7 + i);
}

static bool is(const uint8_t *b, size_t n, int rank, uint64_t tag, unsigned seq)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(rank * 91 + tag * 13 + seq * 7 + i))
			return false;
	return true;
}

static fi_addr_t insert_self(struct fi *f)
{
	char name[64];
	size_t len = sizeof(name);
	fi_addr_t self;

	TRY(fi_getname(&f->ep->fid, name, &len));
	CHECK(fi_av_insert(f->av, name, 1, &self, 0, NULL) == 1);
	return self;
}

/* Send completions seen while waiting for something else. */
static int sends_seen;

/* The next entry that is not a send completion (0, or -err with *err). */
static int next_rx(struct fi *f, struct fi_cq_tagged_entry *e,
		   struct fi_cq_err_entry *err, fi_addr_t *src)
{
	for (;;) {
		int rc = fi_wait_cq(f, e, err, src, 20);

		if (rc || !(e->flags & FI_SEND))
			return rc;
		sends_seen++;
	}
}

/* Wait until n more sends have completed (some may have been seen). */
static void wait_sends(struct fi *f, int n)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	while (sends_seen < n) {
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
		CHECK(e.flags & FI_SEND);
		sends_seen++;
	}
	sends_seen -= n;
}

/* Peek until a message for (src, tag) is there: its entry. */
static void peek_wait(struct fi *f, fi_addr_t src, uint64_t tag, uint64_t flags,
		      void *ctx, struct fi_cq_tagged_entry *e, fi_addr_t *from)
{
	struct fi_cq_err_entry err;
	struct fi_msg_tagged m = { .addr = src, .tag = tag, .context = ctx };

	for (int tries = 0; tries < 200000; tries++) {
		TRY(fi_trecvmsg(f->ep, &m, FI_PEEK | flags));
		int rc = next_rx(f, e, &err, from);

		if (rc == 0)
			return;
		REQUIRE(rc == -FI_ENOMSG);
	}
	REQUIRE(!"peek never found the message");
}

static void any_source_pairs(struct fi *f, fi_addr_t self)
{
	uint8_t sb[2][64], rb[64];
	int got_self = 0, got_peer = 0;

	fi_phase = "peek any, receive any";
	for (unsigned round = 0; round < 50; round++) {
		uint64_t tag = 5 + round;
		size_t ls = 8 + round % 5, lp = 16 + round % 7;

		mk(sb[0], ls, f->rank, tag, round);
		mk(sb[1], lp, f->rank, tag, round);
		TRY(fi_tsend(f->ep, sb[0], ls, NULL, self, tag, NULL));
		TRY(fi_tsend(f->ep, sb[1], lp, NULL, f->peer, tag, NULL));
		for (int k = 0; k < 2; k++) {
			struct fi_cq_tagged_entry pe, e;
			struct fi_cq_err_entry err;
			fi_addr_t psrc, src;

			peek_wait(f, FI_ADDR_UNSPEC, tag, 0, NULL, &pe, &psrc);
			TRY(fi_trecv(f->ep, rb, sizeof(rb), NULL,
				     FI_ADDR_UNSPEC, tag, 0, rb));
			CHECK(next_rx(f, &e, &err, &src) == 0);
			CHECK(e.len == pe.len && src == psrc);
			if (src == self) {
				got_self++;
				CHECK(e.len == ls &&
				      is(rb, ls, f->rank, tag, round));
			} else {
				got_peer++;
				CHECK(src == f->peer && e.len == lp &&
				      is(rb, lp, !f->rank, tag, round));
			}
		}
		wait_sends(f, 2);
	}
	CHECK(got_self == 50 && got_peer == 50);
}

static void directed(struct fi *f, fi_addr_t self)
{
	uint8_t sb[4][32], rb[8][32];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;

	fi_phase = "directed receives";
	for (unsigned i = 0; i < 4; i++) {
		mk(sb[i], 32, f->rank, 20, i);
		TRY(fi_tsend(f->ep, sb[i], 32, NULL, i % 2 ? self : f->peer, 20,
			     NULL));
	}
	wait_sends(f, 4);
	/* two from self, two from the peer, each in order */
	for (unsigned i = 0; i < 4; i++) {
		fi_addr_t from = i < 2 ? self : f->peer;

		TRY(fi_trecv(f->ep, rb[i], 32, NULL, from, 20, 0, rb[i]));
		CHECK(next_rx(f, &e, &err, &src) == 0);
		CHECK(e.op_context == rb[i] && src == from);
		CHECK(is(rb[i], 32, i < 2 ? f->rank : !f->rank, 20,
			 i < 2 ? 2 * i + 1 : 2 * (i - 2)));
	}
	/* nothing is left for an any-source receive */
	{
		struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = 20 };

		TRY(fi_trecvmsg(f->ep, &m, FI_PEEK));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == -FI_ENOMSG);
	}
}

static void claim_discard(struct fi *f, fi_addr_t self)
{
	uint8_t sb[3][40], rb[40];
	struct fi_cq_tagged_entry e, pe;
	struct fi_cq_err_entry err;
	struct fi_context claim_ctx;
	fi_addr_t src;

	fi_phase = "claim and discard";
	for (unsigned i = 0; i < 3; i++) {
		mk(sb[i], 40, f->rank, 30, i);
		TRY(fi_tsend(f->ep, sb[i], 40, NULL, self, 30, NULL));
	}
	wait_sends(f, 3);
	/* claim the first */
	peek_wait(f, self, 30, FI_CLAIM, &claim_ctx, &pe, &src);
	CHECK(pe.len == 40 && src == self);
	/* a plain receive skips it: gets the second */
	TRY(fi_trecv(f->ep, rb, 40, NULL, self, 30, 0, rb));
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	CHECK(is(rb, 40, f->rank, 30, 1));
	/* the claiming receive gets the first */
	{
		struct iovec iov = { rb, 40 };
		struct fi_msg_tagged m = { .msg_iov = &iov,
					   .iov_count = 1,
					   .addr = self,
					   .tag = 30,
					   .context = &claim_ctx };

		TRY(fi_trecvmsg(f->ep, &m, FI_CLAIM));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
		CHECK(e.op_context == &claim_ctx && is(rb, 40, f->rank, 30, 0));
	}
	/* discard the third; then nothing is left */
	peek_wait(f, self, 30, FI_DISCARD, NULL, &pe, NULL);
	{
		struct fi_msg_tagged m = { .addr = self, .tag = 30 };

		TRY(fi_trecvmsg(f->ep, &m, FI_PEEK));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == -FI_ENOMSG);
	}
}

static void truncate_cancel(struct fi *f, fi_addr_t self)
{
	uint8_t sb[100], rb[100];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context c1, c2;

	fi_phase = "truncation";
	mk(sb, 100, f->rank, 40, 0);
	TRY(fi_tsend(f->ep, sb, 100, NULL, self, 40, NULL));
	wait_sends(f, 1);
	TRY(fi_trecv(f->ep, rb, 10, NULL, self, 40, 0, &c1));
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == -FI_ETRUNC);
	CHECK(err.op_context == &c1 && err.olen == 90 && err.len == 10);
	CHECK(is(rb, 10, f->rank, 40, 0));
	mk(sb, 60, f->rank, 40, 1);
	TRY(fi_tsend(f->ep, sb, 60, NULL, self, 40, NULL));
	wait_sends(f, 1);
	TRY(fi_trecv(f->ep, rb, 100, NULL, self, 40, 0, &c2));
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	CHECK(e.len == 60 && is(rb, 60, f->rank, 40, 1));

	fi_phase = "cancel";
	TRY(fi_trecv(f->ep, rb, 100, NULL, FI_ADDR_UNSPEC, 50, 0, &c1));
	CHECK(fi_cancel(&f->ep->fid, &c1) == 0);
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == -FI_ECANCELED);
	CHECK(err.op_context == &c1);
	CHECK(fi_cancel(&f->ep->fid, &c1) == -FI_ENOENT);
	mk(sb, 30, f->rank, 50, 0);
	TRY(fi_tsend(f->ep, sb, 30, NULL, self, 50, NULL));
	wait_sends(f, 1);
	TRY(fi_trecv(f->ep, rb, 100, NULL, FI_ADDR_UNSPEC, 50, 0, &c2));
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	CHECK(e.op_context == &c2 && e.len == 30 && is(rb, 30, f->rank, 50, 0));
}

/* Send our address, read the peer's, insert it. */
static fi_addr_t exchange(struct fi *f, int to, int from)
{
	char name[64], peer[64];
	size_t len = sizeof(name);
	fi_addr_t fa;

	TRY(fi_getname(&f->ep->fid, name, &len));
	REQUIRE(write(to, &len, sizeof(len)) == sizeof(len));
	REQUIRE(write(to, name, len) == (ssize_t)len);
	REQUIRE(read(from, &len, sizeof(len)) == sizeof(len));
	REQUIRE(len <= sizeof(peer));
	REQUIRE(read(from, peer, len) == (ssize_t)len);
	CHECK(fi_av_insert(f->av, peer, 1, &fa, 0, NULL) == 1);
	return fa;
}

static void ping(struct fi *f, fi_addr_t to, uint64_t tag, bool first)
{
	uint8_t sb[24], rb[24];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	mk(sb, 24, f->rank, tag, 0);
	TRY(fi_trecv(f->ep, rb, 24, NULL, to, tag, 0, rb));
	if (first) {
		TRY(fi_tsend(f->ep, sb, 24, NULL, to, tag, sb));
	}
	for (int n = 0; n < (first ? 2 : 1); n++) {
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
		if (e.op_context == rb)
			CHECK(is(rb, 24, !f->rank, tag, 0));
	}
	if (!first) {
		TRY(fi_tsend(f->ep, sb, 24, NULL, to, tag, sb));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	}
}

static void reincarnation(struct fi *f, int to, int from)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t old = f->peer, now;
	char c = 0;
	uint8_t b[8] = { 0 };

	fi_phase = "reincarnation";
	ping(f, f->peer, 60, f->rank == 0); /* channels both ways exist */
	if (f->rank == 1) {
		char name_old[64], name_new[64];
		size_t l1 = sizeof(name_old), l2 = sizeof(name_new);

		TRY(fi_getname(&f->ep->fid, name_old, &l1));
		fi_teardown(f);
		fi_setup(f, 1, to, from); /* a new endpoint, same index */
		TRY(fi_getname(&f->ep->fid, name_new, &l2));
		/* index at offset 28 of the address: the same one */
		CHECK(l1 == l2 && !memcmp(name_old + 28, name_new + 28, 4));
		CHECK(memcmp(name_old, name_new, l1) != 0);
		ping(f, f->peer, 61, false);
		REQUIRE(read(from, &c, 1) == 1);
		return;
	}
	now = exchange(f, to, from);
	CHECK(now != old);
	ping(f, now, 61, true);
	/* the old address: refused, not delivered into the old channel */
	{
		ssize_t rc = fi_tsend(f->ep, b, 8, NULL, old, 62, NULL);

		if (rc == 0)
			CHECK(fi_wait_cq(f, &e, &err, NULL, 20) ==
			      -FI_EHOSTUNREACH);
		else
			CHECK(rc == -FI_EHOSTUNREACH);
	}
	/* and the new one still works after that */
	TRY(fi_tsend(f->ep, b, 8, NULL, now, 63, NULL));
	CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	REQUIRE(write(to, &c, 1) == 1);
}

static int child(int rank, void *arg)
{
	struct fi f;
	fi_addr_t self;
	int to = rank ? p10[1] : p01[1], from = rank ? p01[0] : p10[0];

	(void)arg;
	fi_setup(&f, rank, to, from);
	self = insert_self(&f);
	any_source_pairs(&f, self);
	directed(&f, self);
	claim_discard(&f, self);
	truncate_cancel(&f, self);
	reincarnation(&f, to, from);
	fi_teardown(&f);
	printf("rank %d: %d passed, %d failed\n", rank, t_passed, t_failed);
	fflush(stdout);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	mode = targ_mode(argc, argv);
	tpool_init(&tp, "fimatch");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_match", 1);
	/* two endpoint indices: a reopened endpoint gets its old one */
	setenv("FI_CXL_MAX_EPS", "2", 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0);
	CHECK(run_children(2, child, NULL) == 0);
	tpool_cleanup(&tp);
	return t_report("test_fi_match");
}
