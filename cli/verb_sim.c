/* sim — `scaleplan sim`: estimate one plan, with the analytical model (default) or the event
 * engine (sim/event.h), optionally driven by op times measured in a runtime trace. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "reports/trace.h"
#include "sim/estimate.h"
#include "sim/event.h"
#include "sim/op_scale.h"
#include "sim/util.h"


static void sim_usage(FILE *f)
{
	fprintf(f,
		"usage: scaleplan sim --model M --gpu G --gpus N [PLAN-FLAGS] [--engine analytical|event]\n"
		"                     [--op-times TRACE.json] [--trace OUT.json] [--json]\n\n"
		"  --engine E        analytical (default): closed-form pipeline; event: the schedule's op\n"
		"                    lists through the discrete-event engine (bubbles per rank in both\n"
		"                    conventions, exposed communication per dimension, memory over time)\n"
		"  --op-times FILE   measured op durations (Chrome trace from the runtime): the mean per\n"
		"                    (stage, F/B/W/BW/optimizer) replaces the model's; implies --engine event\n"
		"  --trace FILE      write the simulated timeline as Chrome Trace Event JSON (event engine)\n"
		"  --json            one JSON object instead of the table\n\n");
	plan_print_flags_help(f);
}

struct sim_args {
	int json, event, engine_given;
	const char *op_times, *trace;
};

static int parse_args(int argc, char **argv, struct plan *p, struct sim_args *a, char *err)
{
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--json")) { a->json = 1; continue; }
		if (!strcmp(o, "--engine") || !strcmp(o, "--op-times") || !strcmp(o, "--trace")) {
			if (i + 1 >= argc) return errf(err, "%s: missing value", o);
			const char *v = argv[++i];
			if (!strcmp(o, "--op-times")) a->op_times = v;
			else if (!strcmp(o, "--trace")) a->trace = v;
			else if (!strcmp(v, "event")) { a->event = 1; a->engine_given = 1; }
			else if (!strcmp(v, "analytical")) { a->event = 0; a->engine_given = 1; }
			else return errf(err, "--engine: '%s' is not analytical or event", v);
			continue;
		}
		int r = cli_plan_flag(argc, argv, &i, p, err);
		if (r < 0) return -1;
		if (r == 0) return errf(err, "unknown option '%s'", o);
	}
	if (a->op_times && a->engine_given && !a->event) return errf(err, "--op-times needs --engine event");
	if (a->trace && a->engine_given && !a->event) return errf(err, "--trace needs --engine event");
	if (a->op_times || a->trace) a->event = 1;
	return 0;
}

static void stage_source(unsigned char bits, char *buf, size_t cap)
{
	static const char *const k[OPT_KINDS] = {"F", "B", "W", "BW", "opt"};
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i < OPT_KINDS; i++)
		if (bits & (1u << i)) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "trace: ", k[i]);
	if (!n) snprintf(buf, cap, "model");
}

static void print_event(const struct plan *p, const struct estimate *e, const struct event_sim *s,
			const struct op_times *mt, const char *mt_path)
{
	char desc[512];
	plan_describe(p, desc, sizeof(desc));
	printf("plan: %s on %d x %s — %s\n", p->model, p->gpus, p->gpu, desc);
	printf("engine: event (%d micro-batches, %d stages, %zu ops); tune and sim without --engine print the\n"
	       "        analytical estimate, given in brackets\n", s->sched->m, s->nstages, s->sched->nops);
	if (mt) {
		printf("op times: %d of %d stages from %s (%ld complete events, %ld not ops); the rest from the cost model\n",
		       s->stages_measured, s->nstages, mt_path, mt->events, mt->ignored);
		for (int st = 0; st < mt->nstages && st < s->nstages && st < p->nstage_layers; st++)
			if (mt->layers[st] >= 0 && mt->layers[st] != p->stage_layers[st])
				printf("note: the trace ran %d layers on stage %d, this plan puts %d there (times used as measured)\n",
				       mt->layers[st], st, p->stage_layers[st]);
	}
	printf("step time                 %10.4f s   (analytical %.4f s)\n", s->step_s, e->step_time_s);
	printf("pipeline span             %10.4f s\n", s->pipeline_span_s);
	printf("tokens/s per GPU          %10.0f\n", s->tokens_per_s_per_gpu);
	printf("MFU                       %9.1f%%\n", 100 * s->mfu);
	printf("bubble (worst rank)       fraction %.4f (bubble/ideal, Megatron)   rate %.4f (bubble/span, ZB)\n",
	       s->bubble_fraction, s->bubble_rate);
	printf("exposed communication (s)");
	for (int d = 0; d < EV_DIM_COUNT; d++) printf("  %s %.4f", ev_dim_name(d), s->exposed_s[d]);
	printf("   (tp/cp/ep inside the ops, cost model%s; pp/dp what the engine's step loses without them)",
	       mt ? ", also where ops were measured" : "");
	printf("\nstep breakdown (s), rank with the largest span:\n ");
	for (int k = 0; k < EVP_COUNT; k++) printf(" %s %.4f%s", ev_part_name(k), s->part_s[k], k + 1 < EVP_COUNT ? "," : "\n");
	if (s->nstages <= 16 || mt) {
		printf("\n%6s %12s %12s %12s  %s\n", "stage", "F (ms)", "B (ms)", "W (ms)", "source");
		for (int st = 0; st < s->nstages; st++) {
			char src[64];
			stage_source(s->measured[st], src, sizeof(src));
			printf("%6d %12.4f %12.4f %12.4f  %s\n", st, 1e3 * s->t_f[st], 1e3 * s->t_b[st], 1e3 * s->t_w[st], src);
		}
	}
	printf("\n%5s %-14s %10s %10s %9s %9s %11s %10s %9s\n", "rank", "kind", "span (s)", "busy (s)", "bub.frac",
	       "bub.rate", "static GiB", "act GiB", "peak GiB");
	for (int r = 0; r < s->sched->pp; r++) {
		const struct event_rank *x = &s->rank[r];
		printf("%5d %-14s %10.4f %10.4f %9.4f %9.4f %11.2f %10.2f %9.2f\n", r, e->kind[x->kind].label, x->span_s,
		       x->busy_s, x->bubble_fraction, x->bubble_rate, x->static_bytes / GIB, x->peak_act_bytes / GIB,
		       x->peak_bytes / GIB);
	}
	printf("\npeak memory %.2f GiB of %.2f GiB: %s (GiB = 2^30 B)\n", s->peak_mem_bytes / GIB, s->capacity_bytes / GIB,
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

static void json_event(const struct plan *p, const struct estimate *e, const struct event_sim *s,
		       const struct op_times *mt, const char *mt_path)
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
	if (text) puts(text);
	free(text);
	cJSON_Delete(o);
}

/* 1 when two resolved plans run the same ops (names of model and gpu aside) */
static int same_plan(const struct plan *x, const struct plan *y)
{
	struct plan a = *x, b = *y;
	a.model[0] = b.model[0] = a.gpu[0] = b.gpu[0] = 0;
	a.gpus_per_node = b.gpus_per_node = 0;
	char *ja = plan_to_json(&a), *jb = plan_to_json(&b);
	int same = ja && jb && !strcmp(ja, jb);
	free(ja);
	free(jb);
	return same;
}

