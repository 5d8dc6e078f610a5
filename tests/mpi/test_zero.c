/* Bucketed DP reduction and ZeRO-0/1/2/3 with AdamW, under mpirun with 2, 4 or 8 ranks.
 *  - buckets: with integer gradients the bucketed, overlapped all-reduce (or reduce-scatter)
 *    must equal one plain all-reduce of the whole buffer exactly, whatever the mark order;
 *  - ZeRO: a synthetic model whose gradient is a closed form of (parameter, dp*cp position,
 *    index, micro-batch) is trained 3 steps, with clipping by global norm; every rank also
 *    runs the unsharded reference (sum over ranks of the closed form, AdamW on everything)
 *    and the parameters must agree within 1e-6 relative to max(|p|, 1).
 * The model-parallel groups (tp, pp) each own a different slice of the synthetic model, so
 * the clipping norm needs them too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu.h"
#include "runtime/comm.h"
#include "runtime/ctx.h"
#include "runtime/dp.h"
#include "runtime/optim.h"
#include "runtime/zero.h"
#include "sim/util.h"
#include "tests/mpi/harness.h"
#include "tests/test.h"

#define NP 1003          /* parameters per model-parallel slice: prime, so padding happens */
#define STEPS 3
#define MICRO 2
#define MAX_NORM 10.0f   /* gradients are ~1 per element, norm ~ 45 per slice: clipping acts */

static const size_t units[] = {100, 3, 250, 150, 200, 300};   /* ZeRO-3 units, sum NP */
#define NU ((int)(sizeof(units) / sizeof(units[0])))

static const struct adamw_cfg OPT = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .wd = 0.1f};

/* --- bucketed reduction ---------------------------------------------------------------- */

static float igrad(int R, size_t i) { return (float)((R + 1) * (int)(i % 97) + R); }

static void test_buckets(struct ctx *x, int reduce_scatter, int forward_order)
{
	char err[ERR_LEN];
	struct comm *g = ctx_comm(x, GROUP_DPCP);
	int n = comm_size(g), r = comm_rank(g);
	struct dp *d;
	struct dp_cfg cfg = {.bucket_params = 100, .reduce_scatter = reduce_scatter};
	if (dp_create(g, NP, &cfg, &d, err)) { CHECK(0, "%s", err); return; }
	size_t P = dp_padded(d);
	float *grads = malloc(P * sizeof(float)), *ref = calloc(P, sizeof(float));
	float *shard = reduce_scatter ? malloc(dp_shard_len(d) * sizeof(float)) : NULL;
	for (size_t i = 0; i < NP; i++) grads[i] = ref[i] = igrad(x->rank, i);
	CHECK(comm_allreduce(g, ref, ref, NP, COMM_F32, err) == 0, "%s", err);
	for (size_t i = 0; i < NP; i++) ref[i] /= (float)n;

	CHECK(dp_begin(d, grads, shard, 0, err) == 0, "%s", err);
	int started_before_last = 0;
	/* backward produces gradients from the end of the buffer, 37 at a time */
	for (size_t done = 0; done < NP;) {
		size_t k = NP - done < 37 ? NP - done : 37;
		size_t off = forward_order ? done : NP - done - k;
		done += k;
		if (done == NP) started_before_last = dp_started(d);
		CHECK(dp_grad_ready(d, off, k, err) == 0, "%s", err);
	}
	CHECK(dp_finish(d, err) == 0, "%s", err);
	if (!forward_order)
		CHECK(started_before_last >= dp_nbuckets(d) - 2, "only %d of %d buckets started during backward",
		      started_before_last, dp_nbuckets(d));
	int bad = 0;
	if (!reduce_scatter) {
		for (size_t i = 0; i < NP; i++) bad += grads[i] != ref[i];
	} else {
		for (int b = 0; b < dp_nbuckets(d); b++) {
			const struct dp_bucket *bk = dp_bucket(d, b);
			size_t sl = bk->len / (size_t)n + 0;
			for (size_t k = 0; k < sl; k++) bad += shard[bk->shard_off + k] != ref[bk->off + (size_t)r * sl + k];
		}
	}
	CHECK(bad == 0, "%s, %s order: %d elements differ from one all-reduce", reduce_scatter ? "reduce-scatter" : "all-reduce",
	      forward_order ? "forward" : "backward", bad);

	/* errors: a range marked twice; a reduction finished with gradients missing */
	CHECK(dp_begin(d, grads, shard, 0, err) == 0, "%s", err);
	CHECK(dp_grad_ready(d, 0, 10, err) == 0, "%s", err);
	CHECK(dp_grad_ready(d, 5, 10, err) == -1 && strstr(err, "marked ready twice"), "double mark: '%s'", err);
	CHECK(dp_finish(d, err) == -1 && strstr(err, "never complete"), "missing marks: '%s'", err);
	CHECK(dp_grad_ready(d, 0, 1, err) == -1 && strstr(err, "outside dp_begin"), "mark after finish: '%s'", err);
	free(grads); free(ref); free(shard);
	dp_destroy(d);
}

