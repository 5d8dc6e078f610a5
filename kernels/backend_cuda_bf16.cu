/* backend_cuda_bf16 — the bf16 CUDA row of kernels/backend.h, "cuda", the default on a GPU:
 * activations (act_bytes 2) and the compute copy of the weights in bf16, master weights,
 * gradients and AdamW's moments in fp32, every GEMM and reduction accumulated in fp32. Entries
 * map to the kernels of kernels/cuda_bf16.h, the cuBLASLt GEMMs of kernels/cublaslt_gemm.h
 * (weight gradients accumulate into the fp32 grads with beta 1) and cuDNN's fused attention
 * of kernels/cudnn_attention.h; act_add (the residual adds) is a small kernel of its own here;
 * the vocabulary-parallel loss pieces are the bf16 kernels of kernels/cuda_shard.h (fp32
 * maxima, sums and lse), the strided row copy one cudaMemcpy2DAsync of 2-byte elements.
 * Statistics the table keeps fp32 on every row stay fp32: RMSNorm's rstd, attention's and the
 * loss's lse, the RoPE table, the losses, router probabilities, top-k weights and frac.
 *
 * Precision adaptations, each one rounding: the router GEMM writes bf16 router logits (the
 * table's linear_forward has activation outputs), which moe_router_forward widens to fp32
 * before the fp32 softmax and top-k; moe_router_backward's fp32 logit gradient is rounded to
 * bf16 for the router's input- and weight-gradient GEMMs. crossentropy_backward re-runs the
 * fused kernel (one pass for the log-sum-exp, one writing dlogits in place) with its losses in
 * the state's scratch. The compute copy is written by cast_weights, which the runtime calls
 * after every change of the master weights (creation, each optimizer step, a load), so AdamW
 * here updates the fp32 master only.
 *
 * Host synchronisation: none inside a step but (a) moe_aux_loss_forward, whose loss the table
 * returns in a host float (the MoE layer synchronises for its expert offsets right after
 * anyway), and (b) the optimizer's grad_sumsq_acc, whose host double is the global norm's
 * input at the step's end; loss and statistics reach the host through copy(), which waits for
 * the stream. Scratch buffers (RMSNorm and bias column sums, dispatch counts, router and loss
 * staging) grow with cudaMalloc — a synchronisation — only the first time a larger shape is
 * seen, i.e. in the first step.
 *
 * Missing here, each failing with an error naming the entry (recorded, returned by sync, the
 * step fails; never a fallback): attention_block_forward/backward (context parallelism) and
 * moe_stats (its MoE statistics over a CP group); train_supported_on keeps cp > 1 off this
 * row anyway. head_dim must suit cuDNN (a multiple of 8, at most 256).
 *
 * Ownership: the state owns the stream, the cuBLASLt and cuDNN contexts and the scratch;
 * buffers are the caller's (through struct kern). Invariant: an entry that cannot report an
 * error (they return void) records the first one in the state and sync() returns it. Results
 * match the CPU row within bf16 rounding (u = 2^-8 per rounding; tests/cli/run_backend.sh). */
#define KERN_CUDA_ROW_DEFINED
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "kernels/cublaslt_gemm.h"
#include "kernels/cuda_bf16.h"
#include "kernels/cuda_shard.h"
#include "kernels/cudnn_attention.h"

extern "C" const struct kern_ops kern_cuda_ops;

#define THREADS 256
#define ERRLEN 256

/* a device buffer that grows (never shrinks) to the largest size asked for */
struct grow { void *p; size_t bytes; };

struct bf16_state {
	int device;
	cudaStream_t s;
	struct cublaslt *lt;
	struct cudnn_att *att;
	struct grow colsum, dispatch, f32a, f32b, sumsq, sumsq_parts;
	char err[ERRLEN];        /* the first error an entry met; "" when none */
};

static struct bf16_state *S(void *st) { return (struct bf16_state *)st; }
static bf16_t *B(float *p) { return (bf16_t *)(void *)p; }
static const bf16_t *CB(const float *p) { return (const bf16_t *)(const void *)p; }

