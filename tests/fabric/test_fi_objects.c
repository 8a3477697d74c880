/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider's objects besides data transfer, as libfabric applications
 * other than the MPI libraries use them (fabtests opens every one):
 *  1. fi_getinfo: a source address always; a service gives a destination
 *     address (no FI_SOURCE) or a named source (FI_SOURCE); a node that
 *     does not resolve is refused; transmit and receive capabilities are
 *     split; unsupported orders and automatic data progress are refused;
 *     FI_MULTI_RECV in the receive op flags is kept;
 *  2. event queues: write/read in order, FI_PEEK, a full queue, error
 *     entries before events, fi_eq_sread timing out and woken by a write
 *     from another thread;
 *  3. service addresses: an endpoint opened from the FI_SOURCE info of
 *     service S answers to the destination address of S (fi_av_insert and
 *     fi_av_insertsvc), a second claim of S is refused while the first
 *     lives, and S is free again once it closes; an unknown service does
 *     not resolve;
 *  4. an AV with FI_EVENT reports an insert's count, and each bad address
 *     as an error entry, to its event queue;
 *  5. a poll set reports a CQ once a completion is queued, and a counter
 *     once it changes; fi_cq_signal ends a blocked fi_cq_sread;
 *  6. a counter bound to a memory region counts remote writes to it;
 *  7. a CQ wait that lasts reports the receive that nothing matched and
 *     the message that nothing received (FI_CXL_HANG_REPORT_MS).
 * One process, coherent or emulated pool.
 *
 *   test_fi_objects --mode coherent|emulated
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitest.h"

static struct tpool tp;

static struct fi_info *hints_new(void)
{
	struct fi_info *h = fi_allocinfo();

	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED;
	h->fabric_attr->prov_name = strdup("cxl");
	return h;
}

static void getinfo_fields(void)
{
	struct fi_info *h = hints_new(), *fi = NULL;

	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi));
	CHECK(fi->src_addr && fi->src_addrlen > 0 && !fi->dest_addr);
	CHECK(!(fi->tx_attr->caps & (FI_RECV | FI_DIRECTED_RECV)));
	CHECK(!(fi->rx_attr->caps & FI_SEND));
	fi_freeinfo(fi);
	TRY(fi_getinfo(FI_VERSION(1, 17), "localhost", "4711", 0, h, &fi));
	CHECK(fi->src_addr && fi->dest_addr && fi->dest_addrlen > 0);
	fi_freeinfo(fi);
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, "4711", FI_SOURCE, h, &fi));
	CHECK(fi->src_addr && !fi->dest_addr);
	fi_freeinfo(fi);
	CHECK(fi_getinfo(FI_VERSION(1, 17), "no-such-host.invalid", NULL, 0, h,
			 &fi) == -FI_ENODATA);
	h->tx_attr->msg_order = FI_ORDER_DATA;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi) ==
	      -FI_ENODATA);
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi) ==
	      -FI_ENODATA);
	h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	h->caps |= FI_MULTI_RECV;
	h->rx_attr->op_flags = FI_MULTI_RECV;
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi));
	CHECK(fi->rx_attr->op_flags & FI_MULTI_RECV);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static struct fid_eq *sread_eq;

static void *late_writer(void *arg)
{
	struct fi_eq_entry ev = { .data = 77 };

	(void)arg;
	usleep(100 * 1000);
	CHECK(fi_eq_write(sread_eq, FI_NOTIFY, &ev, sizeof(ev), 0) ==
	      sizeof(ev));
	return NULL;
}

