/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peers in two pools (docs/multipool.md): with FI_CXL_NET=tcp;ofi_rxm,
 * two processes attached to different pool files reach each other
 * through the network link, through the provider's one endpoint, CQ and
 * receive queue. Under a libfabric with the peer API (2.3+: ctest runs
 * it with the MPICH wheel's).
 *  - expected and unexpected, tagged and untagged, with CQ data, large;
 *  - FI_SOURCE names the peer's fi_addr; a directed receive matches it;
 *  - one receive queue: a multi-receive buffer takes network messages
 *    in slices and reports its release (FI_MULTI_RECV);
 *  - FI_PEEK and FI_CLAIM on a message the network provider holds;
 *  - the first send, while the link connects, is queued, not refused;
 *  - an FI_INJECT fi_tsendmsg reports its context;
 *  - RMA writes and reads of 200 KiB and atomics (sum, fetch) into the
 *    other's region, a write with remote CQ data reported at the target
 *    once, after all its chunks, and a bad key answered with
 *    FI_EKEYREJECTED;
 *  - both ways; the FI_CXL_STATS counts say the traffic took the link;
 *  - a receive directed at the network peer, or from any source, has the
 *    link looked at in every progress call while it waits (net_looks).
 * --same-pool: both in one pool, FI_CXL_NET still set: the same traffic
 * never touches the link (net_sent 0).
 * --net-only: the receiver has no CXL_POOL (a host without a pool): it
 * runs network-only, on a private pool of its own.
 * --close-early: the sender injects 3 messages (16, 16 and 4000 bytes)
 * into the fresh link (still connecting: they wait in the provider's
 * queue), overwrites its buffers and closes at once; the receiver gets
 * all 3 intact (the provider posts them before the close).
 * --quiet: the receiver's link stays quiet (nothing posted that the
 * network peer may match but a multi-receive buffer) for QUIET_MS while
 * it reads its CQ: it looks at the link at most QUIET_LOOKS_MAX times
 * then, yet takes a message the peer sends afterwards into the buffer
 * within QUIET_NOTICE_MS; then QUIET_PEEKS probes from any source each
 * look at the link.
 * --mode M: the pools' coherence mode (coherent by default; emulated,
 * the non-coherent emulation, for the pool path of --same-pool).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>

#include "fitest.h"

#define BIG (64u << 10)
/* the receiver's RMA region: a counter at 0, data after it */
#define RMA_KEY 0x51
#define RMA_OFF 1000u
#define RMA_LEN (200u << 10)
/* empty CQ reads while a receive the network peer may match waits */
#define DIRECTED_POLLS 20000
/* --quiet: the quiet phase, the looks allowed in it (a fixed share of
 * 1/16 of the waits looked 10 000-50 000 times in it; the gap that grows
 * with the silence, about 1 300), how soon a message into a quiet
 * endpoint must complete (the gap is at most 256 us; the rest is room for
 * a loaded machine), and the probes that must each look */
#define QUIET_MS 300
#define QUIET_LOOKS_MAX 4000
#define QUIET_NOTICE_MS 100
#define QUIET_PEEKS 20000

static uint8_t pat(uint64_t seed, size_t i)
{
	return (uint8_t)(seed * 37u + i * 13u + (i >> 8));
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(seed, i);
}

static bool same(const uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(seed, i)) {
			fprintf(stderr, "byte %zu of seed %llu: %u, want %u\n",
				i, (unsigned long long)seed, b[i],
				pat(seed, i));
			return false;
		}
	return true;
}

static struct fi f;
static int to_peer, from_peer;
static bool same_pool, net_only, close_early, quiet;
static enum cxl_coh_mode mode = CXL_COH_COHERENT; /* --mode */

static void sync_peer(void)
{
	char c = 1;

	REQUIRE(write(to_peer, &c, 1) == 1);
	REQUIRE(read(from_peer, &c, 1) == 1);
}

/* Send, retrying while the link asks for progress (it connects). */
static void post_send(ssize_t (*post)(void *), void *arg)
{
	struct fi_cq_tagged_entry e;
	ssize_t rc;

	for (int i = 0; (rc = post(arg)) == -FI_EAGAIN && i < 10000000; i++)
		(void)fi_cq_read(f.cq, &e, 0);
	if (rc)
		fprintf(stderr, "rank %d: send: %zd (%s)\n", f.rank, rc,
			fi_strerror((int)-rc));
	CHECK(rc == 0);
}

