/* model_pass — forward and backward of the single-rank decoder (runtime/model.h), written as
 * calls to the reference kernels. Block l maps res[l] to res[l+1]:
 *   mid = res + Wo·attn(rope(Wqkv·rmsnorm(res)))
 *   out = mid + mlp(rmsnorm(mid))        (dense SwiGLU/GeLU, or routed experts + shared)
 * Each block's backward is split in the input-gradient pass (B), which carries the residual
 * gradient down, and the weight-gradient pass (W), which only reads what B left behind.
 *
 * On a tensor-parallel shard (runtime/tp.h) the same calls run on local widths, with the
 * collectives of Megatron-LM around them: the norms run on the Nl residual tokens, their
 * output is all-gathered along the sequence with SP (identity without) before the column-
 * parallel linears, and the row-parallel outputs are reduced (reduce-scatter with SP,
 * all-reduce without) before the residual add; backward mirrors each. MoE layers route every
 * one of the N tokens on every rank (the router is replicated) and split each expert like
 * the dense MLP. With tp == 1 every collective is skipped and the arithmetic, in the same
 * order, is that of the single-rank model. All collectives are in B passes, none in W.
 * Context parallelism replaces attention by ring attention over the zig-zag rows and makes
 * the loss and the load-balancing loss those of whole sequences; expert parallelism replaces
 * the local experts by runtime/ep's dispatch, expert MLPs and combine.
 *
 * Every kernel, fill and copy goes through the model's backend (K() below; kernels/backend.h);
 * what the host reads (the losses, the MoE statistics under CP) is copied back explicitly.
 * The vocabulary-parallel cross-entropy (runtime/tp.c), ring attention (runtime/cp.c) and the
 * expert exchange (runtime/ep.c) take the same backend instance. */
#include <stdio.h>
#include <string.h>
#include "kernels/backend.h"
#include "runtime/cp.h"
#include "runtime/ep.h"
#include "runtime/model.h"
#include "runtime/tp.h"

#define NOPE ((size_t)-1)
#define PW(off) llama_w(m, (off))          /* the weights the kernels read */
#define GW(off) (m->grads + (off))        /* fp32 gradients */
/* activation addressing: p plus n elements, and the bytes of n elements (kernels/backend.h) */
#define AT(p, n) kern_act_at(m->k, (p), (n))
#define AB(n) kern_act_size(m->k, (n))
/* one kernel of the model's backend */
#define K(fn, ...) m->k->ops->fn(m->k->state, __VA_ARGS__)

/* Local widths: H, Hkv, q, qkv, V, F, Fe, Fs are this shard's; N the whole sequence's tokens,
 * Nl and n0 the residual stream's. */
struct dims { int B, T, N, Nl, n0, C, H, Hkv, d, q, qkv, V, F, E, k, Fe, Fs; float eps; };

static struct dims dims_of(const struct llama *m, const struct llama_acts *a)
{
	const struct model *c = &m->cfg;
	struct dims s;
	s.B = a->B;
	s.T = a->T;
	s.N = a->N;
	s.Nl = a->Nl;
	s.n0 = a->n0;
	s.C = c->hidden;
	s.H = m->heads_local;
	s.Hkv = m->kv_heads_local;
	s.d = c->head_dim;
	s.q = s.H * s.d;
	s.qkv = (s.H + 2 * s.Hkv) * s.d;
	s.V = m->vocab_local;
	s.F = m->ffn_local;
	s.E = c->moe_experts;
	s.k = c->moe_topk;
	s.Fe = m->moe_ffn_local;
	s.Fs = m->moe_ffn_local * c->moe_shared_experts;
	s.eps = (float)c->norm_eps;
	return s;
}

/* Offset in the flat buffers of local expert e's gate|up (its down follows at 2·Fe·C). */
static size_t expert_gu(const struct llama *m, int l, int e)
{
	return m->layer[l].experts + (size_t)(e - m->expert0) * 3 * m->moe_ffn_local * m->cfg.hidden;
}

/* Host copy of a MoE layer's expert row offsets (E + 1), which size the per-expert GEMMs. */
static const int *expert_offsets(const struct llama *m, struct llama_acts *a, const struct llama_layer_acts *L)
{
	kern_to_host(m->k, a->ihost, L->offsets, sizeof(int) * ((size_t)m->cfg.moe_experts + 1));
	return a->ihost;
}

