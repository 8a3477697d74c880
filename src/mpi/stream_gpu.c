/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPIS_Queue of type GPU_MEM_OPS: every operation of point-to-point
 * requests goes on the user's CUDA stream, in order with its kernels, and
 * no host thread is in their path. The GPU reaches the pool through the
 * pool's DMA view (cxl_pool_dma_base), registered with the driver once:
 *
 *   start of a send   wait for the slot's credit (cuStreamWaitValue64 on
 *                     the receiver's count, >= k - nslots); copy the data
 *                     into the slot (cuMemcpyAsync, or a 2-D copy into
 *                     stamped lines, then the stamps); write the flag
 *                     (cuStreamWriteValue64, which orders it after the
 *                     copies: the driver's default memory barrier)
 *   start of a recv   nothing
 *   wait of a recv    wait for the flag (>= k << 32) and the stamps;
 *                     copy out; write the credit (k)
 *   collectives       a host function on the stream (cuLaunchHostFunc)
 *                     runs the pool collective on host staging buffers
 *
 * The wire format is the THREAD queue's (stream_channel.c), so a GPU
 * sender may feed a THREAD receiver and the other way round. A copy
 * engine copies a fixed length: a GPU receive takes exactly its size, and
 * a send of another size into it is refused when it is known (the sender
 * writes its size into its line when it opens the channel) or reported
 * by MPIS_Queue_wait.
 *
 * Coherence: the copy engine and the stream memory operations access the
 * memory, not a CPU cache (the emulated mode's shared view stands for
 * it), so GPU writes need no flush and GPU reads no invalidation; host
 * peers flush and invalidate as always.
 *
 * MPIS_Queue_wait polls the stream and watches the peers' heartbeats; when
 * a peer is dead it stores the values the stream waits for, so that the
 * stream drains (the data then is not the peer's), and returns the error.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "stream.h"

/* a value the stream waits for: the host releases it if the peer dies */
struct gwait {
	uint64_t *at; /* in the process's view of the pool */
	uint64_t v;
	MPIS_Request r;
};

struct gpu_queue {
	struct queue_head head;
	const struct cuda_driver *cu;
	CUstream s;
	_Atomic int err; /* also set by host functions on the stream */
	/* waits enqueued since the last MPIS_Queue_wait */
	struct gwait *waits;
	int nwaits, capwaits;
	/* receives whose sender's size was not known at the enqueue */
	MPIS_Request *unchecked;
	int nunchecked, capunchecked;
	/* requests this stream uses: their gpu_q is cleared at free */
	MPIS_Request *reqs;
	int nreqs, capreqs;
};

/*
 * Messages of up to KERNEL_MAX bytes on a plain channel: one kernel per
 * send and per receive instead of a copy and a stream write each (the
 * copy engine's start costs more than a small message). PTX, compiled by
 * the driver at the first GPU queue (cuModuleLoadData); where that fails,
 * the copies and stream writes are used, with the same ordering.
 *
 *   send  thread 0 waits for the slot's credit (*credit >= need, polled
 *         at system scope), acquire fence; the block copies the buffer
 *         into the slot; bar.sync; thread 0 fences at system scope and
 *         stores the flag (release: the data first)
 *   recv  thread 0 waits for the flag, acquire fence; bar.sync; the
 *         block copies the slot out; bar.sync; thread 0 fences and
 *         stores the credit (the slot is read before the sender may
 *         reuse it)
 *
 * On Hopper and later (sm_90) the kernels are launched with programmatic
 * stream serialization: the next kernel of the stream may start before
 * this one ends, and waits (griddepcontrol.wait) for it to finish before
 * touching the user's buffer. A receive lets its successor start at
 * once, so the next send's launch and credit poll overlap the receive's
 * wait and copy instead of following them; a send lets its successor
 * start once its own predecessors are done, so at most three of these
 * kernels are resident. What the stream orders is unchanged: a kernel
 * reads or writes user memory only after all work before it on the
 * stream is complete and visible. A receive of up to LINE_MAX bytes
 * takes flag and data in one read (cxlmpi_recv_line, below).
 */
static int cu_fail(CUresult rc, const char *what);

#define KERNEL_MAX 65536u
#define KERNEL_THREADS 1024u

/* The copy of p_n bytes from p_src to p_dst by the block: 8-byte words
 * when both addresses and the length allow, else bytes. volatile: at
 * system scope, past the L1 (the pool is written by other processes). */
#define PTX_COPY                           \
	"	mov.u32 %r2, %ntid.x;\n"         \
	"	cvt.u64.u32 %rd6, %r1;\n"        \
	"	cvt.u64.u32 %rd7, %r2;\n"        \
	"	or.b64 %rd8, %rd1, %rd2;\n"      \
	"	or.b64 %rd8, %rd8, %rd3;\n"      \
	"	and.b64 %rd8, %rd8, 7;\n"        \
	"	setp.ne.u64 %p2, %rd8, 0;\n"     \
	"	@%p2 bra BYTES;\n"               \
	"	shl.b64 %rd6, %rd6, 3;\n"        \
	"	shl.b64 %rd7, %rd7, 3;\n"        \
	"WORDS:\n"                         \
	"	setp.ge.u64 %p2, %rd6, %rd3;\n"  \
	"	@%p2 bra COPIED;\n"              \
	"	add.u64 %rd8, %rd2, %rd6;\n"     \
	"	ld.volatile.u64 %rd9, [%rd8];\n" \
	"	add.u64 %rd8, %rd1, %rd6;\n"     \
	"	st.volatile.u64 [%rd8], %rd9;\n" \
	"	add.u64 %rd6, %rd6, %rd7;\n"     \
	"	bra WORDS;\n"                    \
	"BYTES:\n"                         \
	"	setp.ge.u64 %p2, %rd6, %rd3;\n"  \
	"	@%p2 bra COPIED;\n"              \
	"	add.u64 %rd8, %rd2, %rd6;\n"     \
	"	ld.volatile.u8 %r3, [%rd8];\n"   \
	"	add.u64 %rd8, %rd1, %rd6;\n"     \
	"	st.volatile.u8 [%rd8], %r3;\n"   \
	"	add.u64 %rd6, %rd6, %rd7;\n"     \
	"	bra BYTES;\n"                    \
	"COPIED:\n"

/* thread 0 (%p1 false) polls *%rd4 until >= %rd5 (0: not at all), then
 * fences so that the block's accesses after bar.sync follow the load */
#define PTX_WAIT                               \
	"	setp.eq.or.u64 %p3, %rd5, 0, %p1;\n" \
	"	@%p3 bra WAITED;\n"                  \
	"SPIN:\n"                              \
	"	ld.relaxed.sys.u64 %rd9, [%rd4];\n"  \
	"	setp.lt.u64 %p2, %rd9, %rd5;\n"      \
	"	@%p2 bra SPIN;\n"                    \
	"	fence.acq_rel.sys;\n"                \
	"WAITED:\n"

/* thread 0 stores %rd11 at *%rd10 (0: nothing) after the block's
 * copies: bar.sync joins them, the fence makes them visible first */
#define PTX_PUBLISH                             \
	"	bar.sync 0;\n"                        \
	"	setp.eq.or.u64 %p3, %rd10, 0, %p1;\n" \
	"	@%p3 bra END;\n"                      \
	"	fence.acq_rel.sys;\n"                 \
	"	st.relaxed.sys.u64 [%rd10], %rd11;\n" \
	"END:\n"                                \
	"	ret;\n"                               \
	"}\n"

/* (wait at, wait value, dst, src, n, store at, store value) */
#define PTX_ENTRY(name)                                                     \
	".visible .entry " name "(.param .u64 a_wait, .param .u64 a_wval, " \
	".param .u64 a_dst, .param .u64 a_src, .param .u64 a_n, .param "    \
	".u64 a_put, .param .u64 a_pval)\n"                                 \
	"{\n"                                                               \
	"	.reg .pred %p<4>;\n"                                              \
	"	.reg .b32 %r<4>;\n"                                               \
	"	.reg .b64 %rd<12>;\n"                                             \
	"	ld.param.u64 %rd4, [a_wait];\n"                                   \
	"	ld.param.u64 %rd5, [a_wval];\n"                                   \
	"	ld.param.u64 %rd1, [a_dst];\n"                                    \
	"	ld.param.u64 %rd2, [a_src];\n"                                    \
	"	ld.param.u64 %rd3, [a_n];\n"                                      \
	"	ld.param.u64 %rd10, [a_put];\n"                                   \
	"	ld.param.u64 %rd11, [a_pval];\n"                                  \
	"	mov.u32 %r1, %tid.x;\n"                                           \
	"	setp.ne.u32 %p1, %r1, 0;\n"

/* EARLY: let the next kernel of the stream start; DONE: wait for the
 * kernels before this one to end (sm_90; empty before) */
#define PTX_SEND(EARLY, DONE)          \
	PTX_ENTRY("cxlmpi_send_small") \
	PTX_WAIT DONE EARLY "	bar.sync 0;\n" PTX_COPY PTX_PUBLISH
#define PTX_RECV(EARLY, DONE)          \
	PTX_ENTRY("cxlmpi_recv_small") \
	EARLY PTX_WAIT "	bar.sync 0;\n" DONE PTX_COPY PTX_PUBLISH
/* A receive of up to LINE_MAX bytes, which lie in the flag's line
 * (bytes 16..31): lanes 0..3 of the one warp read the line's first 32
 * bytes at system scope in one access, lane 0's word (the flag)
 * decides for all (vote), and lanes 2 and 3 store their words' bytes of
 * the message. One read of the pool instead of two (the flag, then the
 * data): the sender wrote the data before it fenced and stored the
 * flag, and a 32-byte read of one line returns it as it was at one
 * moment, so a new flag comes with its data (as a CXL device reads a
 * line whole). */
#define PTX_RECV_LINE(EARLY, DONE)                                       \
	PTX_ENTRY("cxlmpi_recv_line")                                    \
	"	.reg .pred %q<4>;\n"                                           \
	"	.reg .b64 %x<6>;\n" EARLY "	setp.lt.u32 %q0, %r1, 4;\n"  \
	"	setp.eq.u32 %q2, %r1, 0;\n"                                    \
	"	cvt.u64.u32 %x0, %r1;\n"                                       \
	"	shl.b64 %x0, %x0, 3;\n"                                        \
	"	add.u64 %x1, %rd4, %x0;\n"                                     \
	"	mov.u64 %rd9, 0;\n"                                            \
	"LPOLL:\n"                                                       \
	"	@%q0 ld.relaxed.sys.u64 %rd9, [%x1];\n"                        \
	"	setp.ge.u64 %q1, %rd9, %rd5;\n"                                \
	"	and.pred %q1, %q1, %q2;\n"                                     \
	"	vote.sync.any.pred %q1, %q1, -1;\n"                            \
	"	@!%q1 bra LPOLL;\n"                                            \
	"	fence.acq_rel.sys;\n" DONE "	setp.lt.u32 %q3, %r1, 2;\n" \
	"	@%q3 bra STORED;\n"                                            \
	"	@!%q0 bra STORED;\n"                                           \
	"	sub.u64 %x2, %x0, 16;\n"                                       \
	"	setp.ge.u64 %q3, %x2, %rd3;\n"                                 \
	"	@%q3 bra STORED;\n"                                            \
	"	add.u64 %x3, %rd1, %x2;\n"                                     \
	"	sub.u64 %x4, %rd3, %x2;\n"                                     \
	"	min.u64 %x4, %x4, 8;\n"                                        \
	"	and.b64 %x5, %x3, 7;\n"                                        \
	"	setp.ne.u64 %q3, %x5, 0;\n"                                    \
	"	setp.lt.or.u64 %q3, %x4, 8, %q3;\n"                            \
	"	@%q3 bra LBYTE;\n"                                             \
	"	st.u64 [%x3], %rd9;\n"                                         \
	"	bra STORED;\n"                                                 \
	"LBYTE:\n"                                                       \
	"	cvt.u32.u64 %r3, %rd9;\n"                                      \
	"	st.u8 [%x3], %r3;\n"                                           \
	"	shr.u64 %rd9, %rd9, 8;\n"                                      \
	"	add.u64 %x3, %x3, 1;\n"                                        \
	"	sub.u64 %x4, %x4, 1;\n"                                        \
	"	setp.ne.u64 %q3, %x4, 0;\n"                                    \
	"	@%q3 bra LBYTE;\n"                                             \
	"STORED:\n" PTX_PUBLISH
#define PTX_HEAD(target, version) \
	".version " version "\n.target " target "\n.address_size 64\n"
#define SM90_EARLY "	griddepcontrol.launch_dependents;\n"
#define SM90_DONE "	griddepcontrol.wait;\n"

static const char small_ptx_sm90[] = PTX_HEAD("sm_90", "7.8")
	PTX_SEND(SM90_EARLY, SM90_DONE) PTX_RECV(SM90_EARLY, SM90_DONE)
		PTX_RECV_LINE(SM90_EARLY, SM90_DONE);
static const char small_ptx_sm70[] = PTX_HEAD("sm_70", "7.0") PTX_SEND("", "")
	PTX_RECV("", "") PTX_RECV_LINE("", "");

static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;
#define LINE_MAX 16u /* the line receive's largest message */
static CUfunction send_small, recv_small, recv_line; /* NULL: none */
/* launched with programmatic serialization; a refusal seen by any
 * queue's thread turns it off for all */
static _Atomic bool small_pdl;
static const struct cuda_driver *kernel_cu;

static CUresult load_module(const char *ptx)
{
	CUmodule m;
	CUresult rc = kernel_cu->cuModuleLoadData(&m, ptx);

	if (rc == CUDA_SUCCESS)
		rc = kernel_cu->cuModuleGetFunction(&send_small, m,
						    "cxlmpi_send_small");
	if (rc == CUDA_SUCCESS)
		rc = kernel_cu->cuModuleGetFunction(&recv_small, m,
						    "cxlmpi_recv_small");
	if (rc == CUDA_SUCCESS)
		rc = kernel_cu->cuModuleGetFunction(&recv_line, m,
						    "cxlmpi_recv_line");
	if (rc != CUDA_SUCCESS)
		send_small = recv_small = recv_line = NULL;
	return rc;
}

static void load_kernel(void)
{
	CUresult rc = CUDA_ERROR_NOT_SUPPORTED;

	/* sm_90's module where the driver can launch it so (a GPU before
	 * Hopper refuses its PTX) */
	if (kernel_cu->cuLaunchKernelEx)
		rc = load_module(small_ptx_sm90);
	small_pdl = rc == CUDA_SUCCESS;
	if (rc != CUDA_SUCCESS)
		rc = load_module(small_ptx_sm70);
	if (rc != CUDA_SUCCESS)
		stream_fail(MPIS_SUCCESS,
			    "GPU_MEM_OPS: the small-message kernels did not "
			    "load (%s); messages of up to %u bytes take a "
			    "copy and a stream write, about 10 us more",
			    cuda_errstr(rc), KERNEL_MAX);
}

/* On the stream: f (send_small or recv_small) with its block sized to
 * the message (one thread per word, whole warps, at most
 * KERNEL_THREADS). */
static int launch_small(struct gpu_queue *q, CUfunction f, CUdeviceptr wait,
			uint64_t wval, CUdeviceptr dst, CUdeviceptr src,
			uint64_t n, CUdeviceptr put, uint64_t pval)
{
	void *args[] = { &wait, &wval, &dst, &src, &n, &put, &pval };
	unsigned threads = (unsigned)((n / 8 + 31) & ~31ull);
	CUresult rc;

	threads = threads < 32		     ? 32
		  : threads > KERNEL_THREADS ? KERNEL_THREADS
					     : threads;
	if (small_pdl) {
		CUlaunchAttribute at;
		CUlaunchConfig cfg;

		memset(&at, 0, sizeof(at));
		at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		at.value.programmaticStreamSerializationAllowed = 1;
		memset(&cfg, 0, sizeof(cfg));
		cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = threads;
		cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.hStream = q->s;
		cfg.attrs = &at;
		cfg.numAttrs = 1;
		rc = q->cu->cuLaunchKernelEx(&cfg, f, args, NULL);
		if (rc == CUDA_SUCCESS)
			return MPIS_SUCCESS;
		if (rc != CUDA_ERROR_NOT_SUPPORTED &&
		    rc != CUDA_ERROR_INVALID_VALUE)
			return cu_fail(rc, "cuLaunchKernelEx");
		/* the kernels' griddepcontrol are no-ops without it */
		small_pdl = false;
		stream_fail(MPIS_SUCCESS,
			    "GPU_MEM_OPS: programmatic dependent launch "
			    "refused (%s); small messages wait for each "
			    "kernel's launch",
			    cuda_errstr(rc));
	}
	rc = q->cu->cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, q->s, args,
				   NULL);
	return rc == CUDA_SUCCESS ? MPIS_SUCCESS
				  : cu_fail(rc, "cuLaunchKernel");
}

static bool on_device(const struct cuda_driver *cu, const void *p);

/* The kernel path: a plain channel, a small message, and a buffer in GPU
 * memory (a kernel cannot reach pageable host memory; the copy engine
 * can). */
static bool use_kernel(struct gpu_queue *q, MPIS_Request r, uint64_t len)
{
	/* plain data, or a message in the flag's line alone */
	if (!send_small || len > KERNEL_MAX ||
	    (chan_stamped(&r->ch, len) && len > CHAN_INLINE))
		return false;
	if (!r->gpu_devbuf)
		r->gpu_devbuf = on_device(q->cu, r->buf) ? 1 : -1;
	return r->gpu_devbuf > 0;
}

/* The pool's registration with the driver, once per process. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *reg_view;   /* the process's view (cxl_pool_base) */
static CUdeviceptr reg_dev; /* the DMA view, as the device sees it */
static uint64_t reg_size;

static int cu_fail(CUresult rc, const char *what)
{
	return stream_fail(MPI_ERR_OTHER, "GPU_MEM_OPS: %s failed (%s)", what,
			   cuda_errstr(rc));
}

/* A current context on this thread: the application's, or device 0's
 * primary context (the CUDA runtime's). */
static int need_ctx(const struct cuda_driver *cu)
{
	CUcontext c = NULL;
	CUresult rc = cu->cuCtxGetCurrent(&c);

	if (rc == CUDA_SUCCESS && c)
		return MPIS_SUCCESS;
	rc = cu->cuDevicePrimaryCtxRetain(&c, 0);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuCtxSetCurrent(c);
	return rc == CUDA_SUCCESS
		       ? MPIS_SUCCESS
		       : cu_fail(rc, "making a CUDA context current");
}

static int register_pool(const struct cuda_driver *cu)
{
	cxl_pool *p = stream_pool();
	uint8_t *dma;
	CUresult rc;
	int ret = MPIS_SUCCESS;

	pthread_mutex_lock(&reg_mu);
	if (reg_view)
		goto out;
	dma = cxl_pool_dma_base(p);
	rc = cu->cuMemHostRegister(dma, cxl_pool_size(p),
				   CU_MEMHOSTREGISTER_PORTABLE |
					   CU_MEMHOSTREGISTER_DEVICEMAP);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuMemHostGetDevicePointer(&reg_dev, dma, 0);
	if (rc != CUDA_SUCCESS) {
		ret = stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				  "GPU_MEM_OPS: the GPU cannot map the pool "
				  "(%llu bytes of %s: cuMemHostRegister: %s)",
				  (unsigned long long)cxl_pool_size(p),
				  cxl_pool_path(p), cuda_errstr(rc));
		goto out;
	}
	reg_size = cxl_pool_size(p);
	reg_view = cxl_pool_base(p);
out:
	pthread_mutex_unlock(&reg_mu);
	return ret;
}

