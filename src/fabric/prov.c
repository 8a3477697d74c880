/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Provider entry: fi_prov_ini, fi_getinfo, FI_CXL_* parameters and the
 * process-wide pool attachment.
 *
 * Loading into other libfabric cores: fi_version is set at load time from
 * the running core (a core skips providers older than the API the
 * application asks for); fi_info structures come from fi_allocinfo, so
 * they have the core's size; prov_name is left to the core.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cxlfi.h"

static void cxlfi_cleanup(void);
static int cxlfi_getinfo(uint32_t version, const char *node,
			 const char *service, uint64_t flags,
			 const struct fi_info *hints, struct fi_info **info);

struct fi_provider cxlfi_prov = {
	.name = CXLFI_NAME,
	.version = CXLFI_PROV_VERSION,
	.fi_version = FI_VERSION(1, 17),
	.getinfo = cxlfi_getinfo,
	.fabric = cxlfi_fabric_open,
	.cleanup = cxlfi_cleanup,
};

struct cxlfi_params cxlfi_params = {
	.max_eps = 256,
	.cell_size = 256,
	.ncells = 63, /* 192 + 63 x 256 B = 16320 B: one 16 KiB heap block */
	.inbox_poll = 64,
	.unexp_limit = 64u << 20,
	.inject_size = 4096,
	.bulk_min = 1024,
	.eager_max = 1024,
	.idle_polls = 200000,
	.idle_sleep_us = 50,
	.read_spin_ns = 2000,
	.hang_report_ms = 30000,
};

struct cxlfi_stats cxlfi_stats;

/* ---- the process-wide pool ------------------------------------------- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cxl_pool *pool;
static int pool_refs;

void cxlfi_stats_report(const struct cxl_coh_counters *c0)
{
	struct cxl_coh_counters c;

	if (!cxlfi_params.stats)
		return;
	cxl_coh_counters_get(&c);
	fprintf(stderr,
		"cxl-stats: sent %llu recv %llu bytes %llu flush_lines %llu "
		"inval_lines %llu fences %llu nt_stores %llu nt_loads %llu "
		"nt_lines %llu direct_rma %llu atomics %llu read_spins %llu "
		"spin_hits %llu polls %llu poll_inval_lines %llu "
		"poll_fences %llu poll_nt_loads %llu host %lld cost_ns %llu "
		"net_sent %llu net_recv %llu net_looks %llu net_quiet_looks %llu "
		"net_quiet_ns %llu\n",
		(unsigned long long)cxlfi_stats.sent,
		(unsigned long long)cxlfi_stats.recv,
		(unsigned long long)cxlfi_stats.bytes,
		(unsigned long long)(c.flush_lines - c0->flush_lines),
		(unsigned long long)(c.inval_lines - c0->inval_lines),
		(unsigned long long)(c.fences - c0->fences),
		(unsigned long long)(c.nt_stores - c0->nt_stores),
		(unsigned long long)(c.nt_loads - c0->nt_loads),
		(unsigned long long)(c.nt_lines - c0->nt_lines),
		(unsigned long long)cxlfi_stats.direct_rma,
		(unsigned long long)cxlfi_stats.atomics,
		(unsigned long long)cxlfi_stats.read_spins,
		(unsigned long long)cxlfi_stats.spin_hits,
		(unsigned long long)(c.polls - c0->polls),
		(unsigned long long)(c.poll_inval_lines - c0->poll_inval_lines),
		(unsigned long long)(c.poll_fences - c0->poll_fences),
		(unsigned long long)(c.poll_nt_loads - c0->poll_nt_loads),
		pool ? (long long)cxl_pool_host_id(pool) : -1ll,
		(unsigned long long)(c.cost_ns - c0->cost_ns),
		(unsigned long long)cxlfi_stats.net_sent,
		(unsigned long long)cxlfi_stats.net_recv,
		(unsigned long long)cxlfi_stats.net_looks,
		(unsigned long long)cxlfi_stats.net_quiet_looks,
		(unsigned long long)cxlfi_stats.net_quiet_ns);
}

/* The first successful probe keeps a reference until cleanup, so repeated
 * fi_getinfo calls do not attach and detach each time. */