/* ---- tensor-parallel steps; each is a no-op when tp == 1 and once a collective failed ---- */

static void fail(struct llama_acts *a, int rc)
{
	if (rc) a->failed = 1;
}

/* Before column-parallel linears: rows [n0, n0 + Nl) of full (N, w) are this rank's; with
 * SP gather the others' (the identity without SP, where Nl == N). */
static void seq_gather(const struct llama *m, struct llama_acts *a, float *full, int w)
{
	if (!m->sp || a->failed) return;
	fail(a, tp_seq_gather(m->tp, m->k, full, (size_t)a->Nl * w, a->err));
}

/* Where a row-parallel linear writes its (N, C) partial sums so that reduce_out can put the
 * sum at `out`: a scratch under SP (the reduce-scatter needs two buffers), else out itself. */
static float *partial_for(const struct llama *m, struct llama_acts *a, float *out)
{
	return m->sp ? a->tp_buf : out;
}

/* After row-parallel linears: partial (N, C) -> out (Nl, C). */
static void reduce_out(const struct llama *m, struct llama_acts *a, float *partial, float *out)
{
	if (m->tp_size == 1 || a->failed) return;
	fail(a, tp_reduce(m->tp, m->k, m->sp, partial, out, (size_t)a->N * m->cfg.hidden, a->err));
}

/* Backward of seq_gather: the (N, C) gradient of a norm's output, a partial sum per rank
 * (the column-parallel linears each saw 1/tp of the features), becomes the (Nl, C) gradient of
 * this rank's tokens; returns where it is. */
static float *reduce_in(const struct llama *m, struct llama_acts *a, float *dpart)
{
	if (m->tp_size == 1 || a->failed) return dpart;
	float *out = m->sp ? a->tp_buf : dpart;
	fail(a, tp_reduce(m->tp, m->k, m->sp, dpart, out, (size_t)a->N * m->cfg.hidden, a->err));
	return out;
}

/* Backward of reduce_out: the residual gradient (Nl, C) as the whole sequence's (N, C). */
static void gather_grad(const struct llama *m, struct llama_acts *a, float *full, const float *dres)
{
	const size_t C = (size_t)m->cfg.hidden;
	kern_copy_dev(m->k, AT(full, (size_t)a->n0 * C), dres, AB((size_t)a->Nl * C));
	seq_gather(m, a, full, (int)C);
}

/* A pass over a part this shard does not hold is refused (a->failed, a->err), not run; every
 * rank of a TP, CP or EP group holds the same parts, so all of them refuse together. */
static int refused(const struct llama *m, struct llama_acts *a, int l /* -1 embedding, -2 head */)
{
	const int ok = l == -1 ? m->embed != NOPE : l == -2 ? m->has_head : l >= 0 && l < m->cfg.layers && m->held[l];
	if (ok) return 0;
	if (!a->failed) {
		if (l < 0) snprintf(a->err, sizeof a->err, "model pass: this shard holds no %s", l == -1 ? "embedding" : "head");
		else snprintf(a->err, sizeof a->err, "model pass: this shard does not hold layer %d", l);
	}
	a->failed = 1;
	return 1;
}

/* ---- forward ---------------------------------------------------------------------- */

/* Vocab-parallel embedding: each rank looks up the tokens in its vocabulary rows (zero rows
 * for the others') and the sum over ranks is the full lookup. */
void llama_embed_forward(const struct llama *m, struct llama_acts *a, const int *tokens)
{
	struct dims s = dims_of(m, a);
	if (refused(m, a, -1)) return;
	kern_to_dev(m->k, a->tokens, tokens, sizeof(int) * (size_t)s.N);
	float *part = partial_for(m, a, a->res);
	K(embedding_forward, part, a->tokens, PW(m->embed), s.N, s.C, m->vocab0, s.V);
	reduce_out(m, a, part, a->res);
}

