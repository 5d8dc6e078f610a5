/* attention — causal grouped-query attention in query blocks of ATT_BQ rows. Each block's
 * scores against the keys it may see are one sgemm into scratch; the softmax is taken in
 * place and only its log-sum-exp is kept, and the backward pass recomputes the probabilities
 * from it (the memory pattern of FlashAttention, Dao et al. 2022, with GEMM-sized blocks
 * instead of on-chip tiles). Memory beyond the inputs: O(ATT_BQ · T) scratch. */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "kernels/cpu.h"

/* 256 rows: small blocks waste less of the masked triangle, large ones make sgemm calls
 * big enough that OpenBLAS's thread hand-off is amortised (128 was 3x slower per FLOP here) */
#define ATT_BQ 256

size_t attention_scratch_floats(int B, int T, int H)
{
	/* 2 blocks of scores + the row sums D; the CUDA kernels keep D for all rows instead */
	return 2 * (size_t)ATT_BQ * T + ATT_BQ + (size_t)B * H * T;
}

void attention_forward(float *out, float *lse, const float *qkv, float *scratch,
                       int B, int T, int H, int Hkv, int d)
{
	const int ld = (H + 2 * Hkv) * d, ldo = H * d, group = H / Hkv;
	const float scale = 1.0f / sqrtf((float)d);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++) {
			const int kvh = h / group;
			const float *q = qkv + (size_t)b * T * ld + (size_t)h * d;
			const float *k = qkv + (size_t)b * T * ld + (size_t)(H + kvh) * d;
			const float *v = qkv + (size_t)b * T * ld + (size_t)(H + Hkv + kvh) * d;
			float *o = out + (size_t)b * T * ldo + (size_t)h * d;
			float *l = lse + ((size_t)b * H + h) * T;
			for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
				const int bq = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, tk = i0 + bq;
				float *s = scratch; /* (bq, tk) */
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, tk, d, scale,
				            q + (size_t)i0 * ld, ld, k, ld, 0.0f, s, tk);
				for (int r = 0; r < bq; r++) {
					const int i = i0 + r;
					float *row = s + (size_t)r * tk;
					float mx = row[0];
					for (int j = 1; j <= i; j++) mx = row[j] > mx ? row[j] : mx;
					float sum = 0.0f;
					for (int j = 0; j <= i; j++) { row[j] = expf(row[j] - mx); sum += row[j]; }
					const float inv = 1.0f / sum;
					for (int j = 0; j <= i; j++) row[j] *= inv;
					for (int j = i + 1; j < tk; j++) row[j] = 0.0f;
					l[i] = mx + logf(sum);
				}
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, d, tk, 1.0f,
				            s, tk, v, ld, 0.0f, o + (size_t)i0 * ldo, ldo);
			}
		}
}

/* With S = scale·QKᵀ, P = softmax(S), O = PV:  dV = Pᵀ dO,  dP = dO Vᵀ,
 * dS = P ⊙ (dP - D) with D_i = Σ_j P_ij dP_ij = dO_i · O_i,  dQ = scale·dS K,  dK = scale·dSᵀ Q. */
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *out,
                        const float *lse, float *scratch, int B, int T, int H, int Hkv, int d)
{
	const int ld = (H + 2 * Hkv) * d, ldo = H * d, group = H / Hkv;
	const float scale = 1.0f / sqrtf((float)d);
	memset(dqkv, 0, sizeof(float) * (size_t)B * T * ld);
	float *p = scratch, *dp = scratch + (size_t)ATT_BQ * T, *D = dp + (size_t)ATT_BQ * T;
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++) {
			const int kvh = h / group;
			const size_t base = (size_t)b * T * ld;
			const float *q = qkv + base + (size_t)h * d;
			const float *k = qkv + base + (size_t)(H + kvh) * d;
			const float *v = qkv + base + (size_t)(H + Hkv + kvh) * d;
			float *dq = dqkv + base + (size_t)h * d;
			float *dk = dqkv + base + (size_t)(H + kvh) * d;
			float *dv = dqkv + base + (size_t)(H + Hkv + kvh) * d;
			const float *o = out + (size_t)b * T * ldo + (size_t)h * d;
			const float *dO = dout + (size_t)b * T * ldo + (size_t)h * d;
			const float *l = lse + ((size_t)b * H + h) * T;
			for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
				const int bq = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, tk = i0 + bq;
				for (int r = 0; r < bq; r++) {
					const float *a = o + (size_t)(i0 + r) * ldo, *g = dO + (size_t)(i0 + r) * ldo;
					float s = 0.0f;
					for (int c = 0; c < d; c++) s += a[c] * g[c];
					D[r] = s;
				}
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, tk, d, scale,
				            q + (size_t)i0 * ld, ld, k, ld, 0.0f, p, tk);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, tk, d, 1.0f,
				            dO + (size_t)i0 * ldo, ldo, v, ld, 0.0f, dp, tk);
				for (int r = 0; r < bq; r++) {
					const int i = i0 + r;
					float *pr = p + (size_t)r * tk, *dr = dp + (size_t)r * tk;
					for (int j = 0; j <= i; j++) {
						pr[j] = expf(pr[j] - l[i]);
						dr[j] = pr[j] * (dr[j] - D[r]);
					}
					for (int j = i + 1; j < tk; j++) pr[j] = dr[j] = 0.0f;
				}
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, d, tk, scale,
				            dp, tk, k, ld, 0.0f, dq + (size_t)i0 * ld, ld);
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tk, d, bq, scale,
				            dp, tk, q + (size_t)i0 * ld, ld, 1.0f, dk, ld);
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tk, d, bq, 1.0f,
				            p, tk, dO + (size_t)i0 * ldo, ldo, 1.0f, dv, ld);
			}
		}
}
