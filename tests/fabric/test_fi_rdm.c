/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cxl provider through the real libfabric API (the core loads
 * libcxl-fi.so from FI_PROVIDER_PATH). Two processes, two emulated hosts:
 * tagged and untagged messages of every protocol size, unexpected
 * messages, any-source and ignore bits, directed receive, CQ data,
 * inject, truncation, peek/claim, cancel and counters, and a stream of
 * 3 200 messages whose every byte is checked.
 *
 * Then a sender that closes its endpoint right after its sends completed,
 * before the receiver has looked at the pool at all: the receiver must
 * still get every message (the channel outlives its sender until the
 * receiver has taken it), and once both have closed, no provider object
 * may be left in the pool.
 *
 *   test_fi_rdm --mode coherent|emulated
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitest.h"

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static const size_t sizes[] = { 0,    1,    7,	   8,	  48,	    63,
				64,   65,   199,   200,	  201,	    216,
				1000, 1104, 1105,  2048,  2049,	    4096,
				8192, 8193, 65536, 65537, 1u << 20, 3u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void run(struct fi *f)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	size_t big = 3u << 20;
	uint8_t *sb = malloc(big), *rb = malloc(big + 64);
	bool r0 = f->rank == 0;

	REQUIRE(sb && rb);
	fi_phase = "ping-pong";
	/* 1. tagged ping-pong, every size, data verified, both directions */
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		uint64_t tag = 0x8000000000000000ull | (i << 8) | 1;

		if (r0) {
			fill(sb, n, (unsigned)i);
			TRY(fi_tsend(f->ep, sb, n, NULL, f->peer, tag, sb));
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0 &&
			      e.op_context == sb && (e.flags & FI_SEND));
			TRY(fi_trecv(f->ep, rb, n, NULL, f->peer, tag + 1, 0,
				     rb));
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
			CHECK(e.len == n && e.tag == tag + 1 &&
			      (e.flags & FI_RECV) && (e.flags & FI_TAGGED));
			fill(sb, n, (unsigned)i + 100);
			CHECK(!memcmp(rb, sb, n));
			CHECK(src == f->peer);
		} else {
			TRY(fi_trecv(f->ep, rb, n, NULL, FI_ADDR_UNSPEC, tag, 0,
				     rb));
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
			fill(sb, n, (unsigned)i);
			CHECK(e.len == n && !memcmp(rb, sb, n));
			fill(sb, n, (unsigned)i + 100);
			TRY(fi_tsend(f->ep, sb, n, NULL, f->peer, tag + 1, sb));
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
		}
	}
	fi_phase = "unexpected";
	/* 2. unexpected: rank 0 sends 3 tagged messages (one chunked) and
	 * one untagged, rank 1 posts the receives afterwards, out of tag
	 * order, with ignore bits and FI_ADDR_UNSPEC */
	if (r0) {
		fill(sb, 100000, 7);
		TRY(fi_tsend(f->ep, sb, 10, NULL, f->peer, 0x10, NULL));
		TRY(fi_tsend(f->ep, sb, 100000, NULL, f->peer, 0x21, NULL));
		TRY(fi_tinjectdata(f->ep, sb, 5, 0xdada, f->peer, 0x30));
		TRY(fi_send(f->ep, sb, 33, NULL, f->peer, NULL));
		for (int k = 0; k < 3; k++)
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
	} else {
		struct fi_msg_tagged pm = { 0 };

		/* let everything arrive unexpected */
		for (int k = 0; k < 200; k++)
			fi_cq_read(f->cq, &e, 0);
		usleep(100000);
		/* FI_PEEK finds 0x21 with its size; FI_CLAIM reserves it */
		{
			struct fi_context ctx;

			int rc;

			pm.tag = 0x21;
			pm.addr = FI_ADDR_UNSPEC;
			pm.context = &ctx;
			/* a probe may say FI_ENOMSG while the message is still
			 * streaming in: retry, as MPI_Probe does */
			do {
				TRY(fi_trecvmsg(f->ep, &pm,
						FI_PEEK | FI_CLAIM));
				rc = fi_wait_cq(f, &e, &err, &src, 20);
			} while (rc == -FI_ENOMSG);
			CHECK(rc == 0);
			CHECK(e.len == 100000 && e.tag == 0x21);
			/* a claimed message is not matched by others: this
			 * receive stays posted until cancelled */
			{
				struct fi_context c2;
				int k;

				TRY(fi_trecv(f->ep, rb, big, NULL,
					     FI_ADDR_UNSPEC, 0x20, 0xf, &c2));
				for (k = 0; k < 100; k++)
					CHECK(fi_cq_read(f->cq, &e, 1) ==
					      -FI_EAGAIN);
				TRY(fi_cancel(&f->ep->fid, &c2));
				CHECK(fi_wait_cq(f, &e, &err, &src, 20) ==
				      -FI_ECANCELED);
			}
			/* ignore bits: 0x3? matches 0x30 */
			TRY(fi_trecv(f->ep, rb, big, NULL, FI_ADDR_UNSPEC, 0x3a,
				     0xf, rb));
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
			CHECK(e.tag == 0x30 && e.len == 5 &&
			      (e.flags & FI_REMOTE_CQ_DATA) &&
			      e.data == 0xdada);
			struct iovec iov = { rb, big };

			pm.msg_iov = &iov;
			pm.iov_count = 1;
			TRY(fi_trecvmsg(f->ep, &pm, FI_CLAIM));
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
			fill(sb, 100000, 7);
			CHECK(e.len == 100000 && !memcmp(rb, sb, 100000));
		}
		/* peek for something that is not there: FI_ENOMSG */
		{
			struct fi_context ctx;

			memset(&pm, 0, sizeof(pm));
			pm.tag = 0x77;
			pm.addr = FI_ADDR_UNSPEC;
			pm.context = &ctx;
			TRY(fi_trecvmsg(f->ep, &pm, FI_PEEK));
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == -FI_ENOMSG);
		}
		/* truncation: 10 bytes into 4 */
		TRY(fi_trecv(f->ep, rb, 4, NULL, f->peer, 0x10, 0, rb));
		CHECK(fi_wait_cq(f, &e, &err, &src, 20) == -FI_ETRUNC);
		CHECK(err.olen == 6 && err.len == 4);
		TRY(fi_recv(f->ep, rb, 64, NULL, FI_ADDR_UNSPEC, rb));
		CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
		CHECK(e.len == 33 && (e.flags & FI_MSG));
		CHECK(fi_cntr_read(f->rxc) > 0);
		CHECK(fi_cntr_readerr(f->rxc) == 1);
	}
	fi_phase = "cancel";
	/* 3. cancel a receive that never matches */
	{
		struct fi_context ctx;

		TRY(fi_trecv(f->ep, rb, 8, NULL, FI_ADDR_UNSPEC, 0x5555, 0,
			     &ctx));
		TRY(fi_cancel(&f->ep->fid, &ctx));
		CHECK(fi_wait_cq(f, &e, &err, &src, 20) == -FI_ECANCELED);
		CHECK(err.op_context == &ctx);
		CHECK(fi_cancel(&f->ep->fid, &ctx) == -FI_ENOENT);
	}
	fi_phase = "storm";
	/* 4. a storm: 2000 messages in flight each way, completed later */
	{
		const int n = 2000;
		uint64_t *vals = calloc(n, sizeof(uint64_t));
		int sends = 0, recvs = 0;

		REQUIRE(vals);
		for (int k = 0; k < n; k++)
			TRY(fi_trecv(f->ep, &vals[k], 8, NULL, f->peer,
				     0x1000 + (uint64_t)k, 0, &vals[k]));
		for (int k = 0; k < n; k++) {
			uint64_t v = (uint64_t)k * 3 + (uint64_t)f->rank;
			ssize_t rc;

			while ((rc = fi_tinject(f->ep, &v, 8, f->peer,
						0x1000 + (uint64_t)k)) ==
			       -FI_EAGAIN)
				fi_cq_read(f->cq, &e, 0);
			TRY(rc);
			sends++;
		}
		while (recvs < n) {
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
			recvs++;
		}
		for (int k = 0; k < n; k++)
			CHECK(vals[k] ==
			      (uint64_t)k * 3 + (uint64_t)(1 - f->rank));
		CHECK(sends == n);
		free(vals);
	}
	fi_phase = "inject sizes";
	/* 5. injects up to inject_size (4096 by default: multi-cell and
	 * transfer-area messages too), 64 in a row each way, so that some
	 * wait in a queue: the buffer is overwritten as soon as each call
	 * returns, and every message arrives intact */
	{
		const size_t isz = f->info->tx_attr->inject_size;
		const int n = 64;
		uint8_t *in = malloc((size_t)n * isz);
		ssize_t rc;

		CHECK(isz == 4096);
		REQUIRE(in);
		for (int k = 0; k < n; k++)
			TRY(fi_trecv(f->ep, in + (size_t)k * isz, isz, NULL,
				     f->peer, 0x7000 + (uint64_t)k, 0, NULL));
		for (int k = 0; k < n; k++) {
			size_t len = isz - (size_t)(k % 3) * 1000;

			fill(sb, len,
			     500 + (unsigned)k * 2 + (unsigned)f->rank);
			while ((rc = fi_tinject(f->ep, sb, len, f->peer,
						0x7000 + (uint64_t)k)) ==
			       -FI_EAGAIN)
				fi_cq_read(f->cq, &e, 0);
			TRY(rc);
			memset(sb, 0xee, len); /* ours again at once */
		}
		for (int k = 0; k < n; k++) {
			CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
			CHECK(e.len == isz - (size_t)(k % 3) * 1000);
		}
		for (int k = 0; k < n; k++) {
			size_t len = isz - (size_t)(k % 3) * 1000;

			fill(sb, len,
			     500 + (unsigned)k * 2 + (unsigned)(1 - f->rank));
			CHECK(!memcmp(in + (size_t)k * isz, sb, len));
		}
		/* one byte more is refused, and nothing is sent */
		CHECK(fi_tinject(f->ep, sb, isz + 1, f->peer, 0x7fff) ==
		      -FI_EMSGSIZE);
		CHECK(fi_inject(f->ep, sb, isz + 1, f->peer) == -FI_EMSGSIZE);
		free(in);
	}
	fi_phase = "stream";
	/* 6. a stream: rank 0 sends windows of 64 messages of 1 to 1100
	 * bytes (one-line to multi-cell eager, and the first transfer-area
	 * sizes) as fast as it can; rank 1 drains them in stream mode, which
	 * reads each message's successor ahead (in the emulated mode a line
	 * read before it is written back shows as bad data) */
	{
		enum {
			W = 64,
			WINDOWS = 50,
			MAXLEN = 1100
		};
		uint8_t *in = malloc((size_t)W * MAXLEN),
			*out = malloc((size_t)W * MAXLEN);

		REQUIRE(in && out);
		for (int w = 0; w < WINDOWS; w++) {
			for (int k = 0; k < W; k++) {
				unsigned id = (unsigned)(w * W + k);
				size_t len = 1 + (id * 37u) % MAXLEN;
				uint8_t *b =
					(r0 ? out : in) + (size_t)k * MAXLEN;

				if (r0) {
					fill(b, len, 700 + id);
					TRY(fi_tsend(f->ep, b, len, NULL,
						     f->peer, 0x9000 + id, b));
				} else {
					TRY(fi_trecv(f->ep, b, MAXLEN, NULL,
						     f->peer, 0x9000 + id, 0,
						     b));
				}
			}
			for (int k = 0; k < W; k++)
				CHECK(fi_wait_cq(f, &e, &err, &src, 20) == 0);
			for (int k = 0; !r0 && k < W; k++) {
				unsigned id = (unsigned)(w * W + k);
				size_t len = 1 + (id * 37u) % MAXLEN;

				fill(sb, len, 700 + id);
				CHECK(!memcmp(in + (size_t)k * MAXLEN, sb,
					      len));
			}
		}
		free(in);
		free(out);
	}
	free(sb);
	free(rb);
}

