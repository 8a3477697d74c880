/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPIS_Queue: the host execution stream (THREAD, the reference's thread
 * backend). The calling thread validates and appends operations to a
 * single-producer ring; the queue's progress thread runs them in order:
 *   start of a send       copy into the pool channel + flag
 *   start of a receive    nothing (the data arrives at the wait)
 *   start of a collective contribution + flag
 *   wait (all started)    receives: poll flag, copy out, credit;
 *                         collectives: poll flags, reduce
 *   host function         call it (CXLMPI_Enqueue_host)
 * Request state (started, waited) is kept by the calling thread when it
 * enqueues, so erroneous use is refused at once and changes nothing.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream.h"

#define RING 1024u	 /* operations in flight per queue */
#define IDLE_YIELDS 4096 /* idle yields before the thread sleeps */
/* progress thread: spin this long while a host thread runs the queue,
 * then sleep */
#define HOST_SPIN_NS 10000

MPIS_Queue ACTIVE_QUEUE = 0; /* MPIS_QUEUE_NULL */

/* The THREAD backend's queue; head first (struct queue_head). */
enum op_type {
	OP_START,
	OP_WAITALL,
	OP_HOST,
	OP_STOP
};

struct op {
	int type;
	MPIS_Request r;
	uint64_t k;
	struct pend *set; /* OP_WAITALL: the requests it completes */
	int nset;
	int next; /* OP_WAITALL: the first of set not completed yet */
	void (*fn)(void *);
	void *arg;
};

struct stream_queue {
	struct queue_head qh; /* first: a queue_head * is a stream_queue * */
	pthread_t thread;
	struct op ring[RING];
	atomic_uint_fast64_t tail; /* written by the caller */
	atomic_uint_fast64_t head; /* written by the thread that runs them */
	atomic_int sleeping, waiters, err;
	atomic_int exec;       /* 1 while a thread runs operations (take) */
	atomic_int host_wants; /* host threads in MPIS_Queue_wait */
	/* the lowest head a sleeping host thread waits for (UINT64_MAX:
	 * none); set by waiters and reset by the progress thread, under mu */
	atomic_uint_fast64_t wake_at;
	unsigned wait_spins; /* CXLMPI_STREAM_WAIT_SPINS */
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* the progress thread sleeps on it */
	pthread_cond_t done; /* the host thread waits for head on it */
};

/* The progress thread's idle loop: pause IDLE_SPIN_NS, then yield
 * (cxl_spin_step); it does not learn (an idle wait always ends by
 * yielding) and does not teach stream_spin. */
#define IDLE_SPIN_NS 2000

static struct queue_head *to_head(MPIS_Queue q)
{
	return (struct queue_head *)q;
}

/* Whether the progress thread should leave the queue to a host thread
 * in MPIS_Queue_wait that does not sleep (queue_run). */
static bool host_takes_over(struct stream_queue *q)
{
	return atomic_load(&q->host_wants) && !atomic_load(&q->waiters);
}

/* chan_recv's question to the progress thread, while it waits */
static bool handover(void *q)
{
	return host_takes_over(q);
}

/* Run operation o; by_host: on a host thread in MPIS_Queue_wait. Returns
 * false when the progress thread stopped a wait between two of its
 * requests to leave the rest to a host thread (o->next: where to go on). */