struct sendargs {
	const void *buf;
	size_t len;
	uint64_t tag, data;
	int kind; /* 0 tsend, 1 send, 2 senddata, 3 tinjectdata, 4 injectdata */
	void *ctx;
};

static ssize_t do_post(void *p)
{
	struct sendargs *a = p;

	switch (a->kind) {
	case 0:
		return fi_tsend(f.ep, a->buf, a->len, NULL, f.peer, a->tag,
				a->ctx);
	case 1:
		return fi_send(f.ep, a->buf, a->len, NULL, f.peer, a->ctx);
	case 3:
		return fi_tinjectdata(f.ep, a->buf, a->len, a->data, f.peer,
				      a->tag);
	case 4:
		return fi_injectdata(f.ep, a->buf, a->len, a->data, f.peer);
	default:
		return fi_senddata(f.ep, a->buf, a->len, NULL, a->data, f.peer,
				   a->ctx);
	}
}

/* fi_tsendmsg with FI_INJECT: done once posted, yet a completion is
 * asked for (FI_COMPLETION) and must carry the context */
static ssize_t do_injectmsg(void *p)
{
	struct sendargs *a = p;
	struct iovec iov = { (void *)a->buf, a->len };
	struct fi_msg_tagged m = {
		&iov, NULL, 1, f.peer, a->tag, 0, a->ctx, 0
	};

	return fi_tsendmsg(f.ep, &m, FI_INJECT | FI_COMPLETION);
}

static void send_one(int kind, const void *buf, size_t len, uint64_t tag,
		     uint64_t data, void *ctx)
{
	struct sendargs a = { buf, len, tag, data, kind, ctx };

	post_send(do_post, &a);
}

/* Wait for one completion; the source of a receive into *src. */
static struct fi_cq_tagged_entry wait_one(const char *phase, fi_addr_t *src)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t s = FI_ADDR_NOTAVAIL;
	int rc;

	fi_phase = phase;
	rc = fi_wait_cq(&f, &e, &err, &s, 30);
	if (rc)
		fprintf(stderr, "rank %d: %s: error %d (%s)\n", f.rank, phase,
			rc, fi_strerror(-rc));
	CHECK(rc == 0);
	if (src)
		*src = s;
	return e;
}

