/* estimate_report — the table, the fixes and the JSON of an estimate (reports/estimate_report.h). */
#include <stdio.h>
#include <string.h>
#include "reports/estimate_report.h"
#include "sim/util.h"

void estimate_print(const struct estimate *e, const struct plan *p, FILE *f)
{
	char desc[512];
	plan_describe(p, desc, sizeof(desc));
	fprintf(f, "plan: %s on %d x %s — %s\n", p->model, p->gpus, p->gpu, desc);
	if (p->etp > 0 && p->etp != p->tp) fprintf(f, "experts: ep %d x etp %d over the tp*dp*cp ranks of a stage (parallel folding)\n", p->ep, p->etp);
	fprintf(f, "engine: analytical estimate (the figures tune reports; --engine event walks the schedule)\n");
	fprintf(f, "micro-batches per pipeline: %d\n\n", e->m);
	fprintf(f, "memory per GPU (GiB)   ");
	for (int i = 0; i < e->nkinds; i++) fprintf(f, " %16s", e->kind[i].label);
	fprintf(f, "\n");
#define ROW(name, field) do { fprintf(f, "  %-21s", name); \
	for (int i = 0; i < e->nkinds; i++) { fprintf(f, " %16.2f", e->kind[i].field / GIB); } \
	fprintf(f, "\n"); } while (0)
#define ROWS(name, field) do { fprintf(f, "  %-21s", name); \
	for (int i = 0; i < e->nkinds; i++) { fprintf(f, " %16.4f", e->kind[i].field); } \
	fprintf(f, "\n"); } while (0)
	fprintf(f, "  %-21s", "ranks");
	for (int i = 0; i < e->nkinds; i++) fprintf(f, " %16d", e->kind[i].ranks);
	fprintf(f, "\n  %-21s", "layers");
	for (int i = 0; i < e->nkinds; i++) fprintf(f, " %16d", e->kind[i].layers);
	fprintf(f, "\n");
	ROW("weights", weights_bytes);
	ROW("gradients", grads_bytes);
	ROW("optimizer states", optim_bytes);
	ROW("activations", act_bytes);
	ROW("logits/loss", logits_bytes);
	ROW("buffers", buffers_bytes);
	ROW("overhead", overhead_bytes);
	ROW("peak", peak_bytes);
	fprintf(f, "  %-21s", "micro-batches held");
	for (int i = 0; i < e->nkinds; i++) fprintf(f, " %16.2f", e->kind[i].act_inflight);
	fprintf(f, "\n  capacity %.2f GiB: %s (peak %.2f GiB, %+.2f GiB headroom)\n", e->capacity_bytes / GIB,
		e->fits ? "fits" : "DOES NOT FIT", e->peak_mem_bytes / GIB, (e->capacity_bytes - e->peak_mem_bytes) / GIB);
	fprintf(f, "  (HBM less %.2f GiB outside the allocator: CUDA context and %d NCCL communicators)\n\n",
		e->nonpool_bytes / GIB, e->nccl_comms);
	fprintf(f, "time per step (s)      ");
	for (int i = 0; i < e->nkinds; i++) fprintf(f, " %16s", e->kind[i].label);
	fprintf(f, "\n");
	ROWS("compute", compute_s);
	ROWS("  of which recompute", recompute_s);
	ROWS("TP/SP comm (exposed)", tp_comm_s);
	ROWS("CP comm (exposed)", cp_comm_s);
	ROWS("EP comm (exposed)", ep_comm_s);
	ROWS("PP comm (exposed)", pp_comm_s);
	ROWS("DP comm (total)", dp_comm_s);
	ROWS("DP comm (exposed)", dp_exposed_s);
	ROWS("pipeline bubble", bubble_s);
	ROWS("optimizer", optimizer_s);
	ROWS("fixed overhead", overhead_s);
	ROWS("F per micro-batch", t_f);
	ROWS("B per micro-batch", t_b);
	ROWS("W per micro-batch", t_w);
	fprintf(f, "\nstep time      %.4f s\n", e->step_time_s);
	fprintf(f, "tokens/s       %.0f (%.1f per GPU)\n", e->tokens_per_s, e->tokens_per_s_per_gpu);
	fprintf(f, "MFU            %.1f %%   HFU %.1f %%   (model FLOPs %.4g per step, causal attention, dense bf16 peak)\n",
		100 * e->mfu, 100 * e->hfu, e->model_flops_per_step);
	fprintf(f, "bubble         %.1f %% of ideal compute (Megatron convention)\n", 100 * e->bubble_fraction);
