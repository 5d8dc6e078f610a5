/* export — plan to Megatron-LM / nanotron / torchtitan / DeepSpeed settings. Every flag and key
 * name below is from reference/ecosystem.md §3 (which cites each framework's source files). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tuner/export.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"

struct out {
	FILE *f;             /* flags / keys (Megatron: a buffer printed after the comments) */
	FILE *notes;         /* comment lines */
	const char *comment; /* "#" or "//" */
	int nnotes;
};

static const char *const format_names[] = {"megatron", "nanotron", "torchtitan", "deepspeed"};

int export_format_from_name(const char *name, enum export_format *fmt)
{
	for (int i = 0; i <= EXPORT_DEEPSPEED; i++)
		if (!strcmp(name, format_names[i])) { *fmt = (enum export_format)i; return 0; }
	return -1;
}

const char *export_format_name(enum export_format fmt)
{
	return fmt <= EXPORT_DEEPSPEED ? format_names[fmt] : "?";
}

static void comment(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void comment(struct out *o, const char *fmt, ...)
{
	va_list ap;
	fprintf(o->notes, "%s ", o->comment);
	va_start(ap, fmt);
	vfprintf(o->notes, fmt, ap);
	va_end(ap);
	fputc('\n', o->notes);
}

/* A plan feature the framework cannot express. */
static void noeq(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void noeq(struct out *o, const char *fmt, ...)
{
	va_list ap;
	fprintf(o->notes, "%s no equivalent: ", o->comment);
	va_start(ap, fmt);
	vfprintf(o->notes, fmt, ap);
	va_end(ap);
	fputc('\n', o->notes);
	o->nnotes++;
}

/* Do all pipeline stages hold the same number of layers? */
static int uniform_split(const struct plan *p)
{
	for (int i = 1; i < p->nstage_layers; i++)
		if (p->stage_layers[i] != p->stage_layers[0]) return 0;
	return 1;
}

static int accumulation(const struct plan *p) { return plan_microbatches(p); }

static void split_text(const struct plan *p, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i < p->nstage_layers && n + 12 < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%d", i ? "," : "", p->stage_layers[i]);
}

/* ---- Megatron-LM ---- */

static void flag(struct out *o, const char *name, long v) { fprintf(o->f, "%s %ld \\\n", name, v); }
static void flag0(struct out *o, const char *name) { fprintf(o->f, "%s \\\n", name); }

static void megatron_model(struct out *o, const struct model *m, const struct plan *p)
{
	flag(o, "--num-layers", m->layers);
	flag(o, "--hidden-size", m->hidden);
	if (m->ffn_hidden) flag(o, "--ffn-hidden-size", m->ffn_hidden);
	flag(o, "--num-attention-heads", m->heads);
	if (m->kv_heads != m->heads) {
		flag0(o, "--group-query-attention");
		flag(o, "--num-query-groups", m->kv_heads);
	}
	if (m->head_dim * m->heads != m->hidden) flag(o, "--kv-channels", m->head_dim);
	flag(o, "--max-position-embeddings", m->max_pos > p->seq ? m->max_pos : p->seq);
	if (m->pos_emb) {
		fprintf(o->f, "--position-embedding-type learned_absolute \\\n");
	} else {
		fprintf(o->f, "--position-embedding-type rope \\\n");
		fprintf(o->f, "--rotary-base %.0f \\\n", m->rope_theta);
	}
	if (m->mlp == MLP_SWIGLU) flag0(o, "--swiglu");
	if (m->norm == NORM_RMS) fprintf(o->f, "--normalization RMSNorm \\\n");
	if (!m->tied) flag0(o, "--untie-embeddings-and-output-weights");
	if (m->qkv_bias) flag0(o, "--add-qkv-bias");
	if (m->norm == NORM_RMS) flag0(o, "--disable-bias-linear");
	flag(o, "--vocab-size", m->vocab);
	if (m->kv_lora_rank) {
		flag0(o, "--multi-latent-attention");
		if (m->q_lora_rank) flag(o, "--q-lora-rank", m->q_lora_rank);
		flag(o, "--kv-lora-rank", m->kv_lora_rank);
		flag(o, "--qk-head-dim", m->qk_nope_head_dim);
		flag(o, "--qk-pos-emb-head-dim", m->qk_rope_head_dim);
		flag(o, "--v-head-dim", m->v_head_dim);
	}
	if (model_is_moe(m)) {
		flag(o, "--num-experts", m->moe_experts);
		flag(o, "--moe-router-topk", m->moe_topk);
		flag(o, "--moe-ffn-hidden-size", m->moe_ffn_hidden);
		if (m->moe_shared_experts)
			flag(o, "--moe-shared-expert-intermediate-size", (long)m->moe_shared_experts * m->moe_ffn_hidden);
		if (m->moe_dense_layers)
			fprintf(o->f, "--moe-layer-freq \"([0]*%d+[1]*%d)\" \\\n", m->moe_dense_layers,
				m->layers - m->moe_dense_layers);
		flag0(o, "--moe-grouped-gemm");
		fprintf(o->f, "--moe-token-dispatcher-type alltoall \\\n");
	}
}

/* Megatron's layout string: E embedding, t transformer layer, L loss; '|' between stages. */
static void megatron_layout(struct out *o, const struct plan *p)
{
	fprintf(o->f, "--pipeline-model-parallel-layout \"");
	for (int s = 0; s < p->nstage_layers; s++) {
		if (s) fputc('|', o->f);
		if (s == 0) fputc('E', o->f);
		for (int l = 0; l < p->stage_layers[s]; l++) fputc('t', o->f);
		if (s == p->nstage_layers - 1) fputc('L', o->f);
	}
	fprintf(o->f, "\" \\\n");
}

static void megatron_pipeline(struct out *o, const struct plan *p)
{
	flag(o, "--pipeline-model-parallel-size", p->pp);
	if (p->pp == 1) return;
	int uniform = uniform_split(p);
	if (p->schedule == SCHED_INTERLEAVED) {
		if (uniform) flag(o, "--num-layers-per-virtual-pipeline-stage", p->stage_layers[0]);
		else megatron_layout(o, p);
	} else if (!uniform) {
		int mid_uniform = 1;
		for (int i = 2; i < p->pp - 1; i++)
			if (p->stage_layers[i] != p->stage_layers[1]) mid_uniform = 0;
		if (mid_uniform && p->pp > 2) {
			flag(o, "--decoder-first-pipeline-num-layers", p->stage_layers[0]);
			flag(o, "--decoder-last-pipeline-num-layers", p->stage_layers[p->pp - 1]);
		} else {
			megatron_layout(o, p);
		}
	}
	switch (p->schedule) {
	case SCHED_AFAB:
		noeq(o, "schedule afab (GPipe); Megatron-LM runs 1F1B (same bubble, less activation memory)");
		break;
	case SCHED_ZBH1: case SCHED_ZBH2: case SCHED_ZBV:
		noeq(o, "schedule %s (zero-bubble); Megatron-LM's pretrain_gpt.py has no flag for it, 1F1B runs instead",
		     schedule_name(p->schedule));
		break;
	case SCHED_DUALPIPE: case SCHED_DUALPIPEV:
		noeq(o, "schedule %s; Megatron-LM has no flag for it, 1F1B runs instead", schedule_name(p->schedule));
		break;
	default:
		break;
	}
}

static void export_megatron(struct out *o, const struct plan *p, const struct model *m)
{
	comment(o, "Megatron-LM pretrain_gpt.py arguments (flag names: megatron/training/arguments.py)");
	comment(o, "launch on %d GPUs; data-parallel size %d is derived as WORLD_SIZE / (TP*PP*CP)", p->gpus, p->dp);
	flag(o, "--tensor-model-parallel-size", p->tp);
	megatron_pipeline(o, p);
	if (p->cp > 1) flag(o, "--context-parallel-size", p->cp);
	if (p->ep > 1) flag(o, "--expert-model-parallel-size", p->ep);
	if (p->ep > 1 || (p->etp > 0 && p->etp != p->tp)) flag(o, "--expert-tensor-parallel-size", p->etp > 0 ? p->etp : p->tp);
	if (p->sp && p->tp > 1) flag0(o, "--sequence-parallel");
	switch (p->zero) {
	case 1: flag0(o, "--use-distributed-optimizer"); break;
	case 2:
		flag0(o, "--use-megatron-fsdp");
		fprintf(o->f, "--data-parallel-sharding-strategy optim_grads \\\n");
		break;
	case 3:
		flag0(o, "--use-megatron-fsdp");
		fprintf(o->f, "--data-parallel-sharding-strategy optim_grads_params \\\n");
		break;
	default: break;
	}
	if (p->overlap_grad_reduce && (long)p->dp * p->cp > 1) flag0(o, "--overlap-grad-reduce");
	if (p->overlap_param_gather && p->zero >= 1 && (long)p->dp * p->cp > 1) flag0(o, "--overlap-param-gather");
	if (p->overlap_tp_comm && p->tp > 1) flag0(o, "--tp-comm-overlap");
	if (p->flash_attn) flag0(o, "--use-flash-attn");
	if (p->recompute == RC_OP)
		noeq(o, "recompute op (torchtitan's per-op checkpointing); selective (attention core) is written");
	if (p->recompute == RC_SELECTIVE || p->recompute == RC_OP) {
		fprintf(o->f, "--recompute-granularity selective \\\n");
	} else if (p->recompute == RC_FULL) {
		fprintf(o->f, "--recompute-granularity full \\\n");
		if (p->recompute_layers < 0) {
			fprintf(o->f, "--recompute-method uniform \\\n");
			flag(o, "--recompute-num-layers", 1);
		} else {
			/* block: the first N layers of each pipeline stage are recomputed */
			fprintf(o->f, "--recompute-method block \\\n");
			flag(o, "--recompute-num-layers", p->recompute_layers);
		}
	}
	flag(o, "--micro-batch-size", p->mbs);
	flag(o, "--global-batch-size", p->gbs);
	flag(o, "--seq-length", p->seq);
	if (m) megatron_model(o, m, p);
	if (p->precision == PREC_FP8) {
		flag0(o, "--bf16");
		fprintf(o->f, "--fp8-format hybrid \\\n--fp8-amax-history-len 1024 \\\n--fp8-amax-compute-algo max \\\n");
	} else if (p->precision == PREC_BF16) {
		flag0(o, "--bf16");
	} else if (p->precision == PREC_FP16) {
		flag0(o, "--fp16"); /* dynamic loss scaling unless --loss-scale is given */
	}
	if (!p->fp32_grads && p->precision != PREC_FP32)
		noeq(o, "fp32_grads off; Megatron-LM keeps fp32 main gradients with --bf16 and --fp16");
	if (strcmp(p->order, "tp-cp-dp-pp"))
		noeq(o, "rank order %s; Megatron-LM's order is tp-cp-ep-dp-pp", p->order);
}

/* Comments first: a comment line inside a backslash-continued command would end it. */
static int megatron_to(struct out *o, const struct plan *p, const struct model *m, char *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem) return errf(err, "export: out of memory");
	FILE *out = o->f;
	o->f = mem;
	export_megatron(o, p, m);
	fclose(mem);
	o->f = out;
	if (len >= 3 && !strcmp(buf + len - 3, " \\\n")) /* the last flag ends the command */
		strcpy(buf + len - 3, "\n");
	fputs(buf, out);
	free(buf);
	return 0;
}

/* ---- nanotron ---- */

static void export_nanotron(struct out *o, const struct plan *p, const struct model *m)
{
	FILE *f = o->f;
	comment(o, "nanotron config fragment (keys: src/nanotron/config/parallelism_config.py, config.py);");
	comment(o, "merge into a full config (general, checkpoints, data_stages, optimizer, ...)");
	fprintf(f, "parallelism:\n  dp: %d\n  tp: %d\n  pp: %d\n", p->dp, p->tp, p->pp);
	const char *engine = "1f1b";
	if (p->schedule == SCHED_AFAB) engine = "afab";
	else if (p->pp > 1 && p->schedule != SCHED_1F1B)
		noeq(o, "schedule %s%s; nanotron offers afab and 1f1b, 1f1b is written", schedule_name(p->schedule),
		     p->schedule == SCHED_INTERLEAVED ? " (virtual pipeline stages)" : "");
	fprintf(f, "  pp_engine: %s\n", engine);
	fprintf(f, "  tp_mode: %s\n", p->sp && p->tp > 1 ? "REDUCE_SCATTER" : "ALL_REDUCE");
	/* asynchronous TP linears need REDUCE_SCATTER mode in nanotron */
	fprintf(f, "  tp_linear_async_communication: %s\n", p->overlap_tp_comm && p->sp && p->tp > 1 ? "true" : "false");
	fprintf(f, "  recompute_layer: %s\n", p->recompute == RC_FULL ? "true" : "false");
	fprintf(f, "  expert_parallel_size: %d\n", p->ep);
	fprintf(f, "  context_parallel_size: %d\n", p->cp);
	if (p->recompute == RC_SELECTIVE)
		noeq(o, "selective recompute; nanotron's flash attention already keeps no score matrix");
	if (p->recompute == RC_OP) noeq(o, "recompute op (torchtitan's per-op checkpointing); nanotron has none");
	if (p->recompute == RC_FULL && p->recompute_layers >= 0)
		noeq(o, "full recompute of only %d layers per stage; recompute_layer applies to every layer", p->recompute_layers);
	if (p->pp > 1 && !uniform_split(p)) {
		char buf[1024];
		split_text(p, buf, sizeof(buf));
		noeq(o, "layer split %s; nanotron places layers itself", buf);
	}
	if (p->ep > 1) comment(o, "EP here is carved out of dp*cp (expert parallel folding)");
	if (p->etp > 0 && p->etp != p->tp) noeq(o, "expert tensor parallelism %d beside attention tp %d (MoE parallel folding)", p->etp, p->tp);
	fprintf(f, "tokens:\n  micro_batch_size: %d\n  batch_accumulation_per_replica: %d\n  sequence_length: %d\n",
		p->mbs, accumulation(p), p->seq);
	int zs = p->zero > 1 ? 1 : p->zero;
	if (p->zero > 1) noeq(o, "ZeRO-%d; nanotron's zero_stage is 0 or 1, 1 is written", p->zero);
	fprintf(f, "optimizer:\n  zero_stage: %d\n", zs);
	fprintf(f, "model:\n  dtype: %s\n", p->precision == PREC_FP32 ? "float32" : "bfloat16");
	if (p->precision == PREC_FP8 || p->precision == PREC_FP16)
		noeq(o, "%s precision; bfloat16 is written", precision_name(p->precision));
	if (m) {
		fprintf(f, "  model_config:\n    num_hidden_layers: %d\n    hidden_size: %d\n    intermediate_size: %d\n"
			"    num_attention_heads: %d\n    num_key_value_heads: %d\n    vocab_size: %d\n"
			"    max_position_embeddings: %d\n    rope_theta: %.1f\n    rms_norm_eps: %g\n"
			"    tie_word_embeddings: %s\n",
			m->layers, m->hidden, m->ffn_hidden, m->heads, m->kv_heads, m->vocab,
			m->max_pos > p->seq ? m->max_pos : p->seq, m->rope_theta, m->norm_eps, m->tied ? "true" : "false");
		if (model_is_moe(m))
			fprintf(f, "    moe_config:\n      num_experts: %d\n      top_k: %d\n      enable_shared_expert: %s\n",
				m->moe_experts, m->moe_topk, m->moe_shared_experts ? "true" : "false");
	}
	if (strcmp(p->order, "tp-cp-dp-pp")) noeq(o, "rank order %s", p->order);
}

/* ---- torchtitan ---- */

struct tt_parallel {
	int replicate, shard;
	const char *reshard;   /* fsdp_reshard_after_forward */
	const char *schedule;  /* NULL: not pipelined */
	const char *ac_mode;
	int ac_every;          /* selective_ac_option as "every n-th layer"; 0 = "op" */
};

static void torchtitan_choose(struct out *o, const struct plan *p, struct tt_parallel *t)
{
	t->replicate = p->zero == 0 ? p->dp : 1;
	t->shard = p->zero == 0 ? 1 : p->dp;
	t->reshard = p->zero == 3 ? "default" : "never";
	if (p->zero == 1 && p->dp > 1)
		noeq(o, "ZeRO-1; nearest is FSDP without resharding after forward (ZeRO-2-like), written");
	static const char *const names[SCHED_COUNT] = {
		[SCHED_AFAB] = "GPipe", [SCHED_1F1B] = "1F1B", [SCHED_INTERLEAVED] = "Interleaved1F1B",
		[SCHED_ZBV] = "ZBVZeroBubble", [SCHED_DUALPIPEV] = "DualPipeV"};
	t->schedule = p->pp > 1 ? names[p->schedule] : NULL;
	if (p->pp > 1 && !t->schedule) {
		t->schedule = p->schedule == SCHED_DUALPIPE ? "DualPipeV" : "1F1B";
		noeq(o, "schedule %s; %s is written", schedule_name(p->schedule), t->schedule);
	}
	t->ac_every = 0;
	t->ac_mode = p->recompute == RC_NONE ? "none" : p->recompute == RC_FULL ? "full" : "selective";
	if (p->recompute == RC_SELECTIVE)
		noeq(o, "selective recompute of the attention core; torchtitan's per-op checkpointing (op) is written");
	if (p->recompute == RC_FULL && p->recompute_layers >= 0) {
		int per = p->stage_layers[0] > 0 ? p->stage_layers[0] : 1;
		int k = p->recompute_layers > 0 ? p->recompute_layers : 1;
		t->ac_mode = "selective";
		t->ac_every = (per + k - 1) / k;
		noeq(o, "full recompute of %d layers per stage; selective_ac_option %d (every %d-th layer) is nearest",
		     p->recompute_layers, t->ac_every, t->ac_every);
	}
}

static void export_torchtitan(struct out *o, const struct plan *p, const struct model *m)
{
	FILE *f = o->f;
	struct tt_parallel t;
	(void)m;
	comment(o, "torchtitan v0.2.x TOML fragment (keys: torchtitan/config/job_config.py @v0.2.2)");
	torchtitan_choose(o, p, &t);
	if (p->tp > 1 && !p->sp)
		noeq(o, "TP without SP; torchtitan's tensor parallel always shards norms along the sequence");
	if (p->pp > 1 && !uniform_split(p)) {
		char buf[1024];
		split_text(p, buf, sizeof(buf));
		noeq(o, "uneven layer split %s; pipeline_parallel_layers_per_stage needs one count", buf);
	}
	if (p->precision == PREC_FP8) noeq(o, "fp8 here; enable torchtitan's float8 converter separately");
	if (p->precision == PREC_FP16) noeq(o, "fp16 here; torchtitan has no loss scaler, bfloat16 is written");
	if (strcmp(p->order, "tp-cp-dp-pp")) noeq(o, "rank order %s; torchtitan builds its own device mesh", p->order);
	fprintf(f, "[parallelism]\n");
	fprintf(f, "data_parallel_replicate_degree = %d\n", t.replicate);
	fprintf(f, "data_parallel_shard_degree = %d\n", t.shard);
	fprintf(f, "fsdp_reshard_after_forward = \"%s\"\n", t.reshard);
	fprintf(f, "tensor_parallel_degree = %d\n", p->tp);
	fprintf(f, "enable_async_tensor_parallel = %s\n", p->overlap_tp_comm && p->tp > 1 ? "true" : "false");
	fprintf(f, "pipeline_parallel_degree = %d\n", p->pp);
	if (t.schedule) {
		fprintf(f, "pipeline_parallel_schedule = \"%s\"\n", t.schedule);
		fprintf(f, "pipeline_parallel_microbatch_size = %d\n", p->mbs);
		if (uniform_split(p))
			fprintf(f, "pipeline_parallel_layers_per_stage = %d\n", p->stage_layers[0]);
	}
	fprintf(f, "context_parallel_degree = %d\n", p->cp);
	fprintf(f, "expert_parallel_degree = %d\n", p->ep);
	if (p->etp > 0 && p->etp != p->tp) noeq(o, "expert tensor parallelism %d beside attention tp %d (MoE parallel folding)", p->etp, p->tp);
	fprintf(f, "\n[training]\n");
	/* with PP the local batch is split into micro-batches; without, gradient accumulation
	 * makes up global_batch_size / (local_batch_size * dp) steps */
	fprintf(f, "local_batch_size = %d\n", p->pp > 1 ? p->gbs / p->dp : p->mbs);
	fprintf(f, "global_batch_size = %d\n", p->gbs);
	fprintf(f, "seq_len = %d\n", p->seq);
	fprintf(f, "mixed_precision_param = \"%s\"\n", p->precision == PREC_FP32 ? "float32" : "bfloat16");
	fprintf(f, "\n[activation_checkpoint]\nmode = \"%s\"\n", t.ac_mode);
	if (!strcmp(t.ac_mode, "selective")) {
		if (t.ac_every) fprintf(f, "selective_ac_option = \"%d\"\n", t.ac_every);
		else fprintf(f, "selective_ac_option = \"op\"\n");
	}
	comment(o, "torchtitan main (TOML removed): --parallelism.data_parallel_replicate_degree %d"
		" --parallelism.data_parallel_shard_degree %d --parallelism.tensor_parallel_degree %d"
		" --parallelism.pipeline_parallel_degree %d --parallelism.context_parallel_degree %d"
		" --parallelism.expert_parallel_degree %d --training.global_batch_size %d --training.seq_len %d",
		t.replicate, t.shard, p->tp, p->pp, p->cp, p->ep, p->gbs, p->seq);
}

/* ---- DeepSpeed ---- */

static void export_deepspeed(struct out *o, const struct plan *p, const struct model *m)
{
	FILE *f = o->f;
	(void)m;
	comment(o, "DeepSpeed config (keys: docs/_pages/config-json.md); comment lines are hjson, which");
	comment(o, "DeepSpeed's config loader accepts; strip them for strict JSON tools");
	if (p->pp > 1) {
		comment(o, "pipeline: set in code, PipelineModule(num_stages=%d); DeepSpeed's engine runs 1F1B", p->pp);
		if (p->schedule != SCHED_1F1B)
			noeq(o, "schedule %s; DeepSpeed's pipeline engine runs 1F1B", schedule_name(p->schedule));
		if (p->zero > 1) noeq(o, "ZeRO-%d with pipeline parallelism; DeepSpeed allows stage <= 1 with PP", p->zero);
	}
	if (p->cp > 1) noeq(o, "context parallelism %d (ring/all-gather attention); DeepSpeed-Ulysses is set in code", p->cp);
	if (p->ep > 1) comment(o, "expert parallelism: set in code, deepspeed.moe.layer.MoE(ep_size=%d)", p->ep);
	if (p->sp && p->tp > 1) noeq(o, "Megatron-style sequence parallelism inside TP");
	if (p->recompute == RC_SELECTIVE) noeq(o, "selective recompute (attention only)");
	if (p->recompute == RC_OP) noeq(o, "recompute op (torchtitan's per-op checkpointing)");
	if (p->recompute == RC_FULL)
		comment(o, "recompute: wrap %s layers in deepspeed.checkpointing.checkpoint in model code",
			p->recompute_layers < 0 ? "all" : "the chosen");
	if (p->precision == PREC_FP8) noeq(o, "fp8 (Transformer Engine is configured in model code)");
	if (strcmp(p->order, "tp-cp-dp-pp")) noeq(o, "rank order %s", p->order);
	fprintf(f, "{\n");
	fprintf(f, "  \"train_batch_size\": %d,\n", p->gbs);
	fprintf(f, "  \"train_micro_batch_size_per_gpu\": %d,\n", p->mbs);
	fprintf(f, "  \"gradient_accumulation_steps\": %d,\n", accumulation(p));
	if (p->precision == PREC_FP16) /* loss_scale 0: dynamic */
		fprintf(f, "  \"fp16\": {\"enabled\": true, \"loss_scale\": 0},\n");
	else if (p->precision != PREC_FP32)
		fprintf(f, "  \"bf16\": {\"enabled\": true},\n");
	fprintf(f, "  \"zero_optimization\": {\n    \"stage\": %d,\n    \"overlap_comm\": %s,\n"
		"    \"contiguous_gradients\": true,\n    \"reduce_scatter\": true\n  }",
		p->zero, p->overlap_grad_reduce ? "true" : "false");
	if (p->recompute == RC_FULL)
		fprintf(f, ",\n  \"activation_checkpointing\": {\"partition_activations\": %s, \"contiguous_memory_optimization\": false, \"cpu_checkpointing\": false}",
			p->tp > 1 ? "true" : "false");
	if (p->tp > 1) fprintf(f, ",\n  \"tensor_parallel\": {\"autotp_size\": %d}", p->tp);
	fprintf(f, "\n}\n");
}

int export_plan(const struct plan *p, const struct model *m, enum export_format fmt, FILE *f, char *err)
{
	if (p->dp < 1 || p->gbs < 1 || p->nstage_layers < 1)
		return errf(err, "export: the plan is not resolved (dp %d, gbs %d, %d stages)", p->dp, p->gbs, p->nstage_layers);
	struct out o = {f, f, fmt == EXPORT_DEEPSPEED ? "//" : "#", 0};
	switch (fmt) {
	case EXPORT_MEGATRON:
		if (megatron_to(&o, p, m, err)) return -1;
		break;
	case EXPORT_NANOTRON: export_nanotron(&o, p, m); break;
	case EXPORT_TORCHTITAN: export_torchtitan(&o, p, m); break;
	case EXPORT_DEEPSPEED: export_deepspeed(&o, p, m); break;
	default: return errf(err, "export: unknown format %d", (int)fmt);
	}
	return o.nnotes;
}
