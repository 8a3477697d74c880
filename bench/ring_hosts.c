/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring_bench's two hosts: this process (host 0) and a forked child
 * (host 1), which attach the same pool in the same coherence mode. Host 1
 * sends its counts to host 0 over a pipe.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/toolutil.h"
#include "ring_bench.h"

volatile sig_atomic_t interrupted;
static pid_t child = -1; /* host 1 while it may be running */
static const struct cxl_coh_counters coh_zero;

void on_signal(int sig)
{
	interrupted = sig;
}

const char *lib_msg(int rc)
{
	const char *msg = cxl_errmsg();

	return msg && *msg ? msg : cxl_strerror(rc);
}

/* Print one error line naming host, mode and size; returns -1. */
int __attribute__((format(printf, 2, 3))) fail(const struct ctx *c,
					       const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg),
		     "ring_bench: host %d, mode %s: ", c->host,
		     cxl_coh_mode_name(c->mode));
	if (c->cell) /* a test is under way */
		n += snprintf(msg + n, sizeof(msg) - (size_t)n,
			      "%u-byte messages: ", c->size);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", msg); /* one write: two processes print */
	return -1;
}

int lib_fail(const struct ctx *c, const char *what, int rc)
{
	return fail(c, "%s: %s", what, lib_msg(rc));
}

/* ---- host 1, the child --------------------------------------------------- */

/* Reap host 1 if it has exited; *st gets its wait status. */
bool child_exited(int *st)
{
	if (child < 0 || waitpid(child, st, WNOHANG) != child)
		return false;
	child = -1;
	return true;
}

const char *how_exited(int st, char *buf, size_t cap)
{
	if (WIFSIGNALED(st))
		snprintf(buf, cap, "was killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, cap, "exited with status %d", WEXITSTATUS(st));
	return buf;
}

/* Kill and reap host 1 after a failure of host 0. */
void child_kill(void)
{
	if (child < 0)
		return;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	child = -1;
}

/* ---- host 1 -------------------------------------------------------------- */

static int write_report(struct ctx *c, int fd, const struct report *rep)
{
	const char *p = (const char *)rep;
	size_t left = sizeof(*rep);

	while (left) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(c,
				    "cannot send the counts to host 0: %s; "
				    "host 0 has probably failed, see its "
				    "message",
				    n < 0 ? strerror(errno) : "short write");
		p += n;
		left -= (size_t)n;
	}
	return 0;
}

/* Host 1: attach as host 1, run every size, report each. */
static int child_main(const struct bench *bx, enum cxl_coh_mode mode, int fd)
{
	struct cxl_pool_opts o = bx->opts;
	struct ctx c = { .pl = bx->pl, .mode = mode, .host = 1 };
	int rc, ret = 0;

	o.mode = mode;
	o.mode_set = 1;
	o.host_id = 1;
	if ((rc = cxl_pool_attach(&o, &c.pool)))
		return lib_fail(&c, "cannot attach the pool", rc);
	for (size_t i = 0; i < NSIZES && !ret; i++) {
		struct report rep = { .size = sizes[i] };

		c.size = sizes[i];
		c.cell = cell_for(c.size);
		ret = rings_open(&c);
		if (!ret)
			ret = pingpong_host1(&c, &rep);
		if (!ret)
			ret = stream_host1(&c, &rep);
		if (rings_close(&c))
			ret = -1;
		if (!ret)
			ret = write_report(&c, fd, &rep);
	}
	c.cell = 0; /* no test under way: messages name no size */
	if ((rc = cxl_pool_detach(c.pool)))
		ret = lib_fail(&c, "cannot detach the pool", rc);
	return ret;
}

/* ---- host 0 -------------------------------------------------------------- */

static int read_report(struct ctx *c, int fd, struct report *rep)
{
	char *p = (char *)rep;
	size_t left = sizeof(*rep);

	while (left) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int rc = poll(&pfd, 1, STALL_S * 1000);

		if (interrupted)
			return -1;
		if (rc == 0)
			return fail(c,
				    "host 1 sent no counts within %d s; "
				    "see its message above",
				    STALL_S);
		n = rc < 0 ? -1 : read(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(c,
				    "cannot read host 1's counts: %s; "
				    "check the limits of this system (ulimit)",
				    strerror(errno));
		if (n == 0)
			return fail(c, "host 1 exited before sending its "
				       "counts; see its message above");
		p += n;
		left -= (size_t)n;
	}
	if (rep->size != c->size)
		return fail(c,
			    "host 1 sent the counts of %u-byte messages: "
			    "the hosts are out of step (a ring_bench bug)",
			    rep->size);
	return 0;
}

