/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FI_ATOMIC (docs/fabric.md, "Atomics").
 *
 * Hosts share no atomic instruction over a pool that is not coherent, so
 * an atomic is executed by the target's progress, which runs one
 * operation at a time: atomics on a region are serialized there, whoever
 * sends them. The origin sends one single-cell OPF_ATOMREQ message
 *
 *   {key u64, addr u64, rid u64, count u32, datatype u8, op u8, kind u8,
 *    0 u8} [operand: count elements, but for FI_ATOMIC_READ]
 *   [compare: count elements, compare kind only]
 *
 * and the target answers as it answers a read (OPF_READRSP, tag = rid):
 * with the prior values for the fetching kinds, empty for fi_atomic, or
 * with its error. The atomic completes at the origin on that answer, when
 * it has been applied (delivery complete). Atomics on a peer are also
 * ordered with RMA to it: direct RMA waits while any is in flight.
 *
 * Atomicity is with respect to other atomics through the provider, as
 * fi_atomic(3) defines it; not with respect to direct RMA or the target
 * process's own loads and stores.
 */
#include <stdlib.h>
#include <string.h>

#include "cxlfi.h"

enum {
	K_WRITE,
	K_FETCH,
	K_COMPARE
};

struct atomic_req {
	uint64_t key, addr, rid;
	uint32_t count;
	uint8_t datatype, op, kind, zero;
};

static size_t dt_size(unsigned dt)
{
	static const uint8_t size[] = {
		[FI_INT8] = 1,	 [FI_UINT8] = 1,  [FI_INT16] = 2,
		[FI_UINT16] = 2, [FI_INT32] = 4,  [FI_UINT32] = 4,
		[FI_INT64] = 8,	 [FI_UINT64] = 8, [FI_FLOAT] = 4,
		[FI_DOUBLE] = 8,
	};

	return dt < sizeof(size) ? size[dt] : 0;
}

/* Can kind do op on datatype? Then the largest count, for a cell of
 * payload bytes, in *max. Integers take every operation; floating point
 * no logical or bitwise one; complex and long double types none. */
static int valid(size_t payload, int kind, int dt, int op, size_t *max)
{
	size_t sz = dt_size((unsigned)dt), room;
	bool integer = dt >= FI_INT8 && dt <= FI_UINT64;
	bool ok;

	if (!sz)
		return -FI_EOPNOTSUPP;
	switch (kind) {
	case K_WRITE:
		ok = (op >= FI_MIN && op <= FI_PROD) || op == FI_ATOMIC_WRITE ||
		     (integer && op >= FI_LOR && op <= FI_BXOR);
		break;
	case K_FETCH:
		ok = (op >= FI_MIN && op <= FI_PROD) || op == FI_ATOMIC_READ ||
		     op == FI_ATOMIC_WRITE ||
		     (integer && op >= FI_LOR && op <= FI_BXOR);
		break;
	default:
		ok = (op >= FI_CSWAP && op <= FI_CSWAP_GT) ||
		     (integer && op == FI_MSWAP);
	}
	if (!ok)
		return -FI_EOPNOTSUPP;
	/* our 16-byte message header, the request, the operands */
	room = payload > 16 + sizeof(struct atomic_req)
		       ? payload - 16 - sizeof(struct atomic_req)
		       : 0;
	*max = room / (sz * (kind == K_COMPARE ? 2 : 1));
	return *max ? 0 : -FI_EOPNOTSUPP;
}

/*
 * x[i] = x[i] op v[i] (c[i] for the compare kinds), for one type. Integer
 * arithmetic is done unsigned (U), so that it wraps as the hardware's
 * does instead of overflowing; conversions back are modular (gcc, clang).
 */
