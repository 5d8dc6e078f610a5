/* backend_cuda — the fp32 CUDA row of kernels/backend.h ("cuda-fp32"; the default CUDA row,
 * "cuda", is the bf16 one of kernels/backend_cuda_bf16.cu): device memory (cudaMalloc), one
 * compute stream and a cuBLAS handle per rank, and the fp32 CUDA twins of kernels/cuda.h.
 * The entries the twins lack run here: y += x, the data-parallel divisions and the double sum
 * of squares as small element-wise kernels; MoE routing, dispatch, gather and combine as a
 * round trip through the CPU reference kernels (copy in, compute, copy out: correct, not fast,
 * until kernels of their own exist); the vocabulary-parallel loss pieces and the fill are the
 * fp32 kernels of kernels/cuda_shard.h, the strided row copy one cudaMemcpy2DAsync. Blockwise attention (context parallelism) is not wired:
 * train_supported_on keeps cp > 1 off this row, and a call records an error that sync reports.
 * This row exists only in a build that links it (`make CUDA=1`): the CPU build's reference to
 * kern_cuda_fp32_ops is weak.
 *
 * Ownership: the state owns the stream, the handle and a small device scratch; buffers are
 * the caller's (through struct kern). Every kernel and copy is issued on the state's stream;
 * copies to or from the host wait for it, so a host read sees every kernel issued before.
 * Invariant: an entry that cannot report an error (they return void) records the first one in
 * the state, and sync() returns it: nothing fails silently. Results match the CPU row to fp32
 * rounding (reduction order differs; kernels/cuda.h). */
#define KERN_CUDA_FP32_ROW_DEFINED
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "kernels/cuda.h"
#include "kernels/cuda_shard.h"

extern "C" const struct kern_ops kern_cuda_fp32_ops;

#define THREADS 256

struct cuda_state {
	int device;
	cudaStream_t s;
	cublasHandle_t h;
	double *dsum;            /* (1) device accumulator of grad_sumsq_acc */
	char err[256];           /* the first error an entry met; "" when none */
};

static struct cuda_state *S(void *st) { return (struct cuda_state *)st; }

static void note(struct cuda_state *c, const char *what, cudaError_t e)
{
	if (e != cudaSuccess && !c->err[0])
		snprintf(c->err, sizeof c->err, "backend cuda-fp32: %s: %s", what, cudaGetErrorString(e));
}

static unsigned grid_for(size_t n)
{
	size_t g = (n + THREADS - 1) / THREADS;
	return (unsigned)(g ? (g < 65535u * 16 ? g : 65535u * 16) : 1);
}

static int cuda_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError(); /* no driver or no device: clear the error, report none */
		return 0;
	}
	return n;
}

static int cuda_create(void **state, int device, char *err)
{
	struct cuda_state *c = (struct cuda_state *)calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, 256, "backend cuda-fp32: out of memory");
		return -1;
	}
	c->device = device;
	cudaError_t e = cudaSetDevice(device);
	if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking);
	if (e == cudaSuccess) e = cudaMalloc((void **)&c->dsum, sizeof(double));
	if (e != cudaSuccess) {
		snprintf(err, 256, "backend cuda-fp32: device %d: %s", device, cudaGetErrorString(e));
		if (c->s) cudaStreamDestroy(c->s);
		free(c);
		return -1;
	}
	if (cublasCreate(&c->h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(c->h, c->s) != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, 256, "backend cuda-fp32: device %d: cublasCreate failed", device);
		cudaFree(c->dsum);
		cudaStreamDestroy(c->s);
		free(c);
		return -1;
	}
	*state = c;
	return 0;
}

static void cuda_destroy(void *st)
{
	struct cuda_state *c = S(st);
	if (!c) return;
	cudaStreamSynchronize(c->s);
	cublasDestroy(c->h);
	cudaFree(c->dsum);
	cudaStreamDestroy(c->s);
	free(c);
}

/* ---- memory ------------------------------------------------------------------------------ */

static void *cuda_alloc(void *st, size_t bytes)
{
	void *p = NULL;
	cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
	if (e != cudaSuccess) {
		cudaGetLastError(); /* out of memory is the caller's to report, not sticky */
		(void)st;
		return NULL;
	}
	return p;
}

static void cuda_release(void *st, void *p)
{
	/* the stream may still use the block: let it finish first */
	note(S(st), "synchronize before cudaFree", cudaStreamSynchronize(S(st)->s));
	note(S(st), "cudaFree", cudaFree(p));
}

