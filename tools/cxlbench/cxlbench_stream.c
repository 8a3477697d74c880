/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cxlbench stream: STREAM with each of the arrays a, b and c in local
 * DRAM or in the pool (the 8 placements DDD .. PPP), and with all three
 * page-interleaved over both at several DRAM:pool ratios, in each
 * coherence mode. Every kernel is one step that another host could
 * follow: its pool-resident inputs are invalidated before it reads them,
 * its pool-resident result is written back and fenced after it.
 *
 * --advise measures the single-array moves only (DDD, PDD, DPD, DDP) and
 * ranks the arrays by their measured cost in the pool.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlbench_stream.h"
#include "stream_place.h"

/* ---- one kernel as a step another host could follow --------------------- */

struct step_ctx {
	cxl_pool *pool;
	const struct stream_layout *l;
	size_t n;
	bool nt;	 /* uncached mode: stream the pool part of the result */
	bool omit_flush; /* fault injection */
};

/* The written array's DRAM gaps with ordinary stores, its pool runs with
 * streaming stores. */
static void kernel_nt(const struct step_ctx *x, enum stream_kernel k)
{
	const struct stream_layout *l = x->l;
	unsigned w = stream_kwrites[k];
	size_t at = 0;

	for (size_t s = 0; s < l->nseg[w]; s++) {
		const struct stream_seg *g = &l->seg[w][s];

		if (g->first > at)
			stream_kernel(k, l->v[0], l->v[1], l->v[2], at,
				      g->first - at, false);
		stream_kernel(k, l->v[0], l->v[1], l->v[2], g->first, g->count,
			      true);
		at = g->first + g->count;
	}
	if (at < x->n)
		stream_kernel(k, l->v[0], l->v[1], l->v[2], at, x->n - at,
			      false);
}

static void stream_step(void *arg, enum stream_kernel k)
{
	const struct step_ctx *x = arg;
	const struct stream_layout *l = x->l;
	unsigned w = stream_kwrites[k];
	bool pool_io = l->nseg[w] > 0;

	/* Observe, invalidate, read: a pool-resident input may have been
	 * written by another host since this one cached it (coherent mode:
	 * an acquire fence only). Our own results were written back after
	 * the kernel that wrote them, so no unflushed line is dropped. */
	for (int i = 0; i < ARR_N; i++)
		if ((stream_kreads[k] & (1u << i)) && l->nseg[i]) {
			stream_layout_inval(x->pool, l, i);
			pool_io = true;
		}
	if (x->nt && l->nseg[w])
		kernel_nt(x, k);
	else
		stream_kernel(k, l->v[0], l->v[1], l->v[2], 0, x->n, false);
	/* Write, write back, fence: the result is in the pool before
	 * anything this host publishes next. Streaming stores leave no
	 * dirty line, so the uncached mode needs the fence only. */
	if (l->nseg[w] && !x->nt && !x->omit_flush)
		stream_layout_flush(x->pool, l, w);
	if (pool_io)
		cxl_wfence(x->pool);
}

/*
 * After the untimed writes: write back every pool-resident array, as the
 * kernels do. Before the validation: invalidate them, so that it reads
 * what another host would (the emulated mode loses what was not written
 * back, and the validation fails).
 */
static void stream_sync(void *arg, bool before_check)
{
	const struct step_ctx *x = arg;

	for (int i = 0; i < ARR_N; i++) {
		if (!x->l->nseg[i])
			continue;
		if (before_check)
			stream_layout_inval(x->pool, x->l, i);
		else if (!x->omit_flush)
			stream_layout_flush(x->pool, x->l, i);
	}
	cxl_wfence(x->pool);
}

/* ---- placements -------------------------------------------------------- */

struct placement {
	char where[ARR_N];
	unsigned rd, rp;
};

static size_t plan_placements(const struct stream_args *a, struct placement *pl)
{
	static const char *const single[] = { "DDD", "PDD", "DPD", "DDP" };
	size_t n = 0;

	if (a->advise) {
		for (size_t i = 0; i < 4; i++)
			memcpy(pl[n++].where, single[i], ARR_N);
		return n;
	}
	/* a/b/c as bits, P = 1: DDD, DDP, DPD, DPP, PDD, PDP, PPD, PPP */
	for (unsigned m = 0; m < 8; m++, n++)
		for (int i = 0; i < ARR_N; i++)
			pl[n].where[i] = m & (4u >> i) ? 'P' : 'D';
	for (unsigned r = 0; r < a->nratios; r++, n++) {
		memcpy(pl[n].where, "III", ARR_N);
		pl[n].rd = a->ratios[r][0];
		pl[n].rp = a->ratios[r][1];
	}
	return n;
}

static int run_placement(struct stream_mem *m, const struct placement *pl,
			 const struct stream_args *a, const char *label,
			 struct stream_rows *rows, bool *valid)
{
	struct stream_row row = { 0 };
	struct stream_layout l;
	struct step_ctx x = {
		.pool = m->pool,
		.l = &l,
		.n = m->n,
		.nt = cxl_pool_mode(m->pool) == CXL_COH_UNCACHED,
		.omit_flush = a->omit_flush,
	};
	struct stream_job j = {
		.n = m->n,
		.ntimes = a->ntimes,
		.step = stream_step,
		.sync = stream_sync,
		.arg = &x,
	};
	uint64_t gran = m->gran;
	char note[256], prefix[64], g[32];

