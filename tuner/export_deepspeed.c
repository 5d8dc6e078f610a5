/* export_deepspeed — a plan as a DeepSpeed config (hjson: "//" comment lines, which DeepSpeed's
 * loader accepts, then the JSON object as cJSON indents it). Keys: docs/_pages/config-json.md (tests/frameworks/deepspeed.txt). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include "reports/json_out.h"
#include "sim/util.h"
#include "tuner/export_impl.h"

static int write_deepspeed(struct out *o, const struct plan *p, const struct model *m, char *err)
{
	FILE *f = o->f;
	(void)m;
	export_comment(o, "DeepSpeed config (keys: docs/_pages/config-json.md); comment lines are hjson, which");
	export_comment(o, "DeepSpeed's config loader accepts; strip them for strict JSON tools");
	if (p->pp > 1) {
		export_comment(o, "pipeline: set in code, PipelineModule(num_stages=%d); DeepSpeed's engine runs 1F1B", p->pp);
		if (!sched_family(p->schedule)->fw_name[SCHED_FW_DEEPSPEED])
			export_noeq(o, "schedule %s; DeepSpeed's pipeline engine runs 1F1B", schedule_name(p->schedule));
		if (p->zero > 1) export_noeq(o, "ZeRO-%d with pipeline parallelism; DeepSpeed allows stage <= 1 with PP", p->zero);
	}
	if (p->cp > 1) export_noeq(o, "context parallelism %d (ring/all-gather attention); DeepSpeed-Ulysses is set in code", p->cp);
	if (p->ep > 1) export_comment(o, "expert parallelism: set in code, deepspeed.moe.layer.MoE(ep_size=%d)", p->ep);
	if (p->sp && p->tp > 1) export_noeq(o, "Megatron-style sequence parallelism inside TP");
	if (p->recompute == RC_SELECTIVE) export_noeq(o, "selective recompute (attention only)");
	if (p->recompute == RC_OP) export_noeq(o, "recompute op (torchtitan's per-op checkpointing)");
	if (p->recompute == RC_FULL)
		export_comment(o, "recompute: wrap %s layers in deepspeed.checkpointing.checkpoint in model code",
			p->recompute_layers < 0 ? "all" : "the chosen");
	if (p->precision == PREC_FP8) export_noeq(o, "fp8 (Transformer Engine is configured in model code)");
	if (strcmp(p->order, "tp-cp-dp-pp")) export_noeq(o, "rank order %s", p->order);
	if (p->pp > 1 && p->overlap_p2p) export_noeq(o, "overlapped pipeline sends; DeepSpeed's pipeline engine sends blocking");
	if (export_gather_applies(p) && p->overlap_param_gather && p->zero <= 2)
		export_noeq(o, "parameter-gather overlap with ZeRO-%d; DeepSpeed gathers after the optimizer step", p->zero);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "train_batch_size", p->gbs);
	cJSON_AddNumberToObject(d, "train_micro_batch_size_per_gpu", p->mbs);
	cJSON_AddNumberToObject(d, "gradient_accumulation_steps", plan_microbatches(p));
	if (p->precision == PREC_FP16) { /* loss_scale 0: dynamic */
		cJSON *x = cJSON_AddObjectToObject(d, "fp16");
		cJSON_AddTrueToObject(x, "enabled");
		cJSON_AddNumberToObject(x, "loss_scale", 0);
	} else if (p->precision != PREC_FP32) {
		cJSON_AddTrueToObject(cJSON_AddObjectToObject(d, "bf16"), "enabled");
	}
	/* overlap_comm overlaps the gradient reduction with the backward; ZeRO-3 prefetches the
	 * next parameters unless its prefetch bucket is 0 (config-json.md) */
	cJSON *z = cJSON_AddObjectToObject(d, "zero_optimization");
	cJSON_AddNumberToObject(z, "stage", p->zero);
	cJSON_AddBoolToObject(z, "overlap_comm", p->overlap_grad_reduce && export_grad_applies(p));
	cJSON_AddTrueToObject(z, "contiguous_gradients");
	cJSON_AddTrueToObject(z, "reduce_scatter");
	if (p->zero == 3 && !p->overlap_param_gather) cJSON_AddNumberToObject(z, "stage3_prefetch_bucket_size", 0);
	/* the gathered parameters the estimate held: its live limit, module by module */
	if (p->zero == 3 && p->zero3_live_params > 0)
		cJSON_AddNumberToObject(z, "stage3_max_live_parameters", p->zero3_live_params);
	if (p->recompute == RC_FULL) {
		cJSON *x = cJSON_AddObjectToObject(d, "activation_checkpointing");
		cJSON_AddBoolToObject(x, "partition_activations", p->tp > 1);
		cJSON_AddFalseToObject(x, "contiguous_memory_optimization");
		cJSON_AddFalseToObject(x, "cpu_checkpointing");
	}
	if (p->tp > 1) {
		cJSON *x = cJSON_AddObjectToObject(d, "tensor_parallel");
		cJSON_AddNumberToObject(x, "autotp_size", p->tp);
		cJSON_AddBoolToObject(x, "tp_overlap_comm", p->overlap_tp_comm || p->overlap_tp_bwd);
	}
	int rc = json_print(f, d, 1);
	cJSON_Delete(d);
	if (rc) return errf(err, "export: out of memory");
	return 0;
}

const struct export_method export_deepspeed_method = {"deepspeed", "//", write_deepspeed, 0, 1, 0, 1};
