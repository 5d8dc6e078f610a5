/* plan — everything about *how* a model is trained: degrees, sharding, recompute, batch,
 * pipeline schedule, rank order, precision, overlap switches. One struct, one parser (CLI flags
 * and JSON use the same keys, see plan_keys), one validator. The simulator, tuner, runtime and
 * database all use these; nothing else parses a plan.
 *
 * Invariant: after plan_resolve() + plan_validate() succeed, gpus == dp*tp*pp*cp, etp is set
 * and ep*etp divides tp*dp*cp (MoE parallel folding: the experts' grid over a stage's ranks),
 * gbs % (dp*mbs) == 0, and stage_layers[0..pp*vpp_chunks) sums to the model's layers
 * (one entry per pipeline *stage*, i.e. per model chunk in pipeline order). */
#ifndef SCALEPLAN_PLAN_H
#define SCALEPLAN_PLAN_H

#include <stdint.h>
#include <stdio.h>

struct model;
struct hw;

enum schedule {
	SCHED_NONE, SCHED_AFAB, SCHED_1F1B, SCHED_INTERLEAVED, SCHED_ZBH1, SCHED_ZBH2,
	SCHED_ZBV, SCHED_DUALPIPE, SCHED_DUALPIPEV, SCHED_COUNT
};
/* selective: Megatron's attention-core recompute [KOR §5]; op: torchtitan's per-op selective
 * checkpointing (saves every other matmul output and the attention output, recomputes the rest) */
enum recompute { RC_NONE, RC_SELECTIVE, RC_FULL, RC_OP };
/* what selective recompute re-runs: Megatron-Core's --recompute-modules (TransformerConfig
 * recompute_modules, default core_attn), one bit each; sim/layer_cost.c says what each keeps
 * and re-runs */
enum rc_module {
	RCM_CORE_ATTN = 1 << 0, RCM_MLA_UP_PROJ = 1 << 1, RCM_MOE_ACT = 1 << 2, RCM_LAYERNORM = 1 << 3,
	RCM_MLP = 1 << 4, RCM_MOE = 1 << 5, RCM_SHARED_EXPERTS = 1 << 6, RCM_COUNT = 7
};
/* fp16: with loss scaling, as Megatron-LM --fp16 and DeepSpeed run it; on these GPUs it runs at
 * the bf16 tensor-core peak with 2-byte tensors, so the model prices it as bf16 */
enum precision { PREC_BF16, PREC_FP8, PREC_FP32, PREC_FP16, PREC_COUNT };
/* PyTorch's CUDA caching allocator: native segments, or expandable_segments:True
 * (PYTORCH_ALLOC_CONF), one growing mapping per stream */
enum allocator { ALLOC_NATIVE, ALLOC_EXPANDABLE, ALLOC_COUNT };
/* how the Adam step runs: one fused multi-tensor kernel, or torch.optim's foreach ops */
enum optimizer_impl { OPT_FUSED, OPT_FOREACH, OPT_COUNT };
/* who runs FP8 GEMMs: Transformer Engine (casts fused into the producing kernels, FP8 copies of
 * the GEMM inputs saved for backward, FP8 weights cached per step) or torchao's Float8Linear
 * (dynamic per-tensor casts as separate kernels) */
enum fp8_impl { FP8_TE, FP8_TORCHAO, FP8_COUNT };
/* pipeline receive buffers kept for the step: none (made per transfer and freed, Megatron,
 * nanotron), one per micro-batch for every stage input and output gradient
 * (torch.distributed.pipelining), or a ring of (pp - stage) + 2 of them (NeMo AutoModel's
 * recv_buffer_pool under 1F1B) */
enum pp_recv { RECV_NONE, RECV_MICROBATCH, RECV_RING, RECV_COUNT };
/* the default split of the layers over the pipeline stages when stage_layers is not given:
 * balanced (equal shares, the remainder on the middle ranks), nanotron's cost split
 * (build_model: the pipeline blocks in order, embedding, layers, final norm, LM head, fp32
 * cast, loss, each to the current rank, which moves on once the blocks' cumulative cost
 * passes (rank + 1) / pp of the total; a decoder layer costs 4h^2 + 3h·ffn, the LM head V·h,
 * the rest nothing, LlamaForTraining.get_block_compute_costs), torchtitan's before and since
 * 2025-04, or the remainder on the first stages (NeMo AutoModel); plan_default_split */
