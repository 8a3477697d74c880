/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream-triggered MPI (include/stream-triggering.h) internals: requests,
 * the pool channel of a matched send/receive pair, the pool object of a
 * persistent collective, and the queue served by a progress thread.
 * docs/stream.md has the layouts and the protocol.
 *
 * Threads: every MPI call is made by the calling (host) thread; the
 * progress thread of a queue touches only pool memory and user buffers.
 */
#ifndef CXLMPI_STREAM_H
#define CXLMPI_STREAM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datatype.h"
#include "internal.h"
#include "stream-triggering.h"

#define CHAN_MAGIC 0x4e414843534c5843ull /* "CXLSCHAN" */
#define COLL_MAGIC 0x4c4f4353434c5843ull /* "CXLSCOLL" */
#define STREAM_MAX_BYTES (1ull << 30)	 /* largest message of a request */
#define STREAM_MAX_SLOTS 16
#define STREAM_MAX_SEGS (1u << 22) /* segments of a request's layout */

enum sreq_kind {
	SR_SEND,
	SR_RECV,
	SR_BARRIER,
	SR_ALLREDUCE,
	SR_MATCH
};

/* MPIS_Request states (the reference's names) */
enum sreq_state {
	SR_ONGOING = -1,
	SR_UNMATCHED = 0,
	SR_MATCHED = 1
};

/*
 * Channel object, created by the receiver (all offsets in bytes):
 *   line 0  header, written once by the receiver before the handshake
 *   line 1  the receiver's line: messages consumed (credit), a count
 *   line 2  the sender's line, written once when it opens the channel:
 *           word 0 CHAN_MAGIC once words 1..6 hold its heartbeat's name
 *   slot i at CHAN_SLOTS + i * stride: one header line written only by
 *           the sender (word 0, the flag: seq << 32 | len; word 1, the
 *           progress of a large message: seq << 32 | bytes written;
 *           bytes 16..63: the first 48 bytes of a stamped message),
 *           then cap bytes of data. A stamped message (every message of
 *           a channel of up to CHAN_STAMP_MAX bytes, else up to
 *           CHAN_SMALL bytes; on a plain channel, a GPU receive's, up
 *           to CHAN_INLINE bytes, the flag's line alone) goes on in the
 *           data lines as stamped lines: word 0 the sequence number,
 *           words 1..7 the next 56 bytes; such a channel's slots are
 *           long enough for them.
 */
struct chan_hdr {
	uint64_t magic, nslots, cap, stride, size;
	uint64_t smax; /* the largest stamped message (plain: CHAN_INLINE) */
};
#define CHAN_CONSUMED 64u
#define CHAN_SENDER 128u
#define CHAN_CHUNK (64u * 1024) /* large messages go in chunks of this */
#define CHAN_INLINE_OFF 16u	/* messages up to CHAN_INLINE bytes go */
#define CHAN_INLINE (CXL_LINE - CHAN_INLINE_OFF) /* in the flag's line */
#define CHAN_LINE_DATA (CXL_LINE - 8)		 /* bytes of a stamped line */
#define CHAN_SMALL_LINES 4u /* flag line + 3 stamped lines: CHAN_SMALL */
#define CHAN_SMALL (CHAN_INLINE + (CHAN_SMALL_LINES - 1) * CHAN_LINE_DATA)

/* n rounded up to whole pool lines */
static inline uint64_t stream_round_line(uint64_t n)
{
	return (n + CXL_LINE - 1) & ~(uint64_t)(CXL_LINE - 1);
}
/* a channel of this capacity or less sends every message in stamped
 * lines (slots of 64 * lines of the largest message) */
#define CHAN_STAMP_MAX 4096u
#define CHAN_SLOTS 192u

/* Length of a heartbeat object's name, with its NUL (stream_beat.c) */
#define STREAM_BEAT_NAME 48

/* The receiver's description of a channel, sent once at matching. */
struct chan_desc {
	uint64_t magic, nslots, cap, stride, size, smax;
	char name[64];
	char beat[STREAM_BEAT_NAME]; /* the receiver's heartbeat */
};

/* A waiting thread's view of one peer's heartbeat (stream_beat.c). */
struct beat_watch {
	struct cxl_obj obj;    /* the peer's beat object, once known */
	struct cxl_watch beat; /* its beat */
	uint64_t look_ms;      /* when we last looked */
	uint64_t gone_ms;      /* when its beat was first found missing (0) */
	unsigned polls;
};