static void event_queue(struct fid_fabric *fabric)
{
	struct fi_eq_attr attr = { .size = 4, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_entry ev = { 0 }, got;
	struct fi_eq_err_entry ee = { .err = FI_EIO, .data = 9 }, gerr;
	struct fid_eq *eq;
	uint32_t event;
	pthread_t th;
	uint64_t t0;

	TRY(fi_eq_open(fabric, &attr, &eq, NULL));
	for (int i = 0; i < 4; i++) {
		ev.data = (uint64_t)i;
		CHECK(fi_eq_write(eq, FI_NOTIFY, &ev, sizeof(ev), 0) ==
		      sizeof(ev));
	}
	/* full at its size */
	CHECK(fi_eq_write(eq, FI_NOTIFY, &ev, sizeof(ev), 0) == -FI_EAGAIN);
	CHECK(fi_eq_read(eq, &event, &got, sizeof(got), FI_PEEK) ==
	      sizeof(got));
	CHECK(event == FI_NOTIFY && got.data == 0);
	for (int i = 0; i < 4; i++) {
		CHECK(fi_eq_read(eq, &event, &got, sizeof(got), 0) ==
		      sizeof(got));
		CHECK(got.data == (uint64_t)i);
	}
	CHECK(fi_eq_read(eq, &event, &got, sizeof(got), 0) == -FI_EAGAIN);
	CHECK(fi_eq_readerr(eq, &gerr, 0) == -FI_EAGAIN);
	/* an error entry (the utility EQs' flag) is read first */
	CHECK(fi_eq_write(eq, FI_NOTIFY, &ev, sizeof(ev), 0) == sizeof(ev));
	CHECK(fi_eq_write(eq, FI_NOTIFY, &ee, sizeof(ee), 1ull << 60) ==
	      sizeof(ee));
	CHECK(fi_eq_read(eq, &event, &got, sizeof(got), 0) == -FI_EAVAIL);
	CHECK(fi_eq_readerr(eq, &gerr, 0) == sizeof(gerr));
	CHECK(gerr.err == FI_EIO && gerr.data == 9);
	CHECK(fi_eq_read(eq, &event, &got, sizeof(got), 0) == sizeof(got));
	/* sread: times out, then is woken by a write from another thread */
	t0 = cxl_now_ns();
	CHECK(fi_eq_sread(eq, &event, &got, sizeof(got), 50, 0) == -FI_EAGAIN);
	CHECK(cxl_now_ns() - t0 >= 40000000ull);
	sread_eq = eq;
	REQUIRE(pthread_create(&th, NULL, late_writer, NULL) == 0);
	t0 = cxl_now_ns();
	CHECK(fi_eq_sread(eq, &event, &got, sizeof(got), 10000, 0) ==
	      sizeof(got));
	CHECK(got.data == 77 && cxl_now_ns() - t0 < 5000000000ull);
	pthread_join(th, NULL);
	TRY(fi_close(&eq->fid));
}

struct ep_set {
	struct fi_info *info;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static int open_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct ep_set *s);
static void close_ep(struct ep_set *s);

/*
 * A direction takes one CQ: binding a second one fails and takes no
 * reference, so the second CQ closes at once and the first stays busy
 * while the endpoint lives.
 */
static void cq_rebind(struct fid_fabric *fabric)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_info *h = hints_new(), *info;
	struct fid_cq *other;
	struct ep_set s;

	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	fi_freeinfo(h);
	TRY(open_ep(fabric, info, &s));
	TRY(fi_cq_open(s.dom, &cqa, &other, NULL));
	CHECK(fi_ep_bind(s.ep, &other->fid, FI_TRANSMIT) == -FI_EINVAL);
	CHECK(fi_ep_bind(s.ep, &other->fid, FI_RECV) == -FI_EINVAL);
	CHECK(fi_close(&other->fid) == 0);
	CHECK(fi_close(&s.cq->fid) == -FI_EBUSY);
	/* the domain counts the endpoint, its CQ and its AV: busy */
	CHECK(fi_close(&s.dom->fid) == -FI_EBUSY);
	close_ep(&s);
}

static int open_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct ep_set *s)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };

	s->info = info;
	TRY(fi_domain(fabric, info, &s->dom, NULL));
	TRY(fi_av_open(s->dom, &ava, &s->av, NULL));
	TRY(fi_cq_open(s->dom, &cqa, &s->cq, NULL));
	TRY(fi_endpoint(s->dom, info, &s->ep, NULL));
	TRY(fi_ep_bind(s->ep, &s->av->fid, 0));
	TRY(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	return fi_enable(s->ep);
}

