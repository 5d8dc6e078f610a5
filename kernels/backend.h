/* backend — the compute backend of the runtime: one table of function pointers (struct
 * kern_ops) holding memory management and every kernel the runtime calls, one file per
 * alternative (kernels/backend_cpu.c: the reference kernels of kernels/cpu.h; a CUDA row
 * exists only in a build that links one, see kern_cuda_ops), and an instance (struct kern)
 * that pairs a row with its per-rank state (the CUDA row's: device, stream, library handles)
 * and tracks the bytes its allocator hands out.
 *
 * Kernel entries take the backend state first and then exactly the arguments of the kernel
 * of the same name in kernels/cpu.h, whose comments are their specification (shapes,
 * accumulate-into-weight-gradients, aliasing). Every pointer is the backend's memory unless
 * the entry says "host"; the runtime reaches backend memory from the host only through
 * copy() (or directly where host_visible is set).
 *
 * Precision. Master weights, weight gradients and AdamW's moments are fp32 on every backend:
 * the runtime's params, grads, m and v are `float *` of the backend's memory, and adamw,
 * grad_sumsq_acc and grad_scale run on them. Activations are elements of act_bytes bytes:
 * 4 (fp32) on the CPU; a bf16 backend reports 2, keeps a compute copy of the weights in its
 * own format refreshed from the fp32 master after each optimizer step (cast_weights), and
 * accumulates its GEMMs and reductions in fp32. The runtime sizes and addresses activations
 * through kern_act_at() and kern_act_size() below, the only places an activation offset or
 * size is computed, so a row with act_bytes 2 gets packed bf16 tensors and the CPU row's
 * arithmetic is unchanged.
 *
 * Activation pointers stay `float *` in the table, as an OPAQUE pointer to elements of
 * act_bytes bytes: on the CPU row they are the fp32 arrays of kernels/cpu.h (so that row is
 * the reference kernels with no casts), on a bf16 row they hold bf16 and the row casts them.
 * The rule: the runtime never indexes or offsets an activation pointer itself (only
 * kern_act_at does). `float *` rather than `void *` keeps every entry's signature that of its
 * specification in kernels/cpu.h, keeps the arguments that are fp32 on every row (weight
 * gradients, master weights, moments, and the statistics each entry's comment marks fp32:
 * RMSNorm's rstd, attention's and the loss's lse, the RoPE table, router probabilities and
 * top-k weights, losses) typed, and leaves the CPU row's code and results exactly as they were.
 * Activations are: inputs and outputs of the linears, norms, RoPE, attention (out, qkv and
 * their gradients), SwiGLU/GeLU, the logits, router logits, the MoE gathers and combines,
 * act_add; a row with act_bytes 2 reads weights through its compute copy (cast_weights).
 *
 * Ownership: kern_create makes the instance and the row's state, kern_destroy frees both
 * (and accepts NULL); memory from kern_alloc belongs to the caller until kern_free.
 * Units: bytes for memory, elements for kernels. Invariant a reader could not guess: the
 * instance's counters are exact: bytes_in_use is the sum of the sizes of the live blocks
 * it allocated and peak_bytes the largest value bytes_in_use has taken (since creation or
 * the last kern_reset_peak). */
#ifndef SCALEPLAN_KERNELS_BACKEND_H
#define SCALEPLAN_KERNELS_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "kernels/cpu.h"
#include "kernels/cpu_shard.h"