static bool run(struct stream_queue *q, struct op *o, bool by_host)
{
	int rc = MPI_SUCCESS;

	switch (o->type) {
	case OP_START:
		/* A request moved to this queue after its wait was enqueued
		 * on another: its previous round may still run there, on the
		 * same channel. Wait until that queue retires it (within one
		 * queue it is already retired: one load). No cycle: the
		 * round was enqueued earlier, on a queue that runs in order. */
		for (unsigned spins = 0;
		     atomic_load_explicit(&o->r->retired,
					  memory_order_acquire) +
			     1 <
		     o->k;)
			stream_spin(&spins);
		if (atomic_load(&q->err))
			break;
		if (o->r->kind == SR_SEND && o->r->has_chan)
			rc = chan_send(&o->r->ch, o->k, o->r->buf, o->r->bytes,
				       &o->r->lay);
		else if (o->r->has_coll)
			coll_start(o->r, o->k);
		break;
	case OP_WAITALL:
		for (int i = o->next; i < o->nset; i++) {
			MPIS_Request r = o->set[i].r;

			if (rc || atomic_load(&q->err))
				continue; /* retired below all the same */
			if (r->kind == SR_RECV && r->has_chan) {
				rc = chan_recv(&r->ch, o->set[i].k, r->buf,
					       r->bytes, &r->lay,
					       by_host ? NULL : handover, q);
				if (rc == CHAN_HANDOVER) {
					/* not begun: the host thread
					 * receives it */
					o->next = i;
					return false;
				}
			} else if (r->has_coll) {
				rc = coll_finish(r, o->set[i].k);
			}
			/* a host thread waits for the queue: hand it the
			 * rest of this wait (a halo's 6 receives are one
			 * wait, and its receives can wait long) */
			if (!rc && !by_host && i + 1 < o->nset &&
			    host_takes_over(q)) {
				o->next = i + 1;
				return false;
			}
		}
		/* all of the wait is done: the flags of its sends out, the
		 * credits of its receives together (chan_credit), then round
		 * k of each request is done with its channel (also on error):
		 * release its effects to a later round's queue, and to
		 * MPIS_Request_free */
		chan_flags_out();
		for (int i = 0; i < o->nset; i++) {
			MPIS_Request r = o->set[i].r;

			if (r->kind == SR_RECV && r->has_chan)
				chan_credit(&r->ch);
			atomic_store_explicit(&r->retired, o->set[i].k,
					      memory_order_release);
			atomic_fetch_sub(&r->inflight, 1);
		}
		free(o->set);
		break;
	case OP_HOST:
		chan_drain(); /* our flags out before the host work runs */
		if (!atomic_load(&q->err))
			o->fn(o->arg);
		break;
	}
	if (rc != MPI_SUCCESS && !atomic_load(&q->err)) {
		atomic_store(&q->err, rc);
		stream_fail(rc,
			    "queue operation failed (%s); the queue stops "
			    "running operations and MPIS_Queue_wait returns "
			    "the error",
			    rc == MPI_ERR_TRUNCATE ? "message larger than the "
						     "receive"
			    : stream_peer_dead	   ? "a peer stopped: above"
						   : "inconsistent channel in "
						     "the pool");
	}
	stream_peer_dead = false;
	return true;
}

/* The right to run the queue's operations: one runner at a time, the
 * progress thread or a host thread in MPIS_Queue_wait (queue_run). The
 * acquire and release order each operation after the previous one, on
 * whichever thread ran it. */
static bool take(struct stream_queue *q)
{
	int free_ = 0;

	return atomic_compare_exchange_strong_explicit(&q->exec, &free_, 1,
						       memory_order_acquire,
						       memory_order_relaxed);
}

static void release(struct stream_queue *q)
{
	atomic_store_explicit(&q->exec, 0, memory_order_release);
}

/* Run operation h (the runner holds q->exec) and publish it; false when
 * the progress thread left part of it to a host thread (run). */
static bool run_next(struct stream_queue *q, uint64_t h, bool by_host)
{
	if (!run(q, &q->ring[h % RING], by_host))
		return false;
	/* release the operation's effects with the count; seq_cst
	 * against q->waiters and q->wake_at (a host thread sets them,
	 * then reads head): one of us sees the other. Wake only once
	 * head reaches what a sleeper waits for, not after every
	 * operation: a futex wake per operation would cost more than
	 * the operation. */
	atomic_store(&q->head, h + 1);
	if (atomic_load(&q->waiters) && h + 1 >= atomic_load(&q->wake_at)) {
		pthread_mutex_lock(&q->mu);
		atomic_store(&q->wake_at, UINT64_MAX);
		pthread_cond_broadcast(&q->done);
		pthread_mutex_unlock(&q->mu);
	}
	return true;
}

