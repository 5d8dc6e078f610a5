/* cuda_kernels — the CUDA twins of kernels/cpu.h other than attention: cuBLAS linears and
 * the element-wise and per-row reduction kernels. One block per row for row reductions;
 * weight-gradient reductions over tokens run one thread per column so they are deterministic. */
#include <math.h>
#include <stdio.h>
#include "kernels/cuda.h"

#define THREADS 256

static unsigned grid_for(size_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }

int cuda_last_error(char *err)
{
	cudaError_t e = cudaGetLastError();
	if (e == cudaSuccess) return 0;
	if (err) snprintf(err, 256, "cuda: %s", cudaGetErrorString(e));
	return -1;
}

/* Sum over the block; every thread gets the result. blockDim.x is a multiple of 32, <= 1024. */
__device__ static float block_sum(float v)
{
	__shared__ float part[32];
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads(); /* part[] may still be read by a previous call */
	if (lane == 0) part[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x / 32) ? part[lane] : 0.0f;
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ static float block_max(float v)
{
	__shared__ float part[32];
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads();
	if (lane == 0) part[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x / 32) ? part[lane] : -INFINITY;
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* ---- linear (cuBLAS is column-major: a row-major (r, c) matrix is its (c, r) transpose) ---- */

__global__ static void bias_fill(float *out, const float *bias, int N, int OC)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < (size_t)N * OC) out[i] = bias[i % OC];
}

__global__ static void bias_grad(float *dbias, const float *dout, int N, int OC)
{
	int o = blockIdx.x * blockDim.x + threadIdx.x;
	if (o >= OC) return;
	float s = 0.0f;
	for (int n = 0; n < N; n++) s += dout[(size_t)n * OC + o];
	dbias[o] += s;
}

void cuda_linear_forward(cublasHandle_t h, float *out, const float *inp, const float *w,
                         const float *bias, int N, int IC, int OC)
{
	float one = 1.0f, beta = 0.0f;
	if (bias) {
		cudaStream_t s;
		cublasGetStream(h, &s);
		bias_fill<<<grid_for((size_t)N * OC), THREADS, 0, s>>>(out, bias, N, OC);
		beta = 1.0f;
	}
	/* outᵀ (OC, N) = w (OC, IC) · inpᵀ (IC, N) */
	cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, &one, w, IC, inp, IC, &beta, out, OC);
}

void cuda_linear_backward_input(cublasHandle_t h, float *dinp, const float *dout, const float *w,
                                int N, int IC, int OC, int accumulate)
{
	float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
	/* dinpᵀ (IC, N) = wᵀ (IC, OC) · doutᵀ (OC, N) */
	cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, &one, w, IC, dout, OC, &beta, dinp, IC);
}

void cuda_linear_backward_weight(cublasHandle_t h, float *dw, float *dbias, const float *dout,
                                 const float *inp, int N, int IC, int OC)
{
	float one = 1.0f;
	/* dwᵀ (IC, OC) += inpᵀ (IC, N) · dout (N, OC) */
	cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, N, &one, inp, IC, dout, OC, &one, dw, IC);
	if (dbias) {
		cudaStream_t s;
		cublasGetStream(h, &s);
		bias_grad<<<grid_for((size_t)OC), THREADS, 0, s>>>(dbias, dout, N, OC);
	}
}

/* ---- embedding ------------------------------------------------------------------- */

__global__ static void embedding_fwd(float *out, const int *tokens, const float *wte, int N, int C, int v0, int V)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)N * C) return;
	int n = (int)(i / C), c = (int)(i % C), r = tokens[n] - v0;
	out[i] = (r >= 0 && r < V) ? wte[(size_t)r * C + c] : 0.0f;
}

/* one thread per column walks the tokens in order: deterministic, no atomics */
__global__ static void embedding_bwd(float *dwte, const float *dout, const int *tokens, int N, int C, int v0, int V)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= C) return;
	for (int n = 0; n < N; n++) {
		int r = tokens[n] - v0;
		if (r >= 0 && r < V) dwte[(size_t)r * C + c] += dout[(size_t)n * C + c];
	}
}

void cuda_embedding_forward(float *out, const int *tokens, const float *wte, int N, int C, int v0, int V,
                            cudaStream_t s)
{
	embedding_fwd<<<grid_for((size_t)N * C), THREADS, 0, s>>>(out, tokens, wte, N, C, v0, V);
}

void cuda_embedding_backward(float *dwte, const float *dout, const int *tokens, int N, int C, int v0, int V,
                             cudaStream_t s)
{
	embedding_bwd<<<grid_for((size_t)C), THREADS, 0, s>>>(dwte, dout, tokens, N, C, v0, V);
}

/* ---- RMSNorm ----------------------------------------------------------------------- */

