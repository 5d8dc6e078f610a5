/* cpu — fp32 reference kernels of the Llama-style transformer, each forward beside its
 * backward: linear (OpenBLAS sgemm), embedding, RMSNorm, RoPE, causal GQA attention,
 * SwiGLU, GeLU, softmax cross-entropy, MoE routing with its load-balancing loss, AdamW and
 * the global gradient norm. kernels/cuda.h declares CUDA twins with the same arguments.
 *
 * Ownership: the caller owns every buffer; no kernel allocates. Kernels that need scratch say
 * how many floats through a *_scratch_floats() function. Units: element counts, never bytes.
 * Layout: row-major; N = B*T tokens; a weight is (out, in) like PyTorch's nn.Linear.
 *
 * Invariant a reader could not guess: every weight gradient (dw, dbias, dgain) is ACCUMULATED
 * (+=), so micro-batches add into one gradient buffer that the optimizer step later zeroes;
 * input gradients are overwritten unless the function says otherwise. Backward kernels only
 * read forward buffers, so one forward may be followed by several backward calls. */
#ifndef SCALEPLAN_KERNELS_CPU_H
#define SCALEPLAN_KERNELS_CPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- linear: out = inp · wᵀ + bias ---------------------------------------------------- */
void linear_forward(float *out /* (N, OC) */, const float *inp /* (N, IC) */,
                    const float *w /* (OC, IC) */, const float *bias /* (OC) or NULL */,
                    int N, int IC, int OC);
/* The input-gradient half ("B" of zero-bubble schedules): dinp = dout · w;
 * accumulate != 0 adds into dinp instead of overwriting it. */
void linear_backward_input(float *dinp /* (N, IC) */, const float *dout /* (N, OC) */,
                           const float *w /* (OC, IC) */, int N, int IC, int OC, int accumulate);
/* The weight-gradient half ("W"): dw += doutᵀ · inp, dbias += Σ_n dout. */
void linear_backward_weight(float *dw /* (OC, IC) */, float *dbias /* (OC) or NULL */,
                            const float *dout /* (N, OC) */, const float *inp /* (N, IC) */,
                            int N, int IC, int OC);

/* ---- token embedding over a vocabulary shard [v0, v0 + V) ------------------------------
 * Tokens outside the shard give zero rows (Megatron's vocab-parallel embedding: the sum of
 * every shard's output is the full lookup). Use v0 = 0, V = vocab on a single rank. */
void embedding_forward(float *out /* (N, C) */, const int *tokens /* (N) */,
                       const float *wte /* (V, C) */, int N, int C, int v0, int V);
void embedding_backward(float *dwte /* (V, C), += */, const float *dout /* (N, C) */,
                        const int *tokens /* (N) */, int N, int C, int v0, int V);

/* ---- RMSNorm (Zhang & Sennrich 2019): out = inp / sqrt(mean(inp²) + eps) · w -------------
 * Backward ACCUMULATES into dinp (it is the residual stream's gradient) and into dw. */
void rmsnorm_forward(float *out /* (N, C) */, float *rstd /* (N) */, const float *inp /* (N, C) */,
                     const float *w /* (C) */, int N, int C, float eps);
void rmsnorm_backward(float *dinp /* (N, C), += */, float *dw /* (C), += */,
                      const float *dout /* (N, C) */, const float *inp /* (N, C) */,
                      const float *w /* (C) */, const float *rstd /* (N) */, int N, int C);

/* ---- rotary position embedding (Su et al. 2021), Llama's rotate-half convention -------
 * Pair (i, i + d/2) of each head rotates by angle pos · theta^(-2i/d). rope_table fills the
 * cos/sin table once per sequence layout; pos == NULL means positions 0..T-1 (a context-
 * parallel shard passes its own positions). The rotation works in place on `nh` consecutive
 * heads of width d inside rows of stride ld (q and k heads are adjacent in the qkv row, so
 * one call with nh = H + Hkv rotates both). Backward rotates the gradient back. */
void rope_table(float *tab /* (T, d/2, 2) cos, sin */, const int *pos /* (T) or NULL */,
                int T, int d, double theta);
void rope_forward(float *x /* (B, T, ld) */, const float *tab, int B, int T, int nh, int d, int ld);
void rope_backward(float *dx /* (B, T, ld) */, const float *tab, int B, int T, int nh, int d, int ld);

