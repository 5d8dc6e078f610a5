/* cuda_shard — the kernels of kernels/cuda_shard.h, written once over the activation type
 * (float or bf16) and instantiated for both rows. Specification: kernels/cpu_shard.c. */
#include <math.h>
#include "kernels/cuda_bf16_util.h"
#include "kernels/cuda_shard.h"

#define ROW_THREADS 256

__device__ static inline float ld(float v) { return v; }
__device__ static inline float ld(bf16_t v) { return tof(v); }
__device__ static inline void st(float *p, float v) { *p = v; }
__device__ static inline void st(bf16_t *p, float v) { *p = tob(v); }

template <typename T> __global__ static void max_k(float *mx, const T *logits, int V)
{
	const T *z = logits + (size_t)blockIdx.x * V;
	float m = -INFINITY;
	for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, ld(z[v]));
	m = block_max(m);
	if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

template <typename T>
__global__ static void sums_k(float *sums, float *maxima, const T *logits, const int *targets, int N, int V, int v0,
                              int tp)
{
	const int i = blockIdx.x;
	const T *z = logits + (size_t)i * V;
	float mx = maxima[i];
	for (int q = 1; q < tp; q++) mx = fmaxf(mx, maxima[(size_t)q * N + i]);
	float s = 0.0f;
	for (int v = threadIdx.x; v < V; v += blockDim.x) s += expf(ld(z[v]) - mx);
	s = block_sum(s);
	if (threadIdx.x == 0) {
		maxima[i] = mx;
		sums[i] = s;
		const int t = targets[i] - v0;
		sums[N + i] = targets[i] >= 0 && t >= 0 && t < V ? ld(z[t]) : 0.0f;
	}
}

__global__ static void loss_k(float *losses, float *lse, const float *maxima, const float *sums, const int *targets,
                              int N)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) {
		if (targets[i] < 0) { losses[i] = 0.0f; lse[i] = 0.0f; continue; }
		const float l = maxima[i] + logf(sums[i]);
		lse[i] = l;
		losses[i] = l - sums[N + i];
	}
}

template <typename T>
__global__ static void backward_k(T *dlogits, const T *logits, const float *lse, const int *targets, float dloss,
                                  int V, int v0)
{
	const size_t row = (size_t)blockIdx.x * V;
	const int tg = targets[blockIdx.x], t = tg - v0;
	const float l = lse[blockIdx.x];
	for (int v = threadIdx.x; v < V; v += blockDim.x) {
		float g = 0.0f;
		if (tg >= 0) g = dloss * expf(ld(logits[row + v]) - l) - (v == t ? dloss : 0.0f);
		st(dlogits + row + v, g);   /* one thread reads and writes each element: in place is safe */
	}
}

__global__ static void fill_k(float *p, size_t n, float value)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = value;
}

extern "C" {

void cuda_ce_shard_max_f32(float *mx, const float *logits, int N, int V, cudaStream_t s)
{ if (N > 0 && V > 0) max_k<float><<<(unsigned)N, ROW_THREADS, 0, s>>>(mx, logits, V); }
void cuda_ce_shard_max_bf16(float *mx, const bf16_t *logits, int N, int V, cudaStream_t s)
{ if (N > 0 && V > 0) max_k<bf16_t><<<(unsigned)N, ROW_THREADS, 0, s>>>(mx, logits, V); }

void cuda_ce_shard_sums_f32(float *sums, float *maxima, const float *logits, const int *targets, int N, int V, int v0,
                            int tp, cudaStream_t s)
{ if (N > 0 && V > 0) sums_k<float><<<(unsigned)N, ROW_THREADS, 0, s>>>(sums, maxima, logits, targets, N, V, v0, tp); }
void cuda_ce_shard_sums_bf16(float *sums, float *maxima, const bf16_t *logits, const int *targets, int N, int V,
                             int v0, int tp, cudaStream_t s)
{ if (N > 0 && V > 0) sums_k<bf16_t><<<(unsigned)N, ROW_THREADS, 0, s>>>(sums, maxima, logits, targets, N, V, v0, tp); }

void cuda_ce_shard_loss(float *losses, float *lse, const float *maxima, const float *sums, const int *targets, int N,
                        cudaStream_t s)
{ if (N > 0) loss_k<<<bf16_grid((size_t)N), BF16_THREADS, 0, s>>>(losses, lse, maxima, sums, targets, N); }

void cuda_ce_shard_backward_f32(float *dlogits, const float *logits, const float *lse, const int *targets, float dloss,
                                int N, int V, int v0, cudaStream_t s)
{
	if (N > 0 && V > 0)
		backward_k<float><<<(unsigned)N, ROW_THREADS, 0, s>>>(dlogits, logits, lse, targets, dloss, V, v0);
}
void cuda_ce_shard_backward_bf16(bf16_t *dlogits, const bf16_t *logits, const float *lse, const int *targets,
                                 float dloss, int N, int V, int v0, cudaStream_t s)
{
	if (N > 0 && V > 0)
		backward_k<bf16_t><<<(unsigned)N, ROW_THREADS, 0, s>>>(dlogits, logits, lse, targets, dloss, V, v0);
}

void cuda_fill_f32(float *p, size_t n, float value, cudaStream_t s)
{ if (n) fill_k<<<bf16_grid(n), BF16_THREADS, 0, s>>>(p, n, value); }

}