struct chan {
	struct cxl_obj obj;
	char name[64];
	bool creator; /* the receiver: destroys the name when freed */
	uint64_t nslots, cap, stride;
	uint64_t smax; /* messages of up to smax bytes are stamped */
	uint8_t *base;
	uint64_t credit;       /* sender: the receiver's credit as last read */
	uint64_t taken, given; /* receiver: messages consumed; published */
	int peer;	       /* the other side's rank, for messages */
	bool has_beat;	       /* holds a reference on our heartbeat */
	char peer_beat[STREAM_BEAT_NAME]; /* its heartbeat, once known */
	struct beat_watch watch;	  /* used by the progress thread */
};

/*
 * Collective object, created by rank 0 of the communicator: per rank one
 * flag line (word 0: the last operation it started; bytes 16..63: the
 * name of its heartbeat; written only by that rank), then two data areas
 * of `bytes` (alternate operations use alternate areas).
 */
#define COLL_BEAT_OFF 16u
/* word 1 of a rank's flag line once its heartbeat's name is complete */
#define COLL_BEAT_MARK 0x5441454253434c58ull /* "XLCSBEAT" */
struct coll {
	struct cxl_obj obj;
	char name[64];
	int n, me;
	uint64_t bytes, row; /* row stride: one line + 2 * data, lines */
	uint8_t *base;
	bool has_beat; /* holds a reference on our heartbeat */
	bool named;    /* rank 0: the name is ours to remove once all joined */
	struct beat_watch *watch; /* per rank, used by the progress thread */
};

/* The layout of a point-to-point buffer (datatype.h): map.seg == NULL,
 * the data is contiguous */
struct dlayout {
	struct dt_map map;
	uint8_t *bounce; /* sender: min(size, CHAN_CHUNK) bytes to gather in */
};

struct queue_head;

struct MPIS_Request_struct {
	int kind, state;
	/* point to point */
	/* contiguous (lay.seg == NULL): buf is the first byte of the data;
	 * else the user's buffer, the origin of the layout's offsets */
	uint8_t *buf;
	uint64_t bytes; /* the packed size */
	struct dlayout lay;
	int peer, tag;
	MPI_Comm comm;
	MPI_Request hs; /* the handshake message, while in flight */
	struct chan_desc desc;
	struct chan ch;
	bool has_chan;
	/* collectives */
	const uint8_t *sendbuf;
	MPI_Datatype dt;
	MPI_Op op;
	int count;
	struct coll co;
	bool has_coll;
	/* queue state, caller thread: started and not yet waited on */
	struct queue_head *active;
	/* the GPU_MEM_OPS queue whose stream uses this request, for good
	 * (stream_gpu.c); NULL if none */
	struct queue_head *gpu_q;
	bool host_used; /* started on a THREAD queue */
	/* GPU queue: the buffer is GPU memory, which the small-message
	 * kernel may read and write (0 not known yet, 1 yes, -1 no) */
	signed char gpu_devbuf;
	bool gpu_dead; /* GPU queue: its peer was found dead */
	/* an allreduce on GPU memory: the user's buffers, and the host
	 * staging buffers that buf and sendbuf point to meanwhile */
	uint8_t *gpu_recv, *gpu_stage;
	const uint8_t *gpu_send;
	uint64_t seq; /* operations started so far */
	/* enqueued operations the progress thread has not finished */
	atomic_uint_fast64_t inflight;
	/* the last round (start k and its wait) a progress thread retired:
	 * round k + 1, restarted on another queue, runs only after it */
	atomic_uint_fast64_t retired;
	/* SR_MATCH: the request being matched */
	struct MPIS_Request_struct *target;
};

/* stream_channel.c (progress thread: chan_send, chan_recv) */
/* plain: no stamped lines (a receive into GPU memory) */
int chan_create(struct chan *c, uint64_t cap, int peer, bool plain,
		struct chan_desc *d);
int chan_open(struct chan *c, const struct chan_desc *d, uint64_t need,
	      int peer);
void chan_close(struct chan *c);
int chan_send(struct chan *c, uint64_t k, const void *src, uint64_t len,
	      const struct dlayout *dl);
/* Complete this thread's unfenced write-backs and NT stores (and
 * chan_flags_out first). */
void chan_drain(void);
/* Publish the flags of this thread's sends that wait for a fence. */
void chan_flags_out(void);
/* Receiver: publish the messages consumed, if enough are unpublished. */
void chan_credit(struct chan *c);
/* chan_recv: the receive has not begun; the progress thread leaves it to
 * a host thread waiting for the queue */
