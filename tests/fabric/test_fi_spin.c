/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The read spin (FI_CXL_READ_SPIN_NS, docs/fabric.md "Progress"): an empty
 * fi_cq_read keeps polling only inside a wait loop and only when something
 * is on its way. Rank 0 reads, rank 1 sends; the provider's own counters
 * (FI_CXL_STATS: read_spins, spin_hits, printed when the fabric closes)
 * say whether reads spun. Each phase opens and closes its own fabric, so
 * the counters of a phase are the difference of two reports.
 *
 *  1. nothing expected: 2000 back-to-back empty reads never spin;
 *  2. reads far apart (200 us sleeps, as an application that tests between
 *     computations) with a receive posted never spin, before the message
 *     is sent or after;
 *  3. a wait loop with a receive posted, 20 messages each sent 300 us after
 *     the loop starts: the reads spin, and most messages arrive during a
 *     spin, completing in that same call. With --spin 0 (the variable set
 *     to 0) the same loop never spins;
 *  4. a wait loop whose message comes 5 ms after it starts: it spins in
 *     its first millisecond only, so the message never arrives during a
 *     spin;
 *  5. spins that do not pay (as when the sender shares this CPU): 30 waits
 *     in which a read spins before the message is sent and another finds
 *     it later. Spinning stops once the CQ's credit is spent (16 waits).
 *     The counters come only at close, so here the spinning reads are
 *     told by their length: a spin lasts the whole 1 ms, a read that does
 *     not spin microseconds;
 *  6. then 120 waits of phase 3 on the same CQ: a probe spin (every 32nd
 *     wait without credit) finds that spinning pays again, and the waits
 *     after it end in a spin. A probe can miss, as any spin can (about 1
 *     in 20 in phase 3), so the check asks for 30: one of the first three
 *     probes must find its message.
 *
 *   test_fi_spin --mode coherent|emulated [--spin NS]
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fitest.h"

static enum cxl_coh_mode mode;
static struct tpool tp;
static int p01[2], p10[2], go[2];
static long spin_ns;

#define WAIT_MSGS 20
#define LOSING_WAITS 30
#define WINNING_WAITS 120

struct spins {
	unsigned long long spins, hits;
};

static void signal_peer(int fd)
{
	REQUIRE(write(fd, "x", 1) == 1);
}

static void wait_peer(int fd)
{
	char c;

	REQUIRE(read(fd, &c, 1) == 1);
}

/* Close everything, catching the provider's stats line on stderr, and add
 * its read_spins and spin_hits to *total. */
static void teardown_counted(struct fi *f, struct spins *total)
{
	char path[] = "/tmp/test_fi_spin.XXXXXX", line[512];
	int fd = mkstemp(path), saved;
	FILE *in;
	int found = 0;

	REQUIRE(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	REQUIRE(saved >= 0 && dup2(fd, 2) == 2);
	fi_teardown(f);
	fflush(stderr);
	REQUIRE(dup2(saved, 2) == 2);
	close(saved);
	close(fd);
	in = fopen(path, "r");
	REQUIRE(in);
	while (fgets(line, sizeof(line), in)) {
		const char *s = strstr(line, "read_spins ");
		unsigned long long a, b;

		if (s &&
		    sscanf(s, "read_spins %llu spin_hits %llu", &a, &b) == 2) {
			total->spins = a;
			total->hits = b;
			found = 1;
		} else {
			fputs(line, stderr); /* anything else stays visible */
		}
	}
	fclose(in);
	unlink(path);
	CHECK(found);
}

/* n waits in a tight loop, each for a message (tag, mark, k) that rank 1
 * sends when told (send_when_told) */
static void wait_loop(struct fi *f, int n, uint64_t tag, char mark)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[64];

	for (int k = 0; k < n; k++) {
		memset(buf, 0, sizeof(buf));
		TRY(fi_trecv(f->ep, buf, sizeof(buf), NULL, f->peer, tag, 0,
			     buf));
		signal_peer(go[1]);
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
		CHECK(e.len == 4 && buf[0] == mark && buf[1] == (char)k);
	}
}

