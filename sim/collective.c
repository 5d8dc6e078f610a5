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

/* Per-step latency of NCCL's Simple protocol (src/graph/tuning.cc, hwLat): 3.4 µs for a ring
 * step over NVLink, 14 µs for a ring or tree step over the network. */
#define STEP_NVL_S 3.4e-6
#define STEP_NET_S 14e-6

double coll_step_latency(enum coll c, int n, int nodes)
{
	if (n <= 1 || nodes <= 1 || c == COLL_ALLTOALL || c == COLL_SENDRECV)
		return 0;
	if (nodes > n) nodes = n;
	/* ring: 2(n−1) steps for all-reduce, n−1 for reduce-scatter / all-gather, of which
	 * 2(k−1) resp. k−1 cross the network; the tree (all-reduce only) climbs and descends
	 * log2 k network levels after (n/k − 1) NVLink steps on each side (NCCL
	 * src/graph/tuning.cc: ring (nsteps−nInterSteps)·intraLat + nInterSteps·interLat, tree
	 * 2·((nRanks/nNodes−1)·intraLat + log2(nNodes)·interLat); model.md §3.1: take the min).
	 * NCCL has no tree for all-gather / reduce-scatter, so their latency stays linear in n. */
	double ph = c == COLL_ALLREDUCE ? 2 : 1, k = nodes;
	double inter = ph * (k - 1), steps = ph * (n - 1);
	double t = (steps - inter) * STEP_NVL_S + inter * STEP_NET_S;
	if (c == COLL_ALLREDUCE) {
		double tree = 2 * (((double)n / k - 1) * STEP_NVL_S + log2(k) * STEP_NET_S);
		if (tree < t) t = tree;
	}
	return t;
}

double coll_time(const struct hw *h, enum coll c, double bytes, int n, int nodes)
{
	if (n <= 1 || bytes <= 0)
		return 0;
	double intra = h->intra_bw_bps * h->comm_eff, inter = h->inter_bw_bps * h->comm_eff;
	double f = coll_busbw_factor(c, n);
	if (c == COLL_SENDRECV)
		return h->inter_lat_s * (nodes > 1) + h->intra_lat_s * (nodes <= 1) + bytes / (nodes > 1 ? inter : intra);
	if (nodes <= 1)
		return h->intra_lat_s + bytes * f / intra;
	/* Across k nodes a hierarchical (2D) algorithm moves the bus traffic over NVLink and only
	 * the (k−1)/(n−1) share of it over each GPU's NIC [NCCL24; ecosystem.md §1.2: per-GPU NIC
	 * rate = busbw·(k−1)/(n−1)]; the two phases run one after the other. With one GPU per node
	 * this is the plain ring over the NICs. */
	double k = nodes, share = (k - 1) / (n - 1);
	double t = bytes * f * (share / inter + (n > k ? 1 / intra : 0));
	if (c == COLL_ALLTOALL) /* no reduction tree: every byte for another node crosses a NIC */
		t = bytes * f * ((k - 1) / k / inter + 1 / k / intra);
	/* the profile's latency is the fixed cost of one collective as frameworks issue it; the
	 * ring/tree steps across nodes come on top (within a node it already holds the ≤ 7 NVLink
	 * steps it was fitted on) */
	double steps = h->inter_lat_s > 0 ? coll_step_latency(c, n, nodes) : 0; /* none on an ideal fabric */
	return h->inter_lat_s + steps + t;
}
