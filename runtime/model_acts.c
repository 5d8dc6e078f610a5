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

struct act_builder { struct act_spec *s; int n; size_t nf, ni; };

/* First pass (s == NULL) counts; the second records offsets, from which walk_acts sets the
 * pointers once the slabs exist. */
static void act(struct act_builder *b, const char *name, int layer, size_t numel, int is_int)
{
	if (b->s) {
		struct act_spec *p = &b->s[b->n];
		snprintf(p->name, sizeof p->name, "%s", name);
		p->layer = layer;
		p->numel = numel;
		p->is_int = is_int;
		p->offset = is_int ? b->ni : b->nf;
	}
	b->n++;
	/* round every tensor up to 16 elements (64 bytes) so rows start cache-line aligned */
	size_t padded = (numel + 15) & ~(size_t)15;
	if (is_int) b->ni += padded;
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
#define F(name, layer, numel, field) do { act(b, name, layer, numel, 0); \
	if (set) field = a->slab + b->s[b->n - 1].offset; } while (0)
#define I(name, layer, numel, field) do { act(b, name, layer, numel, 1); \
	if (set) field = a->islab + b->s[b->n - 1].offset; } while (0)
	I("tokens", -1, N, a->tokens);
	I("targets", -1, N, a->targets);
	F("rope_tab", -1, (size_t)a->T * d, a->rope_tab);
	F("res", -1, ((size_t)c->layers + 1) * Nl * C, a->res);
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
#define IR(name, numel, field) do { if (R) { if (set) L->field = R->field; } else I(name, l, numel, L->field); } while (0)
		FR("ln1", N * C, ln1);
		FR("rstd1", Nl, rstd1);
		FR("qkv", N * qkv, qkv);
		FS("att", N * q, att);
		FS("lse", N * H, lse);
		FR("mid", Nl * C, mid);
		FR("ln2", N * C, ln2);
		FR("rstd2", Nl, rstd2);
		if (own) {
			F("d_qkv", l, N * qkv, G->d_qkv);
			F("d_ao", l, N * C, G->d_ao);
			F("d_mo", l, N * C, G->d_mo);
		}
		if (!model_layer_is_moe(c, l)) {
			size_t w = c->mlp == MLP_SWIGLU ? 2 * Fd : Fd;
			FR("pre", N * w, pre);
			FR("h", N * Fd, h);
			if (a->split_w) F("d_pre", l, N * w, L->d_pre);
		} else {
			FR("rlogits", N * E, rlogits);
			FR("probs", N * E, probs);
			FR("topw", NK, topw);
			FR("frac", E, frac);
			IR("topi", NK, topi);
			IR("offsets", E + 1, offsets);
			IR("perm", NK, perm);
			IR("slot_of", NK, slot_of);
			FR("xe", NK * C, xe);
			FR("gue", NK * 2 * Fe, gue);
			FR("he", NK * Fe, he);
			FR("ye", NK * C, ye);
			if (Fs) {
				FR("sgu", N * 2 * Fs, sgu);
				FR("sh", N * Fs, sh);
			}
			if (a->split_w) {
				F("d_rlogits", l, N * E, L->d_rlogits);
				F("d_gue", l, NK * 2 * Fe, L->d_gue);
				F("d_ye", l, NK * C, L->d_ye);
				if (Fs) F("d_sgu", l, N * 2 * Fs, L->d_sgu);
			}
		}
#undef FS
#undef FR
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
		F("d_pre", -1, N * w, d_pre);
		if (E) {
			F("d_rlogits", -1, N * E, d_rl);
			F("d_gue", -1, NK * 2 * Fe, d_gue);
			F("d_ye", -1, NK * C, d_ye);
			F("d_sgu", -1, N * 2 * Fs, d_sgu);
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
	F("lnf", -1, N * C, a->lnf);
	F("rstdf", -1, Nl, a->rstdf);
	F("logits", -1, N * (size_t)m->vocab_local, a->logits);
	F("losses", -1, N, a->losses);
	F("lse_ce", -1, N, a->lse_ce);
	F("dres", -1, Nl * C, a->dres);
	F("dln", -1, N * C, a->dln);
	F("datt", -1, N * q, a->datt);
	F("dh", -1, N * Fmax, a->dh);
	if (E) {
		F("dxe", -1, NK * C, a->dxe);
		F("dhe", -1, NK * Fe, a->dhe);
		F("dtopw", -1, NK, a->dtopw);
	}
	size_t att = attention_scratch_floats(a->B, a->T, (int)H);
	if (m->cp_size > 1) att = cp_attention_scratch_floats(a->B, a->T, (int)H, m->kv_heads_local, (int)d);
	F("att_scratch", -1, att, a->att_scratch);
	if (m->cp_size > 1 && E) F("moe_stats", -1, 2 * E, a->moe_stats);
	if (m->tp_size > 1) {
		F("tp_buf", -1, N * C, a->tp_buf);
		F("ce_scratch", -1, tp_ce_scratch_floats(a->N, m->tp_size), a->ce_scratch);
	}
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
			    ep_batch_create(&a->ep[l], m->ep, a->N, c->moe_experts, c->moe_topk, c->hidden, m->moe_ffn_local, err))
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
	if (m->k->ops->act_bytes != sizeof(float))
		return errf(err, "activations: backend %s keeps %zu-byte activations; the runtime addresses fp32 "
		            "activations only", m->k->ops->name, m->k->ops->act_bytes);
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
	struct act_builder b = {0};
	if (a->l) walk_acts(m, a, &b, 0);
	a->n_specs = b.n;
	a->n_floats = b.nf;
	a->n_ints = b.ni;
	a->specs = calloc((size_t)b.n, sizeof *a->specs);
	a->k = m->k;
	/* zeroed: touches every page up front */
	a->slab = kern_zalloc(a->k, sizeof(float) * (b.nf ? b.nf : 1));
	a->islab = kern_zalloc(a->k, sizeof(int) * (b.ni ? b.ni : 1));
	const size_t nh = (size_t)a->N > 3 * (size_t)m->cfg.moe_experts ? (size_t)a->N : 3 * (size_t)m->cfg.moe_experts;
	a->host = malloc(sizeof(float) * (nh ? nh : 1));
	a->ihost = malloc(sizeof(int) * ((size_t)m->cfg.moe_experts + 1));
	if (!a->l || !a->specs || !a->slab || !a->islab || !a->host || !a->ihost) {
		errf(err, "activations: out of memory for %zu floats on backend %s", b.nf, m->k->ops->name);
		llama_acts_destroy(a);
		return -1;
	}
	b = (struct act_builder){.s = a->specs};
	walk_acts(m, a, &b, 1);
	if (acts_parallel(m, a, err)) {
		llama_acts_destroy(a);
		return -1;
	}
	a->dloss = 1.0f;
	*out = a;
	return 0;
}
