/* model_pass — forward and backward of the single-rank decoder (runtime/model.h), written as
 * calls to the reference kernels. Block l maps res[l] to res[l+1]:
 *   mid = res + Wo·attn(rope(Wqkv·rmsnorm(res)))
 *   out = mid + mlp(rmsnorm(mid))        (dense SwiGLU/GeLU, or routed experts + shared)
 * Each block's backward is split in the input-gradient pass (B), which carries the residual
 * gradient down, and the weight-gradient pass (W), which only reads what B left behind. */
#include <string.h>
#include "kernels/cpu.h"
#include "runtime/model.h"

#define NOPE ((size_t)-1)
#define PW(off) (m->params + (off))
#define GW(off) (m->grads + (off))

struct dims { int B, T, N, C, H, Hkv, d, q, qkv, V, E, k, Fe, Fs; float eps; };

static struct dims dims_of(const struct llama *m, const struct llama_acts *a)
{
	const struct model *c = &m->cfg;
	struct dims s;
	s.B = a->B;
	s.T = a->T;
	s.N = a->N;
	s.C = c->hidden;
	s.H = c->heads;
	s.Hkv = c->kv_heads;
	s.d = c->head_dim;
	s.q = s.H * s.d;
	s.qkv = (s.H + 2 * s.Hkv) * s.d;
	s.V = c->vocab;
	s.E = c->moe_experts;
	s.k = c->moe_topk;
	s.Fe = c->moe_ffn_hidden;
	s.Fs = c->moe_ffn_hidden * c->moe_shared_experts;
	s.eps = (float)c->norm_eps;
	return s;
}

static void add_into(float *y, const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++) y[i] += x[i];
}

static float *expert_gu(const struct llama *m, float *base, int l, int e)
{
	return base + m->layer[l].experts + (size_t)e * 3 * m->cfg.moe_ffn_hidden * m->cfg.hidden;
}

/* ---- forward ---------------------------------------------------------------------- */

void llama_embed_forward(const struct llama *m, struct llama_acts *a, const int *tokens)
{
	struct dims s = dims_of(m, a);
	memcpy(a->tokens, tokens, sizeof(int) * (size_t)s.N);
	embedding_forward(a->res, a->tokens, PW(m->embed), s.N, s.C, 0, s.V);
}

static void attn_forward(const struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const float *x = a->res + (size_t)l * s->N * s->C; /* (N, C) */
	rmsnorm_forward(L->ln1, L->rstd1, x, PW(o->attn_norm), s->N, s->C, s->eps);
	linear_forward(L->qkv, L->ln1, PW(o->wqkv), o->bqkv != NOPE ? PW(o->bqkv) : NULL, s->N, s->C, s->qkv);
	rope_forward(L->qkv, a->rope_tab, s->B, s->T, s->H + s->Hkv, s->d, s->qkv);
	attention_forward(L->att, L->lse, L->qkv, a->att_scratch, s->B, s->T, s->H, s->Hkv, s->d);
	linear_forward(L->mid, L->att, PW(o->wo), NULL, s->N, s->q, s->C);
	add_into(L->mid, x, (size_t)s->N * s->C);
}