enum pp_split { SPLIT_BALANCED, SPLIT_COST, SPLIT_TORCHTITAN, SPLIT_TORCHTITAN_IO, SPLIT_FIRST, SPLIT_COUNT };
/* how a token's top-k experts are chosen: random (k distinct experts, each expert equally
 * likely: a trained, load-balanced router's expected spread), or consecutive (token i takes
 * experts i·k ... i·k + k − 1 mod E: NeMo AutoModel's FakeBalancedGate, which its benchmark
 * configs select with fake_balanced_gate: true, moe/layers.py) */
enum moe_routing { ROUTE_RANDOM, ROUTE_CONSECUTIVE, ROUTE_COUNT };
/* how the loss runs over the rank's logits (sim/estimate.c loss_kinds[] says what each moves and holds) */
enum loss_kind { LOSS_VOCAB_PARALLEL, LOSS_EAGER, LOSS_PARALLEL, LOSS_EAGER_BF16, LOSS_COMPILED, LOSS_COUNT };

#define PLAN_MAX_STAGES 512
#define PLAN_NAME_LEN 256

struct plan {
	char model[PLAN_NAME_LEN];   /* profile name or config.json path (may be empty) */
	char gpu[PLAN_NAME_LEN];     /* profile name or path (may be empty) */
	int gpus;                    /* world size; 0 = derive from the degrees */
	int gpus_per_node;           /* 0 = the hardware profile's */
	int dp, tp, pp, cp, ep;      /* dp 0 = derive from gpus; ep divides tp*dp*cp (folding) */
	int etp;                     /* expert tensor parallelism, <= tp; 0 = tp (Megatron's default) */
	int vpp;                     /* model chunks per pipeline rank (interleaved) */
	int sp;                      /* sequence parallelism inside TP */
	int zero;                    /* 0..3 */
	enum recompute recompute;
	int recompute_layers;        /* full recompute of only this many layers per stage; -1 = all */
	int recompute_modules;       /* selective: the enum rc_module set re-run (default core_attn) */
	int mbs;                     /* micro-batch, sequences */
	int gbs;                     /* global batch, sequences; 0 = dp*mbs */
	int seq;                     /* tokens per sequence */
	enum schedule schedule;
	char order[32];              /* rank order, innermost first, e.g. "tp-cp-dp-pp" */
	enum precision precision;
	int fp32_grads;              /* fp32 gradient accumulation buffer (Megatron main grads) */
	int bf16_states;             /* no fp32 master: weights, stored gradients, Adam m, v in bf16 */
	int ddp_buckets;             /* torch DDP's own 16-bit gradient buckets (dp*cp > 1) */
	int pp_recv;                 /* enum pp_recv: receive buffers kept for the step */
	int grad_accum_pass;         /* gradients added into that buffer by a separate pass after each
	                              * micro-batch's backward (nanotron), not in the wgrad GEMM */
	int overlap_grad_reduce;     /* DP/ZeRO gradient reduction overlapped with backward */
	int overlap_param_gather;    /* ZeRO param all-gather overlapped with forward */
	int overlap_tp_comm;         /* TP/SP collectives overlapped with GEMMs */
	int flash_attn;              /* fused (flash) attention; 0: score matrix materialised */
	int overlap_p2p;             /* interleaved schedules: P2P overlapped with compute */
	int pp_scatter_gather;       /* without SP, a stage's output is whole on every TP rank: each
	                              * sends 1/tp of it and the next stage all-gathers it over its TP
	                              * group (Megatron-LM before Megatron-Core, Megatron-DeepSpeed,
	                              * DeepSpeed's pipeline engine); 0: each TP rank sends all of it */
	int tp_regather;             /* SP: the column-parallel layers keep their input sharded and
	                              * all-gather it again in backward (Megatron, TE, nanotron);
	                              * 0: the gathered input is saved (torchtitan's DTensor SP) */
	int shard_master;            /* ZeRO-3's shard is the fp32 parameter the optimizer steps: no
	                              * 16-bit copy at rest (PyTorch FSDP1 and FSDP2) */
	int fsdp_copies;             /* ZeRO-2/3 through FSDP2: each gathered parameter is copied out
	                              * of the flat all-gather buffer and each unsharded gradient into
	                              * the reduce-scatter buffer, cast to the reduce dtype, on the
	                              * compute stream (torchtitan, NeMo AutoModel) */
	int cp_fp32_merge;           /* CP through PyTorch's context parallel: each ring step's output
	                              * merged into an fp32 running output and the gradients
	                              * accumulated in fp32, element-wise beside the flash kernels
	                              * (torchtitan) */
	int dp_host_copies;          /* ZeRO-0/1 syncs whose buffers are flattened and copied back
	                              * tensor by tensor on the host: all_reduce_coalesced unflattens
	                              * each DDP bucket; ZeRO-1's reduce_scatter_coalesced flattens
	                              * one buffer per DP rank per bucket and all_gather_coalesced
	                              * copies every parameter's slice from every rank (nanotron
	                              * distributed.py); 0: one flat buffer per bucket (Megatron) */
	int loss;                    /* enum loss_kind: the loss's implementation, which sets the
	                              * bytes per logit its kernels move and hold */
	int loss_bytes;              /* bytes per logit the loss holds at its peak, one micro-batch,
	                              * when stated; 0: the loss kind's */
	int attn_cudnn;              /* attention through cuDNN's fused kernel where the hardware profile
	                              * has its efficiency (Transformer Engine's choice on Hopper) */
	int compile;                 /* torch.compile of the model's blocks (torchtitan
	                              * training.compile); the estimate reads it only through the
	                              * framework profile's defaults it selects (torchtitan: loss,
	                              * glu_eager, eager_block) */
	int glu_eager;               /* a gated MLP (SwiGLU) run as separate PyTorch ops: the
	                              * activation saves its input gate, the product saves act(gate)
	                              * and up, so act(gate) is kept too (nanotron GLUActivation,
	                              * torchtitan FeedForward), and each op's traffic is priced;
	                              * 0: one fused kernel that saves gate|up only (Megatron
	                              * bias_swiglu_impl) */
	int eager_block;             /* the block's norms, rotary embedding and output layout copy
	                              * as separate PyTorch ops (torchtitan uncompiled):
	                              * their HBM traffic counted op by op (layer_cost.c) */
	int kv_repeat;               /* K and V repeated to the query heads before the attention
	                              * kernel (torchtitan's repeat_kv ahead of SDPA): the copy, the
	                              * saved K/V, and context parallelism's exchanges and fp32
	                              * accumulation at the query width */
	int qkv_copies;              /* the attention block's layout copies around its kernels:
	                              * the fused QKV output permuted into per-head tensors and K/V
	                              * packed for the rotary kernel (nanotron's CausalSelfAttention) */
	int tp_seq_copies;           /* SP gathers and scatters the sequence dimension of a batch-first
	                              * tensor through functional collectives that copy the chunks into
	                              * place with torch.cat (torchtitan's Shard(1)) */
	int overlap_tp_bwd;          /* TP backward collectives overlapped with the other backward
	                              * GEMM (Megatron's async dgrad/wgrad), without overlap_tp_comm */
	int reduce_per_mb;           /* ZeRO-2: gradients reduce-scattered every micro-batch
	                              * (DeepSpeed, FSDP); 0: accumulated in a full buffer, once per step */
	int allocator;               /* enum allocator */
	int optimizer;               /* enum optimizer_impl */
	int fp8_impl;                /* enum fp8_impl */
	int pp_split;                /* enum pp_split */
	int moe_routing;             /* enum moe_routing */
	int fp8_params;              /* FP8 primary weights (TE fp8_param_gather): no bf16 copy */
	int zero3_live_params;       /* > 0: ZeRO-3 gathers module by module and keeps at most this
	                              * many parameters gathered (DeepSpeed's stage3_max_live_parameters;
	                              * the largest module always); 0: per block, the current one and
	                              * the prefetched next (FSDP units) */
	int zero3_gather_gbps;       /* > 0: ZeRO-3's gathers and reduce-scatters run at most at this
	                              * per-GPU rate, GB/s, when the framework and not the fabric
	                              * bounds them (frameworks/deepspeed.json, 2021) */
	char framework[PLAN_NAME_LEN]; /* profiles/frameworks/NAME.json whose documented defaults fill
	                              * the keys a plan does not state (framework_apply) */
	int nstage_layers;           /* 0 = balanced default split */
	int stage_layers[PLAN_MAX_STAGES];
	uint64_t stated;             /* bit plan_key_index(k): key k was given (plan_set) */
};

