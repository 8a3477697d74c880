/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loading the CUDA driver at run time (cuda_driver.h): dlopen of
 * CXLMPI_CUDA_DRIVER (default libcuda.so.1), each entry point by its _v2
 * name if the driver exports one (the current ABI of cuMemHostRegister,
 * cuMemAlloc, cuStreamWriteValue64, ...), else by its plain name.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cuda_driver.h"

static struct cuda_driver drv;
static const struct cuda_driver *loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *entry(void *h, const char *name)
{
	char v2[64];
	void *f;

	snprintf(v2, sizeof(v2), "%s_v2", name);
	f = dlsym(h, v2);
	return f ? f : dlsym(h, name);
}

static void why(const char *path, const char *what)
{
	fprintf(stderr,
		"libcxlmpi: stream: GPU_MEM_OPS queues are not available: %s "
		"(CUDA driver '%s', CXLMPI_CUDA_DRIVER); use THREAD queues or "
		"run where an NVIDIA driver and GPU are\n",
		what, path);
}

static void load(void)
{
	const char *path = cxlmpi_config()->cuda_driver;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	char msg[160];
	CUdevice dev;
	int ok = 0;
	CUresult rc;

	if (!h) {
		why(path, dlerror());
		return;
	}
#define CUDA_FN_LOAD(name, args)                                         \
	*(void **)&drv.name = entry(h, #name);                           \
	if (!drv.name) {                                                 \
		why(path, "it has no entry point " #name " (too old?)"); \
		dlclose(h);                                              \
		return;                                                  \
	}
	CUDA_DRIVER_FNS(CUDA_FN_LOAD)
#undef CUDA_FN_LOAD
	*(void **)&drv.cuLaunchKernelEx = dlsym(h, "cuLaunchKernelEx");
	rc = drv.cuInit(0);
	if (rc == CUDA_SUCCESS)
		rc = drv.cuDeviceGet(&dev, 0);
	if (rc == CUDA_SUCCESS)
		rc = drv.cuDeviceGetAttribute(
			&ok, CU_DEVICE_ATTRIBUTE_MEM_OPS_64, dev);
	if (rc != CUDA_SUCCESS) {
		snprintf(msg, sizeof(msg), "no usable GPU (%s)",
			 cuda_errstr(rc));
		why(path, msg);
		return;
	}
	if (!ok) {
		why(path, "the GPU cannot do 64-bit stream memory operations");
		return;
	}
	loaded = &drv;
}

const struct cuda_driver *cuda_load(void)
{
	pthread_once(&once, load);
	return loaded;
}

const struct cuda_driver *cuda_if_in_use(void)
{
	void *h;

	if (loaded)
		return loaded;
	/* the application has the driver loaded: it uses CUDA */
	h = dlopen(cxlmpi_config()->cuda_driver, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return NULL;
	dlclose(h);
	return cuda_load();
}

const char *cuda_errstr(CUresult rc)
{
	static _Thread_local char buf[48];
	const char *s = NULL;

	if (drv.cuGetErrorString && drv.cuGetErrorString(rc, &s) == 0 && s)
		return s;
	snprintf(buf, sizeof(buf), "CUDA error %d", rc);
	return buf;
}