static void moe_forward(const struct llama *m, struct llama_acts *a, int l, const struct dims *s, float *y)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const int N = s->N, C = s->C, E = s->E, k = s->k, Fe = s->Fe;
	linear_forward(L->rlogits, L->ln2, PW(o->router), NULL, N, C, E);
	moe_router_forward(L->probs, L->topi, L->topw, L->rlogits, N, E, k);
	moe_aux_loss_forward(&L->aux_loss, L->frac, L->probs, L->topi, N, E, k);
	moe_dispatch(L->offsets, L->perm, L->slot_of, L->topi, N, E, k);
	moe_gather(L->xe, L->ln2, L->perm, N, C, k);
	for (int e = 0; e < E; e++) {
		const size_t r = (size_t)L->offsets[e];
		const int n = L->offsets[e + 1] - L->offsets[e];
		if (!n) continue;
		const float *w = expert_gu(m, m->params, l, e);
		linear_forward(L->gue + r * 2 * Fe, L->xe + r * C, w, NULL, n, C, 2 * Fe);
		swiglu_forward(L->he + r * Fe, L->gue + r * 2 * Fe, n, Fe);
		linear_forward(L->ye + r * C, L->he + r * Fe, w + (size_t)2 * Fe * C, NULL, n, Fe, C);
	}
	memcpy(y, L->mid, sizeof(float) * (size_t)N * C);
	moe_combine(y, L->ye, L->topw, L->slot_of, N, C, k);
	if (s->Fs) {
		linear_forward(L->sgu, L->ln2, PW(o->shared_in), NULL, N, C, 2 * s->Fs);
		swiglu_forward(L->sh, L->sgu, N, s->Fs);
		linear_forward(a->dln, L->sh, PW(o->shared_out), NULL, N, s->Fs, C); /* dln as scratch */
		add_into(y, a->dln, (size_t)N * C);
	}
}

static void mlp_forward(const struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	float *y = a->res + (size_t)(l + 1) * s->N * s->C; /* (N, C) */
	rmsnorm_forward(L->ln2, L->rstd2, L->mid, PW(o->mlp_norm), s->N, s->C, s->eps);
	if (model_layer_is_moe(&m->cfg, l)) {
		moe_forward(m, a, l, s, y);
		return;
	}
	const int F = m->cfg.ffn_hidden;
	if (m->cfg.mlp == MLP_SWIGLU) {
		linear_forward(L->pre, L->ln2, PW(o->w_in), NULL, s->N, s->C, 2 * F);
		swiglu_forward(L->h, L->pre, s->N, F);
	} else {
		linear_forward(L->pre, L->ln2, PW(o->w_in), NULL, s->N, s->C, F);
		gelu_forward(L->h, L->pre, (size_t)s->N * F);
	}
	linear_forward(y, L->h, PW(o->w_out), NULL, s->N, F, s->C);
	add_into(y, L->mid, (size_t)s->N * s->C);
}

void llama_layers_forward(const struct llama *m, struct llama_acts *a, int l0, int l1)
{
	struct dims s = dims_of(m, a);
	for (int l = l0; l < l1; l++) {
		attn_forward(m, a, l, &s);
		mlp_forward(m, a, l, &s);
	}
}

float llama_head_forward(const struct llama *m, struct llama_acts *a, const int *targets)
{
	struct dims s = dims_of(m, a);
	const float *x = a->res + (size_t)m->cfg.layers * s.N * s.C;
	memcpy(a->targets, targets, sizeof(int) * (size_t)s.N);
	rmsnorm_forward(a->lnf, a->rstdf, x, PW(m->final_norm), s.N, s.C, s.eps);
	linear_forward(a->logits, a->lnf, PW(m->lm_head), NULL, s.N, s.C, s.V);
	crossentropy_forward(a->losses, a->lse_ce, a->logits, a->targets, s.N, s.V);
	double sum = 0.0;
	int count = 0;
	for (int n = 0; n < s.N; n++)
		if (a->targets[n] >= 0) { sum += a->losses[n]; count++; }
	a->ce_loss = count ? (float)(sum / count) : 0.0f;
	return a->ce_loss;
}

float llama_aux_loss(const struct llama *m, const struct llama_acts *a, int l0, int l1)
{
	float s = 0.0f;
	for (int l = l0; l < l1; l++)
		if (model_layer_is_moe(&m->cfg, l)) s += m->opts.aux_coef * a->l[l].aux_loss;
	return s;
}

float llama_forward(const struct llama *m, struct llama_acts *a, const int *tokens, const int *targets)
{
	llama_embed_forward(m, a, tokens);
	llama_layers_forward(m, a, 0, m->cfg.layers);
	return llama_head_forward(m, a, targets) + llama_aux_loss(m, a, 0, m->cfg.layers);
}

