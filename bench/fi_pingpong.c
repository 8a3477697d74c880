/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fi_pingpong: one-way latency of a libfabric provider without MPI on top.
 *
 * Two processes (this one and a forked child) open an RDM endpoint each
 * with the provider named by FI_PROVIDER (default "cxl"), exchange their
 * addresses over pipes, and ping-pong tagged messages, spinning on
 * fi_cq_read. The difference from the MPI latency of the same provider is
 * what the MPI library adds; the difference from ring_bench is what the
 * provider adds to the bare ring.
 *
 *   fi_pingpong [--max BYTES] [--iters N]
 *
 * With two or more CPUs the processes are pinned to CPUs 0 and 1, so that
 * the scheduler cannot put both spinning processes on one CPU.
 *
 * Prints "CORE <major>.<minor>", the version of the libfabric core that
 * was loaded (Debian's, or another through LD_LIBRARY_PATH), then
 * "RESULT fi_latency <size> <us> us" per size, as mpi_bench does.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define DIE(...)                                              \
	do {                                                  \
		fprintf(stderr, "fi_pingpong: " __VA_ARGS__); \
		exit(1);                                      \
	} while (0)
#define TRY(call)                                                         \
	do {                                                              \
		int rc_ = (int)(call);                                    \
		if (rc_)                                                  \
			DIE("%s failed: %s\n", #call, fi_strerror(-rc_)); \
	} while (0)

struct node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
};

/* its own clock: this program links libfabric only, no cxlmpi library */
static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void setup(struct node *n, int to_peer, int from_peer)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	const char *prov = getenv("FI_PROVIDER");
	char name[256], peer[256];
	size_t len = sizeof(name);

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	/* one thread per domain, the level MPICH and Open MPI ask for */
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov ? prov : "cxl");
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &n->info));
	fi_freeinfo(hints);
	TRY(fi_fabric(n->info->fabric_attr, &n->fabric, NULL));
	TRY(fi_domain(n->fabric, n->info, &n->domain, NULL));
	TRY(fi_av_open(n->domain, &ava, &n->av, NULL));
	TRY(fi_cq_open(n->domain, &cqa, &n->cq, NULL));
	TRY(fi_endpoint(n->domain, n->info, &n->ep, NULL));
	TRY(fi_ep_bind(n->ep, &n->av->fid, 0));
	TRY(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_enable(n->ep));
	TRY(fi_getname(&n->ep->fid, name, &len));
	if (write(to_peer, &len, sizeof(len)) != sizeof(len) ||
	    write(to_peer, name, len) != (ssize_t)len ||
	    read(from_peer, &len, sizeof(len)) != sizeof(len) ||
	    len > sizeof(peer) || read(from_peer, peer, len) != (ssize_t)len)
		DIE("address exchange over the pipe failed\n");
	if (fi_av_insert(n->av, peer, 1, &n->peer, 0, NULL) != 1)
		DIE("fi_av_insert of the peer's address failed\n");
}

static void wait_one(struct node *n)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t r;

	while ((r = fi_cq_read(n->cq, &e, 1)) == -FI_EAGAIN)
		;
	if (r == 1)
		return;
	if (r == -FI_EAVAIL && fi_cq_readerr(n->cq, &err, 0) == 1)
		DIE("completion error: %s\n", fi_strerror(err.err));
	DIE("fi_cq_read: %s\n", fi_strerror((int)-r));
}

static void post_recv(struct node *n, void *buf, size_t len)
{
	ssize_t r;

	while ((r = fi_trecv(n->ep, buf, len, NULL, n->peer, 1, 0, NULL)) ==
	       -FI_EAGAIN)
		fi_cq_read(n->cq, NULL, 0);
	if (r)
		DIE("fi_trecv: %s\n", fi_strerror((int)-r));
}

static void send_msg(struct node *n, void *buf, size_t len)
{
	ssize_t r;

	while ((r = fi_tsend(n->ep, buf, len, NULL, n->peer, 1, NULL)) ==
	       -FI_EAGAIN)
		fi_cq_read(n->cq, NULL, 0);
	if (r)
		DIE("fi_tsend: %s\n", fi_strerror((int)-r));
}

/* Round trips of size bytes; the initiator returns the one-way time. */
static double pingpong(struct node *n, int initiator, uint8_t *buf, size_t size,
		       int iters)
{
	int warm = iters / 10 + 10;
	double t0 = 0;

	for (int i = 0; i < warm + iters; i++) {
		if (i == warm)
			t0 = now_us();
		if (initiator) {
			post_recv(n, buf, size);
			send_msg(n, buf, size);
			wait_one(n); /* send */
			wait_one(n); /* receive */
		} else {
			post_recv(n, buf, size);
			wait_one(n);
			send_msg(n, buf, size);
			wait_one(n);
		}
	}
	return (now_us() - t0) / iters / 2;
}

int main(int argc, char **argv)
{
	size_t max = 65536;
	int iters = 10000, p2c[2], c2p[2], status;
	struct node n = { 0 };
	uint8_t *buf;
	pid_t child;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max") && i + 1 < argc)
			max = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else
			DIE("usage: fi_pingpong [--max BYTES] [--iters N]\n");
	}
	if (iters < 1)
		DIE("--iters must be at least 1\n");
	if (pipe(p2c) || pipe(c2p))
		DIE("pipe: %s\n", strerror(errno));
	buf = calloc(1, max ? max : 1);
	if (!buf)
		DIE("cannot allocate %zu bytes\n", max);
	child = fork();
	if (child < 0)
		DIE("fork: %s\n", strerror(errno));
	/* the two processes are two emulated hosts of the pool */
	setenv("CXL_HOST_ID", child ? "0" : "1", 1);
	{
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(child ? 0 : 1, &set);
		if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
			sched_setaffinity(0, sizeof(set), &set);
	}
	if (child)
		setup(&n, p2c[1], c2p[0]);
	else
		setup(&n, c2p[1], p2c[0]);
	if (child)
		printf("CORE %u.%u\n", FI_MAJOR(fi_version()),
		       FI_MINOR(fi_version()));
	for (size_t size = 0; size <= max; size = size ? size * 2 : 1) {
		double us = pingpong(&n, child != 0, buf, size, iters);

		if (child)
			printf("RESULT fi_latency %zu %.3f us\n", size, us);
		fflush(stdout);
	}
	fi_close(&n.ep->fid);
	fi_close(&n.cq->fid);
	fi_close(&n.av->fid);
	fi_close(&n.domain->fid);
	fi_close(&n.fabric->fid);
	fi_freeinfo(n.info);
	if (!child)
		return 0;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		DIE("the peer process failed\n");
	return 0;
}