/* Defaults: all degrees 1, dp derived, zero 0, recompute none, mbs 1, seq 4096, bf16,
 * order tp-cp-dp-pp, overlaps off, schedule 1f1b (none when pp == 1). */
void plan_defaults(struct plan *p);

/* Sets one key from text: plan_set(p, "tp", "8"). Booleans take 1/0/true/false/on/off.
 * Returns 0, or -1 with err naming the key and rule. Unknown keys are errors. */
int plan_set(struct plan *p, const char *key, const char *val, char *err);

/* Applies a JSON object with the same keys (numbers, strings or booleans). Unknown keys are
 * errors. "stage_layers" is an array of integers. */
int plan_from_json(const char *text, struct plan *p, char *err);

/* Index of a plan key (bit of plan.stated), -1 if there is no such key. */
int plan_key_index(const char *key);
/* Whether key was given to plan_set (a flag, a JSON plan key, a validation cell). */
int plan_key_stated(const struct plan *p, const char *key);
/* The value of key as text (the form plan_set accepts); -1 if there is no such key. */
int plan_get(const struct plan *p, const char *key, char *out, size_t n);

/* Writes the plan as one JSON object (no trailing newline). */
void plan_write_json(const struct plan *p, FILE *f);
/* The same into a malloc'd string. */
char *plan_to_json(const struct plan *p);
/* The plan as the flags `scaleplan sim` takes ("--model llama-3-70b --gpu h100-sxm --gpus 512
 * --dp 64 ... --overlap-grad-reduce 1"): every key that differs from plan_defaults, and always
 * model, gpu, gpus, the degrees, mbs, gbs and seq. Every value is one shell word
 * (put_shell_word: a model or GPU path with spaces, quotes or $ is single-quoted), so the line
 * can be pasted into a shell. malloc'd; NULL when out of memory. */
