/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer that dies mid-transfer does not hang the survivor. Rank 1 takes
 * one message, then is killed (SIGKILL) without closing anything. Rank 0
 * keeps sending large messages (its channel fills and sends queue) and
 * waits on a receive directed at rank 1. Within CXL_PEER_TIMEOUT_MS
 * (1 s here) plus the watch interval, every one of those operations must
 * fail with FI_EHOSTUNREACH, and a new send must be refused.
 *
 *   test_fi_dead --mode coherent|emulated
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitest.h"

static enum cxl_coh_mode mode;
static struct tpool tp;
static int p01[2], p10[2];

static int victim(void)
{
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[64];

	fi_setup(&f, 1, p10[1], p01[0]);
	TRY(fi_trecv(f.ep, buf, sizeof(buf), NULL, f.peer, 1, 0, buf));
	if (fi_wait_cq(&f, &e, &err, NULL, 20))
		return 1;
	raise(SIGKILL); /* dies holding a channel, an endpoint, a pool */
	return 1;
}

static int survivor(pid_t victim_pid)
{
	/* larger than the transfer-area slots one peer may hold (512 KiB), so
	 * that no send can complete once the victim has died */
	const size_t big = 4u << 20;
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char *buf = calloc(1, big), rbuf[8];
	int sent = 0, failed_tx, failed_rx, other;
	uint64_t t0;

	fi_setup(&f, 0, p01[1], p10[0]);
	TRY(fi_tsend(f.ep, buf, 8, NULL, f.peer, 1, NULL));
	CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
	/* Only once the victim is certainly dead (a fast receiver could
	 * otherwise take megabytes before it dies): these can never
	 * complete normally now. */
	{
		int st;

		REQUIRE(waitpid(victim_pid, &st, 0) == victim_pid);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	TRY(fi_trecv(f.ep, rbuf, sizeof(rbuf), NULL, f.peer, 2, 0, rbuf));
	for (int k = 0; k < 4; k++) {
		TRY(fi_tsend(f.ep, buf, big, NULL, f.peer, 3, buf));
		sent++;
	}
	t0 = cxl_now_ns();
	fi_wait_unreachable(&f, sent + 1, &failed_tx, &failed_rx, &other);
	printf("survivor: %d sends and %d receive failed after %.2f s\n",
	       failed_tx, failed_rx, (double)(cxl_now_ns() - t0) / 1e9);
	fflush(stdout);
	CHECK(failed_rx == 1);
	CHECK(failed_tx == sent && other == 0);
	CHECK(cxl_now_ns() - t0 < 10000000000ull);
	CHECK(fi_tsend(f.ep, buf, 8, NULL, f.peer, 4, NULL) ==
	      -FI_EHOSTUNREACH);
	fi_teardown(&f);
	free(buf);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	pid_t v;

	mode = targ_mode(argc, argv);
	fi_test_threading(argc, argv);
	tpool_init(&tp, "fidead");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_dead", 1);
	setenv("CXL_PEER_TIMEOUT_MS", "1000", 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0);
	fflush(NULL);
	v = fork();
	REQUIRE(v >= 0);
	if (v == 0)
		_exit(victim());
	survivor(v); /* reaps the victim */
	tpool_cleanup(&tp);
	return t_report("test_fi_dead");
}
