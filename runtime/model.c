/* model — the parameter table (of the single-rank model or of one rank's shard),
 * deterministic initialisation, the shard <-> single-rank layout mapping, AdamW over the flat
 * buffers with the global gradient norm, and the FLOP count. The activation table is in
 * model_acts.c, the forward and backward passes in model_pass.c. The flat buffers are the
 * backend's memory: initialisation writes a host copy first unless the backend is host-
 * visible, and the layout mappings copy row by row through the backend. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/backend.h"
#include "runtime/model.h"
#include "runtime/tp.h"
#include "runtime/zero.h"
#include "sim/util.h"

void llama_opts_default(struct llama_opts *o)
{
	o->seed = 1234;
	o->init_std = 0.02f;
	o->aux_coef = 0.01f;
}

void adamw_opts_default(struct adamw_opts *o)
{
	o->lr = 3e-4f;
	o->beta1 = 0.9f;
	o->beta2 = 0.95f;
	o->eps = 1e-8f;
	o->weight_decay = 0.1f;
	o->max_grad_norm = 1.0f;
}

static int check_config(const struct model *c, char *err)
{
	if (c->layers <= 0 || c->hidden <= 0 || c->heads <= 0 || c->kv_heads <= 0 || c->head_dim <= 0 || c->vocab <= 0)
		return errf(err, "model %s: layers, hidden, heads, kv_heads, head_dim and vocab must be positive", c->name);
	if (c->heads % c->kv_heads)
		return errf(err, "model %s: kv_heads (%d) does not divide heads (%d)", c->name, c->kv_heads, c->heads);
	if (c->head_dim % 2)
		return errf(err, "model %s: head_dim (%d) must be even for rotary embeddings", c->name, c->head_dim);
	if (c->norm != NORM_RMS)
		return errf(err, "model %s: the runtime supports RMSNorm only", c->name);
	if (c->pos_emb)
		return errf(err, "model %s: learned position embeddings are not supported (RoPE only)", c->name);
	if (c->kv_lora_rank || c->q_lora_rank)
		return errf(err, "model %s: multi-head latent attention is not supported", c->name);
	if (c->rope_theta <= 0.0)
		return errf(err, "model %s: rope_theta must be positive", c->name);
	for (int l = 0; l < c->layers; l++)
		if (!model_layer_is_moe(c, l) && c->ffn_hidden <= 0)
			return errf(err, "model %s: layer %d is dense but ffn_hidden is %d", c->name, l, c->ffn_hidden);
	if (model_is_moe(c)) {
		if (c->moe_topk <= 0 || c->moe_topk > c->moe_experts || c->moe_ffn_hidden <= 0)
			return errf(err, "model %s: MoE needs 0 < moe_topk (%d) <= moe_experts (%d) and moe_ffn_hidden > 0",
			            c->name, c->moe_topk, c->moe_experts);
		if (c->mlp != MLP_SWIGLU)
			return errf(err, "model %s: MoE experts are SwiGLU; mlp must be SwiGLU", c->name);
	}
	return 0;
}

#define NOPE ((size_t)-1)

/* ---- parameter table ---------------------------------------------------------------- */

/* How tensor parallelism cuts a tensor: by rows (output features, vocabulary), by columns
 * (input features), or not at all. */
enum tp_cut { CUT_NONE, CUT_ROWS, CUT_COLS };

/* Every tensor of the single-rank model is visited (gid, goff count them all); the held ones
 * get a local spec (n, off). */
struct spec_builder { struct param_spec *s; int n, gid, hold, tp, tr; size_t off, goff; };

static size_t add_param(struct spec_builder *b, const char *name, int layer, int expert, int rows, int cols,
                        enum shard_kind shard, enum tp_cut cut, enum init_kind init, float std)
{
	const int gid = b->gid++;
	const size_t goff = b->goff;
	b->goff += (size_t)rows * cols;
	if (!b->hold) return NOPE;
	const int lr = cut == CUT_ROWS ? rows / b->tp : rows, lc = cut == CUT_COLS ? cols / b->tp : cols;
	if (b->s) {
		struct param_spec *p = &b->s[b->n];
		snprintf(p->name, sizeof p->name, "%s", name);
		p->layer = layer;
		p->expert = expert;
		p->offset = b->off;
		p->numel = (size_t)lr * lc;
		p->rows = lr;
		p->cols = lc;
		p->shard = shard;
		p->decay = rows > 1;
		p->init = init;
		p->init_std = init == INIT_NORMAL ? std : 0.0f;
		p->seq_partial = shard == SHARD_REPLICATED && init == INIT_ONES;
		p->gid = gid;
		p->goffset = goff;
		p->grows = rows;
		p->gcols = cols;
		p->row0 = cut == CUT_ROWS ? b->tr * lr : 0;
		p->col0 = cut == CUT_COLS ? b->tr * lc : 0;
	}
	size_t at = b->off;
	b->n++;
	b->off += (size_t)lr * lc;
	return at;
}