#define CHAN_HANDOVER (-1)
/* Returns CHAN_HANDOVER, before any data is copied, when handover (if
 * not NULL) says, while it waits, that the caller should stop. Leaves the
 * credit to chan_credit. */
int chan_recv(struct chan *c, uint64_t k, void *dst, uint64_t max,
	      const struct dlayout *dl, bool (*handover)(void *), void *arg);

/* stream_beat.c; stream_peer_dead: this thread's last failed wait was
 * on a peer found dead (for the queue's message) */
extern _Thread_local bool stream_peer_dead;
int beat_get(char name[STREAM_BEAT_NAME]);
void beat_put(void);
bool beat_name_ok(const char *name);
/* beat_get, then our heartbeat's name NT-stored into words[0..5] and
 * fenced; beat_read_name: a peer's, read from there after cxl_inval
 * (false if it is not a valid name yet) */
int beat_publish(cxl_pool *p, uint64_t *words);
bool beat_read_name(cxl_pool *p, const uint64_t *words,
		    char name[STREAM_BEAT_NAME]);
int watch_peer(struct beat_watch *w, const char *name, int rank,
	       const char *what);
void watch_close(struct beat_watch *w);

/* stream_coll.c */
/* matching: post (MPIS_Match, never blocks), then join once r->hs, the
 * broadcast of the name, completed */
int coll_post(MPIS_Request r);
int coll_join(MPIS_Request r);

void coll_close(struct coll *co);
bool coll_supported(MPI_Datatype dt, MPI_Op op);
void coll_start(MPIS_Request r, uint64_t k);
int coll_finish(MPIS_Request r, uint64_t k);

/* stream_match.c */
int match_post(MPIS_Request r);
int match_finish(MPIS_Request r, bool block);

/*
 * A queue, whatever its backend: the table of its operations and the
 * caller thread's requests started and not yet waited for. The MPIS_*
 * entry points (stream_queue.c) check every argument and request state,
 * then call the backend: the THREAD queue (stream_queue.c: a progress
 * thread) or GPU_MEM_OPS (stream_gpu.c: operations on a CUDA stream).
 */
struct pend {
	MPIS_Request r;
	uint64_t k;
};
struct queue_ops {
	/* enqueue round k of r, a matched request of this process */
	int (*start)(struct queue_head *q, MPIS_Request r, uint64_t k);
	/* enqueue the wait of the n started requests in set (the backend
	 * takes set, malloc'd) */
	int (*waitall)(struct queue_head *q, struct pend *set, int n);
	int (*host)(struct queue_head *q, void (*fn)(void *), void *arg);
	/* run or wait until all that is enqueued is done; the first error */
	int (*wait)(struct queue_head *q);
	void (*destroy)(struct queue_head *q);
};
struct queue_head {
	const struct queue_ops *ops;
	int type;
	struct pend *pend;
	int npend, cappend;
};

/* stream_gpu.c: a GPU_MEM_OPS queue on the CUDA stream *extra (NULL: the
 * default stream); MPIS_UNSUPPORTED_BEHAVIOR where there is no driver
 * or GPU (said once on stderr) */
int gpu_queue_create(struct queue_head **out, void *extra);
/* MPIS_Request_free: the stream is done with r (synchronised) */
void gpu_request_release(MPIS_Request r);
/* MPIS_Alloc_mem "cuda:device": GPU memory (cuMemAlloc) */
int gpu_alloc(size_t size, void **out);
/* whether p is GPU memory, asked only of a CUDA driver this process has
 * loaded already (never loads one) */
bool gpu_device_memory(const void *p);
void gpu_free(void *p);

/* stream_channel.c: the slot layout, for a backend that writes and reads
 * it with another engine (stream_gpu.c) */
uint64_t *chan_slot(const struct chan *c, uint64_t k);
unsigned chan_lines(uint64_t len);
/* whether a message of len bytes goes in stamped lines on c */
bool chan_stamped(const struct chan *c, uint64_t len);
uint64_t chan_flag(uint64_t k, uint64_t len);
/* receiver: the sender's size, published when it opened the channel; 0
 * while it has not */
uint64_t chan_sender_bytes(const struct chan *c);
/* a waiter's look at the peer of c (its heartbeat): non-zero once the
 * peer is found dead (said on stderr) */
int chan_watch(struct chan *c);

/* stream_base.c */
cxl_pool *stream_pool(void);
void stream_obj_name(char *buf, size_t len, const char *kind);
void stream_spin(unsigned *n);
int stream_fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
