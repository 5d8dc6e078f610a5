/* Tensor parallelism (with and without sequence parallelism) against the single-rank model,
 * under mpirun with 2 or 4 ranks. Every rank also runs the single-rank model (llama_create)
 * on the same batches; that is the independent reference:
 *  - a whole-model shard, two micro-batches (the second with deferred W passes): the loss of
 *    each, every gradient (gathered into the single-rank layout), the global gradient norm,
 *    and the weights and AdamW moments after one clipped step agree within 1e-5 relative
 *    (1e-6 absolute floor); the shard's initial weights are bit-identical slices;
 *  - a shard holding only layers [2, 4) and the head runs on the reference's residual
 *    stream at layer 2 and gives the same loss, gradients and input gradient;
 *  - bad shard descriptions are refused with a message naming the field.
 *  - context parallelism (zig-zag ring attention), alone and with tp, and expert parallelism
 *    (all-to-all dispatch) give the same loss, gradients (after the dp·cp sum) and step.
 * np 2: tp 2, cp 2, ep 2, cp 2 with ep 2. np 4: tp 2 with two replicas on different batches, tp 4 on models
 * whose kv_heads allow it, tp 2 x cp 2, ep 4. Dense SwiGLU (untied) and MoE (4 experts, top-2,
 * a shared expert, tied). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/comm.h"
#include "runtime/cp.h"
#include "runtime/ctx.h"
#include "runtime/model.h"
#include "sim/util.h"
#include "tests/mpi/harness.h"
#include "tests/test.h"
#include "tests/tiny.h"

enum { B = 2, T = 16, N = B * T, MICRO = 2 };
static int print_rank; /* world rank 0 prints what it measured */
#define REL 1e-5
#define ABS 1e-6

/* the tiny models of tests/tiny.h, named by their kv head count */
static struct model tiny_kv(int kv_heads)
{
	char name[64];
	snprintf(name, sizeof name, "tiny-kv%d", kv_heads);
	return tiny_dense(name, kv_heads);
}

static struct model tiny_moe_kv(int kv_heads)
{
	char name[64];
	snprintf(name, sizeof name, "tiny-moe-kv%d", kv_heads);
	return tiny_moe(name, kv_heads);
}

/* Elementwise agreement of a full single-rank-layout vector; names the worst tensor. */
static void compare_full(const struct llama *ref, const float *got, const float *want, const char *what,
                         const char *label)
{
	size_t bad = 0;
	double worst = 0.0, max_abs = 0.0, big = 0.0, rel_big = 0.0;
	int worst_spec = 0;
	for (int s = 0; s < ref->n_specs; s++) {
		const struct param_spec *p = &ref->specs[s];
		for (size_t i = p->offset; i < p->offset + p->numel; i++) {
			double d = fabs((double)got[i] - want[i]), tol = fmax(REL * fabs(want[i]), ABS);
			if (d > tol) bad++;
			double e = d / fmax(fabs(want[i]), ABS / REL);
			if (e > worst) { worst = e; worst_spec = s; }
			max_abs = fmax(max_abs, d);
			big = fmax(big, fabs(want[i]));
			if (fabs(want[i]) >= 1e-5) rel_big = fmax(rel_big, d / fabs(want[i]));
		}
	}
	CHECK(bad == 0, "%s: %zu %s elements off (worst relative %.3g in %s)", label, bad, what, worst,
	      ref->specs[worst_spec].name);
	if (print_rank)
		printf("%s, %s: max |diff| %.2g (largest |value| %.2g), max relative diff over |value| >= 1e-5: %.2g\n", label,
		       what, max_abs, big, rel_big);
}

static double sumsq(const float *g, size_t n)
{
	double s = 0.0;
	for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
	return s;
}

/* After the backward passes (and any dp·cp reduction): SP norm gradients, the gradients
 * against the single-rank model's, then one AdamW step with clipping active (max norm half
 * the reference's norm): the norm, the weights and both moments. ref2, the single-rank model
 * stepped from the shard's gathered gradients, isolates the sharded step. */