static bool probe_ref;
static pid_t pool_pid; /* the process that attached pool */

/* the private pool of a network-only host (netonly_opts) */
static int netonly_fd = -1;
static char netonly_dir[64];

/*
 * The attachment we keep is no longer the one the environment names: the
 * process forked (the handle, its flocks and its slot are the parent's),
 * or the pool file was removed and made again, or CXL_HOST_ID or CXL_JOB
 * changed. A parent's handle is forgotten, never detached (that would
 * free the parent's slot); our own is released if only the probe holds
 * it. Called under pool_lock; -FI_EBUSY while endpoints still use it.
 */
static int drop_stale(const struct cxl_pool_opts *o)
{
	/* a network-only host's private pool is our memfd, which nothing
	 * can remove or replace (and whose /proc path has no real path) */
	if (!pool || (netonly_fd >= 0 && pool_pid == getpid()) ||
	    cxl_pool_matches(pool, o))
		return 0;
	if (pool_pid != getpid()) {
		pool = NULL;
		pool_refs = 0;
		probe_ref = false;
		return 0;
	}
	if (pool_refs == (probe_ref ? 1 : 0)) {
		cxl_pool_detach(pool);
		pool = NULL;
		pool_refs = 0;
		probe_ref = false;
		return 0;
	}
	cxlfi_report("the pool settings (CXL_POOL %s, CXL_HOST_ID, CXL_JOB) "
		     "changed while %d domain(s) of this process still use "
		     "pool %s: close them first",
		     o->path, pool_refs - (probe_ref ? 1 : 0),
		     cxl_pool_path(pool));
	return -FI_EBUSY;
}

/*
 * A network-only host (docs/multipool.md): no CXL_POOL but FI_CXL_NET
 * set. The provider still needs a pool for its endpoint objects, so the
 * process makes a private one: a memfd (gone when the process ends),
 * coherent (one host), formatted once, with its lock files in a private
 * run directory that cleanup removes. Its uuid is this process's alone,
 * so every peer is reached through the network link.
 */

static int netonly_opts(struct cxl_pool_opts *o)
{
	o->size = 64u << 20;
	o->create = 0;
	o->mode = CXL_COH_COHERENT;
	o->mode_set = 1;
	o->capacity = 1024;
	o->max_hosts = 1;
	o->max_procs = 64;
	o->host_id = CXL_HOST_AUTO; /* the only host of its pool */
	if (netonly_fd < 0) {
		snprintf(netonly_dir, sizeof(netonly_dir),
			 "/dev/shm/cxlfi-netonly-XXXXXX");
		netonly_fd = memfd_create("cxlfi-netonly", MFD_CLOEXEC);
		if (netonly_fd < 0 ||
		    ftruncate(netonly_fd, (off_t)o->size) != 0 ||
		    !mkdtemp(netonly_dir)) {
			cxlfi_report(
				"FI_CXL_NET=%s without CXL_POOL: cannot make "
				"the private pool of a network-only host "
				"(%s); set CXL_POOL, or free memory in "
				"/dev/shm",
				cxlfi_params.net, strerror(errno));
			if (netonly_fd >= 0)
				close(netonly_fd);
			netonly_fd = -1;
			return -FI_ENOMEM;
		}
		snprintf(o->path, sizeof(o->path), "/proc/self/fd/%d",
			 netonly_fd);
		snprintf(o->rundir, sizeof(o->rundir), "%s", netonly_dir);
		if (cxl_pool_format(o, 0)) {
			cxlfi_report("FI_CXL_NET=%s without CXL_POOL: cannot "
				     "format the private pool of a "
				     "network-only host: %s; set CXL_POOL",
				     cxlfi_params.net, cxl_errmsg());
			return -FI_ENOMEM;
		}
	}
	snprintf(o->path, sizeof(o->path), "/proc/self/fd/%d", netonly_fd);
	snprintf(o->rundir, sizeof(o->rundir), "%s", netonly_dir);
	return 0;
}