static void note(struct bf16_state *c, const char *what, cudaError_t e)
{
	if (e != cudaSuccess && !c->err[0])
		snprintf(c->err, sizeof c->err, "backend cuda: %s: %s", what, cudaGetErrorString(e));
}
/* a library call's -1 and its message */
static void note_rc(struct bf16_state *c, const char *what, int rc, const char *msg)
{
	if (rc && !c->err[0]) snprintf(c->err, sizeof c->err, "backend cuda: %s: %s", what, msg);
}
static void missing(void *st, const char *entry, const char *why)
{
	struct bf16_state *c = S(st);
	if (!c->err[0])
		snprintf(c->err, sizeof c->err, "backend cuda: %s is not in the bf16 row (%s); use --backend cpu", entry, why);
}

static void *grown(struct bf16_state *c, struct grow *g, size_t bytes, const char *what)
{
	if (bytes <= g->bytes && g->p) return g->p;
	if (g->p) {
		note(c, "synchronize before cudaFree", cudaStreamSynchronize(c->s));
		cudaFree(g->p);
	}
	g->p = NULL;
	g->bytes = 0;
	cudaError_t e = cudaMalloc(&g->p, bytes ? bytes : 1);
	if (e != cudaSuccess) {
		g->p = NULL;
		note(c, what, e);
		return NULL;
	}
	g->bytes = bytes;
	return g->p;
}

static unsigned grid_for(size_t n)
{
	size_t g = (n + THREADS - 1) / THREADS;
	return (unsigned)(g ? (g < 65535u * 16 ? g : 65535u * 16) : 1);
}

static int bf16_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError(); /* no driver or no device: clear the error, report none */
		return 0;
	}
	return n;
}

static void bf16_destroy(void *st)
{
	struct bf16_state *c = S(st);
	if (!c) return;
	if (c->s) cudaStreamSynchronize(c->s);
	cublaslt_destroy(c->lt);
	cudnn_att_destroy(c->att);
	struct grow *g[] = {&c->colsum, &c->dispatch, &c->f32a, &c->f32b, &c->sumsq, &c->sumsq_parts};
	for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) cudaFree(g[i]->p);
	if (c->s) cudaStreamDestroy(c->s);
	free(c);
}

static int bf16_create(void **state, int device, char *err)
{
	struct bf16_state *c = (struct bf16_state *)calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, ERRLEN, "backend cuda: out of memory");
		return -1;
	}
	c->device = device;
	cudaError_t e = cudaSetDevice(device);
	if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		snprintf(err, ERRLEN, "backend cuda: device %d: %s", device, cudaGetErrorString(e));
		bf16_destroy(c);
		return -1;
	}
	char why[ERRLEN] = "";
	if (cublaslt_create(&c->lt, why) || cudnn_att_create(&c->att, why)) {
		snprintf(err, ERRLEN, "backend cuda: device %d: %s", device, why);
		bf16_destroy(c);
		return -1;
	}
	*state = c;
	return 0;
}

/* ---- memory ------------------------------------------------------------------------------ */

static void *bf16_alloc(void *, size_t bytes)
{
	void *p = NULL;
	if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
		cudaGetLastError(); /* out of memory is the caller's to report, not sticky */
		return NULL;
	}
	return p;
}

static void bf16_release(void *st, void *p)
{
	note(S(st), "synchronize before cudaFree", cudaStreamSynchronize(S(st)->s));
	note(S(st), "cudaFree", cudaFree(p));
}

static void bf16_memset0(void *st, void *p, size_t bytes)
{
	note(S(st), "cudaMemsetAsync", cudaMemsetAsync(p, 0, bytes, S(st)->s));
}

