/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cxlbench measurements. Each runs on a target: the benchmark object of
 * one attachment, or the local DRAM buffer (pool == NULL) for the baseline
 * rows. Every measurement warms up untimed, then times samples with
 * CLOCK_MONOTONIC and reports the median. The coherence counters are read
 * right before the first and right after the last timed sample, so their
 * deltas cover exactly the timed operations (the counters are per process
 * and nothing else in cxlbench touches the pool meanwhile).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxlbench.h"

/* Transfer sizes of the latency tests: cMPI Table 1 and Fig. 11. */
static const uint64_t lat_sizes[] = {
	64, 256, 1u << 10, 4u << 10, 16u << 10, 64u << 10, BENCH_LAT_MAX,
};
#define NLAT (sizeof(lat_sizes) / sizeof(lat_sizes[0]))

/* A latency sample repeats small operations until it moves this many
 * bytes, so the clock reads cost little against the operations timed. */
#define LAT_BATCH_BYTES (16u << 10)

#define ALIGN_UP64(x, a) (((x) + (a) - 1) / (a) * (a))

/* A bandwidth round has every thread copy at least this much, so waking
 * the threads costs little against the copying. */
#define BW_ROUND_BYTES (64u << 20)

/* Keeps the compiler from dropping a DRAM copy that nothing reads. */
#define KEEP_STORES() __asm__ volatile("" ::: "memory")

/* Fill the per-operation counter columns from two snapshots. */
static void set_ops(struct bench_result *res, const struct cxl_coh_counters *a,
		    const struct cxl_coh_counters *b, uint64_t nops)
{
	double n = (double)nops;

	res->flush = (double)(b->flush_lines - a->flush_lines) / n;
	res->inval = (double)(b->inval_lines - a->inval_lines) / n;
	res->fences = (double)(b->fences - a->fences) / n;
	res->nt = (double)(b->nt_stores - a->nt_stores + b->nt_loads -
			   a->nt_loads + b->nt_lines - a->nt_lines) /
		  n;
}

static int interrupted(void)
{
	if (!bench_interrupted)
		return 0;
	fprintf(stderr, "cxlbench: interrupted\n");
	return -1;
}

/* 64-bit xorshift*: a fixed seed makes every run chase the same cycle. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

uint64_t bench_obj_bytes(const struct bench_plan *pl)
{
	uint64_t n = pl->chunk_bytes * pl->max_threads;

	if (n < pl->chase_bytes)
		n = pl->chase_bytes;
	return n < BENCH_LAT_MAX ? BENCH_LAT_MAX : n;
}

static void *alloc_local(uint64_t n)
{
	return aligned_alloc(4096, ALIGN_UP64(n, 4096));
}

int bench_scratch_init(struct bench_scratch *s, const struct bench_plan *pl)
{
	uint64_t src_bytes = pl->chunk_bytes * pl->max_threads, seed = 1;

	if (src_bytes < BENCH_LAT_MAX)
		src_bytes = BENCH_LAT_MAX;
	memset(s, 0, sizeof(*s));
	s->nlines = pl->chase_bytes / CXL_LINE;
	s->src = alloc_local(src_bytes);
	s->dst = alloc_local(BENCH_LAT_MAX);
	s->next = malloc(s->nlines * sizeof(*s->next));
	if (!s->src || !s->dst || !s->next) {
		fprintf(stderr,
			"cxlbench: out of memory for %llu bytes of "
			"local buffers: lower --threads, or use --quick\n",
			(unsigned long long)(src_bytes + BENCH_LAT_MAX +
					     s->nlines * sizeof(*s->next)));
		bench_scratch_free(s);
		return -1;
	}
	/* A pattern, not zeros, and every page faulted in now. */
	for (uint64_t i = 0; i < src_bytes; i++)
		s->src[i] = (uint8_t)(i * 131 + 7);
	memset(s->dst, 0, BENCH_LAT_MAX);

	/* Sattolo's shuffle of the identity gives a single cycle through all
	 * lines, so a chase visits every line once per pass. */
	for (uint64_t i = 0; i < s->nlines; i++)
		s->next[i] = (uint32_t)i;
	for (uint64_t i = s->nlines - 1; i > 0; i--) {
		uint64_t j = rng_next(&seed) % i;
		uint32_t t = s->next[i];

		s->next[i] = s->next[j];
		s->next[j] = t;
	}
	return 0;
}