/* The device address of a pool word, given in the process's view. */
static CUdeviceptr D(const void *view_ptr)
{
	return reg_dev + (CUdeviceptr)((const uint8_t *)view_ptr - reg_view);
}

/* The DMA view's address of a pool word: where the host stores what the
 * stream waits for, and reads what the GPU wrote, as a device would. */
static uint64_t *dma_word(const void *view_ptr)
{
	return (uint64_t *)((uint8_t *)cxl_pool_dma_base(stream_pool()) +
			    ((const uint8_t *)view_ptr - reg_view));
}

static CUdeviceptr U(const void *p)
{
	return (CUdeviceptr)(uintptr_t)p;
}

static int grow(void **arr, int *cap, int n, size_t el)
{
	void *a;
	int c;

	if (n < *cap)
		return MPIS_SUCCESS;
	c = *cap ? 2 * *cap : 16;
	a = realloc(*arr, el * (size_t)c);
	if (!a)
		return MPI_ERR_NO_MEM;
	*arr = a;
	*cap = c;
	return MPIS_SUCCESS;
}

/* Remember that the stream waits for *at >= v: MPIS_Queue_wait watches
 * its peer, and releases it if the peer dies. */
static int note_wait(struct gpu_queue *q, MPIS_Request r, uint64_t *at,
		     uint64_t v)
{
	/* full: drop the waits the stream has passed (a program that never
	 * calls MPIS_Queue_wait must not grow the list without bound) */
	if (q->nwaits == q->capwaits) {
		int n = 0;

		for (int i = 0; i < q->nwaits; i++)
			if (cxl_nt_load64(stream_pool(), q->waits[i].at) <
			    q->waits[i].v)
				q->waits[n++] = q->waits[i];
		q->nwaits = n;
	}
	if (grow((void **)&q->waits, &q->capwaits, q->nwaits,
		 sizeof(*q->waits)))
		return MPI_ERR_NO_MEM;
	q->waits[q->nwaits++] = (struct gwait){ at, v, r };
	return MPIS_SUCCESS;
}