static void attn_forward(const struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const float *x = AT(a->res, (size_t)l * s->Nl * s->C); /* (Nl, C) */
	K(rmsnorm_forward, AT(L->ln1, (size_t)s->n0 * s->C), L->rstd1, x, PW(o->attn_norm), s->Nl, s->C, s->eps);
	seq_gather(m, a, L->ln1, s->C);
	K(linear_forward, L->qkv, L->ln1, PW(o->wqkv), o->bqkv != NOPE ? PW(o->bqkv) : NULL, s->N, s->C, s->qkv);
	K(rope_forward, L->qkv, a->rope_tab, s->B, s->T, s->H + s->Hkv, s->d, s->qkv);
	if (m->cp_size == 1)
		K(attention_forward, L->att, L->lse, L->qkv, a->att_scratch, s->B, s->T, s->H, s->Hkv, s->d);
	else if (!a->failed)
		fail(a, cp_attention_forward(m->cp, m->k, L->att, L->lse, L->qkv, a->att_scratch, s->B, s->T, s->H, s->Hkv,
		                             s->d, a->err));
	float *part = partial_for(m, a, L->mid);
	K(linear_forward, part, L->att, PW(o->wo), NULL, s->N, s->q, s->C);
	reduce_out(m, a, part, L->mid);
	K(act_add, L->mid, x, (size_t)s->Nl * s->C);
}

/* Switch's load-balancing loss of the whole sequences under CP: the expert counts and router
 * probability sums are added over the CP group, then the single-rank formula (kernels/moe.c)
 * with N·cp tokens; frac becomes the global one for the router's backward. */
static void moe_aux_cp(const struct llama *m, struct llama_acts *a, struct llama_layer_acts *L, const struct dims *s)
{
	const int N = s->N, E = s->E, k = s->k;
	K(moe_stats, a->moe_stats, a->moe_stats + E, L->probs, L->topi, N, E, k);
	if (a->failed) return;
	fail(a, comm_allreduce(m->cp, a->moe_stats, a->moe_stats, 2 * (size_t)E, COMM_F32, a->err));
	if (a->failed) return;
	float *cnt = a->host, *psum = a->host + E, *frac = a->host + 2 * E; /* host copies */
	kern_to_host(m->k, cnt, a->moe_stats, sizeof(float) * 2 * (size_t)E);
	const float Ntot = (float)N * m->cp_size;
	double sum = 0.0;
	for (int e = 0; e < E; e++) {
		frac[e] = cnt[e] / (Ntot * k);
		sum += (double)psum[e] * frac[e];
	}
	kern_to_dev(m->k, L->frac, frac, sizeof(float) * (size_t)E);
	L->aux_loss = (float)(sum * E / Ntot);
}

/* Routed experts on this rank's tokens, all experts local: gather, expert MLPs. */
static void experts_forward(const struct llama *m, struct llama_acts *a, struct llama_layer_acts *L, int l,
                            const struct dims *s)
{
	const int N = s->N, C = s->C, E = s->E, k = s->k, Fe = s->Fe;
	K(moe_dispatch, L->offsets, L->perm, L->slot_of, L->topi, N, E, k);
	K(moe_gather, L->xe, L->ln2, L->perm, N, C, k);
	const int *off = expert_offsets(m, a, L);
	for (int e = 0; e < E; e++) {
		const size_t r = (size_t)off[e];
		const int n = off[e + 1] - off[e];
		if (!n) continue;
		const size_t w = expert_gu(m, l, e);
		K(linear_forward, AT(L->gue, r * 2 * Fe), AT(L->xe, r * C), PW(w), NULL, n, C, 2 * Fe);
		K(swiglu_forward, AT(L->he, r * Fe), AT(L->gue, r * 2 * Fe), n, Fe);
		K(linear_forward, AT(L->ye, r * C), AT(L->he, r * Fe), PW(w + (size_t)2 * Fe * C), NULL, n, Fe, C);
	}
}

