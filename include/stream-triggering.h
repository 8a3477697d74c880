/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream-triggered MPI on the CXL pool (libcxlmpi), source-compatible with
 * the public header of mpi-advance/stream-triggering (the MPIS_ API):
 * the same header name, function names, types, error codes and queue-type
 * values. Persistent requests are matched once (a matched pair owns a pool
 * channel); their starts and waits are then enqueued on a queue that a
 * progress thread serves in order. docs/stream.md describes the calls,
 * what each does on the pool, and the differences from the reference.
 *
 * C and C++: the reference declares the constants as `const` objects and
 * uses the enum name unqualified (C++ only); here they are enumerators
 * and macros with the same names and values, and MPIS_Queue_type is also
 * a typedef, so that the same program compiles as C or C++.
 */
#ifndef MPI_ADVANCE_STREAM_TRIGGERING_H
#define MPI_ADVANCE_STREAM_TRIGGERING_H

#include <stdint.h>

#include "mpi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A queue handle (an execution stream). */
typedef uintptr_t MPIS_Queue;

/* A stream-triggered request (opaque). */
typedef struct MPIS_Request_struct *MPIS_Request;

/* Return codes */
enum {
	MPIS_SUCCESS = 0,		 /* completed */
	MPIS_NOT_READY = -1,		 /* not set up (no pool, no queue) */
	MPIS_INVALID_REQUEST_STATE = -2, /* request in the wrong state */
	MPIS_UNSUPPORTED_BEHAVIOR = -3	 /* not supported by this backend */
};

#define MPIS_QUEUE_NULL ((MPIS_Queue)0)
#define MPIS_REQUEST_NULL ((MPIS_Request)0)

/* Queue (backend) types; THREAD is the host progress-thread backend. */
enum MPIS_Queue_type {
	THREAD = 0,
	THREAD_SERIALIZED = 1,
	GPU_MEM_OPS = 3,
	HPE = 4,
	MPICH_IMPL = 5,
	CXI = 6
};
typedef enum MPIS_Queue_type MPIS_Queue_type;

/* The queue that MPIS_Imatch and MPIS_Wait use (the last one created). */
extern MPIS_Queue ACTIVE_QUEUE;

void MPIS_Hello_world(void);

/* Queue management */
int MPIS_Queue_free(MPIS_Queue *queue);
int MPIS_Queue_init(MPIS_Queue *queue, MPIS_Queue_type type, void *extra);
int MPIS_Queue_wait(MPIS_Queue queue);

/* Push work to a queue */
int MPIS_Enqueue_startall(MPIS_Queue queue, int n, MPIS_Request reqs[]);
int MPIS_Enqueue_start(MPIS_Queue queue, MPIS_Request *req);
int MPIS_Enqueue_waitall(MPIS_Queue queue);

/* Matching */
int MPIS_Match(MPIS_Request *req, MPI_Status *status);
int MPIS_Matchall(int n, MPIS_Request reqs[], MPI_Status *statuses);
int MPIS_Imatch(MPIS_Request *req, MPIS_Request *match_req);
int MPIS_Is_matched(MPIS_Request *req, int *flag);
int MPIS_Queue_match(MPIS_Queue queue, MPIS_Request *req, MPI_Status *status);

/* Requests */
int MPIS_Request_free(MPIS_Request *req);
int MPIS_Request_freeall(int n, MPIS_Request reqs[]);
int MPIS_Wait(MPIS_Request *req, MPI_Status *status);
int MPIS_Waitall(int n, MPIS_Request reqs[], MPI_Status *statuses);

/* Persistent operations */
int MPIS_Barrier_init(MPI_Comm comm, MPI_Info info, MPIS_Request *req);
int MPIS_Allreduce_init(const void *sendbuf, void *recvbuf, int count,
			MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
			MPI_Info info, MPIS_Request *req);
int MPIS_Recv_init(void *buf, MPI_Count count, MPI_Datatype datatype, int src,
		   int tag, MPI_Comm comm, MPI_Info info, MPIS_Request *req);
int MPIS_Send_init(const void *buf, MPI_Count count, MPI_Datatype datatype,
		   int dest, int tag, MPI_Comm comm, MPI_Info info,
		   MPIS_Request *req);

/*
 * Extension of libcxlmpi (not in the reference): enqueue a host function,
 * run by the queue's progress thread in stream order, as a kernel would be
 * on a GPU stream.
 */
int CXLMPI_Enqueue_host(MPIS_Queue queue, void (*fn)(void *), void *arg);

#ifdef __cplusplus
}
#endif
#endif