/* Enqueue a wait for *at >= v (noted). */
static int wait_geq(struct gpu_queue *q, MPIS_Request r, uint64_t *at,
		    uint64_t v)
{
	CUresult rc;

	if (note_wait(q, r, at, v))
		return MPI_ERR_NO_MEM;
	rc = q->cu->cuStreamWaitValue64(q->s, D(at), v,
					CU_STREAM_WAIT_VALUE_GEQ);
	return rc == CUDA_SUCCESS ? MPIS_SUCCESS
				  : cu_fail(rc, "cuStreamWaitValue64");
}

static int write64(struct gpu_queue *q, uint64_t *at, uint64_t v)
{
	CUresult rc = q->cu->cuStreamWriteValue64(
		q->s, D(at), v, CU_STREAM_WRITE_VALUE_DEFAULT);

	return rc == CUDA_SUCCESS ? MPIS_SUCCESS
				  : cu_fail(rc, "cuStreamWriteValue64");
}

static int copy(struct gpu_queue *q, CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	CUresult rc;

	if (!n)
		return MPIS_SUCCESS;
	rc = q->cu->cuMemcpyAsync(dst, src, n, q->s);
	return rc == CUDA_SUCCESS ? MPIS_SUCCESS : cu_fail(rc, "cuMemcpyAsync");
}

