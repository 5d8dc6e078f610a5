/* Attention kernels: the forward and backward of causal GQA attention against a naive O(T²)
 * reference in double and central finite differences, and the blockwise form (ring
 * attention's building block) against the whole sequence at once. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "kernels/cpu.h"
#include "tests/kernels_check.h"

/* ---- attention ---------------------------------------------------------------------- */
/* Naive causal GQA attention in double: the independent reference. */
static void attention_naive(double *out, const float *qkv, int B, int T, int H, int Hkv, int d)
{
	int ld = (H + 2 * Hkv) * d;
	double *p = malloc(sizeof(double) * (size_t)T);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++) {
			int g = h / (H / Hkv);
			for (int i = 0; i < T; i++) {
				const float *q = qkv + ((size_t)b * T + i) * ld + (size_t)h * d;
				double mx = -1e300, sum = 0.0;
				for (int j = 0; j <= i; j++) {
					const float *k = qkv + ((size_t)b * T + j) * ld + (size_t)(H + g) * d;
					double s = 0.0;
					for (int c = 0; c < d; c++) s += (double)q[c] * k[c];
					p[j] = s / sqrt((double)d);
					mx = fmax(mx, p[j]);
				}
				for (int j = 0; j <= i; j++) { p[j] = exp(p[j] - mx); sum += p[j]; }
				double *o = out + ((size_t)b * T + i) * H * d + (size_t)h * d;
				for (int c = 0; c < d; c++) o[c] = 0.0;
				for (int j = 0; j <= i; j++) {
					const float *v = qkv + ((size_t)b * T + j) * ld + (size_t)(H + Hkv + g) * d;
					for (int c = 0; c < d; c++) o[c] += p[j] / sum * v[c];
				}
			}
		}
	free(p);
}

struct att { int B, T, H, Hkv, d; float *qkv, *out, *lse, *scratch, *R; };
static double att_loss(void *c)
{
	struct att *s = c;
	attention_forward(s->out, s->lse, s->qkv, s->scratch, s->B, s->T, s->H, s->Hkv, s->d);
	return dot(s->out, s->R, (size_t)s->B * s->T * s->H * s->d);
}

static void att_case(int B, int T, int H, int Hkv, int d, int fd)
{
	size_t nqkv = (size_t)B * T * (H + 2 * Hkv) * d, nout = (size_t)B * T * H * d;
	struct att s = {B, T, H, Hkv, d, rnd(nqkv, 1.5f), zeros(nout), zeros((size_t)B * H * T),
	                zeros(attention_scratch_floats(B, T, H)), rnd(nout, 1)};
	double *ref = malloc(sizeof(double) * nout);
	att_loss(&s);
	attention_naive(ref, s.qkv, B, T, H, Hkv, d);
	double maxerr = 0.0;
	for (size_t i = 0; i < nout; i++) maxerr = fmax(maxerr, fabs(s.out[i] - ref[i]));
	CHECK(maxerr < 1e-4, "attention B=%d T=%d H=%d Hkv=%d d=%d vs naive: max error %.3g", B, T, H, Hkv, d, maxerr);
	if (fd) {
		float *dqkv = zeros(nqkv);
		attention_backward(dqkv, s.R, s.qkv, s.out, s.lse, s.scratch, B, T, H, Hkv, d);
		char name[64];
		snprintf(name, sizeof name, "attention dqkv T=%d H=%d Hkv=%d", T, H, Hkv);
		CHECK_GRAD(name, att_loss, &s, s.qkv, dqkv, nqkv, 1e-2f);
		/* the last key/value row is seen by the last query only: check it fully */
		size_t row = ((size_t)B * T - 1) * (H + 2 * Hkv) * d;
		CHECK_GRAD("attention dqkv last row", att_loss, &s, s.qkv + row, dqkv + row,
		           (size_t)(H + 2 * Hkv) * d, 1e-2f);
		free(dqkv);
	}
	free(s.qkv); free(s.out); free(s.lse); free(s.scratch); free(s.R); free(ref);
}

static void test_attention(void)
{
	att_case(2, 7, 4, 2, 8, 1);     /* GQA, one block */
	att_case(1, 300, 2, 1, 4, 1);   /* multi-query, crosses a 256-row query block */
	att_case(1, 9, 3, 3, 6, 1);     /* MHA */
	att_case(1, 1024, 2, 1, 16, 0); /* sequence 1024 */
}

/* ---- blockwise attention ------------------------------------------------------------
 * Query rows at positions q0.. against key blocks at their own positions, merged by
 * log-sum-exp; the reference is naive masked attention over the union of the keys. */