/* Column-parallel weights are cut by rows, their biases (1, out) by columns. */
static enum tp_cut cut_of(enum shard_kind k, int rows)
{
	switch (k) {
	case SHARD_COLUMN: return rows > 1 ? CUT_ROWS : CUT_COLS;
	case SHARD_ROW: return CUT_COLS;
	case SHARD_VOCAB: return CUT_ROWS;
	default: return CUT_NONE;
	}
}

/* Called twice: once to count (b->s == NULL), once to fill. */
static void build_specs(struct llama *m, struct spec_builder *b)
{
	const struct model *c = &m->cfg;
	const int C = c->hidden, d = c->head_dim, q = c->heads * d, kv = c->kv_heads * d;
	const float std = m->opts.init_std, ostd = std / sqrtf(2.0f * c->layers); /* GPT-2 */
	char nm[48];
	b->tp = m->tp_size;
	b->tr = m->tp_rank;
	/* a head stage of a tied model keeps its own copy of the embedding (Megatron) */
	b->hold = m->has_embed || (c->tied && m->has_head);
	m->embed = add_param(b, "embed", -1, -1, c->vocab, C, SHARD_VOCAB, CUT_ROWS, INIT_NORMAL, std);
	for (int l = 0; l < c->layers; l++) {
		struct llama_layer_offsets o = {NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE};
		b->hold = m->held[l];
#define P(field, suffix, r, cc, shard, init, sd) do { \
	snprintf(nm, sizeof nm, "layers.%d.%s", l, suffix); \
	size_t at_ = add_param(b, nm, l, -1, r, cc, shard, cut_of(shard, r), init, sd); \
	if (field == NOPE) field = at_; \
} while (0)
		P(o.attn_norm, "attn_norm", 1, C, SHARD_REPLICATED, INIT_ONES, 0);
		P(o.wqkv, "attn.wq", q, C, SHARD_COLUMN, INIT_NORMAL, std);
		P(o.wqkv, "attn.wk", kv, C, SHARD_COLUMN, INIT_NORMAL, std);
		P(o.wqkv, "attn.wv", kv, C, SHARD_COLUMN, INIT_NORMAL, std);
		if (c->qkv_bias) {
			P(o.bqkv, "attn.bq", 1, q, SHARD_COLUMN, INIT_ZEROS, 0);
			P(o.bqkv, "attn.bk", 1, kv, SHARD_COLUMN, INIT_ZEROS, 0);
			P(o.bqkv, "attn.bv", 1, kv, SHARD_COLUMN, INIT_ZEROS, 0);
		}
		P(o.wo, "attn.wo", C, q, SHARD_ROW, INIT_NORMAL, ostd);
		P(o.mlp_norm, "mlp_norm", 1, C, SHARD_REPLICATED, INIT_ONES, 0);
		if (!model_layer_is_moe(c, l)) {
			const int F = c->ffn_hidden;
			if (c->mlp == MLP_SWIGLU) {
				P(o.w_in, "mlp.gate", F, C, SHARD_COLUMN, INIT_NORMAL, std);
				P(o.w_in, "mlp.up", F, C, SHARD_COLUMN, INIT_NORMAL, std);
				P(o.w_out, "mlp.down", C, F, SHARD_ROW, INIT_NORMAL, ostd);
			} else {
				P(o.w_in, "mlp.fc", F, C, SHARD_COLUMN, INIT_NORMAL, std);
				P(o.w_out, "mlp.proj", C, F, SHARD_ROW, INIT_NORMAL, ostd);
			}
		} else {
			const int Fe = c->moe_ffn_hidden, Fs = c->moe_ffn_hidden * c->moe_shared_experts;
			P(o.router, "router", c->moe_experts, C, SHARD_REPLICATED, INIT_NORMAL, std);
			for (int e = 0; e < c->moe_experts; e++) {
				static const char *const part[3] = {"gate", "up", "down"};
				b->hold = m->held[l] && e >= m->expert0 && e < m->expert0 + m->experts_local;
				for (int i = 0; i < 3; i++) {
					/* expert tensor parallelism = tp: gate, up by rows, down by columns */
					snprintf(nm, sizeof nm, "layers.%d.experts.%d.%s", l, e, part[i]);
					size_t at = add_param(b, nm, l, e, i < 2 ? Fe : C, i < 2 ? C : Fe, SHARD_EXPERT,
					                      i < 2 ? CUT_ROWS : CUT_COLS, INIT_NORMAL, i < 2 ? std : ostd);
					if (o.experts == NOPE) o.experts = at;
				}
			}
			b->hold = m->held[l];
			if (Fs > 0) {
				P(o.shared_in, "shared.gate", Fs, C, SHARD_COLUMN, INIT_NORMAL, std);
				P(o.shared_in, "shared.up", Fs, C, SHARD_COLUMN, INIT_NORMAL, std);
				P(o.shared_out, "shared.down", C, Fs, SHARD_ROW, INIT_NORMAL, ostd);
			}
		}
#undef P
		if (b->s) m->layer[l] = o;
	}
	b->hold = m->has_head;
	m->final_norm = add_param(b, "final_norm", -1, -1, 1, C, SHARD_REPLICATED, CUT_NONE, INIT_ONES, 0);
	m->lm_head = c->tied ? m->embed
	                     : add_param(b, "lm_head", -1, -1, c->vocab, C, SHARD_VOCAB, CUT_ROWS, INIT_NORMAL, std);
}