/* n rows of w bytes, src rows spp apart, dst rows dpp apart. */
static int copy_rows(struct gpu_queue *q, CUdeviceptr dst, size_t dpp,
		     CUdeviceptr src, size_t spp, size_t w, size_t n)
{
	CUDA_MEMCPY2D m;
	CUresult rc;

	if (!n)
		return MPIS_SUCCESS;
	memset(&m, 0, sizeof(m));
	m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
	m.srcDevice = src;
	m.srcPitch = spp;
	m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	m.dstDevice = dst;
	m.dstPitch = dpp;
	m.WidthInBytes = w;
	m.Height = n;
	rc = q->cu->cuMemcpy2DAsync(&m, q->s);
	return rc == CUDA_SUCCESS ? MPIS_SUCCESS
				  : cu_fail(rc, "cuMemcpy2DAsync");
}

/*
 * Stamped lines (stream_channel.c, send_small): the first CHAN_INLINE
 * bytes in the flag line at CHAN_INLINE_OFF, then CHAN_LINE_DATA bytes
 * per line after its stamp word. to_pool: user buffer -> slot, else
 * slot -> user buffer.
 */
static int copy_stamped(struct gpu_queue *q, uint64_t *hdr, uint8_t *buf,
			uint64_t len, bool to_pool)
{
	uint64_t in = len < CHAN_INLINE ? len : CHAN_INLINE;
	uint64_t rest = len - in, full = rest / CHAN_LINE_DATA;
	uint64_t part = rest % CHAN_LINE_DATA;
	CUdeviceptr pool_in = D((uint8_t *)hdr + CHAN_INLINE_OFF);
	CUdeviceptr pool_rows = D((uint8_t *)hdr + CXL_LINE + 8);
	CUdeviceptr user_rows = U(buf + in);
	int rc;

	rc = to_pool ? copy(q, pool_in, U(buf), in)
		     : copy(q, U(buf), pool_in, in);
	if (!rc)
		rc = to_pool ? copy_rows(q, pool_rows, CXL_LINE, user_rows,
					 CHAN_LINE_DATA, CHAN_LINE_DATA, full)
			     : copy_rows(q, user_rows, CHAN_LINE_DATA,
					 pool_rows, CXL_LINE, CHAN_LINE_DATA,
					 full);
	if (!rc && part)
		rc = to_pool ? copy(q, pool_rows + full * CXL_LINE,
				    user_rows + full * CHAN_LINE_DATA, part)
			     : copy(q, user_rows + full * CHAN_LINE_DATA,
				    pool_rows + full * CXL_LINE, part);
	return rc;
}

