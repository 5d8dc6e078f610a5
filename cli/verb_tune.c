/* tune — `scaleplan tune`: search every plan for a model on a cluster, rank, record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/tune_bench.h"
#include "sim/framework.h"
#include "sim/util.h"
#include "tuner/search.h"
#include "tuner/store.h"

#define MAX_FIXES 32

static void tune_usage(FILE *f)
{
	fprintf(f,
		"usage: scaleplan tune --model M --gpu G --gpus N --seq L (--gbs S | --gbs-tokens T)\n"
		"                      [--top K] [--objective throughput|cost|time] [--tokens N] [--price P]\n"
		"                      [--framework F] [--fix k=v ...] [--max-pp N] [--db PATH] [--no-db]\n"
		"                      [--report DIR]\n"
		"                      [--json] [--bench-top K [--bench-steps N]\n"
		"                      [--bench-timeout S] [--launcher mpirun|srun] [--bench-exe PATH]\n"
		"                      [--bench-print]]\n\n"
		"  --model M        model profile or config.json          --gpu G    hardware profile\n"
		"  --gpus N         GPUs in the cluster                   --seq L    tokens per sequence\n"
		"  --gbs S          global batch in sequences, or --gbs-tokens T in tokens (4M = 4194304)\n"
		"  --top K          finalists to show and record (default 10)\n"
		"  --objective O    throughput: most tokens/s on exactly N GPUs (default);\n"
		"                   cost: most tokens/s per GPU on N, N/2, ... GPUs (fewest GPU-hours);\n"
		"                   time: most tokens/s on any of N, N/2, ... GPUs\n"
		"  --tokens N       training tokens, for the time and cost line (e.g. 15e12)\n"
		"  --price P        $ per GPU-hour, for the cost line\n"
		"  --framework F    price every plan as framework F runs it: its documented defaults\n"
		"                   (profiles/frameworks/F.json: gradient dtype, allocator, eager ops, when\n"
		"                   ZeRO reduces, ...) set every key the search does not choose, as\n"
		"                   `sim --framework F` does; the search still chooses the parallel degrees,\n"
		"                   ZeRO stage, schedule, recompute, micro-batch and overlap switches\n"
		"  --fix k=v        pin a dimension (tp=8, zero=1, schedule=1f1b, mbs=1, overlap_grad_reduce=0,\n"
		"                   ...) or set any other plan key for every candidate (precision=fp8);\n"
		"                   repeatable\n"
		"  --max-pp N       largest pipeline degree to consider\n"
		"  --db PATH        results store (default %s); --no-db records nothing\n"
		"  --report DIR     write DIR/report.md and DIR/report.html with PNG and SVG charts\n"
		"  --json           machine-readable result on stdout\n"
		"  --bench-top K    then run the K best distinct finalists for real, one `scaleplan run`\n"
		"                   process each (mpirun -np GPUS, one rank per GPU), recorded in the store\n"
		"                   with their finalist: median step time after the first step, tokens/s,\n"
		"                   peak memory per rank, and ok | oom | crashed | timeout; the plans are\n"
		"                   then re-ranked by measurement, predicted beside measured\n"
		"  --bench-steps N  steps per benchmark run, the first a warm-up (default 5)\n"
		"  --bench-timeout S  seconds one run may take before it is ended (default 600)\n"
		"  --launcher L     mpirun (default: runs here) or srun (runs when srun is on PATH, else\n"
		"                   prints the command lines)\n"
		"  --bench-exe PATH the scaleplan binary the runs use (default: this one)\n"
		"  --bench-print    print the benchmark command lines and run nothing\n\n"
		"Every figure is the analytical estimate, the same `scaleplan sim` prints for the plan. Plans\n"
		"within the model's measured error of #1 are marked as ties; --bench-top measures them. On a\n"
		"terminal, a search that takes over a second (SCALEPLAN_PROGRESS_DELAY seconds, if set) shows\n"
		"its progress on stderr (not with --json).\n\n"
		"Exit status: 0 a plan fits, 2 bad input (a pin that breaks a rule, or no valid plan), 3 no\n"
		"plan fits (the closest plan and the changes that lower its peak are printed), 1 other errors.\n",
		STORE_DEFAULT_PATH);
}

/* "tune: 1,234,567 plans, 850,000 plans/s, 3 s left" on stderr, redrawn in place, only once the
 * search has run for a second and at most ten times a second; cleared when done. The delay is
 * SCALEPLAN_PROGRESS_DELAY seconds when that is set to a number >= 0 (as git reads
 * GIT_PROGRESS_DELAY), so a test can see the line on a search of any length. */
