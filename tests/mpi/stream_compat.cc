// SPDX-License-Identifier: BSD-3-Clause
//
// A program written the way programs for mpi-advance/stream-triggering are
// (C++, its header name, unqualified queue-type enumerators, the
// THREAD queue with an opaque stream pointer, MPIS_Matchall then
// Enqueue_startall / Enqueue_waitall / Queue_wait, a persistent allreduce
// matched on the queue), compiled unchanged against libcxlmpi's header
// and run on the pool. Prints "stream_compat: N checks, M bad".
#include <iostream>
#include <vector>

#include "stream-triggering.h"

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, size = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const int right = (rank + 1) % size, left = (rank + size - 1) % size;

	int dummy_stream = 0;
	MPIS_Queue my_queue;
	MPIS_Queue_type type = THREAD;
	int checks = 0, bad = 0;
	auto check = [&](bool ok, const char *what) {
		checks++;
		if (!ok) {
			bad++;
			std::cerr << rank << ": " << what << std::endl;
		}
	};
	check(MPIS_Queue_init(&my_queue, type, &dummy_stream) == MPIS_SUCCESS,
	      "queue init");

	const int n = 256;
	std::vector<int> send_buf(n), recv_buf(n);
	MPIS_Request my_reqs[2];
	MPIS_Recv_init(recv_buf.data(), n, MPI_INT, left, 0, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &my_reqs[0]);
	MPIS_Send_init(send_buf.data(), n, MPI_INT, right, 0, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &my_reqs[1]);
	MPIS_Matchall(2, my_reqs, MPI_STATUSES_IGNORE);
	int matched = 0;
	MPIS_Is_matched(&my_reqs[1], &matched);
	check(matched == 1, "matched");

	int sum_in = rank, sum_out = -1;
	MPIS_Request coll;
	MPIS_Allreduce_init(&sum_in, &sum_out, 1, MPI_INT, MPI_SUM,
			    MPI_COMM_WORLD, MPI_INFO_NULL, &coll);
	MPIS_Queue_match(my_queue, &coll, MPI_STATUS_IGNORE);

	for (int iter = 0; iter < 10; iter++) {
		for (int i = 0; i < n; i++)
			send_buf[i] = rank * 100000 + iter * n + i;
		MPIS_Enqueue_startall(my_queue, 2, my_reqs);
		MPIS_Enqueue_start(my_queue, &coll);
		MPIS_Enqueue_waitall(my_queue);
		MPIS_Queue_wait(my_queue);
		bool ok = true;
		for (int i = 0; i < n; i++)
			ok = ok && recv_buf[i] == left * 100000 + iter * n + i;
		check(ok, "halo data");
		check(sum_out == size * (size - 1) / 2, "allreduce");
	}

	MPIS_Request_freeall(2, my_reqs);
	MPIS_Request_free(&coll);
	MPIS_Queue_free(&my_queue);
	check(my_queue == MPIS_QUEUE_NULL && ACTIVE_QUEUE == MPIS_QUEUE_NULL,
	      "queue freed");

	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		std::cout << "stream_compat: " << checks << " checks, " << bad
			  << " bad" << std::endl;
	MPI_Finalize();
	return bad ? 1 : 0;
}
