/* cuda_bf16_util — device helpers shared by the kernels/cuda_bf16_*.cu files (CUDA only, not part
 * of the public interface): bf16 <-> fp32 conversion, warp and block reductions, grid sizes.
 *
 * Invariant: block reductions need blockDim.x a multiple of 32 and <= 1024, are called by every
 * thread of the block, and return the result to every thread; they synchronise twice, so a
 * second call may follow immediately. Reductions add in a fixed tree order (deterministic). */
#ifndef SCALEPLAN_KERNELS_CUDA_BF16_UTIL_H
#define SCALEPLAN_KERNELS_CUDA_BF16_UTIL_H

#ifndef __CUDACC__
#error "cuda_bf16_util.h is for .cu files"
#endif

#include <math.h>
#include "kernels/cuda_bf16.h"

#define BF16_THREADS 256
/* grid-stride loops never need more blocks than this many (a few waves on 132 SMs) */
#define BF16_MAX_BLOCKS 8192u

static inline unsigned bf16_grid(size_t n)
{
	size_t b = (n + BF16_THREADS - 1) / BF16_THREADS;
	if (b == 0) b = 1;
	return b > BF16_MAX_BLOCKS ? BF16_MAX_BLOCKS : (unsigned)b;
}

__device__ static inline float tof(bf16_t v) { return __bfloat162float(v); }
__device__ static inline bf16_t tob(float v) { return __float2bfloat16_rn(v); }

__device__ static inline float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ static inline float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

__device__ static inline double warp_sum_d(double v)
{
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* a reduction over the block, the sum or (MAX) the maximum; every thread gets the result */
template <int MAX> __device__ static inline float block_reduce(float v)
{
	__shared__ float part[32];
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	v = MAX ? warp_max(v) : warp_sum(v);
	__syncthreads(); /* a previous call may still read part[] */
	if (lane == 0) part[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x / 32) ? part[lane] : MAX ? -INFINITY : 0.0f;
	return MAX ? warp_max(v) : warp_sum(v);
}

__device__ static inline float block_sum(float v) { return block_reduce<0>(v); }
__device__ static inline float block_max(float v) { return block_reduce<1>(v); }

__device__ static inline double block_sum_d(double v)
{
	__shared__ double part_d[32];
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	v = warp_sum_d(v);
	__syncthreads();
	if (lane == 0) part_d[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x / 32) ? part_d[lane] : 0.0;
	return warp_sum_d(v);
}

/* Merge of two (max, sum of exp(x - max)) pairs of an online softmax; m = -inf means empty. */
__device__ static inline void softmax_merge(float &m, float &s, float m2, float s2)
{
	if (m2 == -INFINITY) return;
	if (m == -INFINITY) { m = m2; s = s2; return; }
	const float mx = fmaxf(m, m2);
	s = s * expf(m - mx) + s2 * expf(m2 - mx);
	m = mx;
}

__device__ static inline void block_softmax_stats(float &m, float &s)
{
	__shared__ float pm[32], ps[32];
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	for (int o = 16; o > 0; o >>= 1) {
		float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
		softmax_merge(m, s, m2, s2);
	}
	__syncthreads();
	if (lane == 0) { pm[warp] = m; ps[warp] = s; }
	__syncthreads();
	m = lane < (int)(blockDim.x / 32) ? pm[lane] : -INFINITY;
	s = lane < (int)(blockDim.x / 32) ? ps[lane] : 0.0f;
	for (int o = 16; o > 0; o >>= 1) {
		float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
		softmax_merge(m, s, m2, s2);
	}
}

#endif
