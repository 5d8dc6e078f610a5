/* cuda_attention — causal GQA attention, the simple correct version: one thread per query
 * row with an online softmax (Milakov & Gimelshein 2018) in the forward pass, and in the
 * backward pass one thread per query row for dQ and one per key row for dK and dV (summing
 * over the query heads of its group), so nothing is written twice and no atomics are needed.
 * Scratch holds D_i = dO_i · O_i for every (b, h, i). Not tuned: O(T²·d) work per thread. */
#include <math.h>
#include "kernels/cuda.h"

#define THREADS 128

__global__ static void att_fwd(float *out, float *lse, const float *qkv, int B, int T, int H, int Hkv, int d)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * H * T) return;
	int i = idx % T, h = idx / T % H, b = idx / T / H, g = h / (H / Hkv);
	int ld = (H + 2 * Hkv) * d;
	const float *q = qkv + ((size_t)b * T + i) * ld + (size_t)h * d;
	float acc[CUDA_ATT_MAX_D];
	float scale = rsqrtf((float)d), mx = -INFINITY, sum = 0.0f;
	for (int c = 0; c < d; c++) acc[c] = 0.0f;
	for (int j = 0; j <= i; j++) {
		const float *k = qkv + ((size_t)b * T + j) * ld + (size_t)(H + g) * d;
		const float *v = qkv + ((size_t)b * T + j) * ld + (size_t)(H + Hkv + g) * d;
		float s = 0.0f;
		for (int c = 0; c < d; c++) s += q[c] * k[c];
		s *= scale;
		float nm = fmaxf(mx, s), r = expf(mx - nm), p = expf(s - nm);
		sum = sum * r + p;
		for (int c = 0; c < d; c++) acc[c] = acc[c] * r + p * v[c];
		mx = nm;
	}
	float *o = out + ((size_t)b * T + i) * H * d + (size_t)h * d;
	for (int c = 0; c < d; c++) o[c] = acc[c] / sum;
	lse[((size_t)b * H + h) * T + i] = mx + logf(sum);
}

__global__ static void att_rowdot(float *D, const float *dout, const float *out, int B, int T, int H, int d)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * H * T) return;
	int i = idx % T, h = idx / T % H, b = idx / T / H;
	const float *o = out + ((size_t)b * T + i) * H * d + (size_t)h * d;
	const float *g = dout + ((size_t)b * T + i) * H * d + (size_t)h * d;
	float s = 0.0f;
	for (int c = 0; c < d; c++) s += o[c] * g[c];
	D[idx] = s; /* layout (B, H, T) like lse */
}

__global__ static void att_bwd_q(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D,
                                 int B, int T, int H, int Hkv, int d)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * H * T) return;
	int i = idx % T, h = idx / T % H, b = idx / T / H, g = h / (H / Hkv);
	int ld = (H + 2 * Hkv) * d;
	const float *q = qkv + ((size_t)b * T + i) * ld + (size_t)h * d;
	const float *dO = dout + ((size_t)b * T + i) * H * d + (size_t)h * d;
	float acc[CUDA_ATT_MAX_D];
	float scale = rsqrtf((float)d), l = lse[idx], Di = D[idx];
	for (int c = 0; c < d; c++) acc[c] = 0.0f;
	for (int j = 0; j <= i; j++) {
		const float *k = qkv + ((size_t)b * T + j) * ld + (size_t)(H + g) * d;
		const float *v = qkv + ((size_t)b * T + j) * ld + (size_t)(H + Hkv + g) * d;
		float s = 0.0f, dp = 0.0f;
		for (int c = 0; c < d; c++) { s += q[c] * k[c]; dp += dO[c] * v[c]; }
		float p = expf(s * scale - l), ds = p * (dp - Di);
		for (int c = 0; c < d; c++) acc[c] += ds * k[c];
	}
	float *dq = dqkv + ((size_t)b * T + i) * ld + (size_t)h * d;
	for (int c = 0; c < d; c++) dq[c] = scale * acc[c];
}

__global__ static void att_bwd_kv(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D,
                                  int B, int T, int H, int Hkv, int d)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * Hkv * T) return;
	int j = idx % T, g = idx / T % Hkv, b = idx / T / Hkv, group = H / Hkv;
	int ld = (H + 2 * Hkv) * d;
	const float *k = qkv + ((size_t)b * T + j) * ld + (size_t)(H + g) * d;
	const float *v = qkv + ((size_t)b * T + j) * ld + (size_t)(H + Hkv + g) * d;
	float dk[CUDA_ATT_MAX_D], dv[CUDA_ATT_MAX_D];
	float scale = rsqrtf((float)d);
	for (int c = 0; c < d; c++) dk[c] = dv[c] = 0.0f;
	for (int h = g * group; h < (g + 1) * group; h++)
		for (int i = j; i < T; i++) {
			const float *q = qkv + ((size_t)b * T + i) * ld + (size_t)h * d;
			const float *dO = dout + ((size_t)b * T + i) * H * d + (size_t)h * d;
			size_t r = ((size_t)b * H + h) * T + i;
			float s = 0.0f, dp = 0.0f;
			for (int c = 0; c < d; c++) { s += q[c] * k[c]; dp += dO[c] * v[c]; }
			float p = expf(s * scale - lse[r]), ds = p * (dp - D[r]);
			for (int c = 0; c < d; c++) { dk[c] += ds * q[c]; dv[c] += p * dO[c]; }
		}
	float *dkr = dqkv + ((size_t)b * T + j) * ld + (size_t)(H + g) * d;
	float *dvr = dqkv + ((size_t)b * T + j) * ld + (size_t)(H + Hkv + g) * d;
	for (int c = 0; c < d; c++) { dkr[c] = scale * dk[c]; dvr[c] = dv[c]; }
}

void cuda_attention_forward(float *out, float *lse, const float *qkv, float *scratch,
                            int B, int T, int H, int Hkv, int d, cudaStream_t s)
{
	(void)scratch;
	int rows = B * H * T;
	att_fwd<<<(rows + THREADS - 1) / THREADS, THREADS, 0, s>>>(out, lse, qkv, B, T, H, Hkv, d);
}

void cuda_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *out,
                             const float *lse, float *scratch, int B, int T, int H, int Hkv, int d,
                             cudaStream_t s)
{
	int rows = B * H * T, kvrows = B * Hkv * T;
	att_rowdot<<<(rows + THREADS - 1) / THREADS, THREADS, 0, s>>>(scratch, dout, out, B, T, H, d);
	att_bwd_q<<<(rows + THREADS - 1) / THREADS, THREADS, 0, s>>>(dqkv, dout, qkv, lse, scratch, B, T, H, Hkv, d);
	att_bwd_kv<<<(kvrows + THREADS - 1) / THREADS, THREADS, 0, s>>>(dqkv, dout, qkv, lse, scratch, B, T, H, Hkv, d);
}