char *plan_to_flags(const struct plan *p);
/* The whole plan in one line for people: every degree, ZeRO, SP, recompute, batch, schedule,
 * rank order, overlap switches and precision. */
void plan_describe(const struct plan *p, char *buf, size_t cap);

/* Derives unset values (dp, gpus, gbs, schedule none for pp 1, stage split) using the model
 * and cluster. Fails with a message when the degrees cannot be resolved (gpus not divisible). */
int plan_resolve(struct plan *p, const struct model *m, const struct hw *h, char *err);

/* Fills stage_layers with the default split of `layers` over plan_stages(p) stages (at most
 * PLAN_MAX_STAGES): equal shares, the remainder on the middle ranks, the first and the last
 * rank the last to take one; under interleaving per rank first, then over its chunks. */
void plan_balanced_split(struct plan *p, int layers);
/* The split pp_split names for the model; nanotron's with every stage at least one layer (a
 * rank it leaves without a layer, holding only the fp32 cast or the loss, borrows one from the
 * nearest earlier rank that has two: the model keeps the head on the last stage); torchtitan's
 * over the stages in model order, as its generate_split_points; first: equal shares, the
 * remainder on the first stages in model order. */
void plan_default_split(struct plan *p, const struct model *m);

/* Every divisibility and range rule; the message names the rule, e.g.
 * "plan: tp (16) does not divide num_attention_heads (40)". */
int plan_validate(const struct plan *p, const struct model *m, const struct hw *h, char *err);

/* plan_resolve, then plan_validate: a plan from any source made ready to estimate or run. */
int plan_prepare(struct plan *p, const struct model *m, const struct hw *h, char *err);

/* The rule on a split the user did not spell out (a launcher's; the tuner and validate, which
 * reproduce runs that used explicit splits, take the balanced default): Megatron-LM asserts
 * that pp*vpp divides the layers for the interleaved schedule (SCHED_F_EVEN_SPLIT), so a user
 * who wants uneven chunks gives stage_layers. */
int plan_validate_default_split(const struct plan *p, const struct model *m, char *err);

/* Micro-batches per pipeline per step: gbs / (dp * mbs). */
static inline int plan_microbatches(const struct plan *p) { return p->gbs / (p->dp * p->mbs); }
/* The separate accumulation pass runs: 16-bit gradients, held to the end of each backward, added
 * into the fp32 buffer after it (grad_accum_pass with fp32_grads, in a 16-bit precision). */
static inline int plan_accum_pass(const struct plan *p)
{
	return p->grad_accum_pass && p->fp32_grads && p->precision != PREC_FP32;
}
/* Model chunks per pipeline rank for the schedule: vpp for interleaved, 2 for zb-v, dualpipe
 * and dualpipev, else 1. */
int plan_chunks(const struct plan *p);
/* Number of pipeline stages (model pieces in pipeline order): pp * chunks, except dualpipe
 * whose two chunks per rank are two copies of pp stages (so pp stages). */
int plan_stages(const struct plan *p);

const char *schedule_name(enum schedule s);
int schedule_from_name(const char *name, enum schedule *s);
const char *recompute_name(enum recompute r);
/* A set of enum rc_module bits as its names, comma separated (core_attn,mla_up_proj,...) */
void recompute_modules_text(int mods, char *buf, size_t n);
const char *precision_name(enum precision pr);
const char *allocator_name(int a);
const char *fp8_impl_name(int f);

/* Help text listing every plan key, for the CLI verbs' --help. */
void plan_print_flags_help(FILE *f);

#endif
