/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA driver for the GPU tests: loaded at run time like libcxlmpi
 * does it (CXLMPI_CUDA_DRIVER, default libcuda.so.1), so that one binary
 * runs on the fake driver here and on a real GPU.
 */
#ifndef CXLMPI_GPU_UTIL_H
#define CXLMPI_GPU_UTIL_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_driver.h"

#define TEST_CUDA_FNS(X)                                               \
	X(cuInit, (unsigned))                                          \
	X(cuDeviceGet, (CUdevice *, int))                              \
	X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))           \
	X(cuCtxSetCurrent, (CUcontext))                                \
	X(cuStreamCreate, (CUstream *, unsigned))                      \
	X(cuStreamSynchronize, (CUstream))                             \
	X(cuMemAlloc, (CUdeviceptr *, size_t))                         \
	X(cuMemFree, (CUdeviceptr))                                    \
	X(cuMemHostRegister, (void *, size_t, unsigned))               \
	X(cuMemHostUnregister, (void *))                               \
	X(cuMemcpyHtoD, (CUdeviceptr, const void *, size_t))           \
	X(cuMemcpyDtoH, (void *, CUdeviceptr, size_t))                 \
	X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
	X(cuLaunchHostFunc, (CUstream, CUhostFn, void *))

struct test_cuda {
#define TEST_FN_PTR(name, args) CUresult(*name) args;
	TEST_CUDA_FNS(TEST_FN_PTR)
#undef TEST_FN_PTR
};

/* Exits with status 77 (skipped) when there is no driver. */
static inline void test_cuda_load(struct test_cuda *cu)
{
	const char *path = getenv("CXLMPI_CUDA_DRIVER");
	CUcontext ctx;
	CUdevice dev;
	void *h;

	if (!path || !*path)
		path = "libcuda.so.1";
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "no CUDA driver %s: %s\n", path, dlerror());
		exit(77);
	}
#define TEST_FN_LOAD(name, args)                                        \
	{                                                               \
		void *f = dlsym(h, #name "_v2");                        \
		*(void **)&cu->name = f ? f : dlsym(h, #name);          \
		if (!cu->name) {                                        \
			fprintf(stderr, "%s has no %s\n", path, #name); \
			exit(1);                                        \
		}                                                       \
	}
	TEST_CUDA_FNS(TEST_FN_LOAD)
#undef TEST_FN_LOAD
	if (cu->cuInit(0) || cu->cuDeviceGet(&dev, 0) ||
	    cu->cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cu->cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "no usable GPU behind %s\n", path);
		exit(77);
	}
}

#endif