static void *progress(void *arg)
{
	struct stream_queue *q = arg;
	unsigned idle = 0;
	uint64_t host_since = 0; /* when a host thread took the queue */
	struct cxl_spin idle_spin = CXL_SPIN_INIT(IDLE_SPIN_NS, 0);

	for (;;) {
		/* acquire: the operation's fields were written before tail */
		uint64_t h = atomic_load(&q->head);
		bool empty = h == atomic_load_explicit(&q->tail,
						       memory_order_acquire);
		/* a host thread waiting in MPIS_Queue_wait runs the queue
		 * itself, unless it sleeps (queue_run) */
		bool host = host_takes_over(q);

		if (!host)
			host_since = 0;
		if (!empty && !host && take(q)) {
			bool stop = false;

			idle = 0;
			/* run while there is work and no host thread wants
			 * the queue (a host may have run some meanwhile) */
			while ((h = atomic_load(&q->head)) !=
			       atomic_load(&q->tail)) {
				if (q->ring[h % RING].type == OP_STOP) {
					stop = true;
					break;
				}
				if (!run_next(q, h, false) ||
				    host_takes_over(q))
					break; /* handed over, or will be */
			}
			/* our flags and stores out before another runner can
			 * go on: it may retire a send whose flag we hold,
			 * and our fence is the one that orders our data */
			chan_drain();
			release(q);
			if (stop)
				return NULL;
			continue;
		}
		/* going idle: complete this thread's unfenced flags and
		 * credits */
		if (!idle)
			chan_drain();
		if (!host && (idle < IDLE_YIELDS || !empty)) {
			cxl_spin_step(&idle_spin, &idle);
			continue;
		}
		/* a host thread runs the queue: most such waits are short
		 * (an exchange), and a thread that slept costs the next
		 * push a futex wake; so sleep only after HOST_SPIN_NS */
		if (host) {
			uint64_t t = cxl_now_ns();

			if (!host_since)
				host_since = t;
			if (t - host_since < HOST_SPIN_NS) {
				/* yield at once, no pause first: the host
				 * thread may be waiting for this core */
				sched_yield();
				continue;
			}
		}
		/* sleep while there is nothing to run, or while a host
		 * thread runs the queue: spinning would take its core.
		 * Woken by push, by a host thread that goes to sleep
		 * (wait_head) and by one that leaves operations behind
		 * (queue_run); all three decide under mu, as we do. */
		pthread_mutex_lock(&q->mu);
		atomic_store(&q->sleeping, 1);
		while (atomic_load(&q->head) == atomic_load(&q->tail) ||
		       host_takes_over(q))
			pthread_cond_wait(&q->cv, &q->mu);
		atomic_store(&q->sleeping, 0);
		pthread_mutex_unlock(&q->mu);
		idle = 0;
		host_since = 0;
	}
}

/* Host thread: sleep until the progress thread's head reaches h,
 * leaving the core to the progress threads. */
static void wait_head(struct stream_queue *q, uint64_t h)
{
	/* acquire: the thread's effects (received data) before head */
	while (atomic_load_explicit(&q->head, memory_order_acquire) < h) {
		pthread_mutex_lock(&q->mu);
		atomic_fetch_add(&q->waiters, 1);
		/* the progress thread may sleep, leaving the queue to us */
		if (atomic_load(&q->sleeping))
			pthread_cond_signal(&q->cv);
		while (atomic_load(&q->head) < h) {
			/* (re)register after every wakeup: the progress
			 * thread clears wake_at when it wakes anyone */
			if (h < atomic_load(&q->wake_at))
				atomic_store(&q->wake_at, h);
			if (atomic_load(&q->head) >= h)
				break;
			pthread_cond_wait(&q->done, &q->mu);
		}
		atomic_fetch_sub(&q->waiters, 1);
		pthread_mutex_unlock(&q->mu);
	}
}