/* The pool this process uses: CXL_* settings, or on a network-only
 * host its private one. */
static int pool_opts(struct cxl_pool_opts *o)
{
	if (cxl_opts_from_env(o))
		return -FI_ENODEV;
	if (!o->path[0] && cxlfi_params.net[0])
		return netonly_opts(o) ? -FI_ENOMEM : 0;
	return 0;
}

bool cxlfi_netonly(void)
{
	return netonly_fd >= 0;
}

int cxlfi_pool_get(cxl_pool **out)
{
	int rc = 0;

	struct cxl_pool_opts o;

	pthread_mutex_lock(&pool_lock);
	if ((rc = pool_opts(&o))) {
		CXLFI_WARN(FI_LOG_CORE, "cannot attach the CXL pool: %s\n",
			   cxl_errmsg());
		pthread_mutex_unlock(&pool_lock);
		return rc;
	}
	if ((rc = drop_stale(&o))) {
		pthread_mutex_unlock(&pool_lock);
		return rc;
	}
	/* shared with libcxlmpi in this process: one mapping, so a buffer it
	 * allocates in the pool is pool memory to us (pointer passing) */
	if (!pool && cxl_pool_attach_shared(&o, &pool)) {
		CXLFI_WARN(FI_LOG_CORE, "cannot attach the CXL pool: %s\n",
			   cxl_errmsg());
		pool = NULL;
		rc = -FI_ENODEV;
	}
	if (!rc) {
		if (!pool_refs++)
			pool_pid = getpid();
		*out = pool;
		/* A coherent pool needs no fences, which is what one spanning
		 * message saves; a longer message in cells pipelines instead
		 * (the receiver copies the first cells out while the sender
		 * writes the next), so there the default is 512 B (measured:
		 * docs/benchmarks.md, "Decisions"). */
		if (cxl_pool_mode(pool) == CXL_COH_COHERENT &&
		    !getenv("FI_CXL_EAGER_MAX"))
			cxlfi_params.eager_max = 512;
	}
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

void cxlfi_pool_put(void)
{
	pthread_mutex_lock(&pool_lock);
	if (pool_refs > 0 && --pool_refs == 0) {
		cxl_pool_detach(pool);
		pool = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
}

/* Does FI_PROVIDER ask for this provider by name? */
static bool asked_for(void)
{
	const char *s = getenv("FI_PROVIDER");
	size_t n = strlen(CXLFI_NAME);

	while (s && *s) {
		size_t len = strcspn(s, ",");

		if (len == n && !strncmp(s, CXLFI_NAME, n))
			return true;
		s += len;
		if (*s == ',')
			s++;
	}
	return false;
}

/*
 * Can the provider be offered? Why not goes to stderr once per process
 * (an MPI library says only "getinfo failed"): a bad CXL_* value or a pool
 * that cannot be attached always; an unset CXL_POOL only where
 * FI_PROVIDER names cxl (elsewhere the provider is one of many that
 * libfabric tries, and silence is right).
 */
int cxlfi_pool_probe(void)
{
	static bool said;
	struct cxl_pool_opts o;
	cxl_pool *p;

	if (cxl_opts_from_env(&o)) {
		if (!said)
			cxlfi_report("provider cxl disabled: %s", cxl_errmsg());
		said = true;
		return -FI_ENODATA;
	}
	if (!o.path[0] && cxlfi_params.net[0] && pool_opts(&o))
		return -FI_ENODATA; /* said why */
	if (!o.path[0]) {
		if (!said && asked_for())
			cxlfi_report("provider cxl disabled: FI_PROVIDER names "
				     "it but no pool is configured; set "
				     "CXL_POOL to /dev/daxX.Y or a pool file "
				     "(docs/env.md)");
		else
			CXLFI_INFO(FI_LOG_CORE,
				   "provider cxl disabled: no pool configured; "
				   "set CXL_POOL to /dev/daxX.Y or a pool "
				   "file\n");
		said = true;
		return -FI_ENODATA;
	}
	if (cxlfi_pool_get(&p)) {
		if (!said)
			cxlfi_report("provider cxl disabled: cannot attach "
				     "the pool %s: %s",
				     o.path, cxl_errmsg());
		said = true;
		return -FI_ENODATA;
	}
	/* one reference for the probe: keep the first (cxlfi_pool_get made
	 * it afresh if the one we held was stale) */
	pthread_mutex_lock(&pool_lock);
	if (probe_ref)
		pool_refs--;
	probe_ref = true;
	pthread_mutex_unlock(&pool_lock);
	return 0;
}

static void cxlfi_cleanup(void)
{
	if (probe_ref) {
		probe_ref = false;
		cxlfi_pool_put();
	}
	/* a network-only host's private pool: the memfd goes with the
	 * process; its run directory is ours to remove */
	if (netonly_fd >= 0 && !pool) {
		struct cxl_pool_opts o;

		cxl_opts_default(&o);
		if (!netonly_opts(&o))
			cxl_pool_remove(&o, 1);
		rmdir(netonly_dir);
		close(netonly_fd);
		netonly_fd = -1;
	}
}

/* ---- parameters -------------------------------------------------------- */

/* false once any FI_CXL_* value was invalid: the provider is then not
 * offered (an invalid value is never replaced by a default silently). */
static bool params_ok = true;

/*
 * FI_CXL_<name>: an integer in C syntax (0x allowed) within lo..hi. The
 * raw variable is parsed here, not by libfabric, whose parser takes
 * garbage and overflow silently; the definition still lists it in
 * fi_info -e. A bad value is reported on stderr and disables the
 * provider.
 */
static void param_size(const char *name, const char *help, size_t *v, size_t lo,
		       size_t hi)
{
	char var[64], *end;
	unsigned long long x;
	const char *s;

	fi_param_define(&cxlfi_prov, name, FI_PARAM_SIZE_T, "%s (default %zu)",
			help, *v);
	snprintf(var, sizeof(var), "FI_CXL_%s", name);
	if (!(s = getenv(var)))
		return;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (!*s || *end || *s == '-' || errno == ERANGE) {
		cxlfi_report(
			"%s='%s' is not a number of %zu..%zu; the provider "
			"is disabled until it is fixed or unset (fi_cxl(7))",
			var, s, lo, hi);
		params_ok = false;
	} else if (x < lo || x > hi) {
		cxlfi_report("%s=%s is out of range %zu..%zu; the provider is "
			     "disabled until it is fixed or unset (fi_cxl(7))",
			     var, s, lo, hi);
		params_ok = false;
	} else {
		*v = (size_t)x;
	}
}

/* A setting that moved to another variable: refused, never ignored. */
static void param_moved(const char *old, const char *now, const char *why)
{
	if (!getenv(old))
		return;
	cxlfi_report("%s is no longer read: %s. Set %s instead and unset %s; "
		     "the provider is disabled until then (fi_cxl(7))",
		     old, why, now, old);
	params_ok = false;
}

/* FI_CXL_<name>: 0/1, yes/no, true/false or on/off, as libfabric's
 * booleans; anything else is reported and disables the provider. */
static void param_bool(const char *name, const char *help, int *v)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };
	char var[64];
	const char *s;

	fi_param_define(&cxlfi_prov, name, FI_PARAM_BOOL, "%s (default %d)",
			help, *v);
	snprintf(var, sizeof(var), "FI_CXL_%s", name);
	if (!(s = getenv(var)))
		return;
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
			*v = !strcasecmp(s, yes[i]);
			return;
		}
	}
	cxlfi_report("%s='%s' is not a boolean (0/1, yes/no, true/false, "
		     "on/off); the provider is disabled until it is fixed or "
		     "unset (fi_cxl(7))",
		     var, s);
	params_ok = false;
}

