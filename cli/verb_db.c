/* db — `scaleplan db`: read the results store. list, show, diff and export the recorded
 * tunes and their finalists; nothing here writes (the store is opened read-only, so a store
 * the user may only read works). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/db_bench.h"
#include "reports/escape.h"
#include "sim/util.h"
#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "tuner/store.h"

static void db_usage(FILE *f)
{
	fprintf(f,
		"usage: scaleplan db [--db PATH] list [--runs] [--json]\n"
		"       scaleplan db [--db PATH] runs [--json]\n"
		"       scaleplan db [--db PATH] show ID [--json]\n"
		"       scaleplan db [--db PATH] diff ID1 ID2\n"
		"       scaleplan db [--db PATH] export [--json | --csv | --tsv]\n\n"
		"  list            one line per recorded tune (--json: an array, one object per tune);\n"
		"                  --runs: the runs instead, as `db runs`\n"
		"  runs            every run recorded by `scaleplan run --db`: what it measured (mean step\n"
		"                  time and tokens/s without the first step, peak memory, final loss)\n"
		"                  beside the prediction it was made for (its finalist's, or the\n"
		"                  analytical estimate of its plan on the plan's GPU)\n"
		"  show ID         a tune's request, counts, rejections and finalists (with finalist ids\n"
		"                  for `scaleplan export --id`), and what the benchmarked ones measured\n"
		"                  beside what was predicted (--json: measured_step_time_s,\n"
		"                  measured_tokens_per_s_per_gpu, bench_status ok|oom|crashed|timeout)\n"
		"  diff ID1 ID2    what differs between two tunes: request, best plan, prediction, and\n"
		"                  the fastest measured plan of each\n"
		"  export          every finalist of every tune, one row each (default --json); --tsv:\n"
		"                  every benchmark as a measured run in the validation format\n"
		"                  (shared/validation/FORMAT.md) for `validate` and `calibrate`\n"
		"  --db PATH       the store (default %s), opened read-only\n\n"
		"Exit status: 0 ok; 2 bad input (no such store, not a scaleplan store, unknown id);\n"
		"1 other errors (a busy or damaged store).\n", STORE_DEFAULT_PATH);
}

static void fmt_time(double t, char *buf, size_t cap)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (gmtime_r(&tt, &tm)) strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
	else snprintf(buf, cap, "%.0f", t);
}

/* The finalist's plan, parsed with the one plan parser; defaults when unreadable. */
static void finalist_plan(const struct store_finalist *f, struct plan *p)
{
	char err[ERR_LEN];
	plan_defaults(p);
	if (plan_from_json(f->plan_json, p, err)) plan_defaults(p);
}

static cJSON *finalist_json(const struct store_finalist *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "finalist_id", (double)f->id);
	cJSON_AddNumberToObject(o, "tune_id", (double)f->tune_id);
	cJSON_AddNumberToObject(o, "rank", f->rank);
	cJSON *pl = cJSON_Parse(f->plan_json);
	cJSON_AddItemToObject(o, "plan", pl ? pl : cJSON_CreateNull());
	cJSON_AddNumberToObject(o, "step_time_s", f->step_time_s);
	cJSON_AddNumberToObject(o, "tokens_per_s_per_gpu", f->tokens_per_s_per_gpu);
	cJSON_AddNumberToObject(o, "mfu", f->mfu);
	cJSON_AddNumberToObject(o, "peak_mem_bytes", f->peak_mem_bytes);
	cJSON_AddNumberToObject(o, "capacity_bytes", f->capacity_bytes);
	cJSON_AddBoolToObject(o, "fits", f->fits);
	cJSON_AddNumberToObject(o, "bubble_fraction", f->bubble_fraction);
	cJSON_AddNumberToObject(o, "exposed_comm_s", f->exposed_comm_s);
	cJSON_AddBoolToObject(o, "refined", f->refined);
	cJSON_AddStringToObject(o, "engine", f->refined ? "event" : "analytical");
	return o;
}

