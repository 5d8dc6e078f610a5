/* pipeline — `scaleplan pipeline`: simulate one pipeline schedule with given per-stage op
 * times and report span, bubbles (both conventions) and activations in flight per rank;
 * optionally draw the bubble diagram and write a Chrome trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "reports/pipeline_report.h"
#include "reports/plot.h"
#include "reports/trace.h"
#include "sim/engine.h"
#include "sim/schedule.h"
#include "sim/util.h"

struct pipe_args {
	enum schedule sched;
	long pp, m, vpp;
	double t_f, t_b, t_w, t_comm, t_fb;
	int have_sched, have_pp, have_m, have_f, have_b;
	int json;
	const char *plot, *trace, *unit;
};

static void pipeline_usage(FILE *f)
{
	fprintf(f,
		"usage: scaleplan pipeline --schedule S --pp P --microbatches M [--vpp V]\n"
		"                          --t-f X --t-b Y [--t-w Z] [--t-comm C] [--t-fb T]\n"
		"                          [--unit ms] [--json] [--plot FILE.png|FILE.svg] [--trace FILE.json]\n\n"
		"Simulates one training step of a pipeline schedule (discrete events, reference/model.md\n"
		"§4.8) and prints the span, the bubble per rank in both conventions and the peak number of\n"
		"micro-batch activations held per rank.\n\n"
		"  --schedule S      afab, 1f1b, interleaved, zb-h1, zb-h2, zb-v, dualpipe, dualpipev\n"
		"  --pp P            pipeline ranks (dualpipe: even; zb-v/dualpipev hold 2 stages per rank)\n"
		"  --microbatches M  micro-batches per step (dualpipe: both directions together)\n"
		"  --vpp V           model chunks per rank, interleaved only (pp must divide M)\n"
		"  --t-f X           forward time of one micro-batch on one stage (model chunk), any unit\n"
		"  --t-b Y           input-gradient backward time; schedules with a fused backward\n"
		"                    (afab, 1f1b, interleaved) run B+W as one op of Y+Z\n"
		"  --t-w Z           weight-gradient backward time (default 0)\n"
		"  --t-comm C        point-to-point send time between stages on different ranks (default 0)\n"
		"  --t-fb T          time of an overlapped F&B pair (dualpipe*); default F + B + W\n"
		"  --unit U          unit of the times: s, ms (default) or us; labels the plot, scales the trace\n"
		"  --json            one JSON object instead of the table\n"
		"  --plot FILE       bubble diagram, PNG or SVG by extension (needs gnuplot)\n"
		"  --trace FILE      Chrome Trace Event JSON (opens in Perfetto)\n\n"
		"Bubble fraction = (span - busy) / busy (Megatron: bubble over ideal); bubble rate =\n"
		"(span - busy) / span (zero-bubble paper), each rank's over its own span; the headline\n"
		"values are the worst rank's. The headline span runs from the first op to the last event\n"
		"(the bubble diagram's width, sends included).\n");
}

/* --key value or --key=value; returns the value or NULL (and sets err) when missing */
static const char *opt_value(int argc, char **argv, int *i, const char *eq, char *err)
{
	if (eq) return eq + 1;
	if (*i + 1 < argc) return argv[++*i];
	errf(err, "%.*s: missing value", (int)strcspn(argv[*i], "="), argv[*i]);
	return NULL;
}

static int parse_time(const char *val, const char *field, double *out, int *have, char *err)
{
	if (parse_double(val, field, -1e300, 1e300, out, err)) return -1;
	if (*out < 0) return errf(err, "%s: %s must not be negative", field, val);
	if (*out > 1e12) return errf(err, "%s: %s must be at most 1e12", field, val);
	if (have) *have = 1;
	return 0;
}

static int parse_one(struct pipe_args *a, int argc, char **argv, int *i, char *err)
{
	const char *arg = argv[*i];
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
#define IS(name) (n == strlen(name) && !strncmp(arg, name, n))
	if (IS("--json")) { a->json = 1; return 0; }
	const char *v;
	if (IS("--schedule")) {
		if (!(v = opt_value(argc, argv, i, eq, err))) return -1;
		if (schedule_from_name(v, &a->sched) || a->sched == SCHED_NONE) {
			char names[256];
			return errf(err, "--schedule: unknown schedule '%s' (%s)", v, sched_name_list(names, sizeof(names), ", ", 0));
		}
		a->have_sched = 1;
		return 0;
	}
	if (!IS("--pp") && !IS("--microbatches") && !IS("--vpp") && !IS("--t-f") && !IS("--t-b") &&
	    !IS("--t-w") && !IS("--t-comm") && !IS("--t-fb") && !IS("--plot") && !IS("--trace") && !IS("--unit"))
		return errf(err, "unknown option '%s' (see --help)", arg);
	if (!(v = opt_value(argc, argv, i, eq, err))) return -1;
	if (IS("--pp")) { a->have_pp = 1; return parse_int(v, "--pp", 1, 4096, &a->pp, err); }
	if (IS("--microbatches")) { a->have_m = 1; return parse_int(v, "--microbatches", 1, 1 << 20, &a->m, err); }
	if (IS("--vpp")) return parse_int(v, "--vpp", 1, 64, &a->vpp, err);
	if (IS("--t-f")) return parse_time(v, "--t-f", &a->t_f, &a->have_f, err);
	if (IS("--t-b")) return parse_time(v, "--t-b", &a->t_b, &a->have_b, err);
	if (IS("--t-w")) return parse_time(v, "--t-w", &a->t_w, NULL, err);
	if (IS("--t-comm")) return parse_time(v, "--t-comm", &a->t_comm, NULL, err);
	if (IS("--t-fb")) return parse_time(v, "--t-fb", &a->t_fb, NULL, err);
	if (IS("--plot")) { a->plot = v; return 0; }
	if (IS("--trace")) { a->trace = v; return 0; }
	a->unit = v;
	if (strcmp(v, "s") && strcmp(v, "ms") && strcmp(v, "us"))
		return errf(err, "--unit: '%s' must be s, ms or us", v);
	return 0;
#undef IS
}

