/* cudnn_attention — causal grouped-query attention forward and backward in bf16 through cuDNN's
 * fused flash-attention engines, built with the cuDNN backend (graph) API: each direction is an
 * operation graph of matmuls, pointwise ops (scale, causal mask by generated indices and
 * compare/select, exp, log), reductions (softmax max/sum, the backward's dO·O row sums, the GQA
 * sum over the query heads of a kv head) and reshapes (transposes), which cuDNN's heuristics
 * match to one fused kernel (the graph cudnn-frontend's SDPA node expands into for cuDNN 9).
 *
 * Layout and semantics are those of attention_forward / attention_backward in kernels/cpu.h:
 * qkv (B, T, (H + 2·Hkv)·d) packed per token as H query heads, Hkv key heads, Hkv value heads;
 * query head h reads kv head h / (H / Hkv); scale 1/sqrt(d); out (B, T, H·d) bf16; lse
 * (B, H, T) fp32, the natural log-sum-exp of each scaled score row; backward OVERWRITES dqkv.
 * The tensors are strided views of these buffers: nothing is copied or transposed.
 *
 * Ownership: cudnn_att_create makes the cuDNN handle; every (direction, B, T, H, Hkv, d) gets
 * its execution plan built on first use (host work of tens of milliseconds) and cached; the
 * workspace (cuDNN's own plus, for the backward, fp32 softmax row sums and the fp32 dQ
 * accumulator) belongs to the context and grows with cudaMalloc (which synchronises) when a
 * larger plan appears. Calls on one context must be ordered on one stream. Destroy accepts NULL.
 *
 * Invariant: when cuDNN reports a graph unsupported (no engine config finalizes, e.g. on a GPU
 * older than sm_80 or with d not a multiple of 8 or above 256) the call fails with -1 and the
 * reason; there is no silent fallback to another kernel. */
#ifndef SCALEPLAN_KERNELS_CUDNN_ATTENTION_H
#define SCALEPLAN_KERNELS_CUDNN_ATTENTION_H

#include "kernels/cuda_bf16.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cudnn_att;

/* 0, or -1 with the reason in err (ERR_LEN bytes). */
int cudnn_att_create(struct cudnn_att **out, char *err);
void cudnn_att_destroy(struct cudnn_att *a);

int cudnn_att_forward(struct cudnn_att *a, bf16_t *out /* (B, T, H*d) */, float *lse /* (B, H, T) */,
                      const bf16_t *qkv /* (B, T, (H + 2*Hkv)*d) */, int B, int T, int H, int Hkv, int d,
                      cudaStream_t s, char *err);
int cudnn_att_backward(struct cudnn_att *a, bf16_t *dqkv /* (B, T, (H + 2*Hkv)*d) */, const bf16_t *dout,
                       const bf16_t *qkv, const bf16_t *out, const float *lse, int B, int T, int H, int Hkv, int d,
                       cudaStream_t s, char *err);

/* Plans in the cache (a test can check that a repeated shape reuses its plan). */
int cudnn_att_cached(const struct cudnn_att *a);

#ifdef __cplusplus
}
#endif

#endif