/* ---- backward: input-gradient passes ------------------------------------------------- */

void llama_head_backward(struct llama *m, struct llama_acts *a, float dloss)
{
	struct dims s = dims_of(m, a);
	const float *x = a->res + (size_t)m->cfg.layers * s.N * s.C;
	int count = 0;
	for (int n = 0; n < s.N; n++) count += a->targets[n] >= 0;
	a->dloss = dloss;
	float *dlogits = a->logits; /* in place: (N, V) */
	crossentropy_backward(dlogits, a->logits, a->lse_ce, a->targets, count ? dloss / count : 0.0f, s.N, s.V);
	linear_backward_weight(GW(m->lm_head), NULL, dlogits, a->lnf, s.N, s.C, s.V);
	linear_backward_input(a->dln, dlogits, PW(m->lm_head), s.N, s.C, s.V, 0);
	memset(a->dres, 0, sizeof(float) * (size_t)s.N * s.C);
	rmsnorm_backward(a->dres, GW(m->final_norm), a->dln, x, PW(m->final_norm), a->rstdf, s.N, s.C);
}

static void moe_backward_b(struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const int N = s->N, C = s->C, E = s->E, k = s->k, Fe = s->Fe;
	if (s->Fs) {
		linear_backward_input(a->dh, a->dres, PW(o->shared_out), N, s->Fs, C, 0);
		swiglu_backward(L->d_sgu, a->dh, L->sgu, N, s->Fs);
		linear_backward_input(a->dln, L->d_sgu, PW(o->shared_in), N, C, 2 * s->Fs, 0);
	} else {
		memset(a->dln, 0, sizeof(float) * (size_t)N * C);
	}
	moe_combine_backward(L->d_ye, a->dtopw, a->dres, L->ye, L->topw, L->slot_of, N, C, k);
	for (int e = 0; e < E; e++) {
		const size_t r = (size_t)L->offsets[e];
		const int n = L->offsets[e + 1] - L->offsets[e];
		if (!n) continue;
		const float *w = expert_gu(m, m->params, l, e);
		linear_backward_input(a->dhe + r * Fe, L->d_ye + r * C, w + (size_t)2 * Fe * C, n, Fe, C, 0);
		swiglu_backward(L->d_gue + r * 2 * Fe, a->dhe + r * Fe, L->gue + r * 2 * Fe, n, Fe);
		linear_backward_input(a->dxe + r * C, L->d_gue + r * 2 * Fe, w, n, C, 2 * Fe, 0);
	}
	moe_gather_backward(a->dln, a->dxe, L->slot_of, N, C, k);
	moe_router_backward(L->d_rlogits, a->dtopw, L->probs, L->topi, L->topw, L->frac,
	                    m->opts.aux_coef * a->dloss, N, E, k);
	linear_backward_input(a->dln, L->d_rlogits, PW(o->router), N, C, E, 1);
}

static void mlp_backward_b(struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	memcpy(L->d_mo, a->dres, sizeof(float) * (size_t)s->N * s->C);
	if (model_layer_is_moe(&m->cfg, l)) {
		moe_backward_b(m, a, l, s);
	} else {
		const int F = m->cfg.ffn_hidden, w = m->cfg.mlp == MLP_SWIGLU ? 2 * F : F;
		linear_backward_input(a->dh, a->dres, PW(o->w_out), s->N, F, s->C, 0);
		if (m->cfg.mlp == MLP_SWIGLU) swiglu_backward(L->d_pre, a->dh, L->pre, s->N, F);
		else gelu_backward(L->d_pre, a->dh, L->pre, (size_t)s->N * F);
		linear_backward_input(a->dln, L->d_pre, PW(o->w_in), s->N, s->C, w, 0);
	}
	rmsnorm_backward(a->dres, GW(o->mlp_norm), a->dln, L->mid, PW(o->mlp_norm), L->rstd2, s->N, s->C);
}

