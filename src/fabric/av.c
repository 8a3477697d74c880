/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address vectors (FI_AV_TABLE and FI_AV_MAP; both hand out table
 * indices). An address from another pool, or one that is malformed, is
 * refused with FI_ADDR_NOTAVAIL and a log line that says why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlfi.h"

/* endpoint index -> fi_addr + 1, for FI_SOURCE on receive */
struct av_rev {
	fi_addr_t *map;
	size_t n;
};

static struct av_rev *rev_of(struct cxlfi_av *av)
{
	return (struct av_rev *)(av + 1);
}

static int av_close(struct fid *fid)
{
	struct cxlfi_av *av = (struct cxlfi_av *)fid;

	int rc = cxlfi_dom_close_child(av->dom, &av->refs);

	if (rc)
		return rc;
	if (av->eq)
		cxlfi_eq_ref(av->eq, -1);
	free(rev_of(av)->map);
	free(av->tab);
	free(av->eps);
	free(av);
	return 0;
}

/* An AV opened with FI_EVENT reports its inserts to an event queue. */
static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct cxlfi_av *av = (struct cxlfi_av *)fid;

	if (flags || bfid->fclass != FI_CLASS_EQ || av->eq)
		return -FI_EINVAL;
	av->eq = (struct fid_eq *)bfid;
	cxlfi_eq_ref(av->eq, 1);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = av_bind,
	.control = cxlfi_no_control,
	.ops_open = cxlfi_no_ops_open,
};

/* Usable, and how: through the pool, or (*net) through the network link
 * of a peer outside our pool that carries a network address. */
static bool addr_ok(struct cxlfi_av *av, const struct cxlfi_addr *a, bool *net)
{
	struct cxl_pool_info pi;

	*net = false;
	cxl_pool_info(av->dom->pool, &pi);
	if (a->magic != CXLFI_ADDR_MAGIC || a->version != 1) {
		CXLFI_WARN(FI_LOG_AV,
			   "not a cxl provider address (magic "
			   "%#x): was it made by another provider?\n",
			   a->magic);
		return false;
	}
	if (memcmp(a->pool_uuid, pi.uuid, sizeof(pi.uuid)) &&
	    cxlfi_params.net[0] && (a->reserved & CXLFI_ADDR_NET) && a->pad &&
	    a->pad <= CXLFI_NET_NAME_MAX) {
		*net = true;
		return true;
	}
	if (memcmp(a->pool_uuid, pi.uuid, sizeof(pi.uuid))) {
		CXLFI_WARN(FI_LOG_AV,
			   "address of endpoint %u belongs to "
			   "another CXL pool: every process must use the same "
			   "CXL_POOL\n",
			   a->index);
		return false;
	}
	if (a->index >= cxlfi_params.max_eps) {
		CXLFI_WARN(FI_LOG_AV,
			   "endpoint index %u beyond FI_CXL_MAX_EPS "
			   "(%zu): all processes must use the same value\n",
			   a->index, cxlfi_params.max_eps);
		return false;
	}
	return true;
}

/* The endpoint address a is, or stands for (a service address is resolved
 * through the pool now); false, logged, if there is none. */
static bool addr_usable(struct cxlfi_av *av, const struct cxlfi_addr *a,
			struct cxlfi_addr *out, bool *net)
{
	*net = false;
	if (cxlfi_addr_is_ours(av->dom->pool, a, sizeof(*a)) &&
	    (a->reserved & CXLFI_ADDR_ANY)) {
		CXLFI_WARN(FI_LOG_AV,
			   "address names no endpoint (fi_getinfo's local "
			   "address): insert the address fi_getname returns, "
			   "or a service address\n");
		return false;
	}
	if (cxlfi_addr_is_ours(av->dom->pool, a, sizeof(*a)) &&
	    (a->reserved & CXLFI_ADDR_NAMED)) {
		/* a server started just before us may not have published
		 * its service yet (a loaded machine): look again, for up to
		 * CXLFI_RESOLVE_WAIT_MS, as a client retries a connect */
		uint64_t until = cxlfi_now_ms() + CXLFI_RESOLVE_WAIT_MS;

		while (cxlfi_addr_resolve(av->dom->pool, a, out, true)) {
			if (cxlfi_now_ms() >= until)
				/* once more, saying why */
				return !cxlfi_addr_resolve(av->dom->pool, a,
							   out, false) &&
				       addr_ok(av, out, net);
			usleep(10000);
		}
		return addr_ok(av, out, net);
	}
	*out = *a;
	return addr_ok(av, a, net) &&
	       !(a->reserved & (CXLFI_ADDR_ANY | CXLFI_ADDR_NAMED));
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct cxlfi_av *av = (struct cxlfi_av *)fav;
	const uint8_t *a = addr;
	size_t alen = cxlfi_addrlen();
	struct av_rev *rv = rev_of(av);
	int *sync_err = flags & FI_SYNC_ERR ? context : NULL;
	int done = 0, rc;

