/* Reference kernels: every backward against central finite differences of a random linear
 * functional of the forward's output (L = Σ out ⊙ R, summed in double) (attention:
 * tests/test_attention.c), cross-entropy, AdamW, RoPE and the MoE router against
 * independent facts and hand-computed numbers. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "kernels/cpu.h"
#include "tests/test.h"

#include "tests/kernels_check.h"

/* ---- linear ----------------------------------------------------------------------- */
struct lin { int N, IC, OC; float *inp, *w, *b, *out, *R; };
static double lin_loss(void *c)
{
	struct lin *s = c;
	linear_forward(s->out, s->inp, s->w, s->b, s->N, s->IC, s->OC);
	return dot(s->out, s->R, (size_t)s->N * s->OC);
}

static void test_linear(void)
{
	struct lin s = {7, 5, 6, 0, 0, 0, 0, 0};
	s.inp = rnd(7 * 5, 1); s.w = rnd(6 * 5, 1); s.b = rnd(6, 1);
	s.out = zeros(7 * 6); s.R = rnd(7 * 6, 1);
	float *dinp = rnd(7 * 5, 1), *dw = zeros(6 * 5), *db = zeros(6);
	linear_backward_input(dinp, s.R, s.w, 7, 5, 6, 0);
	linear_backward_weight(dw, db, s.R, s.inp, 7, 5, 6);
	CHECK_GRAD("linear dinp", lin_loss, &s, s.inp, dinp, 35, 1e-2f);
	CHECK_GRAD("linear dw", lin_loss, &s, s.w, dw, 30, 1e-2f);
	CHECK_GRAD("linear dbias", lin_loss, &s, s.b, db, 6, 1e-2f);
	/* accumulate: a second call adds the same gradient again */
	float keep = dw[3];
	linear_backward_weight(dw, NULL, s.R, s.inp, 7, 5, 6);
	CHECK_REL(dw[3], 2 * keep, 1e-6, "linear dw accumulates");
	/* independent value: out[0][0] = Σ_i inp[0][i]·w[0][i] + b[0] */
	lin_loss(&s);
	CHECK_REL(s.out[0], dot(s.inp, s.w, 5) + s.b[0], 1e-5, "linear out[0][0]");
	free(s.inp); free(s.w); free(s.b); free(s.out); free(s.R); free(dinp); free(dw); free(db);
}

/* ---- embedding ---------------------------------------------------------------------- */
struct emb { int N, C, v0, V; int *tok; float *wte, *out, *R; };
static double emb_loss(void *c)
{
	struct emb *s = c;
	embedding_forward(s->out, s->tok, s->wte, s->N, s->C, s->v0, s->V);
	return dot(s->out, s->R, (size_t)s->N * s->C);
}

static void test_embedding(void)
{
	int tok[6] = {3, 1, 3, 0, 7, 2};
	struct emb s = {6, 4, 0, 8, tok, rnd(8 * 4, 1), zeros(6 * 4), rnd(6 * 4, 1)};
	float *dwte = zeros(8 * 4);
	embedding_backward(dwte, s.R, tok, 6, 4, 0, 8);
	CHECK_GRAD("embedding dwte", emb_loss, &s, s.wte, dwte, 32, 1e-2f);
	CHECK_REL(dwte[3 * 4 + 1], s.R[0 * 4 + 1] + s.R[2 * 4 + 1], 1e-6, "embedding scatter-add of a repeated token");
	/* a shard [4, 8) holds token 7 at its row 3 and nothing for token 3 */
	embedding_forward(s.out, tok, s.wte + 4 * 4, 6, 4, 4, 4);
	CHECK(s.out[4 * 4 + 2] == s.wte[7 * 4 + 2] && s.out[0] == 0.0f, "vocab shard lookup");
	free(s.wte); free(s.out); free(s.R); free(dwte);
}

/* ---- RMSNorm ---------------------------------------------------------------------- */
struct rms { int N, C; float *inp, *w, *out, *rstd, *R; };
static double rms_loss(void *c)
{
	struct rms *s = c;
	rmsnorm_forward(s->out, s->rstd, s->inp, s->w, s->N, s->C, 1e-5f);
	return dot(s->out, s->R, (size_t)s->N * s->C);
}

