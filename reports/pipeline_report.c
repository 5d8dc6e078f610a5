/* pipeline_report — the table and the JSON of `scaleplan pipeline` (reports/pipeline_report.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include "reports/pipeline_report.h"

/* activations held, in units of one micro-batch through a whole rank's share of the layers:
 * a chunk is 1/chunks of it, except DualPipe whose two chunks are whole stages */
static double stage_equiv(const struct sched *s, int inflight)
{
	return s->ndirs > 1 ? inflight : (double)inflight / s->chunks;
}

/* first event's start to last event's end: where the bubble diagram begins and ends (sends
 * after the last op included), not the largest single rank's span */
static double makespan(const struct engine_result *r)
{
	double t0 = 0, t1 = 0;
	for (size_t i = 0; i < r->tl.n; i++) {
		const struct tl_event *e = &r->tl.ev[i];
		if (!i || e->start < t0) t0 = e->start;
		if (!i || e->end > t1) t1 = e->end;
	}
	for (int i = 0; i < r->nranks; i++) {
		if ((!r->tl.n && !i) || r->rank[i].start < t0) t0 = r->rank[i].start;
		if (r->rank[i].end > t1) t1 = r->rank[i].end;
	}
	return t1 - t0;
}

void pipeline_print(const struct sched *s, const struct engine_result *r, const struct pipeline_times *a, FILE *f)
{
	const char *u = a->unit;
	fprintf(f, "schedule %s  pp %d  microbatches %d", schedule_name(s->type), s->pp, s->m);
	if (s->fam->flags & SCHED_F_VIRTUAL) fprintf(f, "  vpp %d", s->chunks);
	fprintf(f, "  stages %d  ops %zu\n", s->nstages, s->nops);
	fprintf(f, "op times (%s): F %g  B %g  W %g  p2p %g\n", u, a->t_f, a->t_b, a->t_w, a->t_comm);
	fprintf(f, "span (first op to last event):     %.6g %s   (largest rank span %.6g)\n", makespan(r), u, r->cost);
	fprintf(f, "bubble fraction (bubble/ideal):    %.4f   [Megatron convention, worst rank]\n", r->bubble_fraction);
	fprintf(f, "bubble rate (bubble/span):         %.4f   [zero-bubble convention, worst rank]\n", r->bubble_rate);
	fprintf(f, "peak activations in flight:        %d chunk activations (%.2f micro-batch x rank-share)\n\n",
	       r->max_inflight, stage_equiv(s, r->max_inflight));
	fprintf(f, "%5s %12s %12s %12s %9s %9s %9s\n", "rank", "span", "busy", "idle", "fraction", "rate", "inflight");
	for (int i = 0; i < r->nranks; i++) {
		const struct engine_rank *k = &r->rank[i];
		fprintf(f, "%5d %12.6g %12.6g %12.6g %9.4f %9.4f %9d\n", i, k->span, k->busy, k->span - k->busy,
		       k->bubble_fraction, k->bubble_rate, k->peak_inflight);
	}
}

static void add_array(cJSON *o, const char *key, const struct engine_result *r, int what)
{
	cJSON *arr = cJSON_AddArrayToObject(o, key);
	for (int i = 0; i < r->nranks; i++) {
		const struct engine_rank *k = &r->rank[i];
		double v = what == 0 ? k->span : what == 1 ? k->busy : what == 2 ? k->bubble_fraction
			 : what == 3 ? k->bubble_rate : k->peak_inflight;
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(v));
	}
}

int pipeline_write_json(const struct sched *s, const struct engine_result *r, const struct pipeline_times *a, FILE *f)
{
	cJSON *o = cJSON_CreateObject();
	if (!o) return -1;
	cJSON_AddStringToObject(o, "schedule", schedule_name(s->type));
	cJSON_AddNumberToObject(o, "pp", s->pp);
	cJSON_AddNumberToObject(o, "microbatches", s->m);
	cJSON_AddNumberToObject(o, "vpp", s->fam->flags & SCHED_F_VIRTUAL ? s->chunks : 1);
	cJSON_AddNumberToObject(o, "stages", s->nstages);
	cJSON_AddNumberToObject(o, "ops", (double)s->nops);
	cJSON_AddStringToObject(o, "unit", a->unit);
	cJSON_AddNumberToObject(o, "span", makespan(r));
	cJSON_AddNumberToObject(o, "largest_rank_span", r->cost);
	cJSON_AddNumberToObject(o, "bubble_rate", r->bubble_rate);
	cJSON_AddNumberToObject(o, "bubble_fraction", r->bubble_fraction);
	cJSON_AddNumberToObject(o, "max_inflight", r->max_inflight);
	cJSON_AddNumberToObject(o, "max_inflight_stage_equiv", stage_equiv(s, r->max_inflight));
	add_array(o, "rank_span", r, 0);
	add_array(o, "rank_busy", r, 1);
	add_array(o, "rank_bubble_fraction", r, 2);
	add_array(o, "rank_bubble_rate", r, 3);
	add_array(o, "rank_peak_inflight", r, 4);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text) return -1;
	fputs(text, f);
	fputc('\n', f);
	cJSON_free(text);
	return 0;
}