static void check_grads_and_step(struct llama *ref, struct llama *m, const char *label)
{
	char err[ERR_LEN];
	struct llama *ref2 = NULL;
	float *full = malloc(sizeof(float) * ref->n_params), *gfull = malloc(sizeof(float) * ref->n_params);
	if (llama_create(&ref2, &ref->cfg, &ref->opts, err)) {
		CHECK(0, "%s: %s", label, err);
		goto out;
	}
	CHECK(!llama_grads_finish(m, err), "%s: %s", label, err);
	CHECK(!llama_gather_full(m, m->grads, gfull, NULL, 0, err), "%s: %s", label, err);
	compare_full(ref, gfull, ref->grads, "gradient", label);

	struct adamw_opts ao;
	adamw_opts_default(&ao);
	ao.max_grad_norm = 0.5f * (float)sqrt(sumsq(ref->grads, ref->n_params));
	memcpy(ref2->grads, gfull, sizeof(float) * ref->n_params);
	llama_step(ref2, &ao);
	float want_norm = llama_step(ref, &ao), got_norm = 0.0f;
	CHECK(!llama_step_par(m, &ao, NULL, 0, &got_norm, err), "%s: step: %s", label, err);
	CHECK(fabs(got_norm - want_norm) <= REL * want_norm, "%s: gradient norm %.9g, single rank %.9g", label, got_norm,
	      want_norm);
	CHECK(!llama_gather_full(m, m->params, full, NULL, 0, err), "%s: %s", label, err);
	compare_full(ref, full, ref2->params, "weight after one step from the same gradients", label);
	/* Against the reference's own step, AdamW's first update lr·ĝ/(|ĝ| + eps) (ĝ the clipped
	 * gradient) turns the accepted gradient difference Δ into up to 2·lr·|Δĝ|/(|ĝ| + eps):
	 * large where summation order decides a near-cancelled gradient (~1e-7 out of terms of
	 * ~1e-2). Elsewhere the plain tolerance holds. */
	const float clip = fminf(1.0f, ao.max_grad_norm / (want_norm + 1e-6f));
	size_t bad = 0, widened = 0;
	for (size_t i = 0; i < ref->n_params; i++) {
		double d = fabs((double)full[i] - ref->params[i]), tol = fmax(REL * fabs(ref->params[i]), ABS);
		double prop = 2.0 * ao.lr * clip * fabs((double)gfull[i] - ref->grads[i]) / (clip * fabs(ref->grads[i]) + ao.eps);
		widened += d > tol;
		bad += d > tol + prop;
	}
	CHECK(bad == 0 && widened < 10, "%s: %zu weights off after one step (%zu beyond %g relative, %g absolute)", label,
	      bad, widened, REL, ABS);
	CHECK(!llama_gather_full(m, m->m, full, NULL, 0, err), "%s: %s", label, err);
	compare_full(ref, full, ref->m, "first moment", label);
	CHECK(!llama_gather_full(m, m->v, full, NULL, 0, err), "%s: %s", label, err);
	for (size_t i = 0; i < ref->n_params; i++) { /* v ~ g², so the floor is ABS² */
		full[i] = (float)sqrt(full[i]);
		ref->v[i] = (float)sqrt(ref->v[i]);
	}
	compare_full(ref, full, ref->v, "sqrt of second moment", label);
out:
	free(full);
	free(gfull);
	llama_destroy(ref2);
}

/* Micro-batch 1 with deferred weight-gradient passes, as zero-bubble schedules run them. */
/* The gradients summed over g (the dp·cp reduction; the experts' too only when with_experts),
 * then checked with the step against the single-rank model's (check_grads_and_step). */
static void reduce_and_check(struct llama *ref, struct llama *m, struct comm *g, int with_experts, const char *label)
{
	char err[ERR_LEN];
	int rc = 0;
	for (int s = 0; s < m->n_specs && !rc; s++)
		if (with_experts || m->specs[s].shard != SHARD_EXPERT)
			rc = comm_allreduce(g, m->grads + m->specs[s].offset, m->grads + m->specs[s].offset, m->specs[s].numel,
			                    COMM_F32, err);
	CHECK(!rc, "%s: %s", label, err);
	check_grads_and_step(ref, m, label);
}

/* frees a reference model and a shard with their activations (any may be NULL) */
static void destroy_pair(struct llama *ref, struct llama_acts *ra, struct llama *m, struct llama_acts *a)
{
	llama_acts_destroy(ra);
	llama_acts_destroy(a);
	llama_destroy(ref);
	llama_destroy(m);
}