	snprintf(row.mode, sizeof(row.mode), "%s", label);
	if (pl->where[0] == 'I') {
		gran = stream_ileave_gran(m, pl->rd, pl->rp, note,
					  sizeof(note));
		if (note[0])
			printf("cxlbench: note: %s\n", note);
		snprintf(row.place, sizeof(row.place), "I%u:%u", pl->rd,
			 pl->rp);
	} else {
		memcpy(row.place, pl->where, ARR_N);
	}
	if (stream_layout_set(m, &l, pl->where, pl->rd, pl->rp, gran))
		return -1;
	j.a = l.v[0], j.b = l.v[1], j.c = l.v[2];
	snprintf(prefix, sizeof(prefix), "cxlbench: %s %s: ", label, row.place);
	j.label = prefix;
	stream_run(&j, &row.st, stdout);
	if (stream_layout_clear(m, &l))
		return -1;

	memcpy(row.where, pl->where, ARR_N);
	row.rd = pl->rd, row.rp = pl->rp, row.gran = gran;
	memcpy(row.frac, l.frac, sizeof(row.frac));
	row.nt_pool = x.nt;
	row.n = m->n;
	row.ntimes = a->ntimes;
	for (int k = 0; k < K_N; k++)
		row.mbs[k] = stream_mbs(k, m->n, row.st.min_s[k]);
	printf("%sCopy %.0f, Scale %.0f, Add %.0f, Triad %.0f MB/s%s%s\n",
	       prefix, row.mbs[0], row.mbs[1], row.mbs[2], row.mbs[3],
	       pl->where[0] == 'I' ? ", pages of " : "",
	       pl->where[0] == 'I' ? bench_fmt_size(gran, g, sizeof(g)) : "");
	fflush(stdout);
	*valid = *valid && row.st.valid;
	return stream_rows_add(rows, &row);
}

static int run_mode(const struct cxl_pool_opts *o, enum cxl_coh_mode mode,
		    bool mode_set, const struct stream_args *a, size_t n,
		    struct stream_rows *rows, bool *valid)
{
	struct placement pl[8 + STREAM_MAX_RATIOS];
	size_t npl = plan_placements(a, pl);
	struct stream_mem m;
	char label[32], prefix[32], sz[32], osz[32];
	cxl_pool *p;
	int rc, ret = 0;

	rc = stream_attach(o, mode, mode_set, &p, label, sizeof(label));
	if (rc)
		return rc < 0 ? -1 : 0;
	snprintf(prefix, sizeof(prefix), "stream-%d", (int)getpid());
	if (stream_mem_init(&m, p, n, prefix)) {
		cxl_pool_detach(p);
		return -1;
	}
	printf("\ncxlbench: mode %s: pool %s (%s), 3 objects of %s; "
	       "interleaving at %s pages\n",
	       label, cxl_pool_path(p),
	       bench_fmt_size(cxl_pool_size(p), sz, sizeof(sz)),
	       bench_fmt_size(m.bytes, osz, sizeof(osz)),
	       m.gran >= (2u << 20) ? "2 MiB (devdax/hugetlbfs)" : "4 KiB");
	fflush(stdout);
	/* Passes round-robin, the best of each placement kept (rows->merge):
	 * a busy spell of the machine then hits every row alike. --advise
	 * compares small differences and makes three by default. */
	for (unsigned r = 0; r < a->rounds; r++)
		for (size_t i = 0; i < npl && !bench_interrupted && !ret; i++)
			ret = run_placement(&m, &pl[i], a, label, rows, valid);
	if (stream_mem_fini(&m))
		ret = -1;
	if (cxl_pool_detach(p)) {
		fprintf(stderr, "cxlbench: cannot detach the pool: %s\n",
			cxl_errmsg());
		ret = -1;
	}
	return ret;
}

/* STREAM in each mode asked for, or the advice in the pool's own mode */
static int stream_body(struct stream_run *r)
{
	unsigned modes =
		r->a.b.modes ? r->a.b.modes : stream_default_modes(&r->o);

	r->rows.merge = r->a.rounds > 1;
	if (r->a.advise && !r->a.b.modes) {
		/* the mode this pool attaches in by default */
		if (run_mode(&r->o, 0, false, &r->a, r->n, &r->rows, &r->valid))
			return -1;
	} else {
		for (int m = CXL_COH_COHERENT; m <= CXL_COH_EMULATED; m++)
			if ((modes & (1u << m)) && !bench_interrupted &&
			    run_mode(&r->o, m, true, &r->a, r->n, &r->rows,
				     &r->valid))
				return -1;
	}
	if (!r->rows.n) {
		fprintf(stderr, "cxlbench stream: nothing was measured (see "
				"above); pick another --mode\n");
		return -1;
	}
	if (r->a.advise)
		stream_print_advice(&r->rows);
	else
		stream_print_placements(&r->rows);
	return 0;
}

int cxlbench_stream_main(int argc, char **argv)
{
	return stream_cmd_main("stream", argc, argv, stream_body);
}
