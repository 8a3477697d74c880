/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network link (src/fabric/net.c) against a real network provider
 * (tcp;ofi_rxm of the libfabric the test runs with), with a small owner
 * of its own: its CQs record what the network provider writes into them,
 * its receive queue holds one posted receive at a time and keeps what
 * arrives unexpected. Two processes:
 *  - expected: the receive is posted first; the provider asks get_tag,
 *    fills our buffer and writes the completion to our CQ, with the
 *    sender's id that we gave at insert as the source;
 *  - unexpected: tagged and untagged messages (small and 256 KiB, which
 *    takes the provider's large-message protocol) arrive before a
 *    receive; the provider queues them with us; we post, call start_*,
 *    and the data lands;
 *  - the sender sees its send completions in its CQ.
 * This is the peer-API layout check of peer_api.h: a layout that differs
 * from the provider's makes it read or write the wrong fields.
 *
 * --expect-old: the libfabric is older than the peer API; the open must
 * fail and say which version is needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "net.h"
#include "testutil.h"

#define BIG (256u << 10)
#define SMALL 1000u
#define NENT 16

struct cqe {
	void *ctx;
	uint64_t flags;
	size_t len;
	uint64_t tag;
	fi_addr_t src;
	int err;
};

/* The test's owner: CQ and receive queue. */
struct owner {
	struct fipeer_cq cq;
	struct fipeer_cq_owner_ops cq_ops;
	struct fipeer_srx srx;
	struct fipeer_srx_owner_ops srx_ops;
	struct cqe ent[NENT];
	int nent;
	/* one posted receive */
	bool posted, posted_tagged;
	void *buf;
	size_t len;
	uint64_t tag;
	void *ctx;
	/* entries handed out, and the unexpected ones queued with us */
	struct fipeer_rx_entry rx[NENT];
	struct iovec iov[NENT];
	void *desc[NENT]; /* one NULL descriptor per entry's iov */
	bool rx_used[NENT];
	struct fipeer_rx_entry *unexp[NENT];
	int nunexp, freed;
};

static struct owner *owner_of_cq(struct fipeer_cq *cq)
{
	return (struct owner *)((char *)cq - offsetof(struct owner, cq));
}

static struct owner *owner_of_srx(struct fipeer_srx *srx)
{
	return (struct owner *)((char *)srx - offsetof(struct owner, srx));
}

static ssize_t cq_write(struct fipeer_cq *cq, void *ctx, uint64_t flags,
			size_t len, void *buf, uint64_t data, uint64_t tag,
			fi_addr_t src)
{
	struct owner *o = owner_of_cq(cq);

	(void)buf;
	(void)data;
	if (o->nent == NENT)
		return -FI_EAGAIN;
	o->ent[o->nent++] = (struct cqe){ ctx, flags, len, tag, src, 0 };
	return 0;
}

static ssize_t cq_writeerr(struct fipeer_cq *cq,
			   const struct fi_cq_err_entry *e)
{
	struct owner *o = owner_of_cq(cq);

	if (o->nent == NENT)
		return -FI_EAGAIN;
	o->ent[o->nent++] =
		(struct cqe){ e->op_context, e->flags,	       e->len,
			      e->tag,	     FI_ADDR_NOTAVAIL, e->err };
	return 0;
}

static struct fipeer_rx_entry *entry_new(struct owner *o)
{
	for (int i = 0; i < NENT; i++)
		if (!o->rx_used[i]) {
			o->rx_used[i] = true;
			memset(&o->rx[i], 0, sizeof(o->rx[i]));
			o->rx[i].srx = &o->srx;
			o->rx[i].iov = &o->iov[i];
			return &o->rx[i];
		}
	return NULL;
}

/* Fill an entry from the posted receive (it is then consumed). */
static void entry_fill(struct owner *o, struct fipeer_rx_entry *e, bool tagged)
{
	e->iov->iov_base = o->buf;
	e->iov->iov_len = o->len;
	e->count = 1;
	e->desc = &o->desc[e - o->rx];
	*e->desc = NULL;
	e->context = o->ctx;
	/* FI_COMPLETION: the peer writes a completion only when asked */
	e->flags = FI_RECV | FI_COMPLETION | (tagged ? FI_TAGGED : FI_MSG);
	e->tag = tagged ? o->tag : 0;
	o->posted = false;
}

static int get_any(struct fipeer_srx *srx, struct fipeer_match_attr *a,
		   struct fipeer_rx_entry **out, bool tagged)
{
	struct owner *o = owner_of_srx(srx);
	struct fipeer_rx_entry *e = entry_new(o);

	if (!e)
		return -FI_ENOMEM;
	e->addr = a->addr;
	e->msg_size = a->msg_size;
	e->tag = tagged ? a->tag : 0;
	*out = e;
	if (o->posted && o->posted_tagged == tagged &&
	    (!tagged || o->tag == a->tag)) {
		entry_fill(o, e, tagged);
		return 0;
	}
	return -FI_ENOENT;
}

static int get_msg(struct fipeer_srx *srx, struct fipeer_match_attr *a,
		   struct fipeer_rx_entry **out)
{
	return get_any(srx, a, out, false);
}

static int get_tag(struct fipeer_srx *srx, struct fipeer_match_attr *a,
		   struct fipeer_rx_entry **out)
{
	return get_any(srx, a, out, true);
}

static int queue_any(struct fipeer_rx_entry *e)
{
	struct owner *o = owner_of_srx(e->srx);

	if (o->nunexp == NENT)
		return -FI_ENOMEM;
	o->unexp[o->nunexp++] = e;
	return 0;
}

static void foreach_unspec(struct fipeer_srx *srx,
			   fi_addr_t (*get_addr)(struct fipeer_rx_entry *))
{
	struct owner *o = owner_of_srx(srx);

	for (int i = 0; i < o->nunexp; i++)
		if (o->unexp[i]->addr == FI_ADDR_NOTAVAIL)
			o->unexp[i]->addr = get_addr(o->unexp[i]);
}

static void free_entry(struct fipeer_rx_entry *e)
{
	struct owner *o = owner_of_srx(e->srx);

	o->rx_used[e - o->rx] = false;
	o->freed++;
}

static void owner_init(struct owner *o)
{
	memset(o, 0, sizeof(*o));
	o->cq_ops = (struct fipeer_cq_owner_ops){ sizeof(o->cq_ops), cq_write,
						  cq_writeerr };
	o->cq.fid.fclass = FI_CLASS_PEER_CQ;
	o->cq.owner_ops = &o->cq_ops;
	o->srx_ops = (struct fipeer_srx_owner_ops){
		sizeof(o->srx_ops), get_msg,	    get_tag,	queue_any,
		queue_any,	    foreach_unspec, free_entry,
	};
	o->srx.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	o->srx.owner_ops = &o->srx_ops;
}

static uint8_t pat(uint64_t seed, size_t i)
{
	return (uint8_t)((seed * 131u + i * 7u + (i >> 9)) & 0xff);
}

/* Progress until n completions or 10 s. */
static bool wait_cq(struct cxlfi_net *n, struct owner *o, int want)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (o->nent < want) {
		cxlfi_net_progress(n);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return false;
	}
	return true;
}

