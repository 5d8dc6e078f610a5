/* export_megatron — a plan as Megatron-LM pretrain_gpt.py arguments: comments first (a comment
 * inside a backslash-continued command would end it), then one flag per line. Names:
 * megatron/training/arguments.py and the config dataclasses it turns into flags
 * (tests/frameworks/megatron.txt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tuner/export_impl.h"
#include "sim/model.h"
#include "sim/util.h"

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
	int uniform = export_uniform_split(p);
	const struct sched_family *f = sched_family(p->schedule);
	if (f->flags & SCHED_F_VIRTUAL) {
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
	if (f->fw_name[SCHED_FW_MEGATRON]) return;
	if (f->flags & SCHED_F_DOMINATED)
		export_noeq(o, "schedule %s (%s); Megatron-LM runs 1F1B (same bubble, less activation memory)", f->name, f->paper);
	else if (f->paper)
		export_noeq(o, "schedule %s (%s); Megatron-LM's pretrain_gpt.py has no flag for it, 1F1B runs instead",
			    f->name, f->paper);
	else
		export_noeq(o, "schedule %s; Megatron-LM has no flag for it, 1F1B runs instead", f->name);
}

/* The overlap switches as the estimate priced them. Megatron accepts --overlap-param-gather
 * only with --overlap-grad-reduce and a distributed optimizer or Megatron-FSDP, and
 * --tp-comm-overlap only with sequence parallelism (arguments.py). */
static void megatron_overlap(struct out *o, const struct plan *p)
{
	int grad = p->overlap_grad_reduce && export_grad_applies(p), gather = p->overlap_param_gather && export_gather_applies(p);
	if (grad) flag0(o, "--overlap-grad-reduce");
	if (gather && grad) flag0(o, "--overlap-param-gather");
	else if (gather) export_noeq(o, "parameter-gather overlap without gradient-reduction overlap; Megatron-LM needs both, neither is written");
	if (p->overlap_tp_comm && p->tp > 1) {
		if (p->sp) flag0(o, "--tp-comm-overlap");
		else export_noeq(o, "TP communication overlap without sequence parallelism; --tp-comm-overlap needs --sequence-parallel");
	}
	/* the interleaved schedule overlaps its sends unless told not to; Megatron forces the
	 * other schedules' sends to block (arguments.py) */
	int chunked = !!(sched_family(p->schedule)->flags & SCHED_F_VIRTUAL);
	if (chunked && !p->overlap_p2p) flag0(o, "--no-overlap-p2p-communication");
	if (p->pp > 1 && !chunked && p->overlap_p2p)
		export_noeq(o, "overlapped pipeline sends with %s; Megatron-LM overlaps them only in the interleaved schedule",
			    schedule_name(p->schedule));
	/* the asynchronous TP backward all-reduce is always on (async_tensor_model_parallel_allreduce) */
	if (p->tp > 1 && !p->overlap_tp_comm && !p->overlap_tp_bwd)
		export_noeq(o, "TP backward collectives not overlapped; Megatron-LM always runs them under the weight-gradient GEMMs");
}