struct progress {
	double t0, last, delay;
	int shown;
};

static double progress_delay(void)
{
	const char *v = getenv("SCALEPLAN_PROGRESS_DELAY");
	if (!v || !*v) return 1;
	char *end;
	double d = strtod(v, &end);
	return *end || !(d >= 0 && d <= 3600) ? 1 : d;
}

static void progress_line(void *ctx, long plans, double frac)
{
	struct progress *pg = ctx;
	double t = now_s(), el = t - pg->t0;
	if (frac >= 1) {
		if (pg->shown) fputs("\r\033[K", stderr);
		return;
	}
	if (el < pg->delay || t - pg->last < 0.1) return;
	pg->last = t;
	pg->shown = 1;
	double left = frac > 0.01 ? el * (1 - frac) / frac : 0;
	fprintf(stderr, "\r\033[Ktune: %ld plans, %.0f plans/s, %3.0f%%, about %.0f s left", plans, plans / el,
		100 * frac, left);
	fflush(stderr);
}

struct tune_args {
	const char *model, *gpu, *db, *report, *objective, *framework;
	const char *fixes[MAX_FIXES];
	int nfix;
	long gpus, seq, gbs, top, max_pp;
	double gbs_tokens, tokens, price;
	int json, no_db;
	struct tune_bench_args bench;
};

static int parse_args(int argc, char **argv, struct tune_args *a)
{
	char err[ERR_LEN];
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--help") || !strcmp(o, "-h")) { tune_usage(stdout); return -2; }
		if (!strcmp(o, "--json")) { a->json = 1; continue; }
		if (!strcmp(o, "--no-db")) { a->no_db = 1; continue; }
		if (!strcmp(o, "--bench-print")) { a->bench.print_only = 1; continue; }
		if (strncmp(o, "--", 2) || i + 1 >= argc) { cli_error("tune", "unknown option or missing value: '%s'", o); return -1; }
		const char *v = argv[++i];
		int rc = 0;
		if (!strcmp(o, "--model")) a->model = v;
		else if (!strcmp(o, "--gpu")) a->gpu = v;
		else if (!strcmp(o, "--db")) a->db = v;
		else if (!strcmp(o, "--report")) a->report = v;
		else if (!strcmp(o, "--objective")) a->objective = v;
		else if (!strcmp(o, "--framework")) a->framework = v;
		else if (!strcmp(o, "--gpus")) rc = parse_int(v, "--gpus", 1, 1 << 20, &a->gpus, err);
		else if (!strcmp(o, "--seq")) rc = parse_int(v, "--seq", 1, 1 << 24, &a->seq, err);
		else if (!strcmp(o, "--gbs")) rc = parse_int(v, "--gbs", 1, 1 << 26, &a->gbs, err);
		else if (!strcmp(o, "--top")) rc = parse_int(v, "--top", 1, 1000, &a->top, err);
		else if (!strcmp(o, "--bench-top")) rc = parse_int(v, "--bench-top", 1, 256, &a->bench.top, err);
		else if (!strcmp(o, "--bench-steps")) rc = parse_int(v, "--bench-steps", 1, 100000, &a->bench.steps, err);
		else if (!strcmp(o, "--bench-timeout")) rc = parse_double(v, "--bench-timeout", 0.1, 1e7, &a->bench.timeout_s, err);
		else if (!strcmp(o, "--bench-exe")) a->bench.exe = v;
		else if (!strcmp(o, "--launcher")) {
			if (strcmp(v, "mpirun") && strcmp(v, "srun")) { cli_error("tune", "--launcher: '%s' is not mpirun or srun", v); return -1; }
			a->bench.launcher = v;
		} else if (!strcmp(o, "--max-pp")) rc = parse_int(v, "--max-pp", 1, 4096, &a->max_pp, err);
		else if (!strcmp(o, "--gbs-tokens")) rc = parse_size_suffix(v, "--gbs-tokens", &a->gbs_tokens, err);
		else if (!strcmp(o, "--tokens")) rc = parse_double(v, "--tokens", 0, 1e18, &a->tokens, err);
		else if (!strcmp(o, "--price")) rc = parse_double(v, "--price", 0, 1e6, &a->price, err);
		else if (!strcmp(o, "--fix")) {
			if (a->nfix == MAX_FIXES) { cli_error("tune", "more than %d --fix options", MAX_FIXES); return -1; }
			a->fixes[a->nfix++] = v;
		} else { cli_error("tune", "unknown option '%s'", o); return -1; }
		if (rc) { cli_error("tune", "%s", err); return -1; }
	}
	if (!a->bench.steps) a->bench.steps = 5;
	if (!a->bench.timeout_s) a->bench.timeout_s = 600;
	if (a->bench.top && a->no_db) { cli_error("tune", "--bench-top records into the store: it cannot go with --no-db"); return -1; }
	if (!a->bench.top && (a->bench.print_only || a->bench.launcher || a->bench.exe))
		{ cli_error("tune", "--bench-print, --launcher and --bench-exe go with --bench-top K"); return -1; }
	return 0;
}

