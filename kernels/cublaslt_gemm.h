/* cublaslt_gemm — the linears of the bf16 CUDA path through cuBLASLt: bf16 A and B, fp32
 * accumulation (CUBLAS_COMPUTE_32F), bf16 output for activations and fp32 output for weight
 * gradients, which accumulate into the fp32 gradient buffer with beta = 1. Row-major semantics
 * are exactly those of linear_forward / linear_backward_input / linear_backward_weight in
 * kernels/cpu.h: a weight is (OC, IC) like nn.Linear, out = inp · wᵀ + bias.
 *
 * Ownership: cublaslt_create makes the cuBLASLt handle, a 32 MiB workspace and a cache of
 * matmul descriptors with the algorithm the heuristic picked, one per (shape, transposes,
 * output type, epilogue, beta, pointer alignments); cublaslt_destroy frees them all (NULL is
 * fine). One context per host thread: calls mutate the cache. Units: element counts.
 *
 * Invariant a reader could not guess: cuBLASLt is column-major, so each row-major product is
 * computed as its transpose (Dᵀ = Bᵀ·Aᵀ) with no copies. The forward bias is fused
 * (CUBLASLT_EPILOGUE_BIAS); the bias gradient is NOT the BGRADB epilogue, which overwrites its
 * vector, while dbias must accumulate (+=) — it is a deterministic two-pass column sum over a
 * scratch buffer that grows (cudaMalloc, which synchronises) the first time a larger shape is
 * seen and is then reused. The first call for a shape also queries the heuristic (host work). */
#ifndef SCALEPLAN_KERNELS_CUBLASLT_GEMM_H
#define SCALEPLAN_KERNELS_CUBLASLT_GEMM_H

#include "kernels/cuda_bf16.h"

#define CUBLASLT_WORKSPACE_BYTES ((size_t)32 << 20)

#ifdef __cplusplus
extern "C" {
#endif

struct cublaslt;

/* 0, or -1 with the reason in err (ERR_LEN bytes). */
int cublaslt_create(struct cublaslt **out, char *err);
void cublaslt_destroy(struct cublaslt *g);

/* out (N, OC) = inp (N, IC) · wᵀ + bias (OC, or NULL), out in bf16 */
int cublaslt_linear_forward(struct cublaslt *g, bf16_t *out, const bf16_t *inp, const bf16_t *w, const bf16_t *bias,
                            int N, int IC, int OC, cudaStream_t s, char *err);
/* the same product with an fp32 output and no bias (router logits, logits kept in fp32) */
int cublaslt_linear_forward_f32(struct cublaslt *g, float *out, const bf16_t *inp, const bf16_t *w,
                                int N, int IC, int OC, cudaStream_t s, char *err);
/* dinp (N, IC) = dout (N, OC) · w; accumulate != 0 adds into dinp (beta = 1) */
int cublaslt_linear_backward_input(struct cublaslt *g, bf16_t *dinp, const bf16_t *dout, const bf16_t *w,
                                   int N, int IC, int OC, int accumulate, cudaStream_t s, char *err);
/* dw (OC, IC) += doutᵀ · inp in fp32; dbias (OC, fp32, or NULL) += Σ_n dout */
int cublaslt_linear_backward_weight(struct cublaslt *g, float *dw, float *dbias, const bf16_t *dout,
                                    const bf16_t *inp, int N, int IC, int OC, cudaStream_t s, char *err);

/* Descriptors in the cache (a test can check that a repeated shape reuses its entry). */
int cublaslt_cached(const struct cublaslt *g);

#ifdef __cplusplus
}
#endif

#endif
