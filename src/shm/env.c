/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Attachment options and the CXL_* environment variables that set them.
 * docs/env.md lists every variable; keep it in step with this file.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DEF_POOL_SIZE (1ull << 30)
#define DEF_CAPACITY (1ull << 20)
#define DEF_MAX_HOSTS 64u
#define DEF_MAX_PROCS 4096u
#define DEF_LOCK_TIMEOUT_MS 30000u
#define DEF_PEER_TIMEOUT_MS 10000u
#define MAX_HOSTS_LIMIT 4096u
#define MAX_PROCS_LIMIT (1u << 20)
#define MAX_CAPACITY (1ull << 31)

CXL_EXPORT void cxl_opts_default(struct cxl_pool_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = DEF_POOL_SIZE;
	o->create = 1;
	o->mode = CXL_COH_COHERENT;
	o->insn = CXL_FLUSH_AUTO;
	o->host_id = CXL_HOST_AUTO;
	strcpy(o->job, CXL_JOB_GLOBAL);
	o->capacity = DEF_CAPACITY;
	o->max_hosts = DEF_MAX_HOSTS;
	o->max_procs = DEF_MAX_PROCS;
	o->lock_timeout_ms = DEF_LOCK_TIMEOUT_MS;
	o->peer_timeout_ms = DEF_PEER_TIMEOUT_MS;
	strcpy(o->rundir, "/dev/shm");
	cxl_cost_preset("none", &o->cost);
}

CXL_EXPORT int cxl_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return CXL_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return CXL_EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		end++;
		break;
	case 'M':
		shift = 20;
		end++;
		break;
	case 'G':
		shift = 30;
		end++;
		break;
	case 'T':
		shift = 40;
		end++;
		break;
	default:
		return CXL_EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if ((*end == 'B' || *end == 'b') && shift)
		end++;
	if (*end != '\0')
		return CXL_EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return CXL_EINVAL;
	*out = (uint64_t)v << shift;
	return CXL_OK;
}

static int env_u64(const char *var, uint64_t lo, uint64_t hi, uint64_t *out,
		   bool size_suffix)
{
	const char *s = getenv(var);
	uint64_t v;
	char *end;

	if (!s)
		return CXL_OK;
	if (size_suffix) {
		if (cxl_parse_size(s, &v) != CXL_OK)
			return cxl_seterr(CXL_EENV,
					  "%s='%s' is not a size: use a number "
					  "with an optional K/M/G/T suffix, "
					  "e.g. %s=256M",
					  var, s, var);
	} else {
		errno = 0;
		v = strtoull(s, &end, 10);
		if (!isdigit((unsigned char)*s) || errno || *end)
			return cxl_seterr(CXL_EENV,
					  "%s='%s' is not a number: use a "
					  "whole number from %llu to %llu",
					  var, s, (unsigned long long)lo,
					  (unsigned long long)hi);
	}
	if (v < lo || v > hi)
		return cxl_seterr(CXL_EENV,
				  "%s=%s is out of range: use a value from "
				  "%llu to %llu",
				  var, s, (unsigned long long)lo,
				  (unsigned long long)hi);
	*out = v;
	return CXL_OK;
}

static int env_str(const char *var, char *dst, size_t cap)
{
	const char *s = getenv(var);

	if (!s)
		return CXL_OK;
	if (!*s)
		return cxl_seterr(CXL_EENV,
				  "%s is set but empty: unset it or "
				  "give a value",
				  var);
	if (strlen(s) >= cap)
		return cxl_seterr(CXL_EENV,
				  "%s is %zu bytes long: use at most %zu "
				  "bytes",
				  var, strlen(s), cap - 1);
	strcpy(dst, s);
	return CXL_OK;
}