static void sender(void)
{
	static uint8_t small[1000], big[BIG], m[3][1200], pk[300];
	char buf[8];

	fill(small, sizeof(small), 1);
	fill(big, sizeof(big), 2);
	for (int i = 0; i < 3; i++)
		fill(m[i], sizeof(m[i]), 10 + i);
	fill(pk, sizeof(pk), 20);

	sync_peer(); /* 1: the receiver posted */
	/* the first send to the peer: the link is still connecting, and
	 * the provider queues it instead of answering -FI_EAGAIN */
	CHECK(fi_tsend(f.ep, small, sizeof(small), NULL, f.peer, 1,
		       (void *)1) == 0);
	(void)wait_one("tsend expected", NULL);
	/* 2: unexpected: large tagged, untagged with data */
	send_one(0, big, sizeof(big), 2, 0, (void *)2);
	send_one(2, small, sizeof(small), 0, 0xfeedull, (void *)3);
	for (int i = 0; i < 2; i++)
		(void)wait_one("unexpected sends", NULL);
	sync_peer(); /* 3: directed receive posted */
	send_one(0, small, 100, 3, 0, (void *)4);
	(void)wait_one("directed", NULL);
	sync_peer(); /* 4: multi-receive posted */
	for (int i = 0; i < 3; i++)
		send_one(1, m[i], sizeof(m[i]), 0, 0,
			 (void *)(uintptr_t)(5 + i));
	for (int i = 0; i < 3; i++)
		(void)wait_one("multi-receive sends", NULL);
	/* 5: peeked and claimed */
	send_one(0, pk, sizeof(pk), 9, 0, (void *)8);
	(void)wait_one("peek send", NULL);
	/* 6: the other way, a send, an injected sendmsg, and injects with
	 * CQ data, tagged and not (the link's own inject calls) */
	{
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		char buf2[8], buf3[8], buf4[8];
		int seen = 0;

		CHECK(fi_trecv(f.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 4,
			       0, (void *)9) == 0);
		CHECK(fi_trecv(f.ep, buf2, sizeof(buf2), NULL, FI_ADDR_UNSPEC,
			       5, 0, (void *)10) == 0);
		CHECK(fi_trecv(f.ep, buf3, sizeof(buf3), NULL, FI_ADDR_UNSPEC,
			       6, 0, (void *)11) == 0);
		CHECK(fi_recv(f.ep, buf4, sizeof(buf4), NULL, FI_ADDR_UNSPEC,
			      (void *)12) == 0);
		sync_peer();
		for (int i = 0; i < 4; i++) {
			e = wait_one("reverse", &src);
			CHECK(src == f.peer && e.len == 8);
			if (e.op_context == (void *)11)
				CHECK((e.flags & FI_REMOTE_CQ_DATA) &&
				      (e.flags & FI_TAGGED) &&
				      e.data == 0x7a6ull);
			if (e.op_context == (void *)12)
				CHECK((e.flags & FI_REMOTE_CQ_DATA) &&
				      (e.flags & FI_MSG) && e.data == 0xd47ull);
			seen |= e.op_context == (void *)9    ? 1
				: e.op_context == (void *)10 ? 2
				: e.op_context == (void *)11 ? 4
				: e.op_context == (void *)12 ? 8
							     : 16;
		}
		CHECK(seen == 15);
		CHECK(!memcmp(buf, "reverse", 8));
		CHECK(!memcmp(buf2, "injectd", 8));
		CHECK(!memcmp(buf3, "tinjdat", 8));
		CHECK(!memcmp(buf4, "injdata", 8));
	}
	/* 7: RMA and atomics into the receiver's region (over the link's
	 * RMA endpoint in two pools, through the pool in one) */
	sync_peer(); /* its region is registered */
	{
		static uint8_t out[RMA_LEN], back[RMA_LEN];
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		uint64_t add = 5, old = 0;
		int rc;

		fill(out, sizeof(out), 30);
		CHECK(fi_write(f.ep, out, sizeof(out), NULL, f.peer, RMA_OFF,
			       RMA_KEY, (void *)21) == 0);
		e = wait_one("RMA write", NULL);
		CHECK(e.op_context == (void *)21 && (e.flags & FI_WRITE));
		CHECK(fi_read(f.ep, back, sizeof(back), NULL, f.peer, RMA_OFF,
			      RMA_KEY, (void *)22) == 0);
		e = wait_one("RMA read", NULL);
		CHECK(e.op_context == (void *)22 && (e.flags & FI_READ));
		CHECK(same(back, sizeof(back), 30));
		/* the same bytes again, with remote CQ data for the target */
		CHECK(fi_writedata(f.ep, out, sizeof(out), NULL, 0xda7aull,
				   f.peer, RMA_OFF, RMA_KEY, (void *)26) == 0);
		e = wait_one("RMA write with data", NULL);
		CHECK(e.op_context == (void *)26 && (e.flags & FI_WRITE));
		CHECK(fi_atomic(f.ep, &add, 1, NULL, f.peer, 0, RMA_KEY,
				FI_UINT64, FI_SUM, (void *)23) == 0);
		e = wait_one("atomic", NULL);
		CHECK(e.op_context == (void *)23 && (e.flags & FI_ATOMIC));
		CHECK(fi_fetch_atomic(f.ep, &add, 1, NULL, &old, NULL, f.peer,
				      0, RMA_KEY, FI_UINT64, FI_SUM,
				      (void *)24) == 0);
		e = wait_one("fetching atomic", NULL);
		CHECK(e.op_context == (void *)24 && old == 1000 + 5);
		/* a key the target never registered: an error completion */
		CHECK(fi_write(f.ep, out, 8, NULL, f.peer, 0, RMA_KEY + 1,
			       (void *)25) == 0);
		fi_phase = "RMA with a bad key";
		rc = fi_wait_cq(&f, &e, &err, NULL, 30);
		CHECK(rc == -FI_EKEYREJECTED && err.op_context == (void *)25);
	}
	sync_peer(); /* done: it checks its region */
	sync_peer();
	/* 8: the receiver polls with a receive directed at us posted, then
	 * with one from any source; the message after each */
	for (int k = 0; k < 2; k++) {
		struct fi_cq_tagged_entry e;

		sync_peer();
		send_one(0, "looked", 7, 8, 0, (void *)28);
		e = wait_one("message to a polling receiver", NULL);
		CHECK(e.op_context == (void *)28 && (e.flags & FI_SEND));
	}
}