/* ---- initialisation: counter-based, so any slice can be produced on its own ---------- */

static uint64_t mix64(uint64_t z) /* splitmix64's finaliser (Steele et al. 2014) */
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void llama_param_init(const struct llama *m, int spec, size_t begin, size_t count, float *dst)
{
	const struct param_spec *s = &m->specs[spec];
	if (s->init != INIT_NORMAL) {
		for (size_t i = 0; i < count; i++) dst[i] = s->init == INIT_ONES ? 1.0f : 0.0f;
		return;
	}
	const uint64_t key = mix64(m->opts.seed ^ mix64(0x5ca1e9ull + (uint64_t)s->gid));
	for (size_t i = 0; i < count; i++) {
		/* Box–Muller on two 24-bit uniforms; u1 in (0, 1] keeps the log finite */
		uint64_t r = mix64(key + (begin + i) * 0x9e3779b97f4a7c15ull);
		double u1 = ((r >> 40) + 1) * (1.0 / 16777216.0), u2 = ((r >> 16) & 0xffffff) * (1.0 / 16777216.0);
		dst[i] = s->init_std * (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
	}
}

void llama_par_default(struct llama_par *p)
{
	memset(p, 0, sizeof *p);
	p->has_embed = 1;
	p->has_head = 1;
}

void llama_destroy(struct llama *m)
{
	if (!m) return;
	free(m->specs);
	free(m->layer);
	free(m->held);
	if (m->k) {
		kern_free(m->k, m->wc);
		kern_free(m->k, m->params);
		kern_free(m->k, m->grads);
		kern_free(m->k, m->m);
		kern_free(m->k, m->v);
		if (m->own_k) kern_destroy(m->k);
	}
	free(m);
}

/* The shard's shape: TP degree and rank, local widths, held layers; checks divisibility. */
static int set_shard(struct llama *m, const struct llama_par *p, char *err)
{
	const struct model *c = &m->cfg;
	const int tp = p->tp ? comm_size(p->tp) : 1;
	const int cp = p->cp ? comm_size(p->cp) : 1, ep = p->ep ? comm_size(p->ep) : 1;
	if (ep > 1 && (!model_is_moe(c) || c->moe_experts % ep))
		return errf(err, "model %s: ep (%d) must divide moe_experts (%d)", c->name, ep, c->moe_experts);
	if (ep > 1 && tp > 1)
		return errf(err, "model %s: expert parallelism with tp (%d) > 1 is not supported", c->name, tp);
	m->cp = cp > 1 ? p->cp : NULL;
	m->cp_size = cp;
	m->cp_rank = cp > 1 ? comm_rank(p->cp) : 0;
	m->ep = ep > 1 ? p->ep : NULL;
	m->ep_size = ep;
	m->ep_rank = ep > 1 ? comm_rank(p->ep) : 0;
	m->experts_local = c->moe_experts / ep;
	m->expert0 = m->ep_rank * m->experts_local;
	if ((p->expert_begin || p->expert_end) &&
	    (p->expert_begin != m->expert0 || p->expert_end != m->expert0 + m->experts_local))
		return errf(err, "model %s: expert range [%d, %d) is not ep rank %d's [%d, %d)", c->name, p->expert_begin,
		            p->expert_end, m->ep_rank, m->expert0, m->expert0 + m->experts_local);
	if (c->heads % tp || c->kv_heads % tp)
		return errf(err, "model %s: tp (%d) must divide heads (%d) and kv_heads (%d)", c->name, tp, c->heads, c->kv_heads);
	if (c->vocab % tp) return errf(err, "model %s: tp (%d) does not divide vocab (%d)", c->name, tp, c->vocab);
	if (model_is_moe(c) && c->moe_ffn_hidden % tp)
		return errf(err, "model %s: tp (%d) does not divide moe_ffn_hidden (%d)", c->name, tp, c->moe_ffn_hidden);
	for (int l = 0; l < c->layers; l++)
		if (!model_layer_is_moe(c, l) && c->ffn_hidden % tp)
			return errf(err, "model %s: tp (%d) does not divide ffn_hidden (%d)", c->name, tp, c->ffn_hidden);
	if (p->n_ranges < 0 || (p->n_ranges > 0 && !p->ranges))
		return errf(err, "model %s: n_ranges (%d) needs that many layer ranges", c->name, p->n_ranges);
	m->tp = tp > 1 ? p->tp : NULL;
	m->tp_size = tp;
	m->tp_rank = tp > 1 ? comm_rank(p->tp) : 0;
	m->sp = tp > 1 && p->sp;
	m->has_embed = p->has_embed != 0;
	m->has_head = p->has_head != 0;
	m->heads_local = c->heads / tp;
	m->kv_heads_local = c->kv_heads / tp;
	m->ffn_local = c->ffn_hidden / tp;
	m->moe_ffn_local = c->moe_ffn_hidden / tp;
	m->vocab_local = c->vocab / tp;
	m->vocab0 = m->tp_rank * m->vocab_local;
	for (int l = 0; l < c->layers; l++) m->held[l] = p->n_ranges == 0;
	for (int i = 0; i < p->n_ranges; i++) {
		const struct llama_layer_range *r = &p->ranges[i];
		if (r->begin < 0 || r->begin >= r->end || r->end > c->layers)
			return errf(err, "model %s: layer range %d [%d, %d) must satisfy 0 <= begin < end <= layers (%d)",
			            c->name, i, r->begin, r->end, c->layers);
		for (int l = r->begin; l < r->end; l++) {
			if (m->held[l]) return errf(err, "model %s: layer range %d [%d, %d) overlaps another at layer %d",
			                            c->name, i, r->begin, r->end, l);
			m->held[l] = 1;
		}
	}
	return 0;
}

/* A local block of a tensor, row by row from the single-rank tensor's counter stream, into
 * `params` (a host buffer of the shard's layout). */
static void init_block(const struct llama *m, int i, float *params)
{
	const struct param_spec *s = &m->specs[i];
	float *dst = params + s->offset;
	if (s->cols == s->gcols) {
		llama_param_init(m, i, (size_t)s->row0 * s->gcols, s->numel, dst);
		return;
	}
	for (int r = 0; r < s->rows; r++)
		llama_param_init(m, i, (size_t)(s->row0 + r) * s->gcols + s->col0, (size_t)s->cols, dst + (size_t)r * s->cols);
}

int llama_create(struct llama **out, const struct model *cfg, const struct llama_opts *o, char *err)
{
	return llama_create_par(out, cfg, o, NULL, err);
}

int llama_create_par(struct llama **out, const struct model *cfg, const struct llama_opts *o,
                     const struct llama_par *par, char *err)
{
	*out = NULL;
	if (check_config(cfg, err)) return -1;
	struct llama_par single;
	if (!par) {
		llama_par_default(&single);
		par = &single;
	}
	struct llama *m = calloc(1, sizeof *m);
	if (!m) return errf(err, "model %s: out of memory", cfg->name);
	m->cfg = *cfg;
	if (o) m->opts = *o;
	else llama_opts_default(&m->opts);
	m->held = calloc((size_t)cfg->layers, 1);
	m->k = par->backend;
	if (!m->k && m->held) {
		if (kern_create(&m->k, &kern_cpu_ops, 0, err)) {
			llama_destroy(m);
			return -1;
		}
		m->own_k = 1;
	}
	if (!m->held) {
		llama_destroy(m);
		return errf(err, "model %s: out of memory", cfg->name);
	}
	if (set_shard(m, par, err)) {
		llama_destroy(m);
		return -1;
	}
	struct spec_builder b = {0};
	build_specs(m, &b);
	m->n_specs = b.n;
	m->n_params = b.off;
	m->n_specs_full = b.gid;
	m->n_params_full = b.goff;
	m->specs = calloc((size_t)(b.n ? b.n : 1), sizeof *m->specs);
	m->layer = calloc((size_t)cfg->layers, sizeof *m->layer);
	const size_t np = m->n_params ? m->n_params : 1;
	m->params = kern_alloc(m->k, sizeof(float) * np);
	/* explicit zeroing touches every page now rather than inside the first step */
	m->grads = kern_zalloc(m->k, sizeof(float) * np);
	m->m = kern_zalloc(m->k, sizeof(float) * np);
	m->v = kern_zalloc(m->k, sizeof(float) * np);
	if (m->k->ops->cast_weights) m->wc = kern_alloc(m->k, kern_act_size(m->k, np));
	float *init = m->params && !m->k->ops->host_visible ? malloc(sizeof(float) * np) : m->params;
	if (!m->specs || !m->layer || !m->params || !m->grads || !m->m || !m->v || !init ||
	    (m->k->ops->cast_weights && !m->wc)) {
		errf(err, "model %s: out of memory for %zu parameters on backend %s", cfg->name, m->n_params,
		     m->k->ops->name);
		if (init != m->params) free(init);
		llama_destroy(m);
		return -1;
	}
	b = (struct spec_builder){.s = m->specs};
	build_specs(m, &b);
	for (int i = 0; i < m->n_specs; i++) init_block(m, i, init);
	if (init != m->params) {
		kern_to_dev(m->k, m->params, init, sizeof(float) * m->n_params);
		free(init);
	}
	llama_weights_refresh(m);
	*out = m;
	return 0;
}

void llama_zero_grad(struct llama *m)
{
	kern_zero(m->k, m->grads, sizeof(float) * m->n_params);
}

/* ---- shard <-> single-rank layout ---------------------------------------------------- */

size_t llama_full_index(const struct llama *m, int spec, size_t i)
{
	const struct param_spec *s = &m->specs[spec];
	const size_t r = i / (size_t)s->cols, c = i % (size_t)s->cols;
	return s->goffset + (s->row0 + r) * (size_t)s->gcols + s->col0 + c;
}

/* Whether this rank contributes tensor s to sums over the model-parallel groups. */
static int owns(const struct llama *m, const struct param_spec *s)
{
	if (s->shard == SHARD_REPLICATED && m->tp_rank != 0) return 0;
	if (s->shard != SHARD_EXPERT && m->ep_rank != 0) return 0; /* held by every EP rank */
	if (s->offset == m->embed && !m->has_embed) return 0; /* a head stage's tied copy */
	return 1;
}

void llama_local_to_full(const struct llama *m, const float *local, float *full, int owned)
{
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		if (owned && !owns(m, s)) continue;
		for (int r = 0; r < s->rows; r++)
			kern_to_host(m->k, full + llama_full_index(m, i, (size_t)r * s->cols),
			             local + s->offset + (size_t)r * s->cols, sizeof(float) * (size_t)s->cols);
	}
}