#define BLK_NB 3
struct blk {
	int Tq, H, Hkv, d, ldq, ldo, ldl, q0;
	int Tk[BLK_NB], k0[BLK_NB];
	float *q, *kv[BLK_NB], *out, *lse, *scratch, *R;
};

static struct att_block blk_desc(const struct blk *s, int j)
{
	struct att_block b = {s->Tq, s->Tk[j], s->q0, s->k0[j], s->H, s->Hkv, s->d,
	                      s->ldq, 2 * s->Hkv * s->d, s->ldo, s->ldl};
	return b;
}

static double blk_loss(void *c)
{
	struct blk *s = c;
	for (int i = 0; i < s->Tq * s->ldo; i++) s->out[i] = 0.0f;
	for (int i = 0; i < s->H * s->ldl; i++) s->lse[i] = -INFINITY;
	for (int j = BLK_NB - 1; j >= 0; j--) { /* a block order unlike the positions' */
		struct att_block b = blk_desc(s, j);
		attention_block_forward(s->out, s->lse, s->q, s->kv[j], s->kv[j] + s->Hkv * s->d, s->scratch, &b);
	}
	return dot(s->out, s->R, (size_t)s->Tq * s->ldo);
}

/* naive masked attention over every block's keys, in double */
static void blk_naive(double *out, double *lse, const struct blk *s)
{
	const int ldkv = 2 * s->Hkv * s->d;
	for (int h = 0; h < s->H; h++)
		for (int i = 0; i < s->Tq; i++) {
			const int g = h / (s->H / s->Hkv);
			double mx = -1e300, sum = 0.0, sc[64], *o = out + (size_t)i * s->H * s->d + (size_t)h * s->d;
			int n = 0;
			for (int j = 0; j < BLK_NB; j++)
				for (int t = 0; t < s->Tk[j]; t++, n++) {
					sc[n] = -1e300;
					if (s->k0[j] + t > s->q0 + i) continue;
					double a = 0.0;
					for (int c = 0; c < s->d; c++)
						a += (double)s->q[(size_t)i * s->ldq + h * s->d + c] * s->kv[j][(size_t)t * ldkv + g * s->d + c];
					sc[n] = a / sqrt((double)s->d);
					mx = fmax(mx, sc[n]);
				}
			for (int m = 0; m < n; m++) sum += sc[m] > -1e299 ? exp(sc[m] - mx) : 0.0;
			lse[h * s->Tq + i] = mx + log(sum);
			for (int c = 0; c < s->d; c++) o[c] = 0.0;
			n = 0;
			for (int j = 0; j < BLK_NB; j++)
				for (int t = 0; t < s->Tk[j]; t++, n++) {
					if (sc[n] < -1e299) continue;
					const float *v = s->kv[j] + (size_t)t * ldkv + (s->Hkv + g) * s->d;
					for (int c = 0; c < s->d; c++) o[c] += exp(sc[n] - mx) / sum * v[c];
				}
		}
}

static void test_attention_block(void)
{
	/* 6 queries at positions 10..15; keys at 3..7 (all seen), 8..14 (partly masked),
	 * 16..18 (seen by none: must change nothing); strides padded to catch stride mix-ups */
	struct blk s = {.Tq = 6, .H = 4, .Hkv = 2, .d = 8, .q0 = 10, .Tk = {5, 7, 3}, .k0 = {3, 8, 16}};
	s.ldq = s.H * s.d + 3;
	s.ldo = s.H * s.d;
	s.ldl = s.Tq + 2;
	const int ldkv = 2 * s.Hkv * s.d;
	size_t nsc = 0;
	s.q = rnd((size_t)s.Tq * s.ldq, 1.5f);
	for (int j = 0; j < BLK_NB; j++) {
		s.kv[j] = rnd((size_t)s.Tk[j] * ldkv, 1.5f);
		size_t n = attention_block_scratch_floats(s.Tq, s.Tk[j]);
		nsc = n > nsc ? n : nsc;
	}
	s.out = zeros((size_t)s.Tq * s.ldo);
	s.lse = zeros((size_t)s.H * s.ldl);
	s.scratch = zeros(nsc);
	s.R = rnd((size_t)s.Tq * s.ldo, 1);
	double *ref = malloc(sizeof(double) * (size_t)s.Tq * s.ldo), *rl = malloc(sizeof(double) * (size_t)s.H * s.Tq);
	blk_loss(&s);
	blk_naive(ref, rl, &s);
	double eo = 0.0, el = 0.0;
	for (int i = 0; i < s.Tq * s.ldo; i++) eo = fmax(eo, fabs(s.out[i] - ref[i]));
	for (int h = 0; h < s.H; h++)
		for (int i = 0; i < s.Tq; i++) el = fmax(el, fabs(s.lse[h * s.ldl + i] - rl[h * s.Tq + i]));
	CHECK(eo < 1e-5, "attention blocks merged by lse vs naive: out max error %.3g", eo);
	CHECK(el < 1e-5, "attention blocks merged by lse vs naive: lse max error %.3g", el);

	float *dq = zeros((size_t)s.Tq * s.ldq), *dkv[BLK_NB];
	for (int j = 0; j < BLK_NB; j++) {
		struct att_block b = blk_desc(&s, j);
		dkv[j] = zeros((size_t)s.Tk[j] * ldkv);
		attention_block_backward(dq, dkv[j], dkv[j] + s.Hkv * s.d, s.R, s.out, s.lse, s.q, s.kv[j],
		                         s.kv[j] + s.Hkv * s.d, s.scratch, &b);
	}
	CHECK_GRAD("attention block dq (summed over key blocks)", blk_loss, &s, s.q, dq, (size_t)s.Tq * s.ldq, 1e-2f);
	CHECK_GRAD("attention block dk|dv, full block", blk_loss, &s, s.kv[0], dkv[0], (size_t)s.Tk[0] * ldkv, 1e-2f);
	CHECK_GRAD("attention block dk|dv, masked block", blk_loss, &s, s.kv[1], dkv[1], (size_t)s.Tk[1] * ldkv, 1e-2f);
	double z = 0.0;
	for (int i = 0; i < s.Tk[2] * ldkv; i++) z = fmax(z, fabs(dkv[2][i]));
	CHECK(z == 0.0, "attention block that no query sees gets zero gradient (max %.3g)", z);
	for (int j = 0; j < BLK_NB; j++) { free(s.kv[j]); free(dkv[j]); }
	free(s.q); free(s.out); free(s.lse); free(s.scratch); free(s.R); free(ref); free(rl); free(dq);
}

