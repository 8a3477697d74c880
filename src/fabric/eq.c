/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Event queues (fi_eq(3)). RDM endpoints over the pool have no connection
 * management, and their AVs insert synchronously, so the provider itself
 * raises no events: an EQ carries what the application writes with
 * fi_eq_write, and endpoints and AVs may be bound to one (every libfabric
 * application opens one). Entries are copied in and out under the EQ's
 * own lock; fi_eq_sread sleeps on a condition variable (FI_WAIT_UNSPEC,
 * FI_WAIT_MUTEX_COND), so a writer in another thread wakes it at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxlfi.h"

struct eq_entry {
	struct eq_entry *next;
	uint32_t event;
	size_t len;
	uint8_t data[]; /* the event's buffer, or a struct fi_eq_err_entry */
};

struct cxlfi_eq {
	struct fid_eq fid;
	struct cxlfi_fabric *fabric;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct eq_entry *head, *tail;	/* events, in written order */
	struct eq_entry *ehead, *etail; /* errors, reported first */
	size_t count, size;		/* entries queued, attr->size */
	int refs;			/* bound endpoints and AVs */
};

static void push(struct eq_entry **head, struct eq_entry **tail,
		 struct eq_entry *e)
{
	e->next = NULL;
	if (*tail)
		(*tail)->next = e;
	else
		*head = e;
	*tail = e;
}

static struct eq_entry *pop(struct eq_entry **head, struct eq_entry **tail)
{
	struct eq_entry *e = *head;

	if (e && !(*head = e->next))
		*tail = NULL;
	return e;
}

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	struct cxlfi_eq *q = (struct cxlfi_eq *)feq;
	struct eq_entry *e;
	ssize_t rc;

	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EINVAL;
	pthread_mutex_lock(&q->lock);
	if (q->ehead) {
		rc = -FI_EAVAIL; /* fi_eq_readerr first */
	} else if (!(e = q->head)) {
		rc = -FI_EAGAIN;
	} else if (len < e->len) {
		rc = -FI_ETOOSMALL;
	} else {
		if (event)
			*event = e->event;
		if (e->len)
			memcpy(buf, e->data, e->len);
		rc = (ssize_t)e->len;
		if (!(flags & FI_PEEK)) {
			pop(&q->head, &q->tail);
			q->count--;
			free(e);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

static ssize_t eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	struct cxlfi_eq *q = (struct cxlfi_eq *)feq;
	struct eq_entry *e;

	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EINVAL;
	pthread_mutex_lock(&q->lock);
	e = q->ehead;
	if (!e) {
		pthread_mutex_unlock(&q->lock);
		return -FI_EAGAIN;
	}
	memcpy(buf, e->data, sizeof(*buf));
	/* no provider error data: err_data_size 0 on the way out */
	buf->err_data = NULL;
	buf->err_data_size = 0;
	if (!(flags & FI_PEEK)) {
		pop(&q->ehead, &q->etail);
		q->count--;
		free(e);
	}
	pthread_mutex_unlock(&q->lock);
	return (ssize_t)sizeof(*buf);
}

/*
 * fi_eq_write: an event of len bytes. With the flag CXLFI_EQ_ERROR, the
 * bit that libfabric's utility EQs use for it, buf is a struct
 * fi_eq_err_entry and becomes an error entry.
 */
#define CXLFI_EQ_ERROR (1ull << 60)

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf,
			size_t len, uint64_t flags)
{
	struct cxlfi_eq *q = (struct cxlfi_eq *)feq;
	bool err = flags & CXLFI_EQ_ERROR;
	struct eq_entry *e;

	if (err && len < sizeof(struct fi_eq_err_entry))
		return -FI_EINVAL;
	if (len && !buf)
		return -FI_EINVAL;
	e = malloc(sizeof(*e) + len);
	if (!e)
		return -FI_ENOMEM;
	e->event = event;
	e->len = len;
	if (len)
		memcpy(e->data, buf, len);
	pthread_mutex_lock(&q->lock);
	if (q->count >= q->size) {
		pthread_mutex_unlock(&q->lock);
		free(e);
		return -FI_EAGAIN; /* full: the reader must catch up */
	}
	if (err)
		push(&q->ehead, &q->etail, e);
	else
		push(&q->head, &q->tail, e);
	q->count++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	struct cxlfi_eq *q = (struct cxlfi_eq *)feq;
	struct timespec end;
	ssize_t rc;

	clock_gettime(CLOCK_REALTIME, &end);
	if (timeout > 0) {
		end.tv_sec += timeout / 1000;
		end.tv_nsec += (long)(timeout % 1000) * 1000000L;
		if (end.tv_nsec >= 1000000000L) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000L;
		}
	}
	for (;;) {
		rc = eq_read(feq, event, buf, len, flags);
		if (rc != -FI_EAGAIN || timeout == 0)
			return rc;
		pthread_mutex_lock(&q->lock);
		/* recheck under the lock: a write between the read and here
		 * has broadcast already */
		while (!q->head && !q->ehead) {
			int w = timeout < 0
					? pthread_cond_wait(&q->cond, &q->lock)
					: pthread_cond_timedwait(
						  &q->cond, &q->lock, &end);

			if (w == ETIMEDOUT) {
				pthread_mutex_unlock(&q->lock);
				return -FI_EAGAIN;
			}
		}
		pthread_mutex_unlock(&q->lock);
	}
}

