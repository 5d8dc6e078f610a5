/* plot — `scaleplan plot bubble|memory|compare`: charts of plans, drawn by
 * reports/plan_charts.h through gnuplot. Timelines are the event engine's (sim/event.h); memory
 * per rank kind, step-time breakdowns and peaks are the analytical estimate's, the figures
 * `sim` and `tune` print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "reports/plan_charts.h"
#include "reports/trace.h"
#include "sim/estimate.h"
#include "sim/event.h"
#include "sim/util.h"

static void plot_usage(FILE *f)
{
	fprintf(f,
		"usage: scaleplan plot bubble  PLAN-FLAGS -o FILE.png|FILE.svg [--max-rows N] [--op-times TRACE]\n"
		"       scaleplan plot memory  PLAN-FLAGS -o FILE [--kind breakdown|time|both] [--op-times TRACE]\n"
		"       scaleplan plot compare --plan A.json --plan B.json ... -o FILE\n"
		"       scaleplan plot compare PLAN-FLAGS --vs PLAN-FLAGS [--vs ...] -o FILE\n\n"
		"  bubble    the event engine's timeline of the plan: one row per pipeline rank, boxes for\n"
		"            F, B, W, fused B+W, communication and optimizer, micro-batch numbers where\n"
		"            they fit; more than --max-rows (default 32) ranks are evenly sampled\n"
		"  memory    stacked memory per rank kind (analytical estimate) against the capacity, and\n"
		"            memory over one step per pipeline rank (event engine); --kind picks one panel\n"
		"  compare   step-time breakdown (compute, recompute, exposed communication per dimension,\n"
		"            bubble, optimizer, overhead) and peak memory of each plan against its own\n"
		"            capacity, side by side (analytical estimate); each --plan FILE starts a new\n"
		"            plan, so does --vs\n"
		"  -o FILE   output; .png (pngcairo) or .svg picks the format\n"
		"  --op-times TRACE  measured op times (Chrome trace from the runtime) replace the\n"
		"            model's for the stages they cover, as in `sim --op-times`\n\n"
		"Exit status: 0 written, 2 bad input (unknown kind, bad extension, a plan rule), 1 other.\n\n");
	plan_print_flags_help(f);
}

#define MAX_PLANS PLOT_CMP_MAX

struct plot_args {
	const char *what, *out, *kind, *op_times;
	long max_rows;
	struct plan plan[MAX_PLANS];
	char label[MAX_PLANS][64];
	int nplans;
	int had_plan_file;  /* the current group already took a --plan file */
};

static int new_group(struct plot_args *a, char *err)
{
	if (a->nplans == MAX_PLANS) return errf(err, "compare: at most %d plans", MAX_PLANS);
	plan_defaults(&a->plan[a->nplans]);
	a->label[a->nplans][0] = 0;
	a->nplans++;
	a->had_plan_file = 0;
	return 0;
}

static int parse_args(int argc, char **argv, struct plot_args *a, char *err)
{
	if (argc < 2) return errf(err, "give a chart: bubble, memory or compare (see --help)");
	a->what = argv[1];
	if (strcmp(a->what, "bubble") && strcmp(a->what, "memory") && strcmp(a->what, "compare"))
		return errf(err, "unknown chart '%s' (bubble, memory or compare)", a->what);
	if (new_group(a, err)) return -1;
	int compare = !strcmp(a->what, "compare");
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "-o") || !strcmp(o, "--output") || !strcmp(o, "--kind") || !strcmp(o, "--max-rows") ||
		    !strcmp(o, "--op-times")) {
			if (i + 1 >= argc) return errf(err, "%s: missing value", o);
			const char *v = argv[++i];
			if (o[1] == 'o' || !strcmp(o, "--output")) a->out = v;
			else if (!strcmp(o, "--kind")) a->kind = v;
			else if (!strcmp(o, "--op-times")) a->op_times = v;
			else if (parse_int(v, "--max-rows", 2, 256, &a->max_rows, err)) return -1;
			continue;
		}
		if (!strcmp(o, "--vs")) {
			if (!compare) return errf(err, "--vs applies only to plot compare");
			if (new_group(a, err)) return -1;
			continue;
		}
		if (compare && !strcmp(o, "--plan") && i + 1 < argc) {
			if (a->had_plan_file && new_group(a, err)) return -1;
			a->had_plan_file = 1;
			const char *base = strrchr(argv[i + 1], '/');
			snprintf(a->label[a->nplans - 1], sizeof(a->label[0]), "%s", base ? base + 1 : argv[i + 1]);
		}
		int r = cli_plan_flag(argc, argv, &i, &a->plan[a->nplans - 1], err);
		if (r < 0) return -1;
		if (r == 0) return errf(err, "unknown option '%s'", o);
	}
	if (!a->out) return errf(err, "-o FILE.png or -o FILE.svg is required");
	if (plot_format(a->out, err) < 0) return -1;
	if (a->kind && strcmp(a->what, "memory")) return errf(err, "--kind applies only to plot memory");
	if (a->kind && strcmp(a->kind, "breakdown") && strcmp(a->kind, "time") && strcmp(a->kind, "both"))
		return errf(err, "--kind: '%s' is not breakdown, time or both", a->kind);
	if (compare && a->op_times) return errf(err, "--op-times applies to plot bubble and plot memory");
	if (compare && a->nplans < 2)
		return errf(err, "compare needs at least two plans (--plan A.json --plan B.json, or flags --vs flags)");
	return 0;
}

