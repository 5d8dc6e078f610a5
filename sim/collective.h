/* collective — time of one NCCL collective on the fabric tiers of a hardware profile, the way
 * NCCL prices it itself: for every algorithm (ring, tree, NVLS, PAT) and protocol (LL,
 * LL128, Simple) NCCL offers for the operation and the group's span, a latency (base + hops
 * by link kind) plus the bus traffic S·factor(n) over the protocol's share of the bandwidth;
 * the smallest wins (src/graph/tuning.cc; the constants are profiles/comm/nccl.json).
 *
 * S is the nccl-tests size (all-reduce: the buffer; all-gather / reduce-scatter: the whole
 * gathered array; all-to-all: count·n·sizeof). A ring across nodes is pipelined: every link
 * carries its share at once, so the slower of the NVLink share and the network share (the
 * (k−1)/(n−1) of hops that leave a node, over the GPU's NIC, the slowest network tier
 * crossed) sets the time [nccl-tests#309: 8 NICs per node bound the multi-node ring at 8 NIC
 * rates]. Seconds and bytes. */
#ifndef SCALEPLAN_COLLECTIVE_H
#define SCALEPLAN_COLLECTIVE_H

#include "sim/coll.h"
#include "sim/hw.h"

/* Where a group sits: n members touching units[t] distinct units of fabric tier t
 * (units[0]: NVLink domains, i.e. nodes; the last tier's unit is the whole cluster). */
struct span {
	int n;
	int units[HW_MAX_TIERS];
};

/* A group of n ranks over `nodes` NVLink domains, all in one unit of every higher tier. */
struct span span_nodes(int n, int nodes);

/* busbw factor: all-reduce 2(n−1)/n; reduce-scatter, all-gather, all-to-all (n−1)/n;
 * send/recv 1 [NCCLT] (TV-N1). */
double coll_busbw_factor(enum coll c, int n);

/* Time of collective c moving S bytes (nccl-tests size) over the group g. */
double coll_time(const struct hw *h, enum coll c, double bytes, const struct span *g);

/* The algorithm (ALGO_*) NCCL's cost model picks for it; ALGO_P2P for send/recv and
 * all-to-all. With NCCL_RUNTIME_CONNECT (the default since 2.22) a communicator connects an
 * algorithm's peers, and allocates their buffers, at the first collective that uses it. */
int coll_algo(const struct hw *h, enum coll c, double bytes, const struct span *g);

/* The candidates NCCL's cost model weighs for one collective over one group, each a line in
 * the message size (base + bytes·per_byte), kept so that a caller pricing many messages on the
 * same group derives them once: coll_time is coll_fit_init then coll_fit_time. */
struct coll_fit {
	enum coll c;
	struct span g;
	int table;                  /* a measured table of the profile applies (one NVLink domain) */
	int n;
	int ramp;                   /* one NVLink domain of a profile with a measured curve (struct hw_coll_curve) */
	double lat;                 /* the smallest base: the time of the smallest message */
	double busf;                /* coll_busbw_factor(c, n): bus bytes per message byte */
	signed char algo[ALGO_COUNT * PROTO_COUNT];
	double base[ALGO_COUNT * PROTO_COUNT], per_byte[ALGO_COUNT * PROTO_COUNT];
};
void coll_fit_init(const struct hw *h, enum coll c, const struct span *g, struct coll_fit *f);
/* what coll_algo reports when nothing is priced (one rank, an empty message, a measured table) */
static inline int coll_default_algo(enum coll c)
{
	return c == COLL_SENDRECV || c == COLL_ALLTOALL ? ALGO_P2P : ALGO_RING;
}
/* the time of the candidate NCCL picks for `bytes`, and its algorithm (as coll_algo) */
double coll_fit_time(const struct hw *h, const struct coll_fit *f, double bytes, int *algo);

/* Its latency alone: the time of the smallest message (one element). */
double coll_latency(const struct hw *h, enum coll c, const struct span *g);

/* Per-GPU bandwidths the group sees, bytes/s after comm_eff: inside its NVLink domain, and
 * over the network (the slowest network tier it crosses; the NVLink one when it crosses none). */
void coll_bandwidths(const struct hw *h, const struct span *g, double *nvl_bps, double *net_bps);

/* Loads the cost model of a collective library (profiles/comm/NAME.json, built in). */
int coll_lib_load(const char *name, struct coll_lib *lib, char *err);

const char *coll_name(enum coll c);

#endif