void bench_scratch_free(struct bench_scratch *s)
{
	free(s->src);
	free(s->dst);
	free(s->next);
	memset(s, 0, sizeof(*s));
}

/* ---- write+flush and read+invalidate latency --------------------------- */

/*
 * One operation as an MPI implementation does it on this target. Write:
 * copy into the pool and write it back (cxl_copy_to_pool: memcpy + flush,
 * or non-temporal stores in uncached mode), then fence so the data is in
 * the pool before any later store could publish it. Read: invalidate, then
 * copy out (cxl_copy_from_pool).
 */
static void lat_op(const struct bench_target *t, const struct bench_scratch *s,
		   bool write, uint64_t n)
{
	if (write && t->pool) {
		cxl_copy_to_pool(t->pool, t->buf, s->src, n);
		cxl_wfence(t->pool);
	} else if (write) {
		memcpy(t->buf, s->src, n);
	} else if (t->pool) {
		cxl_copy_from_pool(t->pool, s->dst, t->buf, n);
	} else {
		memcpy(s->dst, t->buf, n);
	}
	KEEP_STORES();
}

static int lat_point(const struct bench_plan *pl, const struct bench_target *t,
		     const struct bench_scratch *s, bool write, uint64_t n,
		     struct bench_results *r)
{
	struct bench_result res = {
		.test = write ? "write_flush" : "read_inval",
		.mode = t->mode,
		.insn = t->insn,
		.size = n,
		.threads = 1,
		.unit = "ns",
	};
	unsigned reps =
		n >= LAT_BATCH_BYTES ? 1 : LAT_BATCH_BYTES / (unsigned)n;
	struct cxl_coh_counters c0, c1;
	double *v = malloc(pl->lat_samples * sizeof(*v));

	if (!v) {
		fprintf(stderr, "cxlbench: out of memory for latency "
				"samples; free some memory and retry\n");
		return -1;
	}
	for (unsigned i = 0; i < pl->lat_warmup * reps; i++)
		lat_op(t, s, write, n);
	cxl_coh_counters_get(&c0);
	for (unsigned i = 0; i < pl->lat_samples && !bench_interrupted; i++) {
		uint64_t t0 = cxl_now_ns();

		for (unsigned k = 0; k < reps; k++)
			lat_op(t, s, write, n);
		v[i] = (double)(cxl_now_ns() - t0) / reps;
	}
	cxl_coh_counters_get(&c1);
	if (interrupted()) {
		free(v);
		return -1;
	}
	res.value = tool_median(v, pl->lat_samples);
	set_ops(&res, &c0, &c1, (uint64_t)pl->lat_samples * reps);
	free(v);
	return bench_add(r, &res);
}

int bench_latency(const struct bench_plan *pl, const struct bench_target *t,
		  const struct bench_scratch *s, struct bench_results *r)
{
	/* Writes first: the reads then find the written data in the pool. */
	for (size_t i = 0; i < NLAT; i++)
		if (lat_point(pl, t, s, true, lat_sizes[i], r))
			return -1;
	for (size_t i = 0; i < NLAT; i++)
		if (lat_point(pl, t, s, false, lat_sizes[i], r))
			return -1;
	return 0;
}

/* ---- pointer chase ----------------------------------------------------- */

/* Where the chase's last pointer goes, so the loads cannot be dropped. */
static void *volatile chase_sink;

static void *chase(void *p, uint64_t n)
{
	while (n--)
		p = *(void **)p;
	return p;
}