/*
 * FI_CXL_NET: the network provider that carries peers outside our pool
 * (docs/multipool.md), a libfabric provider name such as "tcp;ofi_rxm",
 * or "none" (the default). Its peer API needs libfabric 2.3: under an
 * older core the provider stays pool-only and says so.
 */
static void param_net(void)
{
	const char *s = getenv("FI_CXL_NET");
	uint32_t v;

	fi_param_define(&cxlfi_prov, "NET", FI_PARAM_STRING,
			"network provider for peers outside the pool, e.g. "
			"tcp;ofi_rxm (default none)");
	cxlfi_params.net[0] = 0;
	if (!s || !strcmp(s, "none"))
		return;
	if (!*s || strlen(s) >= sizeof(cxlfi_params.net) ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_;") != strlen(s)) {
		cxlfi_report("FI_CXL_NET='%s' is not a libfabric provider name "
			     "(such as tcp;ofi_rxm, at most %zu characters) "
			     "or none; the provider is disabled until it is "
			     "fixed or unset (fi_cxl(7))",
			     s, sizeof(cxlfi_params.net) - 1);
		params_ok = false;
		return;
	}
	if (!cxlfi_net_version_ok(&v)) {
		static bool said;

		if (!said)
			cxlfi_report("FI_CXL_NET=%s: network peers need "
				     "libfabric 2.3 or later for its peer "
				     "API, and the libfabric loaded is %u.%u; "
				     "the provider runs pool-only (load a "
				     "newer libfabric, e.g. the MPICH wheel's, "
				     "or unset FI_CXL_NET)",
				     s, FI_MAJOR(v), FI_MINOR(v));
		said = true;
		return;
	}
	snprintf(cxlfi_params.net, sizeof(cxlfi_params.net), "%s", s);
}

