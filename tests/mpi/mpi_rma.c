/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI one-sided communication, checked against expected values, under
 * every synchronization: fence, PSCW, lock/unlock, lock_all with flush,
 * and request-based operations. In each, every rank does put, get,
 * accumulate (SUM, and MAXLOC on MPI_DOUBLE_INT), get_accumulate,
 * fetch_and_op, compare_and_swap, and a put and an accumulate with a
 * strided (derived) target datatype. The accumulate family targets one
 * rank from all ranks at once, so that atomicity is checked too: fetched
 * counter values must be a permutation of 0..n-1, and exactly one
 * compare-and-swap may win.
 *
 * Then: datatypes whose type map is out of memory order, and a result
 * buffer at MPI_BOTTOM; mutual exclusion under contention (every rank
 * increments a counter at rank 0 with get + put inside an exclusive
 * lock); a window created over malloc'd memory (not pool memory: the MPI
 * library's RMA); and a dynamic window (MPI_Win_create_dynamic), which
 * takes the MPI library's ordinary path.
 *
 * The window comes from MPI_Win_allocate: pool memory and a direct window
 * when libcxlmpi is loaded, the MPI library's otherwise (same checks).
 * Prints "rma: N checks, B bad" on rank 0 (totals over all ranks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define K 16 /* ints per region */

/* byte offsets of the regions of each rank's window */
enum {
	OFF_A = 0,			 /* put: K ints per origin */
	OFF_B = OFF_A + 64 * K * 4,	 /* get source: K ints */
	OFF_C = OFF_B + 256,		 /* accumulate SUM: K ints */
	OFF_D = OFF_C + 256,		 /* get_accumulate counter (long) */
	OFF_D2 = OFF_D + 64,		 /* fetch_and_op counter (long) */
	OFF_E = OFF_D2 + 64,		 /* compare_and_swap cell (int) */
	OFF_F = OFF_E + 64,		 /* strided put: 2K ints */
	OFF_F2 = OFF_F + 2 * K * 4 + 64, /* strided accumulate: 2K ints */
	OFF_G = OFF_F2 + 2 * K * 4 + 64, /* MAXLOC MPI_DOUBLE_INT */
	OFF_H = OFF_G + 64,		 /* exclusive-lock counter (long) */
	OFF_I = OFF_H + 64,		 /* put with swapped halves: K ints */
	OFF_J = OFF_I + K * 4 + 64,	 /* get_accumulate to MPI_BOTTOM */
	WIN_BYTES = OFF_J + 64,
};

enum sync {
	FENCE,
	PSCW,
	LOCK,
	LOCKALL,
	REQ,
	NSYNC
};
static const char *sync_name[] = { "fence", "pscw", "lock", "lock_all",
				   "request" };

struct dint {
	double v;
	int i;
};

static int me, n;
static long checks, bad;
static MPI_Win win;
static unsigned char *mem;
static MPI_Group all;
static MPI_Datatype strided; /* K ints, every other int */

static void check(int ok, const char *what, enum sync s)
{
	checks++;
	if (!ok) {
		bad++;
		fprintf(stderr, "rank %d: %s under %s: wrong\n", me, what,
			sync_name[s]);
	}
}

static int *ints(int off)
{
	return (int *)(mem + off);
}

/* Our window memory to its initial state, seen by every rank. */
static void reset(void)
{
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
	memset(mem, 0, WIN_BYTES);
	for (int i = 0; i < K; i++)
		ints(OFF_B)[i] = me * 7 + i;
	for (int i = 0; i < 2 * K; i++)
		ints(OFF_F)[i] = -5;
	*ints(OFF_E) = -1;
	((struct dint *)(mem + OFF_G))->v = -1e9;
	((struct dint *)(mem + OFF_G))->i = -1;
	MPI_Win_unlock(me, win);
	MPI_Barrier(MPI_COMM_WORLD);
}

static void open_epoch(enum sync s)
{
	if (s == FENCE)
		MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
	if (s == PSCW) {
		MPI_Win_post(all, 0, win);
		MPI_Win_start(all, 0, win);
	}
	if (s == LOCKALL || s == REQ)
		MPI_Win_lock_all(0, win);
}

static void close_epoch(enum sync s)
{
	if (s == FENCE)
		MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
	if (s == PSCW) {
		MPI_Win_complete(win);
		MPI_Win_wait(win);
	}
	if (s == LOCKALL || s == REQ)
		MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Around one operation to target t. */
static void before(enum sync s, int t, int type)
{
	if (s == LOCK)
		MPI_Win_lock(type, t, 0, win);
}

static void after(enum sync s, int t, MPI_Request *req)
{
	if (s == REQ)
		MPI_Wait(req, MPI_STATUS_IGNORE);
	if (s == LOCK)
		MPI_Win_unlock(t, win);
	if (s == LOCKALL || s == REQ)
		MPI_Win_flush(t, win);
}

static void put(enum sync s, const void *buf, int count, MPI_Datatype dt, int t,
		MPI_Aint disp, int tcount, MPI_Datatype tdt)
{
	MPI_Request r = MPI_REQUEST_NULL;

	before(s, t, MPI_LOCK_SHARED);
	if (s == REQ)
		MPI_Rput(buf, count, dt, t, disp, tcount, tdt, win, &r);
	else
		MPI_Put(buf, count, dt, t, disp, tcount, tdt, win);
	after(s, t, &r);
}

static void get(enum sync s, void *buf, int count, MPI_Datatype dt, int t,
		MPI_Aint disp)
{
	MPI_Request r = MPI_REQUEST_NULL;

	before(s, t, MPI_LOCK_SHARED);
	if (s == REQ)
		MPI_Rget(buf, count, dt, t, disp, count, dt, win, &r);
	else
		MPI_Get(buf, count, dt, t, disp, count, dt, win);
	after(s, t, &r);
}

static void acc(enum sync s, const void *buf, int count, MPI_Datatype dt, int t,
		MPI_Aint disp, int tcount, MPI_Datatype tdt, MPI_Op op)
{
	MPI_Request r = MPI_REQUEST_NULL;

	before(s, t, MPI_LOCK_SHARED);
	if (s == REQ)
		MPI_Raccumulate(buf, count, dt, t, disp, tcount, tdt, op, win,
				&r);
	else
		MPI_Accumulate(buf, count, dt, t, disp, tcount, tdt, op, win);
	after(s, t, &r);
}

static void get_acc(enum sync s, const long *in, long *out, int t,
		    MPI_Aint disp, MPI_Op op)
{
	MPI_Request r = MPI_REQUEST_NULL;

	before(s, t, MPI_LOCK_SHARED);
	if (s == REQ)
		MPI_Rget_accumulate(in, 1, MPI_LONG, out, 1, MPI_LONG, t, disp,
				    1, MPI_LONG, op, win, &r);
	else
		MPI_Get_accumulate(in, 1, MPI_LONG, out, 1, MPI_LONG, t, disp,
				   1, MPI_LONG, op, win);
	after(s, t, &r);
}

/* fetch_and_op and compare_and_swap have no request-based form */
static void fop(enum sync s, const long *in, long *out, int t, MPI_Aint disp)
{
	before(s, t, MPI_LOCK_SHARED);
	MPI_Fetch_and_op(in, out, MPI_LONG, t, disp, MPI_SUM, win);
	after(s == REQ ? LOCKALL : s, t, NULL);
}

static void cas(enum sync s, const int *in, const int *cmp, int *out, int t,
		MPI_Aint disp)
{
	before(s, t, MPI_LOCK_SHARED);
	MPI_Compare_and_swap(in, cmp, out, MPI_INT, t, disp, win);
	after(s == REQ ? LOCKALL : s, t, NULL);
}

/* Is v (n values) a permutation of 0..n-1? */
static int permutation(const long *v)
{
	char *seen = calloc((size_t)n, 1);
	int ok = seen != NULL;

	for (int i = 0; ok && i < n; i++) {
		ok = v[i] >= 0 && v[i] < n && !seen[v[i]];
		if (ok)
			seen[v[i]] = 1;
	}
	free(seen);
	return ok;
}

static void round_of(enum sync s)
{
	int right = (me + 1) % n, left = (me + n - 1) % n;
	int src[K], got[K], one[K], win_cas, cmp = -1, res = -2;
	long inc = 1, fetched = -1, fetched2 = -1, *all_f;
	struct dint mine = { me * 1.5, me };
	int ok;

	reset();
	for (int i = 0; i < K; i++) {
		src[i] = me * 1000 + i;
		one[i] = me + 1;
		got[i] = -1;
	}
	open_epoch(s);
	put(s, src, K, MPI_INT, right, OFF_A + me * K * 4, K, MPI_INT);
	get(s, got, K, MPI_INT, right, OFF_B);
	for (int t = 0; t < n; t++)
		acc(s, one, K, MPI_INT, t, OFF_C, K, MPI_INT, MPI_SUM);
	get_acc(s, &inc, &fetched, 0, OFF_D, MPI_SUM);
	fop(s, &inc, &fetched2, 0, OFF_D2);
	cas(s, &me, &cmp, &res, 0, OFF_E);
	put(s, src, K, MPI_INT, right, OFF_F, 1, strided);
	acc(s, &inc, 0, MPI_INT, right, OFF_F2, 0, MPI_INT, MPI_SUM); /* 0 */
	for (int i = 0; i < K; i++)
		one[i] = 1;
	for (int t = 0; t < n; t++)
		acc(s, one, K, MPI_INT, t, OFF_F2, 1, strided, MPI_SUM);
	acc(s, &mine, 1, MPI_DOUBLE_INT, 0, OFF_G, 1, MPI_DOUBLE_INT,
	    MPI_MAXLOC);
	close_epoch(s);

	/* what origins did to our window */
	MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win);
	ok = 1;
	for (int i = 0; i < K; i++)
		ok &= ints(OFF_A + left * K * 4)[i] == left * 1000 + i;
	check(ok, "put", s);
	ok = 1;
	for (int i = 0; i < K; i++)
		ok &= ints(OFF_C)[i] == n * (n + 1) / 2;
	check(ok, "accumulate", s);
	ok = 1;
	for (int i = 0; i < K; i++)
		ok &= ints(OFF_F)[2 * i] == left * 1000 + i &&
		      ints(OFF_F)[2 * i + 1] == -5;
	check(ok, "put with a strided target datatype", s);
	ok = 1;
	for (int i = 0; i < K; i++)
		ok &= ints(OFF_F2)[2 * i] == n && ints(OFF_F2)[2 * i + 1] == 0;
	check(ok, "accumulate with a strided target datatype", s);
	if (me == 0) {
		struct dint *g = (struct dint *)(mem + OFF_G);

		check(*(long *)(mem + OFF_D) == n, "get_accumulate total", s);
		check(*(long *)(mem + OFF_D2) == n, "fetch_and_op total", s);
		win_cas = *ints(OFF_E);
		check(win_cas >= 0 && win_cas < n, "compare_and_swap winner",
		      s);
		check(g->v == (n - 1) * 1.5 && g->i == n - 1,
		      "MAXLOC accumulate", s);
	}
	MPI_Win_unlock(me, win);
	/* what we fetched */
	ok = 1;
	for (int i = 0; i < K; i++)
		ok &= got[i] == right * 7 + i;
	check(ok, "get", s);
	all_f = malloc(sizeof(long) * (size_t)n);
	MPI_Allgather(&fetched, 1, MPI_LONG, all_f, 1, MPI_LONG,
		      MPI_COMM_WORLD);
	check(permutation(all_f), "get_accumulate: fetched values", s);
	MPI_Allgather(&fetched2, 1, MPI_LONG, all_f, 1, MPI_LONG,
		      MPI_COMM_WORLD);
	check(permutation(all_f), "fetch_and_op: fetched values", s);
	free(all_f);
	MPI_Bcast(&win_cas, 1, MPI_INT, 0, MPI_COMM_WORLD);
	check(me == win_cas ? res == -1 : res == win_cas,
	      "compare_and_swap result", s);
}

/*
 * Type maps out of memory order: a put whose target datatype lists the
 * second half of K ints before the first (same size as its true extent,
 * so it looks contiguous, but is not in order); a get_accumulate whose
 * result goes to MPI_BOTTOM with an absolute-address datatype.
 */
static void type_maps(void)
{
	int right = (me + 1) % n, left = (me + n - 1) % n, src[K], ok = 1;
	int len[2] = { K / 2, K / 2 }, one = 1;
	MPI_Aint disp[2] = { K / 2 * 4, 0 }, abs;
	MPI_Datatype swapped, at_abs;
	long inc = 5, res = -1;

	reset();
	MPI_Type_create_hindexed(2, len, disp, MPI_INT, &swapped);
	MPI_Type_commit(&swapped);
	MPI_Get_address(&res, &abs);
	MPI_Type_create_hindexed(1, &one, &abs, MPI_LONG, &at_abs);
	MPI_Type_commit(&at_abs);
	for (int i = 0; i < K; i++)
		src[i] = me * 100 + i;
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
	MPI_Put(src, K, MPI_INT, right, OFF_I, 1, swapped, win);
	MPI_Get_accumulate(&inc, 1, MPI_LONG, MPI_BOTTOM, 1, at_abs, right,
			   OFF_J, 1, MPI_LONG, MPI_SUM, win);
	MPI_Win_unlock(right, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win);
	for (int i = 0; i < K; i++) /* element i went to slot (i + K/2) % K */
		ok &= ints(OFF_I)[(i + K / 2) % K] == left * 100 + i;
	check(ok, "put with an out-of-order target datatype", LOCK);
	check(*(long *)(mem + OFF_J) == 5, "get_accumulate total", LOCK);
	MPI_Win_unlock(me, win);
	check(res == 0, "get_accumulate result at MPI_BOTTOM", LOCK);
	MPI_Type_free(&swapped);
	MPI_Type_free(&at_abs);
}

/* Every rank adds 1 to rank 0's counter rounds times: get, flush, put,
 * inside an exclusive lock. Any overlap of two holders loses updates. */
static void lock_counter(int rounds)
{
	long v, total;

	reset();
	for (int r = 0; r < rounds; r++) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		MPI_Get(&v, 1, MPI_LONG, 0, OFF_H, 1, MPI_LONG, win);
		MPI_Win_flush(0, win);
		v++;
		MPI_Put(&v, 1, MPI_LONG, 0, OFF_H, 1, MPI_LONG, win);
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Get(&total, 1, MPI_LONG, 0, OFF_H, 1, MPI_LONG, win);
	MPI_Win_unlock(0, win);
	check(total == (long)n * rounds, "exclusive-lock counter", LOCK);
	if (me == 0)
		printf("rma: lock counter %ld = %d ranks x %d\n", total, n,
		       rounds);
}

/* MPI_Win_create over malloc'd memory, fence, put to the right */
static void malloced(void)
{
	int *buf = calloc(K, sizeof(int)), src[K], right = (me + 1) % n;
	int left = (me + n - 1) % n, ok = 1;
	MPI_Win mw;

	MPI_Win_create(buf, K * sizeof(int), sizeof(int), MPI_INFO_NULL,
		       MPI_COMM_WORLD, &mw);
	for (int i = 0; i < K; i++)
		src[i] = me * 17 + i;
	MPI_Win_fence(0, mw);
	MPI_Put(src, K, MPI_INT, right, 0, K, MPI_INT, mw);
	MPI_Win_fence(0, mw);
	for (int i = 0; i < K; i++)
		ok &= buf[i] == left * 17 + i;
	check(ok, "put on a window over malloc'd memory", FENCE);
	MPI_Win_free(&mw);
	free(buf);
}

/* MPI_Win_create_dynamic: attach, exchange addresses, put to the right */
static void dynamic(void)
{
	int *buf = calloc(K, sizeof(int)), src[K], right = (me + 1) % n;
	int left = (me + n - 1) % n, ok = 1;
	MPI_Aint a, *addrs = malloc(sizeof(MPI_Aint) * (size_t)n);
	MPI_Win dw;

	MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dw);
	MPI_Win_attach(dw, buf, K * sizeof(int));
	MPI_Get_address(buf, &a);
	MPI_Allgather(&a, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
	for (int i = 0; i < K; i++)
		src[i] = me * 31 + i;
	MPI_Win_lock_all(0, dw);
	MPI_Put(src, K, MPI_INT, right, addrs[right], K, MPI_INT, dw);
	MPI_Win_flush(right, dw);
	MPI_Win_unlock_all(dw);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, me, 0, dw);
	for (int i = 0; i < K; i++)
		ok &= buf[i] == left * 31 + i;
	MPI_Win_unlock(me, dw);
	check(ok, "put on a dynamic window", LOCKALL);
	MPI_Win_detach(dw, buf);
	MPI_Win_free(&dw);
	free(buf);
	free(addrs);
}

int main(int argc, char **argv)
{
	long tot[2], mine[2];
	int rounds = argc > 1 ? atoi(argv[1]) : 200;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (n > 64) {
		if (!me)
			fprintf(stderr, "mpi_rma: at most 64 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
			 &win);
	MPI_Win_get_group(win, &all);
	MPI_Type_vector(K, 1, 2, MPI_INT, &strided);
	MPI_Type_commit(&strided);
	for (int s = 0; s < NSYNC; s++)
		round_of((enum sync)s);
	type_maps();
	lock_counter(rounds);
	malloced();
	dynamic();
	MPI_Type_free(&strided);
	MPI_Group_free(&all);
	MPI_Win_free(&win);
	mine[0] = checks;
	mine[1] = bad;
	MPI_Reduce(mine, tot, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (me == 0)
		printf("rma: %ld checks, %ld bad\n", tot[0], tot[1]);
	MPI_Finalize();
	return tot[1] != 0 && me == 0;
}
