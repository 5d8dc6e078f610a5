/* model — a single-rank Llama-style decoder built from struct model (sim/model.h): token
 * embedding, decoder blocks (RMSNorm, RoPE, causal GQA attention, SwiGLU or GeLU MLP, or a
 * MoE MLP with top-k routing, shared experts and the Switch load-balancing loss), final
 * RMSNorm, LM head (tied or not), cross-entropy; forward, backward and AdamW on the CPU
 * reference kernels (kernels/cpu.h). The parallel runtime shards and buckets by the tables.
 *
 * Ownership: struct llama owns four flat fp32 buffers of n_params floats with ONE layout —
 * params, grads, and AdamW's m and v — described by the table specs[] (one entry per tensor,
 * offsets in floats). struct llama_acts owns one micro-batch's activations: one slab of the
 * backend's activation elements (bf16 on a bf16 row, with the fp32 statistics inside it) and
 * one int slab, sized from its own spec table; create one per micro-batch in flight. An
 * activation pointer is offset only by kern_act_at (kernels/backend.h), never as a float *.
 * On a row with a compute format (cast_weights), the kernels read the weights from wc.
 * Every kernel runs through the compute backend (kernels/backend.h) the model was created
 * with, and every one of those buffers is that backend's memory, allocated by its tracking
 * allocator: the host reads them only through the backend's copies (losses, MoE statistics,
 * the shard <-> single-rank mappings below, which take backend memory on the shard side and
 * host memory on the single-rank side). The backend is borrowed from llama_par (it must
 * outlive the model and its activations); without one the model makes and owns a CPU one.
 * Units: element counts; losses in nats.
 *
 * Invariant a reader could not guess: within a layer, tensors that are used as one fused GEMM
 * are adjacent in the flat buffer — wq|wk|wv (one (q+2kv, C) matrix), bq|bk|bv, gate|up (one
 * (2F, C) matrix), and each expert's gate|up|down — so shards must keep each piece's rows
 * together. Gradients accumulate (+=) until llama_zero_grad().
 *
 * Shards (llama_create_par): a rank holds some layers, maybe the embedding and the head,
 * 1/tp of every tensor-parallel tensor and, under expert parallelism, E/ep of the routed
 * experts, in a flat buffer of its own with the same ordering; each spec records where its
 * block sits in the single-rank tensor (gid, row0, col0), so llama_full_index() and
 * llama_gather_full() map a shard back to llama_create's layout. The passes (model_pass.c)
 * add tensor/sequence (runtime/tp.h), context (runtime/cp.h) and expert (runtime/ep.h)
 * parallelism's communication. */
#ifndef SCALEPLAN_RUNTIME_MODEL_H
#define SCALEPLAN_RUNTIME_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "kernels/backend.h"
#include "runtime/comm.h"
#include "sim/model.h"

/* How a tensor is split across tensor-parallel (or expert-parallel) ranks (Megatron-LM). */
enum shard_kind {
	SHARD_REPLICATED, /* every rank holds it all (norms, router) */
	SHARD_COLUMN,     /* rows (output features) split: wq, wk, wv, gate, up, their biases */
	SHARD_ROW,        /* columns (input features) split: wo, down */
	SHARD_VOCAB,      /* vocabulary rows split: embedding, LM head */
	SHARD_EXPERT,     /* lives on the EP rank owning `expert`, cut by TP like the dense MLP */
};
enum init_kind { INIT_NORMAL, INIT_ONES, INIT_ZEROS };

struct param_spec {
	char name[48];         /* "layers.3.attn.wq", "layers.5.experts.2.gate", "embed" */
	int layer;             /* decoder block, -1 for embed / final_norm / lm_head */
	int expert;            /* routed expert index, -1 otherwise */
	size_t offset, numel;  /* floats, into params / grads / m / v */
	int rows, cols;        /* (out, in) for a matrix; rows = 1 for a vector */
	enum shard_kind shard;
	int decay;             /* AdamW weight decay applies (matrices), not to norms and biases */
	enum init_kind init;
	float init_std;        /* INIT_NORMAL only */
	int seq_partial;       /* norms: under sequence parallelism each TP rank's gradient is a
	                        * partial sum over its tokens (llama_grads_finish adds them) */
	/* where this (local) tensor sits in the single-rank model: spec gid of llama_create's
	 * table, at goffset in its flat buffer, shape (grows, gcols); rows and cols above are
	 * the local block starting at (row0, col0). A single-rank model has gid = own index. */
	int gid;
	size_t goffset;
	int grows, gcols, row0, col0;
};

