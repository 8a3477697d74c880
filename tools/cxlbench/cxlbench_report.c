/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cxlbench results: kept in memory for the tables printed at the end, and
 * written to the --csv file as they are measured (an interrupted run keeps
 * the rows it finished).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlbench.h"

static const char csv_header[] =
	"test,mode,insn,size_bytes,threads,value,unit,flush_lines_per_op,"
	"inval_lines_per_op,fences_per_op,nt_per_op\n";

int bench_csv_open(struct bench_results *r, const char *path)
{
	r->csv = tool_csv_open("cxlbench", path, csv_header);
	return r->csv ? 0 : -1;
}

int bench_csv_close(struct bench_results *r, const char *path)
{
	return tool_csv_close("cxlbench", &r->csv, path);
}

int bench_add(struct bench_results *r, const struct bench_result *res)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct bench_result *v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			fprintf(stderr,
				"cxlbench: out of memory for "
				"results; free some memory and retry\n");
			return -1;
		}
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *res;
	if (r->csv)
		fprintf(r->csv,
			"%s,%s,%s,%llu,%u,%.6g,%s,%.10g,%.10g,%.10g,"
			"%.10g\n",
			res->test, res->mode, res->insn,
			(unsigned long long)res->size, res->threads, res->value,
			res->unit, res->flush, res->inval, res->fences,
			res->nt);
	return 0;
}

void bench_results_free(struct bench_results *r)
{
	free(r->v);
	r->v = NULL;
	r->n = r->cap = 0;
}

const char *bench_fmt_size(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, cap, "%llu%s", (unsigned long long)bytes, unit[u]);
	return buf;
}

/* ---- tables ------------------------------------------------------------ */

/* Test name (as in the CSV), table title, and the column axis. */
struct table_def {
	const char *test;
	const char *title;
	bool by_threads; /* columns are thread counts, else sizes */
};

static const struct table_def tables[] = {
	{ "write_flush",
	  "write+flush latency, ns/op "
	  "(cxl_copy_to_pool + cxl_wfence)",
	  false },
	{ "read_inval", "read+invalidate latency, ns/op (cxl_copy_from_pool)",
	  false },
	{ "pointer_chase",
	  "pointer-chase latency, ns/load (random cycle of "
	  "64 B lines)",
	  false },
	{ "copy_bw",
	  "copy bandwidth from local DRAM, GB/s over all threads "
	  "(cxl_copy_to_pool + cxl_wfence)",
	  true },
};

#define CELL 128

static uint64_t col_key(const struct bench_result *x, bool by_threads)
{
	return by_threads ? x->threads : x->size;
}

static bool same_row(const struct bench_result *a, const struct bench_result *b)
{
	return !strcmp(a->mode, b->mode) && !strcmp(a->insn, b->insn);
}

static void row_label(const struct bench_result *x, char *buf)
{
	if (strcmp(x->insn, "none"))
		snprintf(buf, CELL, "%s/%s", x->mode, x->insn);
	else
		snprintf(buf, CELL, "%s", x->mode);
}

static void col_label(uint64_t key, bool by_threads, char *buf)
{
	if (by_threads)
		snprintf(buf, CELL, "%llu thr", (unsigned long long)key);
	else
		bench_fmt_size(key, buf, CELL);
}