static void close_ep(struct ep_set *s)
{
	TRY(fi_close(&s->ep->fid));
	TRY(fi_close(&s->cq->fid));
	TRY(fi_close(&s->av->fid));
	TRY(fi_close(&s->dom->fid));
	fi_freeinfo(s->info);
}

/* One message from a to the fi_addr of b in a's AV. */
static void one_message(struct ep_set *a, struct ep_set *b, fi_addr_t to)
{
	struct fi_cq_tagged_entry e;
	char sb[16] = "named endpoint", rb[16] = { 0 };
	int got = 0;

	TRY(fi_trecv(b->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, 3, 0, rb));
	TRY(fi_tsend(a->ep, sb, sizeof(sb), NULL, to, 3, sb));
	for (int i = 0; i < 2000000 && got < 2; i++) {
		if (fi_cq_read(a->cq, &e, 1) == 1)
			got++;
		if (fi_cq_read(b->cq, &e, 1) == 1)
			got++;
	}
	CHECK(got == 2 && !memcmp(sb, rb, sizeof(sb)));
}

static void service_addresses(struct fid_fabric *fabric)
{
	struct fi_info *h = hints_new(), *srv, *srv2, *cli, *dst;
	struct ep_set s, s2, c;
	fi_addr_t fa, fb;

	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, "9228", FI_SOURCE, h, &srv));
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, "9228", FI_SOURCE, h, &srv2));
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &cli));
	TRY(fi_getinfo(FI_VERSION(1, 17), "localhost", "9228", 0, h, &dst));
	TRY(open_ep(fabric, srv, &s));
	/* the service is taken */
	CHECK(open_ep(fabric, srv2, &s2) == -FI_EADDRINUSE);
	close_ep(&s2);
	TRY(open_ep(fabric, cli, &c));
	CHECK(fi_av_insert(c.av, dst->dest_addr, 1, &fa, 0, NULL) == 1);
	one_message(&c, &s, fa);
	CHECK(fi_av_insertsvc(c.av, "localhost", "9228", &fb, 0, NULL) == 1);
	one_message(&c, &s, fb);
	/* a server that publishes its service 300 ms after the client's
	 * insert (a loaded machine, a client started right after it): the
	 * insert waits for it (CXLFI_RESOLVE_WAIT_MS) */
	{
		struct fi_info *late;
		pid_t pid;
		int st;

		TRY(fi_getinfo(FI_VERSION(1, 17), NULL, "9229", FI_SOURCE, h,
			       &late));
		fflush(NULL);
		pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0) {
			struct fid_fabric *f2;
			struct ep_set l;

			usleep(300 * 1000);
			if (fi_fabric(late->fabric_attr, &f2, NULL) ||
			    open_ep(f2, late, &l))
				_exit(1);
			usleep(1500 * 1000); /* served meanwhile */
			close_ep(&l);
			fi_close(&f2->fid);
			_exit(0);
		}
		CHECK(fi_av_insertsvc(c.av, "localhost", "9229", &fb, 0,
				      NULL) == 1);
		CHECK(fb != FI_ADDR_NOTAVAIL);
		/* the child lives about 2 s: one that hangs fails the test
		 * here instead of keeping it until ctest's timeout */
		for (int i = 0; waitpid(pid, &st, WNOHANG) == 0; i++) {
			if (i == 300) {
				fprintf(stderr, "test_fi_objects: the child "
						"serving 9229 did not exit in "
						"30 s; killed\n");
				kill(pid, SIGKILL);
				REQUIRE(waitpid(pid, &st, 0) == pid);
				break;
			}
			usleep(100 * 1000);
		}
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		fi_freeinfo(late);
	}
	/* a service nobody serves does not resolve */
	CHECK(fi_av_insertsvc(c.av, NULL, "1", &fb, 0, NULL) == 0);
	CHECK(fb == FI_ADDR_NOTAVAIL);
	/* the local address names no endpoint */
	CHECK(fi_av_insert(c.av, cli->src_addr, 1, &fb, 0, NULL) == 0);
	close_ep(&s);
	/* free again */
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, "9228", FI_SOURCE, h, &srv2));
	TRY(open_ep(fabric, srv2, &s2));
	close_ep(&s2);
	close_ep(&c);
	fi_freeinfo(dst);
	fi_freeinfo(h);
}

