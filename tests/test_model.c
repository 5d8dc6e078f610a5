/* Single-rank model: whole-model gradients against finite differences (dense, MoE, GeLU with
 * qkv bias), loss at initialisation near ln(vocab), 20 AdamW steps reduce the loss on a fixed
 * batch, same seed gives bit-identical losses, deferred weight-gradient passes give the same
 * gradients, layer ranges compose, the parameter table is consistent, a single-rank shard
 * of some layers (llama_create_par without TP) holds only those and computes the same, and
 * activation recomputation (full, selective, mixed; with deferred W passes too) gives
 * bit-identical losses and gradients in fewer activation floats. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/model.h"
#include "sim/util.h"
#include "tests/test.h"
#include "tests/tiny.h"

enum { B = 2, T = 16, N = B * T };

static int same_routing(const struct llama *m, const struct llama_acts *a, const int *topi_ref)
{
	size_t at = 0, nk = (size_t)N * m->cfg.moe_topk;
	for (int l = 0; l < m->cfg.layers; l++)
		if (model_layer_is_moe(&m->cfg, l)) {
			if (memcmp(a->l[l].topi, topi_ref + at, sizeof(int) * nk)) return 0;
			at += nk;
		}
	return 1;
}

static void save_routing(const struct llama *m, const struct llama_acts *a, int *topi_ref)
{
	size_t at = 0, nk = (size_t)N * m->cfg.moe_topk;
	for (int l = 0; l < m->cfg.layers; l++)
		if (model_layer_is_moe(&m->cfg, l)) {
			memcpy(topi_ref + at, a->l[l].topi, sizeof(int) * nk);
			at += nk;
		}
}

/* The loss in double from the per-token losses: llama_forward's float mean would quantise the
 * finite differences to ulp(ln V)/eps. */
static double loss_double(const struct llama *m, struct llama_acts *a, const int *tok, const int *tgt)
{
	llama_forward(m, a, tok, tgt);
	double s = 0.0;
	int count = 0;
	for (int n = 0; n < N; n++)
		if (tgt[n] >= 0) { s += a->losses[n]; count++; }
	s /= count;
	for (int l = 0; l < m->cfg.layers; l++)
		if (model_layer_is_moe(&m->cfg, l)) s += (double)m->opts.aux_coef * a->l[l].aux_loss;
	return s;
}

/* Two elements of every tensor against central differences of the full loss (CE + aux).
 * Samples whose perturbation changes a top-k choice are skipped (the loss jumps there). */
static void gradcheck(const struct model *cfg, float aux_coef)
{
	char err[ERR_LEN];
	struct llama *m;
	struct llama_acts *a;
	struct llama_opts o;
	llama_opts_default(&o);
	o.aux_coef = aux_coef;
	o.init_std = 0.1f; /* larger weights give gradients well above float noise */
	if (llama_create(&m, cfg, &o, err) || llama_acts_create(&a, m, B, T, 0, err)) {
		CHECK(0, "create %s: %s", cfg->name, err);
		return;
	}
	int tok[N], tgt[N];
	tiny_batch(tok, tgt, N, T, 7, 3);
	int *topi = malloc(sizeof(int) * (size_t)N * (cfg->moe_topk + 1) * cfg->layers);
	llama_zero_grad(m);
	llama_forward(m, a, tok, tgt);
	save_routing(m, a, topi);
	llama_backward(m, a, 1.0f);
	int checked = 0, skipped = 0, bad = 0;
	double worst = 0.0, diff2 = 0.0, g2 = 0.0;
	for (int s = 0; s < m->n_specs; s++) {
		const struct param_spec *p = &m->specs[s];
		for (int j = 0; j < 2; j++) {
			size_t i = p->offset + (j == 0 ? p->numel / 3 : p->numel - 1 - (p->numel * 2) / 7);
			float keep = m->params[i], eps = 2e-2f; /* the loss's float noise ~2e-7 gives ~5e-6 */
			m->params[i] = keep + eps;
			double lp = loss_double(m, a, tok, tgt);
			int ok = same_routing(m, a, topi);
			m->params[i] = keep - eps;
			double lm = loss_double(m, a, tok, tgt);
			ok &= same_routing(m, a, topi);
			m->params[i] = keep;
			if (!ok) { skipped++; continue; }
			double fd = (lp - lm) / (2.0 * eps), g = m->grads[i];
			double e = fabs(fd - g) / (fabs(g) + 3e-4); /* 3e-2·3e-4 = 1e-5 absolute floor */
			worst = fmax(worst, e);
			checked++;
			diff2 += (fd - g) * (fd - g);
			g2 += g * g;
			if (e > 3e-2) {
				bad++;
				fprintf(stderr, "  %s[%zu]: analytic %.6g, finite difference %.6g\n", p->name, i - p->offset, g, fd);
			}
		}
	}
	CHECK(bad == 0, "%s: %d of %d sampled gradients off by more than 3%% (worst %.3g)", cfg->name, bad, checked, worst);
	CHECK(sqrt(diff2 / g2) < 1e-2, "%s: |fd - analytic| / |analytic| over all samples %.3g", cfg->name, sqrt(diff2 / g2));
	CHECK(skipped * 5 < checked, "%s: %d samples skipped for routing changes, %d checked", cfg->name, skipped, checked);
	free(topi);
	llama_acts_destroy(a);
	llama_destroy(m);
}