static void push(struct stream_queue *q, const struct op *o)
{
	uint64_t t = atomic_load(&q->tail);

	/* full: sleep until half of it has run, so that a host thread that
	 * enqueues far ahead sleeps through RING / 2 operations instead of
	 * waking for each one, and does not spin: that takes long, and
	 * spinning would take a core from the progress threads */
	if (t - atomic_load(&q->head) >= RING)
		wait_head(q, t - RING / 2);
	q->ring[t % RING] = *o;
	/* release the operation; seq_cst against q->sleeping (the thread
	 * sets sleeping, then reads tail): one of us sees the other */
	atomic_store(&q->tail, t + 1);
	if (atomic_load(&q->sleeping)) {
		pthread_mutex_lock(&q->mu);
		pthread_cond_signal(&q->cv);
		pthread_mutex_unlock(&q->mu);
	}
}

static int thread_start(struct queue_head *h, MPIS_Request r, uint64_t k);
static int thread_waitall(struct queue_head *h, struct pend *set, int n);
static int thread_host(struct queue_head *h, void (*fn)(void *), void *arg);
static int thread_wait(struct queue_head *h);
static void thread_destroy(struct queue_head *h);

static const struct queue_ops thread_ops = {
	.start = thread_start,
	.waitall = thread_waitall,
	.host = thread_host,
	.wait = thread_wait,
	.destroy = thread_destroy,
};

static int thread_create(struct queue_head **out, int type)
{
	struct stream_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return MPI_ERR_NO_MEM;
	q->qh.ops = &thread_ops;
	q->qh.type = type;
	q->wait_spins = cxlmpi_config()->stream_wait_spins;
	atomic_init(&q->wake_at, UINT64_MAX);
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	pthread_cond_init(&q->done, NULL);
	if (pthread_create(&q->thread, NULL, progress, q)) {
		free(q);
		return stream_fail(MPI_ERR_OTHER,
				   "cannot start a progress thread");
	}
	*out = &q->qh;
	return MPIS_SUCCESS;
}

int MPIS_Queue_init(MPIS_Queue *queue, MPIS_Queue_type type, void *extra)
{
	struct queue_head *h = NULL;
	int rc;

	if (!queue)
		return MPI_ERR_ARG;
	if (type != THREAD && type != THREAD_SERIALIZED && type != GPU_MEM_OPS)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "queue type %d is not supported on the "
				   "pool; use THREAD or GPU_MEM_OPS",
				   (int)type);
	if (!stream_pool())
		return stream_fail(MPIS_NOT_READY,
				   "no pool: set CXL_POOL (and run with the "
				   "cxl provider) to use stream queues");
	/* extra: the reference passes a stream also to THREAD queues */
	rc = type == GPU_MEM_OPS ? gpu_queue_create(&h, extra)
				 : thread_create(&h, type);
	if (rc)
		return rc;
	*queue = (MPIS_Queue)h;
	ACTIVE_QUEUE = *queue;
	return MPIS_SUCCESS;
}

/*
 * MPIS_Queue_wait: the calling thread runs what is left of the queue
 * itself, as soon as the progress thread is between two operations
 * (which leaves it the queue while host_wants is set). A hand-off from
 * the progress thread back to a sleeping host costs a futex wake and a
 * scheduler round trip, several microseconds; running the operations
 * here costs nothing more than on the progress thread, and on a machine
 * with fewer cores than threads it leaves the core to one busy thread.
 * After CXLMPI_STREAM_WAIT_SPINS failed tries (the progress thread is
 * inside a long operation) it sleeps as before, and the progress thread
 * goes on with the queue.
 */
