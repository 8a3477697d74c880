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

/* Reads the state letter (field 3) and start time (field 22) of a process
 * from /proc. Returns false if the process is not there. */
static bool proc_stat(int pid, char *state, uint64_t *starttime)
{
	char path[64], buf[1024];
	FILE *f;
	size_t n;
	char *s;
	unsigned long long st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may contain spaces and parentheses: parse after the last ')' */
	s = strrchr(buf, ')');
	if (!s || s[1] != ' ' || !s[2])
		return false;
	*state = s[2];
	/* fields 4..22 follow; starttime is field 22 */
	if (sscanf(s + 3,
		   " %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
		   "%*d %*d %*d %*d %*d %llu",
		   &st) != 1)
		st = 0;
	*starttime = st;
	return true;
}

uint64_t cxl_proc_starttime(int pid)
{
	char state;
	uint64_t st;

	return proc_stat(pid, &state, &st) ? st : 0;
}

bool cxl_proc_alive(int pid, uint64_t starttime)
{
	char state = 0;
	uint64_t now = 0;

	if (pid <= 0)
		return false;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	if (!proc_stat(pid, &state, &now))
		return true; /* another pid namespace's /proc: trust kill */
	/* A zombie has closed its files and unmapped the pool: it can never
	 * write again, though its pid stays until its parent reaps it (or
	 * never, under a container init that does not reap). */
	if (state == 'Z' || state == 'X' || state == 'x')
		return false;
	/* A recycled pid has another start time. 0 means unknown: trust kill.
	 */
	if (starttime && now && now != starttime)
		return false;
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