int bench_chase(const struct bench_plan *pl, const struct bench_target *t,
		const struct bench_scratch *s, struct bench_results *r)
{
	struct bench_result res = {
		.test = "pointer_chase",
		.mode = t->mode,
		.insn = t->insn,
		.size = s->nlines * CXL_LINE,
		.threads = 1,
		.unit = "ns/load",
	};
	struct cxl_coh_counters c0, c1;
	double *v = malloc(pl->chase_samples * sizeof(*v));
	void *p;

	if (!v) {
		fprintf(stderr, "cxlbench: out of memory for chase samples; "
				"free some memory and retry\n");
		return -1;
	}
	/* The first word of each line points to its successor's line. */
	for (uint64_t i = 0; i < s->nlines; i++)
		*(void **)(t->buf + i * CXL_LINE) =
			t->buf + (uint64_t)s->next[i] * CXL_LINE;
	if (t->pool) {
		/* As if another host had written the region: write it back,
		 * then drop this host's copy so the loads read the pool. */
		cxl_flush(t->pool, t->buf, res.size);
		cxl_wfence(t->pool);
		cxl_inval(t->pool, t->buf, res.size);
	}
	p = chase(t->buf, s->nlines); /* warm-up pass: TLB, prefetchers */
	cxl_coh_counters_get(&c0);
	for (unsigned i = 0; i < pl->chase_samples && !bench_interrupted; i++) {
		uint64_t t0 = cxl_now_ns();

		p = chase(p, s->nlines);
		v[i] = (double)(cxl_now_ns() - t0) / (double)s->nlines;
	}
	cxl_coh_counters_get(&c1);
	chase_sink = p;
	if (interrupted()) {
		free(v);
		return -1;
	}
	res.value = tool_median(v, pl->chase_samples);
	set_ops(&res, &c0, &c1, (uint64_t)pl->chase_samples * s->nlines);
	free(v);
	return bench_add(r, &res);
}

/* ---- copy bandwidth ---------------------------------------------------- */

/*
 * Threads 1..n-1 are workers; the main thread is thread 0 and clocks each
 * round from releasing the workers to the last one finishing. In a round
 * every thread copies its chunk reps times. A mutex
 * and two condition variables pace the rounds (not a pthread barrier, so
 * a failed pthread_create can still release the workers already started).
 */
struct bw_ctx {
	const struct bench_target *t;
	const uint8_t *src;
	uint64_t chunk;
	unsigned reps;
	pthread_mutex_t mtx;
	pthread_cond_t go, done;
	unsigned round;	  /* incremented to start a round */
	unsigned pending; /* workers still copying in this round */
	bool stop;
};

struct bw_worker {
	struct bw_ctx *c;
	unsigned idx;
	pthread_t tid;
};

/* Thread idx copies its own chunk: distinct lines for distinct threads. */
static void bw_copy(struct bw_ctx *c, unsigned idx)
{
	uint8_t *d = c->t->buf + idx * c->chunk;
	const uint8_t *s = c->src + idx * c->chunk;

	for (unsigned k = 0; k < c->reps; k++) {
		if (c->t->pool) {
			cxl_copy_to_pool(c->t->pool, d, s, c->chunk);
			cxl_wfence(c->t->pool);
		} else {
			memcpy(d, s, c->chunk);
		}
		KEEP_STORES();
	}
}

static void *bw_main(void *arg)
{
	struct bw_worker *w = arg;
	struct bw_ctx *c = w->c;
	unsigned seen = 0;

	pthread_mutex_lock(&c->mtx);
	for (;;) {
		while (c->round == seen && !c->stop)
			pthread_cond_wait(&c->go, &c->mtx);
		if (c->stop)
			break;
		seen = c->round;
		pthread_mutex_unlock(&c->mtx);
		bw_copy(c, w->idx);
		pthread_mutex_lock(&c->mtx);
		if (--c->pending == 0)
			pthread_cond_signal(&c->done);
	}
	pthread_mutex_unlock(&c->mtx);
	return NULL;
}

