/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fake CUDA driver (libfakecuda.so) for testing the GPU_MEM_OPS stream
 * queue where there is no GPU: the entry points of src/mpi/cuda_driver.h,
 * and the few more the tests call. "Device memory" is host memory; each
 * stream is a host thread that runs its operations in order:
 *
 *   cuMemcpyAsync, cuMemcpy2DAsync   memcpy
 *   cuStreamWriteValue64             a fence, then a store (the driver's
 *                                    default memory barrier)
 *   cuStreamWaitValue64 (GEQ)        load until *addr >= value
 *   cuLaunchHostFunc                 the call
 *   cuLaunchKernel[Ex] (cxlmpi_send_small, cxlmpi_recv_small and _line, the
 *                  kernels libcxlmpi loads: its PTX must hold them)
 *                                    (a wait,) memcpy, a fence, the flag
 *                                    or credit store
 *
 * As the real driver, it refuses stream memory operations on memory that
 * is neither registered (cuMemHostRegister) nor allocated (cuMemAlloc),
 * and treats pageable (unregistered) host memory in cuMemcpyAsync as it
 * does: a source is read when the copy is enqueued, not in stream order;
 * a copy into one returns only once it is done.
 *
 *   FAKE_CUDA_DELAY_US=N   before each operation, sleep 0..N us (random)
 *   FAKE_CUDA_NO_DEVICE=1  cuInit fails with CUDA_ERROR_NO_DEVICE
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_driver.h"

#define API __attribute__((visibility("default")))

/* the driver's entry points that libcxlmpi and the tests use */
#define FAKE_PROTO(name, args) API CUresult name args;
CUDA_DRIVER_FNS(FAKE_PROTO)
FAKE_PROTO(cuStreamCreate, (CUstream *, unsigned))
FAKE_PROTO(cuStreamDestroy, (CUstream))
FAKE_PROTO(cuMemcpyHtoD, (CUdeviceptr, const void *, size_t))
FAKE_PROTO(cuMemcpyDtoH, (void *, CUdeviceptr, size_t))
FAKE_PROTO(cuLaunchKernelEx,
	   (const CUlaunchConfig *, CUfunction, void **, void **))
#undef FAKE_PROTO

enum fop_type {
	F_COPY,
	F_COPY2D,
	F_WRITE,
	F_WAIT,
	F_HOST,
	F_KERNEL
};

struct fop {
	int type;
	void *dst;
	const void *src;
	size_t n;
	CUDA_MEMCPY2D m;
	uint64_t v;
	CUhostFn fn;
	void *arg;
	uint64_t *wait_at, wait_v; /* F_KERNEL: first *wait_at >= wait_v */
	struct fop *next;
};

struct CUstream_st {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv, idle;
	struct fop *head, *tail;
	bool busy, stop;
	CUresult err; /* sticky, as a real stream's error */
	unsigned seed;
};

/* registered ranges and allocations */
struct range {
	uintptr_t lo, hi;
	bool device;
	struct range *next;
};
static struct range *ranges;
static pthread_mutex_t ranges_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned delay_us;
static struct CUstream_st *default_stream;
static pthread_mutex_t default_mu = PTHREAD_MUTEX_INITIALIZER;

static struct range *find(uintptr_t a, size_t n)
{
	struct range *r;

	pthread_mutex_lock(&ranges_mu);
	for (r = ranges; r; r = r->next)
		if (a >= r->lo && a + n <= r->hi)
			break;
	pthread_mutex_unlock(&ranges_mu);
	return r;
}

static void add_range(uintptr_t lo, size_t n, bool device)
{
	struct range *r = calloc(1, sizeof(*r));

	if (!r)
		abort();
	r->lo = lo;
	r->hi = lo + n;
	r->device = device;
	pthread_mutex_lock(&ranges_mu);
	r->next = ranges;
	ranges = r;
	pthread_mutex_unlock(&ranges_mu);
}

static bool del_range(uintptr_t lo)
{
	struct range **pp, *r;

	pthread_mutex_lock(&ranges_mu);
	for (pp = &ranges; *pp; pp = &(*pp)->next)
		if ((*pp)->lo == lo) {
			r = *pp;
			*pp = r->next;
			free(r);
			pthread_mutex_unlock(&ranges_mu);
			return true;
		}
	pthread_mutex_unlock(&ranges_mu);
	return false;
}

