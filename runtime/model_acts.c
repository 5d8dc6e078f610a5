/* model_acts — the activation table of a model or shard (runtime/model.h): every tensor a
 * forward keeps for its backward, per layer, counted in a first pass and laid out in slabs in
 * a second (with split weight gradients and per-layer recompute modes), plus the EP dispatch
 * batches and the RoPE table at this rank's CP positions. Parameters: model.c. The slabs are
 * the model's backend's memory (its tracking allocator); a small host buffer receives what
 * the passes read back (losses, MoE statistics). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "runtime/cp.h"
#include "runtime/ep.h"
#include "runtime/model.h"
#include "runtime/tp.h"
#include "sim/util.h"

/* ---- activation table ---------------------------------------------------------------- */

/* nf counts the float slab in activation elements of ab bytes (the backend's act_bytes): an
 * fp32 tensor of n floats takes n·4/ab of them, so every tensor's place is one kern_act_at
 * offset from the slab and the CPU's layout (ab = 4) is the plain fp32 one. */
struct act_builder { struct act_spec *s; int n; size_t nf, ni, ab; };
enum { ACT_ACT, ACT_F32, ACT_INT };

/* First pass (s == NULL) counts; the second records offsets, from which walk_acts sets the
 * pointers once the slabs exist. */
static void act(struct act_builder *b, const char *name, int layer, size_t numel, int kind)
{
	const size_t elems = kind == ACT_F32 ? numel * (sizeof(float) / b->ab) : numel;
	if (b->s) {
		struct act_spec *p = &b->s[b->n];
		snprintf(p->name, sizeof p->name, "%s", name);
		p->layer = layer;
		p->numel = numel;
		p->is_int = kind == ACT_INT;
		p->is_f32 = kind == ACT_F32;
		p->offset = kind == ACT_INT ? b->ni : b->nf;
	}
	b->n++;
	/* round every tensor up to 64 bytes so rows start cache-line aligned */
	const size_t line = kind == ACT_INT ? 16 : 64 / b->ab;
	size_t padded = (elems + line - 1) / line * line;
	if (kind == ACT_INT) b->ni += padded;
	else b->nf += padded;
}

/* Walks the activation layout; with `set`, assigns each pointer from its spec's offset. */
static void walk_acts(const struct llama *m, struct llama_acts *a, struct act_builder *b, int set)
{
	const struct model *c = &m->cfg;
	/* N: tokens of the whole sequence; Nl: residual-stream tokens; widths are the shard's */
	const size_t N = (size_t)a->N, Nl = (size_t)a->Nl, C = (size_t)c->hidden, d = (size_t)c->head_dim;
	const size_t H = (size_t)m->heads_local, q = H * d, qkv = q + 2 * (size_t)m->kv_heads_local * d;
	const size_t E = (size_t)c->moe_experts, k = (size_t)c->moe_topk, NK = N * k;
	const size_t Fe = (size_t)m->moe_ffn_local, Fs = Fe * (size_t)c->moe_shared_experts;
	const size_t Fd = (size_t)m->ffn_local;
	size_t Fmax = Fd > Fs ? Fd : Fs;
	int first = 0; /* without split_w, every layer's W-pass inputs live in the first held layer's */
	while (first < c->layers && !m->held[first]) first++;
/* A: activation elements (the row's act_bytes), F: fp32 on every row, I: int */
#define SLAB(name, layer, numel, field, kind) do { act(b, name, layer, numel, kind); \
	if (set) field = kern_act_at(m->k, a->slab, b->s[b->n - 1].offset); } while (0)
