/* memory — closed forms from ZeRO and Korthikanti et al. (model.md §2). */
#include "sim/memory.h"

double model_state_bytes(double params, int zero, double nd, double wb, double gb, double ob)
{
	double w = params * wb, g = params * gb, o = params * ob;
	if (zero >= 1) o /= nd;
	if (zero >= 2) g /= nd;
	if (zero >= 3) w /= nd;
	return w + g + o;
}

double gpt_layer_act_bytes(double s, double b, double h, double a, double t, int sp, int rc)
{
	double sbh = s * b * h;
	if (rc == 2)
		return 2 * sbh / (sp ? t : 1); /* only the layer input is kept (sharded under SP) */
	double attn_scores = rc == 1 ? 0 : 5 * a * s / (h * t); /* 5as²b, split over TP heads */
	if (sp)
		return sbh * (34 / t + attn_scores);        /* eq. 4 (and 34sbh/t with selective) */
	return sbh * (10 + 24 / t + attn_scores);           /* TP without SP: 10sbh replicated */
}

double interleave_act_factor(int p, int v)
{
	return 1 + (double)(p - 1) / ((double)p * v);
}
