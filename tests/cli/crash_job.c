/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helper for test_cxlpool.sh: attach (pool and job from the environment),
 * create N objects named obj0.., then die without closing or detaching, as
 * a crashed job would.   crash_job N [BEAT_SECONDS]
 * With BEAT_SECONDS, first stay alive that long, beating for the host
 * every 100 ms as the provider's heartbeat thread does (a live host).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cxlshm/cxlshm.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	struct cxl_obj o;
	cxl_pool *p;
	char name[32];

	if (cxl_pool_attach_env(&p)) {
		fprintf(stderr, "crash_job: %s\n", cxl_errmsg());
		return 1;
	}
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "obj%d", i);
		if (cxl_obj_create(p, name, 4096, 0, &o)) {
			fprintf(stderr, "crash_job: %s\n", cxl_errmsg());
			return 1;
		}
	}
	for (int t = 0; argc > 2 && t < 10 * atoi(argv[2]); t++) {
		const struct timespec tick = { 0, 100 * 1000000L };

		cxl_host_beat(p);
		nanosleep(&tick, NULL);
	}
	_exit(0); /* no close, no detach: the process table still has us */
}