#define APPLY_INT(T, U)                                                   \
	static void apply_##T(int op, void *xv, const void *vv,           \
			      const void *cv, size_t n)                   \
	{                                                                 \
		T *x = xv;                                                \
		const T *v = vv, *c = cv;                                 \
                                                                          \
		for (size_t i = 0; i < n; i++) {                          \
			U a = (U)x[i], b = v ? (U)v[i] : 0;               \
			U m = c ? (U)c[i] : 0;                            \
			switch (op) {                                     \
			case FI_MIN:                                      \
				x[i] = v[i] < x[i] ? v[i] : x[i];         \
				break;                                    \
			case FI_MAX:                                      \
				x[i] = v[i] > x[i] ? v[i] : x[i];         \
				break;                                    \
			case FI_SUM:                                      \
				x[i] = (T)(U)(a + b);                     \
				break;                                    \
			case FI_PROD:                                     \
				x[i] = (T)(U)((uint64_t)a * (uint64_t)b); \
				break;                                    \
			case FI_LOR:                                      \
				x[i] = (T)(a || b);                       \
				break;                                    \
			case FI_LAND:                                     \
				x[i] = (T)(a && b);                       \
				break;                                    \
			case FI_LXOR:                                     \
				x[i] = (T)(!a != !b);                     \
				break;                                    \
			case FI_BOR:                                      \
				x[i] = (T)(U)(a | b);                     \
				break;                                    \
			case FI_BAND:                                     \
				x[i] = (T)(U)(a & b);                     \
				break;                                    \
			case FI_BXOR:                                     \
				x[i] = (T)(U)(a ^ b);                     \
				break;                                    \
			case FI_ATOMIC_WRITE:                             \
				x[i] = v[i];                              \
				break;                                    \
			case FI_MSWAP:                                    \
				x[i] = (T)(U)((b & m) | (a & (U)~m));     \
				break;                                    \
			default:                                          \
				compare_##T(op, &x[i], v[i], c[i]);       \
			}                                                 \
		}                                                         \
	}

/* The same for floating types: no bitwise or logical operations and no
 * unsigned wrap, so a second body rather than one with branches per type. */
#define APPLY_FLT(T)                                                \
	static void apply_##T(int op, void *xv, const void *vv,     \
			      const void *cv, size_t n)             \
	{                                                           \
		T *x = xv;                                          \
		const T *v = vv, *c = cv;                           \
                                                                    \
		for (size_t i = 0; i < n; i++) {                    \
			switch (op) {                               \
			case FI_MIN:                                \
				x[i] = v[i] < x[i] ? v[i] : x[i];   \
				break;                              \
			case FI_MAX:                                \
				x[i] = v[i] > x[i] ? v[i] : x[i];   \
				break;                              \
			case FI_SUM:                                \
				x[i] = x[i] + v[i];                 \
				break;                              \
			case FI_PROD:                               \
				x[i] = x[i] * v[i];                 \
				break;                              \
			case FI_ATOMIC_WRITE:                       \
				x[i] = v[i];                        \
				break;                              \
			default:                                    \
				compare_##T(op, &x[i], v[i], c[i]); \
			}                                           \
		}                                                   \
	}

/* The compare kinds: x = v if c relates to x as op says. */
#define COMPARE(T)                                            \
	static void compare_##T(int op, T *x, T v, T c)       \
	{                                                     \
		bool swap = (op == FI_CSWAP && c == *x) ||    \
			    (op == FI_CSWAP_NE && c != *x) || \
			    (op == FI_CSWAP_LE && c <= *x) || \
			    (op == FI_CSWAP_LT && c < *x) ||  \
			    (op == FI_CSWAP_GE && c >= *x) || \
			    (op == FI_CSWAP_GT && c > *x);    \
                                                              \
		if (swap)                                     \
			*x = v;                               \
	}

COMPARE(int8_t)
COMPARE(uint8_t)
COMPARE(int16_t)
COMPARE(uint16_t)
COMPARE(int32_t)
COMPARE(uint32_t)
COMPARE(int64_t)
COMPARE(uint64_t)
COMPARE(float)
COMPARE(double)
APPLY_INT(int8_t, uint8_t)
APPLY_INT(uint8_t, uint8_t)
APPLY_INT(int16_t, uint16_t)
APPLY_INT(uint16_t, uint16_t)
APPLY_INT(int32_t, uint32_t)
APPLY_INT(uint32_t, uint32_t)
APPLY_INT(int64_t, uint64_t)
APPLY_INT(uint64_t, uint64_t)
APPLY_FLT(float)
APPLY_FLT(double)