static void receiver(void)
{
	static uint8_t small[1000], big[BIG], multi[4096], pk[300];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	char buf[8] = "reverse";
	int got = 0;

	/* 1: expected */
	CHECK(fi_trecv(f.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, 1, 0,
		       (void *)11) == 0);
	sync_peer();
	e = wait_one("expected", &src);
	CHECK(e.op_context == (void *)11 && e.len == sizeof(small));
	CHECK(e.tag == 1 && (e.flags & FI_TAGGED) && (e.flags & FI_RECV));
	CHECK(src == f.peer);
	CHECK(same(small, sizeof(small), 1));

	/* 2: unexpected (give them time to arrive and be queued) */
	for (int i = 0; i < 200; i++) {
		(void)fi_cq_read(f.cq, &e, 0);
		usleep(1000);
	}
	CHECK(fi_recv(f.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC,
		      (void *)13) == 0);
	CHECK(fi_trecv(f.ep, big, sizeof(big), NULL, FI_ADDR_UNSPEC, 2, 0,
		       (void *)12) == 0);
	for (int i = 0; i < 2; i++) {
		e = wait_one("unexpected", &src);
		CHECK(src == f.peer);
		if (e.op_context == (void *)12) {
			got |= 1;
			CHECK(e.len == BIG && e.tag == 2);
			CHECK(same(big, BIG, 2));
		} else if (e.op_context == (void *)13) {
			got |= 2;
			CHECK(e.len == sizeof(small));
			CHECK(e.flags & FI_REMOTE_CQ_DATA && e.data == 0xfeed);
			CHECK(same(small, sizeof(small), 1));
		}
	}
	CHECK(got == 3);

	/* 3: a directed receive from the peer in the other pool */
	CHECK(fi_trecv(f.ep, small, 100, NULL, f.peer, 3, 0, (void *)14) == 0);
	sync_peer();
	e = wait_one("directed", NULL);
	CHECK(e.op_context == (void *)14 && e.len == 100);

	/* 4: one multi-receive buffer takes 3 messages of 1200 bytes; left
	 * with 496 < 1024 it is released with the third */
	{
		size_t min = 1024;
		bool released = false;

		CHECK(fi_setopt(&f.ep->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)) == 0);
		{
			struct iovec iov = { multi, sizeof(multi) };
			struct fi_msg m = { &iov,	    NULL,	1,
					    FI_ADDR_UNSPEC, (void *)16, 0 };

			CHECK(fi_recvmsg(f.ep, &m, FI_MULTI_RECV) == 0);
		}
		sync_peer();
		for (int i = 0; i < 3; i++) {
			e = wait_one("multi-receive", NULL);
			CHECK(e.op_context == (void *)16 && e.len == 1200);
			CHECK((uint8_t *)e.buf == multi + 1200 * (size_t)i);
			CHECK(same(e.buf, 1200, 10 + (uint64_t)i));
			released |= (e.flags & FI_MULTI_RECV) != 0;
		}
		if (!released) { /* a release may come on its own entry */
			e = wait_one("multi-receive release", NULL);
			released = (e.flags & FI_MULTI_RECV) != 0;
		}
		CHECK(released);
	}

	/* 5: peek, claim, then receive the claimed message */
	{
		struct fi_msg_tagged m;
		struct iovec iov = { pk, sizeof(pk) };
		int rc = -1;

		for (int i = 0; i < 2000 && rc; i++) {
			m = (struct fi_msg_tagged){ &iov,	    NULL, 1,
						    FI_ADDR_UNSPEC, 9,	  0,
						    (void *)17,	    0 };
			CHECK(fi_trecvmsg(f.ep, &m, FI_PEEK | FI_CLAIM) == 0);
			{
				struct fi_cq_err_entry err;

				fi_phase = "peek";
				rc = fi_wait_cq(&f, &e, &err, NULL, 30);
			}
			if (rc)
				usleep(1000);
		}
		CHECK(rc == 0 && e.len == sizeof(pk) && e.tag == 9);
		m = (struct fi_msg_tagged){ &iov,	    NULL, 1,
					    FI_ADDR_UNSPEC, 9,	  0,
					    (void *)17,	    0 };
		CHECK(fi_trecvmsg(f.ep, &m, FI_CLAIM) == 0);
		e = wait_one("claimed", NULL);
		CHECK(e.op_context == (void *)17 && e.len == sizeof(pk));
		CHECK(same(pk, sizeof(pk), 20));
	}

	/* 6: the other way */
	sync_peer();
	send_one(0, buf, sizeof(buf), 4, 0, (void *)18);
	e = wait_one("reverse send", NULL);
	CHECK(e.op_context == (void *)18);
	{
		struct sendargs a = { "injectd", 8, 5, 0, 0, (void *)19 };

		post_send(do_injectmsg, &a);
		e = wait_one("injected sendmsg", NULL);
		CHECK(e.op_context == (void *)19 && (e.flags & FI_SEND));
	}
	/* no completion for these: the receiver checks them */
	send_one(3, "tinjdat", 8, 6, 0x7a6ull, NULL);
	send_one(4, "injdata", 8, 0, 0xd47ull, NULL);

	/* 7: our region, the target of the sender's RMA and atomics: we
	 * only progress until it says it is done */
	{
		static uint8_t region[RMA_OFF + RMA_LEN];
		struct fid_mr *mr;
		struct pollfd pfd = { .fd = from_peer, .events = POLLIN };
		uint64_t v = 1000;
		int cq_data = 0;
		char c;

		memcpy(region, &v, sizeof(v));
		TRY(fi_mr_reg(f.domain, region, sizeof(region),
			      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, RMA_KEY, 0,
			      &mr, NULL));
		sync_peer();
		while (poll(&pfd, 1, 0) == 0) {
			struct fi_cq_tagged_entry x;

			if (fi_cq_read(f.cq, &x, 1) != 1)
				continue;
			/* the write with data: the whole length, once */
			CHECK(x.flags ==
			      (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA));
			CHECK(x.data == 0xda7a && x.len == RMA_LEN);
			CHECK(same(region + RMA_OFF, RMA_LEN, 30));
			cq_data++;
		}
		CHECK(cq_data == 1);
		REQUIRE(read(from_peer, &c, 1) == 1);
		REQUIRE(write(to_peer, &c, 1) == 1);
		memcpy(&v, region, sizeof(v));
		CHECK(v == 1000 + 5 + 5);
		CHECK(same(region + RMA_OFF, RMA_LEN, 30));
		TRY(fi_close(&mr->fid));
	}
	sync_peer();
	/* 8: a receive directed at the network peer, then one from any
	 * source; the peer sends only after our polls: each of them looks
	 * at the link (counted in run) */
	for (int k = 0; k < 2; k++) {
		char dir[8] = "";

		CHECK(fi_trecv(f.ep, dir, 7, NULL, k ? FI_ADDR_UNSPEC : f.peer,
			       8, 0, (void *)18) == 0);
		for (int i = 0; i < DIRECTED_POLLS; i++)
			(void)fi_cq_read(f.cq, &e, 0); /* count 0: one poll */
		sync_peer();
		e = wait_one("receive from a polling receiver", NULL);
		CHECK(e.op_context == (void *)18 && !strcmp(dir, "looked"));
	}
}