static int build_request(const struct tune_args *a, struct search_req *rq, struct model *m, struct hw *h)
{
	char err[ERR_LEN];
	if (!a->model || !a->gpu || !a->gpus || !a->seq || (!a->gbs && !a->gbs_tokens)) {
		cli_error("tune", "--model, --gpu, --gpus, --seq and --gbs (or --gbs-tokens) are required");
		return EXIT_BADINPUT;
	}
	if (model_load(a->model, m, err) || hw_load(a->gpu, h, err)) { cli_error("tune", "%s", err); return EXIT_BADINPUT; }
	memset(rq, 0, sizeof(*rq));
	rq->m = m;
	rq->h = h;
	plan_defaults(&rq->base);
	if (plan_set(&rq->base, "model", a->model, err) || plan_set(&rq->base, "gpu", a->gpu, err)) {
		cli_error("tune", "%s", err);
		return EXIT_BADINPUT;
	}
	search_fix_init(&rq->fix);
	if (a->framework && plan_set(&rq->base, "framework", a->framework, err)) { cli_error("tune", "%s", err); return EXIT_BADINPUT; }
	for (int i = 0; i < a->nfix; i++)
		if (search_fix_parse(rq, a->fixes[i], err)) { cli_error("tune", "%s", err); return EXIT_BADINPUT; }
	if (rq->base.framework[0]) { /* --framework F, or --fix framework=F */
		if (framework_load(rq->base.framework, &rq->fw, err)) { cli_error("tune", "%s", err); return EXIT_BADINPUT; }
		rq->has_fw = 1;
	}
	rq->gpus = (int)a->gpus;
	rq->seq = (int)a->seq;
	rq->gbs = (int)a->gbs;
	if (a->gbs_tokens > 0) {
		double s = a->gbs_tokens / (double)a->seq;
		if (s != (double)(long)s || s < 1) {
			cli_error("tune", "--gbs-tokens %.0f is not a multiple of --seq %ld", a->gbs_tokens, a->seq);
			return EXIT_BADINPUT;
		}
		if (s > (double)(1 << 26)) {
			cli_error("tune", "--gbs-tokens %.0f is %.0f sequences of %ld, more than %d", a->gbs_tokens, s, a->seq, 1 << 26);
			return EXIT_BADINPUT;
		}
		if (a->gbs && a->gbs != (long)s) { cli_error("tune", "--gbs and --gbs-tokens disagree"); return EXIT_BADINPUT; }
		rq->gbs = (int)s;
	}
	rq->top = a->top ? (int)a->top : 10;
	rq->max_pp = (int)a->max_pp;
	rq->objective = OBJ_THROUGHPUT;
	if (a->objective) {
		if (!strcmp(a->objective, "throughput")) rq->objective = OBJ_THROUGHPUT;
		else if (!strcmp(a->objective, "cost")) rq->objective = OBJ_COST;
		else if (!strcmp(a->objective, "time")) rq->objective = OBJ_TIME;
		else { cli_error("tune", "--objective: '%s' is not throughput, cost or time", a->objective); return EXIT_BADINPUT; }
	}
	return EXIT_OK;
}

