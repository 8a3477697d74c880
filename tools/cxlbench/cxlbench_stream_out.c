/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Results of 'cxlbench stream' and 'cxlbench pmem': CSV rows as they are
 * measured, then per mode the tables, the winner per kernel explained by
 * the byte model, the DRAM-only / pool-only ratios, and the advice.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cxlbench_stream.h"

static const char csv_header[] =
	"mode,placement,persist,kernel,elements,ntimes,best_mb_s,avg_s,min_s,"
	"max_s,flush_lines,inval_lines,fences,nt_lines,dram_rd_b_per_elem,"
	"dram_wr_b_per_elem,pool_rd_b_per_elem,pool_wr_b_per_elem,"
	"interleave_bytes,valid\n";

static const char arr_name[ARR_N] = { 'a', 'b', 'c' };

/* Coherence operations per iteration of kernel k. Streaming stores that
 * the kernels issue themselves (uncached mode) are counted here, by the
 * lines they cover: the library counts only its own. */
struct kops {
	double flush, inval, fences, nt;
};

static void row_ops(const struct stream_row *x, int k, struct kops *o)
{
	const struct cxl_coh_counters *c = &x->st.ops[k];
	double it = x->ntimes - 1;

	o->flush = (double)c->flush_lines / it;
	o->inval = (double)c->inval_lines / it;
	o->fences = (double)c->fences / it;
	o->nt = (double)(c->nt_lines + c->nt_stores + c->nt_loads) / it;
	if (x->nt_pool)
		o->nt += ceil(x->frac[stream_kwrites[k]] * (double)x->n *
			      sizeof(double) / CXL_LINE);
}

int stream_csv_open(struct stream_rows *r, const char *path)
{
	r->csv = tool_csv_open("cxlbench", path, csv_header);
	return r->csv ? 0 : -1;
}

static void csv_row(FILE *f, const struct stream_row *x, int k);

int stream_csv_close(struct stream_rows *r, const char *path)
{
	if (!r->csv)
		return 0;
	for (size_t i = 0; r->merge && i < r->n; i++)
		for (int k = 0; k < K_N; k++)
			csv_row(r->csv, &r->v[i], k);
	return tool_csv_close("cxlbench", &r->csv, path);
}

static void csv_row(FILE *f, const struct stream_row *x, int k)
{
	struct stream_bytes b;
	struct kops o;

	stream_byte_model(k, x->frac, x->nt_pool, &b);
	row_ops(x, k, &o);
	fprintf(f,
		"%s,%s,%d,%s,%zu,%u,%.6g,%.6g,%.6g,%.6g,%.10g,%.10g,%.10g,"
		"%.10g,%.4g,%.4g,%.4g,%.4g,%llu,%d\n",
		x->mode, x->place, x->persist, stream_kname[k], x->n, x->ntimes,
		x->mbs[k], x->st.avg_s[k], x->st.min_s[k], x->st.max_s[k],
		o.flush, o.inval, o.fences, o.nt, b.dram_rd, b.dram_wr,
		b.pool_rd, b.pool_wr,
		(unsigned long long)(x->where[0] == 'I' ? x->gran : 0),
		x->st.valid);
}

/* Fold a repetition into y: best and worst times, mean of the means. */
static void merge_row(struct stream_row *y, const struct stream_row *x)
{
	for (int k = 0; k < K_N; k++) {
		y->st.avg_s[k] = (y->st.avg_s[k] + x->st.avg_s[k]) / 2;
		y->st.max_s[k] = fmax(y->st.max_s[k], x->st.max_s[k]);
		if (x->st.min_s[k] < y->st.min_s[k]) {
			y->st.min_s[k] = x->st.min_s[k];
			y->mbs[k] = x->mbs[k];
		}
	}
	y->st.valid = y->st.valid && x->st.valid;
}

/* Rows are written as they are measured, unless repetitions are merged:
 * then the best of each is written at the end (stream_csv_close). */
