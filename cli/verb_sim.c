/* sim — `scaleplan sim`: estimate one plan, with the analytical model (default) or the event
 * engine (sim/event.h), optionally driven by op times measured in a runtime trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "reports/estimate_report.h"
#include "reports/event_report.h"
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
	if (a->json) event_write_json(p, e, &s, a->op_times ? &mt : NULL, a->op_times, stdout);
	else event_print(p, e, &s, a->op_times ? &mt : NULL, a->op_times, stdout);
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
	if (a.json && estimate_write_json(&e, &p, stdout)) {
		cli_error("sim", "out of memory");
		return EXIT_RUNTIME;
	}
	if (!a.json) estimate_print(&e, &p, stdout);
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