static void cuda_memset0(void *st, void *p, size_t bytes)
{
	note(S(st), "cudaMemsetAsync", cudaMemsetAsync(p, 0, bytes, S(st)->s));
}

static void cuda_copy(void *st, void *dst, const void *src, size_t bytes, enum kern_copy dir)
{
	struct cuda_state *c = S(st);
	const cudaMemcpyKind kind = dir == KERN_H2D ? cudaMemcpyHostToDevice
	                          : dir == KERN_D2H ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
	note(c, "cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, kind, c->s));
	/* the host buffer may be read or freed as soon as we return */
	if (dir != KERN_D2D) note(c, "cudaStreamSynchronize", cudaStreamSynchronize(c->s));
}

static int cuda_sync(void *st, char *err)
{
	struct cuda_state *c = S(st);
	note(c, "cudaStreamSynchronize", cudaStreamSynchronize(c->s));
	note(c, "a kernel", cudaGetLastError());
	if (!c->err[0]) return 0;
	snprintf(err, 256, "%s", c->err);
	return -1;
}

/* ---- the fp32 twins -------------------------------------------------------------------------- */

static void k_linear_forward(void *st, float *out, const float *inp, const float *w, const float *bias, int N, int IC,
                             int OC)
{ cuda_linear_forward(S(st)->h, out, inp, w, bias, N, IC, OC); }
static void k_linear_backward_input(void *st, float *dinp, const float *dout, const float *w, int N, int IC, int OC,
                                    int acc)
{ cuda_linear_backward_input(S(st)->h, dinp, dout, w, N, IC, OC, acc); }
static void k_linear_backward_weight(void *st, float *dw, float *dbias, const float *dout, const float *inp, int N,
                                     int IC, int OC)
{ cuda_linear_backward_weight(S(st)->h, dw, dbias, dout, inp, N, IC, OC); }
static void k_embedding_forward(void *st, float *out, const int *tok, const float *wte, int N, int C, int v0, int V)
{ cuda_embedding_forward(out, tok, wte, N, C, v0, V, S(st)->s); }
static void k_embedding_backward(void *st, float *dwte, const float *dout, const int *tok, int N, int C, int v0, int V)
{ cuda_embedding_backward(dwte, dout, tok, N, C, v0, V, S(st)->s); }
static void k_rmsnorm_forward(void *st, float *out, float *rstd, const float *inp, const float *w, int N, int C,
                              float eps)
{ cuda_rmsnorm_forward(out, rstd, inp, w, N, C, eps, S(st)->s); }
static void k_rmsnorm_backward(void *st, float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                               const float *rstd, int N, int C)
{ cuda_rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C, S(st)->s); }