/* Loads, estimates and simulates one plan (with measured op times when given); an exit code. */
static int simulate(struct plan *p, const char *op_times, struct model *m, struct hw *h, struct estimate *e,
		    struct event_sim *s)
{
	char err[ERR_LEN];
	struct op_times mt;
	memset(&mt, 0, sizeof(mt));
	int rc = cli_load_plan("plot", p, m, h);
	if (rc) return rc;
	if (event_check(p, err) || (op_times && trace_read_op_times(op_times, &mt, err))) {
		cli_error("plot", "%s", err);
		return EXIT_BADINPUT;
	}
	if (estimate_plan(m, h, p, e, err) || event_run(m, h, p, e, op_times ? &mt : NULL, s, err)) {
		cli_error("plot", "%s", err);
		rc = strncmp(err, "op times", 8) ? EXIT_RUNTIME : EXIT_BADINPUT;
	}
	op_times_free(&mt);
	return rc;
}

static int one_plan(struct plot_args *a)
{
	char err[ERR_LEN];
	struct model m;
	struct hw h;
	struct estimate e;
	struct event_sim s;
	int rc = simulate(&a->plan[0], a->op_times, &m, &h, &e, &s);
	if (rc) return rc;
	if (!strcmp(a->what, "bubble")) {
		rc = chart_bubble(&a->plan[0], &s, a->out, (int)a->max_rows, err);
	} else {
		int panels = !a->kind || !strcmp(a->kind, "both") ? PLOT_MEM_BOTH
			     : !strcmp(a->kind, "time") ? PLOT_MEM_TIME : PLOT_MEM_BREAKDOWN;
		rc = chart_memory(&a->plan[0], &e, &s, panels, a->out, err);
	}
	if (rc) cli_error("plot", "%s", err);
	else if (!strcmp(a->what, "bubble"))
		printf("wrote %s (event engine: step %.4f s, bubble fraction %.4f)\n", a->out, s.step_s, s.bubble_fraction);
	else
		printf("wrote %s (analytical estimate: peak %.2f GiB of %.2f GiB%s)\n", a->out, e.peak_mem_bytes / GIB,
		       e.capacity_bytes / GIB, e.fits ? "" : ", does not fit");
	event_sim_free(&s);
	return rc ? EXIT_RUNTIME : EXIT_OK;
}

static int compare(struct plot_args *a)
{
	char err[ERR_LEN];
	struct plot_cmp_plan *cp = calloc((size_t)a->nplans, sizeof(*cp));
	if (!cp) { cli_error("plot", "out of memory"); return EXIT_RUNTIME; }
	int rc = EXIT_OK;
	for (int i = 0; i < a->nplans && !rc; i++) {
		struct model m;
		struct hw h;
		struct estimate e;
		struct event_sim s;
		if ((rc = simulate(&a->plan[i], NULL, &m, &h, &e, &s))) break;
		char desc[96], label[160];
		plan_short(&a->plan[i], desc, sizeof(desc));
		snprintf(label, sizeof(label), "%s: %s", a->label[i][0] ? a->label[i] : (char[2]){(char)('A' + i), 0}, desc);
		chart_cmp_entry_est(label, &e, &cp[i]);
		printf("%-60s step %.4f s  peak %.2f GiB of %.2f GiB\n", label, e.step_time_s, e.peak_mem_bytes / GIB,
		       e.capacity_bytes / GIB);
		event_sim_free(&s);
	}
	if (!rc && chart_compare(cp, a->nplans, "plans compared (analytical estimate, as sim and tune)", a->out, err)) {
		cli_error("plot", "%s", err);
		rc = EXIT_RUNTIME;
	}
	if (!rc) printf("wrote %s (%d plans)\n", a->out, a->nplans);
	free(cp);
	return rc;
}

int cmd_plot(int argc, char **argv)
{
	char err[ERR_LEN];
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { plot_usage(stdout); return EXIT_OK; }
	struct plot_args *a = calloc(1, sizeof(*a));
	if (!a) { cli_error("plot", "out of memory"); return EXIT_RUNTIME; }
	int rc;
	if (parse_args(argc, argv, a, err)) {
		cli_error("plot", "%s", err);
		rc = EXIT_BADINPUT;
	} else {
		rc = !strcmp(a->what, "compare") ? compare(a) : one_plan(a);
	}
	free(a);
	return rc;
}