static void moe_forward(const struct llama *m, struct llama_acts *a, int l, const struct dims *s, float *y)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const int N = s->N, C = s->C, E = s->E, k = s->k;
	K(linear_forward, L->rlogits, L->ln2, PW(o->router), NULL, N, C, E);
	K(moe_router_forward, L->probs, L->topi, L->topw, L->rlogits, N, E, k);
	if (m->cp_size > 1) moe_aux_cp(m, a, L, s);
	else K(moe_aux_loss_forward, &L->aux_loss, L->frac, L->probs, L->topi, N, E, k);
	if (m->ep_size == 1) experts_forward(m, a, L, l, s);
	/* single rank: y = mid + experts + shared; sharded: the partial experts + shared are
	 * reduced first and the residual added once */
	float *acc = m->tp_size > 1 ? a->tp_buf : y;
	if (m->tp_size > 1) kern_zero(m->k, acc, AB((size_t)N * C));
	else kern_copy_dev(m->k, acc, L->mid, AB((size_t)N * C));
	if (m->ep_size == 1) K(moe_combine, acc, L->ye, L->topw, L->slot_of, N, C, k);
	else if (!a->failed) fail(a, ep_forward(a->ep[l], acc, L->ln2, L->topi, L->topw, PW(o->experts), a->err));
	if (s->Fs) {
		K(linear_forward, L->sgu, L->ln2, PW(o->shared_in), NULL, N, C, 2 * s->Fs);
		K(swiglu_forward, L->sh, L->sgu, N, s->Fs);
		K(linear_forward, a->dln, L->sh, PW(o->shared_out), NULL, N, s->Fs, C); /* dln as scratch */
		K(act_add, acc, a->dln, (size_t)N * C);
	}
	if (m->tp_size > 1) {
		reduce_out(m, a, acc, y);
		K(act_add, y, L->mid, (size_t)s->Nl * C);
	}
}

static void mlp_forward(const struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	float *y = AT(a->res, (size_t)(l + 1) * s->Nl * s->C); /* (Nl, C) */
	K(rmsnorm_forward, AT(L->ln2, (size_t)s->n0 * s->C), L->rstd2, L->mid, PW(o->mlp_norm), s->Nl, s->C, s->eps);
	seq_gather(m, a, L->ln2, s->C);
	if (model_layer_is_moe(&m->cfg, l)) {
		moe_forward(m, a, l, s, y);
		return;
	}
	const int F = s->F;
	if (m->cfg.mlp == MLP_SWIGLU) {
		K(linear_forward, L->pre, L->ln2, PW(o->w_in), NULL, s->N, s->C, 2 * F);
		K(swiglu_forward, L->h, L->pre, s->N, F);
	} else {
		K(linear_forward, L->pre, L->ln2, PW(o->w_in), NULL, s->N, s->C, F);
		K(gelu_forward, L->h, L->pre, (size_t)s->N * F);
	}
	float *part = partial_for(m, a, y);
	K(linear_forward, part, L->h, PW(o->w_out), NULL, s->N, F, s->C);
	reduce_out(m, a, part, y);
	K(act_add, y, L->mid, (size_t)s->Nl * s->C);
}

/* Which layer's values the shared recompute slots of layer l now hold. */
static void rc_mark(const struct llama *m, struct llama_acts *a, int l)
{
	if (!a->rc || a->rc[l] == LLAMA_RC_NONE) return;
	a->rc_owner[LLAMA_RC_SLOT_ATT] = l;
	if (a->rc[l] == LLAMA_RC_FULL)
		a->rc_owner[model_layer_is_moe(&m->cfg, l) ? LLAMA_RC_SLOT_MOE : LLAMA_RC_SLOT_DENSE] = l;
}

void llama_layers_forward(const struct llama *m, struct llama_acts *a, int l0, int l1)
{
	struct dims s = dims_of(m, a);
	for (int l = l0; l < l1; l++) {
		if (refused(m, a, l)) return;
		attn_forward(m, a, l, &s);
		mlp_forward(m, a, l, &s);
		rc_mark(m, a, l);
	}
}

/* Before a backward pass of layer l: re-runs what recomputation dropped if the shared slots
 * hold another layer's values. Full: the whole block from its kept input res[l] (rewriting
 * res[l+1] with the same values); selective: the attention core from the kept qkv. */
static void rc_restore(const struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	if (!a->rc || a->rc[l] == LLAMA_RC_NONE) return;
	if (a->rc[l] == LLAMA_RC_FULL) {
		int slot = model_layer_is_moe(&m->cfg, l) ? LLAMA_RC_SLOT_MOE : LLAMA_RC_SLOT_DENSE;
		if (a->rc_owner[slot] == l && a->rc_owner[LLAMA_RC_SLOT_ATT] == l) return;
		attn_forward(m, a, l, s);
		mlp_forward(m, a, l, s);
	} else {
		if (a->rc_owner[LLAMA_RC_SLOT_ATT] == l) return;
		struct llama_layer_acts *L = &a->l[l];
		if (m->cp_size == 1)
			K(attention_forward, L->att, L->lse, L->qkv, a->att_scratch, s->B, s->T, s->H, s->Hkv, s->d);
		else if (!a->failed)
			fail(a, cp_attention_forward(m->cp, m->k, L->att, L->lse, L->qkv, a->att_scratch, s->B, s->T, s->H,
			                             s->Hkv, s->d, a->err));
	}
	rc_mark(m, a, l);
}

