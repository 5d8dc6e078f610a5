/* cuda_bf16_act — the activations (SwiGLU, GeLU) and the fused softmax cross-entropy of
 * kernels/cuda_bf16.h. Element-wise kernels are grid-stride loops with the math in fp32. The
 * cross-entropy runs one block per token row: an online max/sum pass over the vocabulary
 * (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax", Algorithm 3) gives
 * the log-sum-exp, and a second pass writes the gradient; the row is read twice, never copied. */
#include "kernels/cuda_bf16_util.h"

#define CE_THREADS 512

/* ---- SwiGLU: out = silu(gate) · up, gate and up side by side in a (N, 2F) row ------------ */

__global__ static void k_swiglu_fwd(bf16_t *out, const bf16_t *gu, int N, int F)
{
	const size_t total = (size_t)N * F;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		const size_t n = i / F, f = i % F;
		const float g = tof(gu[n * 2 * F + f]), u = tof(gu[n * 2 * F + F + f]);
		const float sg = 1.0f / (1.0f + expf(-g));
		out[i] = tob(g * sg * u);
	}
}

/* silu'(g) = σ(g)·(1 + g·(1 - σ(g))) */
__global__ static void k_swiglu_bwd(bf16_t *dgu, const bf16_t *dout, const bf16_t *gu, int N, int F)
{
	const size_t total = (size_t)N * F;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		const size_t n = i / F, f = i % F, ig = n * 2 * F + f, iu = ig + F;
		const float g = tof(gu[ig]), u = tof(gu[iu]), dy = tof(dout[i]);
		const float sg = 1.0f / (1.0f + expf(-g));
		dgu[ig] = tob(dy * u * sg * (1.0f + g * (1.0f - sg)));
		dgu[iu] = tob(dy * g * sg);
	}
}

void cuda_bf16_swiglu_forward(bf16_t *out, const bf16_t *gu, int N, int F, cudaStream_t s)
{
	const size_t n = (size_t)N * F;
	if (n) k_swiglu_fwd<<<bf16_grid(n), BF16_THREADS, 0, s>>>(out, gu, N, F);
}

void cuda_bf16_swiglu_backward(bf16_t *dgu, const bf16_t *dout, const bf16_t *gu, int N, int F, cudaStream_t s)
{
	const size_t n = (size_t)N * F;
	if (n) k_swiglu_bwd<<<bf16_grid(n), BF16_THREADS, 0, s>>>(dgu, dout, gu, N, F);
}

/* ---- GeLU, tanh approximation (Hendrycks & Gimpel 2016) ---------------------------------- */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

__global__ static void k_gelu_fwd(bf16_t *out, const bf16_t *inp, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		const float x = tof(inp[i]);
		out[i] = tob(0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x))));
	}
}

/* each element is read before it is written by the same thread, so dinp may alias dout */
__global__ static void k_gelu_bwd(bf16_t *dinp, const bf16_t *dout, const bf16_t *inp, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		const float x = tof(inp[i]), u = GELU_K * (x + 0.044715f * x * x * x), th = tanhf(u);
		const float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
		dinp[i] = tob(tof(dout[i]) * (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du));
	}
}

void cuda_bf16_gelu_forward(bf16_t *out, const bf16_t *inp, size_t n, cudaStream_t s)
{
	if (n) k_gelu_fwd<<<bf16_grid(n), BF16_THREADS, 0, s>>>(out, inp, n);
}

void cuda_bf16_gelu_backward(bf16_t *dinp, const bf16_t *dout, const bf16_t *inp, size_t n, cudaStream_t s)
{
	if (n) k_gelu_bwd<<<bf16_grid(n), BF16_THREADS, 0, s>>>(dinp, dout, inp, n);
}

/* ---- fused softmax cross-entropy ---------------------------------------------------------- */

/* One block per row. The target logit is read in the first pass, before any thread of the
 * block can overwrite it (dlogits may alias logits; the block reduction is the barrier). */
__global__ static void __launch_bounds__(CE_THREADS)
k_crossentropy(float *losses, float *lse, bf16_t *dlogits, const bf16_t *logits, const int *targets, float dloss, int V)
{
	const size_t row = (size_t)blockIdx.x * V;
	const bf16_t *z = logits + row;
	const int t = targets[blockIdx.x];
	if (t < 0) {
		if (threadIdx.x == 0) { losses[blockIdx.x] = 0.0f; lse[blockIdx.x] = 0.0f; }
		if (dlogits)
			for (int v = threadIdx.x; v < V; v += blockDim.x) dlogits[row + v] = tob(0.0f);
		return;
	}
	float m = -INFINITY, sum = 0.0f;
	for (int v = threadIdx.x; v < V; v += blockDim.x) {
		const float x = tof(z[v]);
		if (x > m) { sum = sum * expf(m - x) + 1.0f; m = x; }
		else sum += expf(x - m);
	}
	const float zt = tof(z[t]);
	block_softmax_stats(m, sum);
	const float l = m + logf(sum);
	if (threadIdx.x == 0) { lse[blockIdx.x] = l; losses[blockIdx.x] = l - zt; }
	if (!dlogits) return;
	bf16_t *dz = dlogits + row;
	for (int v = threadIdx.x; v < V; v += blockDim.x) {
		const float p = expf(tof(z[v]) - l);
		dz[v] = tob(dloss * (p - (v == t ? 1.0f : 0.0f)));
	}
}

void cuda_bf16_crossentropy_fused(float *losses, float *lse, bf16_t *dlogits, const bf16_t *logits, const int *targets,
                                  float dloss, int N, int V, cudaStream_t s)
{
	if (N > 0 && V > 0)
		k_crossentropy<<<(unsigned)N, CE_THREADS, 0, s>>>(losses, lse, dlogits, logits, targets, dloss, V);
}
