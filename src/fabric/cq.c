/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues (CONTEXT, MSG, DATA and TAGGED formats), and the
 * lists of endpoints bound to a CQ or counter. Progress is manual:
 * reading a CQ progresses the endpoints bound to it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxlfi.h"

static bool sends_waiting(struct cxlfi_ep **eps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (eps[i]->txpend)
			return true;
	return false;
}

/* Operations the endpoints completed so far, reported or not (RMA and
 * atomics served as a target, answers sent): what progress achieved. */
static uint64_t eps_work(struct cxlfi_ep **eps, size_t n)
{
	uint64_t w = 0;

	for (size_t i = 0; i < n; i++)
		w += eps[i]->reported;
	return w;
}

void cxlfi_eps_progress(struct cxlfi_ep **eps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cxlfi_up.progress(eps[i]);
}

/* Something is on its way to this CQ: a posted tagged receive, a queued
 * send, a send waiting for its token, or an RMA read waiting for data.
 * (Buffers for FI_MULTI_RECV alone do not count: MPICH keeps them posted
 * all the time.) */
static bool expecting(struct cxlfi_ep **eps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (eps[i]->trecv || eps[i]->txpend || eps[i]->xa_waiting ||
		    eps[i]->reads)
			return true;
	return false;
}

/*
 * Read spin. MPICH's blocking wait calls sched_yield() after every
 * progress poll that completes nothing, and a sched_yield costs more than
 * a poll, so a message that arrives during the yield waits for it. An empty
 * read that follows another by less than CXLFI_WAIT_LOOP_GAP_NS is part of such
 * a loop; if it expects something, it keeps polling for up to
 * FI_CXL_READ_SPIN_NS before returning. A caller that tests now and then
 * between computations (MPI_Test) is not in a loop and never waits here. Only
 * the first CXLFI_SPIN_WINDOW_NS of a wait spin: the reads of a longer one poll
 * once each as before, so that it reaches FI_CXL_IDLE_POLLS, and sleeps, as
 * soon as before.
 *
 * Spinning pays only while the sender runs on another CPU. When ranks
 * share CPUs (more ranks than cores), the sender waits for this spin to
 * end, and every wait costs a whole spin more. So each wait that spun
 * and then completed outside a spin costs a credit, and each that a spin
 * ended earns CXLFI_SPIN_REWARD; without credit, only every
 * CXLFI_SPIN_PROBE-th wait spins, to find out whether it pays again.
 */
static void read_spin(struct cxlfi_cq *cq)
{
	struct cxlfi_spin *s = &cq->spin;
	uint64_t now = cxl_now_ns(), last = s->empty_ns, end;
	uint32_t polls, stride;

	s->empty_ns = now;
	if (!s->wait_ns) {
		s->wait_ns = now;
		s->probe = s->credit <= 0 && ++s->waits % CXLFI_SPIN_PROBE == 0;
	}
	if (now - last > CXLFI_WAIT_LOOP_GAP_NS ||
	    now - s->wait_ns > CXLFI_SPIN_WINDOW_NS ||
	    (s->credit <= 0 && !s->probe) || !expecting(cq->eps, cq->neps))
		return;
	cxlfi_stats.read_spins++;
	s->spun = true;
	end = now + cxlfi_params.read_spin_ns;
	/* A clock read costs more than a coherent-mode poll, and would set
	 * how soon a spin sees a message; so that mode reads it once per
	 * CXLFI_SPIN_CLOCK_STRIDE polls. A poll that invalidates costs far
	 * more than the clock, which is then read after each. */
	stride = cxl_pool_mode(cq->dom->pool) == CXL_COH_COHERENT
			 ? CXLFI_SPIN_CLOCK_STRIDE
			 : 1;
	polls = stride;
	do {
		cxlfi_eps_progress(cq->eps, cq->neps);
		if (--polls == 0) { /* a countdown: no division per poll */
			polls = stride;
			now = cxl_now_ns();
		}
	} while (!cq->count && !cq->err_head && now < end);
	if (polls != stride) /* the last poll did not read the clock */
		now = cxl_now_ns();
	if (cq->count || cq->err_head) {
		cxlfi_stats.spin_hits++;
		s->hit = true;
	}
	s->empty_ns = now;
}