static void av_events(struct fid_fabric *fabric, struct fid_domain *dom,
		      const void *good)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr ava = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct fid_eq *eq;
	struct fid_av *av;
	struct fi_eq_entry ev;
	struct fi_eq_err_entry ee;
	uint8_t addrs[2][40];
	fi_addr_t fa[2];
	uint32_t event;
	int ctx;

	memcpy(addrs[0], good, 40);
	memcpy(addrs[1], good, 40);
	addrs[1][0] ^= 0xff; /* not a cxl address */
	TRY(fi_eq_open(fabric, &eqa, &eq, NULL));
	TRY(fi_av_open(dom, &ava, &av, NULL));
	/* not bound yet */
	CHECK(fi_av_insert(av, addrs, 2, fa, 0, &ctx) == -FI_ENOEQ);
	TRY(fi_av_bind(av, &eq->fid, 0));
	CHECK(fi_av_insert(av, addrs, 2, fa, 0, &ctx) == 0);
	CHECK(fi_eq_sread(eq, &event, &ev, sizeof(ev), 1000, 0) == -FI_EAVAIL);
	CHECK(fi_eq_readerr(eq, &ee, 0) == sizeof(ee));
	CHECK(ee.fid == &av->fid && ee.context == &ctx && ee.data == 1 &&
	      ee.err == FI_EADDRNOTAVAIL);
	CHECK(fi_eq_sread(eq, &event, &ev, sizeof(ev), 1000, 0) == sizeof(ev));
	CHECK(event == FI_AV_COMPLETE && ev.fid == &av->fid &&
	      ev.context == &ctx && ev.data == 1);
	CHECK(fa[0] != FI_ADDR_NOTAVAIL && fa[1] == FI_ADDR_NOTAVAIL);
	/* the EQ is held while the AV is bound to it */
	CHECK(fi_close(&eq->fid) == -FI_EBUSY);
	TRY(fi_close(&av->fid));
	TRY(fi_close(&eq->fid));
}

static struct fid_cq *signal_cq;

static void *signaller(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	CHECK(fi_cq_signal(signal_cq) == 0);
	return NULL;
}

