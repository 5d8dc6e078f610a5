/* cpu_shard — reference kernels of the parallel runtime's own steps, the pieces that
 * runtime/tp.c and runtime/cp.c run between their collectives: the vocabulary-parallel
 * softmax cross-entropy (Megatron-LM's vocab_parallel_cross_entropy, Shoeybi et al. 2019,
 * §3) cut into a local max, local sums against the global max, and the loss; its backward on
 * one vocabulary shard; a strided copy of rows; a fill. They are the CPU row's entries of the
 * same names in kernels/backend.h and the specification of the CUDA rows' ones.
 *
 * Pointers marked "activations" are fp32 here (the CPU row); maxima, sums, losses and lse are
 * fp32 statistics on every row. Ownership: the caller owns every buffer. Units: elements.
 * Invariant: composed over a vocabulary split into tp shards, with the maxima gathered and
 * the sums added between the steps, the loss and lse are crossentropy_forward's over the
 * whole vocabulary up to the order of the additions (targets < 0: loss 0, lse 0). */
#ifndef SCALEPLAN_KERNELS_CPU_SHARD_H
#define SCALEPLAN_KERNELS_CPU_SHARD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* mx[i] = max_v logits[i, v] over the shard's V columns (activations (N, V)). */
void ce_shard_max(float *mx /* (N) */, const float *logits, int N, int V);
/* maxima (tp, N) holds every shard's maxima, shard q's at q·N; on return maxima[0, N) is the
 * global max of each row; sums[i] = Σ_v exp(z[i, v] - max_i) over this shard (in double,
 * rounded once) and sums[N + i] = z[i, target_i - v0] when the target is in this shard's
 * [v0, v0 + V), 0 otherwise (and for targets < 0). */
void ce_shard_sums(float *sums /* (2, N) */, float *maxima /* (tp, N) */, const float *logits, const int *targets,
                   int N, int V, int v0, int tp);
/* With sums added over the shards: lse = max + log(Σ exp), loss = lse - z_target. */
void ce_shard_loss(float *losses /* (N) */, float *lse /* (N) */, const float *maxima /* (N) global */,
                   const float *sums /* (2, N) */, const int *targets, int N);
/* dlogits = dloss · (softmax - onehot) on the shard's columns (lse global); dlogits may alias
 * logits; rows with targets < 0 are zero. */
void ce_shard_backward(float *dlogits, const float *logits, const float *lse, const int *targets, float dloss,
                       int N, int V, int v0);
/* dst[r·ld_dst + c] = src[r·ld_src + c] for r < rows, c < width (activations; no overlap). */
void act_copy_rows(float *dst, size_t ld_dst, const float *src, size_t ld_src, size_t rows, size_t width);
/* p[i] = value for i < n (fp32). */
void fill_f32(float *p, size_t n, float value);

#ifdef __cplusplus
}
#endif

#endif
