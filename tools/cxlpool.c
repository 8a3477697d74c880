/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cxlpool: administer a cxlshm pool.
 *
 *   cxlpool format [POOL] [--size S] [--capacity N] [--max-hosts N]
 *                         [--max-procs N] [--force]
 *   cxlpool info   [POOL]
 *   cxlpool ls     [POOL] [--job JOB]
 *   cxlpool gc     [POOL] [--dead-host N]
 *   cxlpool rm     [POOL] [NAME...] [--force]
 *   cxlpool fsck   [POOL] [--repair]
 *
 * POOL defaults to $CXL_POOL; every other CXL_* variable applies too
 * (docs/env.md). Exit status: 0 success, 1 operation failed, 2 usage.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxlshm/cxlshm.h"

static void usage(FILE *f)
{
	fputs("usage: cxlpool COMMAND [POOL] [options]\n"
	      "\n"
	      "commands:\n"
	      "  format   create or erase the pool and write a new layout\n"
	      "           --size S        size of a new pool file (e.g. 1G)\n"
	      "           --capacity N    object capacity (default 1048576)\n"
	      "           --max-hosts N   host table entries (default 64)\n"
	      "           --max-procs N   process table entries (default 4096)\n"
	      "           --force         even while processes are attached\n"
	      "  info     header, geometry, usage, hosts and processes\n"
	      "  ls       list objects (of every job, or --job JOB)\n"
	      "  gc       reclaim dead processes of this host and the objects\n"
	      "           of jobs with no live process\n"
	      "           --dead-host N   first declare host N dead (it crashed\n"
	      "                           or was rebooted): frees its lock\n"
	      "                           ticket, processes and job objects;\n"
	      "                           refused while its heartbeat moves,\n"
	      "                           unless --force\n"
	      "  rm       with NAMEs: destroy those objects of job --job JOB\n"
	      "           (default $CXL_JOB, else global)\n"
	      "           without: remove the pool and its run files\n"
	      "           --force         remove even while processes attach\n"
	      "  fsck     check the object table, index and allocator against\n"
	      "           each other and list what is inconsistent; writes\n"
	      "           nothing (exit 1 if anything is)\n"
	      "           --repair        then rebuild the index and allocator\n"
	      "                           from the object table\n"
	      "\n"
	      "POOL defaults to $CXL_POOL. CXL_HOST_ID, CXL_JOB, CXL_RUNDIR\n"
	      "and the other variables of docs/env.md apply.\n",
	      f);
}

/* gc --dead-host: how long a host's heartbeat is watched (3 beats) */
#define ALIVE_WINDOW_MS 350u

static int fail(const char *what)
{
	fprintf(stderr, "cxlpool %s: %s\n", what, cxl_errmsg());
	return 1;
}

static const char *human(uint64_t v, char *buf, size_t n)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int i = 0;

	while (d >= 1024 && i < 4) {
		d /= 1024;
		i++;
	}
	snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", d, u[i]);
	return buf;
}

static int print_proc(const struct cxl_proc_stat *st, void *arg)
{
	(void)arg;
	printf("  host %-4u %-20s pid %-8u job %-20s %s\n", st->host,
	       st->nodename, st->pid, st->job,
	       st->alive < 0 ? "(other host)"
	       : st->alive   ? "alive"
			     : "DEAD (run cxlpool gc)");
	return 0;
}

static int print_host(const struct cxl_host_stat *st, void *arg)
{
	(void)arg;
	printf("  host %-4u %-20s %-22s %3u proc%s %s%s\n", st->id,
	       st->state == CXL_HOST_INCOMPLETE ? "-" : st->nodename,
	       st->state == CXL_HOST_INCOMPLETE ? "-" : st->ident, st->procs,
	       st->procs == 1 ? " " : "s",
	       st->state == CXL_HOST_ACTIVE	? "active"
	       : st->state == CXL_HOST_CLAIMING ? "claimed, not attached"
						: "claim incomplete (cxlpool "
						  "gc --dead-host frees it)",
	       st->this_host ? " (this host)" : "");
	return 0;
}

