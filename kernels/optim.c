/* optim — AdamW and the pieces of clipping by global norm. adamw_step is the one AdamW of the
 * project: llama_step calls it per tensor and runtime/optim.c (the ZeRO optimizer) per decay
 * range, so the single-rank and the sharded updates are the same arithmetic. */
#include <math.h>
#include "kernels/cpu.h"

/* Loshchilov & Hutter 2019, Algorithm 2, with PyTorch's scaling of the decay by lr:
 *   g = grad·grad_scale;  m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
 *   m̂ = m/(1-β1^t);  v̂ = v/(1-β2^t)
 *   θ = θ - lr·(m̂/(sqrt(v̂) + ε) + λ·θ) */
void adamw_step(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, int t, float grad_scale)
{
	const float c1 = (float)(1.0 - pow(beta1, t)), c2 = (float)(1.0 - pow(beta2, t));
	for (size_t i = 0; i < n; i++) {
		float g = grad[i] * grad_scale;
		float mi = beta1 * m[i] + (1.0f - beta1) * g;
		float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
		m[i] = mi;
		v[i] = vi;
		float mhat = mi / c1, vhat = vi / c2;
		param[i] -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * param[i]);
	}
}

void grad_sumsq(float *sumsq, const float *g, size_t n)
{
	double s = 0.0;
	for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
	*sumsq += (float)s;
}

float grad_clip_factor(float sumsq, float max_norm)
{
	float norm = sqrtf(sumsq);
	return (max_norm > 0.0f && norm > max_norm) ? max_norm / (norm + 1e-6f) : 1.0f;
}

void grad_scale(float *g, size_t n, float factor)
{
	for (size_t i = 0; i < n; i++) g[i] *= factor;
}
