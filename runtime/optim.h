/* optim — AdamW over a flat fp32 range: the update the data-parallel code runs on whatever
 * part of the parameters a rank owns (all of them, or its ZeRO shard).
 *
 * Units: lr per step, step counts from 1. Ownership: the caller owns every array; m and v
 * hold the first and second moments and start at zero.
 * Invariant: the update of element i reads and writes only index i, so updating shards
 * separately gives exactly the update of the whole buffer. */
#ifndef SCALEPLAN_OPTIM_H
#define SCALEPLAN_OPTIM_H

#include <stddef.h>

struct adamw_cfg {
	float lr, beta1, beta2, eps, wd;
};

/* AdamW (Loshchilov & Hutter, ICLR 2019, Algorithm 2; PyTorch torch.optim.AdamW):
 *   p -= lr*wd*p;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
 *   p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) */
void adamw_update(float *p, const float *g, float *m, float *v, size_t n, int step, float lr,
		  float beta1, float beta2, float eps, float wd);

static inline void adamw_apply(const struct adamw_cfg *c, float *p, const float *g, float *m,
			       float *v, size_t n, int step)
{
	adamw_update(p, g, m, v, n, step, c->lr, c->beta1, c->beta2, c->eps, c->wd);
}

#endif
