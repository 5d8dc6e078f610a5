/* pointwise — the per-token kernels: RMSNorm, RoPE, SwiGLU, GeLU. Sums over a row are taken
 * in double so that the reference stays accurate for wide rows. */
#include <math.h>
#include "kernels/cpu.h"

void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C, float eps)
{
	for (int n = 0; n < N; n++) {
		const float *x = inp + (size_t)n * C;
		float *o = out + (size_t)n * C;
		double ss = 0.0;
		for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
		float r = (float)(1.0 / sqrt(ss / C + eps));
		for (int c = 0; c < C; c++) o[c] = x[c] * r * w[c];
		rstd[n] = r;
	}
}

/* y = x·r·w with r = (mean(x²) + eps)^(-1/2); dr/dx_c = -r³·x_c/C, hence
 * dx = r·(w⊙dy) - (r³/C)·x·Σ_c(w_c·dy_c·x_c). */
void rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp,
                      const float *w, const float *rstd, int N, int C)
{
	for (int n = 0; n < N; n++) {
		const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
		float *dx = dinp + (size_t)n * C;
		float r = rstd[n];
		double dot = 0.0;
		for (int c = 0; c < C; c++) dot += (double)w[c] * dy[c] * x[c];
		float k = (float)(dot * r * r * r / C);
		for (int c = 0; c < C; c++) {
			dx[c] += r * w[c] * dy[c] - k * x[c];
			dw[c] += dy[c] * x[c] * r;
		}
	}
}

void rope_table(float *tab, const int *pos, int T, int d, double theta)
{
	int half = d / 2;
	for (int t = 0; t < T; t++) {
		double p = pos ? pos[t] : t;
		for (int i = 0; i < half; i++) {
			double a = p * pow(theta, -2.0 * i / d);
			tab[((size_t)t * half + i) * 2 + 0] = (float)cos(a);
			tab[((size_t)t * half + i) * 2 + 1] = (float)sin(a);
		}
	}
}

static void rope_rotate(float *x, const float *tab, int B, int T, int nh, int d, int ld, float sign)
{
	int half = d / 2;
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++) {
			const float *cs = tab + (size_t)t * half * 2;
			float *row = x + ((size_t)b * T + t) * ld;
			for (int h = 0; h < nh; h++) {
				float *x1 = row + (size_t)h * d, *x2 = x1 + half;
				for (int i = 0; i < half; i++) {
					float c = cs[2 * i], s = sign * cs[2 * i + 1];
					float a = x1[i], bb = x2[i];
					x1[i] = a * c - bb * s;
					x2[i] = bb * c + a * s;
				}
			}
		}
}

void rope_forward(float *x, const float *tab, int B, int T, int nh, int d, int ld)
{
	rope_rotate(x, tab, B, T, nh, d, ld, 1.0f);
}

/* The rotation is orthogonal, so its Jacobian's transpose is the rotation by -angle. */
void rope_backward(float *dx, const float *tab, int B, int T, int nh, int d, int ld)
{
	rope_rotate(dx, tab, B, T, nh, d, ld, -1.0f);
}

void swiglu_forward(float *out, const float *gu, int N, int F)
{
	for (int n = 0; n < N; n++) {
		const float *g = gu + (size_t)n * 2 * F, *u = g + F;
		float *o = out + (size_t)n * F;
		for (int f = 0; f < F; f++) {
			float s = 1.0f / (1.0f + expf(-g[f]));
			o[f] = g[f] * s * u[f];
		}
	}
}

/* silu(g) = g·σ(g), silu'(g) = σ(g)·(1 + g·(1 - σ(g))) */
void swiglu_backward(float *dgu, const float *dout, const float *gu, int N, int F)
{
	for (int n = 0; n < N; n++) {
		const float *g = gu + (size_t)n * 2 * F, *u = g + F, *dy = dout + (size_t)n * F;
		float *dg = dgu + (size_t)n * 2 * F, *du = dg + F;
		for (int f = 0; f < F; f++) {
			float s = 1.0f / (1.0f + expf(-g[f]));
			float silu = g[f] * s;
			dg[f] = dy[f] * u[f] * s * (1.0f + g[f] * (1.0f - s));
			du[f] = dy[f] * silu;
		}
	}
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

void gelu_forward(float *out, const float *inp, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float x = inp[i];
		out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
	}
}

void gelu_backward(float *dinp, const float *dout, const float *inp, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float x = inp[i];
		float u = GELU_K * (x + 0.044715f * x * x * x);
		float th = tanhf(u);
		float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
		dinp[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du);
	}
}