static void test_gradients(void)
{
	struct model dense = tiny_dense("tiny", 2), moe = tiny_moe("tiny-moe", 2), gelu = tiny_dense("tiny", 2);
	gradcheck(&dense, 0.0f);
	gradcheck(&moe, 0.5f);
	snprintf(gelu.name, sizeof gelu.name, "tiny-gelu-bias-tied");
	gelu.mlp = MLP_GELU;
	gelu.qkv_bias = 1;
	gelu.tied = 1;
	gelu.kv_heads = 1;
	gradcheck(&gelu, 0.0f);
}

/* Fixed batch, 20 AdamW steps; returns the losses. */
static void train(const struct model *cfg, uint64_t seed, float *losses)
{
	char err[ERR_LEN];
	struct llama *m;
	struct llama_acts *a;
	struct llama_opts o;
	llama_opts_default(&o);
	o.seed = seed;
	if (llama_create(&m, cfg, &o, err) || llama_acts_create(&a, m, B, T, 0, err)) {
		CHECK(0, "create: %s", err);
		return;
	}
	struct adamw_opts ao;
	adamw_opts_default(&ao);
	ao.lr = 3e-3f;
	int tok[N], tgt[N];
	tiny_batch(tok, tgt, N, T, 11, 3);
	for (int step = 0; step < 20; step++) {
		llama_zero_grad(m);
		losses[step] = llama_forward(m, a, tok, tgt);
		llama_backward(m, a, 1.0f);
		llama_step(m, &ao);
	}
	llama_acts_destroy(a);
	llama_destroy(m);
}

static void test_training(void)
{
	struct model cfgs[2] = {tiny_dense("tiny", 2), tiny_moe("tiny-moe", 2)};
	for (int c = 0; c < 2; c++) {
		float l1[20], l2[20], l3[20];
		train(&cfgs[c], 42, l1);
		train(&cfgs[c], 42, l2);
		train(&cfgs[c], 43, l3);
		/* independent fact: near-zero logits give a uniform softmax, loss ln V */
		CHECK_REL(l1[0], log(256.0), 0.02, "loss at initialisation ~ ln(vocab)");
		CHECK(l1[19] < 0.7f * l1[0], "%s: 20 AdamW steps on one batch: loss %.4f -> %.4f", cfgs[c].name, l1[0], l1[19]);
		CHECK(!memcmp(l1, l2, sizeof l1), "%s: same seed gives bit-identical losses", cfgs[c].name);
		CHECK(memcmp(l1, l3, sizeof l1), "%s: a different seed gives different losses", cfgs[c].name);
	}
}

/* Deferring every W pass after all B passes (zero-bubble order) gives bit-identical gradients;
 * running the layers as two ranges gives bit-identical losses. */