void llama_full_to_local(const struct llama *m, const float *full, float *local)
{
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		for (int r = 0; r < s->rows; r++)
			kern_to_dev(m->k, local + s->offset + (size_t)r * s->cols,
			            full + llama_full_index(m, i, (size_t)r * s->cols), sizeof(float) * (size_t)s->cols);
	}
}

int llama_gather_full(const struct llama *m, const float *local, float *full, struct comm *const *groups,
                      int ngroups, char *err)
{
	memset(full, 0, sizeof(float) * m->n_params_full);
	llama_local_to_full(m, local, full, 1);
	if (m->tp && comm_allreduce(m->tp, full, full, m->n_params_full, COMM_F32, err)) return -1;
	if (m->ep && comm_allreduce(m->ep, full, full, m->n_params_full, COMM_F32, err)) return -1;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] && comm_size(groups[i]) > 1 &&
		    comm_allreduce(groups[i], full, full, m->n_params_full, COMM_F32, err))
			return -1;
	return 0;
}

/* ---- gradients and the optimizer --------------------------------------------------- */

int llama_grads_finish(struct llama *m, char *err)
{
	if (!m->sp) return 0;
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		if (s->seq_partial && tp_allreduce(m->tp, m->k, m->grads + s->offset, s->numel, err)) return -1;
	}
	return 0;
}