static void setup(int rank, const struct tpool *tp)
{
	char name[64], peer[64];
	size_t len = sizeof(name);

	fi_test_env(tp, mode);
	if (net_only && rank == 1) { /* a host without a pool */
		unsetenv("CXL_POOL");
		unsetenv("CXL_RUNDIR");
	}
	fi_test_open(&f, rank,
		     FI_MULTI_RECV | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE |
			     FI_REMOTE_READ | FI_REMOTE_WRITE);
	CHECK(f.info->src_addrlen == 64);
	TRY(fi_getname(&f.ep->fid, name, &len));
	CHECK(len == 64);
	REQUIRE(write(to_peer, name, len) == (ssize_t)len);
	REQUIRE(read(from_peer, peer, len) == (ssize_t)len);
	CHECK(fi_av_insert(f.av, peer, 1, &f.peer, 0, NULL) == 1);
}

/* Close, with the provider's FI_CXL_STATS line (printed at fabric close)
 * captured: the messages this process sent through the network link, and
 * its looks at the link into *looks, those while it was quiet into
 * *quiet_looks (if not NULL). */
static long long teardown_net_sent(long long *looks, long long *quiet_looks)
{
	char path[] = "/tmp/cxltest-finet-XXXXXX", line[1024];
	int fd = mkstemp(path), saved = dup(2);
	long long n = -1;
	FILE *fp;

	REQUIRE(fd >= 0 && saved >= 0);
	REQUIRE(dup2(fd, 2) == 2);
	fi_teardown(&f);
	REQUIRE(dup2(saved, 2) == 2);
	close(saved);
	fp = fdopen(fd, "r");
	REQUIRE(fp);
	rewind(fp);
	while (fgets(line, sizeof(line), fp)) {
		const char *p = strstr(line, " net_sent ");

		fputs(line, stderr);
		const char *q = strstr(line, " net_looks ");

		if (strstr(line, "cxl-stats:") && p)
			n = atoll(p + strlen(" net_sent "));
		const char *r = strstr(line, " net_quiet_looks ");

		if (strstr(line, "cxl-stats:") && q)
			*looks = atoll(q + strlen(" net_looks "));
		if (strstr(line, "cxl-stats:") && r && quiet_looks)
			*quiet_looks = atoll(r + strlen(" net_quiet_looks "));
	}
	fclose(fp);
	unlink(path);
	return n;
}