/* n messages (tag, mark, k), each delay_us after rank 0 says so */
static void send_when_told(struct fi *f, int n, uint64_t tag, char mark,
			   int delay_us)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	for (int k = 0; k < n; k++) {
		char msg[4] = { mark, (char)k, 0, 0 };

		wait_peer(go[0]);
		if (delay_us)
			usleep(delay_us);
		TRY(fi_tsend(f->ep, msg, sizeof(msg), NULL, f->peer, tag,
			     NULL));
		CHECK(fi_wait_cq(f, &e, &err, NULL, 20) == 0);
	}
}

static void reader(int rank)
{
	struct spins before = { 0, 0 }, after;
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[64];
	int eagain = 0, got = 0, long_reads = 0;

	fi_phase = "nothing expected";
	fi_setup(&f, rank, p01[1], p10[0]);
	for (int i = 0; i < 2000; i++)
		eagain += fi_cq_read(f.cq, &e, 1) == -FI_EAGAIN;
	CHECK(eagain == 2000);
	teardown_counted(&f, &after);
	CHECK(after.spins == before.spins);
	before = after;

	fi_phase = "reads far apart";
	fi_setup(&f, rank, p01[1], p10[0]);
	TRY(fi_trecv(f.ep, buf, sizeof(buf), NULL, f.peer, 1, 0, buf));
	eagain = 0;
	for (int i = 0; i < 20; i++) {
		eagain += fi_cq_read(f.cq, &e, 1) == -FI_EAGAIN;
		usleep(200);
	}
	CHECK(eagain == 20); /* nothing was sent yet */
	signal_peer(go[1]);
	for (int i = 0; i < 100000 && !got; i++) {
		ssize_t n = fi_cq_read(f.cq, &e, 1);

		if (n == 1)
			got = 1;
		else
			usleep(200);
	}
	CHECK(got && e.len == 8 && !memcmp(buf, "farapart", 8));
	teardown_counted(&f, &after);
	CHECK(after.spins == before.spins);
	before = after;

	fi_phase = "wait loop";
	fi_setup(&f, rank, p01[1], p10[0]);
	wait_loop(&f, WAIT_MSGS, 2, 'w');
	teardown_counted(&f, &after);
	printf("wait loop: %llu reads spun, %llu of %d messages arrived "
	       "during one (FI_CXL_READ_SPIN_NS=%ld)\n",
	       after.spins - before.spins, after.hits - before.hits, WAIT_MSGS,
	       spin_ns);
	if (spin_ns) {
		/* The messages come 300 us after the loop starts; it spends
		 * nearly all that time spinning, unless the machine preempts
		 * it, hence "most" rather than all. */
		CHECK(after.spins - before.spins >= after.hits - before.hits);
		CHECK(after.hits - before.hits >= WAIT_MSGS / 2);
		CHECK(after.hits - before.hits <= WAIT_MSGS);
	} else {
		CHECK(after.spins == before.spins);
		CHECK(after.hits == before.hits);
	}
	before = after;

	fi_phase = "long wait";
	fi_setup(&f, rank, p01[1], p10[0]);
	memset(buf, 0, sizeof(buf));
	TRY(fi_trecv(f.ep, buf, sizeof(buf), NULL, f.peer, 3, 0, buf));
	signal_peer(go[1]);
	CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
	CHECK(e.len == 4 && !memcmp(buf, "long", 4));
	teardown_counted(&f, &after);
	printf("long wait: %llu reads spun, %llu found the message\n",
	       after.spins - before.spins, after.hits - before.hits);
	/* a spin of FI_CXL_READ_SPIN_NS (1 ms here) outlasts the window */
	CHECK(after.spins - before.spins <= 1);
	CHECK(after.hits == before.hits);
	before = after;

	fi_phase = "spins that do not pay";
	fi_setup(&f, rank, p01[1], p10[0]);
	for (int k = 0; k < LOSING_WAITS; k++) {
		uint64_t t0;
		ssize_t n;

		TRY(fi_trecv(f.ep, buf, sizeof(buf), NULL, f.peer, 4, 0, buf));
		/* the first read begins the wait, the second may spin (the
		 * message is not even sent yet, so a spin runs its 1 ms) */
		CHECK(fi_cq_read(f.cq, &e, 1) == -FI_EAGAIN);
		t0 = cxl_now_ns();
		CHECK(fi_cq_read(f.cq, &e, 1) == -FI_EAGAIN);
		long_reads += spin_ns && cxl_now_ns() - t0 >= (uint64_t)spin_ns;
		signal_peer(go[1]);
		do { /* reads far apart: none of them spins */
			usleep(3000);
			n = fi_cq_read(f.cq, &e, 1);
		} while (n == -FI_EAGAIN);
		CHECK(n == 1 && e.len == 4 && buf[0] == 'l' &&
		      buf[1] == (char)k);
	}
	printf("spins that do not pay: %d of %d waits spun\n", long_reads,
	       LOSING_WAITS);
	if (spin_ns) {
		/* the credit (16 waits), not one spin per wait; a read
		 * preempted for 1 ms would count too, hence 20 */
		CHECK(long_reads >= 16 && long_reads <= 20);
	}

	fi_phase = "spinning pays again";
	wait_loop(&f, WINNING_WAITS, 5, 'p');
	teardown_counted(&f, &after);
	printf("spinning pays again: %llu reads spun in both phases, %llu "
	       "of %d messages arrived during one\n",
	       after.spins - before.spins, after.hits - before.hits,
	       WINNING_WAITS);
	if (spin_ns) {
		/* probes in waits 18, 50 and 82 of this phase; the waits
		 * after the first that pays end in a spin */
		CHECK(after.hits - before.hits >= 30);
		CHECK(after.spins - before.spins >=
		      (unsigned long long)long_reads);
	} else {
		CHECK(long_reads == 0);
		CHECK(after.spins == before.spins);
	}
}