/* A trace of another plan of the same model: its op times scaled to plan p through the
 * profile (sim/op_scale.h). *mt is replaced; returns an exit code (messages printed). */
static int retarget(const struct model *m, const struct hw *h, const struct plan *p, struct op_times *mt, int *scaled)
{
	char err[ERR_LEN];
	struct plan from;
	struct model mf;
	*scaled = 0;
	plan_defaults(&from);
	if (plan_from_json(mt->plan_json, &from, err)) { cli_error("sim", "op times: the trace's plan: %s", err); return EXIT_BADINPUT; }
	if (model_load(from.model, &mf, err) == 0 &&
	    (mf.layers != m->layers || mf.hidden != m->hidden || mf.heads != m->heads || mf.kv_heads != m->kv_heads ||
	     mf.ffn_hidden != m->ffn_hidden || mf.vocab != m->vocab || mf.moe_experts != m->moe_experts)) {
		cli_error("sim", "op times: the trace measured model %s, not the plan's %s (a trace carries to other plans of the same model only)",
			  from.model, p->model);
		return EXIT_BADINPUT;
	}
	snprintf(from.gpu, sizeof(from.gpu), "%s", p->gpu);
	if (plan_prepare(&from, m, h, err)) {
		cli_error("sim", "op times: the trace's plan: %s", err);
		return EXIT_BADINPUT;
	}
	if (same_plan(&from, p)) return EXIT_OK;
	struct op_times out;
	if (op_times_retarget(m, h, &from, mt, p, &out, err)) { cli_error("sim", "%s", err); return EXIT_BADINPUT; }
	out.plan_json = mt->plan_json;
	mt->plan_json = NULL;
	op_times_free(mt);
	*mt = out;
	*scaled = 1;
	return EXIT_OK;
}