	if (flags & ~(FI_MORE | FI_SYNC_ERR) || (sync_err && av->events) ||
	    (count && !addr))
		return -FI_EINVAL;
	if (av->events && !av->eq)
		return -FI_ENOEQ;
	cxlfi_dom_lock(av->dom);
	if (av->count + count > av->cap) {
		size_t cap = av->cap ? av->cap : 64;
		struct cxlfi_av_entry *t;

		while (cap < av->count + count)
			cap *= 2;
		t = realloc(av->tab, cap * sizeof(*t));
		if (!t) {
			cxlfi_dom_unlock(av->dom);
			return -FI_ENOMEM;
		}
		av->tab = t;
		av->cap = cap;
	}
	for (size_t i = 0; i < count; i++) {
		fi_addr_t fa = FI_ADDR_NOTAVAIL;
		struct cxlfi_addr in, r;
		bool net;

		/* the caller's bytes, unaligned: copy before reading */
		memcpy(&in, a + i * alen, sizeof(in));
		if (addr_usable(av, &in, &r, &net)) {
			struct cxlfi_av_entry *e = &av->tab[av->count];

			memset(e, 0, sizeof(*e));
			e->addr = r;
			e->valid = true;
			if (net) {
				e->net = true;
				e->netlen = (uint8_t)r.pad;
				/* the whole network part: the address, then
				 * the RMA port where it fits (netpath.c) */
				memcpy(e->netname, a + i * alen + sizeof(in),
				       CXLFI_NET_NAME_MAX);
			}
			fa = av->count++;
			if (!net && r.index < rv->n)
				rv->map[r.index] = fa + 1;
			/* the links of the bound endpoints learn it (an
			 * upcall: netpath.c sits above the AV) */
			if (net && cxlfi_up.av_net_insert &&
			    cxlfi_up.av_net_insert(av, fa)) {
				e->valid = false;
				fa = FI_ADDR_NOTAVAIL;
			} else {
				done++;
			}
		} else if (av->events) {
			struct fi_eq_err_entry ee = {
				.fid = &av->fid.fid,
				.context = context,
				.data = i,
				.err = FI_EADDRNOTAVAIL,
			};

			cxlfi_eq_report(av->eq, FI_AV_COMPLETE, &ee, sizeof(ee),
					true);
		}
		if (sync_err)
			sync_err[i] =
				fa == FI_ADDR_NOTAVAIL ? FI_EADDRNOTAVAIL : 0;
		if (fi_addr)
			fi_addr[i] = fa;
	}
	cxlfi_dom_unlock(av->dom);
	if (!av->events)
		return done;
	/* FI_EVENT: the call succeeds; the count goes to the event queue */
	{
		struct fi_eq_entry ev = {
			.fid = &av->fid.fid,
			.context = context,
			.data = (uint64_t)done,
		};

		rc = cxlfi_eq_report(av->eq, FI_AV_COMPLETE, &ev, sizeof(ev),
				     false);
	}
	return rc ? rc : 0;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	struct cxlfi_av *av = (struct cxlfi_av *)fav;
	int rc = 0;