static void test_split_and_ranges(void)
{
	char err[ERR_LEN];
	struct model cfg = tiny_moe("tiny-moe", 2);
	struct llama *m;
	struct llama_acts *a, *as;
	if (llama_create(&m, &cfg, NULL, err) || llama_acts_create(&a, m, B, T, 0, err) ||
	    llama_acts_create(&as, m, B, T, 1, err)) {
		CHECK(0, "create: %s", err);
		return;
	}
	int tok[N], tgt[N];
	tiny_batch(tok, tgt, N, T, 3, 3);
	float *g = malloc(sizeof(float) * m->n_params);
	llama_zero_grad(m);
	float l_whole = llama_forward(m, a, tok, tgt);
	llama_backward(m, a, 1.0f);
	memcpy(g, m->grads, sizeof(float) * m->n_params);

	llama_zero_grad(m);
	llama_embed_forward(m, as, tok);
	llama_layers_forward(m, as, 0, 2);
	llama_layers_forward(m, as, 2, cfg.layers);
	float l_parts = llama_head_forward(m, as, tgt) + llama_aux_loss(m, as, 0, cfg.layers);
	llama_head_backward(m, as, 1.0f);
	for (int l = cfg.layers - 1; l >= 0; l--) llama_layer_backward_b(m, as, l);
	llama_embed_backward(m, as);
	for (int l = cfg.layers - 1; l >= 0; l--) llama_layer_backward_w(m, as, l);
	CHECK(l_whole == l_parts, "layer ranges: loss %.9g vs %.9g", l_whole, l_parts);
	CHECK(!memcmp(g, m->grads, sizeof(float) * m->n_params), "deferred W passes give the same gradients");
	CHECK(as->n_floats > a->n_floats, "split_w keeps per-layer gradient slots (%zu > %zu floats)", as->n_floats, a->n_floats);
	free(g);
	llama_acts_destroy(a);
	llama_acts_destroy(as);
	llama_destroy(m);
}

static void test_tables(void)
{
	char err[ERR_LEN];
	struct model cfg = tiny_dense("tiny", 2);
	struct llama *m;
	if (llama_create(&m, &cfg, NULL, err)) { CHECK(0, "create: %s", err); return; }
	/* independent count: V·C (embed) + L·(2C + C·(q + 2kv) + q·C + 3·C·F) + C + V·C (head) */
	size_t C = 64, q = 64, kv = 32, F = 128, V = 256, L = 4;
	size_t want = V * C + L * (2 * C + C * (q + 2 * kv) + q * C + 3 * C * F) + C + V * C;
	CHECK(m->n_params == want, "parameter count %zu, want %zu", m->n_params, want);
	size_t at = 0;
	int contiguous = 1;
	for (int s = 0; s < m->n_specs; s++) {
		contiguous &= m->specs[s].offset == at && m->specs[s].numel == (size_t)m->specs[s].rows * m->specs[s].cols;
		at += m->specs[s].numel;
	}
	CHECK(contiguous && at == m->n_params, "specs tile the flat buffer");
	CHECK(!strcmp(m->specs[2].name, "layers.0.attn.wq") && m->specs[2].shard == SHARD_COLUMN &&
	      m->specs[2].offset == m->layer[0].wqkv, "spec 2 is layer 0's wq, column-parallel");
	CHECK(m->specs[0].shard == SHARD_VOCAB && m->specs[m->n_specs - 1].shard == SHARD_VOCAB, "embed and head are vocab-parallel");
	/* a slice initialised on its own equals the whole tensor's values */
	float slice[10];
	llama_param_init(m, 3, 100, 10, slice);
	CHECK(!memcmp(slice, m->params + m->specs[3].offset + 100, sizeof slice), "llama_param_init of a slice");
	double ss = 0.0;
	for (size_t i = 0; i < m->specs[0].numel; i++) ss += (double)m->params[i] * m->params[i];
	CHECK_REL(sqrt(ss / m->specs[0].numel), 0.02, 0.05, "embedding init std 0.02");
	llama_destroy(m);

	struct model moe = tiny_moe("tiny-moe", 2);
	CHECK(!llama_create(&m, &moe, NULL, err), "create moe: %s", err);
	int experts = 0;
	for (int s = 0; s < m->n_specs; s++) experts += m->specs[s].shard == SHARD_EXPERT && m->specs[s].expert == 3;
	CHECK(experts == 3 * 3, "expert 3 owns gate, up, down in each of 3 MoE layers (%d)", experts);
	llama_destroy(m);

	/* Megatron-LM's per-token count (reference/model.md §1.4) for the dense tiny model:
	 * 6·[h(q + 2kv) + q·h] + 6·q·s + 6·h·f·3 + 6·h·V per layer/token, s = T */
	double per_tok = L * (6.0 * (C * (q + 2 * kv) + q * C) + 6.0 * q * T + 18.0 * C * F) + 6.0 * C * V;
	CHECK_REL(llama_step_flops(&cfg, B, T), per_tok * N, 1e-12, "step FLOPs, Megatron convention");

	struct model bad = tiny_dense("tiny", 2);
	bad.norm = NORM_LAYER;
	err[0] = 0;
	CHECK(llama_create(&m, &bad, NULL, err) && strstr(err, "RMSNorm"), "LayerNorm refused: '%s'", err);
	bad = tiny_dense("tiny", 2);
	bad.kv_heads = 3;
	CHECK(llama_create(&m, &bad, NULL, err) && strstr(err, "kv_heads"), "kv_heads must divide heads: '%s'", err);
}