/* --close-early: injected sends to a peer the link is still connecting to,
 * then an immediate close, must still arrive: two small ones and one of
 * 4000 bytes (above the link's own inject size, 128 for tcp;ofi_rxm:
 * the provider sends its copy of it) */
static int run_close_early(int rank)
{
	static const size_t len[3] = { 16, 16, 4000 };
	static uint8_t msg[3][4000], got[3][4000];

	for (int i = 0; i < 3; i++)
		fill(msg[i], len[i], 50 + (uint64_t)i);
	if (rank == 0) {
		for (int i = 0; i < 3; i++) {
			CHECK(fi_tinject(f.ep, msg[i], len[i], f.peer,
					 77 + (uint64_t)i) == 0);
			memset(msg[i], 0, len[i]); /* ours again on return */
		}
		fi_teardown(&f); /* at once: the link may not be up yet */
		return t_report("test_fi_net --close-early sender");
	}
	for (int i = 0; i < 3; i++)
		CHECK(fi_trecv(f.ep, got[i], len[i], NULL, FI_ADDR_UNSPEC,
			       77 + (uint64_t)i, 0,
			       (void *)(uintptr_t)(40 + i)) == 0);
	for (int i = 0; i < 3; i++) {
		struct fi_cq_tagged_entry e = wait_one("early message", NULL);
		int k = (int)((uintptr_t)e.op_context - 40);

		CHECK(k >= 0 && k < 3);
		if (k >= 0 && k < 3)
			CHECK(e.len == len[k] &&
			      same(got[k], len[k], 50 + (uint64_t)k));
	}
	fi_teardown(&f);
	return t_report("test_fi_net --close-early receiver");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* --quiet (see the top): rank 0 sends, rank 1 is the quiet receiver */
static int run_quiet(int rank)
{
	static uint8_t msg[100], multi[4096];
	struct fi_cq_tagged_entry e;
	long long looks = -1, quiet_looks = -1;
	uint64_t t0;
	int stray = 0;

	fill(msg, sizeof(msg), 60);
	if (rank == 0) {
		struct sendargs a = { msg, sizeof(msg), 0, 0, 1, (void *)61 };

		sync_peer(); /* the buffer is posted: connect the link */
		post_send(do_post, &a);
		(void)wait_one("first send", NULL);
		sync_peer(); /* the quiet phase is over */
		post_send(do_post, &a);
		(void)wait_one("send into a quiet endpoint", NULL);
		sync_peer(); /* the peer's probes are done */
		fi_teardown(&f);
		return t_report("test_fi_net --quiet sender");
	}
	{
		size_t min = sizeof(msg);
		struct iovec iov = { multi, sizeof(multi) };
		struct fi_msg m = {
			&iov, NULL, 1, FI_ADDR_UNSPEC, (void *)62, 0
		};

		CHECK(fi_setopt(&f.ep->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)) == 0);
		CHECK(fi_recvmsg(f.ep, &m, FI_MULTI_RECV) == 0);
	}
	sync_peer();
	e = wait_one("first message", NULL);
	CHECK(e.op_context == (void *)62 && e.len == sizeof(msg));
	/* quiet: only the multi-receive buffer is posted */
	for (t0 = now_ms(); now_ms() - t0 < QUIET_MS;)
		stray += fi_cq_read(f.cq, &e, 1) != -FI_EAGAIN;
	CHECK(stray == 0);
	sync_peer();
	t0 = now_ms();
	e = wait_one("message into a quiet endpoint", NULL);
	printf("a message into the quiet endpoint completed after %llu ms\n",
	       (unsigned long long)(now_ms() - t0));
	CHECK(now_ms() - t0 < QUIET_NOTICE_MS);
	CHECK(e.op_context == (void *)62 && e.len == sizeof(msg) &&
	      same(e.buf, sizeof(msg), 60));
	/* probes from any source, which no message answers */
	for (int i = 0; i < QUIET_PEEKS; i++) {
		struct fi_cq_err_entry err = { 0 };
		struct fi_msg_tagged m = { NULL,	   NULL, 0,
					   FI_ADDR_UNSPEC, 99,	 0,
					   (void *)63,	   0 };

		CHECK(fi_trecvmsg(f.ep, &m, FI_PEEK) == 0);
		CHECK(fi_cq_read(f.cq, &e, 1) == -FI_EAVAIL);
		CHECK(fi_cq_readerr(f.cq, &err, 0) == 1 &&
		      err.err == FI_ENOMSG);
	}
	sync_peer();
	(void)teardown_net_sent(&looks, &quiet_looks);
	printf("the quiet receiver looked at the link %lld times, %lld of "
	       "them while quiet\n",
	       looks, quiet_looks);
	CHECK(quiet_looks >= 1 && quiet_looks <= QUIET_LOOKS_MAX);
	CHECK(looks - quiet_looks >= QUIET_PEEKS);
	return t_report("test_fi_net --quiet receiver");
}