/* A read returns a completion: the wait, if any, is over. */
static void wait_end(struct cxlfi_spin *s)
{
	if (s->spun) {
		s->credit =
			s->hit ? s->credit + CXLFI_SPIN_REWARD : s->credit - 1;
		if (s->credit > CXLFI_SPIN_CREDIT_MAX)
			s->credit = CXLFI_SPIN_CREDIT_MAX;
	}
	s->wait_ns = 0;
	s->spun = s->hit = s->probe = false;
}

int cxlfi_eps_add(struct cxlfi_ep ***eps, size_t *n, struct cxlfi_ep *ep)
{
	struct cxlfi_ep **v;

	for (size_t i = 0; i < *n; i++)
		if ((*eps)[i] == ep)
			return 0; /* bound for both directions: once */
	v = realloc(*eps, (*n + 1) * sizeof(*v));

	if (!v)
		return -FI_ENOMEM;
	v[(*n)++] = ep;
	*eps = v;
	return 0;
}

void cxlfi_eps_del(struct cxlfi_ep **eps, size_t *n, struct cxlfi_ep *ep)
{
	for (size_t i = 0; i < *n; i++)
		if (eps[i] == ep) {
			eps[i] = eps[--(*n)];
			return;
		}
}

/* ---- completion queue --------------------------------------------------- */

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

int cxlfi_cq_push(struct cxlfi_cq *cq, void *ctx, uint64_t flags, size_t len,
		  void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct cxlfi_cqe *e;

	if (cq->count == cq->cap) {
		/* grow rather than lose a completion */
		size_t cap = cq->cap * 2;
		struct cxlfi_cqe *r = malloc(cap * sizeof(*r));

		if (!r)
			return -FI_ENOMEM;
		for (size_t i = 0; i < cq->count; i++)
			r[i] = cq->ring[(cq->head + i) % cq->cap];
		free(cq->ring);
		cq->ring = r;
		cq->cap = cap;
		cq->head = 0;
	}
	e = &cq->ring[(cq->head + cq->count++) % cq->cap];
	e->e.op_context = ctx;
	e->e.flags = flags;
	e->e.len = len;
	e->e.buf = buf;
	e->e.data = data;
	e->e.tag = tag;
	e->src = src;
	return 0;
}

int cxlfi_cq_push_err(struct cxlfi_cq *cq, void *ctx, uint64_t flags,
		      size_t len, void *buf, uint64_t data, uint64_t tag,
		      size_t olen, int err)
{
	struct cxlfi_cqerr *e = calloc(1, sizeof(*e));

	if (!e)
		return -FI_ENOMEM;
	e->e.op_context = ctx;
	e->e.flags = flags;
	e->e.len = len;
	e->e.buf = buf;
	e->e.data = data;
	e->e.tag = tag;
	e->e.olen = olen;
	e->e.err = err;
	e->e.prov_errno = err;
	if (cq->err_tail)
		cq->err_tail->next = e;
	else
		cq->err_head = e;
	cq->err_tail = e;
	return 0;
}

int cxlfi_cq_attach_ep(struct cxlfi_cq *cq, struct cxlfi_ep *ep)
{
	return cxlfi_eps_add(&cq->eps, &cq->neps, ep);
}

void cxlfi_cq_detach_ep(struct cxlfi_cq *cq, struct cxlfi_ep *ep)
{
	cxlfi_eps_del(cq->eps, &cq->neps, ep);
}

/* One case per fi_cq(3) entry format, each copying the fields that format
 * has from the tagged entry kept (the formats are nested structs). */
static void copy_entry(struct cxlfi_cq *cq, void *dst,
		       const struct cxlfi_cqe *s)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT: {
		struct fi_cq_entry *d = dst;

		d->op_context = s->e.op_context;
		break;
	}
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *d = dst;

		d->op_context = s->e.op_context;
		d->flags = s->e.flags;
		d->len = s->e.len;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *d = dst;

		d->op_context = s->e.op_context;
		d->flags = s->e.flags;
		d->len = s->e.len;
		d->buf = s->e.buf;
		d->data = s->e.data;
		break;
	}
	default:
		memcpy(dst, &s->e, sizeof(s->e));
		break;
	}
}

/*
 * Dynamic polling (after MPI-over-CXL): MPI libraries spin on fi_cq_read.
 * After FI_CXL_IDLE_POLLS empty reads in a row the rank is idle, and each
 * further empty read sleeps 1 us, doubling up to FI_CXL_IDLE_SLEEP_US, so
 * an idle rank stops burning a core. Any completion resets it. The cost is
 * at most FI_CXL_IDLE_SLEEP_US of added latency for the first message
 * after an idle period; busy traffic never reaches the threshold.
 */
