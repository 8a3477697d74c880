/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The liveness service (include/cxlshm/liveness.h): one beat thread per
 * process, whatever uses it, and the watchers' sampling.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct beat_ent {
	cxl_pool *pool;
	uint64_t *word;
};

/* life_mu: one add or remove at a time, so that an add cannot start a
 * thread while a remove still joins the old one. mu: the list, the stop
 * flag and the thread's sleep; held while the thread writes beats, so
 * that a removed word is never written after cxl_beat_remove returns. */
static pthread_mutex_t life_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct beat_ent *ents;
static size_t n_ents, cap_ents;
static bool running, stop;
static pthread_t thread;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child has no beat thread, and may have been forked while the
 * parent's held mu: it starts with no beats and fresh locks (it attaches
 * the pool again and registers its own). */
static void child_reset(void)
{
	pthread_mutex_init(&life_mu, NULL);
	pthread_mutex_init(&mu, NULL);
	pthread_cond_init(&cv, NULL);
	free(ents);
	ents = NULL;
	n_ents = cap_ents = 0;
	running = stop = false;
}

static void atfork_init(void)
{
	pthread_atfork(NULL, NULL, child_reset);
}

/* One round: every beat, then each pool's host beat once. mu held. */
static void beat_round(uint64_t beat)
{
	for (size_t i = 0; i < n_ents; i++)
		/* only we write the word: a non-temporal store, fenced so that
		 * it leaves this core now rather than with a later fence */
		cxl_flag_set(ents[i].pool, ents[i].word, beat);
	for (size_t i = 0; i < n_ents; i++) {
		size_t j = 0;

		while (j < i && ents[j].pool != ents[i].pool)
			j++;
		if (j == i) /* the host is alive too (cxlpool gc --dead-host) */
			cxl_host_beat(ents[i].pool);
	}
}

static void *beat_main(void *arg)
{
	uint64_t beat = 0;
	struct timespec until;

	(void)arg;
	pthread_mutex_lock(&mu);
	while (!stop) {
		beat_round(++beat);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += CXL_BEAT_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!stop && pthread_cond_timedwait(&cv, &mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

CXL_EXPORT int cxl_beat_add(cxl_pool *p, uint64_t *word)
{
	int rc = CXL_OK;

	if (!p || (uint8_t *)word < p->base ||
	    (uint8_t *)word + sizeof(*word) > p->base + p->size ||
	    ((uintptr_t)word & 7))
		return cxl_seterr(CXL_EINVAL,
				  "a heartbeat word must be an aligned word "
				  "of the pool mapping");
	pthread_once(&atfork_once, atfork_init);
	pthread_mutex_lock(&life_mu);
	pthread_mutex_lock(&mu);
	if (n_ents == cap_ents) {
		size_t cap = cap_ents ? 2 * cap_ents : 8;
		struct beat_ent *v = realloc(ents, cap * sizeof(*v));

		if (!v) {
			rc = cxl_seterr(CXL_ENOMEM,
					"no memory for %zu heartbeats", cap);
			goto out;
		}
		ents = v;
		cap_ents = cap;
	}
	ents[n_ents++] = (struct beat_ent){ p, word };
	if (!running) {
		int e;

		stop = false;
		if ((e = pthread_create(&thread, NULL, beat_main, NULL))) {
			n_ents--;
			rc = cxl_seterr(CXL_ESYS,
					"cannot start the heartbeat thread "
					"(%s): peers would declare this "
					"process dead; raise the process or "
					"thread limit (ulimit -u)",
					strerror(e));
			goto out;
		}
		running = true;
	}
out:
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&life_mu);
	return rc;
}

CXL_EXPORT void cxl_beat_remove(cxl_pool *p, uint64_t *word)
{
	bool join = false;

	pthread_mutex_lock(&life_mu);
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_ents; i++)
		if (ents[i].pool == p && ents[i].word == word) {
			ents[i] = ents[--n_ents];
			break;
		}
	if (!n_ents && running) {
		stop = true;
		running = false;
		join = true;
		pthread_cond_signal(&cv);
		free(ents);
		ents = NULL;
		cap_ents = 0;
	}
	pthread_mutex_unlock(&mu);
	/* the last user may unload the library next: no thread left in it */
	if (join)
		pthread_join(thread, NULL);
	pthread_mutex_unlock(&life_mu);
}

CXL_EXPORT void cxl_watch_start(cxl_pool *p, const uint64_t *word,
				struct cxl_watch *w, uint64_t now_ms)
{
	/* the peer's non-temporal stores, not a stale line of ours */
	w->last = cxl_nt_load64(p, word);
	w->moved_ms = now_ms;
}

CXL_EXPORT uint64_t cxl_watch_still_ms(cxl_pool *p, const uint64_t *word,
				       struct cxl_watch *w, uint64_t now_ms)
{
	uint64_t v = cxl_nt_load64(p, word);

	if (v != w->last) {
		w->last = v;
		w->moved_ms = now_ms;
		return 0;
	}
	return now_ms > w->moved_ms ? now_ms - w->moved_ms : 0;
}

CXL_EXPORT uint32_t cxl_pool_peer_timeout_ms(const cxl_pool *p)
{
	return p ? p->opts.peer_timeout_ms : 0;
}
