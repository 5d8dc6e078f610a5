/* collective — α–β cost of collectives per fabric tier. */
#include <math.h>
#include "sim/collective.h"
#include "sim/hw.h"

static const char *const names[COLL_COUNT] = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv"};

const char *coll_name(enum coll c) { return c < COLL_COUNT ? names[c] : "?"; }

double coll_busbw_factor(enum coll c, int n)
{
	if (n <= 1) return 0;
	switch (c) {
	case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
	case COLL_REDUCESCATTER: case COLL_ALLGATHER: case COLL_ALLTOALL: return (double)(n - 1) / n;
	default: return 1;
	}
}

double coll_time(const struct hw *h, enum coll c, double bytes, int n, int nodes)
{
	if (n <= 1 || bytes <= 0)
		return 0;
	int cross = nodes > 1;
	double bw = (cross ? h->inter_bw_bps : h->intra_bw_bps) * h->comm_eff;
	double alpha = cross ? h->inter_lat_s : h->intra_lat_s;
	if (c == COLL_ALLTOALL && cross) {
		/* all-to-all across nodes: the (nodes-1)/nodes share that leaves a node goes through
		 * the NIC, the rest over NVLink */
		double out = (double)(nodes - 1) / nodes;
		double t = bytes * (n - 1) / n * (out / (h->inter_bw_bps * h->comm_eff) +
						  (1 - out) / (h->intra_bw_bps * h->comm_eff));
		return t + (n - 1) * alpha;
	}
	double phases = c == COLL_ALLREDUCE ? 2 : 1;
	double ring = (n - 1) * alpha * phases;
	double tree = 2 * log2((double)n) * alpha * phases;
	if (c == COLL_SENDRECV)
		ring = tree = alpha;
	return bytes * coll_busbw_factor(c, n) / bw + (ring < tree ? ring : tree);
}