static void export_megatron(struct out *o, const struct plan *p, const struct model *m)
{
	export_comment(o, "Megatron-LM pretrain_gpt.py arguments (flag names: megatron/training/arguments.py)");
	export_comment(o, "launch on %d GPUs; data-parallel size %d is derived as WORLD_SIZE / (TP*PP*CP)", p->gpus, p->dp);
	/* arguments.py: TP or CP on Hopper and before needs CUDA_DEVICE_MAX_CONNECTIONS=1, and
	 * Megatron-FSDP must not have it set to 1 */
	if (p->zero >= 2) export_comment(o, "environment: leave CUDA_DEVICE_MAX_CONNECTIONS unset (Megatron-FSDP)");
	else if (p->tp > 1 || p->cp > 1) export_comment(o, "environment: CUDA_DEVICE_MAX_CONNECTIONS=1 (TP/CP before Blackwell)");
	flag(o, "--tensor-model-parallel-size", p->tp);
	megatron_pipeline(o, p);
	if (p->cp > 1) flag(o, "--context-parallel-size", p->cp);
	if (p->ep > 1) flag(o, "--expert-model-parallel-size", p->ep);
	if (p->ep > 1 || (p->etp > 0 && p->etp != p->tp)) flag(o, "--expert-tensor-parallel-size", p->etp > 0 ? p->etp : p->tp);
	if (p->sp && p->tp > 1) flag0(o, "--sequence-parallel");
	/* Megatron's MLP without the fused kernel runs the swiglu as torch ops (glu in
	 * transformer/mlp.py), keeping act(gate) as the estimate's glu_eager does */
	if (m->mlp == MLP_SWIGLU && p->glu_eager) flag0(o, "--no-bias-swiglu-fusion");
	/* the attention kernel the estimate priced: cuDNN's fused attention, or flash-attn (TE's
	 * AttnBackend choices; auto picks cuDNN on Hopper) */
	fprintf(o->f, "--attention-backend %s \\\n", !p->flash_attn ? "unfused" : p->attn_cudnn ? "fused" : "flash");
	if (export_grad_applies(p) && p->zero <= 1 && p->dp_host_copies)
		export_noeq(o, "gradient syncs copied tensor by tensor on the host; Megatron-LM reduces its contiguous buffers");
	if (p->sp && p->tp > 1 && !p->tp_regather)
		export_noeq(o, "SP keeping the gathered inputs of the column-parallel layers; Megatron-LM always gathers them again in backward");
	switch (p->zero) {
	case 1: flag0(o, "--use-distributed-optimizer"); break;
	case 2: case 3:
		/* Megatron-FSDP asserts its checkpoint format (arguments.py: "Megatron-FSDP requires the
		 * `fsdp_dtensor` checkpointing format") */
		flag0(o, "--use-megatron-fsdp");
		fprintf(o->f, "--data-parallel-sharding-strategy %s \\\n", p->zero == 2 ? "optim_grads" : "optim_grads_params");
		fprintf(o->f, "--ckpt-format fsdp_dtensor \\\n");
		break;
	default: break;
	}
	megatron_overlap(o, p);
	if (p->flash_attn) flag0(o, "--use-flash-attn");
	if (p->recompute == RC_OP)
		export_noeq(o, "recompute op (torchtitan's per-op checkpointing); selective (attention core) is written");
	if (p->recompute == RC_SELECTIVE || p->recompute == RC_OP) {
		fprintf(o->f, "--recompute-granularity selective \\\n");
		if (p->recompute == RC_SELECTIVE && p->recompute_modules != RCM_CORE_ATTN) {
			/* Megatron-Core's list, space separated (arguments.py: nargs='*') */
			char v[160];
			recompute_modules_text(p->recompute_modules, v, sizeof(v));
			for (char *c = v; *c; c++)
				if (*c == ',') *c = ' ';
			fprintf(o->f, "--recompute-modules %s \\\n", v);
		}
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
		export_noeq(o, "fp32_grads off; Megatron-LM keeps fp32 main gradients with --bf16 and --fp16");
	/* gradient accumulation fusion (the wgrad GEMM adds into main_grad) is on by default */
	if (plan_accum_pass(p)) flag0(o, "--no-gradient-accumulation-fusion");
	/* Megatron's default order is tp-cp-ep-dp-pp; --use-tp-pp-dp-mapping gives tp-cp-ep-pp-dp
	 * (initialize.py), EP folded inside dp·cp as here */
	if (!strcmp(p->order, "tp-cp-pp-dp")) flag0(o, "--use-tp-pp-dp-mapping");
	else if (strcmp(p->order, "tp-cp-dp-pp"))
		export_noeq(o, "rank order %s; Megatron-LM orders tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp with --use-tp-pp-dp-mapping",
			    p->order);
}

/* Comments first: a comment line inside a backslash-continued command would end it. */
static int write_megatron(struct out *o, const struct plan *p, const struct model *m, char *err)
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

const struct export_method export_megatron_method = {"megatron", "#", write_megatron, 0, 1, 0, 0};