/* --- ZeRO ------------------------------------------------------------------------------ */

/* gradient of parameter gi (index in the whole model) on dp*cp position k: bounded away from
 * zero so AdamW's m/sqrt(v) is well conditioned */
static float fgrad(float p, int k, size_t gi, int mb)
{
	return 1.0f + 0.05f * (float)(k + 1) * p + 0.01f * (float)(gi % 5) + 0.02f * (float)mb;
}

static float p0(size_t gi) { return (float)((gi * 37) % 101) / 101.0f - 0.5f; }

struct ref {
	int nslices, n;      /* model-parallel slices (tp*pp), dp*cp size */
	float *p, *g, *m, *v;
};

/* one unsharded step of the whole model: mean over k of the summed micro-batch gradients,
 * clipping by the norm over every slice, AdamW */
static void ref_step(struct ref *f, int step)
{
	size_t N = (size_t)f->nslices * NP;
	double sq = 0;
	for (size_t gi = 0; gi < N; gi++) {
		double s = 0;
		for (int k = 0; k < f->n; k++)
			for (int mb = 0; mb < MICRO; mb++) s += fgrad(f->p[gi], k, gi, mb);
		f->g[gi] = (float)(s / f->n);
		sq += (double)f->g[gi] * f->g[gi];
	}
	float c = grad_clip_coef(sqrt(sq), MAX_NORM);
	for (size_t gi = 0; gi < N; gi++) f->g[gi] *= c;
	adamw_apply(&OPT, f->p, f->g, f->m, f->v, N, step);
}

static int slice_of(const struct ctx *x)
{
	return x->coords.c[DIM_TP] + x->plan.tp * x->coords.c[DIM_PP];
}

static int compare(const float *got, const float *want, size_t n, const char *what)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		double tol = 1e-6 * fmax(fabs(want[i]), 1.0);
		if (fabs(got[i] - want[i]) > tol) {
			if (!bad) fprintf(stderr, "%s: element %zu is %.9g, want %.9g\n", what, i, got[i], want[i]);
			bad++;
		}
	}
	CHECK(bad == 0, "%s: %d elements differ", what, bad);
	return bad;
}

static void test_zero012(struct ctx *x, int stage, struct ref *f)
{
	char err[ERR_LEN], what[64];
	struct comm *g = ctx_comm(x, GROUP_DPCP);
	struct comm *mp[2] = {ctx_comm(x, GROUP_TP), ctx_comm(x, GROUP_PP)};
	int k = comm_rank(g);
	size_t base = (size_t)slice_of(x) * NP;
	struct zero *z;
	struct zero_cfg cfg = {.stage = stage, .bucket_params = 128, .opt = OPT};
	if (zero_create(g, NP, &cfg, &z, err)) { CHECK(0, "%s", err); return; }
	size_t P = zero_padded(z);
	float *params = calloc(P, sizeof(float)), *grads = calloc(P, sizeof(float));
	for (size_t i = 0; i < NP; i++) params[i] = p0(base + i);
	for (int step = 1; step <= STEPS; step++) {
		memset(grads, 0, P * sizeof(float));
		for (int mb = 0; mb < MICRO; mb++) {
			int last = mb == MICRO - 1;
			if (stage == 2) memset(grads, 0, P * sizeof(float));
			/* backward, last parameters first; stage 0/1 reduce on the last micro-batch only */
			int reduce = stage == 2 || last;
			if (reduce && zero_reduce_begin(z, grads, mb > 0, err)) { CHECK(0, "%s", err); goto out; }
			for (size_t done = 0; done < NP;) {
				size_t c = NP - done < 64 ? NP - done : 64, off = NP - done - c;
				for (size_t i = off; i < off + c; i++) grads[i] += fgrad(params[i], k, base + i, mb);
				if (reduce && zero_grad_ready(z, off, c, err)) { CHECK(0, "%s", err); goto out; }
				done += c;
			}
			if (reduce && zero_reduce_finish(z, err)) { CHECK(0, "%s", err); goto out; }
		}
		double norm;
		CHECK(zero_clip_grad_norm(z, mp, 2, MAX_NORM, &norm, err) == 0, "%s", err);
		CHECK(norm > MAX_NORM, "stage %d: norm %g does not exercise clipping", stage, norm);
		CHECK(zero_step(z, params, err) == 0, "%s", err);
		ref_step(f, step);
		snprintf(what, sizeof(what), "ZeRO-%d step %d (np %d)", stage, step, x->world);
		compare(params, f->p + base, NP, what);
	}
out:
	free(params); free(grads);
	zero_destroy(z);
}