static cJSON *tune_json(const struct store_tune *t)
{
	char when[32];
	fmt_time(t->created_s, when, sizeof(when));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)t->id);
	cJSON_AddStringToObject(o, "created", when);
	cJSON_AddStringToObject(o, "version", t->version);
	cJSON_AddStringToObject(o, "model", t->model);
	cJSON_AddStringToObject(o, "gpu", t->gpu);
	cJSON_AddNumberToObject(o, "gpus", t->gpus);
	cJSON *in = cJSON_Parse(t->inputs_json), *rej = cJSON_Parse(t->rejected_json);
	cJSON_AddItemToObject(o, "inputs", in ? in : cJSON_CreateNull());
	cJSON_AddNumberToObject(o, "enumerated", (double)t->enumerated);
	cJSON_AddNumberToObject(o, "feasible", (double)t->feasible);
	cJSON_AddItemToObject(o, "rejected", rej ? rej : cJSON_CreateNull());
	cJSON_AddNumberToObject(o, "search_s", t->search_s);
	cJSON_AddNumberToObject(o, "finalists", t->nfinalists);
	return o;
}

static int print_json(cJSON *o)
{
	char *s = cJSON_Print(o);
	cJSON_Delete(o);
	if (!s) return EXIT_RUNTIME;
	puts(s);
	free(s);
	return EXIT_OK;
}

static int db_list(struct store *s, int json)
{
	char err[ERR_LEN], when[32];
	struct store_tune *t;
	int n;
	if (store_list_tunes(s, &t, &n, err)) { cli_error("db", "%s", err); return EXIT_RUNTIME; }
	cJSON *arr = json ? cJSON_CreateArray() : NULL;
	if (!json)
		printf("%4s  %-20s  %-18s  %-12s %6s %10s %9s %8s  %s\n", "id", "created (UTC)", "model", "gpu",
		       "gpus", "enumerated", "feasible", "finalists", "best tokens/s/GPU");
	int rc = EXIT_OK;
	for (int i = 0; i < n && rc == EXIT_OK; i++) {
		struct store_finalist *f;
		int nf;
		if (store_list_finalists(s, t[i].id, &f, &nf, err)) { cli_error("db", "%s", err); rc = EXIT_RUNTIME; break; }
		if (json) {
			cJSON *o = tune_json(&t[i]);
			cJSON_AddItemToObject(o, "best", nf ? finalist_json(&f[0]) : cJSON_CreateNull());
			cJSON_AddItemToArray(arr, o);
		} else {
			fmt_time(t[i].created_s, when, sizeof(when));
			printf("%4ld  %-20s  %-18.18s  %-12.12s %6d %10ld %9ld %8d", t[i].id, when, t[i].model,
			       t[i].gpu, t[i].gpus, t[i].enumerated, t[i].feasible, t[i].nfinalists);
			if (nf) printf("   %.0f%s\n", f[0].tokens_per_s_per_gpu, f[0].fits ? "" : " (does not fit)");
			else printf("   -\n");
		}
		store_free_finalists(f, nf);
	}
	store_free_tunes(t, n);
	if (json) {
		if (rc) { cJSON_Delete(arr); return rc; }
		return print_json(arr);
	}
	return rc;
}