#undef ROW
#undef ROWS
}

void estimate_print_fixes(const struct plan_fix *fx, int n, FILE *f)
{
	if (!n) {
		fprintf(f, "\nno change lowers the peak (sp, recompute, ZeRO stage, micro-batch, tp/pp/cp doubled,\n"
			   "more GPUs, half the sequence); scaleplan tune searches every combination\n");
		return;
	}
	fprintf(f, "\nchanges that lower the peak (the ones that fit first, fastest first):\n");
	int w = 20;
	for (int i = 0; i < n; i++) if ((int)strlen(fx[i].change) > w) w = (int)strlen(fx[i].change);
	for (int i = 0; i < n; i++) {
		char state[48];
		if (fx[i].fits) snprintf(state, sizeof(state), "fits");
		else snprintf(state, sizeof(state), "%.2f GiB over", (fx[i].peak_bytes - fx[i].capacity_bytes) / GIB);
		fprintf(f, "  %-*s  peak %7.2f GiB %-15s step %9.4f s   %9.1f tok/s/GPU\n", w, fx[i].change,
			fx[i].peak_bytes / GIB, state, fx[i].step_time_s, fx[i].tokens_per_s_per_gpu);
	}
}

void estimate_write_json(const struct estimate *e, const struct plan *p, FILE *f)
{
	fprintf(f, "{\"plan\":");
	plan_write_json(p, f);
	fprintf(f, ",\"microbatches\":%d,\"step_time_s\":%.9g,\"tokens_per_s\":%.9g,\"tokens_per_s_per_gpu\":%.9g,"
		"\"mfu\":%.6g,\"hfu\":%.6g,\"model_flops_per_step\":%.9g,\"peak_mem_bytes\":%.0f,\"reserved_peak_bytes\":%.0f,\"live_peak_bytes\":%.0f,\"capacity_bytes\":%.0f,"
		"\"nonpool_bytes\":%.0f,\"nccl_comms\":%d,"
		"\"fits\":%s,\"bubble_fraction\":%.6g,\"exposed_comm_s\":%.9g,\"rank_kinds\":[",
		e->m, e->step_time_s, e->tokens_per_s, e->tokens_per_s_per_gpu, e->mfu, e->hfu, e->model_flops_per_step,
		e->peak_mem_bytes, e->peak_mem_bytes, e->live_peak_bytes, e->capacity_bytes, e->nonpool_bytes, e->nccl_comms, e->fits ? "true" : "false",
		e->bubble_fraction, e->exposed_comm_s);
	for (int i = 0; i < e->nkinds; i++) {
		const struct rank_est *k = &e->kind[i];
		fprintf(f, "%s{\"label\":\"%s\",\"stage\":%d,\"ranks\":%d,\"layers\":%d,\"params\":%.0f,"
			"\"memory\":{\"weights_bytes\":%.0f,\"grads_bytes\":%.0f,\"optim_bytes\":%.0f,\"act_bytes\":%.0f,"
			"\"act_inflight\":%.4g,\"logits_bytes\":%.0f,\"buffers_bytes\":%.0f,\"overhead_bytes\":%.0f,\"peak_bytes\":%.0f},"
			"\"time\":{\"compute_s\":%.9g,\"recompute_s\":%.9g,\"tp_comm_s\":%.9g,\"cp_comm_s\":%.9g,\"ep_comm_s\":%.9g,"
			"\"pp_comm_s\":%.9g,\"dp_comm_s\":%.9g,\"dp_exposed_s\":%.9g,\"bubble_s\":%.9g,\"optimizer_s\":%.9g,"
			"\"overhead_s\":%.9g,\"step_s\":%.9g,\"t_f\":%.9g,\"t_b\":%.9g,\"t_w\":%.9g,\"t_p2p\":%.9g}}",
			i ? "," : "", k->label, k->stage, k->ranks, k->layers, k->params,
			k->weights_bytes, k->grads_bytes, k->optim_bytes, k->act_bytes, k->act_inflight, k->logits_bytes,
			k->buffers_bytes, k->overhead_bytes, k->peak_bytes,
			k->compute_s, k->recompute_s, k->tp_comm_s, k->cp_comm_s, k->ep_comm_s, k->pp_comm_s, k->dp_comm_s,
			k->dp_exposed_s, k->bubble_s, k->optimizer_s, k->overhead_s, k->step_s, k->t_f, k->t_b, k->t_w, k->t_p2p);
	}
	fprintf(f, "]}\n");
}
