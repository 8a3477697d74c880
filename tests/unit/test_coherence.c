/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulator catches the bugs it exists for. Two "hosts" (processes)
 * share a pool in the emulated mode:
 *  - a write without flush is not seen by the other host;
 *  - a read without invalidate returns stale data;
 *  - two hosts writing different bytes of one line lose data on
 *    write-back (false sharing);
 *  - the ring with its flushes skipped (fault injection) fails its
 *    checksums or stalls: the negative test the issue asks for.
 * In coherent mode the same sequences are correct, which shows the
 * failures come from the model, not from the test.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"

static enum cxl_coh_mode mode;
static struct tpool tp;

struct shared {
	uint64_t flag; /* line 0: written by host A only, non-temporally */
	uint8_t pad[56];
	uint64_t data[8]; /* line 1: data written by A */
	uint64_t fs[8];	  /* line 2: falsely shared by A and B */
	uint64_t flag_b;  /* line 3: written by B only */
};

static cxl_pool *attach(uint32_t host)
{
	struct cxl_pool_opts o;
	cxl_pool *p;

	topts(&o, &tp, mode, host, 0);
	REQUIRE(cxl_pool_attach(&o, &p) == CXL_OK);
	return p;
}

/*
 * Host B. Handshake through flags (which are themselves correct):
 *   B caches the data line, flag_b=1;  A writes data[0] without flush,
 *   flag=1;  B invalidates and reads data[0], flag_b=2;  A writes data[1]
 *   with flush, flag=2;  B reads data[1] without invalidating;  B writes
 *   fs[1] and flushes, flag_b=3;  A flushes its copy of that line.
 * Returns bit 1 if B saw the unflushed write, bit 2 if its read was stale.
 */
static int host_b(int i, void *arg)
{
	cxl_pool *p = attach(1);
	struct cxl_obj o;
	struct shared *s;
	int result = 0;

	(void)i;
	(void)arg;
	REQUIRE(cxl_obj_open(p, "coh", &o) == CXL_OK);
	s = o.ptr;
	cxl_inval(p, s->data, 64);
	(void)*(volatile uint64_t *)&s->data[0];
	cxl_flag_set(p, &s->flag_b, 1);
	REQUIRE(cxl_flag_wait_ge(p, &s->flag, 1, 10000) == CXL_OK);
	cxl_inval(p, s->data, 64);
	if (s->data[0] == 111)
		result |= 1;
	cxl_flag_set(p, &s->flag_b, 2);
	REQUIRE(cxl_flag_wait_ge(p, &s->flag, 2, 10000) == CXL_OK);
	if (*(volatile uint64_t *)&s->data[1] != 222) /* no invalidate */
		result |= 2;
	s->fs[1] = 0xb;
	cxl_flush(p, s->fs, 64);
	cxl_wfence(p);
	cxl_flag_set(p, &s->flag_b, 3);
	cxl_obj_close(&o);
	cxl_pool_detach(p);
	return result;
}

static void test_model(void)
{
	cxl_pool *p = attach(0);
	struct cxl_obj o;
	struct shared *s;
	pid_t pid;
	int st, r;

	REQUIRE(cxl_obj_create(p, "coh", sizeof(*s), CXL_OBJ_ZERO, &o) ==
		CXL_OK);
	s = o.ptr;
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(host_b(0, NULL));
	s->fs[0] = 0xa; /* A's half of the falsely shared line, unflushed */
	REQUIRE(cxl_flag_wait_ge(p, &s->flag_b, 1, 10000) == CXL_OK);
	s->data[0] = 111; /* BUG on purpose: no flush */
	cxl_flag_set(p, &s->flag, 1);
	REQUIRE(cxl_flag_wait_ge(p, &s->flag_b, 2, 10000) == CXL_OK);
	s->data[1] = 222;
	cxl_flush(p, s->data, 64);
	cxl_wfence(p);
	cxl_flag_set(p, &s->flag, 2);
	REQUIRE(cxl_flag_wait_ge(p, &s->flag_b, 3, 10000) == CXL_OK);
	cxl_flush(p, s->fs, 64); /* A's stale copy of B's half goes too */
	cxl_wfence(p);
	waitpid(pid, &st, 0);
	REQUIRE(WIFEXITED(st));
	r = WEXITSTATUS(st);
	cxl_inval(p, s->fs, 64);
	if (mode == CXL_COH_EMULATED) {
		CHECK(!(r & 1)); /* missing flush: B never saw 111 */
		CHECK(r & 2);	 /* missing invalidate: B read stale data */
		CHECK(s->fs[0] == 0xa && s->fs[1] != 0xb); /* B's write lost */
	} else {
		CHECK(r == 1); /* coherent: B sees everything at once */
		CHECK(s->fs[0] == 0xa && s->fs[1] == 0xb);
	}
	cxl_obj_close(&o);
	cxl_obj_destroy(p, "coh");
	cxl_pool_detach(p);
}