/* Where a kernel's message lies in slot hdr: in the flag's line if it is
 * stamped (use_kernel: then it fits there), else in the data lines. */
static CUdeviceptr kernel_data(const struct chan *c, uint64_t *hdr,
			       uint64_t len)
{
	return D((uint8_t *)hdr +
		 (chan_stamped(c, len) ? CHAN_INLINE_OFF : CXL_LINE));
}

static int send_start(struct gpu_queue *q, MPIS_Request r, uint64_t k)
{
	struct chan *c = &r->ch;
	uint64_t *hdr = chan_slot(c, k);
	uint64_t len = r->bytes;
	unsigned mutate = cxlmpi_config()->test_gpu_mutate;
	uint64_t *consumed = (uint64_t *)(c->base + CHAN_CONSUMED);
	/* the slot is free once the receiver consumed message k - nslots */
	uint64_t credit = k > c->nslots && mutate != 1 ? k - c->nslots : 0;
	int rc = MPIS_SUCCESS;

	if (use_kernel(q, r, len) && mutate != 2) {
		/* the credit wait, the data and the flag in one kernel */
		if (credit)
			rc = note_wait(q, r, consumed, credit);
		return rc ? rc
			  : launch_small(q, send_small, D(consumed), credit,
					 kernel_data(c, hdr, len), U(r->buf),
					 len, D(hdr), chan_flag(k, len));
	}
	if (credit)
		rc = wait_geq(q, r, consumed, credit);
	if (!rc && mutate == 2) /* test: the flag before the data */
		rc = write64(q, hdr, chan_flag(k, len));
	if (!rc && use_kernel(q, r, len))
		return launch_small(q, send_small, D(consumed), 0,
				    kernel_data(c, hdr, len), U(r->buf), len, 0,
				    0);
	if (!rc && chan_stamped(c, len)) {
		rc = copy_stamped(q, hdr, r->buf, len, true);
		/* each stamp after its line's data (the write's barrier) */
		for (unsigned j = 1; !rc && j < chan_lines(len); j++)
			rc = write64(q, hdr + j * (CXL_LINE / 8), k);
	} else if (!rc) {
		rc = copy(q, D((uint8_t *)hdr + CXL_LINE), U(r->buf), len);
	}
	/* the flag, after the data: the driver's default write barrier */
	if (!rc && mutate != 2)
		rc = write64(q, hdr, chan_flag(k, len));
	return rc;
}