static float split_micro(struct llama *m, struct llama_acts *a, const int *tok, const int *tgt, float dloss)
{
	const int L = m->cfg.layers;
	llama_embed_forward(m, a, tok);
	llama_layers_forward(m, a, 0, L);
	float loss = llama_head_forward(m, a, tgt) + llama_aux_loss(m, a, 0, L);
	llama_head_backward(m, a, dloss);
	for (int l = L - 1; l >= 0; l--) llama_layer_backward_b(m, a, l);
	llama_embed_backward(m, a);
	for (int l = L - 1; l >= 0; l--) llama_layer_backward_w(m, a, l);
	return loss;
}

static void check_whole(struct comm *tp, int sp, const struct model *cfg, int replica)
{
	char err[ERR_LEN], label[2 * ERR_LEN];
	snprintf(label, sizeof label, "%s tp%d sp%d replica %d", cfg->name, comm_size(tp), sp, replica);
	struct llama *ref = NULL, *m = NULL;
	struct llama_acts *ra = NULL, *a0 = NULL, *a1 = NULL;
	struct llama_par par;
	llama_par_default(&par);
	par.tp = tp;
	par.sp = sp;
	float *local = NULL;
	if (llama_create(&ref, cfg, NULL, err) || llama_acts_create(&ra, ref, B, T, 0, err) ||
	    llama_create_par(&m, cfg, NULL, &par, err) || llama_acts_create(&a0, m, B, T, 0, err) ||
	    llama_acts_create(&a1, m, B, T, 1, err)) {
		CHECK(0, "%s: create: %s", label, err);
		goto out;
	}
	local = malloc(sizeof(float) * m->n_params);
	CHECK(a0->Nl == (sp ? N / comm_size(tp) : N) && a0->n0 == (sp ? comm_rank(tp) * a0->Nl : 0),
	      "%s: residual stream holds tokens [%d, %d)", label, a0->n0, a0->n0 + a0->Nl);

	/* the shard's memory: 1/tp of every sharded tensor, replicated ones whole */
	size_t repl = 0;
	for (int s = 0; s < ref->n_specs; s++) repl += ref->specs[s].shard == SHARD_REPLICATED ? ref->specs[s].numel : 0;
	const int tpn = comm_size(tp);
	CHECK(m->n_params == (ref->n_params - repl) / tpn + repl && m->n_params_full == ref->n_params,
	      "%s: shard holds %zu of %zu parameters, want %zu", label, m->n_params, ref->n_params,
	      (ref->n_params - repl) / tpn + repl);
	llama_full_to_local(m, ref->params, local);
	CHECK(!memcmp(local, m->params, sizeof(float) * m->n_params), "%s: initial shard = slices of the single-rank weights",
	      label);

	for (int mb = 0; mb < MICRO; mb++) {
		int tok[N], tgt[N];
		tiny_batch(tok, tgt, N, T, 1000u * (unsigned)replica + 17u * (unsigned)mb + 3u, 5);
		float want = llama_forward(ref, ra, tok, tgt);
		llama_backward(ref, ra, 1.0f / MICRO);
		float got = mb == 0 ? llama_forward(m, a0, tok, tgt) : split_micro(m, a1, tok, tgt, 1.0f / MICRO);
		if (mb == 0) llama_backward(m, a0, 1.0f / MICRO);
		CHECK(fabs(got - want) <= REL * fabs(want), "%s: micro-batch %d loss %.9g, single rank %.9g", label, mb, got, want);
	}
	CHECK(!a0->failed && !a1->failed, "%s: collectives: %s%s", label, a0->err, a1->err);
	check_grads_and_step(ref, m, label);
out:
	free(local);
	llama_acts_destroy(a1);
	destroy_pair(ref, ra, m, a0);
}