typedef void (*apply_fn)(int op, void *x, const void *v, const void *c,
			 size_t n);

/* The kernel of each datatype (valid() admits only these). */
static const apply_fn apply_of[] = {
	[FI_INT8] = apply_int8_t,   [FI_UINT8] = apply_uint8_t,
	[FI_INT16] = apply_int16_t, [FI_UINT16] = apply_uint16_t,
	[FI_INT32] = apply_int32_t, [FI_UINT32] = apply_uint32_t,
	[FI_INT64] = apply_int64_t, [FI_UINT64] = apply_uint64_t,
	[FI_FLOAT] = apply_float,   [FI_DOUBLE] = apply_double,
};

/* x (aligned, count elements of dt) = x op v [c]. v is NULL only for
 * FI_ATOMIC_READ, which changes nothing. */
static void apply(int dt, int op, void *x, const void *v, const void *c,
		  size_t n)
{
	if (op == FI_ATOMIC_READ || dt < 0 ||
	    (size_t)dt >= sizeof(apply_of) / sizeof(apply_of[0]) ||
	    !apply_of[dt])
		return;
	apply_of[dt](op, x, v, c, n);
}

/* ---- target ------------------------------------------------------------ */

int cxlfi_atomic_exec(struct cxlfi_ep *ep, const uint8_t *m, size_t n,
		      uint64_t *rid, uint8_t **result, size_t *reslen)
{
	cxl_pool *pool = ep->dom->pool;
	struct atomic_req q;
	size_t sz, len, max, want;
	uint8_t *p, *cur = NULL, *old = NULL, *ops = NULL;
	bool in_pool;
	int err = 0;

	*result = NULL;
	*reslen = 0;
	if (n < sizeof(q))
		return -1;
	memcpy(&q, m, sizeof(q));
	*rid = q.rid;
	/* everything in the request is the peer's word: check it all */
	if (q.kind > K_COMPARE || q.zero ||
	    valid(ep->cell_payload, q.kind, q.datatype, q.op, &max) ||
	    !q.count || q.count > max)
		return -1;
	sz = dt_size(q.datatype);
	len = (size_t)q.count * sz;
	want = sizeof(q) + (q.op == FI_ATOMIC_READ ? 0 : len) +
	       (q.kind == K_COMPARE ? len : 0);
	if (n != want)
		return -1;
	p = cxlfi_mr_target(ep->dom, q.key, q.addr, len,
			    FI_REMOTE_WRITE |
				    (q.kind != K_WRITE ? FI_REMOTE_READ : 0),
			    &err);
	if (!p) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "atomic refused: key %#llx, address %#llx, %zu "
			   "bytes: %s\n",
			   (unsigned long long)q.key,
			   (unsigned long long)q.addr, len, fi_strerror(err));
		return err;
	}
	/* aligned copies: the region and the message need not be */
	cur = malloc(len);
	old = malloc(len);
	ops = malloc(2 * len);
	if (!cur || !old || !ops) {
		free(cur), free(old), free(ops);
		return FI_ENOMEM;
	}
	memcpy(ops, m + sizeof(q), n - sizeof(q));
	/* a region in the pool: read what direct writers put there, and
	 * write the result back for direct readers, before the answer */
	in_pool = cxl_pool_offset(pool, p) != UINT64_MAX;
	if (in_pool)
		cxl_inval(pool, p, len);
	memcpy(old, p, len);
	memcpy(cur, old, len);
	apply(q.datatype, q.op, cur, q.op == FI_ATOMIC_READ ? NULL : ops,
	      q.kind == K_COMPARE ? ops + len : NULL, q.count);
	if (q.op != FI_ATOMIC_READ) {
		memcpy(p, cur, len);
		if (in_pool) {
			cxl_flush(pool, p, len);
			cxl_wfence(pool);
		}
	}
	cxlfi_stats.atomics++;
	/* the region's bound counter: as the endpoint's remote counters */
	cxlfi_mr_count(ep->dom, q.key,
		       q.kind == K_WRITE ? FI_REMOTE_WRITE : FI_REMOTE_READ);
	free(cur), free(ops);
	if (q.kind == K_WRITE) {
		free(old);
		return 0;
	}
	*result = old;
	*reslen = len;
	return 0;
}