static bool wait_unexp(struct cxlfi_net *n, struct owner *o, int want)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (o->nunexp < want) {
		cxlfi_net_progress(n);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return false;
	}
	return true;
}

static int open_link(struct owner *o, struct cxlfi_net **n)
{
	struct cxlfi_net_owner own = { &o->cq, &o->cq, &o->srx, false };
	char why[512];
	int rc;

	owner_init(o);
	rc = cxlfi_net_open("tcp;ofi_rxm", &own, n, why, sizeof(why));
	if (rc)
		fprintf(stderr, "cxlfi_net_open: %s\n", why);
	return rc;
}

static void xfer(int fd, void *p, size_t n, bool out)
{
	ssize_t r = out ? write(fd, p, n) : read(fd, p, n);

	REQUIRE(r == (ssize_t)n);
}

#define PEER_ID 77 /* the id each side gives the other at insert */

/* A send, retried while the provider asks for progress first (its
 * connection to the peer is being set up). */
#define SEND(n, call)                                                        \
	({                                                                   \
		ssize_t rc_;                                                 \
		for (int try_ = 0;                                           \
		     (rc_ = (call)) == -FI_EAGAIN && try_ < 1000000; try_++) \
			cxlfi_net_progress(n);                               \
		if (rc_)                                                     \
			fprintf(stderr, "%s: %zd (%s)\n", #call, rc_,        \
				fi_strerror((int)-rc_));                     \
		rc_;                                                         \
	})