static int cmd_info(cxl_pool *p)
{
	struct cxl_pool_info pi;
	struct cxl_arena_stat as;
	char a[32], b[32], c[32];
	time_t t;

	cxl_pool_info(p, &pi);
	if (cxl_arena_stat(p, &as))
		return fail("info");
	t = (time_t)(pi.format_ns / 1000000000ull);
	printf("pool        %s\n", cxl_pool_path(p));
	printf("uuid        ");
	for (int i = 0; i < 16; i++)
		printf("%02x%s", pi.uuid[i],
		       i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
	printf("\nlayout      version %u, formatted %s", pi.layout_version,
	       ctime(&t));
	printf("size        %s (metadata %s, heap %s at offset 0x%" PRIx64
	       ")\n",
	       human(pi.pool_size, a, sizeof(a)),
	       human(pi.meta_bytes, b, sizeof(b)),
	       human(pi.heap_size, c, sizeof(c)), pi.heap_off);
	printf("heap        %s free, largest free block %s\n",
	       human(as.heap_free, a, sizeof(a)),
	       human(as.largest_free, b, sizeof(b)));
	printf("objects     %" PRIu64 " live, %" PRIu64
	       " destroyed but open, capacity %" PRIu64 "\n",
	       as.live, as.unlinked, as.capacity);
	printf("tables      %u hosts, %u processes\n", pi.max_hosts,
	       pi.max_procs);
	printf("access      mode %s, host id %u\n",
	       cxl_coh_mode_name(cxl_pool_mode(p)), cxl_pool_host_id(p));
	printf("hosts       %u active\n", as.hosts_active);
	if (cxl_host_list(p, print_host, NULL))
		return fail("info");
	/* this cxlpool process is one of them */
	printf("processes   %u attached (including this one)\n", as.procs_live);
	return cxl_proc_list(p, print_proc, NULL) ? fail("info") : 0;
}

struct ls_arg {
	const char *job;
	unsigned n;
};

static int print_obj(const struct cxl_obj_stat *st, void *arg)
{
	struct ls_arg *la = arg;
	char job[CXL_NAME_MAX + 1], sz[32];

	if (st->job[0])
		snprintf(job, sizeof(job), "%s", st->job);
	else
		snprintf(job, sizeof(job), "#%016" PRIx64, st->job_id);
	if (la->job && strcmp(la->job, job))
		return 0;
	if (!la->n++)
		printf("%-32s %-18s %10s %12s %4s %5s %s\n", "NAME", "JOB",
		       "SIZE", "OFFSET", "REFS", "HOST", "STATE");
	printf("%-32s %-18s %10s %#12" PRIx64 " %4u %5u %s\n", st->name, job,
	       human(st->size, sz, sizeof(sz)), st->off, st->refcnt,
	       st->creator_host, st->unlinked ? "destroyed, open" : "live");
	return 0;
}

static void print_problem(const char *problem, void *arg)
{
	(void)arg;
	printf("problem: %s\n", problem);
}

/* fsck: list the inconsistencies; with repair, rebuild and check again.
 * Exit 1 while any remains (or when only a check found some). */
static int cmd_fsck(cxl_pool *p, int repair)
{
	uint64_t found, dropped, left;

	if (cxl_arena_check(p, print_problem, NULL, &found))
		return fail("fsck");
	if (!repair) {
		printf("%" PRIu64 " problem(s)%s\n", found,
		       found ? "; run 'cxlpool fsck --repair' to rebuild the "
			       "index and allocator from the object table"
			     : "");
		return found ? 1 : 0;
	}
	if (cxl_arena_repair(p, &dropped))
		return fail("fsck --repair");
	if (cxl_arena_check(p, print_problem, NULL, &left))
		return fail("fsck");
	printf("%" PRIu64 " problem(s) found; repaired (%" PRIu64
	       " impossible object entr%s dropped); %" PRIu64 " left\n",
	       found, dropped, dropped == 1 ? "y" : "ies", left);
	return left ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "capacity", required_argument, NULL, 'c' },
		{ "max-hosts", required_argument, NULL, 'H' },
		{ "max-procs", required_argument, NULL, 'P' },
		{ "force", no_argument, NULL, 'f' },
		{ "job", required_argument, NULL, 'j' },
		{ "dead-host", required_argument, NULL, 'd' },
		{ "repair", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cxl_pool_opts o;
	const char *cmd, *job = NULL;
	int force = 0, dead = -1, repair = 0, c, rc = 0;
	cxl_pool *p;
	uint64_t v;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (cxl_opts_from_env(&o))
		return fail("environment");
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cxl_parse_size(optarg, &o.size)) {
				fprintf(stderr,
					"cxlpool: --size %s: use e.g. "
					"256M or 4G\n",
					optarg);
				return 2;
			}
			break;
		case 'c':
		case 'H':
		case 'P':
			if (cxl_parse_size(optarg, &v) || !v ||
			    v > (c == 'c' ? 1ull << 31 : 1u << 20)) {
				fprintf(stderr,
					"cxlpool: --%s %s is not a valid "
					"count\n",
					c == 'c'   ? "capacity"
					: c == 'H' ? "max-hosts"
						   : "max-procs",
					optarg);
				return 2;
			}
			if (c == 'c')
				o.capacity = v;
			else if (c == 'H')
				o.max_hosts = (uint32_t)v;
			else
				o.max_procs = (uint32_t)v;
			break;
		case 'f':
			force = 1;
			break;
		case 'j':
			job = optarg;
			break;
		case 'r':
			repair = 1;
			break;
		case 'd':
			if (cxl_parse_size(optarg, &v) || v > 4095) {
				fprintf(stderr,
					"cxlpool: --dead-host %s: give a "
					"host id (0..4095)\n",
					optarg);
				return 2;
			}
			dead = (int)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc && argv[optind][0] == '/')
		snprintf(o.path, sizeof(o.path), "%s", argv[optind++]);
	if (!o.path[0]) {
		fprintf(stderr, "cxlpool: no pool: give its path or set "
				"CXL_POOL\n");
		return 2;
	}

	if (!strcmp(cmd, "format")) {
		o.create = 1;
		if (cxl_pool_format(&o, force))
			return fail("format");
		printf("formatted %s\n", o.path);
		return 0;
	}
	if (!strcmp(cmd, "rm") && optind == argc) {
		if (cxl_pool_remove(&o, force))
			return fail("rm");
		printf("removed %s\n", o.path);
		return 0;
	}
	if (strcmp(cmd, "info") && strcmp(cmd, "ls") && strcmp(cmd, "gc") &&
	    strcmp(cmd, "rm") && strcmp(cmd, "fsck")) {
		fprintf(stderr, "cxlpool: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	o.create = 0; /* administering never creates a pool by accident */
	/* Only rm acts inside a job namespace (--job, else $CXL_JOB); the
	 * other commands attach as "global" so they never count as a member
	 * of a job. */
	o.no_reap = 1; /* show dead processes as they are; gc reclaims */
	if (!strcmp(cmd, "rm") && job)
		snprintf(o.job, sizeof(o.job), "%s", job);
	else if (strcmp(cmd, "rm"))
		snprintf(o.job, sizeof(o.job), "%s", CXL_JOB_GLOBAL);
	rc = cxl_pool_attach(&o, &p);
	if (rc == CXL_ETIMEDOUT && !strcmp(cmd, "gc") && dead >= 0) {
		/* The dead host's ticket (left by a crash, or garbage) keeps
		 * even our attach out of the arena lock: clear it first, then
		 * attach again. A timeout is never our own host's doing (our
		 * host takes over its own ticket). */
		int alive = 0;

		if (cxl_host_declare_dead(&o, (uint32_t)dead, ALIVE_WINDOW_MS,
					  force, &alive))
			return fail("gc");
		if (alive) {
			fprintf(stderr,
				"cxlpool gc: --dead-host %d: host %d is alive "
				"(a process of it beat within %u ms) but holds "
				"the arena lock for longer than "
				"CXL_LOCK_TIMEOUT_MS; find what it waits for, "
				"or add --force once it is down\n",
				dead, dead, ALIVE_WINDOW_MS);
			return 1;
		}
		rc = cxl_pool_attach(&o, &p);
	}
	if (rc)
		return fail(cmd);
	rc = 0;
	if (!strcmp(cmd, "info")) {
		rc = cmd_info(p);
	} else if (!strcmp(cmd, "ls")) {
		struct ls_arg la = { job, 0 };

		if (cxl_obj_list(p, print_obj, &la))
			rc = fail("ls");
		else if (!la.n)
			printf("no objects\n");
	} else if (!strcmp(cmd, "gc")) {
		uint64_t np, no;
		int alive = 0;

		/* this host's own id is refused by gc itself, with its reason
		 */
		if (dead >= 0 && !force &&
		    (uint32_t)dead != cxl_pool_host_id(p) &&
		    cxl_host_alive(p, (uint32_t)dead, ALIVE_WINDOW_MS, &alive))
			rc = fail("gc");
		else if (alive) {
			fprintf(stderr,
				"cxlpool gc: --dead-host %d: host %d is alive "
				"(a process of it beat within %u ms); "
				"declaring it dead would fail its running "
				"jobs. Use it once the host has crashed or "
				"was rebooted, or add --force\n",
				dead, dead, ALIVE_WINDOW_MS);
			rc = 1;
		} else if (cxl_arena_gc(p, dead, &np, &no))
			rc = fail("gc");
		else
			printf("reclaimed %" PRIu64 " dead process slot(s) and "
			       "%" PRIu64 " object(s)\n",
			       np, no);
	} else if (!strcmp(cmd, "rm")) {
		for (; optind < argc; optind++)
			if (cxl_obj_destroy(p, argv[optind]))
				rc = fail("rm");
			else
				printf("destroyed %s\n", argv[optind]);
	} else {
		rc = cmd_fsck(p, repair);
	}
	cxl_pool_detach(p);
	return rc;
}