#define A(name, layer, numel, field) SLAB(name, layer, numel, field, ACT_ACT)
#define F(name, layer, numel, field) SLAB(name, layer, numel, field, ACT_F32)
#define I(name, layer, numel, field) do { act(b, name, layer, numel, ACT_INT); \
	if (set) field = a->islab + b->s[b->n - 1].offset; } while (0)
	I("tokens", -1, N, a->tokens);
	I("targets", -1, N, a->targets);
	F("rope_tab", -1, (size_t)a->T * d, a->rope_tab);
	A("res", -1, ((size_t)c->layers + 1) * Nl * C, a->res);
	/* recomputed layers: the first of them holds the shared attention-core slots, the first
	 * fully recomputed layer of each kind (dense, MoE) the rest */
	int rc_att = -1, rc_full[2] = {-1, -1};
	for (int l = 0; l < c->layers && a->rc; l++) {
		if (!m->held[l] || a->rc[l] == LLAMA_RC_NONE) continue;
		if (rc_att < 0) rc_att = l;
		int kind = model_layer_is_moe(c, l);
		if (a->rc[l] == LLAMA_RC_FULL && rc_full[kind] < 0) rc_full[kind] = l;
	}
	for (int l = 0; l < c->layers; l++) {
		if (!m->held[l]) continue;
		struct llama_layer_acts *L = &a->l[l];
		struct llama_layer_acts *G = a->split_w ? L : &a->l[first];
		int own = a->split_w || l == first;
		const int rcl = a->rc ? a->rc[l] : LLAMA_RC_NONE;
		const int kind = model_layer_is_moe(c, l);
		/* S: shared attention-core slot, R: shared full-recompute slot of this kind */
		struct llama_layer_acts *S = rcl != LLAMA_RC_NONE && l != rc_att ? &a->l[rc_att] : NULL;
		struct llama_layer_acts *R = rcl == LLAMA_RC_FULL && l != rc_full[kind] ? &a->l[rc_full[kind]] : NULL;
#define FS(name, numel, field) do { if (S) { if (set) L->field = S->field; } else F(name, l, numel, L->field); } while (0)
#define FR(name, numel, field) do { if (R) { if (set) L->field = R->field; } else F(name, l, numel, L->field); } while (0)
#define AS(name, numel, field) do { if (S) { if (set) L->field = S->field; } else A(name, l, numel, L->field); } while (0)
#define AR(name, numel, field) do { if (R) { if (set) L->field = R->field; } else A(name, l, numel, L->field); } while (0)
#define IR(name, numel, field) do { if (R) { if (set) L->field = R->field; } else I(name, l, numel, L->field); } while (0)
		AR("ln1", N * C, ln1);
		FR("rstd1", Nl, rstd1);
		AR("qkv", N * qkv, qkv);
		AS("att", N * q, att);
		FS("lse", N * H, lse);
		AR("mid", Nl * C, mid);
		AR("ln2", N * C, ln2);
		FR("rstd2", Nl, rstd2);
		if (own) {
			A("d_qkv", l, N * qkv, G->d_qkv);
			A("d_ao", l, N * C, G->d_ao);
			A("d_mo", l, N * C, G->d_mo);
		}
		if (!model_layer_is_moe(c, l)) {
			size_t w = c->mlp == MLP_SWIGLU ? 2 * Fd : Fd;
			AR("pre", N * w, pre);
			AR("h", N * Fd, h);
			if (a->split_w) A("d_pre", l, N * w, L->d_pre);
		} else {
			AR("rlogits", N * E, rlogits);
			FR("probs", N * E, probs);
			FR("topw", NK, topw);
			FR("frac", E, frac);
			IR("topi", NK, topi);
			IR("offsets", E + 1, offsets);
			IR("perm", NK, perm);
			IR("slot_of", NK, slot_of);
			AR("xe", NK * C, xe);
			AR("gue", NK * 2 * Fe, gue);
			AR("he", NK * Fe, he);
			AR("ye", NK * C, ye);
			if (Fs) {
				AR("sgu", N * 2 * Fs, sgu);
				AR("sh", N * Fs, sh);
			}
			if (a->split_w) {
				A("d_rlogits", l, N * E, L->d_rlogits);
				A("d_gue", l, NK * 2 * Fe, L->d_gue);
				A("d_ye", l, NK * C, L->d_ye);
				if (Fs) A("d_sgu", l, N * 2 * Fs, L->d_sgu);
			}
		}
#undef FS
#undef FR
#undef AS
#undef AR
#undef IR
		if (!a->split_w && set && l != first) {
			L->d_qkv = G->d_qkv;
			L->d_ao = G->d_ao;
			L->d_mo = G->d_mo;
		}
	}
	if (!a->split_w) { /* shared MLP gradient slots, sized for the widest layer */
		size_t w = c->mlp == MLP_SWIGLU ? 2 * Fmax : Fmax;
		float *d_pre = NULL, *d_rl = NULL, *d_gue = NULL, *d_ye = NULL, *d_sgu = NULL;
		A("d_pre", -1, N * w, d_pre);
		if (E) {
			A("d_rlogits", -1, N * E, d_rl);
			A("d_gue", -1, NK * 2 * Fe, d_gue);
			A("d_ye", -1, NK * C, d_ye);
			A("d_sgu", -1, N * 2 * Fs, d_sgu);
		}
		if (set)
			for (int l = 0; l < c->layers; l++) {
				a->l[l].d_pre = d_pre;
				a->l[l].d_rlogits = d_rl;
				a->l[l].d_gue = d_gue;
				a->l[l].d_ye = d_ye;
				a->l[l].d_sgu = d_sgu;
			}
	}
	A("lnf", -1, N * C, a->lnf);
	F("rstdf", -1, Nl, a->rstdf);
	A("logits", -1, N * (size_t)m->vocab_local, a->logits);
	F("losses", -1, N, a->losses);
	F("lse_ce", -1, N, a->lse_ce);
	A("dres", -1, Nl * C, a->dres);
	A("dln", -1, N * C, a->dln);
	A("datt", -1, N * q, a->datt);
	A("dh", -1, N * Fmax, a->dh);
	if (E) {
		A("dxe", -1, NK * C, a->dxe);
		A("dhe", -1, NK * Fe, a->dhe);
		F("dtopw", -1, NK, a->dtopw);
	}
	size_t att = attention_scratch_floats(a->B, a->T, (int)H);
	if (m->cp_size > 1) att = cp_attention_scratch_floats(a->B, a->T, (int)H, m->kv_heads_local, (int)d);
	F("att_scratch", -1, att, a->att_scratch);
	if (m->cp_size > 1 && E) F("moe_stats", -1, 2 * E, a->moe_stats);
	if (m->tp_size > 1) {
		A("tp_buf", -1, N * C, a->tp_buf);
		F("ce_scratch", -1, tp_ce_scratch_floats(a->N, m->tp_size), a->ce_scratch);
	}