static void bf16_copy(void *st, void *dst, const void *src, size_t bytes, enum kern_copy dir)
{
	struct bf16_state *c = S(st);
	const cudaMemcpyKind kind = dir == KERN_H2D ? cudaMemcpyHostToDevice
	                          : dir == KERN_D2H ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
	note(c, "cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, kind, c->s));
	/* the host buffer may be read or freed as soon as we return */
	if (dir != KERN_D2D) note(c, "cudaStreamSynchronize", cudaStreamSynchronize(c->s));
}

static int bf16_sync(void *st, char *err)
{
	struct bf16_state *c = S(st);
	char why[ERRLEN] = "";
	note(c, "cudaStreamSynchronize", cudaStreamSynchronize(c->s));
	if (cuda_bf16_last_error(why)) note_rc(c, "a kernel", -1, why);
	if (!c->err[0]) return 0;
	snprintf(err, ERRLEN, "%s", c->err);
	return -1;
}

static void bf16_cast_weights(void *st, void *dst, const float *src, size_t n)
{
	if (n) cuda_bf16_from_f32((bf16_t *)dst, src, n, S(st)->s);
}

/* ---- GEMMs (cuBLASLt) and attention (cuDNN) ------------------------------------------------ */

static void k_linear_forward(void *st, float *out, const float *inp, const float *w, const float *bias, int N, int IC,
                             int OC)
{
	struct bf16_state *c = S(st);
	char why[ERRLEN] = "";
	if (N <= 0) return;
	note_rc(c, "linear_forward", cublaslt_linear_forward(c->lt, B(out), CB(inp), CB(w), CB(bias), N, IC, OC, c->s, why),
	        why);
}
static void k_linear_backward_input(void *st, float *dinp, const float *dout, const float *w, int N, int IC, int OC,
                                    int acc)
{
	struct bf16_state *c = S(st);
	char why[ERRLEN] = "";
	if (N <= 0) return;
	note_rc(c, "linear_backward_input",
	        cublaslt_linear_backward_input(c->lt, B(dinp), CB(dout), CB(w), N, IC, OC, acc, c->s, why), why);
}
static void k_linear_backward_weight(void *st, float *dw, float *dbias, const float *dout, const float *inp, int N,
                                     int IC, int OC)
{
	struct bf16_state *c = S(st);
	char why[ERRLEN] = "";
	if (N <= 0) return;
	note_rc(c, "linear_backward_weight",
	        cublaslt_linear_backward_weight(c->lt, dw, dbias, CB(dout), CB(inp), N, IC, OC, c->s, why), why);
}
static void k_attention_forward(void *st, float *out, float *lse, const float *qkv, float *, int B_, int T, int H,
                                int Hkv, int d)
{
	struct bf16_state *c = S(st);
	char why[ERRLEN] = "";
	note_rc(c, "attention_forward", cudnn_att_forward(c->att, B(out), lse, CB(qkv), B_, T, H, Hkv, d, c->s, why), why);
}
static void k_attention_backward(void *st, float *dqkv, const float *dout, const float *qkv, const float *out,
                                 const float *lse, float *, int B_, int T, int H, int Hkv, int d)
{
	struct bf16_state *c = S(st);
	char why[ERRLEN] = "";
	note_rc(c, "attention_backward",
	        cudnn_att_backward(c->att, B(dqkv), CB(dout), CB(qkv), CB(out), lse, B_, T, H, Hkv, d, c->s, why), why);
}
static void k_attention_block_forward(void *st, float *, float *, const float *, const float *, const float *, float *,
                                      const struct att_block *)
{ missing(st, "attention_block_forward", "blockwise attention for context parallelism"); }
static void k_attention_block_backward(void *st, float *, float *, float *, const float *, const float *,
                                       const float *, const float *, const float *, const float *, float *,
                                       const struct att_block *)
{ missing(st, "attention_block_backward", "blockwise attention for context parallelism"); }

/* ---- element-wise, norms, RoPE ---------------------------------------------------------------- */

static void k_embedding_forward(void *st, float *out, const int *tok, const float *wte, int N, int C, int v0, int V)
{ cuda_bf16_embedding_forward(B(out), tok, CB(wte), N, C, v0, V, S(st)->s); }
static void k_embedding_backward(void *st, float *dwte, const float *dout, const int *tok, int N, int C, int v0, int V)
{ cuda_bf16_embedding_backward(dwte, CB(dout), tok, N, C, v0, V, S(st)->s); }
static void k_rmsnorm_forward(void *st, float *out, float *rstd, const float *inp, const float *w, int N, int C,
                              float eps)
{ cuda_bf16_rmsnorm_forward(B(out), rstd, CB(inp), CB(w), N, C, eps, S(st)->s); }
static void k_rmsnorm_backward(void *st, float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                               const float *rstd, int N, int C)
{
	struct bf16_state *c = S(st);
	float *scr = (float *)grown(c, &c->colsum, sizeof(float) * cuda_bf16_colsum_scratch_floats(N, C),
	                            "cudaMalloc (rmsnorm_backward scratch)");
	if (scr) cuda_bf16_rmsnorm_backward(B(dinp), dw, CB(dout), CB(inp), CB(w), rstd, scr, N, C, c->s);
}
/* the positions arrive from the host: staged in device memory for the table kernel (at
 * activation creation, not inside a step) */
static void k_rope_table(void *st, float *tab, const int *pos, int T, int d, double theta)
{
	struct bf16_state *c = S(st);
	int *dpos = NULL;
	if (pos) {
		note(c, "cudaMalloc (rope positions)", cudaMalloc((void **)&dpos, sizeof(int) * (size_t)T));
		if (!dpos) return;
		bf16_copy(st, dpos, pos, sizeof(int) * (size_t)T, KERN_H2D);
	}
	cuda_bf16_rope_table(tab, dpos, T, d, theta, c->s);
	if (dpos) bf16_release(st, dpos);
}
static void k_rope_forward(void *st, float *x, const float *tab, int B_, int T, int nh, int d, int ld)
{ cuda_bf16_rope_forward(B(x), tab, B_, T, nh, d, ld, S(st)->s); }
static void k_rope_backward(void *st, float *dx, const float *tab, int B_, int T, int nh, int d, int ld)
{ cuda_bf16_rope_backward(B(dx), tab, B_, T, nh, d, ld, S(st)->s); }
static void k_swiglu_forward(void *st, float *out, const float *gu, int N, int F)
{ cuda_bf16_swiglu_forward(B(out), CB(gu), N, F, S(st)->s); }
static void k_swiglu_backward(void *st, float *dgu, const float *dout, const float *gu, int N, int F)
{ cuda_bf16_swiglu_backward(B(dgu), CB(dout), CB(gu), N, F, S(st)->s); }
static void k_gelu_forward(void *st, float *out, const float *inp, size_t n)
{ cuda_bf16_gelu_forward(B(out), CB(inp), n, S(st)->s); }
static void k_gelu_backward(void *st, float *dinp, const float *dout, const float *inp, size_t n)
{ cuda_bf16_gelu_backward(B(dinp), CB(dout), CB(inp), n, S(st)->s); }

/* ---- the loss ------------------------------------------------------------------------------- */

static void k_ce_forward(void *st, float *losses, float *lse, const float *logits, const int *tgt, int N, int V)
{ cuda_bf16_crossentropy_fused(losses, lse, NULL, CB(logits), tgt, 0.0f, N, V, S(st)->s); }
/* dlogits may alias logits (the runtime writes them in place); the fused kernel recomputes the
 * lse (the same bits: same kernel, same input) into scratch beside the losses */
static void k_ce_backward(void *st, float *dlogits, const float *logits, const float *, const int *tgt, float dloss,
                          int N, int V)
{
	struct bf16_state *c = S(st);
	float *scr = (float *)grown(c, &c->f32b, sizeof(float) * 2 * (size_t)N, "cudaMalloc (loss scratch)");
	if (scr) cuda_bf16_crossentropy_fused(scr, scr + N, B(dlogits), CB(logits), tgt, dloss, N, V, c->s);
}

/* ---- mixture of experts ----------------------------------------------------------------------- */

__global__ static void widen_k(float *out, const bf16_t *in, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = __bfloat162float(in[i]);
}

static void k_moe_router_forward(void *st, float *probs, int *ti, float *tw, const float *logits, int N, int E, int k)
{
	struct bf16_state *c = S(st);
	const size_t n = (size_t)N * E;
	float *l32 = (float *)grown(c, &c->f32a, sizeof(float) * n, "cudaMalloc (router logits)");
	if (!l32 || !n) return;
	widen_k<<<grid_for(n), THREADS, 0, c->s>>>(l32, CB(logits), n);
	cuda_bf16_moe_router_forward(probs, ti, tw, l32, N, E, k, c->s);
}
static void k_moe_aux_loss_forward(void *st, float *loss, float *frac, const float *probs, const int *ti, int N, int E,
                                   int k)
{
	struct bf16_state *c = S(st);
	float *dl = (float *)grown(c, &c->sumsq, sizeof(double), "cudaMalloc (aux loss)");
	if (!dl) return;
	cuda_bf16_moe_aux_loss_forward(dl, frac, probs, ti, N, E, k, c->s);
	bf16_copy(st, loss, dl, sizeof(float), KERN_D2H); /* the table's host float (see the header) */
}
static void k_moe_router_backward(void *st, float *dlogits, const float *dtw, const float *probs, const int *ti,
                                  const float *tw, const float *frac, float daux, int N, int E, int k)
{
	struct bf16_state *c = S(st);
	const size_t n = (size_t)N * E;
	float *d32 = (float *)grown(c, &c->f32a, sizeof(float) * n, "cudaMalloc (router gradient)");
	if (!d32 || !n) return;
	cuda_bf16_moe_router_backward(d32, dtw, probs, ti, tw, frac, daux, N, E, k, c->s);
	cuda_bf16_from_f32(B(dlogits), d32, n, c->s);
}
static void k_moe_dispatch(void *st, int *off, int *perm, int *slot_of, const int *ti, int N, int E, int k)
{
	struct bf16_state *c = S(st);
	int *scr = (int *)grown(c, &c->dispatch, sizeof(int) * cuda_bf16_dispatch_scratch_ints(N, E, k),
	                        "cudaMalloc (dispatch scratch)");
	if (scr) cuda_bf16_moe_dispatch(off, perm, slot_of, ti, scr, N, E, k, c->s);
}
static void k_moe_gather(void *st, float *xe, const float *x, const int *perm, int N, int C, int k)
{ cuda_bf16_moe_gather(B(xe), CB(x), perm, N, C, k, S(st)->s); }
static void k_moe_gather_backward(void *st, float *dx, const float *dxe, const int *slot_of, int N, int C, int k)
{ cuda_bf16_moe_gather_backward(B(dx), CB(dxe), slot_of, N, C, k, S(st)->s); }
static void k_moe_combine(void *st, float *out, const float *ye, const float *tw, const int *slot_of, int N, int C,
                          int k)
{ cuda_bf16_moe_combine(B(out), CB(ye), tw, slot_of, N, C, k, S(st)->s); }
static void k_moe_combine_backward(void *st, float *dye, float *dtw, const float *dout, const float *ye,
                                   const float *tw, const int *slot_of, int N, int C, int k)
{ cuda_bf16_moe_combine_backward(B(dye), dtw, CB(dout), CB(ye), tw, slot_of, N, C, k, S(st)->s); }
static void k_moe_stats(void *st, float *, float *, const float *, const int *, int, int, int)
{ missing(st, "moe_stats", "the MoE statistics of a context-parallel group"); }

/* ---- optimizer and gradient arithmetic (fp32) --------------------------------------------- */

static void k_adamw_step(void *st, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1, float b2,
                         float eps, float wd, int t, float scale)
{ if (n) cuda_bf16_adamw_step(p, NULL, g, m, v, n, lr, b1, b2, eps, wd, t, scale, NULL, S(st)->s); }
/* the kernel's fixed-order fp32 sum, read back at the optimizer (the step's end) */
static void k_grad_sumsq_acc(void *st, double *acc, const float *g, size_t n)
{
	struct bf16_state *c = S(st);
	if (!n) return;
	float *d = (float *)grown(c, &c->sumsq, sizeof(double), "cudaMalloc (sum of squares)");
	double *parts = (double *)grown(c, &c->sumsq_parts, sizeof(double) * CUDA_BF16_SUMSQ_PARTS,
	                                "cudaMalloc (sum of squares scratch)");
	if (!d || !parts) return;
	float part = 0.0f;
	note(c, "cudaMemsetAsync", cudaMemsetAsync(d, 0, sizeof(float), c->s));
	cuda_bf16_grad_sumsq(d, g, n, parts, c->s);
	bf16_copy(st, &part, d, sizeof(float), KERN_D2H);
	*acc += part;
}
static void k_grad_scale(void *st, float *g, size_t n, float f)
{ if (n) cuda_bf16_grad_scale(g, n, f, NULL, S(st)->s); }

__global__ static void add_k(float *y, const float *x, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		y[i] += x[i];
}
/* bf16 y += x: both read to fp32, one rounding of the sum */
__global__ static void act_add_k(bf16_t *y, const bf16_t *x, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		y[i] = __float2bfloat16(__bfloat162float(y[i]) + __bfloat162float(x[i]));
}
__global__ static void div_k(float *g, size_t n, float d)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		g[i] /= d;
}
__global__ static void add_div_k(float *y, const float *x, size_t n, float d)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		y[i] += x[i] / d;
}