static int sender(int to, int from)
{
	static uint8_t big[BIG], small[SMALL];
	struct owner o;
	struct cxlfi_net *n;
	uint8_t name[CXLFI_NET_ADDR_MAX], go;
	size_t namelen;
	fi_addr_t peer;
	unsigned seen = 0;

	REQUIRE(open_link(&o, &n) == 0);
	/* the owner serialises and progresses the link: no locks or
	 * threads of the provider's own (rxm picks FI_THREAD_SAFE, a mutex
	 * per progress call and send, unless asked for manual progress) */
	CHECK(n->info->domain_attr->threading == FI_THREAD_DOMAIN);
	CHECK(n->info->domain_attr->data_progress == FI_PROGRESS_MANUAL);
	CHECK(n->info->domain_attr->control_progress == FI_PROGRESS_MANUAL);
	xfer(to, &n->namelen, sizeof(n->namelen), true);
	xfer(to, n->name, n->namelen, true);
	xfer(from, &namelen, sizeof(namelen), false);
	REQUIRE(namelen <= sizeof(name));
	xfer(from, name, namelen, false);
	CHECK(cxlfi_net_insert(n, name, namelen, PEER_ID, &peer) == 0);
	for (size_t i = 0; i < SMALL; i++)
		small[i] = pat(1, i);
	for (size_t i = 0; i < BIG; i++)
		big[i] = pat(2, i);
	/* 1: expected (the receiver posted before saying go) */
	xfer(from, &go, 1, false);
	CHECK(SEND(n, fi_tsend(n->ep, small, SMALL, NULL, peer, 7,
			       (void *)1)) == 0);
	/* 2: unexpected, tagged small and big, untagged small */
	CHECK(SEND(n, fi_tsend(n->ep, small, SMALL, NULL, peer, 9,
			       (void *)2)) == 0);
	CHECK(SEND(n, fi_tsend(n->ep, big, BIG, NULL, peer, 10, (void *)3)) ==
	      0);
	CHECK(SEND(n, fi_send(n->ep, small, SMALL, NULL, peer, (void *)4)) ==
	      0);
	CHECK(wait_cq(n, &o, 4));
	for (int i = 0; i < o.nent; i++) {
		uintptr_t c = (uintptr_t)o.ent[i].ctx;

		CHECK(o.ent[i].err == 0);
		CHECK(o.ent[i].flags & FI_SEND);
		CHECK(c >= 1 && c <= 4);
		seen |= 1u << (c & 15);
	}
	CHECK(seen == 0x1e);
	/* stay until the receiver has everything (the big one's rendezvous
	 * reads from us) */
	xfer(from, &go, 1, false);
	cxlfi_net_close(n);
	return t_report("test_fi_netlink sender");
}

static void check_data(const uint8_t *b, size_t len, uint64_t seed,
		       const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(seed, i)) {
			fprintf(stderr, "%s: byte %zu is %u, want %u\n", what,
				i, b[i], pat(seed, i));
			CHECK(0);
			return;
		}
	CHECK(1);
}

/* Post for the queued unexpected entry i and hand it back to the peer. */
static void start_unexp(struct cxlfi_net *n, struct owner *o, int i, void *buf,
			size_t len, void *ctx)
{
	struct fipeer_rx_entry *e = o->unexp[i];
	bool tagged = e->flags & FI_TAGGED || e->tag;

	(void)n;
	o->buf = buf;
	o->len = len;
	o->ctx = ctx;
	o->tag = e->tag;
	entry_fill(o, e, tagged);
	CHECK((tagged ? o->srx.peer_ops->start_tag(e)
		      : o->srx.peer_ops->start_msg(e)) == 0);
}

