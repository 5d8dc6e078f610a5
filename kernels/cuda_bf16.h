/* cuda_bf16 — the bf16 CUDA kernels of the training step: activations and compute copies of the
 * weights in bf16, master weights, optimizer state and weight gradients in fp32, every sum and
 * every transcendental in fp32. Each kernel has its specification in kernels/cpu.h: the same
 * name with a cuda_bf16_ prefix, the same arguments in the same order (device pointers), a
 * stream last, and the same shapes and semantics — weight gradients (dw, dbias, dgain, dwte)
 * ACCUMULATE (+=) into fp32 buffers; input gradients are overwritten unless marked "+=".
 * GEMMs are in kernels/cublaslt_gemm.h and attention in kernels/cudnn_attention.h.
 * tests/gpu/test_bf16_cuda.cu checks every kernel against its CPU reference (`make gpu-test`).
 *
 * Ownership: the caller owns every buffer; nothing allocates. Kernels that need scratch say how
 * many elements through a *_scratch_*() function. Units: element counts, never bytes.
 * Kernels return nothing: launches are asynchronous, and cuda_bf16_last_error() reports a launch
 * error after the fact (call it where the host synchronises anyway).
 *
 * Invariant a reader could not guess: bf16 results are the fp32 result rounded once to nearest
 * even, so a kernel's error against the fp32 reference on the same (bf16-rounded) inputs is
 * about one unit roundoff u = 2^-8 of the largest output; reductions into fp32 run in a fixed
 * order (two passes, no float atomics) and are bitwise reproducible, except embedding_backward,
 * whose scatter-add over repeated tokens uses float atomics (order-dependent rounding only). */
#ifndef SCALEPLAN_KERNELS_CUDA_BF16_H
#define SCALEPLAN_KERNELS_CUDA_BF16_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_runtime.h>
typedef __nv_bfloat16 bf16_t;
#else
/* storage type only: C code moves bf16 buffers around but never does arithmetic on them */
typedef uint16_t bf16_t;
typedef struct CUstream_st *cudaStream_t;
#endif

/* Rows of one partial sum in the two-pass column reductions (RMSNorm weight and bias gradients). */
#define CUDA_BF16_COLSUM_ROWS 256
/* Partial sums of grad_sumsq's first pass (one per block). */
#define CUDA_BF16_SUMSQ_PARTS 1024
/* Assignments per block of moe_dispatch's counting sort. */
#define CUDA_BF16_DISPATCH_CHUNK 1024