static void wait_geq(uint64_t *at, uint64_t v)
{
	unsigned spins = 0;

	while (__atomic_load_n(at, __ATOMIC_ACQUIRE) < v) {
		if (++spins < 64)
			sched_yield();
		else
			usleep(20);
	}
}

static void run_op(struct CUstream_st *s, struct fop *o)
{
	if (delay_us)
		usleep((useconds_t)(rand_r(&s->seed) % (delay_us + 1)));
	switch (o->type) {
	case F_COPY:
		memcpy(o->dst, o->src, o->n);
		if (o->arg) /* a snapshot of a pageable source */
			free(o->arg);
		break;
	case F_COPY2D:
		for (size_t y = 0; y < o->m.Height; y++)
			memcpy((uint8_t *)(uintptr_t)o->m.dstDevice +
				       y * o->m.dstPitch,
			       (const uint8_t *)(uintptr_t)o->m.srcDevice +
				       y * o->m.srcPitch,
			       o->m.WidthInBytes);
		break;
	case F_WRITE:
		/* the default barrier: what the stream wrote before is
		 * visible before the value */
		atomic_thread_fence(memory_order_seq_cst);
		__atomic_store_n((uint64_t *)o->dst, o->v, __ATOMIC_SEQ_CST);
		break;
	case F_WAIT:
		wait_geq((uint64_t *)o->dst, o->v);
		break;
	case F_HOST:
		o->fn(o->arg);
		break;
	case F_KERNEL: /* cxlmpi_{send,recv}_small(...) */
		if (o->wait_at)
			wait_geq(o->wait_at, o->wait_v);
		memcpy(o->dst, o->src, o->n);
		atomic_thread_fence(
			memory_order_seq_cst); /* the release fence */
		if (o->m.dstDevice)
			__atomic_store_n((uint64_t *)(uintptr_t)o->m.dstDevice,
					 o->v, __ATOMIC_SEQ_CST);
		break;
	}
}

static void *stream_thread(void *arg)
{
	struct CUstream_st *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct fop *o;

		while (!s->head && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head)
			break;
		o = s->head;
		s->busy = true;
		pthread_mutex_unlock(&s->mu);
		if (!s->err)
			run_op(s, o);
		pthread_mutex_lock(&s->mu);
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		s->busy = false;
		free(o);
		if (!s->head)
			pthread_cond_broadcast(&s->idle);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static struct CUstream_st *new_stream(void)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->idle, NULL);
	s->seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)s;
	if (pthread_create(&s->th, NULL, stream_thread, s)) {
		free(s);
		return NULL;
	}
	return s;
}

static struct CUstream_st *stream_of(CUstream s)
{
	if (s)
		return s;
	pthread_mutex_lock(&default_mu);
	if (!default_stream)
		default_stream = new_stream();
	pthread_mutex_unlock(&default_mu);
	return default_stream;
}

static CUresult push(CUstream hs, const struct fop *tmpl)
{
	struct CUstream_st *s = stream_of(hs);
	struct fop *o = malloc(sizeof(*o));

	if (!s || !o) {
		free(o);
		return CUDA_ERROR_INVALID_VALUE;
	}
	*o = *tmpl;
	o->next = NULL;
	pthread_mutex_lock(&s->mu);
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return CUDA_SUCCESS;
}

API CUresult cuInit(unsigned flags)
{
	const char *d = getenv("FAKE_CUDA_DELAY_US");

	(void)flags;
	if (getenv("FAKE_CUDA_NO_DEVICE"))
		return CUDA_ERROR_NO_DEVICE;
	delay_us = d ? (unsigned)atoi(d) : 0;
	return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_VALUE;
	*d = 0;
	return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	(void)d;
	*v = attr == CU_DEVICE_ATTRIBUTE_MEM_OPS_64;
	return CUDA_SUCCESS;
}

static int the_ctx;
static _Thread_local CUcontext current;