/* Ring transfer with checksums; returns the number of bad messages, or
 * -1 if the consumer stalled (timeout). */
static int ring_consumer(int i, void *arg)
{
	cxl_pool *p = attach(1);
	cxl_ring *rx;
	uint64_t buf[32], n = (uint64_t)(uintptr_t)arg, bad = 0;
	uint64_t t0 = cxl_now_ns();
	size_t len;

	(void)i;
	REQUIRE(cxl_ring_open(p, "neg", CXL_RING_CONSUMER, &rx) == CXL_OK);
	for (uint64_t k = 0; k < n;) {
		int rc = cxl_ring_recv(rx, buf, sizeof(buf), &len, NULL);

		if (rc == CXL_EAGAIN) {
			/* 2 s without a message: stalled (the flushes were
			 * skipped), not merely slow on a loaded machine */
			if (cxl_now_ns() - t0 > 2000000000ull)
				return 100;
			continue;
		}
		t0 = cxl_now_ns();
		if (rc != CXL_OK)
			return 101; /* corrupt */
		bad += len != 64 || buf[0] != k || buf[7] != ~k;
		k++;
	}
	cxl_ring_close(rx);
	cxl_pool_detach(p);
	return bad ? 102 : 0;
}

static int ring_run(bool skip_flush, uint64_t n)
{
	cxl_pool *p = attach(0);
	cxl_ring *tx;
	uint64_t msg[8];
	pid_t pid;
	int st;

	REQUIRE(cxl_ring_create(p, "neg", NULL, CXL_RING_PRODUCER, &tx) ==
		CXL_OK);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(ring_consumer(0, (void *)(uintptr_t)n));
	atomic_store(&cxl_test_skip_flush, skip_flush);
	for (uint64_t k = 0; k < n;) {
		for (int j = 0; j < 8; j++)
			msg[j] = k;
		msg[7] = ~k;
		int rc = cxl_ring_send(tx, msg, 64, 0, 0);

		if (rc == CXL_EAGAIN) {
			int w = waitpid(pid, &st, WNOHANG);

			if (w == pid) /* consumer gave up */
				goto reaped;
			continue;
		}
		REQUIRE(rc == CXL_OK);
		k++;
	}
	waitpid(pid, &st, 0);
reaped:
	atomic_store(&cxl_test_skip_flush, 0);
	cxl_ring_close(tx);
	cxl_obj_destroy(p, "neg");
	cxl_pool_detach(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

static void test_negative_ring(void)
{
	/* correct protocol passes in every mode */
	CHECK(ring_run(false, 20000) == 0);
	/* skipping the producer's flushes: in the emulator the consumer
	 * never sees the messages (status 100) or sees garbage; coherent
	 * hardware hides the bug */
	if (mode == CXL_COH_EMULATED)
		CHECK(ring_run(true, 20000) != 0);
	else
		CHECK(ring_run(true, 20000) == 0);
}

static void test_counters(void)
{
	cxl_pool *p = attach(0);
	struct cxl_coh_counters c0, c1;
	struct cxl_obj o;

	REQUIRE(cxl_obj_create(p, "ctr", 4096, 0, &o) == CXL_OK);
	cxl_coh_counters_reset();
	cxl_coh_counters_get(&c0);
	CHECK(c0.flush_lines == 0 && c0.fences == 0);
	cxl_flush(p, (uint8_t *)o.ptr + 10, 100); /* lines 0 and 1 */
	cxl_wfence(p);
	cxl_inval(p, o.ptr, 4096);
	cxl_nt_store64(p, o.ptr, 5);
	CHECK(cxl_nt_load64(p, o.ptr) == 5);
	cxl_flush(p, &o, 64); /* not pool memory: ignored */
	cxl_coh_counters_get(&c1);
	if (mode == CXL_COH_COHERENT) {
		CHECK(c1.flush_lines == 0 && c1.inval_lines == 0 &&
		      c1.fences == 0);
	} else {
		CHECK(c1.flush_lines == 2);
		CHECK(c1.inval_lines == 64);
		CHECK(c1.fences == 1 + 1 + 1); /* wfence, inval, nt_load */
		CHECK(c1.nt_stores == 1 && c1.nt_loads == 1);
	}
	cxl_obj_close(&o);
	cxl_obj_destroy(p, "ctr");
	cxl_pool_detach(p);
}

int main(int argc, char **argv)
{
	mode = targ_mode(argc, argv);
	tpool_init(&tp, "coh");
	test_counters();
	test_model();
	test_negative_ring();
	tpool_cleanup(&tp);
	return t_report("test_coherence");
}
