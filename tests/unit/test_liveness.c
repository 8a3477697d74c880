/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The liveness service (include/cxlshm/liveness.h) in one process: beats
 * advance while registered and stop once removed, one thread serves them
 * all and is gone after the last removal, the host is marked alive, the
 * watch reports how long a beat stood still, and bad words are refused.
 */
#include <dirent.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"

static uint64_t now_ms(void)
{
	return cxl_now_ns() / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	enum cxl_coh_mode mode = targ_mode(argc, argv);
	struct cxl_pool_opts o;
	struct cxl_watch w0, w1;
	struct tpool tp;
	struct cxl_obj obj;
	uint64_t *words, v;
	int before, alive = -1;
	cxl_pool *p;

	tpool_init(&tp, "liveness");
	topts(&o, &tp, mode, 0, 0);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	REQUIRE(cxl_obj_create(p, "beats", 3 * CXL_LINE, CXL_OBJ_ZERO, &obj) ==
		CXL_OK);
	words = obj.ptr;
	CHECK(cxl_pool_peer_timeout_ms(p) == 10000); /* the default */

	/* refused: outside the mapping, unaligned */
	CHECK_RC(cxl_beat_add(p, (uint64_t *)&v), CXL_EINVAL);
	CHECK_RC(cxl_beat_add(p, (uint64_t *)((uint8_t *)words + 4)),
		 CXL_EINVAL);

	before = threads();
	CHECK_RC(cxl_beat_add(p, &words[0]), CXL_OK);
	CHECK_RC(cxl_beat_add(p, &words[8]), CXL_OK);
	CHECK(threads() == before + 1); /* one thread for both */
	cxl_watch_start(p, &words[0], &w0, now_ms());
	cxl_watch_start(p, &words[8], &w1, now_ms());
	sleep_ms(3 * CXL_BEAT_MS + 50);
	/* both moved: the watch says 0 ms still */
	CHECK(cxl_watch_still_ms(p, &words[0], &w0, now_ms()) == 0);
	CHECK(cxl_watch_still_ms(p, &words[8], &w1, now_ms()) == 0);
	CHECK(cxl_watch_last(&w0) >= 2);
	CHECK_RC(
		cxl_host_alive(p, cxl_pool_host_id(p), 3 * CXL_BEAT_MS, &alive),
		CXL_OK);
	CHECK(alive == 1);

	/* removed: the word stands still, the other goes on */
	cxl_beat_remove(p, &words[0]);
	v = cxl_nt_load64(p, &words[0]);
	sleep_ms(3 * CXL_BEAT_MS + 50);
	CHECK(cxl_nt_load64(p, &words[0]) == v);
	CHECK(cxl_watch_still_ms(p, &words[8], &w1, now_ms()) == 0);
	cxl_watch_still_ms(p, &words[0], &w0, now_ms());
	sleep_ms(2 * CXL_BEAT_MS);
	CHECK(cxl_watch_still_ms(p, &words[0], &w0, now_ms()) >=
	      2 * CXL_BEAT_MS - 10);

	/* a forked child: no beat thread, no beats of the parent; its own
	 * first beat starts one (and does not hang on the parent's lock) */
	{
		pid_t pid = fork();
		int st = 0;

		if (pid == 0) {
			int ok = threads() == 1 &&
				 cxl_beat_add(p, &words[16]) == CXL_OK &&
				 threads() == 2;

			cxl_beat_remove(p, &words[16]);
			_exit(ok && threads() == 1 ? 0 : 1);
		}
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0);
	}

	/* the last one removed: no thread left, the beat stops */
	cxl_beat_remove(p, &words[8]);
	CHECK(threads() == before);
	v = cxl_nt_load64(p, &words[8]);
	sleep_ms(2 * CXL_BEAT_MS);
	CHECK(cxl_nt_load64(p, &words[8]) == v);
	/* and a new first beat starts it again */
	CHECK_RC(cxl_beat_add(p, &words[0]), CXL_OK);
	CHECK(threads() == before + 1);
	cxl_beat_remove(p, &words[0]);
	CHECK(threads() == before);

	cxl_obj_close(&obj);
	cxl_obj_destroy(p, "beats");
	cxl_pool_detach(p);
	tpool_cleanup(&tp);
	return t_report("test_liveness");
}