static void test_zero3(struct ctx *x, struct ref *f)
{
	char err[ERR_LEN], what[64];
	struct comm *g = ctx_comm(x, GROUP_DPCP);
	struct comm *mp[2] = {ctx_comm(x, GROUP_TP), ctx_comm(x, GROUP_PP)};
	int k = comm_rank(g), n = comm_size(g);
	size_t base = (size_t)slice_of(x) * NP, maxu = 0, flat[NU + 1] = {0};
	for (int u = 0; u < NU; u++) {
		size_t pu = (units[u] + (size_t)n - 1) / (size_t)n * (size_t)n;
		if (pu > maxu) maxu = pu;
		flat[u + 1] = flat[u] + units[u];
	}
	struct zero3 *z;
	if (zero3_create(g, units, NU, &OPT, &z, err)) { CHECK(0, "%s", err); return; }
	float *init = malloc(NP * sizeof(float));
	for (size_t i = 0; i < NP; i++) init[i] = p0(base + i);
	CHECK(zero3_load(z, init, err) == 0, "%s", err);
	const float *pu;
	for (int step = 1; step <= STEPS; step++) {
		for (int mb = 0; mb < MICRO; mb++) {
			for (int u = 0; u < NU; u++) {      /* forward: gather, prefetch the next unit */
				if (zero3_gather(z, u, +1, &pu, err)) { CHECK(0, "%s", err); goto out; }
				snprintf(what, sizeof(what), "ZeRO-3 gathered unit %d", u);
				if (mb == 0 && u == 2) compare(pu, f->p + base + flat[u], units[u], what);
				zero3_release(z, u);
			}
			if (step == 1 && mb == 0)
				CHECK(zero3_peak_live(z) <= 2 * maxu, "forward held %zu elements, more than two units (%zu)",
				      zero3_peak_live(z), 2 * maxu);
			for (int u = NU - 1; u >= 0; u--) { /* backward: gather, prefetch the previous unit */
				if (zero3_gather(z, u, -1, &pu, err)) { CHECK(0, "%s", err); goto out; }
				float *gu = zero3_grad(z, u, err);
				if (!gu) { CHECK(0, "%s", err); goto out; }
				for (size_t i = 0; i < units[u]; i++) gu[i] = fgrad(pu[i], k, base + flat[u] + i, mb);
				zero3_release(z, u);
				if (zero3_reduce(z, u, err)) { CHECK(0, "%s", err); goto out; }
			}
		}
		double norm;
		CHECK(zero3_clip_grad_norm(z, mp, 2, MAX_NORM, &norm, err) == 0, "%s", err);
		CHECK(zero3_step(z, err) == 0, "%s", err);
		CHECK(zero3_live(z) == 0, "ZeRO-3: %zu elements still unsharded after the step", zero3_live(z));
		ref_step(f, step);
	}
	/* after the last step: the shard against the reference, then everything gathered */
	for (int u = 0; u < NU; u++) {
		if (zero3_gather(z, u, 0, &pu, err)) { CHECK(0, "%s", err); goto out; }
		snprintf(what, sizeof(what), "ZeRO-3 unit %d after %d steps (np %d)", u, STEPS, x->world);
		compare(pu, f->p + base + flat[u], units[u], what);
		zero3_release(z, u);
	}
	CHECK(zero3_step(z, err) == 0, "%s", err);   /* a step with zero gradients is legal */
	CHECK(zero3_gather(z, NU, 0, &pu, err) == -1 && strstr(err, "no unit"), "bad unit: '%s'", err);
	CHECK(zero3_gather(z, 0, 0, &pu, err) == 0, "%s", err);
	CHECK(zero3_step(z, err) == -1 && strstr(err, "still gathered"), "step while gathered: '%s'", err);
	zero3_release(z, 0);
out:
	free(init);
	zero3_destroy(z);
}