static enum cxl_coh_mode mode;
static struct tpool tp;
static int p01[2], p10[2];

/* Rank 1 sends an inline and a chunked message and closes; only then
 * does rank 0 post its receives and progress. */
static void sender_leaves(int rank)
{
	static const size_t lens[] = { 8, 1000 };
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t sb[1000], rb[1000];
	char c = 'x';

	fi_phase = "sender leaves";
	fi_setup(&f, rank, rank ? p10[1] : p01[1], rank ? p01[0] : p10[0]);
	if (rank == 1) {
		for (unsigned k = 0; k < 2; k++) {
			fill(sb, lens[k], 900 + k);
			TRY(fi_tsend(f.ep, sb, lens[k], NULL, f.peer, 90 + k,
				     NULL));
			CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
		}
		fi_teardown(&f);
		REQUIRE(write(p10[1], &c, 1) == 1);
		return;
	}
	REQUIRE(read(p10[0], &c, 1) == 1); /* the sender is gone */
	for (unsigned k = 0; k < 2; k++) {
		memset(rb, 0, sizeof(rb));
		TRY(fi_trecv(f.ep, rb, sizeof(rb), NULL, f.peer, 90 + k, 0,
			     NULL));
		CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
		fill(sb, lens[k], 900 + k);
		CHECK(e.len == lens[k] && !memcmp(rb, sb, lens[k]));
	}
	fi_teardown(&f);
}

