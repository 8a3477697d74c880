/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer that stops (SIGSTOP) and runs again.
 *
 *  - Below the peer timeout (stopped 3 × 300 ms, CXL_PEER_TIMEOUT_MS
 *    2000): nothing fails, every byte of a verified ping-pong arrives.
 *  - Above it (stopped 3 s, timeout 1 s): the survivor's receive from it
 *    and its 4 MiB send to it fail with FI_EHOSTUNREACH within the
 *    timeout plus the watch interval. After SIGCONT, the stopped process
 *    learns that it was declared dead: its pending receive fails with
 *    FI_EHOSTUNREACH, new sends to the survivor are refused, and its
 *    stderr says so in exactly one line. Neither side hangs.
 *
 *   test_fi_stop --mode coherent|emulated
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitest.h"

#define ROUNDS 60
#define MSG 1000

static enum cxl_coh_mode mode;
static int p01[2], p10[2];

static void fill(char *b, int round, int who)
{
	for (int i = 0; i < MSG; i++)
		b[i] = (char)(round * 31 + i * 7 + who);
}

/* Rank 1: answers each ping with a pong until a receive fails. */
static int victim(void)
{
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[MSG], want[MSG];
	int rc;

	fi_setup(&f, 1, p10[1], p01[0]);
	for (int r = 0;; r++) {
		TRY(fi_trecv(f.ep, buf, sizeof(buf), NULL, f.peer, 1, 0, buf));
		rc = fi_wait_cq(&f, &e, &err, NULL, 30);
		if (rc) /* declared dead while stopped */
			break;
		fill(want, r, 0);
		CHECK(memcmp(buf, want, MSG) == 0);
		fill(buf, r, 1);
		TRY(fi_tsend(f.ep, buf, MSG, NULL, f.peer, 2, NULL));
		CHECK(fi_wait_cq(&f, &e, &err, NULL, 30) == 0);
	}
	CHECK(rc == -FI_EHOSTUNREACH && (err.flags & FI_RECV));
	/* and the survivor is gone for good, to us too */
	CHECK(fi_tsend(f.ep, buf, 8, NULL, f.peer, 3, NULL) ==
	      -FI_EHOSTUNREACH);
	fi_teardown(&f);
	return t_failed != 0;
}

static void pingpong(struct fi *f, int from, int to)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[MSG], want[MSG];

	for (int r = from; r < to; r++) {
		fill(buf, r, 0);
		TRY(fi_tsend(f->ep, buf, MSG, NULL, f->peer, 1, NULL));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 30) == 0);
		TRY(fi_trecv(f->ep, buf, MSG, NULL, f->peer, 2, 0, buf));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 30) == 0);
		fill(want, r, 1);
		CHECK(memcmp(buf, want, MSG) == 0);
	}
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* Wait up to s seconds for the victim; its exit status, -1 if it hangs. */
static int reap(pid_t v, int s)
{
	int st;

	for (int i = 0; i < s * 100; i++) {
		if (waitpid(v, &st, WNOHANG) == v)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		sleep_ms(10);
	}
	kill(v, SIGKILL);
	waitpid(v, &st, 0);
	return -1;
}

static void below(pid_t v)
{
	struct fi f;

	fi_setup(&f, 0, p01[1], p10[0]);
	pingpong(&f, 0, 10);
	for (int k = 0; k < 3; k++) {
		CHECK(kill(v, SIGSTOP) == 0);
		sleep_ms(300);
		CHECK(kill(v, SIGCONT) == 0);
		pingpong(&f, 10 + k * 10, 20 + k * 10);
	}
	pingpong(&f, 40, ROUNDS);
	/* stop it for good: a ping it cannot answer, then it is killed */
	fi_teardown(&f);
	kill(v, SIGKILL);
	waitpid(v, NULL, 0);
}

static void above(pid_t v, const char *vlog)
{
	const size_t big = 4u << 20;
	struct fi f;
	char *buf = calloc(1, big), rbuf[8], line[4096];
	int failed_tx, failed_rx, other, lines = 0;
	uint64_t t0, dt;
	FILE *lf;

	fi_setup(&f, 0, p01[1], p10[0]);
	pingpong(&f, 0, 10);
	CHECK(kill(v, SIGSTOP) == 0);
	t0 = cxl_now_ns();
	TRY(fi_trecv(f.ep, rbuf, sizeof(rbuf), NULL, f.peer, 9, 0, rbuf));
	TRY(fi_tsend(f.ep, buf, big, NULL, f.peer, 9, buf));
	fi_wait_unreachable(&f, 2, &failed_tx, &failed_rx, &other);
	dt = cxl_now_ns() - t0;
	printf("survivor: stopped peer declared dead after %.2f s\n",
	       (double)dt / 1e9);
	CHECK(failed_tx == 1 && failed_rx == 1 && other == 0);
	CHECK(dt < 5000000000ull);
	/* still stopped: the verdict waits in the pool for it */
	sleep_ms(3000 > dt / 1000000 ? 3000 - (long)(dt / 1000000) : 0);
	CHECK(kill(v, SIGCONT) == 0);
	t0 = cxl_now_ns();
	CHECK(reap(v, 10) == 0);
	printf("stopped peer: learnt the verdict and ended %.2f s after "
	       "SIGCONT\n",
	       (double)(cxl_now_ns() - t0) / 1e9);
	fi_teardown(&f);
	free(buf);
	lf = fopen(vlog, "r");
	REQUIRE(lf);
	while (fgets(line, sizeof(line), lf)) {
		fputs(line, stdout);
		if (strstr(line, "declared endpoint") &&
		    strstr(line, "CXL_PEER_TIMEOUT_MS"))
			lines++;
	}
	fclose(lf);
	CHECK(lines == 1);
}

static void run(const char *which, const char *timeout_ms)
{
	struct tpool tp;
	char vlog[256];
	pid_t v;

	tpool_init(&tp, "fistop");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_stop", 1);
	setenv("CXL_PEER_TIMEOUT_MS", timeout_ms, 1);
	snprintf(vlog, sizeof(vlog), "%s/victim.err", tp.dir);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0);
	fflush(NULL);
	v = fork();
	REQUIRE(v >= 0);
	if (v == 0) {
		int fd = open(vlog, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		REQUIRE(fd >= 0 && dup2(fd, STDERR_FILENO) >= 0);
		close(p01[1]);
		close(p10[0]);
		_exit(victim());
	}
	close(p01[0]);
	close(p10[1]);
	printf("-- %s the peer timeout (%s ms)\n", which, timeout_ms);
	if (!strcmp(which, "below"))
		below(v);
	else
		above(v, vlog);
	close(p01[1]);
	close(p10[0]);
	tpool_cleanup(&tp);
}

int main(int argc, char **argv)
{
	mode = targ_mode(argc, argv);
	fi_test_threading(argc, argv);
	run("below", "2000");
	run("above", "1000");
	return t_report("test_fi_stop");
}