static int env_choice(const char *var, const char *const *names, int n,
		      int *out)
{
	const char *s = getenv(var);
	char list[128] = "";

	if (!s)
		return CXL_OK;
	for (int i = 0; i < n; i++) {
		if (!strcmp(s, names[i])) {
			*out = i;
			return CXL_OK;
		}
		strcat(list, i ? "|" : "");
		strcat(list, names[i]);
	}
	return cxl_seterr(CXL_EENV, "%s='%s' is not valid: use one of %s", var,
			  s, list);
}

/* Bounds of the cost model's overrides (docs/env.md) */
#define COST_NS_MAX 10000000u /* 10 ms */
#define COST_BW_MIN 0.01
#define COST_BW_MAX 10000.0

/* CXL_COST_MODEL and its overrides; docs/costmodel.md */
static int cost_from_env(struct cxl_cost_params *c)
{
	static const char *const ns_vars[] = { "CXL_COST_LOAD_NS",
					       "CXL_COST_WB_NS",
					       "CXL_COST_NT_NS",
					       "CXL_COST_FENCE_NS" };
	uint32_t *ns_fields[] = { &c->load_ns, &c->wb_ns, &c->nt_ns,
				  &c->fence_ns };
	const char *model = getenv("CXL_COST_MODEL");
	const char *bw = getenv("CXL_COST_BW_GBS");
	char list[128] = "none";
	uint64_t v;
	int rc;

	if (model && cxl_cost_preset(model, c) != CXL_OK) {
		for (unsigned i = 0; cxl_cost_preset_name(i); i++) {
			strcat(list, "|");
			strcat(list, cxl_cost_preset_name(i));
		}
		return cxl_seterr(CXL_EENV,
				  "CXL_COST_MODEL='%s' is not valid: use one "
				  "of %s (docs/costmodel.md)",
				  model, list);
	}
	if (!strcmp(c->name, "none")) {
		for (unsigned i = 0; i < 4; i++)
			if (getenv(ns_vars[i]))
				return cxl_seterr(
					CXL_EENV,
					"%s is set but CXL_COST_MODEL "
					"is not: set CXL_COST_MODEL "
					"to the preset it modifies, "
					"or unset %s",
					ns_vars[i], ns_vars[i]);
		if (bw)
			return cxl_seterr(CXL_EENV,
					  "CXL_COST_BW_GBS is set but "
					  "CXL_COST_MODEL is not: set "
					  "CXL_COST_MODEL to the preset it "
					  "modifies, or unset CXL_COST_BW_GBS");
		return CXL_OK;
	}
	for (unsigned i = 0; i < 4; i++) {
		v = *ns_fields[i];
		if ((rc = env_u64(ns_vars[i], 0, COST_NS_MAX, &v, false)))
			return rc;
		*ns_fields[i] = (uint32_t)v;
	}
	if (bw) {
		char *end;
		double d;

		errno = 0;
		d = strtod(bw, &end);
		if (!isdigit((unsigned char)*bw) || errno || *end ||
		    !isfinite(d) || d < COST_BW_MIN || d > COST_BW_MAX)
			return cxl_seterr(CXL_EENV,
					  "CXL_COST_BW_GBS='%s' is not valid: "
					  "give the device bandwidth in GB/s, "
					  "a number from %g to %g",
					  bw, COST_BW_MIN, COST_BW_MAX);
		c->bw_gbs = d;
	}
	return CXL_OK;
}