static int recv_wait(struct gpu_queue *q, MPIS_Request r, uint64_t k)
{
	struct chan *c = &r->ch;
	uint64_t *hdr = chan_slot(c, k);
	uint64_t len = r->bytes;
	int rc;

	/* any length: a different one is caught by the size check */
	if (use_kernel(q, r, len)) {
		/* the flag wait, the copy out and the credit in one kernel;
		 * up to LINE_MAX bytes one read of the line gets them all */
		bool line = chan_stamped(c, len) && len <= LINE_MAX;

		rc = note_wait(q, r, hdr, (k & 0xffffffffu) << 32);
		return rc ? rc
			  : launch_small(
				    q, line ? recv_line : recv_small, D(hdr),
				    (k & 0xffffffffu) << 32, U(r->buf),
				    kernel_data(c, hdr, len), len,
				    D((uint64_t *)(c->base + CHAN_CONSUMED)),
				    k);
	}
	rc = wait_geq(q, r, hdr, (k & 0xffffffffu) << 32);
	if (!rc && chan_stamped(c, len)) {
		for (unsigned j = 1; !rc && j < chan_lines(len); j++)
			rc = wait_geq(q, r, hdr + j * (CXL_LINE / 8), k);
		if (!rc)
			rc = copy_stamped(q, hdr, r->buf, len, false);
	} else if (!rc) {
		rc = copy(q, U(r->buf), D((uint8_t *)hdr + CXL_LINE), len);
	}
	/* the credit, after the copy out (stream order and barrier) */
	if (!rc)
		rc = write64(q, (uint64_t *)(c->base + CHAN_CONSUMED), k);
	return rc;
}

/* Collectives: a host function per start and per wait, on staging
 * buffers in host memory when the user's are in GPU memory. */
struct coll_call {
	MPIS_Request r;
	uint64_t k;
	struct gpu_queue *q;
	bool finish;
};

static void coll_host(void *arg)
{
	struct coll_call *cc = arg;

	if (cc->finish) {
		int rc = coll_finish(cc->r, cc->k);

		int none = MPIS_SUCCESS;

		if (rc)
			atomic_compare_exchange_strong(&cc->q->err, &none, rc);
	} else {
		coll_start(cc->r, cc->k);
	}
	free(cc);
}

static bool on_device(const struct cuda_driver *cu, const void *p)
{
	int type = 0;

	return cu->cuPointerGetAttribute(&type,
					 CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					 U(p)) == CUDA_SUCCESS &&
	       type == CU_MEMORYTYPE_DEVICE;
}

static int coll_call(struct gpu_queue *q, MPIS_Request r, uint64_t k,
		     bool finish)
{
	struct coll_call *cc = malloc(sizeof(*cc));
	CUresult rc;

	if (!cc)
		return MPI_ERR_NO_MEM;
	*cc = (struct coll_call){ r, k, q, finish };
	rc = q->cu->cuLaunchHostFunc(q->s, coll_host, cc);
	if (rc != CUDA_SUCCESS) {
		free(cc);
		return cu_fail(rc, "cuLaunchHostFunc");
	}
	return MPIS_SUCCESS;
}

/* An allreduce on device buffers: the pool collective runs on host
 * staging buffers (r->sendbuf, r->buf), the stream copies in and out.
 * They are registered (pinned): an asynchronous copy from pageable
 * memory reads it when it is enqueued, not in stream order. */
static int coll_stage(struct gpu_queue *q, MPIS_Request r)
{
	CUresult rc;
	size_t len;
	void *mem;

	if (r->kind != SR_ALLREDUCE || r->gpu_stage)
		return MPIS_SUCCESS;
	r->gpu_recv = r->buf;
	r->gpu_send = r->sendbuf;
	if (!on_device(q->cu, r->buf) && !on_device(q->cu, r->sendbuf))
		return MPIS_SUCCESS;
	/* whole pages of its own: the driver refuses to register a page
	 * twice, and two small mallocs may share one */
	len = (2 * (size_t)r->bytes + 4096) & ~(size_t)4095;
	if (posix_memalign(&mem, 4096, len))
		return MPI_ERR_NO_MEM;
	r->gpu_stage = mem;
	rc = q->cu->cuMemHostRegister(r->gpu_stage, len,
				      CU_MEMHOSTREGISTER_PORTABLE);
	if (rc != CUDA_SUCCESS) {
		free(r->gpu_stage);
		r->gpu_stage = NULL;
		return cu_fail(rc, "cuMemHostRegister of a staging buffer");
	}
	r->buf = r->gpu_stage;
	r->sendbuf =
		r->gpu_send == r->gpu_recv ? r->buf : r->gpu_stage + r->bytes;
	return MPIS_SUCCESS;
}

static int track(struct gpu_queue *q, MPIS_Request r)
{
	if (r->gpu_q)
		return MPIS_SUCCESS;
	if (grow((void **)&q->reqs, &q->capreqs, q->nreqs, sizeof(*q->reqs)))
		return MPI_ERR_NO_MEM;
	q->reqs[q->nreqs++] = r;
	r->gpu_q = &q->head;
	return MPIS_SUCCESS;
}

