/* cuda_shard — CUDA twins of kernels/cpu_shard.h (the vocabulary-parallel loss pieces and the
 * fill), each in an fp32 and a bf16 form for the two CUDA rows of kernels/backend.h: the same
 * arguments in the same order (device pointers) and a stream last. Logits and their gradients
 * are fp32 (_f32) or bf16 (_bf16) activations; maxima, sums, losses and lse fp32 on both.
 *
 * Ownership: the caller owns every buffer; nothing allocates. Units: elements.
 * Invariant: one block per row; sums run in fp32 in a fixed tree order (deterministic), so
 * the results match the CPU reference, which sums in double, to fp32 rounding of the sum. */
#ifndef SCALEPLAN_KERNELS_CUDA_SHARD_H
#define SCALEPLAN_KERNELS_CUDA_SHARD_H

#include <stddef.h>
#include "kernels/cuda_bf16.h"

#ifdef __cplusplus
extern "C" {
#endif

void cuda_ce_shard_max_f32(float *mx, const float *logits, int N, int V, cudaStream_t s);
void cuda_ce_shard_max_bf16(float *mx, const bf16_t *logits, int N, int V, cudaStream_t s);
void cuda_ce_shard_sums_f32(float *sums, float *maxima, const float *logits, const int *targets, int N, int V,
                            int v0, int tp, cudaStream_t s);
void cuda_ce_shard_sums_bf16(float *sums, float *maxima, const bf16_t *logits, const int *targets, int N, int V,
                             int v0, int tp, cudaStream_t s);
void cuda_ce_shard_loss(float *losses, float *lse, const float *maxima, const float *sums, const int *targets, int N,
                        cudaStream_t s);
void cuda_ce_shard_backward_f32(float *dlogits, const float *logits, const float *lse, const int *targets,
                                float dloss, int N, int V, int v0, cudaStream_t s);
void cuda_ce_shard_backward_bf16(bf16_t *dlogits, const bf16_t *logits, const float *lse, const int *targets,
                                 float dloss, int N, int V, int v0, cudaStream_t s);
void cuda_fill_f32(float *p, size_t n, float value, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