#undef SLAB
#undef A
#undef F
#undef I
}

void llama_acts_destroy(struct llama_acts *a)
{
	if (!a) return;
	if (a->ep)
		for (int l = 0; l < a->n_layers; l++) ep_batch_destroy(a->ep[l]);
	free(a->ep);
	free(a->rc);
	free(a->specs);
	free(a->l);
	if (a->k) {
		kern_free(a->k, a->slab);
		kern_free(a->k, a->islab);
	}
	free(a->host);
	free(a->ihost);
	free(a);
}

/* Context parallelism: rows at their zig-zag positions; expert parallelism: one exchange per
 * held MoE layer. */
static int acts_parallel(const struct llama *m, struct llama_acts *a, char *err)
{
	const struct model *c = &m->cfg;
	if (m->ep_size > 1) {
		a->ep = calloc((size_t)c->layers, sizeof *a->ep);
		if (!a->ep) return errf(err, "activations: out of memory");
		for (int l = 0; l < c->layers; l++)
			if (m->held[l] && model_layer_is_moe(c, l) &&
			    ep_batch_create(&a->ep[l], m->ep, m->k, a->N, c->moe_experts, c->moe_topk, c->hidden,
			                    m->moe_ffn_local, err))
				return -1;
	}
	if (m->cp_size == 1) {
		m->k->ops->rope_table(m->k->state, a->rope_tab, NULL, a->T, c->head_dim, c->rope_theta);
		return 0;
	}
	int *pos = malloc(sizeof(int) * (size_t)a->T);
	if (!pos) return errf(err, "activations: out of memory");
	int rc = cp_positions(pos, a->T_seq, m->cp_size, m->cp_rank, err);
	if (!rc) m->k->ops->rope_table(m->k->state, a->rope_tab, pos, a->T, c->head_dim, c->rope_theta);
	free(pos);
	return rc;
}

