/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness of stream peers: a wait on a peer that died fails instead of
 * hanging (docs/stream.md, "Peer failure").
 *
 * While a process has a stream channel or collective open, the first word
 * of its beat object, a one-line pool object, is advanced by libcxlshm's
 * liveness service (include/cxlshm/liveness.h: the one beat thread of the
 * process, shared with the provider's endpoints). A peer learns the
 * object's name at matching (channels) or at setup (collectives).
 *
 * A waiting progress thread looks at the peer's beat at most every
 * WATCH_MS; a beat that has not moved for CXL_PEER_TIMEOUT_MS fails the
 * wait.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

#define WATCH_MS 50

/* life_mu: one get or put at a time (the beat object and its count) */
static pthread_mutex_t life_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned beat_refs;
static struct cxl_obj beat_obj;
static char beat_name[STREAM_BEAT_NAME];
_Thread_local bool stream_peer_dead;

/* CXL_PEER_TIMEOUT_MS */
static uint64_t peer_timeout(void)
{
	return cxl_pool_peer_timeout_ms(stream_pool());
}

int beat_get(char name[STREAM_BEAT_NAME])
{
	cxl_pool *p = stream_pool();
	int rc = MPIS_SUCCESS;

	if (!p)
		return MPIS_NOT_READY;
	pthread_mutex_lock(&life_mu);
	if (!beat_refs) {
		stream_obj_name(beat_name, sizeof(beat_name), "beat");
		if (cxl_obj_create(p, beat_name, CXL_LINE, CXL_OBJ_ZERO,
				   &beat_obj)) {
			rc = stream_fail(MPI_ERR_NO_MEM,
					 "no pool memory for the stream "
					 "heartbeat %s (%s); enlarge the pool "
					 "(CXL_POOL_SIZE)",
					 beat_name, cxl_errmsg());
		} else if (cxl_beat_add(p, beat_obj.ptr)) {
			rc = stream_fail(MPI_ERR_OTHER,
					 "cannot start the stream heartbeat: "
					 "%s",
					 cxl_errmsg());
			cxl_obj_close(&beat_obj);
			cxl_obj_destroy(p, beat_name);
		}
	}
	if (rc == MPIS_SUCCESS) {
		beat_refs++;
		memcpy(name, beat_name, STREAM_BEAT_NAME);
	}
	pthread_mutex_unlock(&life_mu);
	return rc;
}

void beat_put(void)
{
	pthread_mutex_lock(&life_mu);
	if (beat_refs && !--beat_refs) {
		cxl_beat_remove(stream_pool(), beat_obj.ptr);
		cxl_obj_close(&beat_obj);
		cxl_obj_destroy(stream_pool(), beat_name);
	}
	pthread_mutex_unlock(&life_mu);
}

int beat_publish(cxl_pool *p, uint64_t *words)
{
	uint64_t w[STREAM_BEAT_NAME / 8];
	int rc = beat_get((char *)w);

	if (rc)
		return rc;
	/* word by word with NT stores: the line may hold a word that
	 * another thread of ours NT-stores too (a flag), and our cached
	 * copy of it may be stale; never a write-back of the line */
	for (unsigned i = 0; i < STREAM_BEAT_NAME / 8; i++)
		cxl_nt_store64(p, &words[i], w[i]);
	cxl_wfence(p);
	return MPIS_SUCCESS;
}

bool beat_read_name(cxl_pool *p, const uint64_t *words,
		    char name[STREAM_BEAT_NAME])
{
	/* what the peer NT-stored, not a stale line of ours */
	cxl_inval(p, words, STREAM_BEAT_NAME);
	memcpy(name, words, STREAM_BEAT_NAME);
	return beat_name_ok(name);
}

bool beat_name_ok(const char *name)
{
	static const char prefix[] = "cxlmpi.beat.";

	/* a name read from the pool or from a peer: bounded, ours */
	return memchr(name, 0, STREAM_BEAT_NAME) &&
	       !strncmp(name, prefix, sizeof(prefix) - 1);
}

void watch_close(struct beat_watch *w)
{
	if (w->obj.pool)
		cxl_obj_close(&w->obj);
	memset(w, 0, sizeof(*w));
}

int watch_peer(struct beat_watch *w, const char *name, int rank,
	       const char *what)
{
	cxl_pool *p = stream_pool();
	uint64_t now, still;

	/* cheap between looks: a clock read every 64 polls */
	if (++w->polls & 63)
		return MPI_SUCCESS;
	now = cxl_now_ns() / 1000000u;
	if (now - w->look_ms < WATCH_MS)
		return MPI_SUCCESS;
	w->look_ms = now;
	if (!w->obj.pool) {
		/* the peer has not published its beat yet (a sender
		 * that has not opened the channel): nothing to judge */
		if (!name || !beat_name_ok(name))
			return MPI_SUCCESS;
		if (cxl_obj_open(p, name, &w->obj) || w->obj.size < CXL_LINE) {
			if (w->obj.pool)
				cxl_obj_close(&w->obj);
			/* gone: its process ended, or it delivered what we
			 * wait for, freed its requests and its beat, and our
			 * next look at the flag finds the message (its last
			 * flag may still be on its way). Not dead before
			 * the timeout, as a beat that stopped */
			if (!w->gone_ms)
				w->gone_ms = now;
			if (now - w->gone_ms <= peer_timeout())
				return MPI_SUCCESS;
			stream_fail(MPI_ERR_OTHER,
				    "%s: the heartbeat %s of rank %d has not "
				    "been in the pool for %llu ms "
				    "(CXL_PEER_TIMEOUT_MS=%llu); the rank has "
				    "ended or freed its requests",
				    what, name, rank,
				    (unsigned long long)(now - w->gone_ms),
				    (unsigned long long)peer_timeout());
			stream_peer_dead = true;
			return MPI_ERR_OTHER;
		}
		cxl_watch_start(p, w->obj.ptr, &w->beat, now);
		return MPI_SUCCESS;
	}
	still = cxl_watch_still_ms(p, w->obj.ptr, &w->beat, now);
	if (still <= peer_timeout())
		return MPI_SUCCESS;
	stream_fail(MPI_ERR_OTHER,
		    "%s: rank %d has shown no heartbeat for %llu ms "
		    "(CXL_PEER_TIMEOUT_MS=%llu): declared dead; the queue "
		    "fails. Raise the timeout if the rank may be descheduled "
		    "that long",
		    what, rank, (unsigned long long)still,
		    (unsigned long long)peer_timeout());
	stream_peer_dead = true;
	return MPI_ERR_OTHER;
}