#ifdef __cplusplus
extern "C" {
#endif

enum kern_copy { KERN_H2D, KERN_D2H, KERN_D2D };

struct kern_ops {
	const char *name;            /* "cpu", "cuda" */
	size_t act_bytes;            /* bytes per activation element (4: fp32, 2: bf16) */
	int host_visible;            /* the runtime may read and write this row's memory directly */
	int (*device_count)(void);   /* devices this process sees (0: none; CPU: 1) */
	int (*create)(void **state, int device, char *err);   /* err: 256 bytes */
	void (*destroy)(void *st);
	/* ---- memory: alloc returns NULL when out of memory; contents undefined ---- */
	void *(*alloc)(void *st, size_t bytes);
	void (*release)(void *st, void *p);
	void (*memset0)(void *st, void *p, size_t bytes);
	void (*copy)(void *st, void *dst, const void *src, size_t bytes, enum kern_copy dir);
	/* the end of a step: every kernel issued so far has finished; -1 with err on a fault */
	int (*sync)(void *st, char *err);
	/* NULL for a row whose activations are fp32 (the kernels then read the master weights);
	 * else dst (n activation elements) = src (n fp32) rounded to the row's format */
	void (*cast_weights)(void *st, void *dst, const float *src, size_t n);
	/* ---- kernels: kernels/cpu.h ---- */
	void (*linear_forward)(void *st, float *out, const float *inp, const float *w, const float *bias,
	                       int N, int IC, int OC);
	void (*linear_backward_input)(void *st, float *dinp, const float *dout, const float *w, int N, int IC,
	                              int OC, int accumulate);
	void (*linear_backward_weight)(void *st, float *dw, float *dbias, const float *dout, const float *inp,
	                               int N, int IC, int OC);
	void (*embedding_forward)(void *st, float *out, const int *tokens, const float *wte, int N, int C,
	                          int v0, int V);
	void (*embedding_backward)(void *st, float *dwte, const float *dout, const int *tokens, int N, int C,
	                           int v0, int V);
	void (*rmsnorm_forward)(void *st, float *out, float *rstd, const float *inp, const float *w, int N,
	                        int C, float eps);
	void (*rmsnorm_backward)(void *st, float *dinp, float *dw, const float *dout, const float *inp,
	                         const float *w, const float *rstd, int N, int C);
	/* pos is a host array (NULL: 0..T-1) */
	void (*rope_table)(void *st, float *tab, const int *pos, int T, int d, double theta);
	void (*rope_forward)(void *st, float *x, const float *tab, int B, int T, int nh, int d, int ld);
	void (*rope_backward)(void *st, float *dx, const float *tab, int B, int T, int nh, int d, int ld);
	void (*attention_forward)(void *st, float *out, float *lse, const float *qkv, float *scratch, int B,
	                          int T, int H, int Hkv, int d);
	void (*attention_backward)(void *st, float *dqkv, const float *dout, const float *qkv, const float *out,
	                           const float *lse, float *scratch, int B, int T, int H, int Hkv, int d);
	/* blk is a host struct */
	void (*attention_block_forward)(void *st, float *out, float *lse, const float *q, const float *k,
	                                const float *v, float *scratch, const struct att_block *blk);
	void (*attention_block_backward)(void *st, float *dq, float *dk, float *dv, const float *dout,
	                                 const float *out, const float *lse, const float *q, const float *k,
	                                 const float *v, float *scratch, const struct att_block *blk);
	void (*swiglu_forward)(void *st, float *out, const float *gu, int N, int F);
	void (*swiglu_backward)(void *st, float *dgu, const float *dout, const float *gu, int N, int F);
	void (*gelu_forward)(void *st, float *out, const float *inp, size_t n);
	void (*gelu_backward)(void *st, float *dinp, const float *dout, const float *inp, size_t n);
	void (*crossentropy_forward)(void *st, float *losses, float *lse, const float *logits, const int *targets,
	                             int N, int V);
	void (*crossentropy_backward)(void *st, float *dlogits, const float *logits, const float *lse,
	                              const int *targets, float dloss, int N, int V);
	void (*moe_router_forward)(void *st, float *probs, int *topk_idx, float *topk_w, const float *logits,
	                           int N, int E, int k);
	/* loss is a host float */
	void (*moe_aux_loss_forward)(void *st, float *loss, float *frac, const float *probs, const int *topk_idx,
	                             int N, int E, int k);
	void (*moe_router_backward)(void *st, float *dlogits, const float *dtopk_w, const float *probs,
	                            const int *topk_idx, const float *topk_w, const float *frac, float daux,
	                            int N, int E, int k);
	void (*moe_dispatch)(void *st, int *offsets, int *perm, int *slot_of, const int *topk_idx, int N, int E,
	                     int k);
	void (*moe_gather)(void *st, float *xe, const float *x, const int *perm, int N, int C, int k);
	void (*moe_gather_backward)(void *st, float *dx, const float *dxe, const int *slot_of, int N, int C, int k);
	void (*moe_combine)(void *st, float *out, const float *ye, const float *topk_w, const int *slot_of, int N,
	                    int C, int k);
	void (*moe_combine_backward)(void *st, float *dye, float *dtopk_w, const float *dout, const float *ye,
	                             const float *topk_w, const int *slot_of, int N, int C, int k);
	/* per-expert assignment counts cnt[e] and router-probability sums psum[e] (summed in
	 * double over tokens 0..N-1), the inputs of Switch's loss summed over a CP group */
	void (*moe_stats)(void *st, float *cnt, float *psum, const float *probs, const int *topk_idx, int N,
	                  int E, int k);
	void (*adamw_step)(void *st, float *param, const float *grad, float *m, float *v, size_t n, float lr,
	                   float beta1, float beta2, float eps, float weight_decay, int t, float grad_scale);
	/* *acc (host) += Σ g², the terms added in order to a double */
	void (*grad_sumsq_acc)(void *st, double *acc, const float *g, size_t n);
	void (*grad_scale)(void *st, float *g, size_t n, float factor);
	void (*add)(void *st, float *y, const float *x, size_t n);       /* y += x, fp32 (gradients) */
	void (*act_add)(void *st, float *y, const float *x, size_t n);   /* y += x, activations */
	/* data-parallel means: g /= div, and y += x / div (a division, so the mean is
	 * correctly rounded for any group size) */
	void (*grad_div)(void *st, float *g, size_t n, float div);
	void (*grad_add_div)(void *st, float *y, const float *x, size_t n, float div);
	/* ---- the parallel runtime's steps between collectives: kernels/cpu_shard.h ---- */
	void (*ce_shard_max)(void *st, float *mx, const float *logits, int N, int V);
	void (*ce_shard_sums)(void *st, float *sums, float *maxima, const float *logits, const int *targets, int N,
	                      int V, int v0, int tp);
	void (*ce_shard_loss)(void *st, float *losses, float *lse, const float *maxima, const float *sums,
	                      const int *targets, int N);
	void (*ce_shard_backward)(void *st, float *dlogits, const float *logits, const float *lse, const int *targets,
	                          float dloss, int N, int V, int v0);
	void (*act_copy_rows)(void *st, float *dst, size_t ld_dst, const float *src, size_t ld_src, size_t rows,
	                      size_t width);
	void (*fill)(void *st, float *p, size_t n, float value);   /* fp32 */
};

/* The rows this build has: the CPU row always; the CUDA rows only when a CUDA backend is
 * linked in (weak references, so the symbols are NULL otherwise): "cuda", bf16 activations
 * and compute weights (kernels/backend_cuda_bf16.cu), and "cuda-fp32", fp32 throughout
 * (kernels/backend_cuda.cu), which compares with the CPU to fp32 rounding. */
extern const struct kern_ops kern_cpu_ops;
#ifndef KERN_CUDA_ROW_DEFINED   /* kernels/backend_cuda_bf16.cu defines it (strongly) */
extern const struct kern_ops kern_cuda_ops __attribute__((weak));
#endif
#ifndef KERN_CUDA_FP32_ROW_DEFINED   /* kernels/backend_cuda.cu defines it (strongly) */
extern const struct kern_ops kern_cuda_fp32_ops __attribute__((weak));
#endif
const struct kern_ops *kern_cuda_row(void);   /* &kern_cuda_ops or NULL */

/* A live allocation of an instance: the allocator's own table (sizes for kern_free). */
struct kern_block { void *p; size_t bytes; };

struct kern {
	const struct kern_ops *ops;
	void *state;
	size_t bytes_in_use, peak_bytes;
	struct kern_block *blocks;   /* [nblocks] live allocations */
	size_t nblocks, cap;
};

/* -1 with err (256 bytes) when the row's create fails or memory runs out. kern_destroy
 * leaves blocks that are still allocated alone (a transfer in flight after a failure may
 * target one); free them first. */
int kern_create(struct kern **out, const struct kern_ops *ops, int device, char *err);
void kern_destroy(struct kern *k);
/* Tracked allocation of bytes (at least 1) from the row's allocator; NULL when out of
 * memory. kern_zalloc also zeroes it. kern_free accepts NULL and pointers of this instance. */
void *kern_alloc(struct kern *k, size_t bytes);
void *kern_zalloc(struct kern *k, size_t bytes);
void kern_free(struct kern *k, void *p);
void kern_to_host(struct kern *k, void *host, const void *dev, size_t bytes);
void kern_to_dev(struct kern *k, void *dev, const void *host, size_t bytes);
void kern_copy_dev(struct kern *k, void *dst, const void *src, size_t bytes);
void kern_zero(struct kern *k, void *p, size_t bytes);
/* Starts a new high-water mark at the bytes in use now (a phase's peak, e.g. training after
 * setup). */
void kern_reset_peak(struct kern *k);
/* Waits for every kernel issued so far (the row's sync): what a collective on another stream
 * or in another library (NCCL, MPI) reads must be written first. -1 with err on a fault. */
int kern_sync(struct kern *k, char *err);

/* Activation addressing, the one rule of the runtime: p advanced by n activation elements of
 * k's row (const dropped, as the kernels' outputs are reached the same way), and the bytes of
 * n of them. */
static inline float *kern_act_at(const struct kern *k, const float *p, size_t n)
{
	return (float *)(uintptr_t)((const char *)p + n * k->ops->act_bytes);
}
static inline size_t kern_act_size(const struct kern *k, size_t n) { return n * k->ops->act_bytes; }

/* ---- which row `scaleplan run` uses ---------------------------------------------------- */
enum kern_want { KERN_WANT_DEFAULT, KERN_WANT_CPU, KERN_WANT_CUDA, KERN_WANT_CUDA_FP32 };
/* Pure: the CUDA row wanted (cuda or cuda-fp32), or cuda by default when the build has the
 * CUDA rows and at least one GPU is visible; cpu otherwise. Returns the row's name ("cpu",
 * "cuda" or "cuda-fp32"), or NULL with the reason in err (256 bytes) when a CUDA row is asked
 * for and cannot run. */
const char *kern_choose(enum kern_want want, int have_cuda, int n_gpus, char *err);
/* The row of that name in this build, or NULL. */
const struct kern_ops *kern_row(const char *name);

#ifdef __cplusplus
}
#endif

#endif