void cxlfi_atomic_request(struct cxlfi_ep *ep, struct cxlfi_peer *pe,
			  const uint8_t *m, size_t n)
{
	uint8_t *old;
	size_t len;
	uint64_t rid;
	int err = cxlfi_atomic_exec(ep, m, n, &rid, &old, &len);

	if (err < 0) {
		CXLFI_WARN(FI_LOG_EP_DATA,
			   "malformed atomic request from endpoint %u "
			   "dropped\n",
			   pe->index);
		return;
	}
	/* old is ours only until we return: the answer copies it */
	cxlfi_rma_answer(ep, pe, CXLFI_TX_ATOMRSP, rid, old, len, true, err);
	free(old);
}

/* ---- origin ------------------------------------------------------------ */

/* The request message: header, operand (but for FI_ATOMIC_READ), then
 * the compare values (compare kind). */
static void fill_request(uint8_t *msg, const struct atomic_req *q,
			 const void *buf, const void *compare, size_t len,
			 size_t n, int op, int kind)
{
	memcpy(msg, q, sizeof(*q));
	if (op != FI_ATOMIC_READ)
		memcpy(msg + sizeof(*q), buf, len);
	if (kind == K_COMPARE)
		memcpy(msg + n - len, compare, len);
}

static ssize_t do_atomic(struct fid_ep *fep, int kind, const void *buf,
			 size_t count, const void *compare, void *result,
			 fi_addr_t dest, uint64_t addr, uint64_t key,
			 enum fi_datatype dt, enum fi_op op, uint64_t flags,
			 void *ctx)
{
	struct cxlfi_ep *ep = (struct cxlfi_ep *)fep;
	struct cxlfi_rdreq *rq;
	struct cxlfi_peer *pe;
	struct atomic_req q;
	size_t max, len, n;
	uint8_t *msg;
	ssize_t rc;

	if (valid(ep->cell_payload, kind, dt, op, &max))
		return -FI_EOPNOTSUPP;
	if (!count || count > max || (op != FI_ATOMIC_READ && !buf) ||
	    (kind == K_COMPARE && !compare) || (kind != K_WRITE && !result))
		return -FI_EINVAL;
	len = count * dt_size(dt);
	n = sizeof(q) + (op == FI_ATOMIC_READ ? 0 : len) +
	    (kind == K_COMPARE ? len : 0);
	if (!(msg = malloc(n)))
		return -FI_ENOMEM;
	cxlfi_dom_lock(ep->dom);
	if (ep->enabled && cxlfi_av_is_net(ep->av, dest)) {
		/* outside the pool: over the network link (netrma.c) */
		q = (struct atomic_req){ .key = key,
					 .addr = addr,
					 .count = (uint32_t)count,
					 .datatype = (uint8_t)dt,
					 .op = (uint8_t)op,
					 .kind = (uint8_t)kind };
		fill_request(msg, &q, buf, compare, len, n, op, kind);
		rc = cxlfi_netrma_atomic(
			ep, dest, msg, n, result, kind == K_WRITE ? 0 : len,
			kind != K_WRITE, cxlfi_tx_flags(ep, flags), ctx);
		goto out;
	}
	if ((rc = cxlfi_rma_peer(ep, dest, &pe)))
		goto out;
	if (!(rq = cxlfi_rdreq_new(ep, pe, result, kind == K_WRITE ? 0 : len,
				   cxlfi_tx_flags(ep, flags), ctx, true))) {
		rc = -FI_ENOMEM;
		goto out;
	}
	q = (struct atomic_req){ .key = key,
				 .addr = addr,
				 .rid = rq->rid,
				 .count = (uint32_t)count,
				 .datatype = (uint8_t)dt,
				 .op = (uint8_t)op,
				 .kind = (uint8_t)kind };
	fill_request(msg, &q, buf, compare, len, n, op, kind);
	rc = cxlfi_rdreq_post(ep, pe, rq, CXLFI_TX_ATOMREQ, msg, n);
out:
	cxlfi_dom_unlock(ep->dom);
	free(msg);
	return rc;
}