/*
 * An eager message must fit the cells a channel always gets back from an
 * idle receiver: FI_CXL_CELLS less the head batch (a quarter) plus one.
 * The default shrinks to fit (only mid-size speed changes); a value the
 * user set is refused instead.
 */
static void check_eager_max(void)
{
	size_t fit = cxlfi_params.ncells - cxlfi_params.ncells / 4 + 1;

	if (!getenv("FI_CXL_EAGER_MAX")) {
		while (cxlfi_params.eager_max && cxlfi_chan_span() > fit)
			cxlfi_params.eager_max /= 2;
		return;
	}
	if (cxlfi_chan_span() <= fit)
		return;
	cxlfi_report("FI_CXL_EAGER_MAX=%zu needs %zu cells of "
		     "FI_CXL_CELL_SIZE=%zu bytes, more than a channel of "
		     "FI_CXL_CELLS=%zu holds at once (%zu): set "
		     "FI_CXL_EAGER_MAX to at most %zu, or set FI_CXL_CELLS or "
		     "FI_CXL_CELL_SIZE higher. The provider is disabled until "
		     "it is fixed",
		     cxlfi_params.eager_max, cxlfi_chan_span(),
		     cxlfi_params.cell_size, cxlfi_params.ncells, fit,
		     cxl_ring_cell_payload(
			     (uint32_t)(fit * cxlfi_params.cell_size)) -
			     CXLFI_EAGER_HDR_MAX);
	params_ok = false;
}

