/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Poll sets (fi_poll(3)): one call that progresses a group of CQs and
 * counters and returns the contexts of those with something to report:
 * a CQ with an entry or an error queued, a counter whose value or error
 * count changed since the last fi_poll. Members are held (a CQ or counter
 * in a set cannot be closed) until fi_poll_del.
 */
#include <stdlib.h>

#include "cxlfi.h"

struct poll_member {
	struct fid *fid;
	uint64_t seen; /* counters: value + errors at the last report */
};

struct cxlfi_poll {
	struct fid_poll fid;
	struct cxlfi_domain *dom;
	pthread_mutex_t lock; /* the member list */
	struct poll_member *m;
	size_t n, cap;
};

static int *refs_of(struct fid *fid)
{
	if (fid->fclass == FI_CLASS_CQ)
		return &((struct cxlfi_cq *)fid)->refs;
	if (fid->fclass == FI_CLASS_CNTR)
		return &((struct cxlfi_cntr *)fid)->refs;
	return NULL;
}

static int poll_add(struct fid_poll *fp, struct fid *fid, uint64_t flags)
{
	struct cxlfi_poll *ps = (struct cxlfi_poll *)fp;
	int *refs = fid ? refs_of(fid) : NULL;
	int rc = 0;

	if (flags || !refs)
		return -FI_EINVAL; /* CQs and counters only */
	pthread_mutex_lock(&ps->lock);
	for (size_t i = 0; i < ps->n; i++)
		if (ps->m[i].fid == fid)
			rc = -FI_EALREADY;
	if (!rc && ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 8;
		struct poll_member *m = realloc(ps->m, cap * sizeof(*m));

		if (m) {
			ps->m = m;
			ps->cap = cap;
		} else {
			rc = -FI_ENOMEM;
		}
	}
	if (!rc) {
		ps->m[ps->n].fid = fid;
		ps->m[ps->n].seen =
			fid->fclass == FI_CLASS_CNTR
				? cxlfi_cntr_events((struct cxlfi_cntr *)fid)
				: 0;
		ps->n++;
		cxlfi_dom_lock(ps->dom);
		(*refs)++;
		cxlfi_dom_unlock(ps->dom);
	}
	pthread_mutex_unlock(&ps->lock);
	return rc;
}

static int poll_del(struct fid_poll *fp, struct fid *fid, uint64_t flags)
{
	struct cxlfi_poll *ps = (struct cxlfi_poll *)fp;
	int rc = -FI_ENOENT;

	if (flags)
		return -FI_EINVAL;
	pthread_mutex_lock(&ps->lock);
	for (size_t i = 0; i < ps->n; i++)
		if (ps->m[i].fid == fid) {
			ps->m[i] = ps->m[--ps->n];
			cxlfi_dom_lock(ps->dom);
			(*refs_of(fid))--;
			cxlfi_dom_unlock(ps->dom);
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&ps->lock);
	return rc;
}

static int poll_poll(struct fid_poll *fp, void **context, int count)
{
	struct cxlfi_poll *ps = (struct cxlfi_poll *)fp;
	int found = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	pthread_mutex_lock(&ps->lock);
	for (size_t i = 0; i < ps->n && found < count; i++) {
		struct poll_member *pm = &ps->m[i];
		bool ready;

		if (pm->fid->fclass == FI_CLASS_CQ) {
			ready = cxlfi_cq_ready((struct cxlfi_cq *)pm->fid);
		} else {
			uint64_t v =
				cxlfi_cntr_events((struct cxlfi_cntr *)pm->fid);

			ready = v != pm->seen;
			pm->seen = v;
		}
		if (ready)
			context[found++] = pm->fid->context;
	}
	pthread_mutex_unlock(&ps->lock);
	return found;
}

static int poll_close(struct fid *fid)
{
	struct cxlfi_poll *ps = (struct cxlfi_poll *)fid;

	if (ps->n)
		return -FI_EBUSY; /* fi_poll_del its members first */
	pthread_mutex_destroy(&ps->lock);
	cxlfi_dom_ref(ps->dom, -1);
	free(ps->m);
	free(ps);
	return 0;
}

static struct fi_ops poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = poll_close,
	.bind = cxlfi_no_bind,
	.control = cxlfi_no_control,
	.ops_open = cxlfi_no_ops_open,
};

static struct fi_ops_poll poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = poll_poll,
	.poll_add = poll_add,
	.poll_del = poll_del,
};

int cxlfi_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		    struct fid_poll **out)
{
	struct cxlfi_domain *d = (struct cxlfi_domain *)domain;
	struct cxlfi_poll *ps;

	if (!out || (attr && attr->flags))
		return -FI_EINVAL;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	pthread_mutex_init(&ps->lock, NULL);
	ps->dom = d;
	ps->fid.fid.fclass = FI_CLASS_POLL;
	ps->fid.fid.ops = &poll_fi_ops;
	ps->fid.ops = &poll_ops;
	cxlfi_dom_ref(d, 1);
	*out = &ps->fid;
	return 0;
}