CXL_EXPORT int cxl_opts_from_env(struct cxl_pool_opts *o)
{
	static const char *const modes[] = { "coherent", "flush", "uncached",
					     "emulated" };
	static const char *const insns[] = { "auto", "clflushopt", "clwb",
					     "clflush" };
	uint64_t v;
	int c, rc;

	cxl_opts_default(o);
	if ((rc = env_str("CXL_POOL", o->path, sizeof(o->path))))
		return rc;
	if ((rc = env_u64("CXL_POOL_SIZE", POOL_MIN_SIZE, UINT64_MAX / 2,
			  &o->size, true)))
		return rc;
	v = (uint64_t)o->create;
	if ((rc = env_u64("CXL_POOL_CREATE", 0, 1, &v, false)))
		return rc;
	o->create = (int)v;
	c = -1;
	if ((rc = env_choice("CXL_COHERENCE", modes, 4, &c)))
		return rc;
	if (c >= 0) {
		o->mode = (enum cxl_coh_mode)c;
		o->mode_set = 1;
	}
	c = (int)o->insn;
	if ((rc = env_choice("CXL_FLUSH_INSN", insns, 4, &c)))
		return rc;
	o->insn = (enum cxl_flush_insn)c;
	{
		const char *id = getenv("CXL_HOST_ID");

		/* "auto" (or unset): claim this machine's slot in the pool */
		if (id && strcmp(id, "auto")) {
			if ((rc = env_u64("CXL_HOST_ID", 0, MAX_HOSTS_LIMIT - 1,
					  &v, false)))
				return cxl_seterr(rc,
						  "CXL_HOST_ID='%s' is not "
						  "valid: unset it (or set "
						  "'auto') to get this host's "
						  "id from the pool, or give "
						  "an id from 0 to %u",
						  id, MAX_HOSTS_LIMIT - 1);
			o->host_id = (uint32_t)v;
		}
	}
	if ((rc = env_str("CXL_HOST_KEY", o->host_key, sizeof(o->host_key))))
		return rc;
	if ((rc = env_str("CXL_JOB", o->job, sizeof(o->job))))
		return rc;
	if ((rc = env_u64("CXL_ARENA_CAPACITY", 16, MAX_CAPACITY, &o->capacity,
			  true)))
		return rc;
	v = o->max_hosts;
	if ((rc = env_u64("CXL_MAX_HOSTS", 1, MAX_HOSTS_LIMIT, &v, false)))
		return rc;
	o->max_hosts = (uint32_t)v;
	v = o->max_procs;
	if ((rc = env_u64("CXL_MAX_PROCS", 1, MAX_PROCS_LIMIT, &v, false)))
		return rc;
	o->max_procs = (uint32_t)v;
	v = o->lock_timeout_ms;
	if ((rc = env_u64("CXL_LOCK_TIMEOUT_MS", 1, 3600000, &v, false)))
		return rc;
	o->lock_timeout_ms = (uint32_t)v;
	/* at least 3 beats (CXL_BEAT_MS), at most a day */
	v = o->peer_timeout_ms;
	if ((rc = env_u64("CXL_PEER_TIMEOUT_MS", 300, 86400000, &v, false)))
		return rc;
	o->peer_timeout_ms = (uint32_t)v;
	if ((rc = env_str("CXL_RUNDIR", o->rundir, sizeof(o->rundir))))
		return rc;
	/* Polling knobs are read by sync.c; validate them here so a bad
	 * value stops the attach instead of being ignored. */
	if ((rc = env_u64("CXL_POLL_SPIN", 0, 100000000, &v, false)) ||
	    (rc = env_u64("CXL_POLL_MAX_SLEEP_US", 0, 1000000, &v, false)))
		return rc;
	return cost_from_env(&o->cost);
}

CXL_EXPORT const char *cxl_coh_mode_name(enum cxl_coh_mode m)
{
	switch (m) {
	case CXL_COH_COHERENT:
		return "coherent";
	case CXL_COH_FLUSH:
		return "flush";
	case CXL_COH_UNCACHED:
		return "uncached";
	case CXL_COH_EMULATED:
		return "emulated";
	}
	return "?";
}

CXL_EXPORT const char *cxl_flush_insn_name(enum cxl_flush_insn i)
{
	switch (i) {
	case CXL_FLUSH_AUTO:
		return "auto";
	case CXL_FLUSH_CLFLUSHOPT:
		return "clflushopt";
	case CXL_FLUSH_CLWB:
		return "clwb";
	case CXL_FLUSH_CLFLUSH:
		return "clflush";
	}
	return "?";
}