static int count_provider_objects(const struct cxl_obj_stat *st, void *arg)
{
	if (!strncmp(st->name, "cxlfi.", 6)) {
		fprintf(stderr, "left in the pool: %s (refcnt %u%s)\n",
			st->name, st->refcnt, st->unlinked ? ", unlinked" : "");
		++*(int *)arg;
	}
	return 0;
}

static int child(int rank, void *arg)
{
	struct fi f;

	(void)arg;
	fi_setup(&f, rank, rank ? p10[1] : p01[1], rank ? p01[0] : p10[0]);
	run(&f);
	fi_teardown(&f);
	sender_leaves(rank);
	printf("rank %d: %d passed, %d failed\n", rank, t_passed, t_failed);
	fflush(stdout);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	mode = targ_mode(argc, argv);
	fi_test_threading(argc, argv);
	tpool_init(&tp, "firdm");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_rdm", 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0);
	CHECK(run_children(2, child, NULL) == 0);
	{
		struct cxl_pool_opts o;
		cxl_pool *p;
		int left = 0;

		topts(&o, &tp, mode, 0, 64u << 20);
		REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
		CHECK(cxl_obj_list(p, count_provider_objects, &left) == 0);
		CHECK(left == 0);
		cxl_pool_detach(p);
	}
	tpool_cleanup(&tp);
	return t_report("test_fi_rdm");
}