struct llama_opts {
	uint64_t seed;         /* initial weights are a pure function of (seed, tensor, element) */
	float init_std;        /* 0.02 as GPT-2; output projections get init_std/sqrt(2·layers) */
	float aux_coef;        /* weight of the summed MoE load-balancing losses in the loss */
};
void llama_opts_default(struct llama_opts *o);

/* ---- the parallel description of one rank's shard ---------------------------------------
 * Layer ranges: a pipeline rank may hold several chunks (interleaved: chunk c·pp + r; zb-v
 * and DualPipe: r and 2pp-1-r). n_ranges == 0 means every layer. */
struct llama_layer_range { int begin, end; }; /* layers [begin, end) */

struct llama_par {
	struct comm *tp;        /* borrowed tensor-parallel group; NULL or size 1: no TP */
	int sp;                 /* sequence parallelism (needs tp > 1 to change anything) */
	const struct llama_layer_range *ranges; /* copied at creation */
	int n_ranges;
	int has_embed, has_head;
	/* context parallelism: ring attention over cp, every sequence split zig-zag (runtime/cp.h);
	 * the caller gives each rank its rows (cp_shard_tokens) */
	struct comm *cp;
	/* expert parallelism (runtime/ep.h; needs tp 1): experts [expert_begin, expert_end) of
	 * this rank, which must be the contiguous split E/ep · [r, r+1) of its ep group; both 0
	 * means exactly that */
	struct comm *ep;
	int expert_begin, expert_end;
	struct kern *backend;   /* borrowed; NULL: a CPU backend of the model's own */
};
/* The single-rank description: no TP, every layer, embedding and head. */
void llama_par_default(struct llama_par *p);

struct llama_layer_offsets { /* offsets into the flat buffers; SIZE_MAX when absent */
	size_t attn_norm, wqkv, bqkv, wo, mlp_norm;
	size_t w_in, w_out;              /* dense MLP: gate|up (or GeLU fc) and down (or proj) */
	size_t router, experts;          /* expert e: experts + e·(3·Fe·C), gate|up then down */
	size_t shared_in, shared_out;    /* shared experts as one SwiGLU MLP of Fe·n_shared */
};

struct llama {
	struct kern *k;                    /* the compute backend (owned when own_k) */
	int own_k;
	struct model cfg;
	struct llama_opts opts;
	int n_specs;
	struct param_spec *specs;
	size_t n_params;
	float *params, *grads, *m, *v;
	/* the compute copy of params in the row's activation format (n_params elements of
	 * act_bytes), which the kernels read on a row with cast_weights; NULL on an fp32 row,
	 * where they read params. llama_weights_refresh() rewrites it from params. */
	void *wc;
	int step;                          /* AdamW steps taken */
	struct llama_layer_offsets *layer; /* [cfg.layers]; all SIZE_MAX for layers not held */
	size_t embed, final_norm, lm_head; /* lm_head == embed when tied; SIZE_MAX when not held */
	/* ---- the shard (llama_create: tp 1, every layer, embedding and head) ---- */
	struct comm *tp;                   /* borrowed; NULL when tp_size == 1 */
	int tp_size, tp_rank, sp;
	int has_embed, has_head;
	unsigned char *held;               /* [cfg.layers]: 1 when this rank holds the layer */
	int heads_local, kv_heads_local;   /* H/tp, Hkv/tp */
	int ffn_local, moe_ffn_local;      /* F/tp, Fe/tp (each expert's gate|up|down) */
	int vocab_local, vocab0;           /* vocabulary rows [vocab0, vocab0 + vocab_local) */
	struct comm *cp, *ep;              /* borrowed; NULL when of size 1 */
	int cp_size, cp_rank, ep_size, ep_rank;
	int expert0, experts_local;        /* routed experts held: [expert0, expert0 + experts_local) */
	int n_specs_full;
	size_t n_params_full;              /* floats in the single-rank model's flat buffers */
};

