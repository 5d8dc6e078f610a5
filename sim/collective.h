/* collective — time of one NCCL-style collective on a fabric tier, from nccl-tests' bus
 * bandwidth convention [NCCLT]: t = S · factor(n) / busbw + latency, with S the nccl-tests size
 * (all-reduce: the buffer; all-gather / reduce-scatter: the whole gathered array; all-to-all:
 * count·n·sizeof). Latency is the smaller of a ring ((n−1)·α per phase) and a tree
 * (2·log2 n·α) [NCCL24] — model.md §3.1 (derived). Seconds and bytes. */
#ifndef SCALEPLAN_COLLECTIVE_H
#define SCALEPLAN_COLLECTIVE_H

struct hw;

enum coll { COLL_ALLREDUCE, COLL_REDUCESCATTER, COLL_ALLGATHER, COLL_ALLTOALL, COLL_SENDRECV, COLL_COUNT };

/* busbw factor: all-reduce 2(n−1)/n; reduce-scatter, all-gather, all-to-all (n−1)/n;
 * send/recv 1 [NCCLT] (TV-N1). */
double coll_busbw_factor(enum coll c, int n);

/* Time of collective c over n ranks spanning `nodes` nodes, moving S bytes (nccl-tests size). */
double coll_time(const struct hw *h, enum coll c, double bytes, int n, int nodes);

/* Step latency of collective c over n ranks on `nodes` nodes (0 within one node): NCCL's ring
 * (n−1 steps per phase, the network ones slower) or, for all-reduce, the tree when shorter. */
double coll_step_latency(enum coll c, int n, int nodes);

const char *coll_name(enum coll c);

#endif
