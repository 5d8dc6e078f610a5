/* optim — AdamW over flat ranges with per-range weight decay, on the one AdamW kernel. */
#include "kernels/backend.h"
#include "runtime/optim.h"

static void run(const struct adamw_cfg *c, float *p, const float *g, float *m, float *v,
		size_t n, int step, int decay)
{
	if (!n) return;
	if (c->k) c->k->ops->adamw_step(c->k->state, p, g, m, v, n, c->lr, c->beta1, c->beta2, c->eps,
	                                decay ? c->wd : 0.0f, step, 1.0f);
	else adamw_step(p, g, m, v, n, c->lr, c->beta1, c->beta2, c->eps, decay ? c->wd : 0.0f, step, 1.0f);
}

void adamw_apply_at(const struct adamw_cfg *c, float *p, const float *g, float *m, float *v,
		    size_t flat_off, size_t n, int step)
{
	if (!c->decay) {
		run(c, p, g, m, v, n, step, 1);
		return;
	}
	/* walk [flat_off, end) in pieces that are wholly inside or outside a decay range */
	size_t at = flat_off, end = flat_off + n;
	for (int i = 0; i < c->ndecay && at < end; i++) {
		size_t a = c->decay[i].off, b = a + c->decay[i].len;
		if (b <= at) continue;
		if (a > at) {
			size_t stop = a < end ? a : end;
			run(c, p + (at - flat_off), g + (at - flat_off), m + (at - flat_off), v + (at - flat_off),
			    stop - at, step, 0);
			at = stop;
		}
		if (at >= end) break;
		size_t stop = b < end ? b : end;
		run(c, p + (at - flat_off), g + (at - flat_off), m + (at - flat_off), v + (at - flat_off),
		    stop - at, step, 1);
		at = stop;
	}
	if (at < end)
		run(c, p + (at - flat_off), g + (at - flat_off), m + (at - flat_off), v + (at - flat_off),
		    end - at, step, 0);
}