int llama_create(struct llama **out, const struct model *cfg, const struct llama_opts *o, char *err);
/* Allocates and initialises only this rank's shard (par == NULL: as llama_create): column-
 * parallel wq|wk|wv by heads (H/tp query and Hkv/tp key/value heads per rank, fused per rank),
 * gate|up (F/tp rows of each), row-parallel wo and down, vocabulary-parallel embedding and
 * head, each expert's gate|up|down split like the dense MLP; norms and router replicated.
 * Refuses, naming the field, a tp that does not divide heads, kv_heads, ffn_hidden,
 * moe_ffn_hidden or vocab, overlapping or out-of-range layer ranges, an ep that does not
 * divide the experts, EP with tp > 1, and an expert range that is not the EP split. */
int llama_create_par(struct llama **out, const struct model *cfg, const struct llama_opts *o,
                     const struct llama_par *par, char *err);
void llama_destroy(struct llama *m);
static inline int llama_holds_layer(const struct llama *m, int l)
{
	return l >= 0 && l < m->cfg.layers && m->held[l];
}
/* Writes elements [begin, begin+count) (row-major, indices of the whole single-rank tensor)
 * of tensor `spec` as llama_create did: a shard initialises its block to exactly the
 * single-rank model's values. */
void llama_param_init(const struct llama *m, int spec, size_t begin, size_t count, float *dst);
void llama_zero_grad(struct llama *m);
/* The weights the kernels read: element off of the compute copy, or of params on an fp32 row. */
static inline float *llama_w(const struct llama *m, size_t off)
{
	return m->wc ? kern_act_at(m->k, (const float *)m->wc, off) : m->params + off;
}
/* Rewrites the compute copy from params (a no-op on an fp32 row). Every change of params must
 * be followed by it before the next pass: creation, llama_step and llama_step_par (adamw)
 * and pp_adamw_step_par do it; ZeRO's steps and checkpoint loads go through the trainer,
 * which does it after them. */
void llama_weights_refresh(struct llama *m);

/* ---- shard <-> single-rank layout (comparison and checkpoints) ------------------------ */
/* Index in llama_create's flat buffer of element i (row-major, local) of local tensor spec. */
size_t llama_full_index(const struct llama *m, int spec, size_t i);
/* Copies every tensor of a shard-layout buffer (params, grads, m or v) to its place in a
 * single-rank-layout buffer of n_params_full floats, leaving other elements alone. owned != 0
 * writes only what this rank owns: TP-replicated tensors on TP rank 0 only, all but the
 * routed experts on EP rank 0 only, and a tied embedding only where has_embed; so summing
 * such buffers over the model-parallel groups gives each element exactly once. */
void llama_local_to_full(const struct llama *m, const float *local, float *full, int owned);
/* The inverse: reads this rank's blocks out of a single-rank-layout buffer (a checkpoint). */
void llama_full_to_local(const struct llama *m, const float *full, float *local);
/* Assembles the whole single-rank-layout vector on every rank: zero, write what this rank
 * owns, sum over the TP and EP groups and then over groups[0..ngroups) (e.g. pp; they must
 * be orthogonal to tp, ep and each other). Collective. */
int llama_gather_full(const struct llama *m, const float *local, float *full, struct comm *const *groups,
                      int ngroups, char *err);

/* ---- one micro-batch's activations ---------------------------------------------------- */
/* offset: in activation elements of the backend (kern_act_at) into slab, or in ints into
 * islab; numel in the tensor's own elements. is_f32: fp32 on every row (statistics: rstd,
 * lse, the RoPE table, router probabilities and weights, losses, scratch); the others are
 * activations of act_bytes each. */
struct act_spec { char name[32]; int layer; size_t offset, numel; int is_int, is_f32; };

struct llama_layer_acts {
	float *ln1, *rstd1, *qkv, *att, *lse, *mid, *ln2, *rstd2; /* attention half */
	float *pre, *h;                     /* dense MLP: gate|up (or fc) output, activation */
	float *rlogits, *probs, *topw, *frac, *xe, *gue, *he, *ye, *sgu, *sh; /* MoE */
	int *topi, *offsets, *perm, *slot_of;
	/* outputs of the input-gradient pass kept for the weight-gradient pass; one shared set
	 * unless split_w, where each layer keeps its own until llama_layer_backward_w */
	float *d_qkv, *d_ao, *d_pre, *d_mo, *d_rlogits, *d_gue, *d_ye, *d_sgu;
	float aux_loss;
};

