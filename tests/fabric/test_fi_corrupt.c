/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A corrupted channel fails its receives, once, in bounded time. Rank 1
 * sends two messages; rank 0 takes the first, then (before it looks at
 * the ring again) writes random bytes over the channel's cells, as a
 * hostile or broken process with the pool mapped could. The receive of
 * the second message must fail with FI_EIO within a second, later
 * receives from that peer too, and the provider must say so once on
 * stderr, not once per poll (stderr goes to a file the test reads back).
 *
 *   test_fi_corrupt --mode coherent|emulated
 */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitest.h"

static struct tpool tp;
static int p01[2], p10[2], done[2];

static int sender(void)
{
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t v = 0x1111111111111111ull;
	char c;

	/* only the receiver's ends stay open there: its exit is our EOF */
	close(done[0]);
	close(p01[1]);
	fi_setup(&f, 1, p10[1], p01[0]);
	for (int i = 1; i <= 2; i++) {
		TRY(fi_tsend(f.ep, &v, sizeof(v), NULL, f.peer, i, NULL));
		CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
	}
	/* stay alive (heartbeat) until the receiver is done */
	CHECK(write(done[1], "s", 1) == 1);
	CHECK(read(p01[0], &c, 1) == 1);
	fi_teardown(&f);
	return t_failed != 0;
}

struct find {
	char name[64];
	int n;
};

static int find_channel(const struct cxl_obj_stat *st, void *arg)
{
	struct find *fd = arg;

	if (!strncmp(st->name, "cxlfi.ch.", 9)) {
		snprintf(fd->name, sizeof(fd->name), "%s", st->name);
		fd->n++;
	}
	return 0;
}

/* Random bytes over every cell of the one channel in the pool. */
static void corrupt_channel(void)
{
	struct cxl_pool_opts o;
	cxl_pool *p;
	struct find fd = { .n = 0 };
	struct cxl_obj ob;
	uint64_t seed = 42;

	REQUIRE(cxl_opts_from_env(&o) == 0);
	REQUIRE(cxl_pool_attach_shared(&o, &p) == 0);
	/* the sender's provider beats for its host (cxlpool gc asks) */
	{
		int alive = 0;

		CHECK(cxl_host_alive(p, 1, 350, &alive) == CXL_OK && alive);
	}
	REQUIRE(cxl_obj_list(p, find_channel, &fd) == 0);
	REQUIRE(fd.n == 1); /* only rank 1 sent: one channel, 1 -> 0 */
	REQUIRE(cxl_obj_open(p, fd.name, &ob) == 0);
	/* the ring's 3 header lines stay; its cells get noise */
	for (size_t off = 3 * 64; off + 8 <= ob.size; off += 8) {
		uint64_t r = t_rand(&seed);

		memcpy((uint8_t *)ob.ptr + off, &r, 8);
	}
	/* made visible to the pool, as a writer on another host would */
	cxl_flush(p, ob.ptr, ob.size);
	cxl_wfence(p);
	cxl_obj_close(&ob);
	cxl_pool_detach(p);
}

static int receiver(const char *errfile)
{
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t v = 0, t0;
	char line[512], c;
	int rc, reports = 0;
	FILE *log;

	fi_setup(&f, 0, p01[1], p10[0]);
	TRY(fi_trecv(f.ep, &v, sizeof(v), NULL, f.peer, 1, 0, &v));
	CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
	CHECK(v == 0x1111111111111111ull);
	/* the second message is in the ring before it is corrupted */
	CHECK(read(done[0], &c, 1) == 1);
	corrupt_channel();
	TRY(fi_trecv(f.ep, &v, sizeof(v), NULL, f.peer, 2, 0, &v));
	t0 = cxl_now_ns();
	rc = fi_wait_cq(&f, &e, &err, NULL, 10);
	CHECK(rc == -FI_EIO);
	CHECK(cxl_now_ns() - t0 < 1000000000ull);
	/* later receives from it fail too; many polls log nothing more */
	TRY(fi_trecv(f.ep, &v, sizeof(v), NULL, f.peer, 3, 0, &v));
	for (int i = 0; i < 100000; i++)
		fi_cq_read(f.cq, &e, 1);
	CHECK(write(p01[1], "r", 1) == 1);
	fi_teardown(&f);
	fflush(stderr);
	REQUIRE((log = fopen(errfile, "r")) != NULL);
	while (fgets(line, sizeof(line), log))
		reports += strstr(line, "is corrupt") != NULL;
	fclose(log);
	printf("receiver: receive failed with %d, %d report line(s)\n", rc,
	       reports);
	CHECK(reports == 1);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	enum cxl_coh_mode mode = targ_mode(argc, argv);
	char errfile[] = "/tmp/fi_corrupt_err.XXXXXX";
	int fd, st;
	pid_t s;

	fi_test_threading(argc, argv);
	tpool_init(&tp, "ficorrupt");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_corrupt", 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0 && pipe(done) == 0);
	fflush(NULL);
	s = fork();
	REQUIRE(s >= 0);
	if (s == 0)
		_exit(sender());
	close(done[1]);
	/* the receiver's stderr into a file, to count the reports */
	REQUIRE((fd = mkstemp(errfile)) >= 0);
	REQUIRE(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
	close(fd);
	receiver(errfile);
	unlink(errfile);
	REQUIRE(waitpid(s, &st, 0) == s);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	tpool_cleanup(&tp);
	return t_report("test_fi_corrupt");
}
