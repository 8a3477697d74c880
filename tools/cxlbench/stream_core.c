/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The STREAM kernels, timing and validation, as in McCalpin's stream.c
 * 5.10 (single-threaded), and the byte model the reports explain the
 * placements with. Compiled with -O3 (tools/CMakeLists.txt) so that the
 * kernels vectorise as STREAM's do.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/toolutil.h"
#include "stream.h"

const char *const stream_kname[K_N] = { "Copy", "Scale", "Add", "Triad" };
const char *const stream_kformula[K_N] = { "c = a", "b = s*c", "c = a + b",
					   "a = b + s*c" };
const unsigned stream_kreads[K_N] = { 1u << ARR_A, 1u << ARR_C,
				      1u << ARR_A | 1u << ARR_B,
				      1u << ARR_B | 1u << ARR_C };
const unsigned stream_kwrites[K_N] = { ARR_C, ARR_B, ARR_C, ARR_A };
const unsigned stream_karrays[K_N] = { 2, 2, 3, 3 };

uint64_t stream_llc_bytes(void)
{
	static const char dir[] = "/sys/devices/system/cpu/cpu0/cache";
	uint64_t best = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		char path[512], buf[64];
		unsigned long long v;
		int level = 0;
		char unit = 0;
		FILE *f;

		if (strncmp(e->d_name, "index", 5))
			continue;
		snprintf(path, sizeof(path), "%s/%s/level", dir, e->d_name);
		if ((f = fopen(path, "r"))) {
			if (fscanf(f, "%d", &level) != 1)
				level = 0;
			fclose(f);
		}
		if (level != 3)
			continue;
		snprintf(path, sizeof(path), "%s/%s/size", dir, e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		/* "32768K" */
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%llu%c", &v, &unit) >= 1) {
			v <<= unit == 'K' ? 10 : unit == 'M' ? 20 : 0;
			best = v > best ? v : best;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return best;
}

double stream_now(void)
{
	return 1e-9 * (double)cxl_now_ns();
}

/* ---- kernels ----------------------------------------------------------- */

#if defined(__x86_64__)
/*
 * Streaming stores of x[i] for i in [0, n) into d: scalar up to a 16-byte
 * boundary, then pairs with movntpd. The caller's fence (cxl_wfence)
 * orders them before whatever it publishes next.
 */
#define NT_LOOP(d, n, expr)                                               \
	do {                                                              \
		size_t i_ = 0;                                            \
		for (; i_ < (n) && ((uintptr_t)((d) + i_) & 15); i_++) {  \
			size_t j = i_;                                    \
			(d)[j] = (expr);                                  \
		}                                                         \
		for (; i_ + 2 <= (n); i_ += 2) {                          \
			size_t j = i_;                                    \
			double lo_ = (expr);                              \
			j = i_ + 1;                                       \
			_mm_stream_pd(&(d)[i_], _mm_set_pd((expr), lo_)); \
		}                                                         \
		for (; i_ < (n); i_++) {                                  \
			size_t j = i_;                                    \
			(d)[j] = (expr);                                  \
		}                                                         \
	} while (0)
#else
#define NT_LOOP(d, n, expr)                      \
	do {                                     \
		for (size_t j = 0; j < (n); j++) \
			(d)[j] = (expr);         \
	} while (0)
#endif

static void k_copy(double *restrict c, const double *restrict a, size_t n,
		   bool nt)
{
	if (nt)
		NT_LOOP(c, n, a[j]);
	else
		for (size_t j = 0; j < n; j++)
			c[j] = a[j];
}

static void k_scale(double *restrict b, const double *restrict c, size_t n,
		    bool nt)
{
	const double s = STREAM_SCALAR;

	if (nt)
		NT_LOOP(b, n, s * c[j]);
	else
		for (size_t j = 0; j < n; j++)
			b[j] = s * c[j];
}

static void k_add(double *restrict c, const double *restrict a,
		  const double *restrict b, size_t n, bool nt)
{
	if (nt)
		NT_LOOP(c, n, a[j] + b[j]);
	else
		for (size_t j = 0; j < n; j++)
			c[j] = a[j] + b[j];
}

static void k_triad(double *restrict a, const double *restrict b,
		    const double *restrict c, size_t n, bool nt)
{
	const double s = STREAM_SCALAR;

	if (nt)
		NT_LOOP(a, n, b[j] + s * c[j]);
	else
		for (size_t j = 0; j < n; j++)
			a[j] = b[j] + s * c[j];
}

void stream_kernel(enum stream_kernel k, double *a, double *b, double *c,
		   size_t first, size_t count, bool nt)
{
	a += first, b += first, c += first;
	switch (k) {
	case K_COPY:
		k_copy(c, a, count, nt);
		break;
	case K_SCALE:
		k_scale(b, c, count, nt);
		break;
	case K_ADD:
		k_add(c, a, b, count, nt);
		break;
	default:
		k_triad(a, b, c, count, nt);
		break;
	}
}

/* ---- validation: STREAM's checkSTREAMresults --------------------------- */

static int check_array(FILE *out, const char *label, char name, const double *x,
		       size_t n, double expect)
{
	double sum = 0, avg;
	size_t bad = 0;

	for (size_t j = 0; j < n; j++)
		sum += fabs(x[j] - expect);
	avg = sum / (double)n;
	if (fabs(avg / expect) <= STREAM_EPSILON)
		return 0;
	for (size_t j = 0; j < n; j++)
		if (fabs(x[j] / expect - 1.0) > STREAM_EPSILON)
			bad++;
	fprintf(out,
		"%sFailed Validation on array %c[], AvgRelAbsErr > "
		"epsilon (%e)\n"
		"%s     Expected Value: %e, AvgAbsErr: %e, AvgRelAbsErr: "
		"%e\n"
		"%s     For array %c[], %zu errors were found.\n",
		label, name, STREAM_EPSILON, label, expect, avg,
		fabs(avg) / expect, label, name, bad);
	return 1;
}

static bool check(const struct stream_job *j, FILE *out)
{
	double aj = 1.0, bj = 2.0, cj = 0.0;
	const char *l = j->label ? j->label : "";
	int err = 0;

	aj = 2.0E0 * aj; /* a[] is modified during the timing check */
	for (unsigned k = 0; k < j->ntimes; k++) {
		cj = aj;
		bj = STREAM_SCALAR * cj;
		cj = aj + bj;
		aj = bj + STREAM_SCALAR * cj;
	}
	err += check_array(out, l, 'a', j->a, j->n, aj);
	err += check_array(out, l, 'b', j->b, j->n, bj);
	err += check_array(out, l, 'c', j->c, j->n, cj);
	if (!err)
		fprintf(out,
			"%sSolution Validates: avg error less than %e on all "
			"three arrays\n",
			l, STREAM_EPSILON);
	return !err;
}

/* ---- the run ----------------------------------------------------------- */

void stream_run(const struct stream_job *j, struct stream_stats *st, FILE *out)
{
	double *a = j->a, *b = j->b, *c = j->c;

	memset(st, 0, sizeof(*st));
	for (int k = 0; k < K_N; k++)
		st->min_s[k] = HUGE_VAL;
	/* First touch: DRAM pages are placed by the first write. */
	for (size_t i = 0; i < j->n; i++) {
		a[i] = 1.0;
		b[i] = 2.0;
		c[i] = 0.0;
	}
	j->sync(j->arg, false);
	/* STREAM's clock-granularity check writes a once, untimed here. */
	for (size_t i = 0; i < j->n; i++)
		a[i] = 2.0E0 * a[i];
	j->sync(j->arg, false);

	for (unsigned it = 0; it < j->ntimes; it++) {
		for (int k = 0; k < K_N; k++) {
			struct cxl_coh_counters c0, c1;
			double t;

			cxl_coh_counters_get(&c0);
			t = stream_now();
			j->step(j->arg, k);
			t = stream_now() - t;
			cxl_coh_counters_get(&c1);
			if (it == 0) /* STREAM excludes the first iteration */
				continue;
			tool_coh_add_delta(&st->ops[k], &c1, &c0);
			st->avg_s[k] += t;
			st->min_s[k] = t < st->min_s[k] ? t : st->min_s[k];
			st->max_s[k] = t > st->max_s[k] ? t : st->max_s[k];
		}
	}
	for (int k = 0; k < K_N; k++)
		st->avg_s[k] /= (double)(j->ntimes - 1);
	j->sync(j->arg, true);
	st->valid = check(j, out);
}

double stream_mbs(enum stream_kernel k, size_t n, double best_s)
{
	return 1.0E-06 * (double)(stream_karrays[k] * sizeof(double) * n) /
	       best_s;
}

void stream_byte_model(enum stream_kernel k, const double frac[ARR_N],
		       bool nt_pool, struct stream_bytes *o)
{
	const double e = sizeof(double);
	unsigned w = stream_kwrites[k];

	memset(o, 0, sizeof(*o));
	for (unsigned i = 0; i < ARR_N; i++) {
		if (!(stream_kreads[k] & (1u << i)))
			continue;
		o->dram_rd += e * (1 - frac[i]);
		o->pool_rd += e * frac[i];
	}
	o->dram_wr = e * (1 - frac[w]);
	o->pool_wr = e * frac[w];
	/* write-allocate: the line is read before it is written */
	o->dram_rd += e * (1 - frac[w]);
	if (!nt_pool)
		o->pool_rd += e * frac[w];
}