/* ---- fi_ops_atomic ------------------------------------------------------ */

#define TXF(fep) (((struct cxlfi_ep *)(fep))->tx_op_flags)

/* One element array per ioc list: we take a single one (iov_limit 1). */
static int one_ioc(const struct fi_ioc *iov, size_t n, const void **base,
		   size_t *count)
{
	if (n != 1 || !iov)
		return -FI_EINVAL;
	*base = iov[0].addr;
	*count = iov[0].count;
	return 0;
}

static ssize_t a_write(struct fid_ep *ep, const void *buf, size_t count,
		       void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
		       enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)desc;
	return do_atomic(ep, K_WRITE, buf, count, NULL, NULL, dest, addr, key,
			 dt, op, TXF(ep), ctx);
}

static ssize_t a_writev(struct fid_ep *ep, const struct fi_ioc *iov,
			void **desc, size_t n, fi_addr_t dest, uint64_t addr,
			uint64_t key, enum fi_datatype dt, enum fi_op op,
			void *ctx)
{
	const void *buf;
	size_t count;

	(void)desc;
	if (one_ioc(iov, n, &buf, &count))
		return -FI_EINVAL;
	return do_atomic(ep, K_WRITE, buf, count, NULL, NULL, dest, addr, key,
			 dt, op, TXF(ep), ctx);
}

static ssize_t a_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			  uint64_t flags)
{
	const void *buf;
	size_t count;

	if (one_ioc(m->msg_iov, m->iov_count, &buf, &count) ||
	    m->rma_iov_count != 1)
		return -FI_EINVAL;
	return do_atomic(ep, K_WRITE, buf, count, NULL, NULL, m->addr,
			 m->rma_iov[0].addr, m->rma_iov[0].key, m->datatype,
			 m->op, flags, m->context);
}

static ssize_t a_inject(struct fid_ep *ep, const void *buf, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key,
			enum fi_datatype dt, enum fi_op op)
{
	return do_atomic(ep, K_WRITE, buf, count, NULL, NULL, dest, addr, key,
			 dt, op, FI_INJECT | CXLFI_INJECT_OP, NULL);
}

static ssize_t a_readwrite(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, void *result, void *result_desc,
			   fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)desc, (void)result_desc;
	return do_atomic(ep, K_FETCH, buf, count, NULL, result, dest, addr, key,
			 dt, op, TXF(ep), ctx);
}

static ssize_t a_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			    void **desc, size_t n, struct fi_ioc *resultv,
			    void **result_desc, size_t result_count,
			    fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{
	const void *buf = NULL, *res;
	size_t count, rcount;

	(void)desc, (void)result_desc;
	/* FI_ATOMIC_READ may come without an operand */
	if ((n || op != FI_ATOMIC_READ) && one_ioc(iov, n, &buf, &count))
		return -FI_EINVAL;
	if (one_ioc(resultv, result_count, &res, &rcount) ||
	    (n && rcount != count))
		return -FI_EINVAL;
	return do_atomic(ep, K_FETCH, buf, rcount, NULL, (void *)res, dest,
			 addr, key, dt, op, TXF(ep), ctx);
}

static ssize_t a_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			      struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, uint64_t flags)
{
	const void *buf = NULL, *res;
	size_t count = 0, rcount;

	(void)result_desc;
	if (((m->iov_count || m->op != FI_ATOMIC_READ) &&
	     one_ioc(m->msg_iov, m->iov_count, &buf, &count)) ||
	    one_ioc(resultv, result_count, &res, &rcount) ||
	    (m->iov_count && rcount != count) || m->rma_iov_count != 1)
		return -FI_EINVAL;
	return do_atomic(ep, K_FETCH, buf, rcount, NULL, (void *)res, m->addr,
			 m->rma_iov[0].addr, m->rma_iov[0].key, m->datatype,
			 m->op, flags, m->context);
}

static ssize_t a_compwrite(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, const void *compare, void *compare_desc,
			   void *result, void *result_desc, fi_addr_t dest,
			   uint64_t addr, uint64_t key, enum fi_datatype dt,
			   enum fi_op op, void *ctx)
{
	(void)desc, (void)compare_desc, (void)result_desc;
	return do_atomic(ep, K_COMPARE, buf, count, compare, result, dest, addr,
			 key, dt, op, TXF(ep), ctx);
}

