/* model — Hugging Face config.json reader. Field names and defaults follow transformers'
 * configuration classes: num_key_value_heads defaults to num_attention_heads, head_dim to
 * hidden_size / num_attention_heads, tie_word_embeddings per model_type (false for llama,
 * mistral, mixtral, qwen2, deepseek_v3; true for gpt2). GPT-2 names (n_embd, n_layer, n_head,
 * n_inner, n_positions) are accepted too. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sim/embedded.h"
#include "sim/model.h"
#include "sim/util.h"

/* Reads an integer field; returns 1 if present, 0 if absent or null, -1 on a bad value. */
static int get_int(const cJSON *o, const char *key, int *out, const char *name, char *err)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!it || cJSON_IsNull(it))
		return 0;
	if (!cJSON_IsNumber(it) || !is_int_in(it->valuedouble, -1e300, 1e300))
		return errf(err, "model %s: %s must be an integer", name, key);
	if (!is_int_in(it->valuedouble, 0, 1e9))
		return errf(err, "model %s: %s (%g) must be in [0, 1e9]", name, key, it->valuedouble);
	*out = (int)it->valuedouble;
	return 1;
}

static int get_num(const cJSON *o, const char *key, double *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!it || !cJSON_IsNumber(it))
		return 0;
	*out = it->valuedouble;
	return 1;
}

static const char *get_str(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* first of several alternative names that is present */
static int get_int_any(const cJSON *o, const char *const *keys, int *out, const char *name, char *err)
{
	for (; *keys; keys++) {
		int rc = get_int(o, *keys, out, name, err);
		if (rc) return rc;
	}
	return 0;
}

static int required(const cJSON *o, const char *const *keys, int *out, const char *name, char *err)
{
	int rc = get_int_any(o, keys, out, name, err);
	if (rc < 0) return -1;
	if (rc == 0) return errf(err, "model %s: missing required field %s", name, keys[0]);
	return 0;
}

int model_from_json(const char *text, const char *name, struct model *m, char *err)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	cJSON *o = cJSON_Parse(text);
	if (!o)
		return errf(err, "model %s: malformed JSON", name);
	int rc = -1;
	if (!cJSON_IsObject(o)) { errf(err, "model %s: config must be a JSON object", name); goto out; }
	const char *type = get_str(o, "model_type");
	int is_gpt2 = type && !strcmp(type, "gpt2");
	static const char *const k_hidden[] = {"hidden_size", "n_embd", "d_model", NULL};
	static const char *const k_layers[] = {"num_hidden_layers", "n_layer", "num_layers", NULL};
	static const char *const k_heads[] = {"num_attention_heads", "n_head", NULL};
	static const char *const k_kv[] = {"num_key_value_heads", NULL};
	static const char *const k_ffn[] = {"intermediate_size", "n_inner", "ffn_hidden_size", NULL};
	static const char *const k_vocab[] = {"vocab_size", NULL};
	static const char *const k_pos[] = {"max_position_embeddings", "n_positions", NULL};
	if (required(o, k_hidden, &m->hidden, name, err) || required(o, k_layers, &m->layers, name, err) ||
	    required(o, k_heads, &m->heads, name, err) || required(o, k_vocab, &m->vocab, name, err))
		goto out;
	if (get_int_any(o, k_kv, &m->kv_heads, name, err) < 0) goto out;
	if (!m->kv_heads) m->kv_heads = m->heads;
	if (get_int(o, "head_dim", &m->head_dim, name, err) < 0) goto out;
	if (!m->head_dim && m->heads) m->head_dim = m->hidden / m->heads;
	if (get_int_any(o, k_ffn, &m->ffn_hidden, name, err) < 0) goto out;
	if (!m->ffn_hidden && is_gpt2) {   /* GPT-2's default n_inner, 4 * n_embd, must fit an int */
		if (m->hidden > INT_MAX / 4) {
			errf(err, "model %s: n_embd (%d) is too large for the default n_inner = 4*n_embd", name, m->hidden);
			goto out;
		}
		m->ffn_hidden = 4 * m->hidden;
	}
	if (get_int_any(o, k_pos, &m->max_pos, name, err) < 0) goto out;
	const cJSON *tie = cJSON_GetObjectItemCaseSensitive(o, "tie_word_embeddings");
	m->tied = cJSON_IsBool(tie) ? cJSON_IsTrue(tie) : is_gpt2;
	m->norm = is_gpt2 ? NORM_LAYER : NORM_RMS;
	m->pos_emb = is_gpt2;
	m->mlp = is_gpt2 ? MLP_GELU : MLP_SWIGLU;
	const char *mlp = get_str(o, "mlp");   /* scaleplan extension for GPT-style configs */
	if (mlp) m->mlp = !strcmp(mlp, "gelu") ? MLP_GELU : MLP_SWIGLU;
	const char *norm = get_str(o, "norm");
	if (norm) m->norm = !strcmp(norm, "layernorm") ? NORM_LAYER : NORM_RMS;
	m->qkv_bias = type && !strcmp(type, "qwen2");
	const cJSON *ab = cJSON_GetObjectItemCaseSensitive(o, "attention_bias");
	if (cJSON_IsBool(ab)) m->qkv_bias = cJSON_IsTrue(ab);
	m->rope_theta = 10000;
	get_num(o, "rope_theta", &m->rope_theta);
	m->norm_eps = 1e-5;
	if (!get_num(o, "rms_norm_eps", &m->norm_eps)) get_num(o, "layer_norm_epsilon", &m->norm_eps);
	/* MoE: Mixtral (num_local_experts), DeepSeek (n_routed_experts), Qwen-MoE (num_experts) */
	static const char *const k_exp[] = {"num_local_experts", "n_routed_experts", "num_experts", NULL};
	if (get_int_any(o, k_exp, &m->moe_experts, name, err) < 0) goto out;
	if (m->moe_experts) {
		if (get_int(o, "num_experts_per_tok", &m->moe_topk, name, err) < 0) goto out;
		if (!m->moe_topk) { errf(err, "model %s: MoE config lacks num_experts_per_tok", name); goto out; }
		if (get_int(o, "moe_intermediate_size", &m->moe_ffn_hidden, name, err) < 0) goto out;
		if (!m->moe_ffn_hidden) { /* Mixtral: experts are intermediate_size wide, no dense layers */
			m->moe_ffn_hidden = m->ffn_hidden;
		}
		if (get_int(o, "n_shared_experts", &m->moe_shared_experts, name, err) < 0) goto out;
		int shared_w = 0;
		if (get_int(o, "shared_expert_intermediate_size", &shared_w, name, err) < 0) goto out;
		if (shared_w && !m->moe_shared_experts && m->moe_ffn_hidden)
			m->moe_shared_experts = shared_w / m->moe_ffn_hidden;
		if (get_int(o, "first_k_dense_replace", &m->moe_dense_layers, name, err) < 0) goto out;
	}
	/* DeepSeek-V3 multi-head latent attention */
	if (get_int(o, "kv_lora_rank", &m->kv_lora_rank, name, err) < 0 ||
	    get_int(o, "q_lora_rank", &m->q_lora_rank, name, err) < 0 ||
	    get_int(o, "qk_nope_head_dim", &m->qk_nope_head_dim, name, err) < 0 ||
	    get_int(o, "qk_rope_head_dim", &m->qk_rope_head_dim, name, err) < 0 ||
	    get_int(o, "v_head_dim", &m->v_head_dim, name, err) < 0)
		goto out;
	if (m->kv_lora_rank) {
		m->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
		m->kv_heads = m->heads;
	}
	rc = model_check(m, err);
out:
	cJSON_Delete(o);
	return rc;
}

