/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A sender that closes its endpoint right after its send completed: the
 * message still arrives whole. A large message goes through the sender's
 * transfer area, which a receiver opens by name when it takes the first
 * chunk; closing removes that name, so the sender must keep it until its
 * live receivers took their chunks (fabtests' fi_poll failed with
 * "cq_readerr 5 (Input/output error)" about once in 40 runs when the
 * client exited first). Rank 1 starts taking only 300 ms after rank 0's
 * send completed, while rank 0 closes.
 *
 *   test_fi_close --mode coherent|emulated
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitest.h"

#define LEN (200u * 1024) /* several transfer-area chunks */

static struct tpool tp;
static int p01[2], p10[2], sig[2];

static uint8_t pat(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static int sender(void)
{
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t *buf = malloc(LEN);
	char c = 's';

	for (size_t i = 0; i < LEN; i++)
		buf[i] = pat(i);
	fi_setup(&f, 0, p01[1], p10[0]);
	TRY(fi_tsend(f.ep, buf, LEN, NULL, f.peer, 9, buf));
	if (fi_wait_cq(&f, &e, &err, NULL, 20))
		return 1;
	REQUIRE(write(sig[1], &c, 1) == 1); /* sent: now close */
	fi_teardown(&f);
	free(buf);
	return t_report("test_fi_close sender") != 0;
}

static void receiver(void)
{
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t *buf = calloc(1, LEN);
	size_t bad = 0;
	char c;

	fi_setup(&f, 1, p10[1], p01[0]);
	REQUIRE(read(sig[0], &c, 1) == 1);
	usleep(300 * 1000); /* the sender is closing meanwhile */
	TRY(fi_trecv(f.ep, buf, LEN, NULL, f.peer, 9, 0, buf));
	CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
	if (err.err)
		fprintf(stderr, "receive failed: %s\n", fi_strerror(err.err));
	CHECK(e.len == LEN);
	for (size_t i = 0; i < LEN; i++)
		bad += buf[i] != pat(i);
	CHECK(bad == 0);
	fi_teardown(&f);
	free(buf);
}

int main(int argc, char **argv)
{
	enum cxl_coh_mode mode = targ_mode(argc, argv);
	pid_t s;
	int st;

	tpool_init(&tp, "ficlose");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_close", 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0 && pipe(sig) == 0);
	fflush(NULL);
	s = fork();
	REQUIRE(s >= 0);
	if (s == 0)
		_exit(sender());
	receiver();
	REQUIRE(waitpid(s, &st, 0) == s);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	tpool_cleanup(&tp);
	return t_report("test_fi_close");
}