__global__ static void rmsnorm_fwd(float *out, float *rstd, const float *inp, const float *w, int C, float eps)
{
	const float *x = inp + (size_t)blockIdx.x * C;
	float *o = out + (size_t)blockIdx.x * C;
	float ss = 0.0f;
	for (int c = threadIdx.x; c < C; c += blockDim.x) ss += x[c] * x[c];
	ss = block_sum(ss);
	float r = rsqrtf(ss / C + eps);
	for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = x[c] * r * w[c];
	if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

__global__ static void rmsnorm_bwd_inp(float *dinp, const float *dout, const float *inp, const float *w,
                                       const float *rstd, int C)
{
	size_t row = (size_t)blockIdx.x * C;
	const float *x = inp + row, *dy = dout + row;
	float *dx = dinp + row;
	float r = rstd[blockIdx.x], dot = 0.0f;
	for (int c = threadIdx.x; c < C; c += blockDim.x) dot += w[c] * dy[c] * x[c];
	dot = block_sum(dot);
	float k = dot * r * r * r / C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) dx[c] += r * w[c] * dy[c] - k * x[c];
}

__global__ static void rmsnorm_bwd_w(float *dw, const float *dout, const float *inp, const float *rstd, int N, int C)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= C) return;
	float s = 0.0f;
	for (int n = 0; n < N; n++) s += dout[(size_t)n * C + c] * inp[(size_t)n * C + c] * rstd[n];
	dw[c] += s;
}

void cuda_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                          float eps, cudaStream_t s)
{
	rmsnorm_fwd<<<N, THREADS, 0, s>>>(out, rstd, inp, w, C, eps);
}

void cuda_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                           const float *rstd, int N, int C, cudaStream_t s)
{
	rmsnorm_bwd_inp<<<N, THREADS, 0, s>>>(dinp, dout, inp, w, rstd, C);
	rmsnorm_bwd_w<<<grid_for((size_t)C), THREADS, 0, s>>>(dw, dout, inp, rstd, N, C);
}

/* ---- RoPE -------------------------------------------------------------------------- */

__global__ static void rope_tab(float *tab, const int *pos, int T, int d, double theta)
{
	int half = d / 2;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)T * half) return;
	int t = (int)(i / half), k = (int)(i % half);
	double a = (pos ? pos[t] : t) * pow(theta, -2.0 * k / d);
	tab[2 * i] = (float)cos(a);
	tab[2 * i + 1] = (float)sin(a);
}

__global__ static void rope_rotate(float *x, const float *tab, int B, int T, int nh, int d, int ld, float sign)
{
	int half = d / 2;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)B * T * nh * half) return;
	int k = (int)(i % half), h = (int)(i / half % nh);
	size_t bt = i / half / nh;
	int t = (int)(bt % T);
	float c = tab[((size_t)t * half + k) * 2], s = sign * tab[((size_t)t * half + k) * 2 + 1];
	float *x1 = x + bt * ld + (size_t)h * d + k, *x2 = x1 + half;
	float a = *x1, b = *x2;
	*x1 = a * c - b * s;
	*x2 = b * c + a * s;
}

void cuda_rope_table(float *tab, const int *pos, int T, int d, double theta, cudaStream_t s)
{
	rope_tab<<<grid_for((size_t)T * (d / 2)), THREADS, 0, s>>>(tab, pos, T, d, theta);
}

void cuda_rope_forward(float *x, const float *tab, int B, int T, int nh, int d, int ld, cudaStream_t s)
{
	rope_rotate<<<grid_for((size_t)B * T * nh * (d / 2)), THREADS, 0, s>>>(x, tab, B, T, nh, d, ld, 1.0f);
}

void cuda_rope_backward(float *dx, const float *tab, int B, int T, int nh, int d, int ld, cudaStream_t s)
{
	rope_rotate<<<grid_for((size_t)B * T * nh * (d / 2)), THREADS, 0, s>>>(dx, tab, B, T, nh, d, ld, -1.0f);
}

/* ---- SwiGLU, GeLU -------------------------------------------------------------------- */

__global__ static void swiglu_fwd(float *out, const float *gu, int N, int F)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)N * F) return;
	size_t n = i / F, f = i % F;
	float g = gu[n * 2 * F + f], u = gu[n * 2 * F + F + f];
	out[i] = g / (1.0f + expf(-g)) * u;
}

__global__ static void swiglu_bwd(float *dgu, const float *dout, const float *gu, int N, int F)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)N * F) return;
	size_t n = i / F, f = i % F;
	float g = gu[n * 2 * F + f], u = gu[n * 2 * F + F + f], dy = dout[i];
	float sg = 1.0f / (1.0f + expf(-g));
	dgu[n * 2 * F + f] = dy * u * sg * (1.0f + g * (1.0f - sg));
	dgu[n * 2 * F + F + f] = dy * g * sg;
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

__global__ static void gelu_fwd(float *out, const float *inp, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	float x = inp[i];
	out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
}