static int check_required(const struct pipe_args *a, char *err)
{
	if (!a->have_sched) return errf(err, "--schedule is required");
	if (!a->have_pp) return errf(err, "--pp is required");
	if (!a->have_m) return errf(err, "--microbatches is required");
	if (!a->have_f) return errf(err, "--t-f is required");
	if (!a->have_b) return errf(err, "--t-b is required");
	return 0;
}

/* Runs the engine with uniform per-stage times. */
static int simulate(const struct pipe_args *a, const struct sched *s, struct engine_result *r, char *err)
{
	int n = s->nstages;
	double *t = malloc((size_t)n * 5 * sizeof(*t));
	if (!t) return errf(err, "out of memory");
	for (int k = 0; k < n; k++) {
		t[k] = a->t_f;
		t[n + k] = a->t_b;
		t[2 * n + k] = a->t_w;
		t[3 * n + k] = a->t_comm;
		t[4 * n + k] = a->t_fb;
	}
	struct engine_costs c = {.t_f = t, .t_b = t + n, .t_w = t + 2 * n, .p2p = t + 3 * n, .t_fb = t + 4 * n};
	int rc = engine_run(s, &c, r, err);
	free(t);
	return rc;
}

static int write_outputs(const struct pipe_args *a, const struct sched *s, const struct engine_result *r)
{
	char err[ERR_LEN], title[256], vpp[16] = "";
	if (s->fam->flags & SCHED_F_VIRTUAL) snprintf(vpp, sizeof(vpp), "  vpp=%d", s->chunks);
	snprintf(title, sizeof(title), "%s  pp=%d  m=%d%s:  bubble fraction %.3f (bubble/ideal), rate %.3f (bubble/span)",
		 schedule_name(s->type), s->pp, s->m, vpp, r->bubble_fraction, r->bubble_rate);
	if (a->plot) {
		struct plot_bubble_opts o = {.title = title, .time_unit = a->unit};
		if (plot_bubble(&r->tl, a->plot, &o, err)) { cli_error("pipeline", "%s", err); return EXIT_RUNTIME; }
	}
	if (a->trace) {
		double us = !strcmp(a->unit, "s") ? 1e6 : !strcmp(a->unit, "ms") ? 1e3 : 1;
		if (trace_write(&r->tl, a->trace, us, title, err)) { cli_error("pipeline", "%s", err); return EXIT_RUNTIME; }
	}
	return EXIT_OK;
}

int cmd_pipeline(int argc, char **argv)
{
	struct pipe_args a = {.vpp = 1, .unit = "ms"};
	char err[ERR_LEN];
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { pipeline_usage(stdout); return EXIT_OK; }
		if (parse_one(&a, argc, argv, &i, err)) { cli_error("pipeline", "%s", err); return EXIT_BADINPUT; }
	}
	if (check_required(&a, err) || (a.plot && plot_format(a.plot, err) < 0)) {
		cli_error("pipeline", "%s", err);
		return EXIT_BADINPUT;
	}
	struct sched *s = sched_create(a.sched, (int)a.pp, (int)a.m, (int)a.vpp, err);
	if (!s) { cli_error("pipeline", "%s", err); return EXIT_BADINPUT; }
	struct engine_result r;
	if (simulate(&a, s, &r, err)) {
		cli_error("pipeline", "%s", err);
		sched_destroy(s);
		return EXIT_RUNTIME;
	}
	int rc = EXIT_OK;
	struct pipeline_times t = {a.unit, a.t_f, a.t_b, a.t_w, a.t_comm};
	if (a.json) {
		if (pipeline_write_json(s, &r, &t, stdout)) { cli_error("pipeline", "out of memory"); rc = EXIT_RUNTIME; }
	} else {
		pipeline_print(s, &r, &t, stdout);
	}
	if (!rc) rc = write_outputs(&a, s, &r);
	engine_result_free(&r);
	sched_destroy(s);
	return rc;
}
