/* zero — data-parallel training state over a flat fp32 parameter buffer: ZeRO stages 0-2
 * (zero_*) on top of runtime/dp.h's bucketed reduction, and ZeRO-3 (zero3_*) which keeps only
 * this rank's shard of the parameters and gathers one unit (e.g. a layer) at a time
 * (Rajbhandari et al., SC20, §5; model.md §2.1, §2.4, §3.2). The optimizer is AdamW
 * (runtime/optim.h) on whatever part a rank owns.
 *
 *   stage 0  all-reduce gradients; every rank updates all parameters (m, v full size)
 *   stage 1  reduce-scatter gradients once per step; each rank updates its shard (m, v shard
 *            size) and all-gathers the updated parameters
 *   stage 2  as 1, but the reduce-scatter runs every micro-batch and accumulates into the
 *            gradient shard, so the full gradient buffer is free again after each backward
 *   stage 3  parameters sharded too: zero3_gather() all-gathers a unit just before use and
 *            prefetches the next one, zero3_release() frees it, zero3_reduce() reduce-scatters
 *            the unit's gradient into the shard
 *
 * Ownership: for stages 0-2 the caller owns the parameter and gradient buffers
 * (zero_padded() elements, padding zero); zero owns the optimizer moments and the gradient
 * shard. For ZeRO-3 zero3 owns everything: the parameter shard, gathered units, unit gradient
 * buffers and moments. Averaging is over the group given at creation (the dp*cp group for
 * dense parameters, the expert-DP group for experts).
 * Invariant: a rank's shard of each bucket/unit is the rank-th of n equal slices, so updating
 * shards and gathering gives bit-for-bit what every rank would get updating everything from
 * the same averaged gradient. */
#ifndef SCALEPLAN_ZERO_H
#define SCALEPLAN_ZERO_H

#include <stddef.h>
#include "runtime/comm.h"
#include "runtime/dp.h"
#include "runtime/optim.h"

/* --- gradient clipping by global norm -------------------------------------------------- */

/* sqrt of local_sq summed over every group in turn. The groups must be orthogonal (as the
 * layout's dp*cp, tp and pp groups are), and each parameter counted on exactly one rank of
 * the product of the groups: sharded gradients over dp*cp; tensor- or pipeline-parallel
 * pieces over tp and pp; parameters replicated across tp counted on one tp rank only. */
int grad_norm_global(double local_sq, struct comm *const *groups, int ngroups, double *norm,
		     char *err);
/* PyTorch clip_grad_norm_ / Megatron clip_grads: coefficient max_norm / (norm + 1e-6),
 * applied when below 1. */
float grad_clip_coef(double norm, float max_norm);
/* g is memory of backend k (kernels/backend.h), which runs the sums and the scaling.
 * Clips g[0..n), the gradients this rank owns, by the global norm over dpg (NULL when every
 * dp rank holds the same gradients) and the `mp` groups; *norm gets the norm before
 * clipping; max_norm <= 0 only measures. */
int grad_clip_global(struct kern *k, float *g, size_t n, struct comm *dpg, struct comm *const *mp, int nmp,
		     float max_norm, double *norm, char *err);

/* Sum of squares of g[0..n), which sit at flat indices flat0.., leaving out elements inside
 * skip[0..nskip) (sorted, disjoint flat ranges). Padding past the real parameters is zero. */
double grad_sq_skip(struct kern *k, const float *g, size_t flat0, size_t n, const struct decay_range *skip, int nskip);
/* grad_clip_global with this rank's sum of squares given. */
int grad_clip_sq(struct kern *k, float *g, size_t n, double sq, struct comm *dpg, struct comm *const *mp, int nmp,
		 float max_norm, double *norm, char *err);

/* --- stages 0, 1, 2 ------------------------------------------------------------------- */

struct zero_cfg {
	int stage;               /* 0, 1 or 2 */
	size_t bucket_params;    /* 0 = Megatron's default (dp.h) */
	struct adamw_cfg opt;
};

struct zero;

int zero_create(struct comm *group, size_t nparams, const struct zero_cfg *cfg, struct zero **out,
		char *err);
void zero_destroy(struct zero *z);
size_t zero_padded(const struct zero *z);      /* length of the caller's params and grads */
struct dp *zero_dp(struct zero *z);
float *zero_grad_shard(struct zero *z);        /* stages 1, 2: dp_shard_len() elements */

/* One gradient reduction: begin, then backward calls zero_grad_ready() (the dp hook) as
 * gradients become final, then finish. Stage 0/1: once per step, after the last micro-batch.
 * Stage 2: after every micro-batch, accumulate = 0 on the first, 1 on the others. */