/* ---- causal grouped-query attention ---------------------------------------------------
 * qkv rows hold H query heads, then Hkv key heads, then Hkv value heads, each of width d;
 * query head h reads kv head h / (H / Hkv). Scale 1/sqrt(d). Forward stores the log-sum-exp
 * of each score row; backward recomputes probabilities from it block by block, so memory is
 * O(T) per head plus scratch of attention_scratch_floats(). dqkv is overwritten. */
size_t attention_scratch_floats(int B, int T, int H);
void attention_forward(float *out /* (B, T, H*d) */, float *lse /* (B, H, T) */,
                       const float *qkv /* (B, T, (H + 2*Hkv)*d) */, float *scratch,
                       int B, int T, int H, int Hkv, int d);
void attention_backward(float *dqkv /* (B, T, (H + 2*Hkv)*d) */, const float *dout /* (B, T, H*d) */,
                        const float *qkv, const float *out /* (B, T, H*d) */,
                        const float *lse /* (B, H, T) */, float *scratch,
                        int B, int T, int H, int Hkv, int d);

/* ---- blockwise attention: one query block against one key block -----------------------
 * The pieces of ring attention (Liu et al. 2023) for one sequence: query rows carry global
 * positions q0..q0+Tq-1 and key rows k0..k0+Tk-1, and key j is seen by query i iff
 * k0 + j <= q0 + i (so a block pair is full, empty or partly masked by position alone).
 * Pointers address head 0 of row 0; head h of row i lives at base + i·ld + h·d, query head h
 * reads kv head h / (H / Hkv). lse of head h, row i is lse[h·ldl + i].
 *
 * Forward MERGES the block into a running result: out/lse hold the normalised output and
 * log-sum-exp over the keys seen so far (lse = -INFINITY and out = 0 before the first
 * block), and leave those over the union, by the rule lse = log(e^lse_a + e^lse_b),
 * out = e^(lse_a-lse)·out_a + e^(lse_b-lse)·out_b. A row that sees no key of the block is
 * left as it was, so the order of blocks does not matter (up to rounding).
 * Backward takes the FINAL out and lse (over every block) and ACCUMULATES (+=) this block's
 * share into dq, dk and dv; the sum over all key blocks is the full gradient.
 * These two have no CUDA twin in kernels/cuda.h yet; runtime/cp.c calls them on host buffers. */
struct att_block {
	int Tq, Tk;           /* rows in the query block and in the key block */
	int q0, k0;           /* global positions of their first rows */
	int H, Hkv, d;
	int ldq;              /* row stride of q and dq (floats) */
	int ldkv;             /* row stride of k, v, dk and dv */
	int ldo;              /* row stride of out and dout */
	int ldl;              /* head stride of lse */
};
size_t attention_block_scratch_floats(int Tq, int Tk);
void attention_block_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                             float *scratch, const struct att_block *blk);
void attention_block_backward(float *dq, float *dk, float *dv, const float *dout,
                              const float *out, const float *lse, const float *q, const float *k,
                              const float *v, float *scratch, const struct att_block *blk);

/* ---- activations ------------------------------------------------------------------------
 * SwiGLU (Shazeer 2020): out = silu(gate) * up, with gate and up side by side in one row
 * (the fused gate|up projection). GeLU with the tanh approximation (Hendrycks & Gimpel 2016).
 * dinp may alias dout in gelu_backward. */
void swiglu_forward(float *out /* (N, F) */, const float *gu /* (N, 2F) */, int N, int F);
void swiglu_backward(float *dgu /* (N, 2F) */, const float *dout /* (N, F) */,
                     const float *gu /* (N, 2F) */, int N, int F);
void gelu_forward(float *out, const float *inp, size_t n);
void gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);

/* ---- softmax cross-entropy over fp32 logits ----------------------------------------------
 * losses[n] = lse(logits[n]) - logits[n][target[n]]; targets < 0 are ignored (loss 0, no
 * gradient). Backward writes dloss · (softmax - onehot); for a mean over M tokens pass
 * dloss = 1/M. dlogits may alias logits (the logits are then overwritten). */
void crossentropy_forward(float *losses /* (N) */, float *lse /* (N) */, const float *logits /* (N, V) */,
                          const int *targets /* (N) */, int N, int V);
void crossentropy_backward(float *dlogits /* (N, V) */, const float *logits /* (N, V) */,
                           const float *lse /* (N) */, const int *targets /* (N) */,
                           float dloss, int N, int V);

