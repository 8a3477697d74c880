/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Dist_graph_create (the general form) built from two collectives and
 * the library's MPI_Dist_graph_create_adjacent.
 *
 * Why: MPICH (5.0.2 and its current source) builds the graph by sending
 * every rank its edge lists, then, once per expected list, calling
 * MPI_Probe(MPI_ANY_SOURCE) for the length and MPI_Recv(MPI_ANY_SOURCE)
 * for the data. MPI does not promise that the two match the same message
 * when two senders compete, and in MPICH they do not when one list comes
 * from the rank itself: the self message travels through ch4's
 * shared-memory path, which the probe consults before the network module
 * only once its progress has seen the message, while the receive takes
 * it first. A fast network module (cxl, libfabric shm, sometimes tcp)
 * delivers the peer's list before that, the probe reports the peer's
 * length, the receive takes the self list into a buffer sized for the
 * other, and the graph gets a wrong degree and garbage neighbours
 * (docs/cxlmpi.md, "Distributed graphs").
 *
 * Here every rank learns how many in- and out-edges each other rank
 * sends it (MPI_Alltoall), then receives them all at once
 * (MPI_Alltoallv): nothing is matched by MPI_ANY_SOURCE. Arguments that
 * this code cannot take (an intercommunicator, a negative count, a rank
 * out of range, more edges than an int counts) go to the library
 * unchanged, so that its own error handling reports them.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Per destination rank: how many ints of in-edge and out-edge pairs. */
struct edge_counts {
	int in, out;
};

static bool args_usable(MPI_Comm comm, int size, int n, const int sources[],
			const int degrees[], const int destinations[],
			long *nedges)
{
	int inter = 0;
	long e = 0;

	if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) ||
	    inter || n < 0 || (n > 0 && (!sources || !degrees)))
		return false;
	for (int i = 0; i < n; i++) {
		if (degrees[i] < 0 || sources[i] < 0 || sources[i] >= size)
			return false;
		e += degrees[i];
		if (e > INT_MAX / 4)
			return false;
	}
	if (e > 0 && !destinations)
		return false;
	for (long j = 0; j < e; j++)
		if (destinations[j] < 0 || destinations[j] >= size)
			return false;
	*nedges = e;
	return true;
}

/* Send buffer: for each rank t, the (source, weight) pairs of the edges
 * into t, then the (destination, weight) pairs of the edges out of t. */
static int *pack_edges(int size, int n, const int sources[],
		       const int degrees[], const int destinations[],
		       const int weights[], bool weighted,
		       struct edge_counts *cnt, int *sdispl, int *scount)
{
	int *buf, *fill, total = 0;
	long j = 0;