static char *inputs_json(const struct tune_args *a, const struct search_req *rq)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "model", a->model);
	cJSON_AddStringToObject(o, "gpu", a->gpu);
	cJSON_AddNumberToObject(o, "gpus", rq->gpus);
	cJSON_AddNumberToObject(o, "seq", rq->seq);
	cJSON_AddNumberToObject(o, "gbs", rq->gbs);
	cJSON_AddNumberToObject(o, "top", rq->top);
	cJSON_AddStringToObject(o, "objective", objective_name(rq->objective));
	if (rq->max_pp) cJSON_AddNumberToObject(o, "max_pp", rq->max_pp);
	if (rq->has_fw) cJSON_AddStringToObject(o, "framework", rq->fw.name);
	if (a->tokens > 0) cJSON_AddNumberToObject(o, "tokens", a->tokens);
	if (a->price > 0) cJSON_AddNumberToObject(o, "price", a->price);
	cJSON *fx = cJSON_AddArrayToObject(o, "fix");
	for (int i = 0; i < a->nfix; i++) cJSON_AddItemToArray(fx, cJSON_CreateString(a->fixes[i]));
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static char *rejected_json(const struct search_result *res)
{
	cJSON *o = cJSON_CreateObject();
	for (int i = 0; i < REJ_COUNT; i++)
		if (res->rejected[i]) cJSON_AddNumberToObject(o, search_reason_name((enum reject_reason)i), (double)res->rejected[i]);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* One transaction: the tune and its finalists (full plan JSON each, for `export --id`).
 * 0; -2 when --db names a file that is not a store; -1 for other failures. */
static int record(const struct tune_args *a, const struct search_req *rq, const struct search_result *res,
		  struct search_out *o)
{
	char err[ERR_LEN];
	struct store *s;
	struct store_tune t;
	memset(&t, 0, sizeof(t));
	snprintf(t.version, sizeof(t.version), "0.1");
	snprintf(t.model, sizeof(t.model), "%s", rq->m->name);
	snprintf(t.gpu, sizeof(t.gpu), "%s", rq->h->name);
	t.gpus = rq->gpus;
	t.enumerated = res->enumerated;
	t.feasible = res->feasible;
	t.search_s = res->seconds;
	t.inputs_json = inputs_json(a, rq);
	t.rejected_json = rejected_json(res);
	struct store_finalist *f = calloc((size_t)(res->ntop > 0 ? res->ntop : 1), sizeof(*f));
	int rc = -1;
	if (!t.inputs_json || !t.rejected_json || !f) { cli_error("tune", "out of memory"); goto out; }
	for (int i = 0; i < res->ntop; i++) {
		const struct search_cand *k = &res->top[i];
		struct plan p;
		if (search_cand_plan(rq, k, &p, err)) { cli_error("tune", "%s", err); goto out; }
		f[i] = (struct store_finalist){.rank = i + 1, .plan_json = plan_to_json(&p), .step_time_s = k->step_s,
			.tokens_per_s_per_gpu = k->tokens_per_s_per_gpu, .mfu = k->mfu, .peak_mem_bytes = k->peak_bytes,
			.capacity_bytes = k->capacity_bytes, .fits = k->fits, .bubble_fraction = k->bubble_fraction,
			.exposed_comm_s = k->exposed_comm_s, .refined = 0};
	}
	int orc = store_open(a->db ? a->db : STORE_DEFAULT_PATH, STORE_CREATE, &s, err);
	if (orc) {
		cli_error("tune", "%s", err);
		rc = orc == -2 ? -2 : -1;
		goto out;
	}
	rc = store_add_tune(s, &t, f, res->ntop, err);
	if (rc) cli_error("tune", "%s", err);
	else {
		o->tune_id = t.id;
		o->winner_id = res->ntop ? f[0].id : 0;
	}
	store_close(s);
out:
	for (int i = 0; f && i < res->ntop; i++) free(f[i].plan_json);
	free(f);
	free(t.inputs_json);
	free(t.rejected_json);
	return rc;
}

/* --json with benchmarks: the search's JSON object with "benchmarks" added after they ran */
static int print_json_with_bench(const struct tune_args *a, const struct search_req *rq, const struct search_result *res,
				 const struct search_out *o, int rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem) { cli_error("tune", "out of memory"); return EXIT_RUNTIME; }
	search_write_json(rq, res, o, mem);
	fclose(mem);
	cJSON *j = cJSON_Parse(buf);
	free(buf);
	if (!j) { cli_error("tune", "out of memory"); return EXIT_RUNTIME; }
	if (!rc) rc = tune_bench(&a->bench, a->db ? a->db : STORE_DEFAULT_PATH, o->tune_id, a->model, a->gpu,
				 rq->h->gpus_per_node, j);
	char *s = cJSON_Print(j);
	cJSON_Delete(j);
	if (s) puts(s);
	free(s);
	return s ? rc : EXIT_RUNTIME;
}

