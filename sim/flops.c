/* flops — parameter and FLOP counting (model.md §1.2–1.4). */
#include "sim/flops.h"
#include "sim/model.h"

static double mlp_params(const struct model *m, double width)
{
	/* SwiGLU: gate, up, down [MCODE-mem]; plain GeLU MLP: up, down */
	return (m->mlp == MLP_SWIGLU ? 3.0 : 2.0) * m->hidden * width;
}

static double attn_params(const struct model *m)
{
	double h = m->hidden, a = m->heads;
	if (m->kv_lora_rank) {
		/* MLA [DSV3 §2.1]: q down/up (or direct q), kv down (+ decoupled rope key), kv up, out */
		double qk = m->qk_nope_head_dim + m->qk_rope_head_dim;
		double q = m->q_lora_rank ? h * m->q_lora_rank + m->q_lora_rank * a * qk + m->q_lora_rank
					  : h * a * qk;
		double kv = h * (m->kv_lora_rank + m->qk_rope_head_dim) + m->kv_lora_rank +
			    m->kv_lora_rank * a * (m->qk_nope_head_dim + m->v_head_dim);
		return q + kv + a * m->v_head_dim * h;
	}
	double qd = a * m->head_dim, kvd = (double)m->kv_heads * m->head_dim;
	double p = h * qd + 2 * h * kvd + qd * h; /* Q, K, V, O [MCODE-mem] */
	if (m->qkv_bias || m->norm == NORM_LAYER)
		p += qd + 2 * kvd;
	return p;
}

void layer_params(const struct model *m, int i, struct layer_params *out)
{
	double h = m->hidden;
	*out = (struct layer_params){0};
	out->attn = attn_params(m);
	out->norms = m->norm == NORM_LAYER ? 4 * h : 2 * h;
	if (m->norm == NORM_LAYER) /* GPT (Megatron): biases of O, fc1, fc2 -> 12h^2 + 13h per layer [PB] */
		out->bias = h + (model_layer_is_moe(m, i) ? 0 : m->ffn_hidden + h);
	if (model_layer_is_moe(m, i)) {
		out->expert_one = mlp_params(m, m->moe_ffn_hidden);
		out->experts = m->moe_experts * out->expert_one;
		out->mlp = m->moe_shared_experts * out->expert_one;
		out->router = h * m->moe_experts;
	} else {
		out->mlp = mlp_params(m, m->ffn_hidden);
	}
	out->total = out->attn + out->mlp + out->experts + out->router + out->norms + out->bias;
	out->active = out->total - out->experts + m->moe_topk * out->expert_one;
}

double embedding_params(const struct model *m)
{
	return (double)m->vocab * m->hidden + (m->pos_emb ? (double)m->max_pos * m->hidden : 0);
}

double head_params(const struct model *m)
{
	return m->tied ? 0 : (double)m->vocab * m->hidden;
}

static double final_norm(const struct model *m)
{
	return m->norm == NORM_LAYER ? 2.0 * m->hidden : m->hidden;
}

/* embeddings, head and final norm plus every block's total (or active) parameters */
static double params_sum(const struct model *m, int active)
{
	double p = embedding_params(m) + head_params(m) + final_norm(m);
	struct layer_params lp;
	for (int i = 0; i < m->layers; i++) {
		layer_params(m, i, &lp);
		p += active ? lp.active : lp.total;
	}
	return p;
}

double model_params_total(const struct model *m) { return params_sum(m, 0); }
double model_params_active(const struct model *m) { return params_sum(m, 1); }

double layer_matmul_flops_fwd(const struct model *m, int i)
{
	struct layer_params lp;
	layer_params(m, i, &lp);
	/* norms and biases are not matmuls; the router is (h x E) */
	return 2.0 * (lp.active - lp.norms - lp.bias);
}

double attn_core_flops_fwd(const struct model *m, double ctx)
{
	/* QK^T and PV: 2 GEMMs, 2 FLOP per MAC, heads x head_dim wide [MEG App.; MCODE-flops] */
	int vd = m->kv_lora_rank ? m->v_head_dim : m->head_dim;
	return 2.0 * m->heads * ctx * (m->head_dim + vd);
}

double model_flops_per_token(const struct model *m, int seq, int causal)
{
	/* blocks come in two kinds (dense, MoE), so one of each times its count */
	int n_moe = 0;
	if (model_is_moe(m))
		n_moe = m->layers > m->moe_dense_layers ? m->layers - m->moe_dense_layers : 0;
	int n_dense = m->layers - n_moe;
	double attn = 3 * attn_core_flops_fwd(m, causal ? seq / 2.0 : seq);
	double f = m->layers * attn;
	if (n_dense) f += n_dense * 3 * layer_matmul_flops_fwd(m, 0);
	if (n_moe) f += n_moe * 3 * layer_matmul_flops_fwd(m, m->layers - 1);
	f += 6.0 * m->vocab * m->hidden; /* LM head (tied or not, the logits GEMM runs) */
	return f;
}