static int run_event(const struct model *m, const struct hw *h, const struct plan *p, const struct estimate *e,
		     const struct sim_args *a)
{
	char err[ERR_LEN];
	struct op_times mt;
	memset(&mt, 0, sizeof(mt));
	if (a->op_times && trace_read_op_times(a->op_times, &mt, err)) {
		cli_error("sim", "%s", err);
		return EXIT_BADINPUT;
	}
	int scaled = 0, rc = EXIT_OK;
	if (mt.plan_json && (rc = retarget(m, h, p, &mt, &scaled))) { op_times_free(&mt); return rc; }
	if (scaled && !a->json)
		printf("op times: measured on another plan of this model (%s), scaled to this plan through %s's tables and costs\n",
		       a->op_times, h->name);
	struct event_sim s;
	if (event_check(p, err)) {
		cli_error("sim", "%s", err);
		op_times_free(&mt);
		return EXIT_BADINPUT;
	}
	if (event_run(m, h, p, e, a->op_times ? &mt : NULL, &s, err)) {
		cli_error("sim", "%s", err);
		op_times_free(&mt);
		return strncmp(err, "op times", 8) ? EXIT_RUNTIME : EXIT_BADINPUT;
	}
	if (a->json) json_event(p, e, &s, a->op_times ? &mt : NULL, a->op_times);
	else print_event(p, e, &s, a->op_times ? &mt : NULL, a->op_times);
	if (a->trace && trace_write(&s.r.tl, a->trace, 1e6, p->model, err)) {
		cli_error("sim", "%s", err);
		rc = EXIT_RUNTIME;
	}
	if (!rc && !s.fits) {
		cli_error("sim", "plan does not fit: peak %.2f GiB exceeds %s capacity %.2f GiB by %.2f GiB",
			  s.peak_mem_bytes / GIB, h->name, s.capacity_bytes / GIB, (s.peak_mem_bytes - s.capacity_bytes) / GIB);
		rc = EXIT_INFEASIBLE;
	}
	event_sim_free(&s);
	op_times_free(&mt);
	return rc;
}

int cmd_sim(int argc, char **argv)
{
	struct plan p;
	struct model m;
	struct hw h;
	struct sim_args a;
	char err[ERR_LEN];
	memset(&a, 0, sizeof(a));
	plan_defaults(&p);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { sim_usage(stdout); return EXIT_OK; }
	if (parse_args(argc, argv, &p, &a, err)) { cli_error("sim", "%s", err); return EXIT_BADINPUT; }
	int rc = cli_load_plan("sim", &p, &m, &h);
	if (rc) return rc;
	struct estimate e;
	if (estimate_plan(&m, &h, &p, &e, err)) {
		cli_error("sim", "%s", err);
		return EXIT_RUNTIME;
	}
	if (a.event) return run_event(&m, &h, &p, &e, &a);
	if (a.json) estimate_write_json(&e, &p, stdout);
	else estimate_print(&e, &p, stdout);
	if (!e.fits && !a.json) {
		struct plan_fix fx[FIX_MAX];
		estimate_print_fixes(fx, estimate_fixes(&m, &h, &p, fx, FIX_MAX), stdout);
	}
	if (!e.fits) {
		cli_error("sim", "plan does not fit: peak %.2f GiB exceeds %s capacity %.2f GiB by %.2f GiB",
			  e.peak_mem_bytes / GIB, h.name, e.capacity_bytes / GIB, (e.peak_mem_bytes - e.capacity_bytes) / GIB);
		return EXIT_INFEASIBLE;
	}
	return EXIT_OK;
}