API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	(void)d;
	*c = (CUcontext)&the_ctx;
	return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(CUcontext *c)
{
	*c = current;
	return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(CUcontext c)
{
	current = c;
	return CUDA_SUCCESS;
}

API CUresult cuStreamCreate(CUstream *out, unsigned flags)
{
	(void)flags;
	*out = new_stream();
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuStreamSynchronize(CUstream hs)
{
	struct CUstream_st *s = stream_of(hs);

	pthread_mutex_lock(&s->mu);
	while (s->head)
		pthread_cond_wait(&s->idle, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return s->err;
}

API CUresult cuStreamQuery(CUstream hs)
{
	struct CUstream_st *s = stream_of(hs);
	bool done;

	pthread_mutex_lock(&s->mu);
	done = !s->head;
	pthread_mutex_unlock(&s->mu);
	if (s->err)
		return s->err;
	return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

API CUresult cuStreamDestroy(CUstream hs)
{
	struct CUstream_st *s = hs;

	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	cuStreamSynchronize(s);
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	free(s);
	return CUDA_SUCCESS;
}

API CUresult cuMemHostRegister(void *p, size_t n, unsigned flags)
{
	(void)flags;
	if (!p || !n || find((uintptr_t)p, 1))
		return CUDA_ERROR_INVALID_VALUE;
	add_range((uintptr_t)p, n, false);
	return CUDA_SUCCESS;
}

API CUresult cuMemHostUnregister(void *p)
{
	return del_range((uintptr_t)p) ? CUDA_SUCCESS
				       : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned f)
{
	struct range *r = find((uintptr_t)p, 1);

	(void)f;
	if (!r || r->device)
		return CUDA_ERROR_INVALID_VALUE;
	*d = (CUdeviceptr)(uintptr_t)p; /* as on an H100 */
	return CUDA_SUCCESS;
}

API CUresult cuMemAlloc(CUdeviceptr *d, size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 256, n ? n : 1))
		return CUDA_ERROR_INVALID_VALUE;
	/* device memory is not the host's: fill it with junk */
	memset(p, 0xa5, n);
	add_range((uintptr_t)p, n, true);
	*d = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

API CUresult cuMemFree(CUdeviceptr d)
{
	if (!del_range((uintptr_t)d))
		return CUDA_ERROR_INVALID_VALUE;
	free((void *)(uintptr_t)d);
	return CUDA_SUCCESS;
}

API CUresult cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n)
{
	memcpy((void *)(uintptr_t)d, h, n);
	return CUDA_SUCCESS;
}

API CUresult cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n)
{
	memcpy(h, (const void *)(uintptr_t)d, n);
	return CUDA_SUCCESS;
}

API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
			   CUstream s)
{
	struct fop o = { .type = F_COPY,
			 .dst = (void *)(uintptr_t)dst,
			 .src = (const void *)(uintptr_t)src,
			 .n = n };
	CUresult rc;

	if (n && !find((uintptr_t)src, n)) {
		/* pageable source: staged now, as the driver does */
		o.arg = malloc(n);
		if (!o.arg)
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(o.arg, o.src, n);
		o.src = o.arg;
	}
	rc = push(s, &o);
	/* pageable destination: the call returns once the copy is done */
	if (rc == CUDA_SUCCESS && n && !find((uintptr_t)dst, n))
		rc = cuStreamSynchronize(s);
	return rc;
}

API CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *m, CUstream s)
{
	struct fop o = { .type = F_COPY2D, .m = *m };

	if (m->srcMemoryType != CU_MEMORYTYPE_UNIFIED ||
	    m->dstMemoryType != CU_MEMORYTYPE_UNIFIED ||
	    m->WidthInBytes > m->srcPitch || m->WidthInBytes > m->dstPitch)
		return CUDA_ERROR_INVALID_VALUE;
	return push(s, &o);
}

/* a stream memory operation: on registered or device memory only */
static CUresult memop(CUstream s, int type, CUdeviceptr a, uint64_t v,
		      unsigned flags)
{
	struct fop o = { .type = type, .dst = (void *)(uintptr_t)a, .v = v };

	if (flags != 0 || (a & 7) || !find((uintptr_t)a, 8)) {
		fprintf(stderr,
			"fake_cuda: stream memory operation on %#llx, which "
			"is not registered or device memory (flags %u)\n",
			(unsigned long long)a, flags);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return push(s, &o);
}

API CUresult cuStreamWriteValue64(CUstream s, CUdeviceptr a, uint64_t v,
				  unsigned flags)
{
	return memop(s, F_WRITE, a, v, flags);
}

API CUresult cuStreamWaitValue64(CUstream s, CUdeviceptr a, uint64_t v,
				 unsigned flags)
{
	return memop(s, F_WAIT, a, v, flags);
}

API CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *arg)
{
	struct fop o = { .type = F_HOST, .fn = fn, .arg = arg };

	return push(s, &o);
}