static void queue_run(struct stream_queue *q, uint64_t target)
{
	unsigned spins = 0;

	atomic_fetch_add(&q->host_wants, 1);
	while (atomic_load_explicit(&q->head, memory_order_acquire) < target) {
		uint64_t h;

		if (!take(q)) {
			/* the progress thread is inside an operation and
			 * gives the queue up at its next step; it may be
			 * waiting for this very core, so yield, no pause */
			if (spins++ < q->wait_spins) {
				sched_yield();
				continue;
			}
			wait_head(q, target); /* spun enough above */
			break;
		}
		while ((h = atomic_load(&q->head)) < target &&
		       q->ring[h % RING].type != OP_STOP)
			run_next(q, h, true);
		chan_drain(); /* our flags and credits out before we leave */
		release(q);
		break;
	}
	/* operations another thread enqueued meanwhile are the progress
	 * thread's, which may sleep while we run the queue */
	pthread_mutex_lock(&q->mu);
	atomic_fetch_sub(&q->host_wants, 1);
	if (atomic_load(&q->sleeping) &&
	    atomic_load(&q->head) != atomic_load(&q->tail))
		pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

static int thread_wait(struct queue_head *h)
{
	struct stream_queue *q = (struct stream_queue *)h;

	queue_run(q, atomic_load(&q->tail));
	return atomic_load(&q->err);
}

int MPIS_Queue_wait(MPIS_Queue queue)
{
	struct queue_head *h = to_head(queue);

	if (!h)
		return MPIS_NOT_READY;
	return h->ops->wait(h);
}

static void thread_destroy(struct queue_head *h)
{
	struct stream_queue *q = (struct stream_queue *)h;
	struct op o = { .type = OP_STOP };

	push(q, &o);
	pthread_join(q->thread, NULL);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	pthread_cond_destroy(&q->done);
	free(q);
}

int MPIS_Queue_free(MPIS_Queue *queue)
{
	struct queue_head *h;

	if (!queue || !(h = to_head(*queue)))
		return MPIS_NOT_READY;
	if (h->npend)
		return stream_fail(MPIS_INVALID_REQUEST_STATE,
				   "MPIS_Queue_free: %d started requests were "
				   "not waited for; call MPIS_Enqueue_waitall "
				   "first",
				   h->npend);
	if (ACTIVE_QUEUE == *queue)
		ACTIVE_QUEUE = MPIS_QUEUE_NULL;
	free(h->pend);
	h->ops->destroy(h);
	*queue = MPIS_QUEUE_NULL;
	return MPIS_SUCCESS;
}

/* May r be started on q? */
static int startable(struct queue_head *q, MPIS_Request r, const char **why)
{
	*why = "null";
	if (!r || r->kind == SR_MATCH)
		return MPIS_INVALID_REQUEST_STATE;
	/* started and not waited for: a start again, here or on another
	 * queue, is erroneous (its wait belongs to r->active) */
	*why = "started and not waited for";
	if (r->active)
		return MPIS_INVALID_REQUEST_STATE;
	*why = "not matched";
	if (r->state == SR_UNMATCHED)
		return MPIS_INVALID_REQUEST_STATE;
	/* a GPU stream may still use the channel when the host has long
	 * returned: a request stays with the one stream that used it */
	*why = "in use by a GPU_MEM_OPS queue, which keeps it until it is "
	       "freed";
	if (r->gpu_q && r->gpu_q != q)
		return MPIS_UNSUPPORTED_BEHAVIOR;
	*why = "in use by THREAD queues; a GPU_MEM_OPS queue needs requests "
	       "of its own";
	if (q->type == GPU_MEM_OPS && r->host_used)
		return MPIS_UNSUPPORTED_BEHAVIOR;
	return MPIS_SUCCESS;
}

static int start_one(struct queue_head *q, MPIS_Request r)
{
	uint64_t k;
	int rc;

	if (q->npend == q->cappend) {
		int n = q->cappend ? 2 * q->cappend : 16;
		struct pend *p = realloc(q->pend, sizeof(*p) * (size_t)n);

		if (!p)
			return MPI_ERR_NO_MEM;
		q->pend = p;
		q->cappend = n;
	}
	k = r->seq + 1;
	rc = q->ops->start(q, r, k);
	if (rc)
		return rc;
	r->seq = k;
	r->active = q;
	q->pend[q->npend++] = (struct pend){ r, k };
	return MPIS_SUCCESS;
}

static int thread_start(struct queue_head *h, MPIS_Request r, uint64_t k)
{
	struct op o = { .type = OP_START, .r = r, .k = k };

	r->host_used = true;
	atomic_fetch_add(&r->inflight, 1);
	push((struct stream_queue *)h, &o);
	return MPIS_SUCCESS;
}

int MPIS_Enqueue_startall(MPIS_Queue queue, int n, MPIS_Request reqs[])
{
	struct queue_head *q = to_head(queue);
	const char *why;
	int rc;

	if (!q)
		return MPIS_NOT_READY;
	if (n < 0 || (n && !reqs))
		return MPI_ERR_ARG;
	for (int i = 0; i < n; i++) {
		rc = startable(q, reqs[i], &why);
		if (rc)
			return stream_fail(rc,
					   "MPIS_Enqueue_start(all): request "
					   "%d is %s; match it, and enqueue a "
					   "wait before starting it again",
					   i, why);
		for (int j = 0; j < i; j++)
			if (reqs[j] == reqs[i])
				return stream_fail(
					MPIS_INVALID_REQUEST_STATE,
					"MPIS_Enqueue_startall: request %d "
					"appears twice",
					i);
	}
	/* complete pending matches before anything is enqueued: the first
	 * start of a request whose match is not complete waits for the
	 * peer's match, once in the request's life (MPIS_Matchall, or
	 * MPIS_Is_matched until true, beforehand: no wait here) */
	for (int i = 0; i < n; i++) {
		rc = match_finish(reqs[i], true);
		if (rc)
			return rc;
	}
	for (int i = 0; i < n; i++) {
		rc = start_one(q, reqs[i]);
		if (rc)
			return rc;
	}
	return MPIS_SUCCESS;
}

int MPIS_Enqueue_start(MPIS_Queue queue, MPIS_Request *req)
{
	if (!req)
		return MPI_ERR_ARG;
	return MPIS_Enqueue_startall(queue, 1, req);
}

static int thread_waitall(struct queue_head *h, struct pend *set, int n)
{
	struct op o = { .type = OP_WAITALL, .set = set, .nset = n };

	push((struct stream_queue *)h, &o);
	return MPIS_SUCCESS;
}

int MPIS_Enqueue_waitall(MPIS_Queue queue)
{
	struct queue_head *q = to_head(queue);
	struct pend *set;
	int rc;

	if (!q)
		return MPIS_NOT_READY;
	if (!q->npend)
		return MPIS_SUCCESS;
	set = malloc(sizeof(*set) * (size_t)q->npend);
	if (!set)
		return MPI_ERR_NO_MEM;
	memcpy(set, q->pend, sizeof(*set) * (size_t)q->npend);
	/* the backend takes set; on an error it may have enqueued part of
	 * the wait and the queue has failed: the requests are waited for
	 * all the same, so that they and the queue can be freed */
	rc = q->ops->waitall(q, set, q->npend);
	for (int i = 0; i < q->npend; i++)
		q->pend[i].r->active = NULL;
	q->npend = 0;
	return rc;
}

static int thread_host(struct queue_head *h, void (*fn)(void *), void *arg)
{
	struct op o = { .type = OP_HOST, .fn = fn, .arg = arg };

	push((struct stream_queue *)h, &o);
	return MPIS_SUCCESS;
}

int CXLMPI_Enqueue_host(MPIS_Queue queue, void (*fn)(void *), void *arg)
{
	struct queue_head *q = to_head(queue);

	if (!q)
		return MPIS_NOT_READY;
	if (!fn)
		return MPI_ERR_ARG;
	return q->ops->host(q, fn, arg);
}
