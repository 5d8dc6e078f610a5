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
	return h->inter_lat_s + t;
}