/* Next idle sleep in us (0: none); called with the domain lock held. */
static uint32_t idle_next(struct cxlfi_cq *cq)
{
	if (!cxlfi_params.idle_sleep_us ||
	    ++cq->empty_reads <= cxlfi_params.idle_polls)
		return 0;
	cq->idle_us = cq->idle_us ? cq->idle_us * 2 : 1;
	if (cq->idle_us > cxlfi_params.idle_sleep_us)
		cq->idle_us = (uint32_t)cxlfi_params.idle_sleep_us;
	return cq->idle_us;
}

/* Not idle (any more): the next sleep is FI_CXL_IDLE_POLLS reads away. */
static void idle_reset(struct cxlfi_cq *cq)
{
	cq->empty_reads = 0;
	cq->idle_us = 0;
}

/*
 * A wait that lasts: once FI_CXL_HANG_REPORT_MS have passed since the first
 * empty read of this wait, and then once per that period, each bound
 * endpoint with operations pending says what they are (diag.c). The clock
 * is read once per 1024 empty reads: free for a wait that ends soon.
 */
static void hang_watch(struct cxlfi_cq *cq)
{
	uint64_t now, period = cxlfi_params.hang_report_ms;

	if (!period || ++cq->hang_polls < 1024)
		return;
	cq->hang_polls = 0;
	now = cxlfi_watch_now_ms();
	if (!cq->wait_since_ms) {
		cq->wait_since_ms = now;
		cq->hang_said_ms = now;
		return;
	}
	if (now - cq->hang_said_ms < period)
		return;
	cq->hang_said_ms = now;
	for (size_t i = 0; i < cq->neps; i++)
		if (cxlfi_diag_busy(cq->eps[i]))
			cxlfi_diag_pending(cq->eps[i], now - cq->wait_since_ms);
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count,
			   fi_addr_t *src)
{
	struct cxlfi_cq *cq = (struct cxlfi_cq *)fcq;
	size_t n = 0, es = entry_size(cq->format);
	uint32_t sleep_us = 0;
	ssize_t rc;

	cxlfi_dom_lock(cq->dom);
	/* A poll of the pool costs invalidations and a fence: skip it when
	 * the entries already queued satisfy the whole read and no send is
	 * waiting for ring space. The next read that finds fewer entries
	 * progresses, so nothing waits for long. */
	if (cq->count < count || !count || sends_waiting(cq->eps, cq->neps)) {
		uint64_t work = eps_work(cq->eps, cq->neps);

		cxlfi_eps_progress(cq->eps, cq->neps);
		if (count && !cq->count && !cq->err_head &&
		    cxlfi_params.read_spin_ns)
			read_spin(cq);
		/* a target serving RMA and atomics is busy although its CQ
		 * gets no entry for them: it must not go to sleep (idle_next)
		 * while origins wait for it */
		if (eps_work(cq->eps, cq->neps) != work)
			idle_reset(cq);
	}
	for (size_t i = 0; i < cq->neps; i++)
		cxlfi_ep_settle(cq->eps[i]); /* before their completions */
	if (cq->err_head) {
		rc = -FI_EAVAIL;
		goto out;
	}
	for (; n < count && cq->count; n++) {
		const struct cxlfi_cqe *e = &cq->ring[cq->head];

		copy_entry(cq, (uint8_t *)buf + n * es, e);
		if (src)
			src[n] = e->src;
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
	}
	rc = n ? (ssize_t)n : -FI_EAGAIN;
out:
	if (rc == -FI_EAGAIN) {
		/* Only a caller that waits for something from us goes to
		 * sleep. One that polls us between other work (MPICH's
		 * progress during RMA to itself, or through its shared
		 * memory) would pay each sleep on every call: rma_contig of
		 * MPICH's suite took over 120 s instead of 6 s that way. */
		if (expecting(cq->eps, cq->neps))
			sleep_us = idle_next(cq);
		else
			idle_reset(cq);
		hang_watch(cq);
	} else {
		cq->wait_since_ms = 0;
		cq->hang_polls = 0;
		idle_reset(cq);
		wait_end(&cq->spin);
	}
	cxlfi_dom_unlock(cq->dom);
	if (sleep_us) { /* outside the lock: other threads keep going */
		struct timespec ts = { 0, (long)sleep_us * 1000 };

		nanosleep(&ts, NULL);
	}
	return rc;
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct cxlfi_cq *cq = (struct cxlfi_cq *)fcq;
	struct cxlfi_cqerr *e;

	(void)flags;
	cxlfi_dom_lock(cq->dom);
	e = cq->err_head;
	if (!e) {
		cxlfi_dom_unlock(cq->dom);
		return -FI_EAGAIN;
	}
	cq->err_head = e->next;
	if (!cq->err_head)
		cq->err_tail = NULL;
	cxlfi_dom_unlock(cq->dom);
	/* err_data stays the caller's (we provide none) */
	buf->op_context = e->e.op_context;
	buf->flags = e->e.flags;
	buf->len = e->e.len;
	buf->buf = e->e.buf;
	buf->data = e->e.data;
	buf->tag = e->e.tag;
	buf->olen = e->e.olen;
	buf->err = e->e.err;
	buf->prov_errno = e->e.prov_errno;
	buf->err_data_size = 0;
	free(e);
	return 1;
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count,
			    fi_addr_t *src, const void *cond, int timeout)
{
	struct cxlfi_cq *cq = (struct cxlfi_cq *)fcq;
	uint64_t end = timeout >= 0 ? cxlfi_now_ms() + (uint64_t)timeout : 0;
	struct cxl_backoff b;
	ssize_t rc;

	(void)cond;
	cxl_backoff_init(&b, 0);
	for (;;) {
		rc = cq_readfrom(fcq, buf, count, src);
		if (rc != -FI_EAGAIN)
			return rc;
		if (timeout >= 0 && cxlfi_now_ms() >= end)
			return -FI_EAGAIN;
		/* fi_cq_signal from another thread ends the wait */
		if (atomic_exchange_explicit(&cq->signaled, false,
					     memory_order_acq_rel))
			return -FI_EAGAIN;
		cxl_backoff_wait(&b);
	}
}

