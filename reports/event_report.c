/* event_report — the table and the JSON of an event-engine run (reports/event_report.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include "reports/event_report.h"
#include "sim/util.h"

static void stage_source(unsigned char bits, char *buf, size_t cap)
{
	static const char *const k[OPT_KINDS] = {"F", "B", "W", "BW", "opt"};
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i < OPT_KINDS; i++)
		if (bits & (1u << i)) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "trace: ", k[i]);
	if (!n) snprintf(buf, cap, "model");
}

void event_print(const struct plan *p, const struct estimate *e, const struct event_sim *s,
		 const struct op_times *mt, const char *mt_path, FILE *f)
{
	char desc[512];
	plan_describe(p, desc, sizeof(desc));
	fprintf(f, "plan: %s on %d x %s — %s\n", p->model, p->gpus, p->gpu, desc);
	fprintf(f, "engine: event (%d micro-batches, %d stages, %zu ops); tune and sim without --engine print the\n"
	       "        analytical estimate, given in brackets\n", s->sched->m, s->nstages, s->sched->nops);
	if (mt) {
		fprintf(f, "op times: %d of %d stages from %s (%ld complete events, %ld not ops); the rest from the cost model\n",
		       s->stages_measured, s->nstages, mt_path, mt->events, mt->ignored);
		for (int st = 0; st < mt->nstages && st < s->nstages && st < p->nstage_layers; st++)
			if (mt->layers[st] >= 0 && mt->layers[st] != p->stage_layers[st])
				fprintf(f, "note: the trace ran %d layers on stage %d, this plan puts %d there (times used as measured)\n",
				       mt->layers[st], st, p->stage_layers[st]);
	}
	fprintf(f, "step time                 %10.4f s   (analytical %.4f s)\n", s->step_s, e->step_time_s);
	fprintf(f, "pipeline span             %10.4f s\n", s->pipeline_span_s);
	fprintf(f, "tokens/s per GPU          %10.0f\n", s->tokens_per_s_per_gpu);
	fprintf(f, "MFU                       %9.1f%%\n", 100 * s->mfu);
	fprintf(f, "bubble (worst rank)       fraction %.4f (bubble/ideal, Megatron)   rate %.4f (bubble/span, ZB)\n",
	       s->bubble_fraction, s->bubble_rate);
	fprintf(f, "exposed communication (s)");
	for (int d = 0; d < EV_DIM_COUNT; d++) fprintf(f, "  %s %.4f", ev_dim_name(d), s->exposed_s[d]);
	fprintf(f, "   (tp/cp/ep inside the ops, cost model%s; pp/dp what the engine's step loses without them)",
	       mt ? ", also where ops were measured" : "");
	fprintf(f, "\nstep breakdown (s), rank with the largest span:\n ");
	for (int k = 0; k < EVP_COUNT; k++) fprintf(f, " %s %.4f%s", ev_part_name(k), s->part_s[k], k + 1 < EVP_COUNT ? "," : "\n");
	if (s->nstages <= 16 || mt) {
		fprintf(f, "\n%6s %12s %12s %12s  %s\n", "stage", "F (ms)", "B (ms)", "W (ms)", "source");
		for (int st = 0; st < s->nstages; st++) {
			char src[64];
			stage_source(s->measured[st], src, sizeof(src));
			fprintf(f, "%6d %12.4f %12.4f %12.4f  %s\n", st, 1e3 * s->t_f[st], 1e3 * s->t_b[st], 1e3 * s->t_w[st], src);
		}
	}
	fprintf(f, "\n%5s %-14s %10s %10s %9s %9s %11s %10s %9s\n", "rank", "kind", "span (s)", "busy (s)", "bub.frac",
	       "bub.rate", "static GiB", "act GiB", "peak GiB");
	for (int r = 0; r < s->sched->pp; r++) {
		const struct event_rank *x = &s->rank[r];
		fprintf(f, "%5d %-14s %10.4f %10.4f %9.4f %9.4f %11.2f %10.2f %9.2f\n", r, e->kind[x->kind].label, x->span_s,
		       x->busy_s, x->bubble_fraction, x->bubble_rate, x->static_bytes / GIB, x->peak_act_bytes / GIB,
		       x->peak_bytes / GIB);
	}
	fprintf(f, "\npeak memory %.2f GiB of %.2f GiB: %s (GiB = 2^30 B)\n", s->peak_mem_bytes / GIB, s->capacity_bytes / GIB,
	       s->fits ? "fits" : "does not fit");
}

/* the per-rank and per-stage arrays of the event JSON */
static void json_arrays(cJSON *o, const struct estimate *e, const struct event_sim *s)
{
	cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
	for (int r = 0; r < s->sched->pp; r++) {
		const struct event_rank *k = &s->rank[r];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "rank", r);
		cJSON_AddStringToObject(j, "kind", e->kind[k->kind].label);
		cJSON_AddNumberToObject(j, "span_s", k->span_s);
		cJSON_AddNumberToObject(j, "busy_s", k->busy_s);
		cJSON_AddNumberToObject(j, "bubble_fraction", k->bubble_fraction);
		cJSON_AddNumberToObject(j, "bubble_rate", k->bubble_rate);
		cJSON_AddNumberToObject(j, "static_bytes", k->static_bytes);
		cJSON_AddNumberToObject(j, "peak_act_bytes", k->peak_act_bytes);
		cJSON_AddNumberToObject(j, "peak_mem_bytes", k->peak_bytes);
		cJSON_AddItemToArray(ranks, j);
	}
	cJSON *stages = cJSON_AddArrayToObject(o, "stages");
	for (int st = 0; st < s->nstages; st++) {
		char src[64];
		cJSON *j = cJSON_CreateObject();
		stage_source(s->measured[st], src, sizeof(src));
		cJSON_AddNumberToObject(j, "stage", st);
		cJSON_AddNumberToObject(j, "t_f_s", s->t_f[st]);
		cJSON_AddNumberToObject(j, "t_b_s", s->t_b[st]);
		cJSON_AddNumberToObject(j, "t_w_s", s->t_w[st]);
		cJSON_AddStringToObject(j, "source", src);
		cJSON_AddItemToArray(stages, j);
	}
}

