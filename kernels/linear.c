/* linear and embedding — GEMMs through OpenBLAS (its threads are the only parallelism of the
 * CPU path), and the embedding gather / scatter-add over a vocabulary shard. */
#include <cblas.h>
#include <string.h>
#include "kernels/cpu.h"

void linear_forward(float *out, const float *inp, const float *w, const float *bias,
                    int N, int IC, int OC)
{
	float beta = 0.0f;
	if (bias) {
		for (int n = 0; n < N; n++)
			memcpy(out + (size_t)n * OC, bias, sizeof(float) * (size_t)OC);
		beta = 1.0f;
	}
	/* out (N,OC) = inp (N,IC) · wᵀ (IC,OC) */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC,
	            1.0f, inp, IC, w, IC, beta, out, OC);
}

void linear_backward_input(float *dinp, const float *dout, const float *w,
                           int N, int IC, int OC, int accumulate)
{
	/* dinp (N,IC) = dout (N,OC) · w (OC,IC) */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC,
	            1.0f, dout, OC, w, IC, accumulate ? 1.0f : 0.0f, dinp, IC);
}

void linear_backward_weight(float *dw, float *dbias, const float *dout, const float *inp,
                            int N, int IC, int OC)
{
	/* dw (OC,IC) += doutᵀ (OC,N) · inp (N,IC) */
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N,
	            1.0f, dout, OC, inp, IC, 1.0f, dw, IC);
	if (dbias)
		for (int n = 0; n < N; n++) {
			const float *d = dout + (size_t)n * OC;
			for (int o = 0; o < OC; o++) dbias[o] += d[o];
		}
}

void embedding_forward(float *out, const int *tokens, const float *wte, int N, int C, int v0, int V)
{
	for (int n = 0; n < N; n++) {
		int r = tokens[n] - v0;
		float *o = out + (size_t)n * C;
		if (r >= 0 && r < V) memcpy(o, wte + (size_t)r * C, sizeof(float) * (size_t)C);
		else memset(o, 0, sizeof(float) * (size_t)C);
	}
}

void embedding_backward(float *dwte, const float *dout, const int *tokens, int N, int C, int v0, int V)
{
	for (int n = 0; n < N; n++) {
		int r = tokens[n] - v0;
		if (r < 0 || r >= V) continue;
		float *d = dwte + (size_t)r * C;
		const float *g = dout + (size_t)n * C;
		for (int c = 0; c < C; c++) d[c] += g[c];
	}
}