/* Three significant-ish digits without exponents. */
static void fmt_num(double v, char *buf, size_t cap)
{
	snprintf(buf, cap, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
}

/* Counts per operation: whole numbers print without decimals. */
static void fmt_count(double v, char *buf, size_t cap)
{
	snprintf(buf, cap, v == (double)(uint64_t)v ? "%.0f" : "%.2f", v);
}

static void fmt_cell(const struct bench_result *x, bool ops, char *buf)
{
	char f[24], i[24], fe[24], nt[24];

	if (!ops) {
		fmt_num(x->value, buf, CELL);
		return;
	}
	fmt_count(x->flush, f, sizeof(f));
	fmt_count(x->inval, i, sizeof(i));
	fmt_count(x->fences, fe, sizeof(fe));
	fmt_count(x->nt, nt, sizeof(nt));
	snprintf(buf, CELL, "%s/%s/%s/%s", f, i, fe, nt);
}

static const struct bench_result *find(const struct bench_results *r,
				       const struct table_def *d,
				       const struct bench_result *row,
				       uint64_t key)
{
	for (size_t k = 0; k < r->n; k++)
		if (!strcmp(r->v[k].test, d->test) && same_row(&r->v[k], row) &&
		    col_key(&r->v[k], d->by_threads) == key)
			return &r->v[k];
	return NULL;
}

/*
 * Rows are the targets in the order they were measured, columns the sizes
 * or thread counts in the order they were measured. With ops set, cells
 * are the counter columns instead of the value.
 */
static void print_table(const struct bench_results *r,
			const struct table_def *d, bool ops)
{
	const struct bench_result **rows = calloc(r->n, sizeof(*rows));
	uint64_t *cols = calloc(r->n, sizeof(*cols));
	size_t nrows = 0, ncols = 0, lw = 0, cw = 0;
	char buf[CELL];

	if (!rows || !cols) {
		fprintf(stderr, "cxlbench: out of memory for a table; free "
				"some memory, or use --csv for the results\n");
		goto out;
	}
	for (size_t k = 0; k < r->n; k++) {
		const struct bench_result *x = &r->v[k];
		size_t i;

		if (strcmp(x->test, d->test))
			continue;
		for (i = 0; i < nrows && !same_row(rows[i], x); i++)
			;
		if (i == nrows)
			rows[nrows++] = x;
		for (i = 0; i < ncols && cols[i] != col_key(x, d->by_threads);
		     i++)
			;
		if (i == ncols)
			cols[ncols++] = col_key(x, d->by_threads);
		row_label(x, buf);
		lw = strlen(buf) > lw ? strlen(buf) : lw;
		fmt_cell(x, ops, buf);
		cw = strlen(buf) > cw ? strlen(buf) : cw;
	}
	if (!nrows)
		goto out;
	for (size_t j = 0; j < ncols; j++) {
		col_label(cols[j], d->by_threads, buf);
		cw = strlen(buf) > cw ? strlen(buf) : cw;
	}

	if (ops)
		printf("  coherence ops per operation: flush lines/inval "
		       "lines/fences/nt ops\n");
	else
		printf("\n%s\n", d->title);
	printf("%-*s", (int)lw, "");
	for (size_t j = 0; j < ncols; j++) {
		col_label(cols[j], d->by_threads, buf);
		printf("  %*s", (int)cw, buf);
	}
	printf("\n");
	for (size_t i = 0; i < nrows; i++) {
		row_label(rows[i], buf);
		printf("%-*s", (int)lw, buf);
		for (size_t j = 0; j < ncols; j++) {
			const struct bench_result *x =
				find(r, d, rows[i], cols[j]);

			if (x)
				fmt_cell(x, ops, buf);
			else
				snprintf(buf, sizeof(buf), "-");
			printf("  %*s", (int)cw, buf);
		}
		printf("\n");
	}
out:
	free(rows);
	free(cols);
}

void bench_print_tables(const struct bench_results *r)
{
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		print_table(r, &tables[i], false);
		print_table(r, &tables[i], true);
	}
}

/* One line on the machine: host, CPU model, CPUs, flush instructions */
void bench_print_host(void)
{
	char host[64] = "?", model[128] = "unknown CPU", line[256];
	FILE *ci = fopen("/proc/cpuinfo", "r");
	struct cxl_cpu_features f;

	gethostname(host, sizeof(host) - 1);
	while (ci && fgets(line, sizeof(line), ci)) {
		char *v = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !v)
			continue;
		v += strspn(v, ": \t");
		v[strcspn(v, "\n")] = '\0';
		snprintf(model, sizeof(model), "%s", v);
		break;
	}
	if (ci)
		fclose(ci);
	cxl_cpu_features_get(&f);
	printf("cxlbench: host %s, %s, %ld online CPUs, flush instructions:"
	       "%s%s%s%s\n",
	       host, model, sysconf(_SC_NPROCESSORS_ONLN),
	       f.clflushopt ? " clflushopt" : "", f.clwb ? " clwb" : "",
	       f.clflush ? " clflush" : "",
	       f.clflushopt || f.clwb || f.clflush ? "" : " none");
}