static void k_add(void *st, float *y, const float *x, size_t n)
{ if (n) add_k<<<grid_for(n), THREADS, 0, S(st)->s>>>(y, x, n); }
static void k_act_add(void *st, float *y, const float *x, size_t n)
{ if (n) act_add_k<<<grid_for(n), THREADS, 0, S(st)->s>>>(B(y), CB(x), n); }
static void k_grad_div(void *st, float *g, size_t n, float d)
{ if (n) div_k<<<grid_for(n), THREADS, 0, S(st)->s>>>(g, n, d); }
static void k_grad_add_div(void *st, float *y, const float *x, size_t n, float d)
{ if (n) add_div_k<<<grid_for(n), THREADS, 0, S(st)->s>>>(y, x, n, d); }

/* ---- the parallel runtime's steps (kernels/cuda_shard.h) --------------------------------------- */
static void k_ce_shard_max(void *st, float *mx, const float *z, int N, int V)
{ cuda_ce_shard_max_bf16(mx, CB(z), N, V, S(st)->s); }
static void k_ce_shard_sums(void *st, float *sums, float *mx, const float *z, const int *t, int N, int V, int v0,
                            int tp)
{ cuda_ce_shard_sums_bf16(sums, mx, CB(z), t, N, V, v0, tp, S(st)->s); }
static void k_ce_shard_loss(void *st, float *losses, float *lse, const float *mx, const float *sums, const int *t,
                            int N)
{ cuda_ce_shard_loss(losses, lse, mx, sums, t, N, S(st)->s); }
static void k_ce_shard_backward(void *st, float *dz, const float *z, const float *lse, const int *t, float dloss,
                                int N, int V, int v0)
{ cuda_ce_shard_backward_bf16(B(dz), CB(z), lse, t, dloss, N, V, v0, S(st)->s); }
static void k_act_copy_rows(void *st, float *dst, size_t ldd, const float *src, size_t lds, size_t rows, size_t w)
{
	const size_t eb = sizeof(bf16_t);
	if (rows && w)
		note(S(st), "cudaMemcpy2DAsync", cudaMemcpy2DAsync(dst, ldd * eb, src, lds * eb, w * eb, rows,
		                                                   cudaMemcpyDeviceToDevice, S(st)->s));
}
static void k_fill(void *st, float *p, size_t n, float value) { cuda_fill_f32(p, n, value, S(st)->s); }