static void attn_backward_b(struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const float *x = a->res + (size_t)l * s->N * s->C;
	memcpy(L->d_ao, a->dres, sizeof(float) * (size_t)s->N * s->C);
	linear_backward_input(a->datt, a->dres, PW(o->wo), s->N, s->q, s->C, 0);
	attention_backward(L->d_qkv, a->datt, L->qkv, L->att, L->lse, a->att_scratch, s->B, s->T, s->H, s->Hkv, s->d);
	rope_backward(L->d_qkv, a->rope_tab, s->B, s->T, s->H + s->Hkv, s->d, s->qkv);
	linear_backward_input(a->dln, L->d_qkv, PW(o->wqkv), s->N, s->C, s->qkv, 0);
	rmsnorm_backward(a->dres, GW(o->attn_norm), a->dln, x, PW(o->attn_norm), L->rstd1, s->N, s->C);
}

void llama_layer_backward_b(struct llama *m, struct llama_acts *a, int l)
{
	struct dims s = dims_of(m, a);
	mlp_backward_b(m, a, l, &s);
	attn_backward_b(m, a, l, &s);
}

/* ---- backward: weight-gradient pass ------------------------------------------------- */

void llama_layer_backward_w(struct llama *m, struct llama_acts *a, int l)
{
	struct dims s = dims_of(m, a);
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const int N = s.N, C = s.C;
	linear_backward_weight(GW(o->wo), NULL, L->d_ao, L->att, N, s.q, C);
	linear_backward_weight(GW(o->wqkv), o->bqkv != NOPE ? GW(o->bqkv) : NULL, L->d_qkv, L->ln1, N, C, s.qkv);
	if (!model_layer_is_moe(&m->cfg, l)) {
		const int F = m->cfg.ffn_hidden, w = m->cfg.mlp == MLP_SWIGLU ? 2 * F : F;
		linear_backward_weight(GW(o->w_out), NULL, L->d_mo, L->h, N, F, C);
		linear_backward_weight(GW(o->w_in), NULL, L->d_pre, L->ln2, N, C, w);
		return;
	}
	const int Fe = s.Fe;
	linear_backward_weight(GW(o->router), NULL, L->d_rlogits, L->ln2, N, C, s.E);
	for (int e = 0; e < s.E; e++) {
		const size_t r = (size_t)L->offsets[e];
		const int n = L->offsets[e + 1] - L->offsets[e];
		if (!n) continue;
		float *dw = expert_gu(m, m->grads, l, e);
		linear_backward_weight(dw, NULL, L->d_gue + r * 2 * Fe, L->xe + r * C, n, C, 2 * Fe);
		linear_backward_weight(dw + (size_t)2 * Fe * C, NULL, L->d_ye + r * C, L->he + r * Fe, n, Fe, C);
	}
	if (s.Fs) {
		linear_backward_weight(GW(o->shared_out), NULL, L->d_mo, L->sh, N, s.Fs, C);
		linear_backward_weight(GW(o->shared_in), NULL, L->d_sgu, L->ln2, N, C, 2 * s.Fs);
	}
}

void llama_layers_backward(struct llama *m, struct llama_acts *a, int l0, int l1)
{
	for (int l = l1 - 1; l >= l0; l--) {
		llama_layer_backward_b(m, a, l);
		llama_layer_backward_w(m, a, l);
	}
}

void llama_embed_backward(struct llama *m, struct llama_acts *a)
{
	struct dims s = dims_of(m, a);
	embedding_backward(GW(m->embed), a->dres, a->tokens, s.N, s.C, 0, s.V);
}

void llama_backward(struct llama *m, struct llama_acts *a, float dloss)
{
	llama_head_backward(m, a, dloss);
	llama_layers_backward(m, a, 0, m->cfg.layers);
	llama_embed_backward(m, a);
}