static void sender(int rank)
{
	struct spins ignored;
	struct fi f;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	fi_setup(&f, rank, p10[1], p01[0]);
	teardown_counted(&f, &ignored);

	fi_setup(&f, rank, p10[1], p01[0]);
	wait_peer(go[0]);
	TRY(fi_tsend(f.ep, "farapart", 8, NULL, f.peer, 1, NULL));
	CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
	teardown_counted(&f, &ignored);

	fi_setup(&f, rank, p10[1], p01[0]);
	send_when_told(&f, WAIT_MSGS, 2, 'w', 300);
	teardown_counted(&f, &ignored);

	fi_setup(&f, rank, p10[1], p01[0]);
	wait_peer(go[0]);
	usleep(5000);
	TRY(fi_tsend(f.ep, "long", 4, NULL, f.peer, 3, NULL));
	CHECK(fi_wait_cq(&f, &e, &err, NULL, 20) == 0);
	teardown_counted(&f, &ignored);

	fi_setup(&f, rank, p10[1], p01[0]);
	send_when_told(&f, LOSING_WAITS, 4, 'l', 0);
	send_when_told(&f, WINNING_WAITS, 5, 'p', 300);
	teardown_counted(&f, &ignored);
}

static int child(int rank, void *arg)
{
	(void)arg;
	if (rank == 0)
		reader(rank);
	else
		sender(rank);
	printf("rank %d: %d passed, %d failed\n", rank, t_passed, t_failed);
	fflush(stdout);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	char v[32];

	mode = targ_mode(argc, argv);
	/* 1 ms: long enough that a message sent 300 us into a wait loop
	 * arrives during a spin even on a loaded machine */
	spin_ns = targ_long(argc, argv, "--spin", 1000000);
	snprintf(v, sizeof(v), "%ld", spin_ns);
	tpool_init(&tp, "fispin");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_spin", 1);
	setenv("FI_CXL_STATS", "1", 1);
	setenv("FI_CXL_READ_SPIN_NS", v, 1);
	REQUIRE(pipe(p01) == 0 && pipe(p10) == 0 && pipe(go) == 0);
	CHECK(run_children(2, child, NULL) == 0);
	tpool_cleanup(&tp);
	return t_report("test_fi_spin");
}