static void print_finalists(const struct store_finalist *f, int n, const struct store_bench *b, int nb)
{
	printf("%6s %4s  %4s %3s %3s %3s %3s %3s %4s %3s %-9s %4s %-11s %-11s %-7s %10s %12s %6s %9s  %-10s%s\n", "fin.id",
	       "rank", "dp", "tp", "pp", "cp", "ep", "vpp", "zero", "sp", "recompute", "mbs", "schedule", "order",
	       "overlap", "step (s)", "tokens/s/GPU", "MFU", "peak GiB", "engine",
	       nb ? "   measured s  tok/s/GPU    error  bench" : "");
	for (int i = 0; i < n; i++) {
		struct plan p;
		char ov[8];
		finalist_plan(&f[i], &p);
		snprintf(ov, sizeof(ov), "%s%s%s%s%s", p.overlap_grad_reduce ? "R" : "", p.overlap_param_gather ? "G" : "",
			 p.overlap_tp_comm ? "T" : "", p.overlap_tp_bwd && !p.overlap_tp_comm ? "B" : "", p.overlap_p2p ? "P" : "");
		printf("%6ld %4d  %4d %3d %3d %3d %3d %3d %4d %3s %-9s %4d %-11s %-11s %-7s %10.4g %12.0f %5.1f%% %8.1f%s  %-10s",
		       f[i].id, f[i].rank, p.dp, p.tp, p.pp, p.cp, p.ep, p.vpp, p.zero, p.sp ? "on" : "off",
		       recompute_name(p.recompute), p.mbs, schedule_name(p.schedule), p.order, ov[0] ? ov : "-",
		       f[i].step_time_s, f[i].tokens_per_s_per_gpu, 100 * f[i].mfu, f[i].peak_mem_bytes / (1 << 30),
		       f[i].fits ? "" : " (does not fit)", f[i].refined ? "event" : "analytical");
		const struct store_bench *x = db_bench_of(b, nb, f[i].id);
		if (x && !strcmp(x->status, "ok"))
			printf("   %10.4g %10.0f %+7.1f%%  ok", x->step_time_s, x->tokens_per_s_per_gpu,
			       100 * (f[i].step_time_s / x->step_time_s - 1));
		else if (x) printf("   %10s %10s %8s  %s", "-", "-", "-", x->status);
		printf("\n");
	}
	printf("(overlap: R gradient reduction, G parameter gather, T TP collectives, B TP backward, P pipeline sends)\n");
}

static int db_show(struct store *s, long id, int json)
{
	char err[ERR_LEN], when[32];
	struct store_tune t;
	struct store_finalist *f;
	struct store_bench *b = NULL;
	int nf, nb = 0;
	if (store_get_tune(s, id, &t, err)) { cli_error("db", "%s", err); return EXIT_BADINPUT; }
	if (store_list_finalists(s, id, &f, &nf, err)) {
		store_tune_clear(&t);
		cli_error("db", "%s", err);
		return EXIT_RUNTIME;
	}
	if (store_list_benchmarks(s, id, &b, &nb, err)) {
		store_tune_clear(&t);
		store_free_finalists(f, nf);
		cli_error("db", "%s", err);
		return EXIT_RUNTIME;
	}
	int rc = EXIT_OK;
	if (json) {
		cJSON *o = tune_json(&t), *arr = cJSON_CreateArray();
		for (int i = 0; i < nf; i++) {
			cJSON *fo = finalist_json(&f[i]);
			db_bench_json(fo, db_bench_of(b, nb, f[i].id));
			cJSON_AddItemToArray(arr, fo);
		}
		cJSON_ReplaceItemInObjectCaseSensitive(o, "finalists", arr);
		rc = print_json(o);
	} else {
		fmt_time(t.created_s, when, sizeof(when));
		printf("tune %ld  (%s, scaleplan %s, search %.2f s)\n", t.id, when, t.version, t.search_s);
		printf("request:    %s\n", t.inputs_json);
		printf("enumerated: %ld plans, %ld feasible\n", t.enumerated, t.feasible);
		printf("rejected:   %s\n\n", t.rejected_json);
		print_finalists(f, nf, b, nb);
		if (nb) printf("\nmeasured: %d benchmark%s (scaleplan run, median step after warm-up); error = predicted/measured - 1\n",
			       nb, nb == 1 ? "" : "s");
	}
	store_free_benchmarks(b, nb);
	store_free_finalists(f, nf);
	store_tune_clear(&t);
	return rc;
}