/* the positions arrive from the host: staged in device memory for the table kernel */
static void k_rope_table(void *st, float *tab, const int *pos, int T, int d, double theta)
{
	struct cuda_state *c = S(st);
	int *dpos = NULL;
	if (pos) {
		note(c, "cudaMalloc (rope positions)", cudaMalloc((void **)&dpos, sizeof(int) * (size_t)T));
		if (!dpos) return;
		cuda_copy(st, dpos, pos, sizeof(int) * (size_t)T, KERN_H2D);
	}
	cuda_rope_table(tab, dpos, T, d, theta, c->s);
	if (dpos) cuda_release(st, dpos);
}
static void k_rope_forward(void *st, float *x, const float *tab, int B, int T, int nh, int d, int ld)
{ cuda_rope_forward(x, tab, B, T, nh, d, ld, S(st)->s); }
static void k_rope_backward(void *st, float *dx, const float *tab, int B, int T, int nh, int d, int ld)
{ cuda_rope_backward(dx, tab, B, T, nh, d, ld, S(st)->s); }
static void k_attention_forward(void *st, float *out, float *lse, const float *qkv, float *scr, int B, int T, int H,
                                int Hkv, int d)
{
	if (d > CUDA_ATT_MAX_D && !S(st)->err[0])
		snprintf(S(st)->err, sizeof S(st)->err, "backend cuda-fp32: head_dim %d is above CUDA_ATT_MAX_D (%d)", d,
		         CUDA_ATT_MAX_D);
	else cuda_attention_forward(out, lse, qkv, scr, B, T, H, Hkv, d, S(st)->s);
}
static void k_attention_backward(void *st, float *dqkv, const float *dout, const float *qkv, const float *out,
                                 const float *lse, float *scr, int B, int T, int H, int Hkv, int d)
{
	if (d <= CUDA_ATT_MAX_D) cuda_attention_backward(dqkv, dout, qkv, out, lse, scr, B, T, H, Hkv, d, S(st)->s);
}
static void k_attention_block_forward(void *st, float *, float *, const float *, const float *, const float *, float *,
                                      const struct att_block *)
{
	if (!S(st)->err[0])
		snprintf(S(st)->err, sizeof S(st)->err, "backend cuda-fp32: blockwise attention (context parallelism) is not "
		         "wired; run cp > 1 on --backend cpu");
}
static void k_attention_block_backward(void *st, float *, float *, float *, const float *, const float *,
                                       const float *, const float *, const float *, const float *, float *,
                                       const struct att_block *)
{
	k_attention_block_forward(st, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
}
static void k_swiglu_forward(void *st, float *out, const float *gu, int N, int F)
{ cuda_swiglu_forward(out, gu, N, F, S(st)->s); }
static void k_swiglu_backward(void *st, float *dgu, const float *dout, const float *gu, int N, int F)
{ cuda_swiglu_backward(dgu, dout, gu, N, F, S(st)->s); }
static void k_gelu_forward(void *st, float *out, const float *inp, size_t n)
{ cuda_gelu_forward(out, inp, n, S(st)->s); }
static void k_gelu_backward(void *st, float *dinp, const float *dout, const float *inp, size_t n)
{ cuda_gelu_backward(dinp, dout, inp, n, S(st)->s); }
static void k_ce_forward(void *st, float *losses, float *lse, const float *logits, const int *tgt, int N, int V)
{ cuda_crossentropy_forward(losses, lse, logits, tgt, N, V, S(st)->s); }
static void k_ce_backward(void *st, float *dlogits, const float *logits, const float *lse, const int *tgt, float dloss,
                          int N, int V)
{ cuda_crossentropy_backward(dlogits, logits, lse, tgt, dloss, N, V, S(st)->s); }
static void k_adamw_step(void *st, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1, float b2,
                         float eps, float wd, int t, float scale)
{ if (n) cuda_adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, t, scale, S(st)->s); }
static void k_grad_scale(void *st, float *g, size_t n, float f) { cuda_grad_scale(g, n, f, S(st)->s); }

/* ---- element-wise entries without a twin ------------------------------------------------- */