	memset(cnt, 0, sizeof(*cnt) * (size_t)size);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < degrees[i]; k++, j++) {
			cnt[destinations[j]].in += 2;
			cnt[sources[i]].out += 2;
		}
	for (int t = 0; t < size; t++) {
		sdispl[t] = total;
		scount[t] = cnt[t].in + cnt[t].out;
		total += scount[t];
	}
	buf = malloc(sizeof(int) * (size_t)(total ? total : 1));
	fill = calloc((size_t)size, sizeof(int));
	if (!buf || !fill) {
		free(buf);
		free(fill);
		return NULL;
	}
	j = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < degrees[i]; k++, j++) {
			int d = destinations[j];
			int *in = buf + sdispl[d] + fill[d];

			in[0] = sources[i];
			in[1] = weighted ? weights[j] : 1;
			fill[d] += 2;
		}
	/* the out-pairs for a rank follow all of its in-pairs */
	memset(fill, 0, sizeof(int) * (size_t)size);
	j = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < degrees[i]; k++, j++) {
			int s = sources[i];
			int *out = buf + sdispl[s] + cnt[s].in + fill[s];

			out[0] = destinations[j];
			out[1] = weighted ? weights[j] : 1;
			fill[s] += 2;
		}
	free(fill);
	return buf;
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[],
			  const int degrees[], const int destinations[],
			  const int weights[], MPI_Info info, int reorder,
			  MPI_Comm *newcomm)
{
	int size, rc, indeg = 0, outdeg = 0;
	long nedges = 0;
	bool weighted = weights != MPI_UNWEIGHTED;
	struct edge_counts *scnt = NULL, *rcnt = NULL;
	int *sdispl = NULL, *scount = NULL, *rdispl = NULL, *rcount = NULL;
	int *sbuf = NULL, *rbuf = NULL, *in = NULL, *inw = NULL, *out = NULL,
	    *outw = NULL;
	long rtotal = 0;

	if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS ||
	    !args_usable(comm, size, n, sources, degrees, destinations,
			 &nedges) ||
	    (weighted && nedges > 0 &&
	     (!weights || weights == MPI_WEIGHTS_EMPTY)))
		return PMPI_Dist_graph_create(comm, n, sources, degrees,
					      destinations, weights, info,
					      reorder, newcomm);
	scnt = malloc(sizeof(*scnt) * (size_t)size);
	rcnt = malloc(sizeof(*rcnt) * (size_t)size);
	sdispl = malloc(sizeof(int) * (size_t)size);
	scount = malloc(sizeof(int) * (size_t)size);
	rdispl = malloc(sizeof(int) * (size_t)size);
	rcount = malloc(sizeof(int) * (size_t)size);
	rc = MPI_ERR_NO_MEM;
	if (!scnt || !rcnt || !sdispl || !scount || !rdispl || !rcount)
		goto done;
	sbuf = pack_edges(size, n, sources, degrees, destinations, weights,
			  weighted, scnt, sdispl, scount);
	if (!sbuf)
		goto done;
	/* weighted or not is each rank's own word, as in MPICH (MPI
	 * requires the ranks to agree) */
	rc = PMPI_Alltoall(scnt, 2, MPI_INT, rcnt, 2, MPI_INT, comm);
	if (rc != MPI_SUCCESS)
		goto done;
	for (int t = 0; t < size; t++) {
		rdispl[t] = (int)rtotal;
		rcount[t] = rcnt[t].in + rcnt[t].out;
		rtotal += rcount[t];
		indeg += rcnt[t].in / 2;
		outdeg += rcnt[t].out / 2;
		if (rtotal > INT_MAX / 2) {
			rc = MPI_ERR_COUNT;
			goto done;
		}
	}
	rc = MPI_ERR_NO_MEM;
	rbuf = malloc(sizeof(int) * (size_t)(rtotal ? rtotal : 1));
	in = malloc(sizeof(int) * (size_t)(indeg ? indeg : 1));
	inw = malloc(sizeof(int) * (size_t)(indeg ? indeg : 1));
	out = malloc(sizeof(int) * (size_t)(outdeg ? outdeg : 1));
	outw = malloc(sizeof(int) * (size_t)(outdeg ? outdeg : 1));
	if (!rbuf || !in || !inw || !out || !outw)
		goto done;
	rc = PMPI_Alltoallv(sbuf, scount, sdispl, MPI_INT, rbuf, rcount, rdispl,
			    MPI_INT, comm);
	if (rc != MPI_SUCCESS)
		goto done;
	/* neighbours in rank order of the sender, each sender's edges in
	 * the order it gave them */
	indeg = outdeg = 0;
	for (int t = 0; t < size; t++) {
		const int *p = rbuf + rdispl[t];

		for (int k = 0; k < rcnt[t].in; k += 2, indeg++) {
			in[indeg] = p[k];
			inw[indeg] = p[k + 1];
		}
		p += rcnt[t].in;
		for (int k = 0; k < rcnt[t].out; k += 2, outdeg++) {
			out[outdeg] = p[k];
			outw[outdeg] = p[k + 1];
		}
	}
	rc = PMPI_Dist_graph_create_adjacent(
		comm, indeg, in,
		weighted ? (indeg ? inw : MPI_WEIGHTS_EMPTY) : MPI_UNWEIGHTED,
		outdeg, out,
		weighted ? (outdeg ? outw : MPI_WEIGHTS_EMPTY) : MPI_UNWEIGHTED,
		info, reorder, newcomm);
done:
	free(scnt);
	free(rcnt);
	free(sdispl);
	free(scount);
	free(rdispl);
	free(rcount);
	free(sbuf);
	free(rbuf);
	free(in);
	free(inw);
	free(out);
	free(outw);
	/* our own failures go to the communicator's error handler, as the
	 * library's would; the collectives' have been through it already */
	if (rc == MPI_ERR_NO_MEM || rc == MPI_ERR_COUNT)
		PMPI_Comm_call_errhandler(comm, rc);
	return rc;
}
