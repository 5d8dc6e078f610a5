/* attention — causal grouped-query attention in query blocks of ATT_BQ rows. Each block's
 * scores against the keys it may see are one sgemm into scratch; the softmax is taken in
 * place and only its log-sum-exp is kept, and the backward pass recomputes the probabilities
 * from it (the memory pattern of FlashAttention, Dao et al. 2022, with GEMM-sized blocks
 * instead of on-chip tiles). Memory beyond the inputs: O(ATT_BQ · T) scratch. The block
 * kernels at the end run one query block against one key block at global position offsets
 * and merge partial results by log-sum-exp: the per-step work of ring attention. */
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

/* ---- blockwise attention (ring attention's per-step kernel) ----------------------------- */

size_t attention_block_scratch_floats(int Tq, int Tk)
{
	const size_t bq = Tq < ATT_BQ ? (size_t)(Tq > 0 ? Tq : 1) : ATT_BQ;
	return 2 * bq * (size_t)(Tk > 0 ? Tk : 1) + bq;   /* scores, their gradient, the row sums D */
}

/* Keys of the block seen by query row i of the block (a prefix, since positions ascend). */
static int keys_seen(const struct att_block *b, int i)
{
	const int n = b->q0 + i - b->k0 + 1;
	return n < 0 ? 0 : n > b->Tk ? b->Tk : n;
}

/* log(e^a + e^b) for a, b possibly -inf (not both) */
static float logaddexpf(float a, float b)
{
	const float hi = a > b ? a : b, lo = a > b ? b : a;
	return hi + log1pf(expf(lo - hi));
}

void attention_block_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                             float *scratch, const struct att_block *b)
{
	const int group = b->H / b->Hkv, d = b->d;
	const float scale = 1.0f / sqrtf((float)d);
	for (int h = 0; h < b->H; h++) {
		const int g = h / group;
		const float *qh = q + (size_t)h * d, *kh = k + (size_t)g * d, *vh = v + (size_t)g * d;
		float *o = out + (size_t)h * d, *l = lse + (size_t)h * b->ldl;
		for (int i0 = 0; i0 < b->Tq; i0 += ATT_BQ) {
			const int bq = b->Tq - i0 < ATT_BQ ? b->Tq - i0 : ATT_BQ;
			const int tk = keys_seen(b, i0 + bq - 1); /* the last row sees the most */
			if (tk == 0) continue;
			float *s = scratch; /* (bq, tk) */
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, tk, d, scale,
			            qh + (size_t)i0 * b->ldq, b->ldq, kh, b->ldkv, 0.0f, s, tk);
			for (int r = 0; r < bq; r++) {
				const int i = i0 + r, n = keys_seen(b, i);
				float *row = s + (size_t)r * tk;
				if (n == 0) { memset(row, 0, sizeof(float) * (size_t)tk); continue; }
				float mx = row[0], sum = 0.0f;
				for (int j = 1; j < n; j++) mx = row[j] > mx ? row[j] : mx;
				for (int j = 0; j < n; j++) { row[j] = expf(row[j] - mx); sum += row[j]; }
				const float lb = mx + logf(sum), la = l[i], ln = logaddexpf(la, lb);
				const float alpha = expf(la - ln), beta = expf(lb - ln) / sum;
				for (int j = 0; j < n; j++) row[j] *= beta;
				for (int j = n; j < tk; j++) row[j] = 0.0f;
				float *oi = o + (size_t)i * b->ldo;
				for (int c = 0; c < d; c++) oi[c] *= alpha;
				l[i] = ln;
			}
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, d, tk, 1.0f,
			            s, tk, vh, b->ldkv, 1.0f, o + (size_t)i0 * b->ldo, b->ldo);
		}
	}
}

/* The formulas of attention_backward restricted to one block; P comes from the final lse,
 * so each block's share is exact and the shares add up. */
void attention_block_backward(float *dq, float *dk, float *dv, const float *dout,
                              const float *out, const float *lse, const float *q, const float *k,
                              const float *v, float *scratch, const struct att_block *b)
{
	const int group = b->H / b->Hkv, d = b->d;
	const int bqmax = b->Tq < ATT_BQ ? b->Tq : ATT_BQ;
	const float scale = 1.0f / sqrtf((float)d);
	float *p = scratch, *dp = scratch + (size_t)bqmax * b->Tk, *D = dp + (size_t)bqmax * b->Tk;
	for (int h = 0; h < b->H; h++) {
		const int g = h / group;
		const float *qh = q + (size_t)h * d, *kh = k + (size_t)g * d, *vh = v + (size_t)g * d;
		const float *o = out + (size_t)h * d, *dO = dout + (size_t)h * d, *l = lse + (size_t)h * b->ldl;
		float *dqh = dq + (size_t)h * d, *dkh = dk + (size_t)g * d, *dvh = dv + (size_t)g * d;
		for (int i0 = 0; i0 < b->Tq; i0 += ATT_BQ) {
			const int bq = b->Tq - i0 < ATT_BQ ? b->Tq - i0 : ATT_BQ;
			const int tk = keys_seen(b, i0 + bq - 1);
			if (tk == 0) continue;
			for (int r = 0; r < bq; r++) {
				const float *a = o + (size_t)(i0 + r) * b->ldo, *gr = dO + (size_t)(i0 + r) * b->ldo;
				float s = 0.0f;
				for (int c = 0; c < d; c++) s += a[c] * gr[c];
				D[r] = s;
			}
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, tk, d, scale,
			            qh + (size_t)i0 * b->ldq, b->ldq, kh, b->ldkv, 0.0f, p, tk);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, tk, d, 1.0f,
			            dO + (size_t)i0 * b->ldo, b->ldo, vh, b->ldkv, 0.0f, dp, tk);
			for (int r = 0; r < bq; r++) {
				const int i = i0 + r, n = keys_seen(b, i);
				float *pr = p + (size_t)r * tk, *dr = dp + (size_t)r * tk;
				for (int j = 0; j < n; j++) {
					pr[j] = expf(pr[j] - l[i]);
					dr[j] = pr[j] * (dr[j] - D[r]);
				}
				for (int j = n; j < tk; j++) pr[j] = dr[j] = 0.0f;
			}
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bq, d, tk, scale,
			            dp, tk, kh, b->ldkv, 1.0f, dqh + (size_t)i0 * b->ldq, b->ldq);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tk, d, bq, scale,
			            dp, tk, qh + (size_t)i0 * b->ldq, b->ldq, 1.0f, dkh, b->ldkv);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tk, d, bq, 1.0f,
			            p, tk, dO + (size_t)i0 * b->ldo, b->ldo, 1.0f, dvh, b->ldkv);
		}
	}
}
