/* cuda_bf16_optim — AdamW on fp32 master weights (writing the bf16 compute copy in the same
 * pass), the global gradient sum of squares, the clip factor and gradient scaling of
 * kernels/cuda_bf16.h. The clip factor may stay on the device (factor_dev) so that a step
 * norm -> clip -> update needs no host synchronisation.
 *
 * Invariant: grad_sumsq is deterministic — CUDA_BF16_SUMSQ_PARTS blocks (a fixed number,
 * whatever n is) each reduce a fixed grid-stride subset in double, and one block adds the
 * partials in a fixed tree; no atomics. */
#include <math.h>
#include "kernels/cuda_bf16_util.h"

#define SUMSQ_THREADS 256

/* Loshchilov & Hutter 2019, Algorithm 2, in PyTorch's form (as adamw_step in kernels/optim.c) */
__global__ static void k_adamw(float *p, bf16_t *pb, const float *grad, float *m, float *v, size_t n, float lr,
                               float b1, float b2, float eps, float wd, float c1, float c2, float gs,
                               const float *factor_dev)
{
	const float scale = factor_dev ? gs * *factor_dev : gs;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		const float g = grad[i] * scale;
		const float mi = b1 * m[i] + (1.0f - b1) * g;
		const float vi = b2 * v[i] + (1.0f - b2) * g * g;
		m[i] = mi;
		v[i] = vi;
		const float mhat = mi / c1, vhat = vi / c2, pi = p[i];
		const float np = pi - lr * (mhat / (sqrtf(vhat) + eps) + wd * pi);
		p[i] = np;
		if (pb) pb[i] = tob(np);
	}
}

void cuda_bf16_adamw_step(float *param, bf16_t *param_bf16, const float *grad, float *m, float *v, size_t n, float lr,
                          float beta1, float beta2, float eps, float weight_decay, int t, float grad_scale,
                          const float *factor_dev, cudaStream_t s)
{
	if (!n) return;
	/* bias corrections in double on the host, rounded once, as the reference does */
	const float c1 = (float)(1.0 - pow(beta1, t)), c2 = (float)(1.0 - pow(beta2, t));
	k_adamw<<<bf16_grid(n), BF16_THREADS, 0, s>>>(param, param_bf16, grad, m, v, n, lr, beta1, beta2, eps,
	                                               weight_decay, c1, c2, grad_scale, factor_dev);
}

__global__ static void __launch_bounds__(SUMSQ_THREADS) k_sumsq_part(double *part, const float *g, size_t n)
{
	double acc = 0.0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		const double x = g[i];
		acc += x * x;
	}
	acc = block_sum_d(acc);
	if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

/* one block of CUDA_BF16_SUMSQ_PARTS threads, one partial each */
__global__ static void __launch_bounds__(CUDA_BF16_SUMSQ_PARTS) k_sumsq_final(float *sumsq, const double *part)
{
	const double total = block_sum_d(part[threadIdx.x]);
	if (threadIdx.x == 0) *sumsq += (float)total;
}

void cuda_bf16_grad_sumsq(float *sumsq, const float *g, size_t n, double *scratch, cudaStream_t s)
{
	k_sumsq_part<<<CUDA_BF16_SUMSQ_PARTS, SUMSQ_THREADS, 0, s>>>(scratch, g, n);
	k_sumsq_final<<<1, CUDA_BF16_SUMSQ_PARTS, 0, s>>>(sumsq, scratch);
}

/* Pascanu et al. 2013, as grad_clip_factor */
__global__ static void k_clip_factor(float *factor, const float *sumsq, float max_norm)
{
	const float norm = sqrtf(*sumsq);
	*factor = (max_norm > 0.0f && norm > max_norm) ? max_norm / (norm + 1e-6f) : 1.0f;
}

void cuda_bf16_grad_clip_factor(float *factor_dev, const float *sumsq_dev, float max_norm, cudaStream_t s)
{
	k_clip_factor<<<1, 1, 0, s>>>(factor_dev, sumsq_dev, max_norm);
}

__global__ static void k_scale(float *g, size_t n, float f, const float *factor_dev)
{
	const float scale = factor_dev ? f * *factor_dev : f;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		g[i] *= scale;
}

void cuda_bf16_grad_scale(float *g, size_t n, float factor, const float *factor_dev, cudaStream_t s)
{
	if (n) k_scale<<<bf16_grid(n), BF16_THREADS, 0, s>>>(g, n, factor, factor_dev);
}