/* Layers [1, 2) and [3, 4) as two chunks of one pipeline rank (no embedding, no head): only
 * their tensors are allocated, each at its single-rank place, and running them on the full
 * model's residual stream reproduces res[2], res[4] and the input gradients bit for bit. */
static void test_layer_shard(void)
{
	char err[ERR_LEN];
	struct model cfg = tiny_moe("tiny-moe", 2);
	struct llama *m = NULL, *s = NULL;
	struct llama_acts *a = NULL, *as = NULL;
	const struct llama_layer_range r[2] = {{1, 2}, {3, 4}};
	struct llama_par par;
	llama_par_default(&par);
	par.ranges = r;
	par.n_ranges = 2;
	par.has_embed = 0;
	par.has_head = 0;
	if (llama_create(&m, &cfg, NULL, err) || llama_acts_create(&a, m, B, T, 0, err) ||
	    llama_create_par(&s, &cfg, NULL, &par, err) || llama_acts_create(&as, s, B, T, 1, err)) {
		CHECK(0, "create: %s", err);
		goto out;
	}
	size_t want = 0;
	int same = 1;
	for (int i = 0; i < m->n_specs; i++)
		if (m->specs[i].layer == 1 || m->specs[i].layer == 3) want += m->specs[i].numel;
	for (int i = 0; i < s->n_specs; i++) {
		const struct param_spec *p = &s->specs[i], *q = &m->specs[p->gid];
		same &= !strcmp(p->name, q->name) && p->numel == q->numel && llama_full_index(s, i, 0) == q->offset &&
		        !memcmp(s->params + p->offset, m->params + q->offset, sizeof(float) * p->numel);
	}
	CHECK(s->n_params == want && s->n_params_full == m->n_params, "shard holds %zu parameters, want %zu", s->n_params, want);
	CHECK(same, "each held tensor has the single-rank name, size, place and initial values");
	CHECK(s->embed == (size_t)-1 && s->final_norm == (size_t)-1 && s->layer[2].wqkv == (size_t)-1 &&
	      !llama_holds_layer(s, 0) && llama_holds_layer(s, 3), "embedding, head and layers 0, 2 not allocated");
	int tok[N], tgt[N];
	tiny_batch(tok, tgt, N, T, 5, 3);
	llama_zero_grad(m);
	llama_forward(m, a, tok, tgt);
	llama_head_backward(m, a, 1.0f);
	const size_t NC = (size_t)N * cfg.hidden;
	float *d4 = malloc(sizeof(float) * NC);
	memcpy(d4, a->dres, sizeof(float) * NC);
	llama_layers_backward(m, a, 3, 4);
	int fwd = 1, bwd = 1;
	for (int c = 0; c < 2; c++) {
		const int l = r[c].begin;
		memcpy(as->res + l * NC, a->res + l * NC, sizeof(float) * NC);
		llama_layers_forward(s, as, l, l + 1);
		fwd &= !memcmp(as->res + (l + 1) * NC, a->res + (l + 1) * NC, sizeof(float) * NC);
	}
	memcpy(as->dres, d4, sizeof(float) * NC);
	llama_layer_backward_b(s, as, 3);
	bwd &= !memcmp(as->dres, a->dres, sizeof(float) * NC);
	llama_layer_backward_w(s, as, 3);
	float *full = calloc(m->n_params, sizeof(float));
	llama_local_to_full(s, s->grads, full, 1);
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *q = &m->specs[i];
		if (q->layer == 3) bwd &= !memcmp(full + q->offset, m->grads + q->offset, sizeof(float) * q->numel);
	}
	free(full);
	CHECK(fwd && !as->failed, "layer chunks [1,2) and [3,4) reproduce res[2] and res[4]");
	llama_layers_forward(s, as, 1, 3);
	CHECK(as->failed && strstr(as->err, "does not hold layer 2"), "a pass over layer 2 is refused: '%s'", as->err);
	as->failed = 0;
	llama_head_forward(s, as, tgt);
	CHECK(as->failed && strstr(as->err, "holds no head"), "a head pass is refused: '%s'", as->err);
	CHECK(bwd, "layer 3's input and weight gradients match");
	free(d4);
