/* SPDX-License-Identifier: BSD-3-Clause */
/* ring_bench's output: the tables per mode and size, the coherence
 * target, and the CSV rows. */
#include "ring_bench.h"

const char csv_header[] =
	"mode,insn,size_bytes,cell_bytes,pingpong_oneway_us,"
	"stream_msgs_per_s,stream_MB_per_s,send_flush_lines_per_msg,"
	"send_fences_per_msg,send_nt_loads_per_msg,send_full_per_msg,"
	"recv_inval_lines_per_msg,recv_fences_per_msg,"
	"recv_nt_stores_per_msg,polls_per_msg,poll_inval_lines_per_msg,"
	"poll_fences_per_msg,poll_nt_stores_per_msg,"
	"pp_flush_lines_per_rt,pp_inval_lines_per_rt,pp_fences_per_rt,"
	"pp_nt_stores_per_rt,pp_polls_per_rt\n";

static double per(uint64_t v, uint64_t n)
{
	return n ? (double)v / (double)n : 0;
}

void csv_row(FILE *f, const struct mode_run *mr, const struct plan *pl,
	     const struct result *r)
{
	uint64_t m = pl->st_msgs, rt = (uint64_t)pl->pp_batches * pl->pp_rounds;

	fprintf(f,
		"%s,%s,%u,%u,%.4f,%.1f,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,"
		"%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n",
		cxl_coh_mode_name(mr->mode), mr->insn, r->size, r->cell,
		r->lat_us, r->rate, r->rate * r->size / 1e6,
		per(r->send.flush_lines, m), per(r->send.fences, m),
		per(r->send.nt_loads, m), per(r->send_full, m),
		per(r->recv.inval_lines, m), per(r->recv.fences, m),
		per(r->recv.nt_stores, m), per(r->polls, m),
		per(r->poll.inval_lines, m), per(r->poll.fences, m),
		per(r->poll.nt_stores, m), per(r->pp.flush_lines, rt),
		per(r->pp.inval_lines, rt), per(r->pp.fences, rt),
		per(r->pp.nt_stores, rt), per(r->pp_polls, rt));
}

/* ---- output -------------------------------------------------------------- */

typedef void (*cell_fn)(char *buf, size_t cap, const struct result *r,
			const struct plan *pl);

struct table {
	const char *head; /* sub-heading under each mode */
	int width;
	cell_fn cell;
};

static void cell_lat(char *buf, size_t cap, const struct result *r,
		     const struct plan *pl)
{
	(void)pl;
	snprintf(buf, cap, "%8.2f", r->lat_us);
}

static void cell_rate(char *buf, size_t cap, const struct result *r,
		      const struct plan *pl)
{
	(void)pl;
	snprintf(buf, cap, "%7.3f %8.1f", r->rate / 1e6,
		 r->rate * r->size / 1e6);
}

static void cell_coh(char *buf, size_t cap, const struct result *r,
		     const struct plan *pl)
{
	uint64_t m = pl->st_msgs;

	snprintf(buf, cap, "%5.2f/%4.2f  %5.2f/%4.2f/%5.3f",
		 per(r->send.flush_lines, m), per(r->send.fences, m),
		 per(r->recv.inval_lines, m), per(r->recv.fences, m),
		 per(r->recv.nt_stores, m));
}

static void cell_poll(char *buf, size_t cap, const struct result *r,
		      const struct plan *pl)
{
	uint64_t m = pl->st_msgs;

	snprintf(buf, cap, "%6.1f %6.1f/%5.1f/%5.3f", per(r->polls, m),
		 per(r->poll.inval_lines, m), per(r->poll.fences, m),
		 per(r->poll.nt_stores, m));
}

static void cell_pp(char *buf, size_t cap, const struct result *r,
		    const struct plan *pl)
{
	uint64_t rt = (uint64_t)pl->pp_batches * pl->pp_rounds;

	snprintf(buf, cap, "%6.2f/%6.1f/%6.1f/%5.3f %6.1f",
		 per(r->pp.flush_lines, rt), per(r->pp.inval_lines, rt),
		 per(r->pp.fences, rt), per(r->pp.nt_stores, rt),
		 per(r->pp_polls, rt));
}

/* Rows: sizes; columns: the modes measured. */
static void print_table(const struct bench *bx, const struct table *t)
{
	char buf[64];

	printf(" size  cell");
	for (unsigned m = 0; m < bx->nruns; m++)
		if (bx->runs[m].done)
			printf(" | %*s", t->width,
			       cxl_coh_mode_name(bx->runs[m].mode));
	printf("\n%11s", "bytes");
	for (unsigned m = 0; m < bx->nruns; m++)
		if (bx->runs[m].done)
			printf(" | %*s", t->width, t->head);
	printf("\n");
	for (size_t i = 0; i < NSIZES; i++) {
		printf("%5u %5u", sizes[i], cell_for(sizes[i]));
		for (unsigned m = 0; m < bx->nruns; m++) {
			if (!bx->runs[m].done)
				continue;
			t->cell(buf, sizeof(buf), &bx->runs[m].res[i], bx->pl);
			printf(" | %*s", t->width, buf);
		}
		printf("\n");
	}
}

