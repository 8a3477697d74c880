/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider's pool attachment belongs to the process that made it.
 *
 *  1. A process probes the provider (fi_getinfo keeps the pool attached),
 *     then forks. The child, another emulated host (CXL_HOST_ID=1), opens
 *     an endpoint: the endpoint object must be the child's own, created
 *     as host 1 by the child's pid, not through the parent's inherited
 *     handle (whose flocks the child would share: two processes in the
 *     arena lock at once).
 *  2. The same process closes everything, the pool file is removed and
 *     made again at the same path: a new endpoint must be in the new file,
 *     not in the old one that the probe kept mapped.
 *
 *   test_fi_fork --mode coherent|emulated
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitest.h"

struct ep_set {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static struct fi_info *probe(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_MSG;
	hints->fabric_attr->prov_name = strdup("cxl");
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	return info;
}

static void open_ep(struct ep_set *s)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };

	s->info = probe();
	TRY(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	TRY(fi_domain(s->fabric, s->info, &s->domain, NULL));
	TRY(fi_av_open(s->domain, &ava, &s->av, NULL));
	TRY(fi_cq_open(s->domain, &cqa, &s->cq, NULL));
	TRY(fi_endpoint(s->domain, s->info, &s->ep, NULL));
	TRY(fi_ep_bind(s->ep, &s->av->fid, 0));
	TRY(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_enable(s->ep));
}

static void close_ep(struct ep_set *s)
{
	TRY(fi_close(&s->ep->fid));
	TRY(fi_close(&s->cq->fid));
	TRY(fi_close(&s->av->fid));
	TRY(fi_close(&s->domain->fid));
	TRY(fi_close(&s->fabric->fid));
	fi_freeinfo(s->info);
}

struct own {
	pid_t pid;
	int found;
	uint32_t host;
};

static int own_ep(const struct cxl_obj_stat *st, void *arg)
{
	struct own *o = arg;

	if (!strncmp(st->name, "cxlfi.ep.", 9) &&
	    st->creator_pid == (uint32_t)o->pid) {
		o->found++;
		o->host = st->creator_host;
	}
	return 0;
}

/* Our endpoint objects in the pool file that CXL_POOL names now. */
static struct own find_own(void)
{
	struct own o = { .pid = getpid() };
	cxl_pool *p;

	REQUIRE(cxl_pool_attach_env(&p) == CXL_OK);
	REQUIRE(cxl_obj_list(p, own_ep, &o) == CXL_OK);
	cxl_pool_detach(p);
	return o;
}

static int child(void)
{
	struct ep_set s;
	struct own o;

	setenv("CXL_HOST_ID", "1", 1);
	open_ep(&s);
	o = find_own();
	CHECK(o.found == 1);
	CHECK(o.host == 1);
	printf("child: %d endpoint object(s) of its own, host %u\n", o.found,
	       o.host);
	close_ep(&s);
	return t_failed != 0;
}

int main(int argc, char **argv)
{
	enum cxl_coh_mode mode = targ_mode(argc, argv);
	struct tpool tp;
	struct fi_info *info;
	struct ep_set s;
	struct own o;
	int st;
	pid_t c;

	tpool_init(&tp, "fifork");
	fi_test_env(&tp, mode);
	setenv("CXL_JOB", "test_fi_fork", 1);
	setenv("CXL_HOST_ID", "0", 1);

	/* 1: the probe keeps the pool attached; then fork */
	info = probe();
	fflush(NULL);
	c = fork();
	REQUIRE(c >= 0);
	if (c == 0)
		_exit(child());
	REQUIRE(waitpid(c, &st, 0) == c);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fi_freeinfo(info);

	/* 2: an endpoint, closed; the pool made again at the same path */
	open_ep(&s);
	CHECK(find_own().found == 1);
	close_ep(&s);
	REQUIRE(unlink(tp.path) == 0);
	open_ep(&s);
	o = find_own();
	CHECK(o.found == 1);
	printf("after the pool was made again: %d endpoint object(s) of ours "
	       "in the new file\n",
	       o.found);
	close_ep(&s);
	tpool_cleanup(&tp);
	return t_report("test_fi_fork");
}
