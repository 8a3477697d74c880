/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cxlbench loaded: latency under load, in the style of Intel MLC's
 * --loaded_latency, the pool next to local DRAM.
 *
 * One thread (pinned to the first allowed CPU) chases pointers through a
 * random cycle of cache lines, one dependent load at a time; the others
 * (pinned to the next CPUs) stream over their own buffers in the same
 * medium with a traffic mix, pausing `delay` spins between lines. As the
 * delay falls the load rises, and the chase's latency with it: the
 * latency-versus-bandwidth curve of the medium.
 *
 * Mixes: R (reads only), 3:1, 2:1 and 1:1 reads:writes (MLC's -W3, -W2,
 * -W5) and non-temporal writes (MLC's -W6). In
 * the flush and uncached modes the chase invalidates each line before it
 * loads it and the writers write their lines back, as a consumer and a
 * producer on a non-coherent pool must; in the coherent mode both use
 * plain loads and stores. The emulated mode measures the emulator.
 *
 * Output: a table per (medium, mix) with delay, bandwidth (MB/s, all
 * load threads) and chase latency (ns); CSV rows with --csv.
 */
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cxlbench.h"
#include "cxlbench_stream.h"

#define LINE 64u
#define MAX_LOADERS 63

enum mix {
	MIX_R,
	MIX_3R1W,
	MIX_2R1W,
	MIX_1R1W,
	MIX_NTW,
	NMIX
};
static const char *const mix_name[NMIX] = { "R", "3:1", "2:1", "1:1", "NT-W" };

struct loaded_args {
	struct bench_opts b; /* --pool, --size, --mode, --csv, --quick */
	unsigned loaders;    /* load threads; 0: one per other CPU */
	unsigned mixes;	     /* bits 1 << enum mix */
};

struct medium {
	const char *name; /* "dram" or the mode's name */
	cxl_pool *pool;	  /* NULL for DRAM */
	uint8_t *chase;	  /* chase region */
	uint64_t chase_bytes;
	uint8_t *traffic; /* loaders' regions, traffic_bytes each */
	uint64_t traffic_bytes;
};

struct loader {
	pthread_t t;
	const struct medium *m;
	unsigned idx, cpu;
	enum mix mix;
	unsigned delay;
	atomic_bool *stop;
	uint64_t bytes; /* moved, written by the thread at the end */
};

static int pin(unsigned cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

/* The CPUs this process may run on, in order. */
static unsigned allowed_cpus(unsigned *cpus, unsigned cap)
{
	cpu_set_t s;
	unsigned n = 0;

	if (sched_getaffinity(0, sizeof(s), &s))
		return 0;
	for (unsigned c = 0; c < CPU_SETSIZE && n < cap; c++)
		if (CPU_ISSET(c, &s))
			cpus[n++] = c;
	return n;
}

/* The injection delay: an empty loop, a cycle or two per step. Not
 * `pause`: in a virtual machine it may exit to the hypervisor. */
static inline void spin(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
}

/* One line of traffic at p: reads:writes per the mix (k counts lines). */
static inline void touch(const struct medium *m, uint8_t *p, uint64_t k,
			 enum mix mix, volatile uint64_t *sink)
{
	unsigned period = mix == MIX_3R1W   ? 4
			  : mix == MIX_2R1W ? 3
			  : mix == MIX_1R1W ? 2
					    : 0;

	if (mix == MIX_NTW) {
		__builtin_ia32_movnti64((long long *)p, (long long)k);
		return;
	}
	if (period && k % period == period - 1) {
		*(volatile uint64_t *)p = k;
		/* a producer on a non-coherent pool writes the line back */
		if (m->pool && cxl_pool_mode(m->pool) != CXL_COH_COHERENT)
			cxl_flush(m->pool, p, LINE);
		return;
	}
	*sink += *(volatile uint64_t *)p;
}

static void *loader_main(void *v)
{
	struct loader *l = v;
	const struct medium *m = l->m;
	uint8_t *base = m->traffic + (uint64_t)l->idx * m->traffic_bytes;
	uint64_t lines = m->traffic_bytes / LINE, k = 0;
	volatile uint64_t sink = 0;

	pin(l->cpu);
	while (!atomic_load_explicit(l->stop, memory_order_relaxed)) {
		/* 64 lines between looks at the stop flag */
		for (int i = 0; i < 64; i++, k++) {
			touch(m, base + (k % lines) * LINE, k, l->mix, &sink);
			spin(l->delay);
		}
		if (l->mix == MIX_NTW ||
		    (m->pool && cxl_pool_mode(m->pool) != CXL_COH_COHERENT))
			__builtin_ia32_sfence(); /* drain the write-backs */
	}
	l->bytes = k * LINE;
	return NULL;
}

/* A random cycle through the chase region's lines: each line holds the
 * address of the next (Sattolo's algorithm). */
static void chase_init(const struct medium *m, uint64_t seed)
{
	uint64_t n = m->chase_bytes / LINE;
	uint64_t *perm = malloc(n * sizeof(*perm));

	if (!perm)
		return;
	for (uint64_t i = 0; i < n; i++)
		perm[i] = i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j;

		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		j = seed % i;
		uint64_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t from = perm[i], to = perm[(i + 1) % n];

		*(uint8_t **)(m->chase + from * LINE) = m->chase + to * LINE;
	}
	free(perm);
	if (m->pool) { /* the cycle is in the pool for real */
		cxl_flush(m->pool, m->chase, m->chase_bytes);
		cxl_wfence(m->pool);
	}
}

/* ns per dependent load over `loads` steps. */
static double chase_run(const struct medium *m, uint64_t loads)
{
	bool inval = m->pool && cxl_pool_mode(m->pool) != CXL_COH_COHERENT;
	uint8_t *p = m->chase;
	uint64_t t0 = cxl_now_ns();

	for (uint64_t i = 0; i < loads; i++) {
		/* a consumer on a non-coherent pool drops its copy first */
		if (inval)
			cxl_inval(m->pool, p, LINE);
		p = *(uint8_t *volatile *)p;
	}
	if (!p)
		fprintf(stderr, "cxlbench loaded: broken cycle\n");
	return (double)(cxl_now_ns() - t0) / (double)loads;
}

struct point {
	double lat_ns, mbps;
};

static struct point measure(const struct medium *m, enum mix mix,
			    unsigned delay, const unsigned *cpus,
			    unsigned nload, uint64_t loads)
{
	struct loader l[MAX_LOADERS];
	atomic_bool stop = false;
	struct point pt = { 0, 0 };
	double secs, total = 0;
	uint64_t t0;

	for (unsigned i = 0; i < nload; i++) {
		l[i] = (struct loader){ .m = m,
					.idx = i,
					.cpu = cpus[i + 1],
					.mix = mix,
					.delay = delay,
					.stop = &stop };
		pthread_create(&l[i].t, NULL, loader_main, &l[i]);
	}
	usleep(20000); /* the load reaches steady state */
	t0 = cxl_now_ns();
	pt.lat_ns = chase_run(m, loads);
	secs = (double)(cxl_now_ns() - t0) / 1e9;
	atomic_store(&stop, true);
	for (unsigned i = 0; i < nload; i++) {
		pthread_join(l[i].t, NULL);
		total += (double)l[i].bytes;
	}
	/* bytes over the whole loaded interval (20 ms settle included) */
	pt.mbps = total / (secs + 0.02) / 1e6;
	return pt;
}

static int parse(int argc, char **argv, struct loaded_args *a)
{
	static const struct option opts[] = {
		BENCH_LONGOPTS,
		{ "threads", required_argument, NULL, 't' },
		{ "mix", required_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	a->mixes = (1u << NMIX) - 1;
	opterr = 0; /* our messages say how to fix the command line */
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		int took = bench_opt_take("cxlbench loaded", c, optarg,
					  BENCH_ALL_MODES, &a->b);

		if (took < 0)
			return 2;
		if (took)
			continue;
		switch (c) {
		case 't':
			if (bench_parse_uint("cxlbench loaded", "--threads",
					     optarg, 1, MAX_LOADERS, &v))
				return 2;
			a->loaders = (unsigned)v;
			break;
		case 'x':
			a->mixes = 0;
			for (int i = 0; i < NMIX; i++)
				if (strstr(optarg, mix_name[i]))
					a->mixes |= 1u << i;
			if (!a->mixes) {
				fprintf(stderr,
					"cxlbench loaded: --mix %s: give a "
					"comma list of R,3:1,2:1,1:1,NT-W\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			printf("usage: cxlbench loaded [--pool POOL] [--size "
			       "SIZE] [--mode M,...]\n"
			       "         [--mix R,3:1,2:1,1:1,NT-W] "
			       "[--threads N] [--quick] [--csv FILE]\n"
			       "Latency of a pointer chase while N load "
			       "threads stream over the same medium\n"
			       "at falling injection delays: the pool's "
			       "latency-versus-bandwidth curve, next to\n"
			       "local DRAM (Intel MLC --loaded_latency). "
			       "Default: every mix, one load thread per\n"
			       "other CPU, the coherent and flush modes.\n");
			return 1;
		default:
			return tool_usage_error("cxlbench loaded", c,
						argv[optind - 1]);
		}
	}
	if (optind < argc)
		return tool_usage_error("cxlbench loaded", 0, argv[optind]);
	if (!a->b.modes)
		a->b.modes = 1u << CXL_COH_COHERENT | 1u << CXL_COH_FLUSH;
	return 0;
}

static void run_medium(const struct loaded_args *a, const struct medium *m,
		       const unsigned *cpus, unsigned nload, FILE *csv)
{
	/* delay-loop steps between lines (a cycle or two each) */
	static const unsigned full[] = { 4096, 2048, 1024, 512, 256,
					 128,  64,   32,   8,	0 };
	static const unsigned quick[] = { 2048, 256, 32, 0 };
	const unsigned *delays = a->b.quick ? quick : full;
	unsigned nd = a->b.quick ? 4 : 10;
	uint64_t loads = a->b.quick ? 200000 : 1000000;

	for (int mix = 0; mix < NMIX && !bench_interrupted; mix++) {
		if (!(a->mixes & 1u << mix))
			continue;
		printf("\n%s, %s traffic, %u load thread%s\n", m->name,
		       mix_name[mix], nload, nload == 1 ? "" : "s");
		printf("  %-10s %12s %12s\n", "delay", "MB/s", "latency ns");
		for (unsigned i = 0; i < nd && !bench_interrupted; i++) {
			struct point p = measure(m, (enum mix)mix, delays[i],
						 cpus, nload, loads);

			printf("  %-10u %12.0f %12.1f\n", delays[i], p.mbps,
			       p.lat_ns);
			fflush(stdout);
			if (csv)
				fprintf(csv, "%s,%s,%u,%u,%.1f,%.2f\n", m->name,
					mix_name[mix], nload, delays[i], p.mbps,
					p.lat_ns);
		}
		/* idle latency: no load at all */
		{
			struct point p =
				measure(m, (enum mix)mix, 0, cpus, 0, loads);

			printf("  %-10s %12s %12.1f\n", "idle", "-", p.lat_ns);
			if (csv)
				fprintf(csv, "%s,%s,0,0,0,%.2f\n", m->name,
					mix_name[mix], p.lat_ns);
		}
	}
}

int cxlbench_loaded_main(int argc, char **argv)
{
	struct loaded_args a;
	struct cxl_pool_opts base;
	unsigned cpus[MAX_LOADERS + 1], ncpu, nload;
	uint64_t chase_bytes, traffic_bytes, need;
	char tmp[256] = "";
	FILE *csv = NULL;
	int rc, status = 1, failed = 0;

	if ((rc = parse(argc, argv, &a)))
		return rc == 1 ? 0 : rc;
	ncpu = allowed_cpus(cpus, MAX_LOADERS + 1);
	if (ncpu < 2) {
		fprintf(stderr,
			"cxlbench loaded: needs 2 CPUs (one chases, "
			"one loads); this process may use %u\n",
			ncpu);
		return 1;
	}
	nload = a.loaders ? a.loaders : ncpu - 1;
	if (nload > ncpu - 1) {
		printf("cxlbench loaded: %u load threads asked, but only %u "
		       "CPUs besides the chasing one: the load threads share "
		       "CPUs, and the curve shows CPU time-sharing, not the "
		       "medium. Using %u.\n",
		       nload, ncpu - 1, ncpu - 1);
		nload = ncpu - 1;
	}
	if (ncpu - 1 < 3)
		printf("cxlbench loaded: %u CPU%s for load: the highest load is "
		       "what %u core%s can inject, far below a memory "
		       "controller's limit (MLC uses every core of a "
		       "socket)\n",
		       ncpu - 1, ncpu == 2 ? "" : "s", ncpu - 1,
		       ncpu == 2 ? "" : "s");
	chase_bytes = a.b.quick ? 64ull << 20 : 256ull << 20;
	traffic_bytes = a.b.quick ? 64ull << 20 : 256ull << 20;
	need = chase_bytes + nload * traffic_bytes + (64ull << 20);
	if (bench_pool_opts("cxlbench loaded", &a.b, need + (192ull << 20), 64,
			    &base, tmp, sizeof(tmp)))
		return 1;
	if ((tmp[0] || base.create) && base.size < need) {
		fprintf(stderr,
			"cxlbench loaded: a pool of %llu MiB is too small for "
			"the chase region and %u load regions; give --size "
			"%lluM or more (or unset CXL_POOL_SIZE)\n",
			(unsigned long long)(base.size >> 20), nload,
			(unsigned long long)(need >> 20));
		status = 2; /* a usage error */
		goto out;
	}
	if (a.b.csv && !(csv = fopen(a.b.csv, "w"))) {
		fprintf(stderr, "cxlbench loaded: cannot create %s\n", a.b.csv);
		goto out;
	}
	if (csv)
		fputs("medium,mix,load_threads,delay,mbps,latency_ns\n", csv);
	pin(cpus[0]);
	{ /* local DRAM */
		struct medium m = { .name = "dram",
				    .chase_bytes = chase_bytes,
				    .traffic_bytes = traffic_bytes };

		m.chase = aligned_alloc(2u << 20, chase_bytes);
		m.traffic = aligned_alloc(2u << 20, nload * traffic_bytes);
		if (!m.chase || !m.traffic) {
			fprintf(stderr, "cxlbench loaded: out of memory\n");
			goto out;
		}
		memset(m.traffic, 1, nload * traffic_bytes);
		chase_init(&m, 0x1234567);
		run_medium(&a, &m, cpus, nload, csv);
		free(m.chase);
		free(m.traffic);
	}
	for (int mode = 0; mode < 4 && !bench_interrupted; mode++) {
		struct cxl_obj o;
		struct medium m;
		char label[64];
		cxl_pool *p;

		if (!(a.b.modes & 1u << mode))
			continue;
		/* a mode that cannot run fails the command, after the others */
		if (stream_attach(&base, (enum cxl_coh_mode)mode, true, &p,
				  label, sizeof(label))) {
			failed = 1;
			continue;
		}
		if (cxl_obj_create(p, "cxlbench.loaded",
				   chase_bytes + nload * traffic_bytes,
				   CXL_OBJ_ALIGN_2M, &o)) {
			fprintf(stderr, "cxlbench loaded: %s\n", cxl_errmsg());
			cxl_pool_detach(p);
			failed = 1;
			continue;
		}
		m = (struct medium){ .name = label,
				     .pool = p,
				     .chase = o.ptr,
				     .chase_bytes = chase_bytes,
				     .traffic = (uint8_t *)o.ptr + chase_bytes,
				     .traffic_bytes = traffic_bytes };
		memset(m.traffic, 1, nload * traffic_bytes);
		chase_init(&m, 0x1234567);
		run_medium(&a, &m, cpus, nload, csv);
		cxl_obj_close(&o);
		cxl_obj_destroy(p, "cxlbench.loaded");
		cxl_pool_detach(p);
	}
	status = bench_interrupted ? 130 : failed;
	if (csv)
		printf("\ncxlbench loaded: results written to %s\n", a.b.csv);
out:
	if (csv)
		fclose(csv);
	tool_tmp_pool_remove("cxlbench", tmp);
	return status;
}