static void adamw_all(struct llama *m, const struct adamw_opts *o, float scale)
{
	m->step++;
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		m->k->ops->adamw_step(m->k->state, m->params + s->offset, m->grads + s->offset, m->m + s->offset,
		                      m->v + s->offset, s->numel, o->lr, o->beta1, o->beta2, o->eps,
		                      s->decay ? o->weight_decay : 0.0f, m->step, scale);
	}
	llama_weights_refresh(m);
}

void llama_weights_refresh(struct llama *m)
{
	if (m->wc && m->params) m->k->ops->cast_weights(m->k->state, m->wc, m->params, m->n_params);
}

float llama_step(struct llama *m, const struct adamw_opts *o)
{
	/* grad_sumsq's float sum of squares, formed from its double sum */
	double acc = 0.0;
	m->k->ops->grad_sumsq_acc(m->k->state, &acc, m->grads, m->n_params);
	float sumsq = 0.0f + (float)acc;
	adamw_all(m, o, grad_clip_factor(sumsq, o->max_grad_norm));
	return sqrtf(sumsq);
}

double llama_grad_sumsq(const struct llama *m)
{
	double sq = 0.0;
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		if (!owns(m, s)) continue;
		m->k->ops->grad_sumsq_acc(m->k->state, &sq, m->grads + s->offset, s->numel);
	}
	return sq;
}

