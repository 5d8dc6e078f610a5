/* estimate_report — the table, the fixes and the JSON of an estimate (reports/estimate_report.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "reports/estimate_report.h"
#include "reports/json_out.h"
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
	int recv = 0;
	for (int i = 0; i < e->nkinds; i++) recv |= e->kind[i].recv_bytes > 0;
	if (recv) ROW("pipeline recv buffers", recv_bytes);
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

/* figures keep the digits they were always printed with: times and rates 9 significant, ratios
 * 6, bytes whole */
static void kind_json(cJSON *arr, const struct rank_est *k)
{
	static const struct { const char *key; size_t off; } mem[] = {
		{"weights_bytes", offsetof(struct rank_est, weights_bytes)}, {"grads_bytes", offsetof(struct rank_est, grads_bytes)},
		{"optim_bytes", offsetof(struct rank_est, optim_bytes)}, {"act_bytes", offsetof(struct rank_est, act_bytes)},
		{"act_inflight", offsetof(struct rank_est, act_inflight)}, {"logits_bytes", offsetof(struct rank_est, logits_bytes)},
		{"buffers_bytes", offsetof(struct rank_est, buffers_bytes)}, {"recv_bytes", offsetof(struct rank_est, recv_bytes)},
		{"overhead_bytes", offsetof(struct rank_est, overhead_bytes)},
		{"peak_bytes", offsetof(struct rank_est, peak_bytes)},
	}, time[] = {
		{"compute_s", offsetof(struct rank_est, compute_s)}, {"recompute_s", offsetof(struct rank_est, recompute_s)},
		{"tp_comm_s", offsetof(struct rank_est, tp_comm_s)}, {"cp_comm_s", offsetof(struct rank_est, cp_comm_s)},
		{"ep_comm_s", offsetof(struct rank_est, ep_comm_s)}, {"pp_comm_s", offsetof(struct rank_est, pp_comm_s)},
		{"dp_comm_s", offsetof(struct rank_est, dp_comm_s)}, {"dp_exposed_s", offsetof(struct rank_est, dp_exposed_s)},
		{"bubble_s", offsetof(struct rank_est, bubble_s)}, {"optimizer_s", offsetof(struct rank_est, optimizer_s)},
		{"overhead_s", offsetof(struct rank_est, overhead_s)}, {"step_s", offsetof(struct rank_est, step_s)},
		{"t_f", offsetof(struct rank_est, t_f)}, {"t_b", offsetof(struct rank_est, t_b)},
		{"t_w", offsetof(struct rank_est, t_w)}, {"t_p2p", offsetof(struct rank_est, t_p2p)},
	};
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToArray(arr, o);
	cJSON_AddStringToObject(o, "label", k->label);
	cJSON_AddNumberToObject(o, "stage", k->stage);
	cJSON_AddNumberToObject(o, "ranks", k->ranks);
	cJSON_AddNumberToObject(o, "layers", k->layers);
	json_add_fixed(o, "params", k->params, 0);
	cJSON *m = cJSON_AddObjectToObject(o, "memory");
	for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++) {
		double v = *(const double *)((const char *)k + mem[i].off);
		if (!strcmp(mem[i].key, "act_inflight")) json_add_sig(m, mem[i].key, v, 4);
		else json_add_fixed(m, mem[i].key, v, 0);
	}
	cJSON *t = cJSON_AddObjectToObject(o, "time");
	for (size_t i = 0; i < sizeof(time) / sizeof(time[0]); i++)
		json_add_sig(t, time[i].key, *(const double *)((const char *)k + time[i].off), 9);
}

int estimate_write_json(const struct estimate *e, const struct plan *p, FILE *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "engine", "analytical");
	cJSON_AddItemToObject(o, "plan", json_from_text(plan_to_json(p)));
	cJSON_AddNumberToObject(o, "microbatches", e->m);
	json_add_sig(o, "step_time_s", e->step_time_s, 9);
	json_add_sig(o, "tokens_per_s", e->tokens_per_s, 9);
	json_add_sig(o, "tokens_per_s_per_gpu", e->tokens_per_s_per_gpu, 9);
	json_add_sig(o, "mfu", e->mfu, 6);
	json_add_sig(o, "hfu", e->hfu, 6);
	json_add_sig(o, "model_flops_per_step", e->model_flops_per_step, 9);
	json_add_fixed(o, "peak_mem_bytes", e->peak_mem_bytes, 0);
	json_add_fixed(o, "reserved_peak_bytes", e->peak_mem_bytes, 0);
	json_add_fixed(o, "live_peak_bytes", e->live_peak_bytes, 0);
	json_add_fixed(o, "capacity_bytes", e->capacity_bytes, 0);
	json_add_fixed(o, "nonpool_bytes", e->nonpool_bytes, 0);
	cJSON_AddNumberToObject(o, "nccl_comms", e->nccl_comms);
	cJSON_AddBoolToObject(o, "fits", e->fits);
	json_add_sig(o, "bubble_fraction", e->bubble_fraction, 6);
	json_add_sig(o, "exposed_comm_s", e->exposed_comm_s, 9);
	cJSON *kinds = cJSON_AddArrayToObject(o, "rank_kinds");
	for (int i = 0; i < e->nkinds; i++) kind_json(kinds, &e->kind[i]);
	int rc = json_print(f, o, 0);
	cJSON_Delete(o);
	return rc;
}