__global__ static void add_k(float *y, const float *x, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		y[i] += x[i];
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
/* Σ g² in double: per-thread partial sums, one atomicAdd per warp (sm_60+ has double atomics) */
__global__ static void sumsq_k(double *out, const float *g, size_t n)
{
	double s = 0.0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		s += (double)g[i] * g[i];
	for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
	if (threadIdx.x % 32 == 0) atomicAdd(out, s);
}

static void k_add(void *st, float *y, const float *x, size_t n)
{ if (n) add_k<<<grid_for(n), THREADS, 0, S(st)->s>>>(y, x, n); }
static void k_grad_div(void *st, float *g, size_t n, float d)
{ if (n) div_k<<<grid_for(n), THREADS, 0, S(st)->s>>>(g, n, d); }
static void k_grad_add_div(void *st, float *y, const float *x, size_t n, float d)
{ if (n) add_div_k<<<grid_for(n), THREADS, 0, S(st)->s>>>(y, x, n, d); }
static void k_grad_sumsq_acc(void *st, double *acc, const float *g, size_t n)
{
	struct cuda_state *c = S(st);
	if (!n) return;
	double part = 0.0;
	note(c, "cudaMemsetAsync", cudaMemsetAsync(c->dsum, 0, sizeof(double), c->s));
	sumsq_k<<<grid_for(n) < 1024 ? grid_for(n) : 1024, THREADS, 0, c->s>>>(c->dsum, g, n);
	cuda_copy(st, &part, c->dsum, sizeof(double), KERN_D2H);
	*acc += part;
}

/* ---- MoE through the CPU reference (a round trip per call) ------------------------------------ */

/* n bytes of device memory in a new host buffer (NULL, with the error noted, on failure) */
static void *in_host(void *st, const void *dev, size_t bytes)
{
	void *h = malloc(bytes ? bytes : 1);
	if (!h) {
		if (!S(st)->err[0]) snprintf(S(st)->err, sizeof S(st)->err, "backend cuda-fp32: out of host memory");
		return NULL;
	}
	if (dev && bytes) cuda_copy(st, h, dev, bytes, KERN_D2H);
	return h;
}
static void out_dev(void *st, void *dev, void *host, size_t bytes)
{
	if (host && bytes) cuda_copy(st, dev, host, bytes, KERN_H2D);
	free(host);
}

#define FB(n) (sizeof(float) * (size_t)(n))
#define IB(n) (sizeof(int) * (size_t)(n))

static void k_moe_router_forward(void *st, float *probs, int *ti, float *tw, const float *logits, int N, int E, int k)
{
	float *hl = (float *)in_host(st, logits, FB(N * E)), *hp = (float *)in_host(st, NULL, FB(N * E));
	int *hi = (int *)in_host(st, NULL, IB(N * k));
	float *hw = (float *)in_host(st, NULL, FB(N * k));
	if (hl && hp && hi && hw) moe_router_forward(hp, hi, hw, hl, N, E, k);
	out_dev(st, probs, hp, FB(N * E));
	out_dev(st, ti, hi, IB(N * k));
	out_dev(st, tw, hw, FB(N * k));
	free(hl);
}
static void k_moe_aux_loss_forward(void *st, float *loss, float *frac, const float *probs, const int *ti, int N, int E,
                                   int k)
{
	float *hp = (float *)in_host(st, probs, FB(N * E)), *hf = (float *)in_host(st, NULL, FB(E));
	int *hi = (int *)in_host(st, ti, IB(N * k));
	if (hp && hf && hi) moe_aux_loss_forward(loss, hf, hp, hi, N, E, k);
	out_dev(st, frac, hf, FB(E));
	free(hp);
	free(hi);
}
static void k_moe_router_backward(void *st, float *dlogits, const float *dtw, const float *probs, const int *ti,
                                  const float *tw, const float *frac, float daux, int N, int E, int k)
{
	float *hd = (float *)in_host(st, NULL, FB(N * E)), *hdtw = (float *)in_host(st, dtw, FB(N * k));
	float *hp = (float *)in_host(st, probs, FB(N * E)), *htw = (float *)in_host(st, tw, FB(N * k));
	float *hf = (float *)in_host(st, frac, FB(E));
	int *hi = (int *)in_host(st, ti, IB(N * k));
	if (hd && hdtw && hp && htw && hf && hi) moe_router_backward(hd, hdtw, hp, hi, htw, hf, daux, N, E, k);
	out_dev(st, dlogits, hd, FB(N * E));
	free(hdtw); free(hp); free(htw); free(hf); free(hi);
}
static void k_moe_dispatch(void *st, int *off, int *perm, int *slot_of, const int *ti, int N, int E, int k)
{
	int *hi = (int *)in_host(st, ti, IB(N * k)), *ho = (int *)in_host(st, NULL, IB(E + 1));
	int *hp = (int *)in_host(st, NULL, IB(N * k)), *hs = (int *)in_host(st, NULL, IB(N * k));
	if (hi && ho && hp && hs) moe_dispatch(ho, hp, hs, hi, N, E, k);
	out_dev(st, off, ho, IB(E + 1));
	out_dev(st, perm, hp, IB(N * k));
	out_dev(st, slot_of, hs, IB(N * k));
	free(hi);
}
static void k_moe_gather(void *st, float *xe, const float *x, const int *perm, int N, int C, int k)
{
	float *hxe = (float *)in_host(st, NULL, FB((size_t)N * k * C)), *hx = (float *)in_host(st, x, FB((size_t)N * C));
	int *hp = (int *)in_host(st, perm, IB(N * k));
	if (hxe && hx && hp) moe_gather(hxe, hx, hp, N, C, k);
	out_dev(st, xe, hxe, FB((size_t)N * k * C));
	free(hx);
	free(hp);
}
static void k_moe_gather_backward(void *st, float *dx, const float *dxe, const int *slot_of, int N, int C, int k)
{
	float *hdx = (float *)in_host(st, dx, FB((size_t)N * C)), *hdxe = (float *)in_host(st, dxe, FB((size_t)N * k * C));
	int *hs = (int *)in_host(st, slot_of, IB(N * k));
	if (hdx && hdxe && hs) moe_gather_backward(hdx, hdxe, hs, N, C, k);
	out_dev(st, dx, hdx, FB((size_t)N * C));
	free(hdxe);
	free(hs);
}
static void k_moe_combine(void *st, float *out, const float *ye, const float *tw, const int *slot_of, int N, int C,
                          int k)
{
	float *ho = (float *)in_host(st, out, FB((size_t)N * C)), *hy = (float *)in_host(st, ye, FB((size_t)N * k * C));
	float *htw = (float *)in_host(st, tw, FB(N * k));
	int *hs = (int *)in_host(st, slot_of, IB(N * k));
	if (ho && hy && htw && hs) moe_combine(ho, hy, htw, hs, N, C, k);
	out_dev(st, out, ho, FB((size_t)N * C));
	free(hy); free(htw); free(hs);
}
static void k_moe_combine_backward(void *st, float *dye, float *dtw, const float *dout, const float *ye,
                                   const float *tw, const int *slot_of, int N, int C, int k)
{
	float *hdye = (float *)in_host(st, NULL, FB((size_t)N * k * C)), *hdtw = (float *)in_host(st, NULL, FB(N * k));
	float *hdo = (float *)in_host(st, dout, FB((size_t)N * C)), *hy = (float *)in_host(st, ye, FB((size_t)N * k * C));
	float *htw = (float *)in_host(st, tw, FB(N * k));
	int *hs = (int *)in_host(st, slot_of, IB(N * k));
	if (hdye && hdtw && hdo && hy && htw && hs) moe_combine_backward(hdye, hdtw, hdo, hy, htw, hs, N, C, k);
	out_dev(st, dye, hdye, FB((size_t)N * k * C));
	out_dev(st, dtw, hdtw, FB(N * k));
	free(hdo); free(hy); free(htw); free(hs);
}
static void k_moe_stats(void *st, float *cnt, float *psum, const float *probs, const int *ti, int N, int E, int k)
{
	float *hc = (float *)in_host(st, NULL, FB(E)), *hps = (float *)in_host(st, NULL, FB(E));
	float *hp = (float *)in_host(st, probs, FB(N * E));
	int *hi = (int *)in_host(st, ti, IB(N * k));
	if (hc && hps && hp && hi) kern_cpu_ops.moe_stats(NULL, hc, hps, hp, hi, N, E, k);
	out_dev(st, cnt, hc, FB(E));
	out_dev(st, psum, hps, FB(E));
	free(hp);
	free(hi);
}

/* ---- the parallel runtime's steps (kernels/cuda_shard.h) --------------------------------------- */
static void k_ce_shard_max(void *st, float *mx, const float *z, int N, int V)
{ cuda_ce_shard_max_f32(mx, z, N, V, S(st)->s); }
static void k_ce_shard_sums(void *st, float *sums, float *mx, const float *z, const int *t, int N, int V, int v0,
                            int tp)
{ cuda_ce_shard_sums_f32(sums, mx, z, t, N, V, v0, tp, S(st)->s); }
static void k_ce_shard_loss(void *st, float *losses, float *lse, const float *mx, const float *sums, const int *t,
                            int N)
{ cuda_ce_shard_loss(losses, lse, mx, sums, t, N, S(st)->s); }
static void k_ce_shard_backward(void *st, float *dz, const float *z, const float *lse, const int *t, float dloss,
                                int N, int V, int v0)
{ cuda_ce_shard_backward_f32(dz, z, lse, t, dloss, N, V, v0, S(st)->s); }
static void k_act_copy_rows(void *st, float *dst, size_t ldd, const float *src, size_t lds, size_t rows, size_t w)
{
	if (rows && w)
		note(S(st), "cudaMemcpy2DAsync", cudaMemcpy2DAsync(dst, ldd * sizeof(float), src, lds * sizeof(float),
		                                                   w * sizeof(float), rows, cudaMemcpyDeviceToDevice, S(st)->s));
}
static void k_fill(void *st, float *p, size_t n, float value) { cuda_fill_f32(p, n, value, S(st)->s); }

const struct kern_ops kern_cuda_fp32_ops = {
	.name = "cuda-fp32",
	.act_bytes = sizeof(float),
	.host_visible = 0,
	.device_count = cuda_count,
	.create = cuda_create,
	.destroy = cuda_destroy,
	.alloc = cuda_alloc,
	.release = cuda_release,
	.memset0 = cuda_memset0,
	.copy = cuda_copy,
	.sync = cuda_sync,
	.cast_weights = NULL,
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
	.act_add = k_add,
	.grad_div = k_grad_div,
	.grad_add_div = k_grad_add_div,
	.ce_shard_max = k_ce_shard_max,
	.ce_shard_sums = k_ce_shard_sums,
	.ce_shard_loss = k_ce_shard_loss,
	.ce_shard_backward = k_ce_shard_backward,
	.act_copy_rows = k_act_copy_rows,
	.fill = k_fill,
};