struct ep_batch;

struct llama_acts {
	int B, T, N, split_w;        /* T: rows of each sequence on this rank (T/cp of it) */
	int T_seq;                   /* whole sequence length */
	int n_counted;               /* targets >= 0 in the whole micro-batch (summed over CP) */
	int n_layers;
	struct ep_batch **ep;        /* [n_layers] one exchange per held MoE layer under EP */
	int Nl, n0;                  /* residual-stream tokens held: [n0, n0 + Nl) of the N (all
	                              * of them unless sequence parallel, then N/tp) */
	int n_specs;
	struct act_spec *specs;
	size_t n_floats;             /* slab's size in activation elements (floats on the CPU) */
	size_t slab_bytes, n_ints;
	float *slab;                 /* opaque (kernels/backend.h): reached only by kern_act_at */
	int *islab;
	int *tokens, *targets;       /* (N) copies of the inputs */
	float *rope_tab;             /* (T, head_dim/2, 2) */
	float *res;                  /* (layers+1, Nl, C): res + l·Nl·C is block l's input */
	struct llama_layer_acts *l;  /* [layers] */
	float *lnf, *rstdf, *logits, *losses, *lse_ce; /* head; logits become dlogits in backward */
	float *dres;                 /* (Nl, C) gradient of the residual stream at the current layer */
	float *dln, *datt, *dh, *dxe, *dhe, *dtopw, *att_scratch; /* backward scratch */
	float *tp_buf, *ce_scratch;  /* tp > 1: (N, C) partial sums; vocab-parallel CE scratch */
	float *moe_stats;            /* cp > 1: (2, E) expert counts and probability sums */
	struct kern *k;              /* the model's backend, borrowed; the slabs are its memory */
	float *host;                 /* host memory: (N) losses, then (3, E) MoE statistics and frac */
	int *ihost;                  /* host memory: (E + 1) a MoE layer's expert row offsets */
	int failed;                  /* a collective failed: err says which; results are invalid */
	char err[256];
	/* activation recomputation: rc[l] is layer l's mode (NULL: none kept out); the slots a
	 * recomputed layer does not keep are shared, rc_owner[] says which layer's values they
	 * hold now (LLAMA_RC_SLOT_*; -1 none) */
	unsigned char *rc;
	int rc_owner[3];
	float ce_loss;               /* mean over counted targets (>= 0) of the last forward */
	float dloss;                 /* d total loss / d this micro-batch's loss; set by
	                              * llama_head_backward (a stage without the head sets it) */
};

/* Activation recomputation per layer. FULL (Megatron-LM's full/uniform) keeps only the layer's
 * input (its row of res) and re-runs the layer's forward just before its B or W pass when the
 * shared slots hold another layer's values; ATTN (selective, Korthikanti et al. 2022, "Reducing
 * Activation Recomputation in Large Transformer Models", §5) keeps everything but the attention
 * core's outputs (att, lse), recomputed from the kept post-RoPE qkv. The recomputed values are
 * bit-for-bit those of the forward (same kernels, same inputs, same order). Recomputing a
 * layer under TP, CP or EP repeats its collectives, so it is collective like a B pass. */
enum llama_rc { LLAMA_RC_NONE, LLAMA_RC_ATTN, LLAMA_RC_FULL };
enum { LLAMA_RC_SLOT_ATT, LLAMA_RC_SLOT_DENSE, LLAMA_RC_SLOT_MOE };

/* split_w != 0 keeps every layer's weight-gradient inputs so W passes can be deferred.
 * Activations of the whole B·T sequence after gathers (ln1, ln2, qkv, ...) have N rows with
 * the shard's local widths; the residual stream has Nl rows. Only held layers get slots.
 * With sequence parallelism tp must divide B·T. T is the whole sequence's length; under
 * context parallelism 2·cp must divide it and the rank holds T/cp rows of each sequence
 * (zig-zag), which is what tokens and targets then hold. */