static int receiver(int to, int from)
{
	static uint8_t big[BIG], small[3][SMALL];
	struct owner o;
	struct cxlfi_net *n;
	uint8_t name[CXLFI_NET_ADDR_MAX], go = 1;
	size_t namelen;
	fi_addr_t peer;
	unsigned seen = 0;

	REQUIRE(open_link(&o, &n) == 0);
	xfer(from, &namelen, sizeof(namelen), false);
	REQUIRE(namelen <= sizeof(name));
	xfer(from, name, namelen, false);
	xfer(to, &n->namelen, sizeof(n->namelen), true);
	xfer(to, n->name, n->namelen, true);
	CHECK(cxlfi_net_insert(n, name, namelen, PEER_ID, &peer) == 0);

	/* 1: expected */
	o.posted = o.posted_tagged = true;
	o.buf = small[0];
	o.len = SMALL;
	o.tag = 7;
	o.ctx = (void *)11;
	xfer(to, &go, 1, true);
	CHECK(wait_cq(n, &o, 1));
	CHECK(o.ent[0].err == 0 && o.ent[0].ctx == (void *)11);
	CHECK(o.ent[0].len == SMALL && o.ent[0].tag == 7);
	CHECK(o.ent[0].flags & FI_RECV && o.ent[0].flags & FI_TAGGED);
	CHECK(o.ent[0].src == PEER_ID);
	check_data(small[0], SMALL, 1, "expected");

	/* 2: three unexpected, queued with us in order */
	CHECK(wait_unexp(n, &o, 3));
	CHECK(o.nunexp == 3);
	if (o.nunexp == 3) {
		CHECK(o.unexp[0]->tag == 9 && o.unexp[0]->msg_size == SMALL);
		CHECK(o.unexp[1]->tag == 10);
		CHECK(o.unexp[2]->tag == 0 && o.unexp[2]->msg_size == SMALL);
		for (int i = 0; i < 3; i++)
			CHECK(o.unexp[i]->addr == PEER_ID);
		start_unexp(n, &o, 0, small[1], SMALL, (void *)12);
		start_unexp(n, &o, 1, big, BIG, (void *)13);
		start_unexp(n, &o, 2, small[2], SMALL, (void *)14);
		CHECK(wait_cq(n, &o, 4));
		/* the large one may complete after the untagged one */
		for (int i = 1; i < o.nent; i++) {
			uintptr_t c = (uintptr_t)o.ent[i].ctx;

			CHECK(o.ent[i].err == 0);
			CHECK(o.ent[i].src == PEER_ID);
			CHECK(c >= 12 && c <= 14);
			seen |= 1u << (c & 15);
			if (c == 13)
				CHECK(o.ent[i].len == BIG &&
				      o.ent[i].tag == 10);
			if (c == 14)
				CHECK(o.ent[i].flags & FI_MSG &&
				      o.ent[i].len == SMALL);
		}
		CHECK(seen == (1u << 12 | 1u << 13 | 1u << 14));
		check_data(small[1], SMALL, 1, "unexpected tagged");
		check_data(big, BIG, 2, "unexpected 256 KiB");
		check_data(small[2], SMALL, 1, "unexpected untagged");
	}
	/* every entry we handed out came back */
	for (int i = 0; i < 50 && o.freed < 4; i++)
		cxlfi_net_progress(n);
	CHECK(o.freed == 4);
	xfer(to, &go, 1, true);
	cxlfi_net_close(n);
	return t_report("test_fi_netlink receiver");
}

static int child(int i, int to, int from, void *arg)
{
	(void)arg;
	return i ? receiver(to, from) : sender(to, from);
}

int main(int argc, char **argv)
{
	t_net_on_loopback();
	if (argc > 1 && !strcmp(argv[1], "--expect-old")) {
		struct owner o;
		struct cxlfi_net_owner own = { &o.cq, &o.cq, &o.srx, false };
		struct cxlfi_net *n;
		char why[512] = "";

		owner_init(&o);
		CHECK(!cxlfi_net_version_ok(NULL));
		CHECK(cxlfi_net_open("tcp;ofi_rxm", &own, &n, why,
				     sizeof(why)) == -FI_ENOSYS);
		CHECK(strstr(why, "libfabric 2.3 or later") != NULL);
		printf("refused: %s\n", why);
		return t_report("test_fi_netlink --expect-old");
	}
	if (!cxlfi_net_version_ok(NULL)) {
		fprintf(stderr, "test_fi_netlink: the libfabric loaded is "
				"older than 2.3; run with LD_LIBRARY_PATH "
				"naming a newer one (the MPICH wheel's)\n");
		return 2;
	}
	return run_pair(child, NULL) ? 1 : 0;
}