int stream_rows_add(struct stream_rows *r, const struct stream_row *x)
{
	for (int k = 0; r->csv && !r->merge && k < K_N; k++)
		csv_row(r->csv, x, k);
	if (r->csv)
		fflush(r->csv);
	for (size_t i = 0; r->merge && i < r->n; i++)
		if (!strcmp(r->v[i].mode, x->mode) &&
		    !strcmp(r->v[i].place, x->place)) {
			merge_row(&r->v[i], x);
			return 0;
		}
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		struct stream_row *v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			fprintf(stderr, "cxlbench: out of memory for results; "
					"free some memory and retry\n");
			return -1;
		}
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *x;
	return 0;
}

void stream_rows_free(struct stream_rows *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* ---- helpers ------------------------------------------------------------ */

static const struct stream_row *find(const struct stream_rows *r,
				     const char *mode, const char *place)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].mode, mode) &&
		    !strcmp(r->v[i].place, place))
			return &r->v[i];
	return NULL;
}

/* The modes in the order measured; returns how many. */
static size_t modes_of(const struct stream_rows *r, const char **out)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++) {
		size_t j;

		for (j = 0; j < n && strcmp(out[j], r->v[i].mode); j++)
			;
		if (j == n)
			out[n++] = r->v[i].mode;
	}
	return n;
}

/* "a" alone in the pool: "PDD". */
static void single(int arr, char *place)
{
	for (int i = 0; i < ARR_N; i++)
		place[i] = i == arr ? 'P' : 'D';
	place[ARR_N] = '\0';
}

static void fmt_count(double v, char *buf, size_t cap)
{
	if (v >= 1e6)
		snprintf(buf, cap, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, cap, "%.0fk", v / 1e3);
	else
		snprintf(buf, cap, v == (double)(uint64_t)v ? "%.0f" : "%.1f",
			 v);
}

static void fmt_bytes(double v, char *buf, size_t cap)
{
	snprintf(buf, cap, v == (double)(uint64_t)v ? "%.0f" : "%.1f", v);
}

/* ---- the placement tables ----------------------------------------------- */

static void print_mode_tables(const struct stream_rows *r, const char *mode)
{
	const struct stream_row *first = NULL;

	for (size_t i = 0; i < r->n && !first; i++)
		if (!strcmp(r->v[i].mode, mode))
			first = &r->v[i];
	printf("\nSTREAM, mode %s: best MB/s (%zu doubles per array, best "
	       "of iterations 2..%u)\n",
	       mode, first->n, first->ntimes);
	printf("%-9s %9s %9s %9s %9s    pool bytes/element read+written "
	       "(model)\n",
	       "a/b/c", "Copy", "Scale", "Add", "Triad");
	for (size_t i = 0; i < r->n; i++) {
		const struct stream_row *x = &r->v[i];

		if (strcmp(x->mode, mode))
			continue;
		printf("%-9s", x->place);
		for (int k = 0; k < K_N; k++)
			printf(" %9.0f", x->mbs[k]);
		printf("   ");
		for (int k = 0; k < K_N; k++) {
			struct stream_bytes b;
			char rd[16], wr[16], cell[40];

			stream_byte_model(k, x->frac, x->nt_pool, &b);
			fmt_bytes(b.pool_rd, rd, sizeof(rd));
			fmt_bytes(b.pool_wr, wr, sizeof(wr));
			snprintf(cell, sizeof(cell), "%s+%s", rd, wr);
			printf(" %9s", cell);
		}
		printf("%s\n", x->st.valid ? "" : "  FAILED VALIDATION");
	}
	printf("  coherence ops per kernel: flushed lines/invalidated "
	       "lines/fences/streamed lines\n");
	for (size_t i = 0; i < r->n; i++) {
		const struct stream_row *x = &r->v[i];

		if (strcmp(x->mode, mode))
			continue;
		printf("  %-7s", x->place);
		for (int k = 0; k < K_N; k++) {
			char f[16], v[16], e[16], t[16], cell[80];
			struct kops o;

			row_ops(x, k, &o);
			fmt_count(o.flush, f, sizeof(f));
			fmt_count(o.inval, v, sizeof(v));
			fmt_count(o.fences, e, sizeof(e));
			fmt_count(o.nt, t, sizeof(t));
			snprintf(cell, sizeof(cell), "%s/%s/%s/%s", f, v, e, t);
			printf(" %21s", cell);
		}
		printf("\n");
	}
}