static int run(int rank, const struct tpool *tp)
{
	long long net, looks = -1;

	setup(rank, tp);
	if (close_early)
		return run_close_early(rank);
	if (quiet)
		return run_quiet(rank);
	if (rank == 0)
		sender();
	else
		receiver();
	net = teardown_net_sent(&looks, NULL);
	/* sender: 1 + 2 + 1 + 3 + 1 + 2 sends; receiver: a send, 3 injects */
	printf("rank %d: %lld messages sent through the network link, "
	       "%lld looks at it\n",
	       rank, net, looks);
	CHECK(net == (same_pool ? 0 : rank ? 4 : 10));
	if (rank && !same_pool)
		CHECK(looks >= 2 * DIRECTED_POLLS);
	return t_report(rank ? "test_fi_net receiver" : "test_fi_net sender");
}

struct pools {
	struct tpool tp[2];
};

static int child(int rank, int to, int from, void *arg)
{
	struct pools *p = arg;

	to_peer = to;
	from_peer = from;
	return run(rank, &p->tp[same_pool ? 0 : rank]);
}

int main(int argc, char **argv)
{
	struct pools p;
	int bad;

	same_pool = argc > 1 && !strcmp(argv[1], "--same-pool");
	net_only = argc > 1 && !strcmp(argv[1], "--net-only");
	close_early = argc > 1 && !strcmp(argv[1], "--close-early");
	quiet = argc > 1 && !strcmp(argv[1], "--quiet");
	mode = targ_mode(argc, argv);
	setenv("FI_CXL_NET", "tcp;ofi_rxm", 1);
	t_net_on_loopback();
	setenv("FI_CXL_STATS", "1", 1);
	tpool_init(&p.tp[0], "finet0");
	tpool_init(&p.tp[1], "finet1");
	bad = run_pair(child, &p);
	tpool_cleanup(&p.tp[0]);
	tpool_cleanup(&p.tp[1]);
	return bad ? 1 : 0;
}
