/* SPDX-License-Identifier: BSD-3-Clause */
/* Small helpers: hashing, name checks, process liveness. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

uint64_t cxl_fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t cxl_job_id(const char *job)
{
	/* 0 is reserved for "no job"; the global namespace hashes like any. */
	uint64_t h = cxl_fnv1a(job, strlen(job), FNV_SEED);

	return h ? h : 1;
}

bool cxl_name_valid(const char *pool_name, size_t cap)
{
	/* A name read from the pool is only usable if NUL-terminated in cap. */
	return memchr(pool_name, '\0', cap) != NULL;
}

uint64_t cxl_proc_starttime(int pid)
{
	char path[64], buf[1024];
	FILE *f;
	size_t n;
	char *s;
	unsigned long long st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may contain spaces and parentheses: parse after the last ')' */
	s = strrchr(buf, ')');
	if (!s)
		return 0;
	/* fields 3..22 follow; starttime is field 22 */
	if (sscanf(s + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
		   "%*d %*d %*d %*d %*d %llu",
		   &st) != 1)
		return 0;
	return st;
}

bool cxl_proc_alive(int pid, uint64_t starttime)
{
	if (pid <= 0)
		return false;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	/* A recycled pid has another start time. 0 means unknown: trust kill.
	 */
	if (starttime) {
		uint64_t now = cxl_proc_starttime(pid);
		if (now && now != starttime)
			return false;
	}
	return true;
}

void cxl_pool_text(char *dst, size_t dstsz, const char *src, size_t n)
{
	size_t i;

	if (!dstsz)
		return;
	for (i = 0; i < n && i + 1 < dstsz && src[i]; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
}