static void test_rmsnorm(void)
{
	struct rms s = {5, 16, rnd(80, 2), rnd(16, 1), zeros(80), zeros(5), rnd(80, 1)};
	float *dinp = zeros(80), *dw = zeros(16);
	rms_loss(&s);
	rmsnorm_backward(dinp, dw, s.R, s.inp, s.w, s.rstd, 5, 16);
	CHECK_GRAD("rmsnorm dinp", rms_loss, &s, s.inp, dinp, 80, 1e-3f);
	CHECK_GRAD("rmsnorm dw", rms_loss, &s, s.w, dw, 16, 1e-3f);
	/* independent: a row of constant c normalises to w (mean(x²) = c²) */
	for (int c = 0; c < 16; c++) s.inp[c] = 3.0f;
	rms_loss(&s);
	CHECK_REL(s.out[5], s.w[5], 1e-5, "rmsnorm of a constant row");
	free(s.inp); free(s.w); free(s.out); free(s.rstd); free(s.R); free(dinp); free(dw);
}

/* ---- RoPE --------------------------------------------------------------------------- */
struct rp { int B, T, nh, d, ld; float *x, *y, *tab, *R; };
static double rope_loss(void *c)
{
	struct rp *s = c;
	size_t n = (size_t)s->B * s->T * s->ld;
	memcpy(s->y, s->x, sizeof(float) * n);
	rope_forward(s->y, s->tab, s->B, s->T, s->nh, s->d, s->ld);
	return dot(s->y, s->R, n);
}

static void test_rope(void)
{
	/* 2 sequences of 6 tokens, 3 heads of 8 rotated inside rows of 30 (6 left alone) */
	struct rp s = {2, 6, 3, 8, 30, rnd(360, 1), zeros(360), zeros(6 * 8), rnd(360, 1)};
	rope_table(s.tab, NULL, 6, 8, 10000.0);
	float *dx = malloc(sizeof(float) * 360);
	memcpy(dx, s.R, sizeof(float) * 360);
	rope_backward(dx, s.tab, 2, 6, 3, 8, 30);
	CHECK_GRAD("rope dx", rope_loss, &s, s.x, dx, 360, 1e-2f);
	rope_loss(&s);
	CHECK(s.y[29] == s.x[29], "rope leaves columns past nh*d alone");

	/* Independent fact (Su et al. 2021, eq. 16): <rope(q, m), rope(k, n)> depends only on m - n.
	 * Positions via the pos table: (m, n) = (9, 4) and (105, 100). */
	int pos[4] = {9, 4, 105, 100};
	float tab[4 * 64], v[4][64];
	rope_table(tab, pos, 4, 64, 500000.0);
	float *q = rnd(64, 1), *k = rnd(64, 1);
	memcpy(v[0], q, sizeof v[0]); memcpy(v[1], k, sizeof v[1]);
	memcpy(v[2], q, sizeof v[2]); memcpy(v[3], k, sizeof v[3]);
	rope_forward(&v[0][0], tab, 1, 4, 1, 64, 64);
	CHECK_REL(dot(v[0], v[1], 64), dot(v[2], v[3], 64), 1e-4, "rope relative-position property");
	CHECK_REL(dot(v[0], v[0], 64), dot(q, q, 64), 1e-5, "rope preserves the norm");
	/* position 0 is the identity; position 1, pair 0 rotates by exactly 1 radian */
	float t1[2 * 4];
	rope_table(t1, NULL, 2, 4, 10000.0);
	CHECK(t1[0] == 1.0f && t1[1] == 0.0f, "rope angle 0 at position 0");
	CHECK_REL(t1[4 + 1], sin(1.0), 1e-6, "rope pair 0 at position 1: sin(1)");
	CHECK_REL(t1[4 + 3], sin(pow(10000.0, -0.5)), 1e-6, "rope pair 1 at position 1: theta^(-2/d)");
	free(s.x); free(s.y); free(s.tab); free(s.R); free(dx); free(q); free(k);
}

/* ---- SwiGLU, GeLU ------------------------------------------------------------------- */
struct act { int N, F; float *in, *out, *R; };
static double swiglu_loss(void *c)
{
	struct act *s = c;
	swiglu_forward(s->out, s->in, s->N, s->F);
	return dot(s->out, s->R, (size_t)s->N * s->F);
}
static double gelu_loss(void *c)
{
	struct act *s = c;
	gelu_forward(s->out, s->in, (size_t)s->N * s->F);
	return dot(s->out, s->R, (size_t)s->N * s->F);
}