int model_check(const struct model *m, char *err)
{
	const char *n = m->name;
	if (m->layers < 1) return errf(err, "model %s: num_hidden_layers (%d) must be >= 1", n, m->layers);
	if (m->hidden < 1) return errf(err, "model %s: hidden_size (%d) must be >= 1", n, m->hidden);
	if (m->heads < 1) return errf(err, "model %s: num_attention_heads (%d) must be >= 1", n, m->heads);
	if (m->kv_heads < 1 || m->heads % m->kv_heads)
		return errf(err, "model %s: num_key_value_heads (%d) must divide num_attention_heads (%d)", n, m->kv_heads, m->heads);
	if (m->head_dim < 1) return errf(err, "model %s: head_dim (%d) must be >= 1", n, m->head_dim);
	if (m->vocab < 1) return errf(err, "model %s: vocab_size (%d) must be >= 1", n, m->vocab);
	if (m->ffn_hidden < 0) return errf(err, "model %s: intermediate_size must be >= 0", n);
	if (m->moe_experts) {
		if (m->moe_topk < 1 || m->moe_topk > m->moe_experts)
			return errf(err, "model %s: num_experts_per_tok (%d) must be in [1, %d]", n, m->moe_topk, m->moe_experts);
		if (m->moe_ffn_hidden < 1) return errf(err, "model %s: moe_intermediate_size must be >= 1", n);
		if (m->moe_dense_layers > m->layers)
			return errf(err, "model %s: first_k_dense_replace (%d) exceeds num_hidden_layers (%d)", n, m->moe_dense_layers, m->layers);
		if (m->moe_dense_layers > 0 && m->ffn_hidden < 1)
			return errf(err, "model %s: dense layers need intermediate_size >= 1", n);
	} else {
		if (m->moe_topk || m->moe_ffn_hidden || m->moe_shared_experts || m->moe_dense_layers)
			return errf(err, "model %s: MoE fields set on a model without experts", n);
		if (m->ffn_hidden < 1) return errf(err, "model %s: intermediate_size (%d) must be >= 1", n, m->ffn_hidden);
	}
	if ((double)m->hidden * m->layers > 1e9)
		return errf(err, "model %s: hidden_size*num_hidden_layers is absurdly large", n);
	return 0;
}

int model_load(const char *name_or_path, struct model *m, char *err)
{
	char key[300];
	snprintf(key, sizeof(key), "models/%s.json", name_or_path);
	const char *text = strchr(name_or_path, '/') ? NULL : embedded_find(key);
	if (text)
		return model_from_json(text, name_or_path, m, err);
	if (!strchr(name_or_path, '/') && !strstr(name_or_path, ".json"))
		return errf(err, "model: unknown model '%s' (not a built-in profile; give a config.json path)", name_or_path);
	char *buf = read_file(name_or_path, 16 << 20, err);
	if (!buf)
		return errf(err, "model: cannot read '%s'", name_or_path);
	const char *base = strrchr(name_or_path, '/');
	int rc = model_from_json(buf, base ? base + 1 : name_or_path, m, err);
	free(buf);
	return rc;
}
