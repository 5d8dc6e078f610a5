/* export_torchtitan — a plan as a torchtitan v0.2.x TOML fragment, with the equivalent
 * --section.key overrides for torchtitan main (whose TOML was removed; the keys still work as
 * overrides). Keys: torchtitan/config/job_config.py @v0.2.2 (tests/frameworks/torchtitan.txt).
 * A pipeline's layer split is always written, since torchtitan's default moves one layer off
 * the first and the last stage. */
#include <stdio.h>
#include <string.h>
#include "tuner/export_impl.h"

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
		export_noeq(o, "ZeRO-1; nearest is FSDP without resharding after forward (ZeRO-2-like), written");
	const struct sched_family *f = sched_family(p->schedule);
	t->schedule = p->pp > 1 ? f->fw_name[SCHED_FW_TORCHTITAN] : NULL;
	if (p->pp > 1 && !t->schedule) {
		/* the schedule of the same shape where there is one, else torchtitan's 1F1B */
		t->schedule = f->fold_to != SCHED_NONE ? sched_family(f->fold_to)->fw_name[SCHED_FW_TORCHTITAN]
						     : sched_family(SCHED_1F1B)->fw_name[SCHED_FW_TORCHTITAN];
		export_noeq(o, "schedule %s; %s is written", schedule_name(p->schedule), t->schedule);
	}
	t->ac_every = 0;
	t->ac_mode = p->recompute == RC_NONE ? "none" : p->recompute == RC_FULL ? "full" : "selective";
	if (p->recompute == RC_SELECTIVE)
		export_noeq(o, "selective recompute of the attention core; torchtitan's per-op checkpointing (op) is written");
	if (p->recompute == RC_FULL && p->recompute_layers >= 0) {
		int per = p->stage_layers[0] > 0 ? p->stage_layers[0] : 1;
		int k = p->recompute_layers > 0 ? p->recompute_layers : 1;
		t->ac_mode = "selective";
		t->ac_every = (per + k - 1) / k;
		export_noeq(o, "full recompute of %d layers per stage; selective_ac_option %d (every %d-th layer) is nearest",
		     p->recompute_layers, t->ac_every, t->ac_every);
	}
}

/* torchtitan's split for n stages of L layers when the first and last stages count a and b
 * layers fewer (pipeline_parallel.py generate_llm_fqn_per_model_part, v0.2.2): the L + a + b
 * "effective" layers spread evenly, the first extra ones one more each */
static int tt_generated(int L, int n, int a, int b, int *c)
{
	int e = L + a + b, per = e / n, extra = e % n;
	if (n < 2 || per < 1 || a > per || b > per) return -1;
	for (int i = 0; i < n; i++) c[i] = per + (i < extra) - (i == 0 ? a : 0) - (i == n - 1 ? b : 0);
	return 0;
}

/* Finds layers per stage and the first and last stages' shortfalls for which torchtitan builds
 * exactly the plan's split (its stage count is ceil((L + a + b) / layers_per_stage)); 0, or -1
 * when none does */
static int tt_split_keys(const struct plan *p, int L, int *lps, int *a, int *b)
{
	int n = p->nstage_layers, c[PLAN_MAX_STAGES];
	for (int x = 0; x <= L; x++)
		for (int y = 0; y <= L; y++) {
			if (tt_generated(L, n, x, y, c) || memcmp(c, p->stage_layers, sizeof(int) * (size_t)n)) continue;
			int e = L + x + y;
			for (int k = 1; k <= e; k++)
				if ((e + k - 1) / k == n) { *lps = k; *a = x; *b = y; return 0; }
		}
	return -1;
}

/* the split as torchtitan's keys, or as the modules of every stage when no keys produce it */
static void tt_pipeline_split(struct out *o, const struct plan *p, char *cli, size_t cap)
{
	int L = 0, lps, a, b;
	for (int i = 0; i < p->nstage_layers; i++) L += p->stage_layers[i];
	if (!tt_split_keys(p, L, &lps, &a, &b)) {
		fprintf(o->f, "pipeline_parallel_layers_per_stage = %d\n", lps);
		fprintf(o->f, "pipeline_parallel_first_stage_less_layers = %d\n", a);
		fprintf(o->f, "pipeline_parallel_last_stage_less_layers = %d\n", b);
		snprintf(cli, cap, " --parallelism.pipeline_parallel_layers_per_stage %d"
			 " --parallelism.pipeline_parallel_first_stage_less_layers %d"
			 " --parallelism.pipeline_parallel_last_stage_less_layers %d", lps, a, b);
		return;
	}
	fprintf(o->f, "module_fqns_per_model_part = [");
	for (int s = 0, l = 0; s < p->nstage_layers; s++) {
		fprintf(o->f, "%s[", s ? ", " : "");
		int first = 1;
		if (s == 0) { fprintf(o->f, "\"tok_embeddings\""); first = 0; }
		for (int k = 0; k < p->stage_layers[s]; k++, l++) { fprintf(o->f, "%s\"layers.%d\"", first ? "" : ", ", l); first = 0; }
		if (s == p->nstage_layers - 1) fprintf(o->f, "%s\"norm\", \"output\"", first ? "" : ", ");
		fputc(']', o->f);
	}
	fprintf(o->f, "]\n");
	snprintf(cli, cap, " (module_fqns_per_model_part as in the TOML)");
}