int llama_step_par(struct llama *m, const struct adamw_opts *o, struct comm *const *groups, int ngroups,
                   float *norm, char *err)
{
	struct comm *all[8];
	int n = 0;
	if (ngroups > 6) return errf(err, "model %s: at most 6 groups for the gradient norm", m->cfg.name);
	all[n++] = m->tp;
	all[n++] = m->ep;
	for (int i = 0; i < ngroups; i++) all[n++] = groups[i];
	double nrm;
	if (grad_norm_global(llama_grad_sumsq(m), all, n, &nrm, err)) return -1;
	/* the clipping factor exactly as llama_step computes it from a float sum of squares */
	adamw_all(m, o, grad_clip_factor((float)(nrm * nrm), o->max_grad_norm));
	if (norm) *norm = (float)nrm;
	return 0;
}

double llama_step_flops(const struct model *c, int B, int T)
{
	const double C = c->hidden, q = (double)c->heads * c->head_dim, kv = (double)c->kv_heads * c->head_dim;
	double per_token = 0.0; /* forward multiply-adds per token */
	for (int l = 0; l < c->layers; l++) {
		per_token += C * (q + 2 * kv) + q * C;
		per_token += q * (double)T; /* QKᵀ and PV, each over the causal half T/2 */
		if (!model_layer_is_moe(c, l))
			per_token += (c->mlp == MLP_SWIGLU ? 3.0 : 2.0) * C * c->ffn_hidden;
		else
			per_token += C * c->moe_experts + 3.0 * C * c->moe_ffn_hidden *
			             (c->moe_topk + c->moe_shared_experts);
	}
	per_token += C * c->vocab;
	return 3.0 * 2.0 * per_token * (double)B * T; /* 2 FLOPs per multiply-add; fwd + 2× bwd */
}