const struct kern_ops kern_cuda_ops = {
	.name = "cuda",
	.act_bytes = 2,
	.host_visible = 0,
	.device_count = bf16_count,
	.create = bf16_create,
	.destroy = bf16_destroy,
	.alloc = bf16_alloc,
	.release = bf16_release,
	.memset0 = bf16_memset0,
	.copy = bf16_copy,
	.sync = bf16_sync,
	.cast_weights = bf16_cast_weights,
	.linear_forward = k_linear_forward,
	.linear_backward_input = k_linear_backward_input,
	.linear_backward_weight = k_linear_backward_weight,
	.embedding_forward = k_embedding_forward,
	.embedding_backward = k_embedding_backward,
	.rmsnorm_forward = k_rmsnorm_forward,
	.rmsnorm_backward = k_rmsnorm_backward,
	.rope_table = k_rope_table,
	.rope_forward = k_rope_forward,
	.rope_backward = k_rope_backward,
	.attention_forward = k_attention_forward,
	.attention_backward = k_attention_backward,
	.attention_block_forward = k_attention_block_forward,
	.attention_block_backward = k_attention_block_backward,
	.swiglu_forward = k_swiglu_forward,
	.swiglu_backward = k_swiglu_backward,
	.gelu_forward = k_gelu_forward,
	.gelu_backward = k_gelu_backward,
	.crossentropy_forward = k_ce_forward,
	.crossentropy_backward = k_ce_backward,
	.moe_router_forward = k_moe_router_forward,
	.moe_aux_loss_forward = k_moe_aux_loss_forward,
	.moe_router_backward = k_moe_router_backward,
	.moe_dispatch = k_moe_dispatch,
	.moe_gather = k_moe_gather,
	.moe_gather_backward = k_moe_gather_backward,
	.moe_combine = k_moe_combine,
	.moe_combine_backward = k_moe_combine_backward,
	.moe_stats = k_moe_stats,
	.adamw_step = k_adamw_step,
	.grad_sumsq_acc = k_grad_sumsq_acc,
	.grad_scale = k_grad_scale,
	.add = k_add,
	.act_add = k_act_add,
	.grad_div = k_grad_div,
	.grad_add_div = k_grad_add_div,
	.ce_shard_max = k_ce_shard_max,
	.ce_shard_sums = k_ce_shard_sums,
	.ce_shard_loss = k_ce_shard_loss,
	.ce_shard_backward = k_ce_shard_backward,
	.act_copy_rows = k_act_copy_rows,
	.fill = k_fill,
};