static void read_params(void)
{
	param_size("MAX_EPS", "endpoint indices per pool",
		   &cxlfi_params.max_eps, 2, 65536);
	param_size("CELL_SIZE", "bytes per ring cell (multiple of 64)",
		   &cxlfi_params.cell_size, 128, 1u << 20);
	param_size("CELLS", "cells per channel ring", &cxlfi_params.ncells, 4,
		   1u << 16);
	param_size("INBOX_POLL", "progress calls between inbox scans",
		   &cxlfi_params.inbox_poll, 1, 1u << 20);
	param_size("UNEXP_LIMIT", "bytes of unexpected messages buffered",
		   &cxlfi_params.unexp_limit, 4096, SIZE_MAX / 2);
	param_moved("FI_CXL_PEER_TIMEOUT_MS", "CXL_PEER_TIMEOUT_MS",
		    "the peer timeout is one setting of libcxlshm's liveness "
		    "service, for the provider and libcxlmpi alike");
	param_size("BULK_MIN",
		   "messages of this many bytes or more use the bulk area",
		   &cxlfi_params.bulk_min, 1024, (size_t)1 << 40);
	param_size("EAGER_MAX",
		   "messages up to this many bytes go as one ring message of "
		   "stamped lines, spanning cells",
		   &cxlfi_params.eager_max, 0, 65536);
	param_size("INJECT_SIZE",
		   "largest message or RMA write sent with FI_INJECT (bytes)",
		   &cxlfi_params.inject_size, 0, CXLFI_INJECT_MAX);
	param_size(
		"IDLE_POLLS",
		"empty CQ reads in a row before an idle rank starts to sleep",
		&cxlfi_params.idle_polls, 1, (size_t)1 << 40);
	param_size("IDLE_SLEEP_US", "longest sleep of an idle CQ read (us)",
		   &cxlfi_params.idle_sleep_us, 0, 1000000);
	param_size("READ_SPIN_NS",
		   "how long an empty CQ read inside a wait loop keeps "
		   "polling before it returns (ns)",
		   &cxlfi_params.read_spin_ns, 0, 1000000);
	param_size("HANG_REPORT_MS",
		   "a CQ that waits this long with operations pending logs "
		   "what they are (ms; 0: never)",
		   &cxlfi_params.hang_report_ms, 0, (size_t)1 << 40);
	param_bool("STATS",
		   "print message and coherence counts at fabric close",
		   &cxlfi_params.stats);
	param_net();
	if (cxlfi_params.cell_size % 64) {
		cxlfi_report("FI_CXL_CELL_SIZE=%zu is not a multiple of 64; "
			     "the provider is disabled until it is fixed",
			     cxlfi_params.cell_size);
		params_ok = false;
	} else {
		check_eager_max();
	}
}

/* ---- fi_getinfo -------------------------------------------------------- */

/* Can we satisfy these hints? Each refusal is logged with its reason
 * (FI_LOG_LEVEL=info), so a user can see why cxl was not offered. */
static int hints_ok(const struct fi_info *h)
{
	const char *why = NULL;

	if (!h)
		return 1;
	if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC &&
	    h->ep_attr->type != FI_EP_RDM)
		why = "only FI_EP_RDM endpoints are offered";
	else if (h->caps & ~CXLFI_CAPS)
		why = "capabilities asked for include unsupported ones "
		      "(FI_TRIGGER, FI_COLLECTIVE, ...)";
	else if (h->fabric_attr && h->fabric_attr->name &&
		 strcmp(h->fabric_attr->name, CXLFI_NAME))
		why = "another fabric name was asked for";
	else if (h->domain_attr && h->domain_attr->name &&
		 strcmp(h->domain_attr->name, CXLFI_NAME))
		why = "another domain name was asked for";
	else if (h->ep_attr && h->ep_attr->max_msg_size > CXLFI_MAX_MSG)
		why = "max_msg_size above 1 TiB";
	else if (h->addr_format != FI_FORMAT_UNSPEC)
		why = "only the provider's own address format is supported";
	else if ((h->tx_attr && (h->tx_attr->msg_order & ~CXLFI_MSG_ORDER)) ||
		 (h->rx_attr && (h->rx_attr->msg_order & ~CXLFI_MSG_ORDER)))
		why = "message ordering asked for includes unsupported bits "
		      "(FI_ORDER_DATA, FI_ORDER_RAS, ...)";
	else if (h->domain_attr &&
		 h->domain_attr->data_progress == FI_PROGRESS_AUTO)
		why = "FI_PROGRESS_AUTO data progress: data moves only when "
		      "the application calls in (manual progress)";
	else if (h->domain_attr && (h->domain_attr->caps & FI_SHARED_AV))
		why = "FI_SHARED_AV is not offered";
	if (why)
		CXLFI_INFO(FI_LOG_CORE,
			   "hints not supported: %s (caps %#llx)\n", why,
			   (unsigned long long)h->caps);
	return !why;
}