static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count,
			const void *cond, int timeout)
{
	return cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fcq)
{
	struct cxlfi_cq *cq = (struct cxlfi_cq *)fcq;

	atomic_store_explicit(&cq->signaled, true, memory_order_release);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	(void)cq;
	(void)err_data;
	if (buf && len)
		snprintf(buf, len, "%s", fi_strerror(prov_errno));
	return fi_strerror(prov_errno);
}

static int cq_close(struct fid *fid)
{
	struct cxlfi_cq *cq = (struct cxlfi_cq *)fid;

	int rc = cxlfi_dom_close_child(cq->dom, &cq->refs);

	if (rc)
		return rc;
	while (cq->err_head) {
		struct cxlfi_cqerr *e = cq->err_head;

		cq->err_head = e->next;
		free(e);
	}
	free(cq->eps);
	free(cq->ring);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = cxlfi_no_bind,
	.control = cxlfi_no_control,
	.ops_open = cxlfi_no_ops_open,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

int cxlfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **out, void *context)
{
	struct cxlfi_domain *d = (struct cxlfi_domain *)domain;
	struct cxlfi_cq *cq;

	if (attr && attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	if (attr && attr->format != FI_CQ_FORMAT_UNSPEC &&
	    attr->format != FI_CQ_FORMAT_CONTEXT &&
	    attr->format != FI_CQ_FORMAT_MSG &&
	    attr->format != FI_CQ_FORMAT_DATA &&
	    attr->format != FI_CQ_FORMAT_TAGGED)
		return -FI_ENOSYS;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->dom = d;
	cq->format = attr && attr->format != FI_CQ_FORMAT_UNSPEC
			     ? attr->format
			     : FI_CQ_FORMAT_CONTEXT;
	cq->cap = attr && attr->size ? attr->size : 1024;
	cq->spin.credit = CXLFI_SPIN_CREDIT_MAX;
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->fid.fid.fclass = FI_CLASS_CQ;
	cq->fid.fid.context = context;
	cq->fid.fid.ops = &cq_fi_ops;
	cq->fid.ops = &cq_ops;
	cxlfi_dom_ref(d, 1);
	*out = &cq->fid;
	return 0;
}

bool cxlfi_cq_ready(struct cxlfi_cq *cq)
{
	bool ready;

	cxlfi_dom_lock(cq->dom);
	if (!cq->count && !cq->err_head)
		cxlfi_eps_progress(cq->eps, cq->neps);
	ready = cq->count || cq->err_head;
	cxlfi_dom_unlock(cq->dom);
	return ready;
}
