/* model — a transformer's architecture, read from a Hugging Face config.json (Llama, Mistral,
 * Mixtral, Qwen2, DeepSeek-V3 and GPT-2 field names) or filled in directly (validation rows,
 * tests). Counts in elements; no memory is owned.
 *
 * Invariant: after model_load()/model_check() succeeds every count is positive and consistent
 * (heads divisible by kv_heads, moe_* all zero for a dense model, moe_dense_layers <= layers),
 * so the simulator never re-checks them. */
#ifndef SCALEPLAN_MODEL_H
#define SCALEPLAN_MODEL_H

#include <stddef.h>

enum mlp_kind { MLP_SWIGLU, MLP_GELU };
enum norm_kind { NORM_RMS, NORM_LAYER };

struct model {
	char name[64];
	int layers;      /* decoder blocks */
	int hidden;      /* h */
	int ffn_hidden;  /* dense FFN width (0 when every layer is MoE) */
	int heads;       /* query heads a */
	int kv_heads;    /* a_kv (== heads for MHA) */
	int head_dim;    /* d; q width = heads*head_dim, may differ from hidden */
	int vocab;
	int tied;        /* input embedding and LM head share one tensor */
	int qkv_bias;    /* Qwen2 */
	int pos_emb;     /* learned absolute position table of max_pos rows (GPT) */
	int max_pos;
	enum norm_kind norm;
	enum mlp_kind mlp;
	double rope_theta;
	double norm_eps;
	/* MoE; all zero for a dense model */
	int moe_experts;        /* routed experts per MoE layer */
	int moe_topk;
	int moe_ffn_hidden;     /* width of one routed (and shared) expert */
	int moe_shared_experts;
	int moe_dense_layers;   /* leading layers with a dense FFN */
	/* multi-head latent attention (DeepSeek-V3); kv_lora_rank == 0 means ordinary GQA */
	int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
};

/* Loads `name_or_path`: a built-in profile name ("llama-3-70b", from profiles/models/) or a
 * path to any config.json. Unknown keys are ignored (HF configs carry many); missing required
 * keys and impossible values are errors naming the field. */
int model_load(const char *name_or_path, struct model *m, char *err);

/* Parses config.json text; `name` labels error messages and m->name. */
int model_from_json(const char *text, const char *name, struct model *m, char *err);

/* Checks the invariant above; fills err naming the field and rule. */
int model_check(const struct model *m, char *err);

static inline int model_is_moe(const struct model *m) { return m->moe_experts > 0; }
/* Is decoder block `i` (0-based) a MoE block? */
static inline int model_layer_is_moe(const struct model *m, int i)
{
	return m->moe_experts > 0 && i >= m->moe_dense_layers;
}

#endif