static int gpu_start(struct queue_head *h, MPIS_Request r, uint64_t k)
{
	struct gpu_queue *q = (struct gpu_queue *)h;
	uint64_t known;
	int rc;

	if (r->lay.map.seg)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "GPU_MEM_OPS: request of a non-contiguous "
				   "datatype; the GPU queue copies contiguous "
				   "buffers only (use a THREAD queue, or pack "
				   "on the GPU)");
	/* the copy engine copies host memory to host memory (the pool)
	 * synchronously with the calling thread, and a kernel cannot reach
	 * pageable memory: point-to-point buffers are GPU memory */
	if (r->has_chan && r->bytes && !r->gpu_devbuf)
		r->gpu_devbuf = on_device(q->cu, r->buf) ? 1 : -1;
	if (r->has_chan && r->bytes && r->gpu_devbuf < 0)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "GPU_MEM_OPS: the buffer of this %s is host "
				   "memory; GPU queues move GPU memory "
				   "(cudaMalloc, MPIS_Alloc_mem cuda:device): "
				   "use a THREAD queue for host buffers",
				   r->kind == SR_SEND ? "send" : "receive");
	if (r->has_chan && r->kind == SR_RECV) {
		known = chan_sender_bytes(&r->ch);
		if (known && known != r->bytes)
			return stream_fail(
				MPI_ERR_TRUNCATE,
				"GPU_MEM_OPS: the receive of %llu bytes from "
				"rank %d is matched with a send of %llu; a GPU "
				"receive takes messages of exactly its size",
				(unsigned long long)r->bytes, r->peer,
				(unsigned long long)known);
	}
	rc = track(q, r);
	if (!rc && r->has_coll)
		rc = coll_stage(q, r);
	if (rc)
		return rc;
	if (r->has_chan && r->kind == SR_SEND)
		return send_start(q, r, k);
	if (r->has_coll) {
		if (r->gpu_stage && r->sendbuf != r->buf)
			rc = copy(q, U(r->sendbuf), U(r->gpu_send), r->bytes);
		else if (r->gpu_stage)
			rc = copy(q, U(r->buf), U(r->gpu_recv), r->bytes);
		return rc ? rc : coll_call(q, r, k, false);
	}
	return MPIS_SUCCESS;
}

static int gpu_waitall(struct queue_head *h, struct pend *set, int n)
{
	struct gpu_queue *q = (struct gpu_queue *)h;
	int rc = MPIS_SUCCESS;

	for (int i = 0; i < n && !rc; i++) {
		MPIS_Request r = set[i].r;

		if (r->has_chan && r->kind == SR_RECV) {
			rc = recv_wait(q, r, set[i].k);
			if (!rc && !chan_sender_bytes(&r->ch)) {
				rc = grow((void **)&q->unchecked,
					  &q->capunchecked, q->nunchecked,
					  sizeof(*q->unchecked));
				if (!rc)
					q->unchecked[q->nunchecked++] = r;
			}
		} else if (r->has_coll) {
			rc = coll_call(q, r, set[i].k, true);
			if (!rc && r->gpu_stage)
				rc = copy(q, U(r->gpu_recv), U(r->buf),
					  r->bytes);
		}
		/* round k is on the stream: a THREAD queue never takes
		 * r (startable), so nothing waits for retired */
		atomic_store(&r->retired, set[i].k);
	}
	free(set);
	if (rc) { /* part of it is on the stream: the queue has failed */
		int none = MPIS_SUCCESS;

		atomic_compare_exchange_strong(&q->err, &none, rc);
	}
	return rc;
}

static int gpu_host(struct queue_head *h, void (*fn)(void *), void *arg)
{
	struct gpu_queue *q = (struct gpu_queue *)h;
	CUresult rc = q->cu->cuLaunchHostFunc(q->s, fn, arg);

	return rc == CUDA_SUCCESS ? MPIS_SUCCESS
				  : cu_fail(rc, "cuLaunchHostFunc");
}

/* A peer of a pending wait is dead: store every value the stream waits
 * for, so that it drains, and fail. */
/* Store the value the stream waits for at wait i, as a device would:
 * into the memory the GPU reads. */
static void release_wait(struct gpu_queue *q, int i)
{
	__atomic_store_n(dma_word(q->waits[i].at), q->waits[i].v,
			 __ATOMIC_SEQ_CST);
}

/*
 * The peers of the waits the stream has not passed. A dead one's waits
 * are released (its channels are dead: nothing of ours writes there
 * again), and the queue fails. The waits on live peers are left to
 * complete: releasing one would write into a live peer's channel (a
 * credit it has not given, a flag it has not set). all: release every
 * wait still open (the queue failed a peer timeout ago and the stream
 * is still stuck, on live peers that wait for the dead one too).
 */
static int watch(struct gpu_queue *q, bool all)
{
	int err = MPIS_SUCCESS;

	for (int i = 0; i < q->nwaits; i++) {
		MPIS_Request r = q->waits[i].r;

		if (!r->has_chan)
			continue;
		/* only a wait the stream may still be in: a peer that sent
		 * all and freed its requests is not missed (uncached load:
		 * the value as the GPU reads it) */
		if (cxl_nt_load64(stream_pool(), q->waits[i].at) >=
		    q->waits[i].v)
			continue;
		if (all || r->gpu_dead || chan_watch(&r->ch)) {
			if (!all && !r->gpu_dead)
				err = stream_fail(
					MPI_ERR_OTHER,
					"GPU_MEM_OPS: rank %d stopped "
					"(above); the stream's waits on it "
					"were released: its receive buffers "
					"hold no data of that rank",
					r->peer);
			r->gpu_dead = true;
			release_wait(q, i);
		}
	}
	return err;
}