/* A pipeline-like shard: layers [2, 4) and the head, fed the reference's res[2]. */
static void check_range(struct comm *tp, int sp, const struct model *cfg)
{
	char err[ERR_LEN], label[2 * ERR_LEN];
	snprintf(label, sizeof label, "%s tp%d sp%d layers [2,4)+head", cfg->name, comm_size(tp), sp);
	struct llama *ref = NULL, *m = NULL;
	struct llama_acts *ra = NULL, *a = NULL;
	const struct llama_layer_range r = {2, 4};
	struct llama_par par;
	llama_par_default(&par);
	par.tp = tp;
	par.sp = sp;
	par.ranges = &r;
	par.n_ranges = 1;
	par.has_embed = 0;
	if (llama_create(&ref, cfg, NULL, err) || llama_acts_create(&ra, ref, B, T, 0, err) ||
	    llama_create_par(&m, cfg, NULL, &par, err) || llama_acts_create(&a, m, B, T, 0, err)) {
		CHECK(0, "%s: create: %s", label, err);
		goto out;
	}
	CHECK(!llama_holds_layer(m, 1) && llama_holds_layer(m, 2) && m->layer[1].wqkv == (size_t)-1 &&
	      m->layer[0].attn_norm == (size_t)-1 && (cfg->tied || m->embed == (size_t)-1),
	      "%s: layers 0, 1 (and an untied embedding) are not allocated", label);
	int tok[N], tgt[N];
	tiny_batch(tok, tgt, N, T, 99, 5);
	llama_forward(ref, ra, tok, tgt);
	const double want = ra->ce_loss + llama_aux_loss(ref, ra, 2, 4);
	llama_zero_grad(ref);
	llama_head_backward(ref, ra, 1.0f);
	llama_layers_backward(ref, ra, 2, 4); /* ra->dres: d loss / d res[2] */

	const size_t C = (size_t)cfg->hidden;
	memcpy(a->res + 2 * (size_t)a->Nl * C, ra->res + 2 * (size_t)N * C + (size_t)a->n0 * C, sizeof(float) * a->Nl * C);
	llama_layers_forward(m, a, 2, 4);
	double got = llama_head_forward(m, a, tgt) + llama_aux_loss(m, a, 2, 4);
	CHECK(fabs(got - want) <= REL * fabs(want), "%s: loss %.9g, single rank %.9g", label, got, want);
	llama_head_backward(m, a, 1.0f);
	llama_layers_backward(m, a, 2, 4);
	CHECK(!a->failed && !llama_grads_finish(m, err), "%s: collectives: %s %s", label, a->err, err);
	size_t bad = 0, n = 0;
	for (int s = 0; s < m->n_specs; s++)
		for (size_t i = 0; i < m->specs[s].numel; i++, n++) {
			float g = m->grads[m->specs[s].offset + i], w = ref->grads[llama_full_index(m, s, i)];
			bad += fabs((double)g - w) > fmax(REL * fabs(w), ABS);
		}
	CHECK(bad == 0 && n == m->n_params, "%s: %zu of %zu gradients off", label, bad, n);
	bad = 0;
	for (size_t i = 0; i < (size_t)a->Nl * C; i++) {
		float g = a->dres[i], w = ra->dres[(size_t)a->n0 * C + i];
		bad += fabs((double)g - w) > fmax(REL * fabs(w), ABS);
	}
	CHECK(bad == 0, "%s: %zu elements of d res[2] off", label, bad);
out:
	destroy_pair(ref, ra, m, a);
}

static void check_refusals(struct comm *tp)
{
	char err[ERR_LEN] = "";
	struct llama *m = NULL;
	struct llama_acts *a = NULL;
	struct llama_par par;
	llama_par_default(&par);
	par.tp = tp;
	const int n = comm_size(tp);
	struct model c = tiny_kv(n == 4 ? 2 : 1);
	CHECK(llama_create_par(&m, &c, NULL, &par, err) == -1 && strstr(err, "kv_heads") && !m,
	      "tp %d with kv_heads %d refused: '%s'", n, c.kv_heads, err);
	c = tiny_kv(n);
	struct llama_layer_range r[2] = {{1, 3}, {2, 4}};
	par.ranges = r;
	par.n_ranges = 2;
	CHECK(llama_create_par(&m, &c, NULL, &par, err) == -1 && strstr(err, "overlaps"), "overlapping ranges: '%s'", err);
	r[1] = (struct llama_layer_range){3, 5};
	CHECK(llama_create_par(&m, &c, NULL, &par, err) == -1 && strstr(err, "layer range 1 [3, 5)"),
	      "range past the last layer: '%s'", err);
	struct model moe = tiny_moe_kv(n);
	par.n_ranges = 0;
	par.ep = tp; /* any group of more than one rank */
	CHECK(llama_create_par(&m, &moe, NULL, &par, err) == -1 && strstr(err, "expert parallelism with tp"),
	      "EP with TP refused: '%s'", err);
	par.tp = NULL;
	moe.moe_experts = 3;
	moe.moe_topk = 1;
	CHECK(llama_create_par(&m, &moe, NULL, &par, err) == -1 && strstr(err, "must divide moe_experts"),
	      "ep not dividing the experts refused: '%s'", err);
	moe.moe_experts = 4;
	par.expert_begin = 1;
	par.expert_end = 3;
	CHECK(llama_create_par(&m, &moe, NULL, &par, err) == -1 && strstr(err, "expert range [1, 3)"),
	      "an expert range other than the EP split refused: '%s'", err);
	par.ep = NULL;
	par.expert_begin = par.expert_end = 0;
	par.tp = tp;
	par.n_ranges = 2;
	r[1].end = 4;
	par.sp = 1;
	CHECK(!llama_create_par(&m, &c, NULL, &par, err), "ranges [1,3)+[3,4): %s", err);
	if (m) {
		CHECK(llama_acts_create(&a, m, 1, 3 * n + 1, 0, err) == -1 && strstr(err, "divide B*T"),
		      "sequence parallelism with B*T not a multiple of tp: '%s'", err);
		CHECK(!llama_holds_layer(m, 0) && llama_holds_layer(m, 3), "ranges [1,3)+[3,4) hold layers 1-3");
	}
	llama_destroy(m);
}

