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
 * C and C++: the reference uses the enum name unqualified (C++ only);
 * here MPIS_Queue_type is also a typedef, so that the same program
 * compiles as C or C++. The null objects are `const` objects, as in the
 * reference (not constant expressions: initialise statics with 0).
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

extern const uintptr_t MPIS_QUEUE_NULL;
extern const MPIS_Request MPIS_REQUEST_NULL;

/* Queue (backend) types, the reference's values. THREAD: a host progress
 * thread; GPU_MEM_OPS: operations on a CUDA stream (extra: a pointer to
 * the cudaStream_t). THREAD_SERIALIZED is ours (a THREAD queue); CXI is
 * refused (MPIS_UNSUPPORTED_BEHAVIOR). */
enum MPIS_Queue_type {
	THREAD = 0,
	THREAD_SERIALIZED = 1,
	GPU_MEM_OPS = 3,
	CXI = 4
};
typedef enum MPIS_Queue_type MPIS_Queue_type;
typedef enum MPIS_Queue_type MPS_Queue_type; /* the reference's name */

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
int MPIS_Rsend_init(const void *buf, MPI_Count count, MPI_Datatype datatype,
		    int dest, int tag, MPI_Comm comm, MPI_Info info,
		    MPIS_Request *req);

/*
 * Memory for stream buffers. info must hold "mpi_memory_alloc_kinds":
 * "system" (host memory), "cxl:pool" (the pool, as MPI_Alloc_mem with
 * libcxlmpi) or "cuda:device" (GPU memory, cuMemAlloc); others are
 * refused with MPI_ERR_INFO_VALUE, a missing key with MPI_ERR_INFO_KEY.
 */
int MPIS_Alloc_mem(MPI_Aint size, MPI_Info info, void **baseptr);
int MPIS_Free_mem(void *base);

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