static int gpu_wait(struct queue_head *h)
{
	struct gpu_queue *q = (struct gpu_queue *)h;
	unsigned spins = 0;
	uint64_t failed_ms = 0, limit = cxl_pool_peer_timeout_ms(stream_pool());
	CUresult rc;
	int err = MPIS_SUCCESS;

	for (;;) {
		rc = q->cu->cuStreamQuery(q->s);
		if (rc != CUDA_ERROR_NOT_READY)
			break;
		if ((spins & 255) == 255) {
			uint64_t now = cxl_now_ns() / 1000000;
			int e = watch(q, failed_ms && limit &&
						 now - failed_ms > limit);

			if (e && !err) {
				err = e;
				failed_ms = now;
			}
		}
		stream_spin(&spins);
	}
	if (rc != CUDA_SUCCESS && !err)
		err = cu_fail(rc, "the stream");
	for (int i = 0; i < q->nunchecked && !err; i++) {
		MPIS_Request r = q->unchecked[i];
		uint64_t got = chan_sender_bytes(&r->ch);

		if (got != r->bytes)
			err = stream_fail(
				MPI_ERR_TRUNCATE,
				"GPU_MEM_OPS: a send of %llu bytes from rank "
				"%d arrived in a GPU receive of %llu bytes, "
				"which copied its whole size: the bytes past "
				"the message are not the sender's; a GPU "
				"receive takes messages of exactly its size",
				(unsigned long long)got, r->peer,
				(unsigned long long)r->bytes);
	}
	q->nunchecked = 0;
	q->nwaits = 0;
	if (err) {
		int none = MPIS_SUCCESS;

		atomic_compare_exchange_strong(&q->err, &none, err);
	}
	return atomic_load(&q->err);
}

/* r's buffers back from the staging ones, which go */
static void unstage(MPIS_Request r)
{
	const struct cuda_driver *cu = cuda_load();

	if (!r->gpu_stage)
		return;
	if (cu)
		cu->cuMemHostUnregister(r->gpu_stage);
	free(r->gpu_stage);
	r->gpu_stage = NULL;
	r->buf = r->gpu_recv;
	r->sendbuf = r->gpu_send;
}

static void gpu_destroy(struct queue_head *h)
{
	struct gpu_queue *q = (struct gpu_queue *)h;

	gpu_wait(h);
	for (int i = 0; i < q->nreqs; i++) {
		q->reqs[i]->gpu_q = NULL;
		unstage(q->reqs[i]);
	}
	free(q->waits);
	free(q->unchecked);
	free(q->reqs);
	free(q);
}

static const struct queue_ops gpu_ops = {
	.start = gpu_start,
	.waitall = gpu_waitall,
	.host = gpu_host,
	.wait = gpu_wait,
	.destroy = gpu_destroy,
};

int gpu_queue_create(struct queue_head **out, void *extra)
{
	const struct cuda_driver *cu = cuda_load();
	struct gpu_queue *q;
	int rc;

	if (!cu)
		return MPIS_UNSUPPORTED_BEHAVIOR; /* cuda_load said why */
	rc = need_ctx(cu);
	if (!rc)
		rc = register_pool(cu);
	if (rc)
		return rc;
	kernel_cu = cu;
	pthread_once(&kernel_once, load_kernel);
	q = calloc(1, sizeof(*q));
	if (!q)
		return MPI_ERR_NO_MEM;
	q->head.ops = &gpu_ops;
	q->head.type = GPU_MEM_OPS;
	q->cu = cu;
	q->s = extra ? *(CUstream *)extra : NULL;
	*out = &q->head;
	return MPIS_SUCCESS;
}

void gpu_request_release(MPIS_Request r)
{
	struct gpu_queue *q = (struct gpu_queue *)r->gpu_q;

	/* the stream is done with the channel before it goes */
	if (q)
		gpu_wait(&q->head);
	for (int i = 0; q && i < q->nreqs; i++)
		if (q->reqs[i] == r)
			q->reqs[i] = q->reqs[--q->nreqs];
	r->gpu_q = NULL;
	unstage(r);
}

int gpu_alloc(size_t size, void **out)
{
	const struct cuda_driver *cu = cuda_load();
	CUdeviceptr d = 0;
	CUresult rc;
	int ret;

	if (!cu)
		return stream_fail(MPIS_UNSUPPORTED_BEHAVIOR,
				   "MPIS_Alloc_mem: cuda:device memory needs "
				   "a CUDA driver and GPU (above)");
	ret = need_ctx(cu);
	if (ret)
		return ret;
	rc = cu->cuMemAlloc(&d, size ? size : 1);
	if (rc != CUDA_SUCCESS)
		return stream_fail(MPI_ERR_NO_MEM,
				   "MPIS_Alloc_mem: cuMemAlloc of %zu bytes "
				   "failed (%s)",
				   size, cuda_errstr(rc));
	*out = (void *)(uintptr_t)d;
	return MPIS_SUCCESS;
}

void gpu_free(void *p)
{
	const struct cuda_driver *cu = cuda_load();

	if (cu)
		cu->cuMemFree(U(p));
}

bool gpu_device_memory(const void *p)
{
	const struct cuda_driver *cu = cuda_if_in_use();

	return cu && p && on_device(cu, p);
}