/* One block over the whole sequence at positions 0.. is plain causal attention: equal to
 * attention_forward/backward, also across the 256-row query sub-blocks. */
static void att_block_whole(int T, int H, int Hkv, int d)
{
	const int ld = (H + 2 * Hkv) * d, ldo = H * d;
	const size_t nqkv = (size_t)T * ld, nout = (size_t)T * ldo;
	float *qkv = rnd(nqkv, 1.5f), *dout = rnd(nout, 1), *o1 = zeros(nout), *l1 = zeros((size_t)H * T);
	float *o2 = zeros(nout), *l2 = malloc(sizeof(float) * (size_t)H * T), *d1 = zeros(nqkv), *d2 = zeros(nqkv);
	size_t n1 = attention_scratch_floats(1, T, H), n2 = attention_block_scratch_floats(T, T);
	float *sc = zeros(n1 > n2 ? n1 : n2);
	for (int i = 0; i < H * T; i++) l2[i] = -INFINITY;
	struct att_block b = {T, T, 0, 0, H, Hkv, d, ld, ld, ldo, T};
	attention_forward(o1, l1, qkv, sc, 1, T, H, Hkv, d);
	attention_block_forward(o2, l2, qkv, qkv + (size_t)H * d, qkv + (size_t)(H + Hkv) * d, sc, &b);
	attention_backward(d1, dout, qkv, o1, l1, sc, 1, T, H, Hkv, d);
	attention_block_backward(d2, d2 + (size_t)H * d, d2 + (size_t)(H + Hkv) * d, dout, o2, l2, qkv,
	                         qkv + (size_t)H * d, qkv + (size_t)(H + Hkv) * d, sc, &b);
	double eo = 0.0, el = 0.0, eg = 0.0, mo = 0.0, mg = 0.0;
	for (size_t i = 0; i < nout; i++) { eo = fmax(eo, fabs(o1[i] - o2[i])); mo = fmax(mo, fabs(o1[i])); }
	for (int i = 0; i < H * T; i++) el = fmax(el, fabs(l1[i] - l2[i]) / fmax(fabs(l1[i]), 1.0));
	for (size_t i = 0; i < nqkv; i++) { eg = fmax(eg, fabs(d1[i] - d2[i])); mg = fmax(mg, fabs(d1[i])); }
	CHECK(eo <= 1e-5 * mo && el <= 1e-5 && eg <= 1e-5 * mg,
	      "one attention block T=%d H=%d Hkv=%d vs attention_forward/backward: out %.3g, lse %.3g, dqkv %.3g",
	      T, H, Hkv, eo / mo, el, eg / mg);
	free(qkv); free(dout); free(o1); free(l1); free(o2); free(l2); free(d1); free(d2); free(sc);
}

int main(void)
{
	cli_blas_reexec();
	test_attention();
	test_attention_block();
	att_block_whole(7, 4, 2, 8);
	att_block_whole(300, 2, 1, 4);
	return test_summary("attention");
}