/* Host 0's side of one size, then host 1's report. */
static int run_size(struct ctx *c, int fd, struct result *r)
{
	struct report rep;
	int ret;

	memset(r, 0, sizeof(*r));
	r->size = c->size;
	r->cell = c->cell;
	ret = rings_open(c);
	if (!ret)
		ret = pingpong_host0(c, r);
	if (!ret)
		ret = stream_host0(c, r);
	if (rings_close(c))
		ret = -1;
	if (ret || read_report(c, fd, &rep))
		return -1;
	tool_coh_add_delta(&r->pp, &rep.pp, &coh_zero);
	r->pp_polls += rep.pp_polls;
	r->recv = rep.recv;
	r->poll = rep.poll;
	r->polls = rep.polls;
	return 0;
}

/*
 * One mode: attach as host 0 (a mode this CPU lacks is skipped here),
 * fork host 1, measure every size. Host 1 is forked after the attach and
 * makes its own attachment; it never uses the one it inherits.
 */
int run_mode(struct bench *bx, struct mode_run *mr)
{
	struct cxl_pool_opts o = bx->opts;
	struct ctx c = { .pl = bx->pl, .mode = mr->mode, .host = 0 };
	pid_t parent = getpid();
	int rc, fds[2], ret = 0, st;
	char how[48];
	uint64_t t0 = cxl_now_ns();

	o.mode = mr->mode;
	o.mode_set = 1;
	o.host_id = 0;
	rc = cxl_pool_attach(&o, &c.pool);
	if (rc == CXL_ENOTSUP) {
		printf("ring_bench: skipping mode %s: %s\n",
		       cxl_coh_mode_name(mr->mode), lib_msg(rc));
		return 0;
	}
	if (rc)
		return lib_fail(&c, "cannot attach the pool", rc);
	mr->insn = cxl_pool_flush_insn(c.pool) == CXL_FLUSH_AUTO
			   ? "none"
			   : cxl_flush_insn_name(cxl_pool_flush_insn(c.pool));
	if (pipe(fds)) {
		fail(&c,
		     "cannot create a pipe: %s; raise the open-file "
		     "limit (ulimit -n)",
		     strerror(errno));
		cxl_pool_detach(c.pool);
		return -1;
	}
	fflush(NULL); /* nothing buffered may be written twice */
	child = fork();
	if (child < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		cxl_pool_detach(c.pool);
		return fail(&c,
			    "cannot fork host 1: %s; free memory or raise "
			    "the process limit (ulimit -u)",
			    strerror(err));
	}
	if (child == 0) {
		/* Host 1 dies with host 0, even if host 0 is killed. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		tool_catch_signals(SIG_DFL);
		close(fds[0]);
		_exit(child_main(bx, mr->mode, fds[1]) ? 1 : 0);
	}
	close(fds[1]);
	printf("ring_bench: mode %s (flush instruction %s): host 0 pid %d, "
	       "host 1 pid %d\n",
	       cxl_coh_mode_name(mr->mode), mr->insn, (int)parent, (int)child);
	fflush(stdout);
	for (size_t i = 0; i < NSIZES && !ret; i++) {
		c.size = sizes[i];
		c.cell = cell_for(c.size);
		ret = run_size(&c, fds[0], &mr->res[i]);
		if (!ret && bx->csv)
			csv_row(bx->csv, mr, bx->pl, &mr->res[i]);
	}
	c.cell = 0; /* no test under way: messages name no size */
	close(fds[0]);
	if (ret) {
		child_kill();
	} else if (child >= 0) {
		if (waitpid(child, &st, 0) == child &&
		    (!WIFEXITED(st) || WEXITSTATUS(st)))
			ret = fail(&c,
				   "host 1 %s at the end; see its "
				   "message above, if any",
				   how_exited(st, how, sizeof(how)));
		child = -1;
	}
	if ((rc = cxl_pool_detach(c.pool)))
		ret = lib_fail(&c, "cannot detach the pool", rc);
	if (!ret) {
		mr->done = true;
		printf("ring_bench: mode %s measured in %.1f s\n",
		       cxl_coh_mode_name(mr->mode),
		       (double)(cxl_now_ns() - t0) / 1e9);
	}
	return ret;
}