/*
 * Source and destination addresses (addr.c). A service names an endpoint:
 * with FI_SOURCE it is the one the caller will open, without it the peer
 * to reach. A node alone names a host, not an endpoint: the source is
 * then this host's local address, and there is no destination. Addresses
 * in the hints must be cxl addresses of this pool.
 */
static int fill_addrs(struct fi_info *fi, const char *service, uint64_t flags,
		      const struct fi_info *hints)
{
	struct cxlfi_addr *src, *dst = NULL;
	const char *bad = NULL;
	bool want_dst;
	cxl_pool *p;

	if (cxlfi_pool_get(&p))
		return -FI_ENODATA;
	if (hints && hints->src_addr &&
	    !cxlfi_addr_is_ours(p, hints->src_addr, hints->src_addrlen))
		bad = "source";
	else if (hints && hints->dest_addr &&
		 !cxlfi_addr_is_ours(p, hints->dest_addr, hints->dest_addrlen))
		bad = "destination";
	if (bad) {
		CXLFI_INFO(FI_LOG_CORE,
			   "hints not supported: the %s address is not a cxl "
			   "address of this pool (CXL_POOL)\n",
			   bad);
		cxlfi_pool_put();
		return -FI_ENODATA;
	}
	want_dst = !(flags & FI_SOURCE) &&
		   (service || (hints && hints->dest_addr));
	/* with FI_CXL_NET an address has the network part after it (zero
	 * here: these name no endpoint yet) */
	src = calloc(1, cxlfi_addrlen());
	if (want_dst)
		dst = calloc(1, cxlfi_addrlen());
	if (!src || (want_dst && !dst)) {
		free(src);
		free(dst);
		cxlfi_pool_put();
		return -FI_ENOMEM;
	}
	if ((flags & FI_SOURCE) && service)
		cxlfi_addr_named(p, service, src);
	else if (hints && hints->src_addr)
		memcpy(src, hints->src_addr, cxlfi_addrlen());
	else
		cxlfi_addr_local(p, src);
	if (dst && service)
		cxlfi_addr_named(p, service, dst);
	else if (dst)
		memcpy(dst, hints->dest_addr, cxlfi_addrlen());
	cxlfi_pool_put();
	fi->src_addr = src;
	fi->src_addrlen = cxlfi_addrlen();
	fi->dest_addr = dst;
	fi->dest_addrlen = dst ? cxlfi_addrlen() : 0;
	return 0;
}

/* A node names a host: one that does not resolve (a typo, a host that is
 * not there) is refused like any provider refuses it, not ignored. */
static bool node_ok(const char *node)
{
	struct addrinfo *ai = NULL;
	int rc;

	if (!node)
		return true;
	rc = getaddrinfo(node, NULL, NULL, &ai);
	if (ai)
		freeaddrinfo(ai);
	if (rc)
		CXLFI_INFO(FI_LOG_CORE, "node '%s' does not resolve: %s\n",
			   node, gai_strerror(rc));
	return !rc;
}

/*
 * Memory registration mode. Messaging needs no registration, so the modes
 * asked for are accepted as they are. The pre-1.5 API (and the deprecated
 * values in later ones) has two exclusive modes instead of bits: basic
 * (virtual addresses, provider keys) and scalable (offsets, keys the
 * application chooses); both are offered, scalable when unspecified.
 */
static int mr_mode_for(uint32_t version, const struct fi_info *hints)
{
	int m = hints && hints->domain_attr ? hints->domain_attr->mr_mode : 0;

	if (m & (FI_MR_BASIC | FI_MR_SCALABLE))
		return m & FI_MR_BASIC ? FI_MR_BASIC : FI_MR_SCALABLE;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return FI_MR_SCALABLE;
	/* the bits returned are requirements (fi_mr(3)), and the provider
	 * has none: regions are addressed by offset with the keys the
	 * application chooses, local buffers need no registration */
	(void)m;
	return 0;
}