__global__ static void gelu_bwd(float *dinp, const float *dout, const float *inp, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	float x = inp[i], th = tanhf(GELU_K * (x + 0.044715f * x * x * x));
	float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
	dinp[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du);
}

void cuda_swiglu_forward(float *out, const float *gu, int N, int F, cudaStream_t s)
{
	swiglu_fwd<<<grid_for((size_t)N * F), THREADS, 0, s>>>(out, gu, N, F);
}

void cuda_swiglu_backward(float *dgu, const float *dout, const float *gu, int N, int F, cudaStream_t s)
{
	swiglu_bwd<<<grid_for((size_t)N * F), THREADS, 0, s>>>(dgu, dout, gu, N, F);
}

void cuda_gelu_forward(float *out, const float *inp, size_t n, cudaStream_t s)
{
	gelu_fwd<<<grid_for(n), THREADS, 0, s>>>(out, inp, n);
}

void cuda_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n, cudaStream_t s)
{
	gelu_bwd<<<grid_for(n), THREADS, 0, s>>>(dinp, dout, inp, n);
}

/* ---- cross-entropy ------------------------------------------------------------------ */

__global__ static void ce_fwd(float *losses, float *lse, const float *logits, const int *targets, int V)
{
	const float *z = logits + (size_t)blockIdx.x * V;
	int t = targets[blockIdx.x];
	if (t < 0) { /* uniform across the block, so the early return skips no barrier */
		if (threadIdx.x == 0) losses[blockIdx.x] = lse[blockIdx.x] = 0.0f;
		return;
	}
	float mx = -INFINITY;
	for (int v = threadIdx.x; v < V; v += blockDim.x) mx = fmaxf(mx, z[v]);
	mx = block_max(mx);
	float s = 0.0f;
	for (int v = threadIdx.x; v < V; v += blockDim.x) s += expf(z[v] - mx);
	s = block_sum(s);
	if (threadIdx.x == 0) {
		float l = mx + logf(s);
		lse[blockIdx.x] = l;
		losses[blockIdx.x] = l - z[t];
	}
}

__global__ static void ce_bwd(float *dlogits, const float *logits, const float *lse, const int *targets,
                              float dloss, int V)
{
	size_t row = (size_t)blockIdx.x * V;
	int t = targets[blockIdx.x];
	float l = lse[blockIdx.x];
	for (int v = threadIdx.x; v < V; v += blockDim.x) {
		float g = t < 0 ? 0.0f : dloss * (expf(logits[row + v] - l) - (v == t ? 1.0f : 0.0f));
		dlogits[row + v] = g;
	}
}

void cuda_crossentropy_forward(float *losses, float *lse, const float *logits, const int *targets,
                               int N, int V, cudaStream_t s)
{
	ce_fwd<<<N, THREADS, 0, s>>>(losses, lse, logits, targets, V);
}

void cuda_crossentropy_backward(float *dlogits, const float *logits, const float *lse, const int *targets,
                                float dloss, int N, int V, cudaStream_t s)
{
	ce_bwd<<<N, THREADS, 0, s>>>(dlogits, logits, lse, targets, dloss, V);
}

/* ---- optimizer ---------------------------------------------------------------------- */

/* AdamW as kernels/optim.c (Loshchilov & Hutter 2019, Algorithm 2; PyTorch's lr-scaled decay) */
__global__ static void adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1, float b2,
                             float eps, float wd, float c1, float c2, float gs)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	float gi = g[i] * gs;
	float mi = b1 * m[i] + (1.0f - b1) * gi, vi = b2 * v[i] + (1.0f - b2) * gi * gi;
	m[i] = mi;
	v[i] = vi;
	p[i] -= lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * p[i]);
}

void cuda_adamw_step(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                     float beta1, float beta2, float eps, float weight_decay, int t, float grad_scale,
                     cudaStream_t s)
{
	float c1 = (float)(1.0 - pow(beta1, t)), c2 = (float)(1.0 - pow(beta2, t));
	adamw<<<grid_for(n), THREADS, 0, s>>>(param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, c1, c2, grad_scale);
}

__global__ static void sumsq(float *out, const float *g, size_t n)
{
	float s = 0.0f;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		s += g[i] * g[i];
	s = block_sum(s);
	if (threadIdx.x == 0) atomicAdd(out, s);
}

__global__ static void scale(float *g, size_t n, float f)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) g[i] *= f;
}

void cuda_grad_sumsq(float *out, const float *g, size_t n, cudaStream_t s)
{
	unsigned blocks = grid_for(n);
	sumsq<<<blocks < 1024 ? (blocks ? blocks : 1) : 1024, THREADS, 0, s>>>(out, g, n);
}

void cuda_grad_scale(float *g, size_t n, float factor, cudaStream_t s)
{
	if (n) scale<<<grid_for(n), THREADS, 0, s>>>(g, n, factor);
}