/* Context parallelism (with tp, sp): each CP rank feeds its zig-zag rows of the same batches;
 * the loss is the whole sequences'; the gradients summed over CP (as the dp·cp reduction
 * does) are the single-rank ones. */
static void check_cp(struct comm *tp, struct comm *cp, struct comm *ep, int sp, const struct model *cfg)
{
	char err[ERR_LEN], label[2 * ERR_LEN];
	snprintf(label, sizeof label, "%s tp%d cp%d ep%d sp%d", cfg->name, comm_size(tp), comm_size(cp),
	         ep ? comm_size(ep) : 1, sp);
	struct llama *ref = NULL, *m = NULL;
	struct llama_acts *ra = NULL, *a = NULL;
	struct llama_par par;
	llama_par_default(&par);
	par.tp = tp;
	par.sp = sp;
	par.cp = cp;
	par.ep = ep;
	if (llama_create(&ref, cfg, NULL, err) || llama_acts_create(&ra, ref, B, T, 0, err) ||
	    llama_create_par(&m, cfg, NULL, &par, err) || llama_acts_create(&a, m, B, T, 0, err)) {
		CHECK(0, "%s: create: %s", label, err);
		goto out;
	}
	CHECK(a->T == T / comm_size(cp) && a->N == B * T / comm_size(cp), "%s: %d rows of each sequence", label, a->T);
	for (int mb = 0; mb < MICRO; mb++) {
		int tok[N], tgt[N], ltok[N], ltgt[N];
		tiny_batch(tok, tgt, N, T, 50u + (unsigned)mb, 5);
		float want = llama_forward(ref, ra, tok, tgt);
		llama_backward(ref, ra, 1.0f / MICRO);
		CHECK(!cp_shard_tokens(ltok, tok, B, T, comm_size(cp), comm_rank(cp), err) &&
		      !cp_shard_tokens(ltgt, tgt, B, T, comm_size(cp), comm_rank(cp), err), "%s: %s", label, err);
		float got = llama_forward(m, a, ltok, ltgt);
		llama_backward(m, a, 1.0f / MICRO);
		CHECK(fabs(got - want) <= REL * fabs(want), "%s: micro-batch %d loss %.9g, single rank %.9g", label, mb, got, want);
	}
	CHECK(!a->failed, "%s: collectives: %s", label, a->err);
	/* experts are reduced over expert-DP (one rank when EP is the whole CP group) */
	reduce_and_check(ref, m, cp, !ep, label);
out:
	destroy_pair(ref, ra, m, a);
}

/* Expert parallelism: EP rank r runs micro-batch r of the reference's ep micro-batches (as a
 * data-parallel rank would) with its E/ep experts; everything but the experts summed over EP
 * (the dp reduction) and the experts gathered give the reference's accumulated gradients. */