static const char *eq_strerror(struct fid_eq *feq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno);

	(void)feq;
	(void)err_data;
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

static int eq_close(struct fid *fid)
{
	struct cxlfi_eq *q = (struct cxlfi_eq *)fid;
	struct eq_entry *e;

	if (q->refs)
		return -FI_EBUSY;
	while ((e = pop(&q->head, &q->tail)))
		free(e);
	while ((e = pop(&q->ehead, &q->etail)))
		free(e);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	q->fabric->refs--;
	free(q);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct cxlfi_eq *q = (struct cxlfi_eq *)fid;

	switch (command) {
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = FI_WAIT_MUTEX_COND;
		return 0;
	case FI_GETWAIT: {
		struct fi_mutex_cond *mc = arg;

		if (!mc)
			return -FI_EINVAL;
		mc->mutex = &q->lock;
		mc->cond = &q->cond;
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = cxlfi_no_bind,
	.control = eq_control,
	.ops_open = cxlfi_no_ops_open,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int cxlfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq, void *context)
{
	struct cxlfi_fabric *f = (struct cxlfi_fabric *)fabric;
	struct cxlfi_eq *q;

	if (!eq)
		return -FI_EINVAL;
	if (attr && attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_MUTEX_COND) {
		CXLFI_INFO(FI_LOG_EQ,
			   "event queue wait object %d not offered: use "
			   "FI_WAIT_UNSPEC, FI_WAIT_MUTEX_COND or "
			   "FI_WAIT_NONE\n",
			   (int)attr->wait_obj);
		return -FI_ENOSYS;
	}
	if (attr && (attr->flags & ~(uint64_t)FI_WRITE))
		return -FI_EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -FI_ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	q->size = attr && attr->size ? attr->size : 1024;
	q->fabric = f;
	q->fid.fid.fclass = FI_CLASS_EQ;
	q->fid.fid.context = context;
	q->fid.fid.ops = &eq_fi_ops;
	q->fid.ops = &eq_ops;
	f->refs++;
	*eq = &q->fid;
	return 0;
}

void cxlfi_eq_ref(struct fid_eq *eq, int delta)
{
	struct cxlfi_eq *q = (struct cxlfi_eq *)eq;

	pthread_mutex_lock(&q->lock);
	q->refs += delta;
	pthread_mutex_unlock(&q->lock);
}

int cxlfi_eq_report(struct fid_eq *eq, uint32_t event, const void *buf,
		    size_t len, bool err)
{
	ssize_t rc = eq_write(eq, event, buf, len, err ? CXLFI_EQ_ERROR : 0);

	return rc < 0 ? (int)rc : 0;
}