/* Prints "label key: a -> b" for every top-level key whose value differs; returns the count. */
static int diff_objects(const char *label, const char *ja, const char *jb)
{
	cJSON *a = cJSON_Parse(ja), *b = cJSON_Parse(jb);
	int n = 0;
	for (int pass = 0; pass < 2; pass++) {
		cJSON *x = pass ? b : a, *y = pass ? a : b;
		for (cJSON *it = x ? x->child : NULL; it; it = it->next) {
			cJSON *other = y ? cJSON_GetObjectItemCaseSensitive(y, it->string) : NULL;
			if (pass && other) continue; /* already compared in the first pass */
			char *sx = cJSON_PrintUnformatted(it), *sy = other ? cJSON_PrintUnformatted(other) : NULL;
			if (!sy || strcmp(sx, sy)) {
				printf("  %s %-22s %s -> %s\n", label, it->string, pass ? "(absent)" : sx,
				       pass ? sx : (sy ? sy : "(absent)"));
				n++;
			}
			free(sx);
			free(sy);
		}
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
	return n;
}

static void diff_number(const char *name, double a, double b, int *n)
{
	if (a == b) return;
	printf("  predicted %-20s %.6g -> %.6g (%+.1f%%)\n", name, a, b, a ? 100 * (b - a) / a : 0.0);
	(*n)++;
}

/* the fastest measured benchmark of each tune, side by side */
static void diff_measured(struct store *s, const long *ids, int *n)
{
	char err[ERR_LEN];
	double tps[2] = {0, 0}, step[2] = {0, 0};
	long fin[2] = {0, 0};
	int runs[2] = {0, 0};
	for (int k = 0; k < 2; k++) {
		struct store_bench *b;
		int nb;
		if (store_list_benchmarks(s, ids[k], &b, &nb, err)) continue;
		for (int i = 0; i < nb; i++) {
			runs[k]++;
			if (!strcmp(b[i].status, "ok") && b[i].tokens_per_s_per_gpu > tps[k]) {
				tps[k] = b[i].tokens_per_s_per_gpu;
				step[k] = b[i].step_time_s;
				fin[k] = b[i].finalist_id;
			}
		}
		store_free_benchmarks(b, nb);
	}
	if (!runs[0] && !runs[1]) return;
	printf("  measured %d -> %d benchmarks; fastest measured: finalist %ld (%.0f tokens/s/GPU, %.4g s) -> finalist %ld (%.0f, %.4g s)\n",
	       runs[0], runs[1], fin[0], tps[0], step[0], fin[1], tps[1], step[1]);
	(*n)++;
}

static int db_diff(struct store *s, long id1, long id2)
{
	char err[ERR_LEN];
	struct store_tune t[2];
	struct store_finalist *f[2] = {NULL, NULL};
	int nf[2] = {0, 0}, got = 0, rc = EXIT_OK;
	long ids[2] = {id1, id2};
	for (; got < 2; got++) {
		if (store_get_tune(s, ids[got], &t[got], err)) { rc = EXIT_BADINPUT; break; }
		if (store_list_finalists(s, ids[got], &f[got], &nf[got], err)) { store_tune_clear(&t[got]); rc = EXIT_RUNTIME; break; }
	}
	if (rc) cli_error("db", "%s", err);
	else {
		printf("tune %ld -> tune %ld\n", id1, id2);
		int n = diff_objects("request", t[0].inputs_json, t[1].inputs_json);
		if (!nf[0] || !nf[1]) {
			printf("  (one tune has no finalists; best plans not compared)\n");
		} else {
			n += diff_objects("best plan", f[0][0].plan_json, f[1][0].plan_json);
			diff_number("step_time_s", f[0][0].step_time_s, f[1][0].step_time_s, &n);
			diff_number("tokens_per_s_per_gpu", f[0][0].tokens_per_s_per_gpu, f[1][0].tokens_per_s_per_gpu, &n);
			diff_number("mfu", f[0][0].mfu, f[1][0].mfu, &n);
			diff_number("peak_mem_bytes", f[0][0].peak_mem_bytes, f[1][0].peak_mem_bytes, &n);
		}
		diff_measured(s, ids, &n);
		diff_number("enumerated", (double)t[0].enumerated, (double)t[1].enumerated, &n);
		diff_number("feasible", (double)t[0].feasible, (double)t[1].feasible, &n);
		if (!n) printf("  (no differences)\n");
	}
	for (int i = 0; i < got; i++) {
		store_tune_clear(&t[i]);
		store_free_finalists(f[i], nf[i]);
	}
	return rc;
}

static int db_export(struct store *s, int csv)
{
	char err[ERR_LEN];
	struct store_tune *t;
	struct store_finalist *f;
	int nt, nf;
	if (store_list_tunes(s, &t, &nt, err)) { cli_error("db", "%s", err); return EXIT_RUNTIME; }
	if (store_list_finalists(s, 0, &f, &nf, err)) {
		store_free_tunes(t, nt);
		cli_error("db", "%s", err);
		return EXIT_RUNTIME;
	}
	cJSON *arr = csv ? NULL : cJSON_CreateArray();
	if (csv)
		printf("tune_id,finalist_id,rank,model,gpu,gpus,dp,tp,pp,cp,ep,vpp,zero,sp,recompute,"
		       "recompute_layers,mbs,gbs,seq,schedule,order,step_time_s,tokens_per_s_per_gpu,mfu,"
		       "peak_mem_bytes,capacity_bytes,fits,bubble_fraction,exposed_comm_s,refined\n");
	for (int i = 0, k = 0; i < nf; i++) {
		while (k < nt && t[k].id < f[i].tune_id) k++;
		const struct store_tune *tt = k < nt && t[k].id == f[i].tune_id ? &t[k] : NULL;
		if (!csv) {
			cJSON *o = finalist_json(&f[i]);
			cJSON_AddStringToObject(o, "model", tt ? tt->model : "");
			cJSON_AddStringToObject(o, "gpu", tt ? tt->gpu : "");
			cJSON_AddItemToArray(arr, o);
			continue;
		}
		struct plan p;
		finalist_plan(&f[i], &p);
		/* model/gpu names are profile names or paths: user strings, CSV-quoted */
		printf("%ld,%ld,%d,", f[i].tune_id, f[i].id, f[i].rank);
		esc_csv(stdout, tt ? tt->model : "");
		putchar(',');
		esc_csv(stdout, tt ? tt->gpu : "");
		printf(",%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%d,%d,%d,%s,%s,"
		       "%.9g,%.9g,%.6g,%.9g,%.9g,%d,%.6g,%.9g,%d\n",
		       tt ? tt->gpus : p.gpus, p.dp, p.tp, p.pp, p.cp, p.ep, p.vpp, p.zero, p.sp,
		       recompute_name(p.recompute), p.recompute_layers, p.mbs, p.gbs, p.seq,
		       schedule_name(p.schedule), p.order, f[i].step_time_s, f[i].tokens_per_s_per_gpu,
		       f[i].mfu, f[i].peak_mem_bytes, f[i].capacity_bytes, f[i].fits, f[i].bubble_fraction,
		       f[i].exposed_comm_s, f[i].refined);
	}
	store_free_tunes(t, nt);
	store_free_finalists(f, nf);
	return csv ? EXIT_OK : print_json(arr);
}

/* A run's prediction: its finalist's, or the estimate of its plan (0 when it does not price). */
static void run_prediction(const struct store_run *r, double *step_s, double *tps, double *peak, const char **src)
{
	char err[ERR_LEN];
	struct plan p;
	struct model m;
	struct hw h;
	struct estimate e;
	*step_s = r->predicted_step_s;
	*tps = 0;
	*peak = r->predicted_peak_mem_bytes;
	*src = "finalist";
	plan_defaults(&p);
	int ok = !plan_from_json(r->plan_json, &p, err) && !model_load(p.model, &m, err) && !hw_load(p.gpu, &h, err) &&
		 !plan_prepare(&p, &m, &h, err);
	if (r->finalist_id > 0) {
		if (ok) *tps = r->predicted_tokens_per_s_per_gpu * p.gpus;
		return;
	}
	*src = "estimate";
	*step_s = *peak = 0;
	if (!ok || estimate_plan(&m, &h, &p, &e, err)) { *src = "-"; return; }
	*step_s = e.step_time_s;
	*tps = e.tokens_per_s;
	*peak = e.peak_mem_bytes;
}

static int db_runs(struct store *s, int json)
{
	char err[ERR_LEN], when[32];
	struct store_run *r;
	int n;
	if (store_list_runs(s, &r, &n, err)) { cli_error("db", "%s", err); return EXIT_RUNTIME; }
	cJSON *arr = json ? cJSON_CreateArray() : NULL;
	if (!json) {
		printf("%4s %-20s %-8s %5s %5s  %-34s %10s %10s %10s %10s %10s  %s\n", "run", "started (UTC)", "status",
		       "tune", "fin.", "plan", "steps", "step (s)", "tokens/s", "peak GiB", "loss", "predicted: step (s), tokens/s, peak GiB");
	}
	for (int i = 0; i < n; i++) {
		double ps, pt, pk;
		const char *src;
		struct plan p;
		char desc[128];
		run_prediction(&r[i], &ps, &pt, &pk, &src);
		plan_defaults(&p);
		if (plan_from_json(r[i].plan_json, &p, err)) plan_defaults(&p);
		fmt_time(r[i].started_s, when, sizeof(when));
		if (json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "run_id", (double)r[i].id);
			cJSON_AddStringToObject(o, "started", when);
			cJSON_AddStringToObject(o, "status", r[i].status);
			cJSON_AddStringToObject(o, "host", r[i].host);
			cJSON_AddNumberToObject(o, "tune_id", (double)r[i].tune_id);
			cJSON_AddNumberToObject(o, "finalist_id", (double)r[i].finalist_id);
			cJSON *pl = cJSON_Parse(r[i].plan_json);
			cJSON_AddItemToObject(o, "plan", pl ? pl : cJSON_CreateNull());
			cJSON *me = cJSON_AddObjectToObject(o, "measured");
			cJSON_AddNumberToObject(me, "steps", r[i].steps);
			cJSON_AddNumberToObject(me, "mean_step_time_s", r[i].mean_step_s);
			cJSON_AddNumberToObject(me, "tokens_per_s", r[i].mean_tokens_per_s);
			cJSON_AddNumberToObject(me, "peak_mem_bytes", r[i].peak_mem_bytes);
			cJSON_AddNumberToObject(me, "final_loss", r[i].final_loss);
			cJSON *pr = cJSON_AddObjectToObject(o, "predicted");
			cJSON_AddStringToObject(pr, "source", src);
			cJSON_AddNumberToObject(pr, "step_time_s", ps);
			cJSON_AddNumberToObject(pr, "tokens_per_s", pt);
			cJSON_AddNumberToObject(pr, "peak_mem_bytes", pk);
			cJSON_AddItemToArray(arr, o);
			continue;
		}
		snprintf(desc, sizeof(desc), "%.20s dp%d tp%d pp%d cp%d ep%d z%d", p.model, p.dp, p.tp, p.pp, p.cp, p.ep, p.zero);
		printf("%4ld %-20s %-8s %5ld %5ld  %-34.34s %10d %10.4f %10.0f %10.3f %10.4f  ", r[i].id, when, r[i].status,
		       r[i].tune_id, r[i].finalist_id, desc, r[i].steps, r[i].mean_step_s, r[i].mean_tokens_per_s,
		       r[i].peak_mem_bytes / (1 << 30), r[i].final_loss);
		if (strcmp(src, "-")) printf("%.4f, %.0f, %.1f (%s, on %s)\n", ps, pt, pk / (1 << 30), src, p.gpu);
		else printf("-\n");
	}
	store_free_runs(r, n);
	return json ? print_json(arr) : EXIT_OK;
}