static void check_ep(struct comm *ep, const struct model *cfg)
{
	char err[ERR_LEN], label[2 * ERR_LEN];
	const int n = comm_size(ep), r = comm_rank(ep);
	snprintf(label, sizeof label, "%s ep%d", cfg->name, n);
	struct llama *ref = NULL, *m = NULL;
	struct llama_acts *ra = NULL, *a = NULL;
	struct llama_par par;
	llama_par_default(&par);
	par.ep = ep;
	if (llama_create(&ref, cfg, NULL, err) || llama_acts_create(&ra, ref, B, T, 0, err) ||
	    llama_create_par(&m, cfg, NULL, &par, err) || llama_acts_create(&a, m, B, T, 1, err)) {
		CHECK(0, "%s: create: %s", label, err);
		goto out;
	}
	size_t experts = 0;
	for (int s = 0; s < ref->n_specs; s++) experts += ref->specs[s].shard == SHARD_EXPERT ? ref->specs[s].numel : 0;
	CHECK(m->n_params == ref->n_params - experts + experts / (size_t)n, "%s: shard holds %zu of %zu parameters", label,
	      m->n_params, ref->n_params);
	float want = 0.0f;
	int tok[N], tgt[N];
	for (int i = 0; i < n; i++) {
		tiny_batch(tok, tgt, N, T, 70u + (unsigned)i, 5);
		float l = llama_forward(ref, ra, tok, tgt);
		llama_backward(ref, ra, 1.0f / n);
		if (i == r) want = l;
	}
	tiny_batch(tok, tgt, N, T, 70u + (unsigned)r, 5);
	float got = split_micro(m, a, tok, tgt, 1.0f / n);
	CHECK(fabs(got - want) <= REL * fabs(want), "%s: loss %.9g, single rank %.9g", label, got, want);
	CHECK(!a->failed, "%s: collectives: %s", label, a->err);
	reduce_and_check(ref, m, ep, 0, label);
out:
	destroy_pair(ref, ra, m, a);
}

static struct ctx *make_ctx(struct comm *world, int tp, int cp, int ep)
{
	char err[ERR_LEN];
	struct ctx *x;
	if (harness_ctx(world, tp, 1, cp, ep, &x, err)) CHECK(0, "ctx tp %d cp %d ep %d: %s", tp, cp, ep, err);
	return x;
}

static void run_tp(struct comm *world, int tp_deg, const struct model *cfgs, int ncfg)
{
	struct ctx *x = make_ctx(world, tp_deg, 1, 1);
	if (!x) return;
	struct comm *tp = ctx_comm(x, GROUP_TP);
	for (int c = 0; c < ncfg; c++)
		for (int sp = 0; sp <= 1; sp++) {
			check_whole(tp, sp, &cfgs[c], x->coords.c[DIM_DP]);
			check_range(tp, sp, &cfgs[c]);
		}
	check_refusals(tp);
	ctx_destroy(x);
}

int main(void)
{
	struct comm *world;
	if (harness_world(&world, 60)) return 1; /* a rank that skips a collective fails instead of hanging */
	const int n = comm_size(world);
	print_rank = comm_rank(world) == 0 && getenv("TEST_TP_VERBOSE") != NULL;
	const struct model two[2] = {tiny_kv(2), tiny_moe_kv(2)}, four[2] = {tiny_kv(4), tiny_moe_kv(4)};
	run_tp(world, 2, two, 2);                /* np 4: two replicas of tp 2 */
	if (n % 4 == 0) run_tp(world, 4, four, 2);
	/* np 2: cp 2; np 4: tp 2 x cp 2 */
	struct ctx *x = make_ctx(world, n / 2, 2, 1);
	for (int c = 0; x && c < 2; c++)
		for (int sp = 0; sp <= 1; sp++) check_cp(ctx_comm(x, GROUP_TP), ctx_comm(x, GROUP_CP), NULL, sp, &two[c]);
	ctx_destroy(x);
	if (n == 2) { /* cp 2 with the experts split over the same two ranks */
		x = make_ctx(world, 1, 2, 2);
		if (x) check_cp(ctx_comm(x, GROUP_TP), ctx_comm(x, GROUP_CP), ctx_comm(x, GROUP_EP), 0, &two[1]);
		ctx_destroy(x);
	}
	x = make_ctx(world, 1, 1, n); /* every rank an EP rank: ep 2 or 4 */
	if (x) check_ep(ctx_comm(x, GROUP_EP), &two[1]);
	ctx_destroy(x);
	return harness_finish(world, "test_tp");
}