static void test_activations(void)
{
	struct act s = {4, 6, rnd(48, 3), zeros(24), rnd(24, 1)};
	float *d = zeros(48);
	swiglu_backward(d, s.R, s.in, 4, 6);
	CHECK_GRAD("swiglu dgu", swiglu_loss, &s, s.in, d, 48, 1e-3f);
	swiglu_loss(&s);
	double g = s.in[0], u = s.in[6];
	CHECK_REL(s.out[0], g / (1 + exp(-g)) * u, 1e-5, "swiglu = silu(gate)·up");

	struct act t = {4, 6, rnd(24, 4), zeros(24), rnd(24, 1)};
	gelu_backward(d, t.R, t.in, 24);
	CHECK_GRAD("gelu dinp", gelu_loss, &t, t.in, d, 24, 1e-3f);
	/* Hendrycks & Gimpel 2016: gelu(1) ≈ 0.8412 with the tanh form (exact erf form 0.8413) */
	t.in[0] = 1.0f;
	gelu_loss(&t);
	CHECK_ABS(t.out[0], 0.5 * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (1 + 0.044715))), 1e-6, "gelu(1) tanh form");
	CHECK_ABS(t.out[0], 0.8413447, 2e-4, "gelu(1) close to x·Φ(x)");
	free(s.in); free(s.out); free(s.R); free(t.in); free(t.out); free(t.R); free(d);
}

/* ---- cross-entropy ------------------------------------------------------------------- */
struct ce { int N, V; float *z, *loss, *lse; int *tgt; };
static double ce_loss(void *c)
{
	struct ce *s = c;
	crossentropy_forward(s->loss, s->lse, s->z, s->tgt, s->N, s->V);
	double m = 0.0;
	for (int n = 0; n < s->N; n++) m += s->loss[n];
	return m / 3.0; /* mean over the 3 counted tokens */
}

static void test_crossentropy(void)
{
	int tgt[4] = {2, 0, -1, 9};
	struct ce s = {4, 10, rnd(40, 3), zeros(4), zeros(4), tgt};
	ce_loss(&s);
	float *dz = zeros(40);
	crossentropy_backward(dz, s.z, s.lse, tgt, 1.0f / 3.0f, 4, 10);
	CHECK_GRAD("cross-entropy dlogits", ce_loss, &s, s.z, dz, 40, 1e-3f);
	ce_loss(&s); /* the checker left the last perturbed state behind */
	CHECK(dz[25] == 0.0f && s.loss[2] == 0.0f, "ignored target gives no loss and no gradient");
	/* independent: log-softmax written out in double */
	double m = -1e300, sum = 0.0;
	for (int v = 0; v < 10; v++) m = fmax(m, s.z[10 + v]);
	for (int v = 0; v < 10; v++) sum += exp(s.z[10 + v] - m);
	CHECK_REL(s.loss[1], m + log(sum) - s.z[10], 1e-5, "cross-entropy token 1");
	/* hand value: logits (1, 2, 3), target 2: log(e + e² + e³) - 3 = 0.40760596 */
	float z3[3] = {1, 2, 3}, l1, lse1;
	int t3 = 2;
	crossentropy_forward(&l1, &lse1, z3, &t3, 1, 3);
	CHECK_ABS(l1, 0.40760596, 1e-6, "cross-entropy of (1,2,3) -> 2");
	/* equal logits over V classes: loss = ln V */
	float *flat = zeros(50304);
	crossentropy_forward(&l1, &lse1, flat, &t3, 1, 50304);
	CHECK_REL(l1, log(50304.0), 1e-6, "cross-entropy of uniform logits = ln V");
	/* in place: dlogits aliasing logits gives the same gradient */
	crossentropy_backward(s.z, s.z, s.lse, tgt, 1.0f / 3.0f, 4, 10);
	CHECK(!memcmp(s.z, dz, sizeof(float) * 40), "cross-entropy backward in place");
	free(s.z); free(s.loss); free(s.lse); free(dz); free(flat);
}