/* the overlap switches as the estimate priced them: FSDP2 and DDP always overlap gradient
 * reduction and prefetch parameters, the pipeline schedules' sends are not documented as
 * overlapped, and async TP (which needs torch.compile in v0.2.x) is the one switch */
static void tt_overlap(struct out *o, const struct plan *p)
{
	if (export_grad_applies(p) && !p->overlap_grad_reduce)
		export_noeq(o, "gradient reduction not overlapped; torchtitan's FSDP2 and DDP always overlap it");
	if (export_gather_applies(p) && !p->overlap_param_gather)
		export_noeq(o, "parameter gathers not overlapped; torchtitan's FSDP2 always prefetches them");
	if (p->pp > 1 && p->overlap_p2p)
		export_noeq(o, "overlapped pipeline sends; torchtitan documents no overlap of its schedules' send/recv");
	if (p->tp > 1 && p->sp && p->tp_regather)
		export_noeq(o, "SP inputs gathered again in backward; torchtitan keeps the gathered inputs of its column-parallel linears (more activation memory, fewer all-gathers)");
	if (p->tp > 1 && !p->overlap_tp_comm && p->overlap_tp_bwd)
		export_noeq(o, "TP backward overlap alone; torchtitan's DTensor collectives run synchronously unless async TP");
}

static int write_torchtitan(struct out *o, const struct plan *p, const struct model *m, char *err)
{
	FILE *f = o->f;
	struct tt_parallel t;
	char cli[512] = "";
	(void)m;
	(void)err;
	export_comment(o, "torchtitan v0.2.x TOML fragment (keys: torchtitan/config/job_config.py @v0.2.2)");
	torchtitan_choose(o, p, &t);
	if (p->tp > 1 && !p->sp)
		export_noeq(o, "TP without SP; torchtitan's tensor parallel always shards norms along the sequence");
	if (p->precision == PREC_FP8) export_noeq(o, "fp8 here; enable torchtitan's float8 converter separately");
	if (p->precision == PREC_FP16) export_noeq(o, "fp16 here; torchtitan has no loss scaler, bfloat16 is written");
	if (strcmp(p->order, "tp-cp-dp-pp")) export_noeq(o, "rank order %s; torchtitan builds its own device mesh", p->order);
	tt_overlap(o, p);
	int async_tp = p->overlap_tp_comm && p->tp > 1;
	fprintf(f, "[parallelism]\n");
	fprintf(f, "data_parallel_replicate_degree = %d\n", t.replicate);
	fprintf(f, "data_parallel_shard_degree = %d\n", t.shard);
	fprintf(f, "fsdp_reshard_after_forward = \"%s\"\n", t.reshard);
	fprintf(f, "tensor_parallel_degree = %d\n", p->tp);
	fprintf(f, "enable_async_tensor_parallel = %s\n", async_tp ? "true" : "false");
	fprintf(f, "pipeline_parallel_degree = %d\n", p->pp);
	if (t.schedule) {
		fprintf(f, "pipeline_parallel_schedule = \"%s\"\n", t.schedule);
		fprintf(f, "pipeline_parallel_microbatch_size = %d\n", p->mbs);
		if (sched_family(p->schedule)->fold_to != SCHED_NONE) { /* e.g. DualPipe as DualPipeV */
			struct plan v = *p;
			v.schedule = sched_family(p->schedule)->fold_to;
			int L = 0;
			for (int i = 0; i < p->nstage_layers; i++) L += p->stage_layers[i];
			plan_balanced_split(&v, L);
			tt_pipeline_split(o, &v, cli, sizeof(cli));
		} else {
			tt_pipeline_split(o, p, cli, sizeof(cli));
		}
	}
	fprintf(f, "context_parallel_degree = %d\n", p->cp);
	fprintf(f, "expert_parallel_degree = %d\n", p->ep);
	if (p->etp > 0 && p->etp != p->tp) export_noeq(o, "expert tensor parallelism %d beside attention tp %d (MoE parallel folding)", p->etp, p->tp);
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
	/* async TP works only compiled in v0.2.x; compiling also compiles the loss (4 B a logit
	 * instead of the eager 12, profiles/frameworks/torchtitan.json) */
	if (async_tp && !p->compile)
		export_noeq(o, "async TP with eager blocks and loss; torchtitan needs compile.enable for it, which also compiles the loss");
	if (async_tp || p->compile) fprintf(f, "\n[compile]\nenable = true\n");
	export_comment(o, "torchtitan main (TOML removed): --parallelism.data_parallel_replicate_degree %d"
		       " --parallelism.data_parallel_shard_degree %d --parallelism.tensor_parallel_degree %d"
		       " --parallelism.pipeline_parallel_degree %d%s --parallelism.context_parallel_degree %d"
		       " --parallelism.expert_parallel_degree %d --training.global_batch_size %d --training.seq_len %d",
		       t.replicate, t.shard, p->tp, p->pp, cli, p->cp, p->ep, p->gbs, p->seq);
	return 0;
}

const struct export_method export_torchtitan_method = {"torchtitan", "#", write_torchtitan, 1, 0, 1, 0};