/* Relative spread of a measurement: average over best, at least 5%. */
static double noise(const struct stream_row *x, int k)
{
	return fmax((x->st.avg_s[k] - x->st.min_s[k]) / x->st.min_s[k], 0.05);
}

/* Pool bytes per element when array i alone is in the pool, for k. */
static double alone_bytes(int k, int i, bool nt)
{
	double frac[ARR_N] = { 0 };
	struct stream_bytes b;

	frac[i] = 1;
	stream_byte_model(k, frac, nt, &b);
	return b.pool_rd + b.pool_wr;
}

static void print_winners(const struct stream_rows *r, const char *mode)
{
	printf("\nwinner per kernel, mode %s (byte model: a read array moves "
	       "8 B/element from its medium; the written one 8 B to it, plus "
	       "8 B read first by write-allocate unless streamed)\n",
	       mode);
	for (int k = 0; k < K_N; k++) {
		const struct stream_row *best = NULL, *ddd, *ppp;
		struct stream_bytes b;
		char place[ARR_N + 1];
		int order[ARR_N], n = 0;
		bool agree = true;

		for (size_t i = 0; i < r->n; i++)
			if (!strcmp(r->v[i].mode, mode) &&
			    (!best || r->v[i].mbs[k] > best->mbs[k]))
				best = &r->v[i];
		stream_byte_model(k, best->frac, best->nt_pool, &b);
		printf("  %-5s %-11s winner %-5s %6.0f MB/s (pool %.3g B/elem, "
		       "DRAM %.3g)",
		       stream_kname[k], stream_kformula[k], best->place,
		       best->mbs[k], b.pool_rd + b.pool_wr,
		       b.dram_rd + b.dram_wr);
		ddd = find(r, mode, "DDD");
		ppp = find(r, mode, "PPP");
		if (ddd && ppp)
			printf("; DRAM-only/pool-only %.2fx",
			       ddd->mbs[k] / ppp->mbs[k]);
		printf("\n");

		/* The arrays it touches, each alone in the pool, ordered by
		 * measured rate; the model orders them by pool bytes. */
		for (int i = 0; i < ARR_N; i++) {
			single(i, place);
			if ((stream_kreads[k] & (1u << i) ||
			     stream_kwrites[k] == (unsigned)i) &&
			    find(r, mode, place))
				order[n++] = i;
		}
		if (!n)
			continue;
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0; j--) {
				const struct stream_row *x, *y;
				char p1[ARR_N + 1], p2[ARR_N + 1];
				int t;

				single(order[j - 1], p1);
				single(order[j], p2);
				x = find(r, mode, p1);
				y = find(r, mode, p2);
				if (x->mbs[k] >= y->mbs[k])
					break;
				t = order[j], order[j] = order[j - 1],
				order[j - 1] = t;
			}
		printf("        alone in the pool:");
		for (int i = 0; i < n; i++) {
			const struct stream_row *x;
			bool nt;

			single(order[i], place);
			x = find(r, mode, place);
			nt = x->nt_pool;
			printf(" %c %.0f (%s %.0f B)%s", arr_name[order[i]],
			       x->mbs[k],
			       stream_kwrites[k] == (unsigned)order[i]
				       ? nt ? "writes" : "writes+allocates"
				       : "reads",
			       alone_bytes(k, order[i], nt),
			       i + 1 < n ? "," : "");
			/* Out of the model's order by more than the noise
			 * of either measurement? */
			if (i && alone_bytes(k, order[i], nt) <
					 alone_bytes(k, order[i - 1], nt)) {
				const struct stream_row *y;
				char p[ARR_N + 1];

				single(order[i - 1], p);
				y = find(r, mode, p);
				if (y->mbs[k] / x->mbs[k] - 1 >
				    fmax(noise(x, k), noise(y, k)))
					agree = false;
			}
		}
		printf("; %s\n",
		       agree ? "the model's order, or within noise"
			     : "NOT the model's order beyond the noise: bytes "
			       "are not what costs most here (see the "
			       "coherence ops)");
	}
}