static void run_zero(struct ctx *x, int stage)
{
	struct ref f = {.nslices = x->plan.tp * x->plan.pp, .n = comm_size(ctx_comm(x, GROUP_DPCP))};
	size_t N = (size_t)f.nslices * NP;
	f.p = malloc(N * sizeof(float));
	f.g = calloc(N, sizeof(float));
	f.m = calloc(N, sizeof(float));
	f.v = calloc(N, sizeof(float));
	for (size_t gi = 0; gi < N; gi++) f.p[gi] = p0(gi);
	if (stage < 3) test_zero012(x, stage, &f);
	else test_zero3(x, &f);
	free(f.p); free(f.g); free(f.m); free(f.v);
}

static void test_defaults(void)
{
	/* TV-G4: Megatron bucket max(40e6, 1e6*dp) */
	CHECK(dp_default_bucket_params(8) == 40000000, "bucket dp 8");
	CHECK(dp_default_bucket_params(64) == 64000000, "bucket dp 64");
	/* AdamW step 1 from zero moments: m_hat = g, v_hat = g^2, so p -= lr*wd*p + lr*g/(|g|+eps) */
	float p = 2.0f, g = 0.5f, m = 0, v = 0;
	adamw_step(&p, &g, &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1.0f);
	CHECK_REL(p, 2.0 - 0.1 * 0.01 * 2.0 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-6, "adamw first step");
	/* per-range decay: elements [3, 5) and [8, 9) of 10 decay; the rest update as wd = 0.
	 * Updated from flat offset 2 (elements 2..9) it must equal element-wise adamw_step. */
	{
		struct decay_range r[2] = {{3, 2}, {8, 1}};
		struct adamw_cfg c = OPT;
		c.decay = r;
		c.ndecay = 2;
		float pa[10], ga[10], ma[10] = {0}, va[10] = {0}, pb[10], mb[10] = {0}, vb[10] = {0};
		for (int i = 0; i < 10; i++) pa[i] = pb[i] = 1.0f + 0.1f * i, ga[i] = 0.3f - 0.05f * i;
		adamw_apply_at(&c, pa + 2, ga + 2, ma + 2, va + 2, 2, 8, 1);
		int bad = 0;
		for (int i = 2; i < 10; i++) {
			int decays = (i >= 3 && i < 5) || i == 8;
			adamw_step(pb + i, ga + i, mb + i, vb + i, 1, OPT.lr, OPT.beta1, OPT.beta2, OPT.eps,
				   decays ? OPT.wd : 0.0f, 1, 1.0f);
			bad += pa[i] != pb[i];
		}
		CHECK(bad == 0 && pa[0] == 1.0f, "per-range decay: %d elements differ", bad);
		float p3 = 1.3f, m3 = 0, v3 = 0;
		adamw_step(&p3, ga + 3, &m3, &v3, 1, OPT.lr, OPT.beta1, OPT.beta2, OPT.eps, 0.0f, 1, 1.0f);
		CHECK(p3 != pa[3], "element 3 decays: its update differs from the undecayed one");
	}
	CHECK(grad_clip_coef(20.0, 10.0f) < 0.5f && grad_clip_coef(5.0, 10.0f) == 1.0f, "clip coefficient");
}

int main(void)
{
	char err[ERR_LEN];
	struct comm *world;
	if (harness_world(&world, 60)) return 1;   /* a bug that hangs fails instead */
	int n = comm_size(world);
	struct ctx *x = NULL;
	test_defaults();
	/* np 2: dp 2; np 4: dp 2 x cp 2; np 8: tp 2 x dp 2 x cp 2 (dp*cp 4, two model slices) */
	if (harness_ctx(world, n >= 8 ? 2 : 1, 1, n >= 4 ? 2 : 1, 1, &x, err)) {
		CHECK(0, "%s", err);
	} else {
		for (int rs = 0; rs <= 1; rs++)
			for (int fwd = 0; fwd <= 1; fwd++) test_buckets(x, rs, fwd);
		for (int stage = 0; stage <= 3; stage++) run_zero(x, stage);
	}
	ctx_destroy(x);
	return harness_finish(world, "test_zero");
}