/* ---- AdamW, gradient norm -------------------------------------------------------------- */
static void test_adamw(void)
{
	/* Loshchilov & Hutter 2019, Algorithm 2 (decay scaled by lr as in PyTorch), worked by hand
	 * with θ0 = 1, lr = 0.1, β = (0.9, 0.999), ε = 1e-8, λ = 0.01:
	 *  t=1, g=0.5:  m = 0.05, v = 0.00025, m̂ = 0.5, v̂ = 0.25
	 *               θ1 = 1 - 0.1·(0.5/(0.5 + 1e-8) + 0.01·1) = 0.899000002
	 *  t=2, g=-0.25: m = 0.045 - 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225
	 *               m̂ = 0.02/0.19, v̂ = 0.00031225/0.001999
	 *               θ2 = θ1 - 0.1·(m̂/(sqrt(v̂) + ε) + 0.01·θ1) = 0.8714672987 */
	float p = 1.0f, m = 0.0f, v = 0.0f, g = 0.5f;
	adamw_step(&p, &g, &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1.0f);
	CHECK_ABS(p, 0.899000002, 1e-6, "adamw step 1");
	CHECK_ABS(m, 0.05, 1e-7, "adamw m after step 1");
	g = -0.5f; /* with grad_scale 0.5 this is g = -0.25 */
	adamw_step(&p, &g, &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 2, 0.5f);
	CHECK_ABS(p, 0.8714672987, 2e-6, "adamw step 2 (with grad_scale)");
	CHECK_REL(v, 0.00031225, 1e-4, "adamw v after step 2"); /* 1 - 0.999f is 1.3e-5 off */

	float gr[3] = {3, 4, 0}, ss = 0.0f;
	grad_sumsq(&ss, gr, 2);
	grad_sumsq(&ss, gr + 2, 1);
	CHECK_REL(ss, 25.0, 1e-7, "global sum of squares over two shards");
	float f = grad_clip_factor(ss, 1.0f);
	CHECK_REL(f, 0.2, 1e-6, "clip factor to norm 1 from norm 5");
	CHECK(grad_clip_factor(ss, 10.0f) == 1.0f, "no clipping under the limit");
	grad_scale(gr, 3, f);
	CHECK_REL(sqrt(gr[0] * gr[0] + gr[1] * gr[1]), 1.0, 1e-6, "clipped norm");
}

/* ---- MoE ------------------------------------------------------------------------------- */
struct rt { int N, E, k; float *z, *probs, *w, *frac, *R, aux_coef; int *idx; };
static double router_loss(void *c)
{
	struct rt *s = c;
	float aux;
	moe_router_forward(s->probs, s->idx, s->w, s->z, s->N, s->E, s->k);
	moe_aux_loss_forward(&aux, s->frac, s->probs, s->idx, s->N, s->E, s->k);
	return dot(s->w, s->R, (size_t)s->N * s->k) + s->aux_coef * aux;
}

static void test_router(void)
{
	enum { N = 6, E = 5, K = 2 };
	int idx[N * K];
	struct rt s = {N, E, K, rnd(N * E, 2), zeros(N * E), zeros(N * K), zeros(E), rnd(N * K, 1), 0.5f, idx};
	router_loss(&s);
	float *dz = zeros(N * E);
	moe_router_backward(dz, s.R, s.probs, idx, s.w, s.frac, s.aux_coef, N, E, K);
	CHECK_GRAD("router dlogits (top-k weights + aux loss)", router_loss, &s, s.z, dz, N * E, 1e-3f);

	/* hand case: logits (0, 3, 1, 2) -> top-2 experts 1, 3 with weights e³/(e³+e²), e²/(e³+e²) */
	float z[4] = {0, 3, 1, 2}, p[4], w[2], frac[4], aux;
	int id[2];
	moe_router_forward(p, id, w, z, 1, 4, 2);
	CHECK(id[0] == 1 && id[1] == 3, "router top-2 of (0,3,1,2) is (1,3), got (%d,%d)", id[0], id[1]);
	CHECK_REL(w[0], 1.0 / (1.0 + exp(-1.0)), 1e-6, "router renormalised weight");
	/* balanced routing (all logits equal, assignments spread evenly): loss = 1 */
	float zu[4 * 4] = {0}, pu[16], wu[8];
	int iu[8];
	moe_router_forward(pu, iu, wu, zu, 4, 4, 2);
	CHECK(iu[0] == 0 && iu[1] == 1, "router ties go to the lower index");
	int spread[8] = {0, 1, 2, 3, 0, 1, 2, 3};
	moe_aux_loss_forward(&aux, frac, pu, spread, 4, 4, 2);
	CHECK_REL(aux, 1.0, 1e-6, "Switch aux loss of balanced routing = 1");
	/* all tokens on experts (0, 1) with uniform probabilities: f = (.5, .5, 0, 0), P = .25 -> 1 */
	moe_aux_loss_forward(&aux, frac, pu, iu, 4, 4, 2);
	CHECK_REL(aux, 1.0, 1e-6, "Switch aux loss with uniform probabilities = 1");
	free(s.z); free(s.probs); free(s.w); free(s.frac); free(s.R); free(dz);
}

struct cmb { int N, C, k; const int *slot; float *ye, *w, *out, *R; };
static double combine_loss(void *c)
{
	struct cmb *s = c;
	memset(s->out, 0, sizeof(float) * (size_t)s->N * s->C);
	moe_combine(s->out, s->ye, s->w, s->slot, s->N, s->C, s->k);
	return dot(s->out, s->R, (size_t)s->N * s->C);
}