static void poll_and_signal(struct fid_fabric *fabric)
{
	struct fi_info *h = hints_new(), *info;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_poll_attr pa = { 0 };
	struct fi_cq_tagged_entry e;
	struct fid_poll *ps;
	struct fid_cntr *cntr;
	struct ep_set a;
	fi_addr_t self;
	char name[64], buf[8] = "x";
	size_t len = sizeof(name);
	void *ctx[4];
	pthread_t th;
	uint64_t t0;

	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	fi_freeinfo(h);
	{
		struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
		struct fi_av_attr ava = { .type = FI_AV_TABLE };

		a.info = info;
		TRY(fi_domain(fabric, info, &a.dom, NULL));
		TRY(fi_av_open(a.dom, &ava, &a.av, NULL));
		TRY(fi_cq_open(a.dom, &cqa, &a.cq, &a));
		TRY(fi_cntr_open(a.dom, &ca, &cntr, &cntr));
		TRY(fi_endpoint(a.dom, info, &a.ep, NULL));
		TRY(fi_ep_bind(a.ep, &a.av->fid, 0));
		TRY(fi_ep_bind(a.ep, &a.cq->fid, FI_TRANSMIT | FI_RECV));
		TRY(fi_ep_bind(a.ep, &cntr->fid, FI_RECV));
		TRY(fi_enable(a.ep));
	}
	TRY(fi_poll_open(a.dom, &pa, &ps));
	TRY(fi_poll_add(ps, &a.cq->fid, 0));
	TRY(fi_poll_add(ps, &cntr->fid, 0));
	CHECK(fi_poll_add(ps, &a.cq->fid, 0) == -FI_EALREADY);
	CHECK(fi_poll(ps, ctx, 4) == 0);
	/* a CQ in a poll set cannot be closed */
	CHECK(fi_close(&a.cq->fid) == -FI_EBUSY);
	TRY(fi_getname(&a.ep->fid, name, &len));
	CHECK(fi_av_insert(a.av, name, 1, &self, 0, NULL) == 1);
	TRY(fi_recv(a.ep, buf, sizeof(buf), NULL, self, buf));
	TRY(fi_send(a.ep, "y", 1, NULL, self, name));
	{
		int n = 0, cq_seen = 0, cntr_seen = 0;

		for (int i = 0; i < 100000 && !(cq_seen && cntr_seen); i++) {
			n = fi_poll(ps, ctx, 4);
			for (int k = 0; k < n; k++) {
				cq_seen |= ctx[k] == &a;
				cntr_seen |= ctx[k] == &cntr;
			}
		}
		CHECK(cq_seen && cntr_seen);
		/* the counter reported once; the CQ while it holds entries */
		n = fi_poll(ps, ctx, 4);
		CHECK(n == 1 && ctx[0] == &a);
	}
	while (fi_cq_read(a.cq, &e, 1) == 1)
		;
	CHECK(fi_poll(ps, ctx, 4) == 0);
	TRY(fi_poll_del(ps, &a.cq->fid, 0));
	TRY(fi_poll_del(ps, &cntr->fid, 0));
	CHECK(fi_poll_del(ps, &cntr->fid, 0) == -FI_ENOENT);
	TRY(fi_close(&ps->fid));
	/* fi_cq_signal wakes a blocked sread */
	signal_cq = a.cq;
	REQUIRE(pthread_create(&th, NULL, signaller, NULL) == 0);
	t0 = cxl_now_ns();
	CHECK(fi_cq_sread(a.cq, &e, 1, NULL, 5000) == -FI_EAGAIN);
	CHECK(cxl_now_ns() - t0 < 2000000000ull);
	pthread_join(th, NULL);
	TRY(fi_close(&a.ep->fid));
	TRY(fi_close(&cntr->fid));
	TRY(fi_close(&a.cq->fid));
	TRY(fi_close(&a.av->fid));
	/* a good address for av_events: this (closed) endpoint's */
	av_events(fabric, a.dom, name);
	TRY(fi_close(&a.dom->fid));
	fi_freeinfo(info);
}

/* A counter bound to a memory region counts the remote writes to it, and
 * reading it progresses the domain's endpoints (fabtests' fi_multi_mr). */
static void mr_counter(struct fid_fabric *fabric)
{
	struct fi_info *h = hints_new(), *ia, *ib;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_cq_tagged_entry e;
	struct ep_set a, b;
	struct fid_mr *mr;
	struct fid_cntr *mc;
	fi_addr_t to_a;
	char name[64], region[64] = { 0 }, src[8] = "counted";
	size_t len = sizeof(name);
	int done = 0;

	h->caps |= FI_RMA;
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &ia));
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &ib));
	fi_freeinfo(h);
	/* no requirement: offsets and the keys the application chooses */
	CHECK(ia->domain_attr->mr_mode == 0);
	TRY(open_ep(fabric, ia, &a));
	TRY(open_ep(fabric, ib, &b));
	TRY(fi_mr_reg(a.dom, region, sizeof(region), FI_REMOTE_WRITE, 0, 7, 0,
		      &mr, NULL));
	TRY(fi_cntr_open(a.dom, &ca, &mc, NULL));
	CHECK(fi_mr_bind(mr, &mc->fid, FI_SEND) == -FI_EINVAL);
	TRY(fi_mr_bind(mr, &mc->fid, FI_REMOTE_WRITE));
	TRY(fi_getname(&a.ep->fid, name, &len));
	CHECK(fi_av_insert(b.av, name, 1, &to_a, 0, NULL) == 1);
	TRY(fi_write(b.ep, src, sizeof(src), NULL, to_a, 16, 7, NULL));
	/* a progresses only through its counter here */
	for (int i = 0; i < 2000000; i++) {
		bool counted = fi_cntr_read(mc) == 1;

		if (fi_cq_read(b.cq, &e, 1) == 1)
			done++;
		if (done && counted)
			break;
	}
	CHECK(done == 1 && fi_cntr_read(mc) == 1);
	CHECK(!memcmp(region + 16, src, sizeof(src)));
	/* the counter is held by the region */
	CHECK(fi_close(&mc->fid) == -FI_EBUSY);
	TRY(fi_close(&mr->fid));
	TRY(fi_close(&mc->fid));
	close_ep(&b);
	close_ep(&a);
}