static int parse_id(const char *s, long *id)
{
	char err[ERR_LEN];
	if (!s || parse_int(s, "tune id", 1, 1L << 40, id, err)) {
		cli_error("db", "%s", s ? err : "missing tune id");
		return -1;
	}
	return 0;
}

int cmd_db(int argc, char **argv)
{
	const char *path = STORE_DEFAULT_PATH, *sub = NULL, *pos[2] = {NULL, NULL};
	int json = 0, csv = 0, tsv = 0, npos = 0, runs = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) { db_usage(stdout); return EXIT_OK; }
		else if (!strcmp(a, "--json")) json = 1;
		else if (!strcmp(a, "--csv")) csv = 1;
		else if (!strcmp(a, "--tsv")) tsv = 1;
		else if (!strcmp(a, "--runs")) runs = 1;
		else if (!strcmp(a, "--db")) {
			if (++i >= argc) { cli_error("db", "--db: missing path"); return EXIT_BADINPUT; }
			path = argv[i];
		} else if (!strncmp(a, "--db=", 5)) path = a + 5;
		else if (a[0] == '-') { cli_error("db", "unknown option '%s'", a); return EXIT_BADINPUT; }
		else if (!sub) sub = a;
		else if (npos < 2) pos[npos++] = a;
		else { cli_error("db", "too many arguments ('%s')", a); return EXIT_BADINPUT; }
	}
	if (!sub) { db_usage(stderr); return EXIT_BADINPUT; }
	int want = !strcmp(sub, "show") ? 1 : !strcmp(sub, "diff") ? 2 : 0;
	if (strcmp(sub, "list") && strcmp(sub, "show") && strcmp(sub, "diff") && strcmp(sub, "export") &&
	    strcmp(sub, "runs")) {
		cli_error("db", "unknown subcommand '%s' (list, runs, show, diff, export)", sub);
		return EXIT_BADINPUT;
	}
	if (runs && strcmp(sub, "list")) { cli_error("db", "--runs goes with list"); return EXIT_BADINPUT; }
	if (npos != want) {
		cli_error("db", "%s takes %d id argument%s", sub, want, want == 1 ? "" : "s");
		return EXIT_BADINPUT;
	}
	if (json + csv + tsv > 1) { cli_error("db", "--json, --csv and --tsv exclude each other"); return EXIT_BADINPUT; }
	if (tsv && strcmp(sub, "export")) { cli_error("db", "--tsv goes with export"); return EXIT_BADINPUT; }
	long id1 = 0, id2 = 0;
	if ((want >= 1 && parse_id(pos[0], &id1)) || (want == 2 && parse_id(pos[1], &id2)))
		return EXIT_BADINPUT;
	char err[ERR_LEN];
	struct store *s;
	int orc = store_open(path, STORE_READ, &s, err);
	if (orc) {
		cli_error("db", "%s", err);
		return orc == -2 ? EXIT_BADINPUT : EXIT_RUNTIME;
	}
	int rc;
	if (!strcmp(sub, "runs") || (runs && !strcmp(sub, "list"))) rc = db_runs(s, json);
	else if (!strcmp(sub, "list")) rc = db_list(s, json);
	else if (!strcmp(sub, "show")) rc = db_show(s, id1, json);
	else if (!strcmp(sub, "diff")) rc = db_diff(s, id1, id2);
	else if (tsv) rc = db_export_tsv(s, stdout);
	else rc = db_export(s, csv);
	store_close(s);
	return rc;
}
