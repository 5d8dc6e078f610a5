/* optim — AdamW over a flat fp32 range: the update the data-parallel code runs on whatever
 * part of the parameters a rank owns (all of them, or its ZeRO shard). The arithmetic is the
 * one kernel adamw_step (kernels/optim.c) that the single-rank model's llama_step also runs,
 * so a sharded update is bit for bit the unsharded one.
 *
 * Weight decay applies only inside the decay ranges (the model's matrices; norms and biases
 * are not decayed), given in the flat, unpadded parameter index space; a range list of NULL
 * means "decay everything".
 *
 * Units: lr per step, step counts from 1. Ownership: the caller owns every array and the
 * range list (which must outlive the cfg); m and v hold the first and second moments and
 * start at zero. The arrays are memory of the cfg's backend (kernels/backend.h), whose
 * adamw_step runs the update; without one they are host memory and the reference kernel
 * runs.
 * Invariant: the update of element i reads and writes only index i, so updating shards
 * separately gives exactly the update of the whole buffer. */
#ifndef SCALEPLAN_OPTIM_H
#define SCALEPLAN_OPTIM_H

#include <stddef.h>
#include "kernels/backend.h"

/* Flat parameter indices [off, off+len) that are weight-decayed. */
struct decay_range {
	size_t off, len;
};

struct adamw_cfg {
	float lr, beta1, beta2, eps, wd;
	const struct decay_range *decay;  /* sorted, disjoint; NULL: every element decays */
	int ndecay;
	struct kern *k;                   /* backend of p, g, m, v (borrowed); NULL: host memory */
};

/* AdamW itself is kernels/cpu.h adamw_step (Loshchilov & Hutter, ICLR 2019, Algorithm 2;
 * PyTorch torch.optim.AdamW); what follows applies it over flat ranges with c's decay. */
/* Updates the n elements that sit at flat indices [flat_off, flat_off+n): p, g, m, v point at
 * the first of them. Decay follows c's ranges. */
void adamw_apply_at(const struct adamw_cfg *c, float *p, const float *g, float *m, float *v,
		    size_t flat_off, size_t n, int step);

/* The whole flat range from index 0. */
static inline void adamw_apply(const struct adamw_cfg *c, float *p, const float *g, float *m,
			       float *v, size_t n, int step)
{
	adamw_apply_at(c, p, g, m, v, 0, n, step);
}

#endif