float llama_head_forward(const struct llama *m, struct llama_acts *a, const int *targets)
{
	struct dims s = dims_of(m, a);
	if (refused(m, a, -2)) return 0.0f;
	const float *x = AT(a->res, (size_t)m->cfg.layers * s.Nl * s.C);
	kern_to_dev(m->k, a->targets, targets, sizeof(int) * (size_t)s.N);
	K(rmsnorm_forward, AT(a->lnf, (size_t)s.n0 * s.C), a->rstdf, x, PW(m->final_norm), s.Nl, s.C, s.eps);
	seq_gather(m, a, a->lnf, s.C);
	K(linear_forward, a->logits, a->lnf, PW(m->lm_head), NULL, s.N, s.C, s.V);
	if (m->tp_size == 1)
		K(crossentropy_forward, a->losses, a->lse_ce, a->logits, a->targets, s.N, s.V);
	else if (!a->failed)
		fail(a, tp_crossentropy_forward(m->tp, m->k, a->losses, a->lse_ce, a->logits, a->targets, s.N, s.V,
		                                m->vocab0, a->ce_scratch, a->err));
	const float *losses = a->host; /* host copy; the targets are the caller's host array */
	kern_to_host(m->k, a->host, a->losses, sizeof(float) * (size_t)s.N);
	double sum = 0.0;
	int count = 0;
	for (int n = 0; n < s.N; n++)
		if (targets[n] >= 0) { sum += losses[n]; count++; }
	if (m->cp_size > 1 && !a->failed) { /* the mean over the whole sequences */
		double v[2] = {sum, count};
		fail(a, comm_allreduce(m->cp, v, v, 2, COMM_F64, a->err));
		sum = v[0];
		count = (int)v[1];
	}
	a->n_counted = count;
	a->ce_loss = count ? (float)(sum / count) : 0.0f;
	return a->ce_loss;
}

float llama_aux_loss(const struct llama *m, const struct llama_acts *a, int l0, int l1)
{
	float s = 0.0f;
	for (int l = l0; l < l1; l++)
		if (l >= 0 && l < m->cfg.layers && m->held[l] && model_layer_is_moe(&m->cfg, l))
			s += m->opts.aux_coef * a->l[l].aux_loss;
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
	if (refused(m, a, -2)) return;
	const float *x = AT(a->res, (size_t)m->cfg.layers * s.Nl * s.C);
	const int count = a->n_counted;
	a->dloss = dloss;
	float *dlogits = a->logits; /* in place: (N, V) */
	const float dl = count ? dloss / count : 0.0f;
	if (m->tp_size == 1) K(crossentropy_backward, dlogits, a->logits, a->lse_ce, a->targets, dl, s.N, s.V);
	else tp_crossentropy_backward(m->k, dlogits, a->logits, a->lse_ce, a->targets, dl, s.N, s.V, m->vocab0);
	K(linear_backward_weight, GW(m->lm_head), NULL, dlogits, a->lnf, s.N, s.C, s.V);
	K(linear_backward_input, a->dln, dlogits, PW(m->lm_head), s.N, s.C, s.V, 0);
	const float *dln = reduce_in(m, a, a->dln);
	kern_zero(m->k, a->dres, AB((size_t)s.Nl * s.C));
	K(rmsnorm_backward, a->dres, GW(m->final_norm), dln, x, PW(m->final_norm), a->rstdf, s.Nl, s.C);
}

