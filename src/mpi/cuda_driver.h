/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The part of the CUDA driver API (libcuda.so.1) that the GPU_MEM_OPS
 * stream queue uses, declared here so that libcxlmpi builds without the
 * CUDA toolkit: the types, constants and signatures of the driver's stable
 * C ABI (CUDA 12 and 13). The entry points are looked up at run time
 * (cuda_load), from libcuda.so.1 or from CXLMPI_CUDA_DRIVER: the fake
 * driver of the tests (tests/gpu/fake_cuda.c) implements the same table.
 */
#ifndef CXLMPI_CUDA_DRIVER_H
#define CXLMPI_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef uint64_t CUdeviceptr;
typedef void (*CUhostFn)(void *);

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_NOT_SUPPORTED 801

#define CU_STREAM_NON_BLOCKING 0x1
#define CU_STREAM_WAIT_VALUE_GEQ 0x0
#define CU_STREAM_WRITE_VALUE_DEFAULT 0x0
#define CU_MEMHOSTREGISTER_PORTABLE 0x1
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x2
#define CU_MEMORYTYPE_HOST 1
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEMORYTYPE_UNIFIED 4
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
/* CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS */
#define CU_DEVICE_ATTRIBUTE_MEM_OPS_64 122

typedef struct CUDA_MEMCPY2D_st {
	size_t srcXInBytes, srcY;
	int srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	void *srcArray;
	size_t srcPitch;
	size_t dstXInBytes, dstY;
	int dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	void *dstArray;
	size_t dstPitch;
	size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

/* cuLaunchKernelEx's configuration (CUDA 12 and 13): one attribute is
 * used, programmatic stream serialization (sm_90: the next kernel of the
 * stream may start before this one ends). */
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
typedef struct CUlaunchAttribute_st {
	int id;
	char pad[8 - sizeof(int)];
	union {
		char pad[64];
		int programmaticStreamSerializationAllowed;
	} value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned numAttrs;
} CUlaunchConfig;

/* The entry points, by the name the driver exports (a _v2 name first). */
#define CUDA_DRIVER_FNS(X)                                                   \
	X(cuInit, (unsigned))                                                \
	X(cuDeviceGet, (CUdevice *, int))                                    \
	X(cuDeviceGetAttribute, (int *, int, CUdevice))                      \
	X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                 \
	X(cuCtxGetCurrent, (CUcontext *))                                    \
	X(cuCtxSetCurrent, (CUcontext))                                      \
	X(cuStreamSynchronize, (CUstream))                                   \
	X(cuStreamQuery, (CUstream))                                         \
	X(cuMemHostRegister, (void *, size_t, unsigned))                     \
	X(cuMemHostUnregister, (void *))                                     \
	X(cuMemHostGetDevicePointer, (CUdeviceptr *, void *, unsigned))      \
	X(cuMemAlloc, (CUdeviceptr *, size_t))                               \
	X(cuMemFree, (CUdeviceptr))                                          \
	X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))       \
	X(cuMemcpy2DAsync, (const CUDA_MEMCPY2D *, CUstream))                \
	X(cuStreamWriteValue64, (CUstream, CUdeviceptr, uint64_t, unsigned)) \
	X(cuStreamWaitValue64, (CUstream, CUdeviceptr, uint64_t, unsigned))  \
	X(cuLaunchHostFunc, (CUstream, CUhostFn, void *))                    \
	X(cuModuleLoadData, (CUmodule *, const void *))                      \
	X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))       \
	X(cuLaunchKernel,                                                    \
	  (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,     \
	   unsigned, unsigned, CUstream, void **, void **))                  \
	X(cuPointerGetAttribute, (void *, int, CUdeviceptr))                 \
	X(cuGetErrorString, (CUresult, const char **))

struct cuda_driver {
#define CUDA_FN_PTR(name, args) CUresult(*name) args;
	CUDA_DRIVER_FNS(CUDA_FN_PTR)
#undef CUDA_FN_PTR
	/* optional (CUDA 12 and later; NULL where the driver has none) */
	CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction,
				     void **, void **);
};

/* The driver's entry points, loaded and initialised once (cuInit, a
 * device that can do 64-bit stream memory operations); NULL if there is
 * none, after saying why once on stderr. */
const struct cuda_driver *cuda_load(void);

/* cuda_load, but only if this process has the driver loaded already. */
const struct cuda_driver *cuda_if_in_use(void);

/* The driver's name of a result, for messages. */
const char *cuda_errstr(CUresult rc);

#endif
