/* export_nanotron — a plan as a nanotron YAML fragment (parallelism, tokens, optimizer, model
 * sections). Keys: src/nanotron/config/parallelism_config.py, config.py and models_config.py
 * (tests/frameworks/nanotron.txt). */
#include <stdio.h>
#include <string.h>
#include "tuner/export_impl.h"
#include "sim/model.h"

static int write_nanotron(struct out *o, const struct plan *p, const struct model *m, char *err)
{
	(void)err;
	FILE *f = o->f;
	export_comment(o, "nanotron config fragment (keys: src/nanotron/config/parallelism_config.py, config.py);");
	export_comment(o, "merge into a full config (general, checkpoints, data_stages, optimizer, ...)");
	fprintf(f, "parallelism:\n  dp: %d\n  tp: %d\n  pp: %d\n", p->dp, p->tp, p->pp);
	const struct sched_family *sf = sched_family(p->schedule);
	const char *engine = sf->fw_name[SCHED_FW_NANOTRON];
	if (!engine) {
		engine = sched_family(SCHED_1F1B)->fw_name[SCHED_FW_NANOTRON];
		if (p->pp > 1)
			export_noeq(o, "schedule %s%s; nanotron offers afab and 1f1b, 1f1b is written", schedule_name(p->schedule),
				    sf->flags & SCHED_F_VIRTUAL ? " (virtual pipeline stages)" : "");
	}
	fprintf(f, "  pp_engine: %s\n", engine);
	fprintf(f, "  tp_mode: %s\n", p->sp && p->tp > 1 ? "REDUCE_SCATTER" : "ALL_REDUCE");
	/* asynchronous TP linears need REDUCE_SCATTER mode in nanotron */
	fprintf(f, "  tp_linear_async_communication: %s\n", p->overlap_tp_comm && p->sp && p->tp > 1 ? "true" : "false");
	if (p->overlap_tp_comm && !p->sp && p->tp > 1)
		export_noeq(o, "TP communication overlap without SP; tp_linear_async_communication needs tp_mode REDUCE_SCATTER");
	/* SP: keep the column-parallel inputs sharded and gather them again in backward, or keep
	 * them gathered (ParallelismArgs.tp_recompute_allgather) */
	if (p->sp && p->tp > 1) fprintf(f, "  tp_recompute_allgather: %s\n", p->tp_regather ? "true" : "false");
	if (export_grad_applies(p) && p->zero <= 1 && !p->dp_host_copies)
		export_noeq(o, "ZeRO-%d syncs through flat buffers; nanotron's *_coalesced helpers copy every tensor on the host", p->zero);
	if (m->mlp == MLP_SWIGLU && !p->glu_eager)
		export_noeq(o, "fused SwiGLU; nanotron's GLUActivation runs act(gate) * up as two torch ops");
	/* nanotron's data parallelism is torch DDP, whose bucketed all-reduce always overlaps the
	 * backward; its ZeRO-1 gathers the parameters after the optimizer step, not overlapped */
	if (export_grad_applies(p) && !p->overlap_grad_reduce)
		export_noeq(o, "gradient reduction not overlapped; nanotron's DDP always overlaps it with the backward");
	if (export_gather_applies(p) && p->overlap_param_gather && p->zero <= 1)
		export_noeq(o, "parameter-gather overlap; nanotron's ZeRO-1 gathers after the optimizer step");
	/* its pipeline sends block (parallel/pipeline_parallel/p2p.py) */
	if (p->pp > 1 && p->overlap_p2p) export_noeq(o, "overlapped pipeline sends; nanotron's P2P is blocking");
	if (p->tp > 1 && !p->overlap_tp_comm && p->overlap_tp_bwd)
		export_noeq(o, "TP backward overlap alone; nanotron's asynchronous TP linears overlap both directions");
	fprintf(f, "  recompute_layer: %s\n", p->recompute == RC_FULL ? "true" : "false");
	fprintf(f, "  expert_parallel_size: %d\n", p->ep);
	fprintf(f, "  context_parallel_size: %d\n", p->cp);
	if (p->recompute == RC_SELECTIVE)
		export_noeq(o, "selective recompute; nanotron's flash attention already keeps no score matrix");
	if (p->recompute == RC_OP) export_noeq(o, "recompute op (torchtitan's per-op checkpointing); nanotron has none");
	if (p->recompute == RC_FULL && p->recompute_layers >= 0)
		export_noeq(o, "full recompute of only %d layers per stage; recompute_layer applies to every layer", p->recompute_layers);
	if (p->pp > 1 && !export_uniform_split(p)) {
		char buf[1024];
		export_split_text(p, buf, sizeof(buf));
		export_noeq(o, "layer split %s; nanotron places layers itself", buf);
	}
	if (p->ep > 1) export_comment(o, "EP here is carved out of dp*cp (expert parallel folding)");
	if (p->etp > 0 && p->etp != p->tp) export_noeq(o, "expert tensor parallelism %d beside attention tp %d (MoE parallel folding)", p->etp, p->tp);
	fprintf(f, "tokens:\n  micro_batch_size: %d\n  batch_accumulation_per_replica: %d\n  sequence_length: %d\n",
		p->mbs, plan_microbatches(p), p->seq);
	int zs = p->zero > 1 ? 1 : p->zero;
	if (p->zero > 1) export_noeq(o, "ZeRO-%d; nanotron's zero_stage is 0 or 1, 1 is written", p->zero);
	fprintf(f, "optimizer:\n  zero_stage: %d\n", zs);
	fprintf(f, "model:\n  dtype: %s\n", p->precision == PREC_FP32 ? "float32" : "bfloat16");
	if (p->precision == PREC_FP8 || p->precision == PREC_FP16)
		export_noeq(o, "%s precision; bfloat16 is written", precision_name(p->precision));
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
	if (strcmp(p->order, "tp-cp-dp-pp")) export_noeq(o, "rank order %s", p->order);
	return 0;
}

const struct export_method export_nanotron_method = {"nanotron", "#", write_nanotron, 0, 1, 0, 0};
