/* cuda — CUDA twins of the reference kernels in kernels/cpu.h: the same names with a cuda_
 * prefix, the same arguments in the same order (all pointers are device pointers), and a
 * stream last; the linears take a cuBLAS handle first instead (its stream is used).
 * Semantics, shapes and the accumulate-into-weight-gradients rule are those of kernels/cpu.h;
 * tests/gpu/test_kernels_cuda.cu checks each against its reference (`make gpu-test`).
 *
 * Ownership: the caller owns every buffer and the handle; nothing allocates. Units: elements.
 * Invariant: results match the CPU reference to fp32 rounding, except that the order of
 * floating-point additions differs (embedding and norm reductions are deterministic; the
 * grad_sumsq partials are added with atomics). The attention kernels are a simple, correct
 * one-thread-per-row implementation (head_dim <= CUDA_ATT_MAX_D), not a tuned one.
 * MoE routing kernels have no CUDA twin yet. */
#ifndef SCALEPLAN_KERNELS_CUDA_H
#define SCALEPLAN_KERNELS_CUDA_H

#include <stddef.h>

#ifdef __CUDACC__
#include <cublas_v2.h>
#include <cuda_runtime.h>
#else
/* the toolkit's own definitions, so C files can hold handles without CUDA headers */
typedef struct CUstream_st *cudaStream_t;
typedef struct cublasContext *cublasHandle_t;
#endif

#define CUDA_ATT_MAX_D 256

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 0, or -1 with the last CUDA error's text in err (ERR_LEN bytes). */
int cuda_last_error(char *err);

void cuda_linear_forward(cublasHandle_t h, float *out, const float *inp, const float *w,
                         const float *bias, int N, int IC, int OC);
void cuda_linear_backward_input(cublasHandle_t h, float *dinp, const float *dout, const float *w,
                                int N, int IC, int OC, int accumulate);
void cuda_linear_backward_weight(cublasHandle_t h, float *dw, float *dbias, const float *dout,
                                 const float *inp, int N, int IC, int OC);

void cuda_embedding_forward(float *out, const int *tokens, const float *wte, int N, int C, int v0, int V,
                            cudaStream_t s);
void cuda_embedding_backward(float *dwte, const float *dout, const int *tokens, int N, int C, int v0, int V,
                             cudaStream_t s);

void cuda_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                          float eps, cudaStream_t s);
void cuda_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                           const float *rstd, int N, int C, cudaStream_t s);

void cuda_rope_table(float *tab, const int *pos, int T, int d, double theta, cudaStream_t s);
void cuda_rope_forward(float *x, const float *tab, int B, int T, int nh, int d, int ld, cudaStream_t s);
void cuda_rope_backward(float *dx, const float *tab, int B, int T, int nh, int d, int ld, cudaStream_t s);

/* scratch: attention_scratch_floats(B, T, H) floats, as on the CPU */
void cuda_attention_forward(float *out, float *lse, const float *qkv, float *scratch,
                            int B, int T, int H, int Hkv, int d, cudaStream_t s);
void cuda_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *out,
                             const float *lse, float *scratch, int B, int T, int H, int Hkv, int d,
                             cudaStream_t s);

void cuda_swiglu_forward(float *out, const float *gu, int N, int F, cudaStream_t s);
void cuda_swiglu_backward(float *dgu, const float *dout, const float *gu, int N, int F, cudaStream_t s);
void cuda_gelu_forward(float *out, const float *inp, size_t n, cudaStream_t s);
void cuda_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n, cudaStream_t s);

void cuda_crossentropy_forward(float *losses, float *lse, const float *logits, const int *targets,
                               int N, int V, cudaStream_t s);
void cuda_crossentropy_backward(float *dlogits, const float *logits, const float *lse, const int *targets,
                                float dloss, int N, int V, cudaStream_t s);

void cuda_adamw_step(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                     float beta1, float beta2, float eps, float weight_decay, int t, float grad_scale,
                     cudaStream_t s);
void cuda_grad_sumsq(float *sumsq, const float *g, size_t n, cudaStream_t s);
void cuda_grad_scale(float *g, size_t n, float factor, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
