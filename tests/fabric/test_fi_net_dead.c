/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A group survives the death of another group's host (docs/multipool.md):
 * ranks 0 and 1 share pool P0, rank 2 is alone on pool P1, all with
 * FI_CXL_NET=tcp;ofi_rxm. Rank 2 sends rank 0 one message through the
 * network link, then dies (SIGKILL, as a host that fails). Ranks 0 and 1
 * then, once rank 2 is dead, ping-pong 200 verified messages of 3000
 * bytes through their pool: every one arrives within the time limit. A
 * send to the dead rank may fail or vanish into the socket; it must not
 * stop the others.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitest.h"

#define ROUNDS 200
#define MSG 3000

static char dir[128];

static void put_name(int rank, const void *name, size_t len)
{
	char p[192], tmp[200];
	FILE *f;

	snprintf(p, sizeof(p), "%s/name.%d", dir, rank);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	f = fopen(tmp, "w");
	REQUIRE(f && fwrite(name, 1, len, f) == len);
	fclose(f);
	REQUIRE(rename(tmp, p) == 0); /* whole or absent */
}

static void get_name(int rank, void *name, size_t len)
{
	char p[192];

	snprintf(p, sizeof(p), "%s/name.%d", dir, rank);
	for (int i = 0; i < 3000; i++) {
		FILE *f = fopen(p, "r");

		if (f) {
			size_t n = fread(name, 1, len, f);

			fclose(f);
			REQUIRE(n == len);
			return;
		}
		usleep(10000);
	}
	REQUIRE(!"a peer's name never came");
}

/* The next completion that is not of the send to the dead rank (context
 * 1), which may come, with an error or not, at any time. */
/* Until rank 2 is dead (a zombie of the test, or gone): its pid is in
 * the exchange directory under "rank 3". */
static void wait_dead(void)
{
	char pid[32], path[64], st[256];

	get_name(3, pid, sizeof(pid));
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		char *p;

		if (!f)
			return;
		p = fgets(st, sizeof(st), f) ? strrchr(st, ')') : NULL;
		fclose(f);
		if (p && p[1] == ' ' && p[2] == 'Z')
			return;
		usleep(10000);
	}
	REQUIRE(!"rank 2 did not die");
}

static struct fi_cq_tagged_entry wait_one(struct fi *f, const char *phase)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t t0 = cxl_now_ns();

	for (;;) {
		ssize_t n = fi_cq_read(f->cq, &e, 1);

		if (n == 1 && e.op_context != (void *)1)
			return e;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			REQUIRE(fi_cq_readerr(f->cq, &err, 0) == 1);
			if (err.op_context != (void *)1) {
				fprintf(stderr, "rank %d: %s: %s\n", f->rank,
					phase, fi_strerror(err.err));
				CHECK(0);
				memset(&e, 0, sizeof(e));
				return e;
			}
		}
		if (cxl_now_ns() - t0 > 30000000000ull) {
			fprintf(stderr, "rank %d: nothing in 30 s (%s)\n",
				f->rank, phase);
			exit(4);
		}
	}
}

static ssize_t send_retry(struct fi *f, const void *b, size_t n, fi_addr_t to,
			  uint64_t tag, void *ctx)
{
	struct fi_cq_tagged_entry e;
	ssize_t rc;

	while ((rc = fi_tsend(f->ep, b, n, NULL, to, tag, ctx)) == -FI_EAGAIN)
		(void)fi_cq_read(f->cq, &e, 0);
	return rc;
}

static int member(int rank, void *arg)
{
	struct tpool *tp = arg;
	struct fi f;
	fi_addr_t peer[3];
	uint8_t name[64], buf[MSG], want[MSG];
	size_t len = sizeof(name);

	fi_test_env(&tp[rank == 2], CXL_COH_COHERENT);
	fi_test_open(&f, rank, 0);
	TRY(fi_getname(&f.ep->fid, name, &len));
	REQUIRE(len == 64);
	put_name(rank, name, len);
	for (int r = 0; r < 3; r++) {
		get_name(r, name, len);
		REQUIRE(fi_av_insert(f.av, name, 1, &peer[r], 0, NULL) == 1);
	}
	if (rank == 2) {
		memset(buf, 2, sizeof(buf));
		CHECK(send_retry(&f, buf, sizeof(buf), peer[0], 7, NULL) == 0);
		(void)wait_one(&f, "rank 2's last send");
		{
			char pid[32] = { 0 };

			snprintf(pid, sizeof(pid), "%d", (int)getpid());
			put_name(3, pid, sizeof(pid));
		}
		raise(SIGKILL); /* the host fails */
	}
	if (rank == 0) {
		CHECK(fi_trecv(f.ep, buf, sizeof(buf), NULL, peer[2], 7, 0,
			       NULL) == 0);
		(void)wait_one(&f, "the message of rank 2");
		CHECK(buf[0] == 2 && buf[MSG - 1] == 2);
		wait_dead();
		/* what we send the dead rank may fail or vanish */
		(void)send_retry(&f, buf, 8, peer[2], 8, (void *)1);
	}
	/* the pool pair goes on */
	for (int i = 0; i < ROUNDS; i++) {
		int me = rank, other = 1 - rank;

		for (size_t j = 0; j < MSG; j++)
			want[j] = (uint8_t)(i * 7 + j + other);
		if ((i + me) % 2 == 0) {
			for (size_t j = 0; j < MSG; j++)
				buf[j] = (uint8_t)(i * 7 + j + me);
			CHECK(send_retry(&f, buf, MSG, peer[other], 100 + i,
					 NULL) == 0);
		} else {
			struct fi_cq_tagged_entry e;

			CHECK(fi_trecv(f.ep, buf, MSG, NULL, peer[other],
				       100 + i, 0, (void *)2) == 0);
			e = wait_one(&f, "pool ping-pong");
			CHECK(e.op_context == (void *)2 && e.len == MSG);
			CHECK(!memcmp(buf, want, MSG));
			continue;
		}
		(void)wait_one(&f, "pool ping-pong send");
	}
	printf("rank %d: %d pool rounds after rank 2 died\n", rank, ROUNDS);
	/* leave the send to the dead rank to the close */
	fi_teardown(&f);
	return t_report(rank ? "test_fi_net_dead rank 1"
			     : "test_fi_net_dead rank 0");
}

int main(void)
{
	struct tpool tp[2];
	int bad;

	setenv("FI_CXL_NET", "tcp;ofi_rxm", 1);
	t_net_on_loopback();
	tpool_init(&tp[0], "finetd0");
	tpool_init(&tp[1], "finetd1");
	snprintf(dir, sizeof(dir), "%s", tp[0].dir);
	bad = run_children(3, member, tp);
	tpool_cleanup(&tp[0]);
	tpool_cleanup(&tp[1]);
	/* rank 2 dies by design: the others must have passed */
	printf("test_fi_net_dead: %d of 3 processes failed (rank 2 by its "
	       "SIGKILL)\n",
	       bad);
	return bad == 1 ? 0 : 1;
}