int cmd_tune(int argc, char **argv)
{
	struct tune_args a;
	struct search_req rq;
	struct search_result res;
	struct model m;
	struct hw h;
	char err[ERR_LEN];
	memset(&a, 0, sizeof(a));
	int rc = parse_args(argc, argv, &a);
	if (rc) return rc == -2 ? EXIT_OK : EXIT_BADINPUT;
	if ((rc = build_request(&a, &rq, &m, &h))) return rc;
	if (search_fix_check(&rq, err)) { cli_error("tune", "%s", err); return EXIT_BADINPUT; }
	struct progress pg = {now_s(), 0, progress_delay(), 0};
	if (isatty(2) && !a.json) { rq.progress = progress_line; rq.progress_ctx = &pg; }
	if (search_run(&rq, &res, err)) { cli_error("tune", "%s", err); return EXIT_RUNTIME; }
	if (!res.ntop && !res.have_closest) { /* no plan passes the plan rules: the request is at fault */
		search_no_valid_plan(&rq, &res, err);
		cli_error("tune", "%s", err);
		search_result_free(&res);
		return EXIT_BADINPUT;
	}
	struct search_out o = {a.tokens, a.price, 0, 0};
	rc = res.ntop ? EXIT_OK : EXIT_INFEASIBLE;
	int rec = a.no_db ? 0 : record(&a, &rq, &res, &o);
	if (rec) rc = rec == -2 ? EXIT_BADINPUT : EXIT_RUNTIME;
	int bench = a.bench.top && o.tune_id && res.ntop;
	if (a.json && bench) rc = print_json_with_bench(&a, &rq, &res, &o, rc);
	else if (a.json) search_write_json(&rq, &res, &o, stdout);
	else search_print(&rq, &res, &o, stdout);
	if (bench && !a.json && !rc) {
		fflush(stdout);
		rc = tune_bench(&a.bench, a.db ? a.db : STORE_DEFAULT_PATH, o.tune_id, a.model, a.gpu, h.gpus_per_node, NULL);
	}
	if (a.report && search_write_report(&rq, &res, &o, a.report, err)) {
		cli_error("tune", "%s", err);
		rc = EXIT_RUNTIME;
	}
	if (!res.ntop) cli_error("tune", "no plan fits (the closest plan and the changes that lower its peak are above)");
	search_result_free(&res);
	return rc;
}