int llama_acts_create(struct llama_acts **out, const struct llama *m, int B, int T, int split_w, char *err)
{
	return llama_acts_create_rc(out, m, B, T, split_w, NULL, err);
}

int llama_acts_create_rc(struct llama_acts **out, const struct llama *m, int B, int T, int split_w,
                         const unsigned char *rc, char *err)
{
	*out = NULL;
	if (B <= 0 || T <= 0) return errf(err, "activations: B (%d) and T (%d) must be positive", B, T);
	const size_t ab = m->k->ops->act_bytes;
	if (ab != 2 && ab != sizeof(float))
		return errf(err, "activations: backend %s keeps %zu-byte activations; the runtime lays out 2- "
		            "(bf16) or 4-byte (fp32) ones", m->k->ops->name, ab);
	if (T % (2 * m->cp_size) && m->cp_size > 1)
		return errf(err, "activations: context parallelism needs 2*cp (%d) to divide T (%d)", 2 * m->cp_size, T);
	struct llama_acts *a = calloc(1, sizeof *a);
	if (!a) return errf(err, "activations: out of memory");
	a->B = B;
	a->T_seq = T;
	a->T = T / m->cp_size;
	a->N = B * a->T;
	a->n_layers = m->cfg.layers;
	a->split_w = split_w != 0;
	a->Nl = a->N;
	if (m->sp) {
		if (a->N % m->tp_size) {
			errf(err, "activations: sequence parallelism needs tp (%d) to divide B*T/cp (%d)", m->tp_size, a->N);
			free(a);
			return -1;
		}
		a->Nl = a->N / m->tp_size;
		a->n0 = m->tp_rank * a->Nl;
	}
	a->rc_owner[0] = a->rc_owner[1] = a->rc_owner[2] = -1;
	for (int l = 0; rc && l < m->cfg.layers; l++)
		if (rc[l] > LLAMA_RC_FULL) {
			errf(err, "activations: recompute mode %d of layer %d is not none, selective or full", rc[l], l);
			free(a);
			return -1;
		}
	if (rc) {
		a->rc = malloc((size_t)m->cfg.layers);
		if (!a->rc) {
			free(a);
			return errf(err, "activations: out of memory");
		}
		memcpy(a->rc, rc, (size_t)m->cfg.layers);
	}
	a->l = calloc((size_t)m->cfg.layers, sizeof *a->l);
	struct act_builder b = {.ab = ab};
	if (a->l) walk_acts(m, a, &b, 0);
	a->n_specs = b.n;
	a->n_floats = b.nf;
	a->slab_bytes = kern_act_size(m->k, b.nf);
	a->n_ints = b.ni;
	a->specs = calloc((size_t)b.n, sizeof *a->specs);
	a->k = m->k;
	/* zeroed: touches every page up front */
	a->slab = kern_zalloc(a->k, a->slab_bytes ? a->slab_bytes : 1);
	a->islab = kern_zalloc(a->k, sizeof(int) * (b.ni ? b.ni : 1));
	const size_t nh = (size_t)a->N > 3 * (size_t)m->cfg.moe_experts ? (size_t)a->N : 3 * (size_t)m->cfg.moe_experts;
	a->host = malloc(sizeof(float) * (nh ? nh : 1));
	a->ihost = malloc(sizeof(int) * ((size_t)m->cfg.moe_experts + 1));
	if (!a->l || !a->specs || !a->slab || !a->islab || !a->host || !a->ihost) {
		errf(err, "activations: out of memory for %zu bytes on backend %s", a->slab_bytes, m->k->ops->name);
		llama_acts_destroy(a);
		return -1;
	}
	b = (struct act_builder){.s = a->specs, .ab = ab};
	walk_acts(m, a, &b, 1);
	if (acts_parallel(m, a, err)) {
		llama_acts_destroy(a);
		return -1;
	}
	a->dloss = 1.0f;
	*out = a;
	return 0;
}
