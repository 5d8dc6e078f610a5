/* moe — router (softmax, top-k, renormalised weights), Switch load-balancing loss, and the
 * token permutation that groups assignments by expert so each expert runs one GEMM. */
#include <math.h>
#include <string.h>
#include "kernels/cpu.h"

void moe_router_forward(float *probs, int *topk_idx, float *topk_w, const float *logits, int N, int E, int k)
{
	for (int n = 0; n < N; n++) {
		const float *z = logits + (size_t)n * E;
		float *p = probs + (size_t)n * E;
		int *idx = topk_idx + (size_t)n * k;
		float *w = topk_w + (size_t)n * k;
		float mx = z[0], sum = 0.0f;
		for (int e = 1; e < E; e++) mx = z[e] > mx ? z[e] : mx;
		for (int e = 0; e < E; e++) { p[e] = expf(z[e] - mx); sum += p[e]; }
		for (int e = 0; e < E; e++) p[e] /= sum;
		/* k selection passes; ties go to the lower expert index */
		float wsum = 0.0f;
		for (int j = 0; j < k; j++) {
			int best = -1;
			for (int e = 0; e < E; e++) {
				int taken = 0;
				for (int i = 0; i < j; i++) taken |= idx[i] == e;
				if (!taken && (best < 0 || p[e] > p[best])) best = e;
			}
			idx[j] = best;
			w[j] = p[best];
			wsum += p[best];
		}
		for (int j = 0; j < k; j++) w[j] /= wsum;
	}
}

void moe_aux_loss_forward(float *loss, float *frac, const float *probs, const int *topk_idx, int N, int E, int k)
{
	memset(frac, 0, sizeof(float) * (size_t)E);
	for (size_t a = 0; a < (size_t)N * k; a++) frac[topk_idx[a]] += 1.0f;
	for (int e = 0; e < E; e++) frac[e] /= (float)N * k;
	/* E·Σ_e f_e·P_e with P_e = (1/N)·Σ_n p_ne */
	double s = 0.0;
	for (int n = 0; n < N; n++)
		for (int e = 0; e < E; e++) s += (double)probs[(size_t)n * E + e] * frac[e];
	*loss = (float)(s * E / N);
}

/* With S = Σ_j p_{i_j} and w_j = p_{i_j}/S:  dL/dp_{i_m} = (dw_m - Σ_j dw_j·w_j)/S;
 * the aux loss adds daux·E·f_e/N to every dL/dp_ne; then softmax: dz = p ⊙ (g - p·g). */
void moe_router_backward(float *dlogits, const float *dtopk_w, const float *probs, const int *topk_idx,
                         const float *topk_w, const float *frac, float daux, int N, int E, int k)
{
	for (int n = 0; n < N; n++) {
		const float *p = probs + (size_t)n * E;
		const int *idx = topk_idx + (size_t)n * k;
		const float *w = topk_w + (size_t)n * k, *dw = dtopk_w + (size_t)n * k;
		float *g = dlogits + (size_t)n * E; /* holds dL/dp until the last loop */
		for (int e = 0; e < E; e++) g[e] = frac ? daux * E * frac[e] / N : 0.0f;
		float S = 0.0f, s = 0.0f;
		for (int j = 0; j < k; j++) { S += p[idx[j]]; s += dw[j] * w[j]; }
		for (int j = 0; j < k; j++) g[idx[j]] += (dw[j] - s) / S;
		float dot = 0.0f;
		for (int e = 0; e < E; e++) dot += p[e] * g[e];
		for (int e = 0; e < E; e++) g[e] = p[e] * (g[e] - dot);
	}
}

void moe_dispatch(int *offsets, int *perm, int *slot_of, const int *topk_idx, int N, int E, int k)
{
	const int NK = N * k;
	memset(offsets, 0, sizeof(int) * (size_t)(E + 1));
	for (int a = 0; a < NK; a++) offsets[topk_idx[a] + 1]++;
	for (int e = 0; e < E; e++) offsets[e + 1] += offsets[e];
	/* offsets[e] serves as expert e's cursor, then is shifted back to its start */
	for (int a = 0; a < NK; a++) {
		int s = offsets[topk_idx[a]]++;
		perm[s] = a;
		slot_of[a] = s;
	}
	for (int e = E; e > 0; e--) offsets[e] = offsets[e - 1];
	offsets[0] = 0;
}

void moe_gather(float *xe, const float *x, const int *perm, int N, int C, int k)
{
	for (int s = 0; s < N * k; s++)
		memcpy(xe + (size_t)s * C, x + (size_t)(perm[s] / k) * C, sizeof(float) * (size_t)C);
}

void moe_gather_backward(float *dx, const float *dxe, const int *slot_of, int N, int C, int k)
{
	for (int n = 0; n < N; n++)
		for (int j = 0; j < k; j++) {
			const float *g = dxe + (size_t)slot_of[n * k + j] * C;
			float *d = dx + (size_t)n * C;
			for (int c = 0; c < C; c++) d[c] += g[c];
		}
}

void moe_combine(float *out, const float *ye, const float *topk_w, const int *slot_of, int N, int C, int k)
{
	for (int n = 0; n < N; n++)
		for (int j = 0; j < k; j++) {
			const float *y = ye + (size_t)slot_of[n * k + j] * C;
			const float w = topk_w[n * k + j];
			float *o = out + (size_t)n * C;
			for (int c = 0; c < C; c++) o[c] += w * y[c];
		}
}

void moe_combine_backward(float *dye, float *dtopk_w, const float *dout, const float *ye,
                          const float *topk_w, const int *slot_of, int N, int C, int k)
{
	for (int n = 0; n < N; n++)
		for (int j = 0; j < k; j++) {
			const int s = slot_of[n * k + j];
			const float *y = ye + (size_t)s * C, *g = dout + (size_t)n * C;
			float *dy = dye + (size_t)s * C;
			const float w = topk_w[n * k + j];
			float dot = 0.0f;
			for (int c = 0; c < C; c++) { dot += g[c] * y[c]; dy[c] = w * g[c]; }
			dtopk_w[n * k + j] = dot;
		}
}