static ssize_t a_compwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			    void **desc, size_t n,
			    const struct fi_ioc *comparev, void **compare_desc,
			    size_t compare_count, struct fi_ioc *resultv,
			    void **result_desc, size_t result_count,
			    fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{
	const void *buf, *cmp, *res;
	size_t count, ccount, rcount;

	(void)desc, (void)compare_desc, (void)result_desc;
	if (one_ioc(iov, n, &buf, &count) ||
	    one_ioc(comparev, compare_count, &cmp, &ccount) ||
	    one_ioc(resultv, result_count, &res, &rcount) || ccount != count ||
	    rcount != count)
		return -FI_EINVAL;
	return do_atomic(ep, K_COMPARE, buf, count, cmp, (void *)res, dest,
			 addr, key, dt, op, TXF(ep), ctx);
}

static ssize_t a_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			      const struct fi_ioc *comparev,
			      void **compare_desc, size_t compare_count,
			      struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, uint64_t flags)
{
	const void *buf, *cmp, *res;
	size_t count, ccount, rcount;

	(void)compare_desc, (void)result_desc;
	if (one_ioc(m->msg_iov, m->iov_count, &buf, &count) ||
	    one_ioc(comparev, compare_count, &cmp, &ccount) ||
	    one_ioc(resultv, result_count, &res, &rcount) || ccount != count ||
	    rcount != count || m->rma_iov_count != 1)
		return -FI_EINVAL;
	return do_atomic(ep, K_COMPARE, buf, count, cmp, (void *)res, m->addr,
			 m->rma_iov[0].addr, m->rma_iov[0].key, m->datatype,
			 m->op, flags, m->context);
}

static int ep_valid(struct fid_ep *fep, int kind, enum fi_datatype dt,
		    enum fi_op op, size_t *count)
{
	size_t max;
	int rc = valid(((struct cxlfi_ep *)fep)->cell_payload, kind, dt, op,
		       &max);

	if (!rc && count)
		*count = max;
	return rc;
}

static int a_writevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op,
			size_t *count)
{
	return ep_valid(ep, K_WRITE, dt, op, count);
}

static int a_readwritevalid(struct fid_ep *ep, enum fi_datatype dt,
			    enum fi_op op, size_t *count)
{
	return ep_valid(ep, K_FETCH, dt, op, count);
}

static int a_compwritevalid(struct fid_ep *ep, enum fi_datatype dt,
			    enum fi_op op, size_t *count)
{
	return ep_valid(ep, K_COMPARE, dt, op, count);
}

int cxlfi_query_atomic(struct fid_domain *domain, enum fi_datatype dt,
		       enum fi_op op, struct fi_atomic_attr *attr,
		       uint64_t flags)
{
	int kind = flags & FI_COMPARE_ATOMIC ? K_COMPARE
		   : flags & FI_FETCH_ATOMIC ? K_FETCH
					     : K_WRITE;
	size_t max;
	int rc;

	(void)domain;
	if (flags & ~(uint64_t)(FI_COMPARE_ATOMIC | FI_FETCH_ATOMIC))
		return -FI_EOPNOTSUPP; /* FI_TAGGED (collectives) etc. */
	rc = valid(cxl_ring_cell_payload((uint32_t)cxlfi_params.cell_size),
		   kind, dt, op, &max);
	if (rc)
		return rc;
	if (attr) {
		attr->count = max;
		attr->size = dt_size(dt);
	}
	return 0;
}

struct fi_ops_atomic cxlfi_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = a_write,
	.writev = a_writev,
	.writemsg = a_writemsg,
	.inject = a_inject,
	.readwrite = a_readwrite,
	.readwritev = a_readwritev,
	.readwritemsg = a_readwritemsg,
	.compwrite = a_compwrite,
	.compwritev = a_compwritev,
	.compwritemsg = a_compwritemsg,
	.writevalid = a_writevalid,
	.readwritevalid = a_readwritevalid,
	.compwritevalid = a_compwritevalid,
};