/* A wait with a receive nothing matches and a message nothing receives
 * reports both (FI_CXL_HANG_REPORT_MS=200, FI_CXL_STATS=1: to stderr). */
static void hang_report(struct fid_fabric *fabric)
{
	struct fi_info *h = hints_new(), *info;
	struct fi_cq_tagged_entry e;
	struct ep_set a;
	fi_addr_t self;
	char name[64], rb[8], path[] = "/tmp/fiobj-hang-XXXXXX", text[8192];
	size_t len = sizeof(name);
	int fd, saved;
	ssize_t n;
	uint64_t t0;

	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	fi_freeinfo(h);
	TRY(open_ep(fabric, info, &a));
	TRY(fi_getname(&a.ep->fid, name, &len));
	CHECK(fi_av_insert(a.av, name, 1, &self, 0, NULL) == 1);
	TRY(fi_trecv(a.ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, 0xabc, 0, rb));
	TRY(fi_tsend(a.ep, "lost", 4, NULL, self, 0xdef, NULL));
	REQUIRE((fd = mkstemp(path)) >= 0);
	fflush(stderr);
	saved = dup(2);
	REQUIRE(dup2(fd, 2) == 2);
	t0 = cxl_now_ns();
	while (cxl_now_ns() - t0 < 1500000000ull)
		if (fi_cq_read(a.cq, &e, 1) == 1)
			CHECK(e.flags & FI_SEND); /* only the send completes */
	fflush(stderr);
	REQUIRE(dup2(saved, 2) == 2);
	close(saved);
	REQUIRE(lseek(fd, 0, SEEK_SET) == 0);
	n = read(fd, text, sizeof(text) - 1);
	REQUIRE(n >= 0);
	text[n] = '\0';
	close(fd);
	unlink(path);
	CHECK(strstr(text, "no completion for") != NULL);
	CHECK(strstr(text, "1 tagged receive(s) posted, unmatched") != NULL);
	CHECK(strstr(text, "tag 0xabc") != NULL);
	CHECK(strstr(text, "1 unexpected message(s)") != NULL);
	CHECK(strstr(text, "tag 0xdef") != NULL);
	if (t_failed)
		fprintf(stderr, "hang report was:\n%s", text);
	close_ep(&a);
}

static void phase(const char *what)
{
	fprintf(stderr, "test_fi_objects: %s\n", what);
}

int main(int argc, char **argv)
{
	enum cxl_coh_mode mode = targ_mode(argc, argv);
	struct fi_info *h, *fi;
	struct fid_fabric *fabric;

	tpool_init(&tp, "fiobj");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_objects", 1);
	/* read once, at the provider's first fi_getinfo (hang_report) */
	setenv("FI_CXL_HANG_REPORT_MS", "200", 1);
	setenv("FI_CXL_STATS", "1", 1);
	getinfo_fields();
	h = hints_new();
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi));
	TRY(fi_fabric(fi->fabric_attr, &fabric, NULL));
	/* each part says when it starts: a run that hangs names its part */
	phase("event queue");
	event_queue(fabric);
	phase("service addresses");
	service_addresses(fabric);
	phase("poll sets and signals");
	poll_and_signal(fabric);
	phase("CQ rebinding");
	cq_rebind(fabric);
	phase("MR counter");
	mr_counter(fabric);
	phase("hang report");
	hang_report(fabric);
	TRY(fi_close(&fabric->fid));
	fi_freeinfo(fi);
	fi_freeinfo(h);
	tpool_cleanup(&tp);
	return t_report("test_fi_objects");
}
