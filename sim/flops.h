/* flops — parameter and FLOP counts of a model, per layer and whole, following Megatron's
 * counting rules [MCODE-mem, MCODE-flops] (model.md §1). Counts are in elements / FLOP as
 * doubles (405B and 1T models overflow nothing, and the tuner needs no integer exactness).
 *
 * FLOP convention: one multiply or one add is one FLOP; a GEMM (m×k)·(k×n) costs 2mkn. The
 * attention score term is a parameter: causal (Megatron code, half of the s² term) or full
 * (PaLM / Narayanan / nanotron). */
#ifndef SCALEPLAN_FLOPS_H
#define SCALEPLAN_FLOPS_H

struct model;

struct layer_params {
	double attn;      /* Q, K, V, O projections (+ QKV bias), or MLA's projections */
	double mlp;       /* dense FFN, or shared experts of a MoE layer */
	double experts;   /* routed experts (all of them) */
	double expert_one;/* one routed expert */
	double router;
	double norms;     /* norm weights (and biases), replicated across TP */
	double bias;      /* linear biases outside attn (GPT: 5h + f) */
	double total;     /* sum of the above */
	double active;    /* parameters a token touches (k routed experts instead of E) */
};

/* Parameters of decoder block `i` (0-based). */
void layer_params(const struct model *m, int i, struct layer_params *out);

/* Whole-model counts: embedding (+ position table), LM head (0 when tied), final norm. */
double embedding_params(const struct model *m);
double head_params(const struct model *m);
double model_params_total(const struct model *m);
double model_params_active(const struct model *m);

/* Matmul FLOPs of one token through block i, forward only (2 × active matmul parameters,
 * without the attention score/value products). */
double layer_matmul_flops_fwd(const struct model *m, int i);
/* Attention score + value FLOPs of one token attending to `ctx` keys, forward, one layer:
 * 2 GEMMs × 2 FLOP × heads × head_dim × ctx. The caller decides ctx (s for full, s/2 for
 * causal on average). */
double attn_core_flops_fwd(const struct model *m, double ctx);

/* Model FLOPs of one training step (fwd + bwd, no recompute) per token of sequence `seq`:
 * 6 × (active matmul params incl. LM head) + 3 × attention core (causal halving if causal). */
double model_flops_per_token(const struct model *m, int seq, int causal);

#endif