static int cxlfi_getinfo(uint32_t version, const char *node,
			 const char *service, uint64_t flags,
			 const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *fi;
	uint64_t caps;
	int rc;

	*info = NULL;
	if (!params_ok || cxlfi_pool_probe()) {
		cxlfi_report_linger();
		return -FI_ENODATA;
	}
	if (!hints_ok(hints) || !node_ok(node))
		return -FI_ENODATA;
	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	if ((rc = fill_addrs(fi, service, flags, hints))) {
		fi_freeinfo(fi);
		return rc;
	}
	caps = hints && hints->caps ? hints->caps : CXLFI_CAPS;
	/* FI_SEND/FI_RECV are implied by MSG/TAGGED when not given */
	if (!(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	fi->caps = caps | FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;

	/* the templates (attr.c), then what hints and parameters decide */
	*fi->tx_attr = cxlfi_tx_attr;
	*fi->rx_attr = cxlfi_rx_attr;
	*fi->ep_attr = cxlfi_ep_attr;
	*fi->domain_attr = cxlfi_domain_attr;
	*fi->fabric_attr = cxlfi_fabric_attr;

	fi->tx_attr->caps &= fi->caps;
	/* Sends complete once the data is in the pool (transmit complete),
	 * or, when asked, once the receiver has consumed it (delivery
	 * complete: an acknowledgement token, bulk.c). FI_COMPLETION is
	 * honoured as asked: with FI_SELECTIVE_COMPLETION it decides whether
	 * plain fi_send()/fi_recv() report at all. */
	if (hints && hints->tx_attr) {
		if (hints->tx_attr->op_flags & FI_DELIVERY_COMPLETE)
			fi->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
		fi->tx_attr->op_flags |=
			hints->tx_attr->op_flags & FI_COMPLETION;
	}
	/* An inject is copied out before the call returns: into ring cells or
	 * the transfer area when there is room, else into a queued heap copy,
	 * so any size works and FI_CXL_INJECT_SIZE bounds the copy. MPICH
	 * sends messages up to this size with fi_tinject, which needs no
	 * completion, instead of a send with FI_DELIVERY_COMPLETE (an
	 * acknowledgement from the receiver). */
	fi->tx_attr->inject_size = cxlfi_params.inject_size;
	fi->tx_attr->size = cxlfi_params.ncells;

	fi->rx_attr->caps &= fi->caps;
	/* default receive flags: whether plain receives report, and
	 * whether they are multi-receive buffers (fi_multi_recv's way) */
	if (hints && hints->rx_attr)
		fi->rx_attr->op_flags =
			hints->rx_attr->op_flags &
			(FI_COMPLETION |
			 (fi->caps & FI_MULTI_RECV ? FI_MULTI_RECV : 0));
	fi->rx_attr->total_buffered_recv = cxlfi_params.unexp_limit;

	fi->domain_attr->name = strdup(CXLFI_NAME);
	if (hints && hints->domain_attr &&
	    hints->domain_attr->threading != FI_THREAD_UNSPEC)
		fi->domain_attr->threading = hints->domain_attr->threading;
	/* control operations (AV inserts, enabling) complete in the call:
	 * automatic if asked for, as nothing waits for progress */
	if (hints && hints->domain_attr &&
	    hints->domain_attr->control_progress == FI_PROGRESS_AUTO)
		fi->domain_attr->control_progress = FI_PROGRESS_AUTO;
	if (hints && hints->domain_attr)
		fi->domain_attr->av_type = hints->domain_attr->av_type;
	fi->domain_attr->mr_mode = mr_mode_for(version, hints);
	fi->domain_attr->ep_cnt = cxlfi_params.max_eps;

	fi->fabric_attr->name = strdup(CXLFI_NAME);
	fi->fabric_attr->api_version = version;
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return -FI_ENOMEM;
	}
	*info = fi;
	return 0;
}

/* Exported entry point; the running core's version becomes ours, so that
 * newer cores (2.x) do not skip the provider as too old. */
struct fi_provider *fi_prov_ini(void);
FI_EXT_INI
{
	cxlfi_prov.fi_version = fi_version();
	read_params();
	return &cxlfi_prov;
}