	(void)flags;
	cxlfi_dom_lock(av->dom);
	for (size_t i = 0; i < count; i++) {
		fi_addr_t fa = fi_addr[i];

		if (fa >= av->count || !av->tab[fa].valid) {
			rc = -FI_EINVAL;
			continue;
		}
		av->tab[fa].valid = false;
		if (!av->tab[fa].net &&
		    av->tab[fa].addr.index < rev_of(av)->n &&
		    rev_of(av)->map[av->tab[fa].addr.index] == fa + 1)
			rev_of(av)->map[av->tab[fa].addr.index] = 0;
	}
	cxlfi_dom_unlock(av->dom);
	return rc;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fa, void *addr,
		     size_t *addrlen)
{
	struct cxlfi_av *av = (struct cxlfi_av *)fav;
	size_t n = *addrlen;

	if (fa >= av->count || !av->tab[fa].valid)
		return -FI_EINVAL;
	{
		struct cxlfi_netaddr full = { .a = av->tab[fa].addr };
		size_t len = cxlfi_addrlen();

		memcpy(full.net, av->tab[fa].netname, sizeof(full.net));
		memcpy(addr, &full, n < len ? n : len);
		*addrlen = len;
	}
	return 0;
}

static const char *av_straddr(struct fid_av *fav, const void *addr, char *buf,
			      size_t *len)
{
	const struct cxlfi_addr *a = addr;
	char tmp[96];
	int n;

	(void)fav;
	if (a->reserved & CXLFI_ADDR_NAMED)
		n = snprintf(tmp, sizeof(tmp), "cxl://host%u/svc.%08x%08x",
			     a->host, a->pad, a->gen);
	else if (a->reserved & CXLFI_ADDR_ANY)
		n = snprintf(tmp, sizeof(tmp), "cxl://host%u/any", a->host);
	else
		n = snprintf(tmp, sizeof(tmp), "cxl://host%u/ep%u.%u", a->host,
			     a->index, a->gen);
	if (*len)
		snprintf(buf, *len, "%s", tmp);
	*len = (size_t)n + 1;
	return buf;
}

/* The endpoint that serves (node, service), as fi_getinfo would name it. */
static int av_insertsvc(struct fid_av *fav, const char *node,
			const char *service, fi_addr_t *fi_addr, uint64_t flags,
			void *context)
{
	struct cxlfi_av *av = (struct cxlfi_av *)fav;
	struct cxlfi_addr a;

	if (!service && !node)
		return -FI_EINVAL;
	cxlfi_addr_named(av->dom->pool, service ? service : node, &a);
	return av_insert(fav, &a, 1, fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	(void)av;
	(void)node;
	(void)nodecnt;
	(void)service;
	(void)svccnt;
	(void)fi_addr;
	(void)flags;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = NULL,
};

int cxlfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **out, void *context)
{
	struct cxlfi_domain *d = (struct cxlfi_domain *)domain;
	struct cxlfi_av *av;

	if (attr && attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE &&
	    attr->type != FI_AV_MAP)
		return -FI_EINVAL;
	if (attr && (attr->flags & ~(uint64_t)FI_EVENT))
		return -FI_ENOSYS; /* FI_READ (shared AVs), FI_SYMMETRIC */
	av = calloc(1, sizeof(*av) + sizeof(struct av_rev));
	if (!av)
		return -FI_ENOMEM;
	rev_of(av)->n = cxlfi_params.max_eps;
	rev_of(av)->map = calloc(rev_of(av)->n, sizeof(fi_addr_t));
	if (!rev_of(av)->map) {
		free(av);
		return -FI_ENOMEM;
	}
	av->dom = d;
	av->events = attr && (attr->flags & FI_EVENT);
	av->type = attr && attr->type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
	av->fid.fid.fclass = FI_CLASS_AV;
	av->fid.fid.context = context;
	av->fid.fid.ops = &av_fi_ops;
	av->fid.ops = &av_ops;
	cxlfi_dom_ref(d, 1);
	*out = &av->fid;
	return 0;
}

const struct cxlfi_av_entry *cxlfi_av_get(struct cxlfi_av *av, fi_addr_t a)
{
	if (!av || a >= av->count || !av->tab[a].valid)
		return NULL;
	return &av->tab[a];
}

fi_addr_t cxlfi_av_reverse(struct cxlfi_av *av, uint32_t index)
{
	if (index == CXLFI_NET_SRC_UNKNOWN)
		return FI_ADDR_NOTAVAIL;
	if (index & CXLFI_NET_SRC)
		return index & ~CXLFI_NET_SRC;
	if (!av || index >= rev_of(av)->n || !rev_of(av)->map[index])
		return FI_ADDR_NOTAVAIL;
	return rev_of(av)->map[index] - 1;
}