void stream_print_placements(const struct stream_rows *r)
{
	const char **modes = calloc(r->n, sizeof(*modes));
	size_t nm;

	if (!modes)
		return;
	nm = modes_of(r, modes);
	for (size_t m = 0; m < nm; m++) {
		print_mode_tables(r, modes[m]);
		print_winners(r, modes[m]);
	}
	free(modes);
}

/* ---- advice ----------------------------------------------------------------
 */

/* Extra time of array i alone in the pool over DDD, for kernel k. */
static double extra_s(const struct stream_rows *r, const char *mode, int k,
		      int i)
{
	const struct stream_row *d = find(r, mode, "DDD"), *x;
	char place[ARR_N + 1];

	single(i, place);
	x = find(r, mode, place);
	return x->st.min_s[k] - d->st.min_s[k];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void advise_mode(const struct stream_rows *r, const char *mode)
{
	const struct stream_row *d = find(r, mode, "DDD");
	double total[ARR_N] = { 0 }, base = 0, noise = 0, rd[8], wr[8];
	int nrd = 0, nwr = 0, rank[ARR_N] = { ARR_A, ARR_B, ARR_C };

	for (int k = 0; k < K_N; k++) {
		double z = (d->st.avg_s[k] - d->st.min_s[k]) / d->st.min_s[k];

		base += d->st.min_s[k];
		noise = z > noise ? z : noise;
	}
	printf("\nadvice, mode %s: each array alone in the pool, extra time "
	       "over DDD (best times; noise: DDD's average is up to %.1f%% "
	       "above its best)\n",
	       mode, 100 * noise);
	printf("  %-5s %-11s %10s %10s %10s\n", "", "", "a", "b", "c");
	for (int k = 0; k < K_N; k++) {
		printf("  %-5s %-11s", stream_kname[k], stream_kformula[k]);
		for (int i = 0; i < ARR_N; i++) {
			double e = extra_s(r, mode, k, i);
			bool wrote = stream_kwrites[k] == (unsigned)i;
			char cell[24];

			total[i] += e;
			if (!wrote && !(stream_kreads[k] & (1u << i))) {
				printf(" %10s", "-");
				continue;
			}
			/* ns per 8-byte element read, or written */
			if (wrote)
				wr[nwr++] = e * 1e9 / (double)d->n;
			else
				rd[nrd++] = e * 1e9 / (double)d->n;
			snprintf(cell, sizeof(cell), "%+.1f%%%s",
				 100 * e / d->st.min_s[k], wrote ? " w" : "");
			printf(" %10s", cell);
		}
		printf("\n");
	}
	for (int i = 1; i < ARR_N; i++)
		for (int j = i; j > 0 && total[rank[j]] < total[rank[j - 1]];
		     j--) {
			int t = rank[j];

			rank[j] = rank[j - 1];
			rank[j - 1] = t;
		}
	printf("  all four kernels:");
	for (int i = 0; i < ARR_N; i++)
		printf(" %c %+.1f%%%s", arr_name[rank[i]],
		       100 * total[rank[i]] / base, i + 1 < ARR_N ? "," : "");
	printf("  (a: read 2x, written 1x; b: 2x, 1x; c: 2x, 2x)\n");
	{
		double mr = median(rd, nrd), mw = median(wr, nwr);

		printf("  cost of the pool per 8-byte element: read %+.3f ns, "
		       "written %+.3f ns (store%s, write-back, fence)",
		       mr, mw,
		       d->nt_pool ? " streamed" : " + write-allocate read");
		if (mr > 0 && mw > 0)
			printf(": a written element costs %.1f read ones",
			       mw / mr);
		printf("\n");
	}
	printf("  => put %c in the pool first, then %c, then %c",
	       arr_name[rank[0]], arr_name[rank[1]], arr_name[rank[2]]);
	if ((total[rank[2]] - total[rank[0]]) / base < noise)
		printf(" (differences within noise: any order costs the same "
		       "on this pool)");
	printf("\n  per kernel, first in the pool:");
	for (int k = 0; k < K_N; k++) {
		int b = -1;

		for (int i = 0; i < ARR_N; i++) {
			if (stream_kwrites[k] != (unsigned)i &&
			    !(stream_kreads[k] & (1u << i)))
				continue;
			if (b < 0 ||
			    extra_s(r, mode, k, i) < extra_s(r, mode, k, b))
				b = i;
		}
		printf(" %s %c%s", stream_kname[k], arr_name[b],
		       k + 1 < K_N ? "," : "\n");
	}
	printf("  rule (docs/characterization.md): per element of your loop, "
	       "cost(array) = reads x %.3f ns + writes x %.3f ns on this "
	       "pool; move the cheapest arrays first\n",
	       median(rd, nrd), median(wr, nwr));
}

void stream_print_advice(const struct stream_rows *r)
{
	const char **modes = calloc(r->n, sizeof(*modes));
	size_t nm;

	if (!modes)
		return;
	nm = modes_of(r, modes);
	for (size_t m = 0; m < nm; m++) {
		char place[ARR_N + 1];
		bool ok = find(r, modes[m], "DDD");

		for (int i = 0; i < ARR_N; i++) {
			single(i, place);
			ok = ok && find(r, modes[m], place);
		}
		if (ok)
			advise_mode(r, modes[m]);
		else
			printf("\nadvice, mode %s: interrupted before every "
			       "placement was measured\n",
			       modes[m]);
	}
	free(modes);
}

/* ---- STREAM-PMem -----------------------------------------------------------
 */

void stream_print_pmem(const struct stream_rows *r)
{
	printf("\nSTREAM-PMem: best MB/s, volatile (no persistence) next to "
	       "persistent (persisted after every kernel)\n");
	printf("%-22s %-6s %10s %10s %7s %12s %8s\n", "arrays", "kernel",
	       "volatile", "persistent", "ratio", "flushed/kern", "fences");
	for (size_t i = 0; i < r->n; i++) {
		const struct stream_row *v = &r->v[i], *p = NULL;

		if (v->persist)
			continue;
		for (size_t j = 0; j < r->n; j++)
			if (r->v[j].persist && !strcmp(r->v[j].mode, v->mode) &&
			    !strcmp(r->v[j].place, v->place))
				p = &r->v[j];
		for (int k = 0; k < K_N; k++) {
			char label[64], f[16], e[16];
			struct kops o = { 0 };

			snprintf(label, sizeof(label), "%s%s%s", v->place,
				 strcmp(v->place, v->mode) ? " " : "",
				 strcmp(v->place, v->mode) ? v->mode : "");
			if (p)
				row_ops(p, k, &o);
			fmt_count(o.flush, f, sizeof(f));
			fmt_count(o.fences, e, sizeof(e));
			if (p)
				printf("%-22s %-6s %10.0f %10.0f %7.2f %12s "
				       "%8s\n",
				       k ? "" : label, stream_kname[k],
				       v->mbs[k], p->mbs[k],
				       p->mbs[k] / v->mbs[k], f, e);
			else
				printf("%-22s %-6s %10.0f %10s\n",
				       k ? "" : label, stream_kname[k],
				       v->mbs[k], "-");
		}
	}
}
