/* dp — data-parallel gradient reduction over one flat fp32 gradient buffer, in buckets whose
 * collectives start from backward as soon as each bucket's last gradient is marked ready, so
 * communication overlaps the rest of backward (PyTorch DDP / Megatron DDP; model.md §3.2).
 * ZeRO-0 all-reduces each bucket in place; ZeRO-1/2 reduce-scatter it into this rank's
 * gradient shard. Results are averaged over the group (the dp*cp group: CP ranks hold the
 * same parameters and see different tokens, model.md §3.2 "CP gradients").
 *
 * Flat index space: parameters 0..nparams, padded to dp_padded() so that every bucket's
 * length is a multiple of the group size n under reduce-scatter. Bucket b covers
 * [off, off+len); this rank's shard of it is [off + rank*len/n, +len/n) in the flat space and
 * [shard_off, +len/n) in the shard buffer, which concatenates the rank's shards of all buckets
 * (Megatron's distributed optimizer shards each bucket the same way).
 *
 * Ownership: the caller owns the gradient and shard buffers (dp_padded() and dp_shard_len()
 * elements) and must not touch them between dp_begin() and dp_finish(); dp owns its requests.
 * Invariant: buckets start in one fixed order, from the end of the buffer to its start (the
 * order backward produces gradients in), whatever order the marks come in, so every rank
 * issues the same collectives in the same order. */
#ifndef SCALEPLAN_DP_H
#define SCALEPLAN_DP_H

#include <stddef.h>
#include "kernels/backend.h"
#include "runtime/comm.h"

struct dp_bucket {
	size_t off, len;        /* flat index range; len is padded on the last bucket */
	size_t shard_off;       /* start of this rank's shard in the shard buffer */
};

struct dp_cfg {
	size_t bucket_params;   /* 0 = Megatron's max(40e6, 1e6*dp) (model.md TV-G4) */
	int reduce_scatter;     /* 0: all-reduce (ZeRO-0); 1: reduce-scatter (ZeRO-1/2) */
	int no_average;         /* 1: sum instead of mean */
	struct kern *k;         /* backend of the gradient buffers (borrowed); NULL: host memory */
};

struct dp;

/* Megatron DDP default bucket size in parameters: max(40e6, 1e6*dp) [MCODE-ddp], TV-G4. */
size_t dp_default_bucket_params(int dp);

int dp_create(struct comm *group, size_t nparams, const struct dp_cfg *cfg, struct dp **out, char *err);
void dp_destroy(struct dp *d);

size_t dp_padded(const struct dp *d);     /* flat buffer length to allocate */
size_t dp_shard_len(const struct dp *d);  /* shard buffer length (reduce-scatter) */
int dp_nbuckets(const struct dp *d);
const struct dp_bucket *dp_bucket(const struct dp *d, int i);
struct comm *dp_group(const struct dp *d);

/* Arms one reduction. grads: dp_padded() elements (the padding is zeroed here); shard:
 * dp_shard_len() elements for reduce-scatter, NULL for all-reduce. accumulate = 1 adds the
 * averaged result to shard instead of overwriting it (ZeRO-2 reduces every micro-batch). */
int dp_begin(struct dp *d, float *grads, float *shard, int accumulate, char *err);
/* Backward's hook: grads[off, off+count) are final. Starts every bucket that became complete
 * (in the fixed order) and lets in-flight ones progress. Marking an element twice is an error. */
int dp_grad_ready(struct dp *d, size_t off, size_t count, char *err);
/* Waits for every bucket and averages; fails if some gradient was never marked. */
int dp_finish(struct dp *d, char *err);
/* Buckets started so far in this reduction (how much overlapped backward). */
int dp_started(const struct dp *d);

#endif