/*
 * The design target, checked against the measured counts of flush mode:
 * a message of up to TARGET_MSG bytes costs the sender at most 2 flushed
 * lines and 1 fence, the receiver at most 2 invalidated lines and 1
 * fence, plus 1 NT store and 1 fence per HEAD_BATCH messages (head). The
 * sender may add 1 uncached head load and its fence per HEAD_BATCH
 * messages (it refreshes its view of the head when the ring looks full;
 * the consumer publishes every HEAD_BATCH). Refused sends and empty
 * receives are polls, reported apart.
 */
static void print_target(const struct bench *bx)
{
	const struct mode_run *mr = NULL;
	uint64_t m = bx->pl->st_msgs;
	uint64_t heads = (m + HEAD_BATCH - 1) / HEAD_BATCH;
	double w[5] = { 0 }; /* worst per message */
	char bad[256] = "";
	size_t nb = 0;

	for (unsigned i = 0; i < bx->nruns; i++)
		if (bx->runs[i].mode == CXL_COH_FLUSH && bx->runs[i].done)
			mr = &bx->runs[i];
	printf("\ntarget (flush mode, messages of 0..%u B): send <= 2 "
	       "flushed lines + 1 fence; receive <= 2 invalidated lines + 1 "
	       "fence, plus 1 NT store + 1 fence per %u messages (head "
	       "publication), and the sender 1 uncached head load + 1 fence "
	       "per %u; refused sends and empty receives excluded\n",
	       TARGET_MSG, HEAD_BATCH, HEAD_BATCH);
	if (!mr) {
		printf("target: not checked: flush mode was not measured; "
		       "run with --mode flush on a CPU with clflush\n");
		return;
	}
	for (size_t i = 0; i < NSIZES && sizes[i] <= TARGET_MSG; i++) {
		const struct result *r = &mr->res[i];
		const double v[5] = {
			per(r->send.flush_lines, m), per(r->send.fences, m),
			per(r->recv.inval_lines, m), per(r->recv.fences, m),
			per(r->recv.nt_stores, m),
		};

		for (int j = 0; j < 5; j++)
			w[j] = v[j] > w[j] ? v[j] : w[j];
		if (r->send.flush_lines > 2 * m ||
		    r->send.fences > m + r->send.nt_loads ||
		    r->send.nt_loads > heads || r->recv.inval_lines > 2 * m ||
		    r->recv.fences > m + r->recv.nt_stores ||
		    r->recv.nt_stores > heads)
			nb += (size_t)snprintf(bad + nb, sizeof(bad) - nb,
					       " %u B", r->size);
	}
	printf("target: %s in the measured counts (worst per message: send "
	       "%.2f lines, %.2f fences; receive %.2f lines, %.3f fences, "
	       "%.3f NT stores)%s%s\n",
	       bad[0] ? "DOES NOT HOLD" : "HOLDS", w[0], w[1], w[2], w[3], w[4],
	       bad[0] ? "; exceeded at:" : "", bad);
}

void print_results(const struct bench *bx)
{
	const struct plan *pl = bx->pl;
	/* sub-headings line up with the cells' printf formats */
	static const struct table t_lat = { "us", 8, cell_lat };
	static const struct table t_rate = { " Mmsg/s     MB/s", 16,
					     cell_rate };
	static const struct table t_coh = { "   fl/  fe     in/  fe/   nt", 28,
					    cell_coh };
	static const struct table t_poll = { " polls     in/   fe/   nt", 25,
					     cell_poll };
	static const struct table t_pp = { "    fl/    in/    fe/   nt  polls",
					   33, cell_pp };

	printf("\nping-pong one-way latency, us (round trip / 2, median of "
	       "%u batches of %u round trips)\n",
	       pl->pp_batches, pl->pp_rounds);
	print_table(bx, &t_lat);
	printf("\nstreaming host 0 -> host 1: %u messages back to back, "
	       "timed until host 1 acknowledges the last\n",
	       pl->st_msgs);
	print_table(bx, &t_rate);
	printf("\ncoherence operations per message, streaming (measured "
	       "counter deltas / %u messages)\n"
	       "each cell: send fl/fe (host 0's accepted sends), then recv "
	       "in/fe/nt (host 1's\nrecv calls that returned a message); "
	       "fl = flushed lines, in = invalidated lines,\nfe = fences, "
	       "nt = non-temporal stores (head publications)\n",
	       pl->st_msgs);
	print_table(bx, &t_coh);
	printf("\nempty polls of the streaming receiver, per message "
	       "received: recv calls that found\nno message, and the "
	       "coherence operations they cost (not in the table above)\n");
	print_table(bx, &t_poll);
	printf("\ncoherence operations per round trip, ping-pong (both "
	       "hosts, whole timed loop,\nempty polls included; polls = "
	       "recv calls that found no message)\n");
	print_table(bx, &t_pp);
	print_target(bx);
}