#ifdef __cplusplus
extern "C" {
#endif

/* 0, or -1 with the last CUDA error's text in err (256 bytes, ERR_LEN) — clears the error. */
int cuda_bf16_last_error(char *err);

/* ---- casts (round to nearest even; NaN stays NaN) --------------------------------------- */
void cuda_bf16_from_f32(bf16_t *out, const float *in, size_t n, cudaStream_t s);
void cuda_bf16_to_f32(float *out, const bf16_t *in, size_t n, cudaStream_t s);

/* ---- embedding over a vocabulary shard [v0, v0 + V) ------------------------------------- */
void cuda_bf16_embedding_forward(bf16_t *out /* (N, C) */, const int *tokens, const bf16_t *wte /* (V, C) */,
                                 int N, int C, int v0, int V, cudaStream_t s);
void cuda_bf16_embedding_backward(float *dwte /* (V, C), += */, const bf16_t *dout /* (N, C) */,
                                  const int *tokens, int N, int C, int v0, int V, cudaStream_t s);

/* ---- RMSNorm: statistics in fp32, rstd kept in fp32 ------------------------------------
 * Backward: dinp += (bf16 read, fp32 add, one rounding), dw += in fp32 through scratch of
 * cuda_bf16_colsum_scratch_floats(N, C) floats (partials of CUDA_BF16_COLSUM_ROWS rows each). */
size_t cuda_bf16_colsum_scratch_floats(int N, int C);
void cuda_bf16_rmsnorm_forward(bf16_t *out, float *rstd /* (N) */, const bf16_t *inp, const bf16_t *w /* (C) */,
                               int N, int C, float eps, cudaStream_t s);
void cuda_bf16_rmsnorm_backward(bf16_t *dinp /* (N, C), += */, float *dw /* (C), += */, const bf16_t *dout,
                                const bf16_t *inp, const bf16_t *w, const float *rstd, float *scratch,
                                int N, int C, cudaStream_t s);
/* dbias (C) += Σ_n dout[n] in fp32, the same two-pass column sum (scratch as above). */
void cuda_bf16_bias_backward(float *dbias, const bf16_t *dout /* (N, C) */, float *scratch, int N, int C,
                             cudaStream_t s);

/* ---- rotary embedding: fp32 table (T, d/2, 2) = cos, sin; rotation in place ------------ */
void cuda_bf16_rope_table(float *tab, const int *pos /* (T) or NULL */, int T, int d, double theta,
                          cudaStream_t s);
void cuda_bf16_rope_forward(bf16_t *x, const float *tab, int B, int T, int nh, int d, int ld, cudaStream_t s);
void cuda_bf16_rope_backward(bf16_t *dx, const float *tab, int B, int T, int nh, int d, int ld, cudaStream_t s);

/* ---- activations (dinp may alias dout in gelu_backward) --------------------------------- */
void cuda_bf16_swiglu_forward(bf16_t *out /* (N, F) */, const bf16_t *gu /* (N, 2F) */, int N, int F,
                              cudaStream_t s);
void cuda_bf16_swiglu_backward(bf16_t *dgu /* (N, 2F) */, const bf16_t *dout, const bf16_t *gu, int N, int F,
                               cudaStream_t s);
void cuda_bf16_gelu_forward(bf16_t *out, const bf16_t *inp, size_t n, cudaStream_t s);
void cuda_bf16_gelu_backward(bf16_t *dinp, const bf16_t *dout, const bf16_t *inp, size_t n, cudaStream_t s);

/* ---- fused softmax cross-entropy over bf16 logits ---------------------------------------
 * One pass over each row for the log-sum-exp (online max/sum, Milakov & Gimelshein 2018), a
 * second that writes dlogits = dloss · (softmax - onehot) in bf16; no (N, V) fp32 buffer.
 * losses and lse as crossentropy_forward; dlogits may alias logits, or be NULL for the
 * forward only. Targets < 0: loss 0, lse 0, zero gradient row. */
void cuda_bf16_crossentropy_fused(float *losses /* (N) */, float *lse /* (N) */, bf16_t *dlogits /* (N, V) */,
                                  const bf16_t *logits /* (N, V) */, const int *targets, float dloss,
                                  int N, int V, cudaStream_t s);

/* ---- optimizer ---------------------------------------------------------------------------
 * AdamW as adamw_step on fp32 master weights and fp32 m, v with the fp32 gradient, multiplied
 * by grad_scale and, when factor_dev != NULL, by *factor_dev (the clip factor computed on the
 * device, so the step needs no host synchronisation). param_bf16 (or NULL) receives the
 * updated weights rounded to bf16 in the same pass. */
void cuda_bf16_adamw_step(float *param, bf16_t *param_bf16, const float *grad, float *m, float *v, size_t n,
                          float lr, float beta1, float beta2, float eps, float weight_decay, int t,
                          float grad_scale, const float *factor_dev, cudaStream_t s);
/* *sumsq += Σ g² : CUDA_BF16_SUMSQ_PARTS block partials in double (scratch), then one block
 * adds them in index order — the same bits for the same input on every run. */
void cuda_bf16_grad_sumsq(float *sumsq /* (1), += */, const float *g, size_t n, double *scratch,
                          cudaStream_t s);
/* *factor_dev = grad_clip_factor(*sumsq_dev, max_norm), on the device. */
void cuda_bf16_grad_clip_factor(float *factor_dev, const float *sumsq_dev, float max_norm, cudaStream_t s);
/* g *= factor (· *factor_dev when factor_dev != NULL) */
void cuda_bf16_grad_scale(float *g, size_t n, float factor, const float *factor_dev, cudaStream_t s);

/* ---- mixture of experts ------------------------------------------------------------------
 * Router logits, probabilities and weights are fp32 (the router GEMM writes fp32); tokens
 * moved by the permutation are bf16. Semantics, tie-breaking (lower expert index) and the
 * Switch aux loss are those of kernels/cpu.h. E <= 1024. */
void cuda_bf16_moe_router_forward(float *probs /* (N, E) */, int *topk_idx /* (N, k) */, float *topk_w,
                                  const float *logits /* (N, E) */, int N, int E, int k, cudaStream_t s);
void cuda_bf16_moe_aux_loss_forward(float *loss /* (1) */, float *frac /* (E) */, const float *probs,
                                    const int *topk_idx, int N, int E, int k, cudaStream_t s);
void cuda_bf16_moe_router_backward(float *dlogits /* (N, E) */, const float *dtopk_w, const float *probs,
                                   const int *topk_idx, const float *topk_w, const float *frac, float daux,
                                   int N, int E, int k, cudaStream_t s);
/* Stable counting sort of the N·k assignments by expert, as moe_dispatch; scratch holds
 * cuda_bf16_dispatch_scratch_ints(N, E, k) ints (per-chunk counts). */
size_t cuda_bf16_dispatch_scratch_ints(int N, int E, int k);
void cuda_bf16_moe_dispatch(int *offsets /* (E + 1) */, int *perm /* (N*k) */, int *slot_of /* (N*k) */,
                            const int *topk_idx, int *scratch, int N, int E, int k, cudaStream_t s);
void cuda_bf16_moe_gather(bf16_t *xe /* (N*k, C) */, const bf16_t *x /* (N, C) */, const int *perm,
                          int N, int C, int k, cudaStream_t s);
void cuda_bf16_moe_gather_backward(bf16_t *dx /* (N, C), += */, const bf16_t *dxe, const int *slot_of,
                                   int N, int C, int k, cudaStream_t s);
void cuda_bf16_moe_combine(bf16_t *out /* (N, C), += */, const bf16_t *ye /* (N*k, C) */, const float *topk_w,
                           const int *slot_of, int N, int C, int k, cudaStream_t s);
void cuda_bf16_moe_combine_backward(bf16_t *dye /* (N*k, C) */, float *dtopk_w /* (N, k) */,
                                    const bf16_t *dout /* (N, C) */, const bf16_t *ye, const float *topk_w,
                                    const int *slot_of, int N, int C, int k, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