static void test_dispatch(void)
{
	enum { N = 5, E = 3, K = 2, C = 4 };
	int idx[N * K] = {2, 0, 1, 2, 2, 1, 0, 1, 2, 0}, off[E + 1], perm[N * K], slot[N * K];
	moe_dispatch(off, perm, slot, idx, N, E, K);
	CHECK(off[0] == 0 && off[1] == 3 && off[2] == 6 && off[3] == 10, "dispatch offsets %d %d %d %d", off[0], off[1], off[2], off[3]);
	CHECK(perm[0] == 1 && perm[1] == 6 && perm[2] == 9 && perm[3] == 2, "dispatch is a stable sort by expert");
	int ok = 1;
	for (int a = 0; a < N * K; a++) ok &= perm[slot[a]] == a && slot[a] >= off[idx[a]] && slot[a] < off[idx[a] + 1];
	CHECK(ok, "slot_of inverts perm and lands in the expert's range");

	float *x = rnd(N * C, 1), *xe = zeros(N * K * C);
	moe_gather(xe, x, perm, N, C, K);
	CHECK(xe[3 * C + 1] == x[(perm[3] / K) * C + 1], "gather copies the assignment's token row");
	struct cmb s = {N, C, K, slot, rnd(N * K * C, 1), rnd(N * K, 1), zeros(N * C), rnd(N * C, 1)};
	float *dye = zeros(N * K * C), *dw = zeros(N * K);
	moe_combine_backward(dye, dw, s.R, s.ye, s.w, slot, N, C, K);
	CHECK_GRAD("combine dye", combine_loss, &s, s.ye, dye, N * K * C, 1e-2f);
	CHECK_GRAD("combine dtopk_w", combine_loss, &s, s.w, dw, N * K, 1e-2f);
	/* gather backward: the adjoint of gather, <gather(x), y> = <x, gatherᵀ(y)> */
	float *dx = zeros(N * C);
	moe_gather_backward(dx, s.ye, slot, N, C, K);
	CHECK_REL(dot(x, dx, N * C), dot(xe, s.ye, N * K * C), 1e-5, "gather backward is gather's adjoint");
	free(x); free(xe); free(s.ye); free(s.w); free(s.out); free(s.R); free(dye); free(dw); free(dx);
}

/* The checker must be able to fail: a gradient 10 % off is caught. */
static void test_checker_fails(void)
{
	struct lin s = {3, 4, 2, rnd(12, 1), rnd(8, 1), NULL, zeros(6), rnd(6, 1)};
	float *dinp = zeros(12);
	linear_backward_input(dinp, s.R, s.w, 3, 4, 2, 0);
	grad_scale(dinp, 12, 1.1f);
	CHECK(fd_error(lin_loss, &s, s.inp, dinp, 12, 1e-2f) > 1e-2, "finite-difference checker catches a 10%% error");
	free(s.inp); free(s.w); free(s.out); free(s.R); free(dinp);
}

/* OpenBLAS core choice: the feature -> core table (OpenBLAS 0.3.21 core names, each needing
 * the named instructions: driver/others/dynamic.c), and the kernels really in use after
 * main() ran cli_blas_reexec: AVX2 or wider whenever this CPU has AVX2 (unless the user chose
 * another core type through OPENBLAS_CORETYPE) */
static void test_blas_core(void)
{
	const char *c = blas_core_for(1, 1, 1);
	CHECK(c && !strcmp(c, "Cooperlake"), "AVX-512 with BF16: Cooperlake");
	c = blas_core_for(1, 1, 0);
	CHECK(c && !strcmp(c, "SkylakeX"), "AVX-512: SkylakeX");
	c = blas_core_for(1, 0, 0);
	CHECK(c && !strcmp(c, "Haswell"), "AVX2 + FMA: Haswell");
	CHECK(blas_core_for(0, 0, 0) == NULL, "no AVX2: leave OpenBLAS's choice");
	CHECK(!blas_core_has_avx2("Prescott") && !blas_core_has_avx2("Sandybridge") && blas_core_has_avx2("SkylakeX"),
	      "which core names run AVX2 kernels");
	const char *want = blas_core_wanted(), *set = getenv("OPENBLAS_CORETYPE");
	if (want && (!set || !strcmp(set, want)))
		CHECK(blas_core_has_avx2(openblas_get_corename()), "OpenBLAS runs %s kernels on a CPU with %s features",
		      openblas_get_corename(), want);
}

int main(void)
{
	cli_blas_reexec();
	test_blas_core();
	test_linear();
	test_embedding();
	test_rmsnorm();
	test_rope();
	test_activations();
	test_crossentropy();
	test_adamw();
	test_router();
	test_dispatch();
	test_checker_fails();
	return test_summary("kernels");
}