void event_write_json(const struct plan *p, const struct estimate *e, const struct event_sim *s,
		      const struct op_times *mt, const char *mt_path, FILE *f)
{
	cJSON *o = cJSON_CreateObject();
	char *pj = plan_to_json(p);
	cJSON *plan = pj ? cJSON_Parse(pj) : NULL;
	free(pj);
	if (plan) cJSON_AddItemToObject(o, "plan", plan);
	cJSON_AddStringToObject(o, "engine", "event");
	cJSON_AddStringToObject(o, "schedule", schedule_name(s->sched->type));
	cJSON_AddNumberToObject(o, "microbatches", s->sched->m);
	cJSON_AddNumberToObject(o, "step_time_s", s->step_s);
	cJSON_AddNumberToObject(o, "analytic_step_time_s", e->step_time_s);
	cJSON_AddNumberToObject(o, "pipeline_span_s", s->pipeline_span_s);
	cJSON_AddNumberToObject(o, "tokens_per_s_per_gpu", s->tokens_per_s_per_gpu);
	cJSON_AddNumberToObject(o, "mfu", s->mfu);
	cJSON_AddNumberToObject(o, "peak_mem_bytes", s->peak_mem_bytes);
	cJSON_AddNumberToObject(o, "capacity_bytes", s->capacity_bytes);
	cJSON_AddBoolToObject(o, "fits", s->fits);
	cJSON_AddNumberToObject(o, "bubble_fraction", s->bubble_fraction);
	cJSON_AddNumberToObject(o, "bubble_rate", s->bubble_rate);
	cJSON *x = cJSON_AddObjectToObject(o, "exposed_comm_s");
	for (int d = 0; d < EV_DIM_COUNT; d++) cJSON_AddNumberToObject(x, ev_dim_name(d), s->exposed_s[d]);
	x = cJSON_AddObjectToObject(o, "step_breakdown_s");
	for (int k = 0; k < EVP_COUNT; k++) cJSON_AddNumberToObject(x, ev_part_name(k), s->part_s[k]);
	json_arrays(o, e, s);
	if (mt) {
		x = cJSON_AddObjectToObject(o, "op_times");
		cJSON_AddStringToObject(x, "file", mt_path);
		cJSON_AddNumberToObject(x, "events", (double)mt->events);
		cJSON_AddNumberToObject(x, "ignored", (double)mt->ignored);
		cJSON_AddNumberToObject(x, "stages_measured", s->stages_measured);
	}
	char *text = cJSON_Print(o);
	if (text) { fputs(text, f); fputc('\n', f); }
	free(text);
	cJSON_Delete(o);
}