out:
	llama_acts_destroy(a);
	llama_acts_destroy(as);
	llama_destroy(m);
	llama_destroy(s);
	struct llama_par bad;
	llama_par_default(&bad);
	const struct llama_layer_range past = {2, 5};
	bad.ranges = &past;
	bad.n_ranges = 1;
	struct model c = tiny_dense("tiny", 2);
	err[0] = 0;
	CHECK(llama_create_par(&s, &c, NULL, &bad, err) == -1 && strstr(err, "layer range 0 [2, 5)"), "range past the end: '%s'", err);
}

/* Recomputation re-runs the forward kernels on the kept inputs: bit-identical losses and
 * gradients to keeping everything, and a smaller slab, full < selective < none. */
static void test_recompute(void)
{
	char err[ERR_LEN];
	struct model cfg = tiny_moe("tiny-moe", 2);
	struct llama *m;
	if (llama_create(&m, &cfg, NULL, err)) {
		CHECK(0, "create: %s", err);
		return;
	}
	int tok[N], tgt[N];
	tiny_batch(tok, tgt, N, T, 5, 2);
	float *g0 = malloc(sizeof(float) * m->n_params);
	unsigned char modes[4][8];
	const char *names[4] = {"none", "selective", "full", "mixed"};
	for (int l = 0; l < cfg.layers; l++) {
		modes[0][l] = LLAMA_RC_NONE;
		modes[1][l] = LLAMA_RC_ATTN;
		modes[2][l] = LLAMA_RC_FULL;
		modes[3][l] = (unsigned char)((l + 2) % 3); /* full, none, selective, ... */
	}
	size_t floats[2][4] = {{0}};
	float l0 = 0.0f;
	for (int split = 0; split < 2; split++)
		for (int k = 0; k < 4; k++) {
			struct llama_acts *a;
			if (llama_acts_create_rc(&a, m, B, T, split, modes[k], err)) {
				CHECK(0, "create %s: %s", names[k], err);
				continue;
			}
			floats[split][k] = a->n_floats;
			llama_zero_grad(m);
			float loss = llama_forward(m, a, tok, tgt);
			if (!split) {
				llama_backward(m, a, 1.0f);
			} else { /* zero-bubble order: every B pass, then every W pass */
				llama_head_backward(m, a, 1.0f);
				for (int l = cfg.layers - 1; l >= 0; l--) llama_layer_backward_b(m, a, l);
				llama_embed_backward(m, a);
				for (int l = cfg.layers - 1; l >= 0; l--) llama_layer_backward_w(m, a, l);
			}
			if (!split && !k) {
				l0 = loss;
				memcpy(g0, m->grads, sizeof(float) * m->n_params);
			} else {
				CHECK(loss == l0, "%s (split_w %d): loss %.9g vs %.9g", names[k], split, loss, l0);
				CHECK(!memcmp(g0, m->grads, sizeof(float) * m->n_params), "%s (split_w %d): same gradients",
				      names[k], split);
			}
			llama_acts_destroy(a);
		}
	for (int split = 0; split < 2; split++)
		CHECK(floats[split][2] < floats[split][1] && floats[split][1] < floats[split][0] &&
		      floats[split][3] < floats[split][0],
		      "split_w %d: activation floats full %zu < selective %zu < none %zu (mixed %zu)", split,
		      floats[split][2], floats[split][1], floats[split][0], floats[split][3]);
	struct llama_acts *a = NULL;
	modes[0][1] = 7;
	CHECK(llama_acts_create_rc(&a, m, B, T, 0, modes[0], err) == -1 && strstr(err, "layer 1"),
	      "an unknown mode is refused: '%s'", err);
	free(g0);
	llama_destroy(m);
}

int main(void)
{
	test_tables();
	test_gradients();
	test_training();
	test_split_and_ranges();
	test_layer_shard();
	test_recompute();
	return test_summary("model");
}