/* One round: every thread copies its chunk once. Returns nanoseconds. */
static uint64_t bw_round(struct bw_ctx *c, unsigned nworkers)
{
	uint64_t t0 = cxl_now_ns();

	pthread_mutex_lock(&c->mtx);
	c->pending = nworkers;
	c->round++;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->mtx);
	bw_copy(c, 0);
	pthread_mutex_lock(&c->mtx);
	while (c->pending)
		pthread_cond_wait(&c->done, &c->mtx);
	pthread_mutex_unlock(&c->mtx);
	return cxl_now_ns() - t0;
}

static int bw_point(const struct bench_plan *pl, const struct bench_target *t,
		    const struct bench_scratch *s, unsigned nthreads,
		    struct bench_results *r)
{
	struct bench_result res = {
		.test = "copy_bw",
		.mode = t->mode,
		.insn = t->insn,
		.size = pl->chunk_bytes,
		.threads = nthreads,
		.unit = "GB/s",
	};
	struct bw_ctx c = {
		.t = t,
		.src = s->src,
		.chunk = pl->chunk_bytes,
		.reps = pl->chunk_bytes >= BW_ROUND_BYTES
				? 1
				: (unsigned)(BW_ROUND_BYTES / pl->chunk_bytes),
	};
	struct bw_worker *w = calloc(nthreads, sizeof(*w));
	double *v = malloc(pl->bw_samples * sizeof(*v));
	struct cxl_coh_counters c0, c1;
	unsigned started = 0;
	int rc = -1;

	if (!w || !v) {
		fprintf(stderr,
			"cxlbench: out of memory for %u threads: lower "
			"--threads\n",
			nthreads);
		goto out;
	}
	pthread_mutex_init(&c.mtx, NULL);
	pthread_cond_init(&c.go, NULL);
	pthread_cond_init(&c.done, NULL);
	for (started = 1; started < nthreads; started++) {
		int e;

		w[started].c = &c;
		w[started].idx = started;
		e = pthread_create(&w[started].tid, NULL, bw_main, &w[started]);
		if (e) {
			fprintf(stderr,
				"cxlbench: cannot start bandwidth "
				"thread %u of %u: %s; lower --threads\n",
				started + 1, nthreads, strerror(e));
			goto stop;
		}
	}
	for (unsigned i = 0; i < pl->bw_warmup; i++)
		bw_round(&c, nthreads - 1);
	cxl_coh_counters_get(&c0);
	for (unsigned i = 0; i < pl->bw_samples && !bench_interrupted; i++)
		v[i] = (double)bw_round(&c, nthreads - 1);
	cxl_coh_counters_get(&c1);
	if (interrupted())
		goto stop;
	/* bytes per nanosecond is GB/s */
	res.value = (double)(nthreads * c.reps * pl->chunk_bytes) /
		    tool_median(v, pl->bw_samples);
	set_ops(&res, &c0, &c1, (uint64_t)pl->bw_samples * nthreads * c.reps);
	rc = bench_add(r, &res);
stop:
	pthread_mutex_lock(&c.mtx);
	c.stop = true;
	pthread_cond_broadcast(&c.go);
	pthread_mutex_unlock(&c.mtx);
	for (unsigned i = 1; i < started; i++)
		pthread_join(w[i].tid, NULL);
	pthread_cond_destroy(&c.done);
	pthread_cond_destroy(&c.go);
	pthread_mutex_destroy(&c.mtx);
out:
	free(v);
	free(w);
	return rc;
}

int bench_bandwidth(const struct bench_plan *pl, const struct bench_target *t,
		    const struct bench_scratch *s, struct bench_results *r)
{
	/* Powers of two below the maximum, then the maximum itself. */
	for (unsigned n = 1; n < pl->max_threads; n *= 2)
		if (bw_point(pl, t, s, n, r))
			return -1;
	return bw_point(pl, t, s, pl->max_threads, r);
}