/* Leaves the gradient of the MLP input's norm output, reduced, and returns where it is. */
static const float *moe_backward_b(struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const int N = s->N, C = s->C, E = s->E, k = s->k, Fe = s->Fe;
	const float *dout = L->d_mo; /* (N, C) */
	if (s->Fs) {
		K(linear_backward_input, a->dh, dout, PW(o->shared_out), N, s->Fs, C, 0);
		K(swiglu_backward, L->d_sgu, a->dh, L->sgu, N, s->Fs);
		K(linear_backward_input, a->dln, L->d_sgu, PW(o->shared_in), N, C, 2 * s->Fs, 0);
	} else {
		kern_zero(m->k, a->dln, AB((size_t)N * C));
	}
	if (m->ep_size > 1) {
		if (!a->failed)
			fail(a, ep_backward_input(a->ep[l], a->dln, a->dtopw, dout, L->topw, PW(o->experts), a->err));
	} else {
		K(moe_combine_backward, L->d_ye, a->dtopw, dout, L->ye, L->topw, L->slot_of, N, C, k);
		/* each rank's ye is a partial sum over its slice of every expert, so is its dtopw */
		if (m->tp_size > 1 && !a->failed) fail(a, tp_allreduce(m->tp, m->k, a->dtopw, (size_t)N * k, a->err));
		const int *off = expert_offsets(m, a, L);
		for (int e = 0; e < E; e++) {
			const size_t r = (size_t)off[e];
			const int n = off[e + 1] - off[e];
			if (!n) continue;
			const size_t w = expert_gu(m, l, e);
			K(linear_backward_input, AT(a->dhe, r * Fe), AT(L->d_ye, r * C), PW(w + (size_t)2 * Fe * C), n, Fe, C, 0);
			K(swiglu_backward, AT(L->d_gue, r * 2 * Fe), AT(a->dhe, r * Fe), AT(L->gue, r * 2 * Fe), n, Fe);
			K(linear_backward_input, AT(a->dxe, r * C), AT(L->d_gue, r * 2 * Fe), PW(w), n, C, 2 * Fe, 0);
		}
		K(moe_gather_backward, a->dln, a->dxe, L->slot_of, N, C, k);
	}
	/* under CP the aux loss averages over N·cp tokens, the kernel over its N */
	K(moe_router_backward, L->d_rlogits, a->dtopw, L->probs, L->topi, L->topw, L->frac,
	                    m->opts.aux_coef * a->dloss / (float)m->cp_size, N, E, k);
	/* the replicated router's input gradient is whole on every rank: added after the
	 * reduction, for this rank's tokens only */
	float *dln = reduce_in(m, a, a->dln);
	K(linear_backward_input, dln, AT(L->d_rlogits, (size_t)s->n0 * E), PW(o->router), s->Nl, C, E, 1);
	return dln;
}

static void mlp_backward_b(struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const float *dln;
	gather_grad(m, a, L->d_mo, a->dres);
	if (model_layer_is_moe(&m->cfg, l)) {
		dln = moe_backward_b(m, a, l, s);
	} else {
		const int F = s->F, w = m->cfg.mlp == MLP_SWIGLU ? 2 * F : F;
		K(linear_backward_input, a->dh, L->d_mo, PW(o->w_out), s->N, F, s->C, 0);
		if (m->cfg.mlp == MLP_SWIGLU) K(swiglu_backward, L->d_pre, a->dh, L->pre, s->N, F);
		else K(gelu_backward, L->d_pre, a->dh, L->pre, (size_t)s->N * F);
		K(linear_backward_input, a->dln, L->d_pre, PW(o->w_in), s->N, s->C, w, 0);
		dln = reduce_in(m, a, a->dln);
	}
	K(rmsnorm_backward, a->dres, GW(o->mlp_norm), dln, L->mid, PW(o->mlp_norm), L->rstd2, s->Nl, s->C);
}

static void attn_backward_b(struct llama *m, struct llama_acts *a, int l, const struct dims *s)
{
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const float *x = AT(a->res, (size_t)l * s->Nl * s->C);
	gather_grad(m, a, L->d_ao, a->dres);
	K(linear_backward_input, a->datt, L->d_ao, PW(o->wo), s->N, s->q, s->C, 0);
	if (m->cp_size == 1)
		K(attention_backward, L->d_qkv, a->datt, L->qkv, L->att, L->lse, a->att_scratch, s->B, s->T, s->H, s->Hkv, s->d);
	else if (!a->failed)
		fail(a, cp_attention_backward(m->cp, m->k, L->d_qkv, a->datt, L->qkv, L->att, L->lse, a->att_scratch, s->B,
		                              s->T, s->H, s->Hkv, s->d, a->err));
	K(rope_backward, L->d_qkv, a->rope_tab, s->B, s->T, s->H + s->Hkv, s->d, s->qkv);
	K(linear_backward_input, a->dln, L->d_qkv, PW(o->wqkv), s->N, s->C, s->qkv, 0);
	const float *dln = reduce_in(m, a, a->dln);
	K(rmsnorm_backward, a->dres, GW(o->attn_norm), dln, x, PW(o->attn_norm), L->rstd1, s->Nl, s->C);
}