/* ---- mixture of experts ----------------------------------------------------------------
 * Router as Mixtral: probs = softmax(logits) over E experts, keep the top k, renormalise
 * their weights to sum 1. Load-balancing loss as Switch Transformer (Fedus et al. 2021,
 * eq. 4): loss = E · Σ_e f_e · P_e, with P_e the mean router probability of expert e and f_e
 * the fraction of the N·k routed assignments that went to e (so loss = 1 when balanced;
 * the Hugging Face Mixtral code omits the 1/k). f_e is a count, so its gradient is zero.
 * Router backward takes dtopk_w (from the combine) and daux (d total loss / d aux loss)
 * and overwrites dlogits. */
void moe_router_forward(float *probs /* (N, E) */, int *topk_idx /* (N, k) */, float *topk_w /* (N, k) */,
                        const float *logits /* (N, E) */, int N, int E, int k);
void moe_aux_loss_forward(float *loss /* (1) */, float *frac /* (E) */, const float *probs /* (N, E) */,
                          const int *topk_idx /* (N, k) */, int N, int E, int k);
void moe_router_backward(float *dlogits /* (N, E) */, const float *dtopk_w /* (N, k) */,
                         const float *probs, const int *topk_idx, const float *topk_w,
                         const float *frac /* (E) */, float daux, int N, int E, int k);
/* Dispatch: a stable counting sort of the N·k assignments (a = n·k + j) by expert.
 * Expert e owns slots [offsets[e], offsets[e+1]); perm[slot] = a; slot_of[a] = slot. */
void moe_dispatch(int *offsets /* (E + 1) */, int *perm /* (N*k) */, int *slot_of /* (N*k) */,
                  const int *topk_idx /* (N, k) */, int N, int E, int k);
void moe_gather(float *xe /* (N*k, C) */, const float *x /* (N, C) */, const int *perm, int N, int C, int k);
/* dx[n] += Σ_j dxe[slot_of[n·k + j]] */
void moe_gather_backward(float *dx /* (N, C), += */, const float *dxe /* (N*k, C) */,
                         const int *slot_of, int N, int C, int k);
/* out[n] += Σ_j topk_w[n, j] · ye[slot_of[n·k + j]] */
void moe_combine(float *out /* (N, C), += */, const float *ye /* (N*k, C) */, const float *topk_w,
                 const int *slot_of, int N, int C, int k);
void moe_combine_backward(float *dye /* (N*k, C) */, float *dtopk_w /* (N, k) */,
                          const float *dout /* (N, C) */, const float *ye, const float *topk_w,
                          const int *slot_of, int N, int C, int k);

/* ---- optimizer -----------------------------------------------------------------------
 * AdamW (Loshchilov & Hutter 2019, Algorithm 2) in PyTorch's form: the gradient is first
 * multiplied by grad_scale (clipping), t is the 1-based step for bias correction, and
 * decoupled weight decay shrinks the parameter by lr · weight_decay. */
void adamw_step(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, int t, float grad_scale);
/* *sumsq += Σ g² (summed in double); the global norm is the sqrt of the sum over every shard. */
void grad_sumsq(float *sumsq /* (1), += */, const float *g, size_t n);
/* Clipping by global norm (Pascanu et al. 2013): the factor to multiply gradients by. */
float grad_clip_factor(float sumsq, float max_norm);
void grad_scale(float *g, size_t n, float factor);

/* ---- BLAS kernel choice (blas_arch.c) ------------------------------------------------- */
/* The OPENBLAS_CORETYPE a program that trains should set before re-executing itself (first
 * thing in main(), before MPI starts: cli_blas_reexec does it), or NULL when nothing needs
 * fixing: the variable is already set (by the user, or by the first run), this CPU has no
 * AVX2, or OpenBLAS already picked AVX2 or wider kernels. An unknown CPU model makes OpenBLAS
 * fall back to Prescott on a CPU that has AVX2/AVX-512. */
const char *blas_arch_reexec_core(void);
/* The OpenBLAS core type for these features: Cooperlake (AVX-512 + BF16), SkylakeX
 * (AVX-512 F/BW/VL/DQ), Haswell (AVX2 + FMA), or NULL. */
const char *blas_core_for(int avx2_fma, int avx512, int avx512_bf16);
/* blas_core_for() of this CPU's features (NULL off x86-64). */
const char *blas_core_wanted(void);
/* Whether an OpenBLAS core name (openblas_get_corename()) runs AVX2 or wider kernels. */
int blas_core_has_avx2(const char *core);

#ifdef __cplusplus
}
#endif

#endif