/* the module: the PTX libcxlmpi hands over, checked for its kernels */
static int the_module, the_send, the_recv, the_recv_line;

API CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
	if (!image || !strstr(image, ".entry cxlmpi_send_small(") ||
	    !strstr(image, ".entry cxlmpi_recv_small(") ||
	    !strstr(image, ".entry cxlmpi_recv_line(") ||
	    !strstr(image, "fence.acq_rel.sys") || !strstr(image, "bar.sync"))
		return CUDA_ERROR_INVALID_VALUE;
	*m = (CUmodule)&the_module;
	return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	if (m != (CUmodule)&the_module)
		return CUDA_ERROR_INVALID_VALUE;
	if (!strcmp(name, "cxlmpi_send_small"))
		*f = (CUfunction)&the_send;
	else if (!strcmp(name, "cxlmpi_recv_small"))
		*f = (CUfunction)&the_recv;
	else if (!strcmp(name, "cxlmpi_recv_line"))
		*f = (CUfunction)&the_recv_line;
	else
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Both kernels: (wait at, wait value, dst, src, n, store at, value):
 * *wait >= value (0: at once), the copy, a fence, the store (0: none). */
static CUresult launch(CUfunction f, unsigned gx, unsigned bx, CUstream s,
		       void **args, void **extra)
{
	struct fop o = { .type = F_KERNEL };
	CUdeviceptr put;

	if ((f != (CUfunction)&the_send && f != (CUfunction)&the_recv &&
	     f != (CUfunction)&the_recv_line) ||
	    !args || extra || !gx || !bx || bx > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	o.wait_at = (uint64_t *)(uintptr_t) * (CUdeviceptr *)args[0];
	o.wait_v = *(uint64_t *)args[1];
	o.dst = (void *)(uintptr_t) * (CUdeviceptr *)args[2];
	o.src = (const void *)(uintptr_t) * (CUdeviceptr *)args[3];
	o.n = (size_t) * (uint64_t *)args[4];
	put = *(CUdeviceptr *)args[5];
	o.v = *(uint64_t *)args[6];
	/* a kernel reaches device memory and registered host memory only */
	if ((o.wait_v &&
	     (((uintptr_t)o.wait_at & 7) || !find((uintptr_t)o.wait_at, 8))) ||
	    (o.n &&
	     (!find((uintptr_t)o.dst, o.n) || !find((uintptr_t)o.src, o.n))) ||
	    (put && ((put & 7) || !find((uintptr_t)put, 8)))) {
		fprintf(stderr, "fake_cuda: a small-message kernel on memory "
				"that is not registered or device memory\n");
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!o.wait_v)
		o.wait_at = NULL;
	o.m.dstDevice = put;
	return push(s, &o);
}

API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			    unsigned bx, unsigned by, unsigned bz,
			    unsigned shmem, CUstream s, void **args,
			    void **extra)
{
	(void)gy;
	(void)gz;
	(void)by;
	(void)bz;
	(void)shmem;
	return launch(f, gx, bx, s, args, extra);
}

/* Programmatic stream serialization lets a real GPU start the next kernel
 * early; the kernels wait for their predecessors before they touch user
 * memory, so running each in stream order is one of its executions. */
API CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f,
			      void **args, void **extra)
{
	if (!c || c->numAttrs != 1 || !c->attrs ||
	    c->attrs[0].id !=
		    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION ||
	    c->attrs[0].value.programmaticStreamSerializationAllowed != 1)
		return CUDA_ERROR_INVALID_VALUE;
	return launch(f, c->gridDimX, c->blockDimX, c->hStream, args, extra);
}

API CUresult cuPointerGetAttribute(void *out, int attr, CUdeviceptr p)
{
	struct range *r = find((uintptr_t)p, 1);

	if (attr != CU_POINTER_ATTRIBUTE_MEMORY_TYPE || !r)
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)out = r->device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
	return CUDA_SUCCESS;
}

API CUresult cuGetErrorString(CUresult rc, const char **s)
{
	switch (rc) {
	case CUDA_SUCCESS:
		*s = "no error";
		break;
	case CUDA_ERROR_NO_DEVICE:
		*s = "no CUDA-capable device is detected (fake driver)";
		break;
	case CUDA_ERROR_NOT_READY:
		*s = "device not ready";
		break;
	default:
		*s = "invalid argument";
		break;
	}
	return CUDA_SUCCESS;
}