int zero_reduce_begin(struct zero *z, float *grads, int accumulate, char *err);
int zero_grad_ready(struct zero *z, size_t off, size_t count, char *err);
int zero_reduce_finish(struct zero *z, char *err);

/* Clips the averaged gradients this rank owns (all of them at stage 0, its shard otherwise)
 * to max_norm over the data-parallel group and the `mp` groups (tp, pp; see
 * grad_norm_global); *norm gets the norm before clipping. max_norm <= 0 only measures. */
int zero_clip_grad_norm(struct zero *z, struct comm *const *mp, int nmp, float max_norm,
			double *norm, char *err);
/* As zero_clip_grad_norm, but the flat ranges skip[0..nskip) (sorted, disjoint) are left
 * out of this rank's share of the norm (they are still clipped): tensors another
 * model-parallel rank counts, e.g. TP-replicated ones on TP ranks > 0. */
int zero_clip_grad_norm_skip(struct zero *z, const struct decay_range *skip, int nskip,
			     struct comm *const *mp, int nmp, float max_norm, double *norm, char *err);
/* This rank's share of the squared norm of the averaged gradients it owns, skip[] left out
 * (zero_clip_grad_norm_skip's local term; no communication), and the scaling of those
 * gradients by coef: for one norm over several zero instances (dense and expert groups). */
double zero_grad_sq_skip(const struct zero *z, const struct decay_range *skip, int nskip);
void zero_scale_grads(struct zero *z, float coef);
/* AdamW step on the owned part, then (stages 1, 2) all-gather of the updated parameters. */
int zero_step(struct zero *z, float *params, char *err);

/* Stages 1, 2: when the last zero_step's parameter all-gather started (first bucket) and
 * ended (last wait), on now_s()'s clock; both 0 before any step or at stage 0. */
void zero_last_gather(const struct zero *z, double *start_s, double *end_s);

/* The optimizer state a checkpoint saves: moments of the n owned elements (all of them at
 * stage 0, the shard otherwise; for ZeRO-3 also the parameter shard p) and the AdamW step
 * counter, which a restore may set. Pointers stay owned by zero / zero3. */
struct zero_state {
	float *p;       /* ZeRO-3 parameter shard; NULL for stages 0-2 (the caller owns params) */
	float *m, *v;
	size_t n;
	int *step;
};
int zero_state(struct zero *z, struct zero_state *st);

/* --- stage 3 --------------------------------------------------------------------------- */

struct zero3;

/* Units are consecutive pieces of the flat parameter vector (unit i has unit_params[i]
 * elements); each is padded to a multiple of the group size and sharded. */
int zero3_create(struct comm *group, const size_t *unit_params, int nunits,
		 const struct adamw_cfg *opt, struct zero3 **out, char *err);
void zero3_destroy(struct zero3 *z);
/* Takes this rank's shards of a full parameter vector (sum of unit_params elements). */
int zero3_load(struct zero3 *z, const float *full, char *err);
size_t zero3_shard_len(const struct zero3 *z);
const float *zero3_shard(const struct zero3 *z);

/* Returns the unit's full parameters, all-gathering them unless a prefetch already did, and
 * starts the prefetch of unit + dir (dir = +1 in forward, -1 in backward, 0 none). */
int zero3_gather(struct zero3 *z, int unit, int dir, const float **params, char *err);
/* Frees the unit's gathered parameters (reshard). */
void zero3_release(struct zero3 *z, int unit);
/* A zeroed buffer of the unit's size for its gradient (owned by zero3). */
float *zero3_grad(struct zero3 *z, int unit, char *err);
/* Starts the reduce-scatter of the unit's gradient; the buffer is freed when it completes. */
int zero3_reduce(struct zero3 *z, int unit, char *err);
int zero3_clip_grad_norm(struct zero3 *z, struct comm *const *mp, int nmp, float max_norm,
			 double *norm, char *err);
/* zero_clip_grad_norm_skip's rule for ZeRO-3. */
int zero3_clip_grad_norm_skip(struct zero3 *z, const struct decay_range *skip, int nskip,
			      struct comm *const *mp, int nmp, float max_norm, double *norm, char *err);
/* Waits for every reduction, averages, AdamW on the shard, clears the gradient shard. Every
 * unit must be released first. */
int zero3_step(struct zero3 *z, char *err);
int zero3_state(struct zero3 *z, struct zero_state *st);
/* Where unit `unit` starts in the full (unpadded) parameter vector and its element count;
 * -1 for a unit that does not exist. */
int zero3_unit_flat_off(const struct zero3 *z, int unit, size_t *flat_off, size_t *n);
/* Elements of parameters and gradients currently unsharded, and the most seen so far. */
size_t zero3_live(const struct zero3 *z);
size_t zero3_peak_live(const struct zero3 *z);

#endif