int llama_acts_create(struct llama_acts **out, const struct llama *m, int B, int T, int split_w, char *err);
/* As llama_acts_create with rc[l] (enum llama_rc, [cfg.layers], copied; NULL: none) saying
 * which layers are recomputed: their dropped tensors share one slot set per kind. */
int llama_acts_create_rc(struct llama_acts **out, const struct llama *m, int B, int T, int split_w,
                         const unsigned char *rc, char *err);
void llama_acts_destroy(struct llama_acts *a);

/* ---- forward: embed, then layers [l0, l1), then head (callable separately) ---------------
 * On a shard every call is collective over the TP group (and CP, EP). A failed collective,
 * or a pass over a layer (embedding, head) the shard does not hold, sets a->failed and
 * a->err: check after the pass; later collectives are skipped. Under CP the loss (and a MoE layer's load-balancing loss) is that
 * of the whole sequences, and each CP rank's gradients are its rows' share: their sum over
 * CP (which the data-parallel reduction over dp·cp forms) is the single-rank gradient. */
void llama_embed_forward(const struct llama *m, struct llama_acts *a, const int *tokens /* (B, T) */);
void llama_layers_forward(const struct llama *m, struct llama_acts *a, int l0, int l1);
/* Returns the mean cross-entropy over targets >= 0 (also in a->ce_loss). */
float llama_head_forward(const struct llama *m, struct llama_acts *a, const int *targets /* (B, T) */);
/* Sum over layers [l0, l1) of aux_coef · aux_loss (0 for a dense model). */
float llama_aux_loss(const struct llama *m, const struct llama_acts *a, int l0, int l1);
/* All of the above: cross-entropy + aux term. */
float llama_forward(const struct llama *m, struct llama_acts *a, const int *tokens, const int *targets);

/* ---- backward: head, then layers from l1-1 down to l0, then embed ------------------------
 * dloss scales this micro-batch's loss (1/micro_batches for gradient accumulation). The head
 * leaves d res[layers] in a->dres; a layer's B pass turns d res[l+1] into d res[l] in place. */
void llama_head_backward(struct llama *m, struct llama_acts *a, float dloss);
void llama_layer_backward_b(struct llama *m, struct llama_acts *a, int l); /* input grads */
void llama_layer_backward_w(struct llama *m, struct llama_acts *a, int l); /* weight grads */
void llama_layers_backward(struct llama *m, struct llama_acts *a, int l0, int l1); /* B then W */
void llama_embed_backward(struct llama *m, struct llama_acts *a);
void llama_backward(struct llama *m, struct llama_acts *a, float dloss);

/* After the last micro-batch's backward: all-reduces over TP the gradients that sequence
 * parallelism leaves as per-rank partial sums (the norms'); a no-op otherwise. Collective. */
int llama_grads_finish(struct llama *m, char *err);

/* ---- optimizer ---------------------------------------------------------------------- */
struct adamw_opts { float lr, beta1, beta2, eps, weight_decay, max_grad_norm; };
void adamw_opts_default(struct adamw_opts *o); /* 3e-4, 0.9, 0.95, 1e-8, 0.1, 1.0 */
/* Clips by global norm (max_grad_norm <= 0: never) and takes one AdamW step on every tensor,
 * decaying only specs with decay set. Returns the global gradient norm before clipping. */
float llama_step(struct llama *m, const struct adamw_opts *o);
/* Sum of squares of the gradients this rank is responsible for in the global norm: what
 * llama_local_to_full calls owned (grad_norm_global's rule). */
double llama_grad_sumsq(const struct llama *m);
/* llama_step for a shard: the global norm over TP, EP and groups[0..ngroups) (e.g. pp),
 * clipping, AdamW on the local tensors. The gradients must already be reduced over dp·cp
 * (so that all but the experts are equal across EP). Collective. */
int llama_step_par(struct llama *m, const struct adamw_opts *o, struct comm *const *groups, int ngroups,
                   float *norm, char *err);

/* Model FLOPs of one forward+backward over B·T tokens (matmuls only, causal attention
 * counted once per (query, key<=query) pair; Megatron-LM's convention). */
double llama_step_flops(const struct model *cfg, int B, int T);

#endif