void llama_layer_backward_b(struct llama *m, struct llama_acts *a, int l)
{
	struct dims s = dims_of(m, a);
	if (refused(m, a, l)) return;
	rc_restore(m, a, l, &s);
	mlp_backward_b(m, a, l, &s);
	attn_backward_b(m, a, l, &s);
}

/* ---- backward: weight-gradient pass ------------------------------------------------- */

void llama_layer_backward_w(struct llama *m, struct llama_acts *a, int l)
{
	struct dims s = dims_of(m, a);
	if (refused(m, a, l)) return;
	rc_restore(m, a, l, &s);
	const struct llama_layer_offsets *o = &m->layer[l];
	struct llama_layer_acts *L = &a->l[l];
	const int N = s.N, C = s.C;
	K(linear_backward_weight, GW(o->wo), NULL, L->d_ao, L->att, N, s.q, C);
	K(linear_backward_weight, GW(o->wqkv), o->bqkv != NOPE ? GW(o->bqkv) : NULL, L->d_qkv, L->ln1, N, C, s.qkv);
	if (!model_layer_is_moe(&m->cfg, l)) {
		const int F = s.F, w = m->cfg.mlp == MLP_SWIGLU ? 2 * F : F;
		K(linear_backward_weight, GW(o->w_out), NULL, L->d_mo, L->h, N, F, C);
		K(linear_backward_weight, GW(o->w_in), NULL, L->d_pre, L->ln2, N, C, w);
		return;
	}
	const int Fe = s.Fe;
	K(linear_backward_weight, GW(o->router), NULL, L->d_rlogits, L->ln2, N, C, s.E);
	if (m->ep_size > 1) {
		if (!a->failed) fail(a, ep_backward_weight(a->ep[l], GW(o->experts), a->err));
	} else {
		const int *off = expert_offsets(m, a, L);
		for (int e = 0; e < s.E; e++) {
			const size_t r = (size_t)off[e];
			const int n = off[e + 1] - off[e];
			if (!n) continue;
			float *dw = GW(expert_gu(m, l, e));
			K(linear_backward_weight, dw, NULL, AT(L->d_gue, r * 2 * Fe), AT(L->xe, r * C), n, C, 2 * Fe);
			K(linear_backward_weight, dw + (size_t)2 * Fe * C, NULL, AT(L->d_ye, r * C), AT(L->he, r * Fe), n, Fe, C);
		}
	}
	if (s.Fs) {
		K(linear_backward_weight, GW(o->shared_out), NULL, L->d_mo, L->sh, N, s.Fs, C);
		K(linear_backward_weight, GW(o->shared_in), NULL, L->d_sgu, L->ln2, N, C, 2 * s.Fs);
	}
}

void llama_layers_backward(struct llama *m, struct llama_acts *a, int l0, int l1)
{
	for (int l = l1 - 1; l >= l0; l--) {
		llama_layer_backward_b(m, a, l);
		llama_layer_backward_w(m, a, l);
	}
}

/* Vocab-parallel: every rank needs the whole sequence's gradient for its rows. */
void llama_embed_backward(struct llama *m, struct llama_acts *a)
{
	struct dims s = dims_of(m, a);
	if (refused(m, a, -1)) return;
	const float *dx = a->dres;
	if (m->sp) {
		gather_grad(m, a, a->tp_buf, a->dres);
		dx = a->tp_buf;
	}
	K(embedding_backward, GW(m->embed), dx, a->tokens, s.N, s.C, m->vocab0, s.V);
}

void llama_backward(struct llama *m, struct llama_acts *a, float dloss)
{
	llama_head_backward(m, a, dloss);
	llama_layers_backward(m, a, 0, m->cfg.layers);
	llama_embed_backward(m, a);
}
