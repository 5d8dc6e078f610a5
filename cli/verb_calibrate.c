/* calibrate — `scaleplan calibrate`: fit a hardware profile's efficiency parameters to measured
 * runs (benchmarks in the store, or validation TSV files) with tuner/calibrate.h, report the
 * error before, after and cross-validated, and write the calibrated profile. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "sim/outfile.h"
#include "sim/util.h"
#include "sim/validate.h"
#include "tuner/calibrate.h"
#include "tuner/store.h"

#define MAX_FILES 64

static void cal_usage(FILE *f)
{
	fprintf(f,
		"usage: scaleplan calibrate (--db PATH [--tune ID] | FILE.tsv ...) --gpu PROFILE [-o CALIBRATED.json]\n"
		"                           [--params k1,k2,...] [--prior W] [--engine analytical|event] [--json]\n\n"
		"Fits the profile's efficiency parameters to measured runs by bounded nonlinear least squares\n"
		"(GSL gsl_multifit_nlinear) on log(predicted/measured) step time, and reports the mean error\n"
		"|predicted/measured - 1| before and after, and cross-validated: every run predicted by a fit\n"
		"made without it (--db), or without its source's runs (TSV files) - the honest figure.\n"
		"Bounds: efficiencies in [0.01, 1], bandwidths at most the profile's own (the datasheet's),\n"
		"overheads in [0, the longest measured step].\n\n"
		"  --db PATH      benchmarks recorded by `tune --bench-top` (status ok) and other finished runs\n"
		"                 (`run --db`: the median of their steps after the first); --tune ID: only\n"
		"                 that tune's benchmarks\n"
		"  FILE.tsv       measured runs in shared/validation/FORMAT.md format whose gpu cell names the\n"
		"                 profile (its name, the --gpu argument, or that file's name without .json)\n"
		"  --gpu PROFILE  the profile to calibrate (built-in name or JSON path)\n"
		"  -o FILE        write the calibrated profile (the input with the fitted fields replaced)\n"
		"  --params LIST  the parameters to fit (default: gemm_eff, gemm_half_dim, attn_eff, mem_eff,\n"
		"                 comm_eff, step_overhead_ms, kernel_us, less those that move no\n"
		"                 prediction, and at most runs - 1 of them, those that move the predictions\n"
		"                 most); also network[0].busbw_gbps, network[1].busbw_gbps\n"
		"  --prior W      pull toward the profile's values (default 0.001)\n"
		"  --engine E     predict with the analytical model (default) or the event engine\n"
		"  --json         error_before, error_after, cv_error (fractions), parameters, runs\n");
}

struct cal_args {
	const char *db, *gpu, *out, *files[MAX_FILES];
	int nfiles, json;
	long tune;
	struct cal_opts o;
};

struct points {
	struct cal_point *p;
	int n, cap;
};

static struct cal_point *add_point(struct points *ps)
{
	if (ps->n == ps->cap) {
		int nc = ps->cap ? 2 * ps->cap : 32;
		struct cal_point *np = realloc(ps->p, (size_t)nc * sizeof(*np));
		if (!np) return NULL;
		ps->p = np;
		ps->cap = nc;
	}
	memset(&ps->p[ps->n], 0, sizeof(ps->p[0]));
	return &ps->p[ps->n++];
}

static int parse_params(const char *list, unsigned *mask, char *err)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", list);
	*mask = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k = cal_param_from_key(t);
		if (k < 0) return errf(err, "--params: '%s' is not a parameter calibrate fits", t);
		*mask |= 1u << k;
	}
	return *mask ? 0 : errf(err, "--params: empty list");
}

static int parse_args(int argc, char **argv, struct cal_args *a, char *err)
{
	cal_opts_default(&a->o);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--json")) { a->json = 1; continue; }
		if (o[0] != '-') {
			if (a->nfiles == MAX_FILES) return errf(err, "more than %d files", MAX_FILES);
			a->files[a->nfiles++] = o;
			continue;
		}
		if (i + 1 >= argc) return errf(err, "%s: missing value", o);
		const char *v = argv[++i];
		if (!strcmp(o, "--db")) a->db = v;
		else if (!strcmp(o, "--gpu")) a->gpu = v;
		else if (!strcmp(o, "-o") || !strcmp(o, "--output")) a->out = v;
		else if (!strcmp(o, "--tune")) { if (parse_int(v, "--tune", 1, 1L << 40, &a->tune, err)) return -1; }
		else if (!strcmp(o, "--params")) { if (parse_params(v, &a->o.mask, err)) return -1; }
		else if (!strcmp(o, "--prior")) { if (parse_double(v, "--prior", 0, 100, &a->o.prior, err)) return -1; }
		else if (!strcmp(o, "--engine")) {
			if (strcmp(v, "analytical") && strcmp(v, "event")) return errf(err, "--engine: '%s' is not analytical or event", v);
			a->o.event = !strcmp(v, "event");
		} else return errf(err, "unknown option '%s'", o);
	}
	if (!a->gpu) return errf(err, "--gpu is required (the profile to calibrate)");
	if (!a->db == !a->nfiles) return errf(err, "give either --db PATH or measured-run TSV files");
	if (a->tune && !a->db) return errf(err, "--tune goes with --db");
	return 0;
}

/* finished runs of the store no benchmark stands for (`scaleplan run --db`): the median
 * of their steps after the first */
static int points_from_runs(struct store *s, const struct hw *h0, const struct store_bench *b, int nb,
			    struct points *ps, char *err)
{
	struct store_run *r;
	int nr, rc = 0;
	if (store_list_finished_runs(s, &r, &nr, err)) return -1;
	for (int i = 0; i < nr && !rc; i++) {
		int benched = 0;
		for (int k = 0; k < nb && !benched; k++) benched = b[k].run_id == r[i].id;
		if (benched || r[i].steps < 1 || !(r[i].median_step_s > 0)) continue;
		struct cal_point *pt = add_point(ps);
		if (!pt) { rc = errf(err, "out of memory"); break; }
		plan_defaults(&pt->p);
		char e2[ERR_LEN];
		if (plan_from_json(r[i].plan_json, &pt->p, e2) || model_load(pt->p.model, &pt->m, e2) ||
		    plan_prepare(&pt->p, &pt->m, h0, e2))
			rc = errf(err, "run %ld: %s", r[i].id, e2);
		pt->meas_step_s = r[i].median_step_s;
		snprintf(pt->id, sizeof(pt->id), "R%ld", r[i].id);
		snprintf(pt->source, sizeof(pt->source), "R%ld", r[i].id);
	}
	store_free_runs(r, nr);
	return rc;
}

/* benchmarks of the store (status ok) as points, priced on h0 */
static int points_from_db(const struct cal_args *a, const struct hw *h0, struct points *ps, char *err)
{
	struct store *s;
	struct store_bench *b = NULL;
	int nb = 0, rc = 0;
	if (store_open(a->db, STORE_READ, &s, err) || store_list_benchmarks(s, a->tune, &b, &nb, err)) { store_close(s); return -1; }
	for (int i = 0; i < nb && !rc; i++) {
		if (strcmp(b[i].status, "ok") || !(b[i].step_time_s > 0)) continue;
		struct store_finalist f;
		struct store_tune t;
		if (store_get_finalist(s, b[i].finalist_id, &f, err)) { rc = -1; break; }
		if (store_get_tune(s, b[i].tune_id, &t, err)) { store_finalist_clear(&f); rc = -1; break; }
		cJSON *in = cJSON_Parse(t.inputs_json);
		const cJSON *mj = cJSON_GetObjectItemCaseSensitive(in, "model");
		struct cal_point *pt = add_point(ps);
		if (!pt) rc = errf(err, "out of memory");
		else {
			plan_defaults(&pt->p);
			if (model_load(cJSON_IsString(mj) ? mj->valuestring : t.model, &pt->m, err) ||
			    plan_from_json(f.plan_json, &pt->p, err) || plan_prepare(&pt->p, &pt->m, h0, err))
				rc = -1;
			pt->meas_step_s = b[i].step_time_s;
			snprintf(pt->id, sizeof(pt->id), "B%ld", b[i].id);
			snprintf(pt->source, sizeof(pt->source), "B%ld", b[i].id);
			if (rc) {
				char e2[ERR_LEN];
				snprintf(e2, sizeof(e2), "%s", err);
				errf(err, "benchmark %ld: %s", b[i].id, e2);
			}
		}
		cJSON_Delete(in);
		store_tune_clear(&t);
		store_finalist_clear(&f);
	}
	if (!rc && !a->tune) rc = points_from_runs(s, h0, b, nb, ps, err);
	store_free_benchmarks(b, nb);
	store_close(s);
	return rc;
}

struct tsv_ctx {
	struct points *ps;
	const char *names[3];      /* gpu cells that mean this profile */
	int skipped, oom;
};

/* a file name without its folders and .json */
static void base_name(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');
	snprintf(out, cap, "%s", slash ? slash + 1 : path);
	char *dot = strstr(out, ".json");
	if (dot) *dot = 0;
}

static void on_row(void *ctx, const struct val_row *r, const struct model *m, const struct plan *p)
{
	struct tsv_ctx *c = ctx;
	char cell[256];
	base_name(r->gpu, cell, sizeof(cell));
	int ours = 0;
	for (int i = 0; i < 3; i++) ours |= c->names[i] && (!strcmp(r->gpu, c->names[i]) || !strcmp(cell, c->names[i]));
	if (!ours || strcmp(r->status, "ok") || !(r->meas_tps > 0) || r->num_gpus < 1) { c->skipped++; return; }
	struct cal_point *pt = add_point(c->ps);
	if (!pt) { c->oom = 1; return; }
	pt->m = *m;
	pt->p = *p;
	pt->meas_step_s = (double)r->gbs * r->seq / (r->meas_tps * r->num_gpus);
	snprintf(pt->id, sizeof(pt->id), "%s", r->id);
	snprintf(pt->source, sizeof(pt->source), "%s", r->source);
}

static int points_from_tsv(const struct cal_args *a, const struct hw *h0, struct points *ps, int *skipped, char *err)
{
	char base[256];
	base_name(a->gpu, base, sizeof(base));
	struct tsv_ctx c = {ps, {h0->name, a->gpu, base}, 0, 0};
	for (int f = 0; f < a->nfiles; f++) {
		struct val_opts vo = {0};
		vo.hw = h0;
		vo.row = on_row;
		vo.row_ctx = &c;
		vo.note = cli_validate_note;
		struct val_row *rows;
		int nrows, before = ps->n;
		if (validate_file(a->files[f], &vo, &rows, &nrows, err)) return -1;
		/* rows validate leaves out of its scores (measured before a framework fix) stay out */
		for (int i = before; i < ps->n; i++)
			for (int k = 0; k < nrows; k++)
				if (!strcmp(rows[k].id, ps->p[i].id) && rows[k].excluded) {
					ps->p[i--] = ps->p[--ps->n];
					c.skipped++;
					break;
				}
		free(rows);
		if (c.oom) return errf(err, "out of memory");
	}
	*skipped = c.skipped;
	return 0;
}

/* the profile as given (built-in or file, its base resolved: the output stands alone), the
 * fitted fields replaced */
static int write_profile(const struct cal_args *a, const struct hw *out, const struct cal_result *r, char *err)
{
	cJSON *o = hw_json_load(a->gpu, err);
	if (!o) return -1;
	for (int j = 0; j < r->n; j++) {
		char buf[32];
		const char *pk = cal_param_key(r->param[j]);
		int tier;
		snprintf(buf, sizeof(buf), "%.6g", r->after[j]);
		if (sscanf(pk, "network[%d]", &tier) == 1) { /* a tier's field inside the network array */
			cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "network"), tier);
			if (t) cJSON_ReplaceItemInObjectCaseSensitive(t, strchr(pk, '.') + 1, cJSON_CreateRaw(buf));
		} else {
			cJSON_ReplaceItemInObjectCaseSensitive(o, pk, cJSON_CreateRaw(buf));
		}
	}
	cJSON *src = cJSON_GetObjectItemCaseSensitive(o, "sources");
	if (!src) src = cJSON_AddObjectToObject(o, "sources");
	char note[300];
	snprintf(note, sizeof(note), "scaleplan calibrate on %d measured runs: mean error %.1f %% before, %.1f %% after, %.1f %% cross-validated",
		 r->points, 100 * r->error_before, 100 * r->error_after, 100 * r->cv_error);
	cJSON_DeleteItemFromObjectCaseSensitive(src, "calibrated");
	cJSON_AddStringToObject(src, "calibrated", note);
	char *s = cJSON_Print(o);
	cJSON_Delete(o);
	struct hw check;
	int rc = 0;
	if (!s) return errf(err, "out of memory");
	if (hw_from_json(s, out->name, &check, err)) rc = -1;
	if (!rc) {
		size_t len = strlen(s);
		s[len] = '\n';   /* the string's NUL becomes the file's last newline */
		rc = outfile_put(a->out, s, len + 1, err);
		s[len] = 0;
	}
	free(s);
	return rc;
}

static void print_text(const struct cal_args *a, const struct cal_point *pts, const struct cal_result *r, int skipped)
{
	printf("calibrate %s on %d measured runs (%s; %d left out: other gpu, not ok or unmeasured)\n", a->gpu, r->points,
	       a->db ? "benchmarks of the store" : "TSV rows", skipped);
	printf("\n%-24s %12s %12s   %s\n", "parameter", "before", "after", "bounds");
	for (int j = 0; j < r->n; j++)
		printf("%-24s %12.5g %12.5g   [%g, %g]\n", cal_param_key(r->param[j]), r->before[j], r->after[j], r->lo[j], r->hi[j]);
	for (int k = 0; k < CP_COUNT; k++)
		if (r->dropped & (1u << k)) printf("%-24s (not fitted: it moves no prediction of these runs)\n", cal_param_key(k));
		else if (r->too_few & (1u << k)) printf("%-24s (not fitted: %d runs tell %d parameters apart at most)\n", cal_param_key(k), r->points, r->n);
	printf("\n%-10s %12s %12s %12s %12s\n", "run", "measured s", "before s", "after s", "held-out s");
	for (int i = 0; i < r->points; i++)
		printf("%-10s %12.5g %12.5g %12.5g %12.5g\n", pts[i].id, pts[i].meas_step_s, pts[i].pred_before_s,
		       pts[i].pred_after_s, pts[i].pred_cv_s);
	printf("\nmean |predicted/measured - 1|: before %.1f %%, after %.1f %% (%d iterations), ", 100 * r->error_before,
	       100 * r->error_after, r->iterations);
	if (r->cv_error >= 0)
		printf("cross-validated %.1f %% (leave-one-%s-out, %d folds)\n", 100 * r->cv_error, a->db ? "run" : "source", r->groups);
	else printf("cross-validated: needs two %ss at least\n", a->db ? "run" : "source");
}

static void print_json(const struct cal_point *pts, const struct cal_result *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "error_before", r->error_before);
	cJSON_AddNumberToObject(o, "error_after", r->error_after);
	if (r->cv_error >= 0) cJSON_AddNumberToObject(o, "cv_error", r->cv_error);
	else cJSON_AddNullToObject(o, "cv_error");
	cJSON_AddNumberToObject(o, "cv_folds", r->groups);
	cJSON_AddNumberToObject(o, "iterations", r->iterations);
	cJSON *ps = cJSON_AddArrayToObject(o, "parameters");
	for (int j = 0; j < r->n; j++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "key", cal_param_key(r->param[j]));
		cJSON_AddNumberToObject(x, "before", r->before[j]);
		cJSON_AddNumberToObject(x, "after", r->after[j]);
		cJSON_AddNumberToObject(x, "lo", r->lo[j]);
		cJSON_AddNumberToObject(x, "hi", r->hi[j]);
		cJSON_AddItemToArray(ps, x);
	}
	cJSON *rs = cJSON_AddArrayToObject(o, "runs");
	for (int i = 0; i < r->points; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "id", pts[i].id);
		cJSON_AddNumberToObject(x, "measured_step_time_s", pts[i].meas_step_s);
		cJSON_AddNumberToObject(x, "predicted_before_s", pts[i].pred_before_s);
		cJSON_AddNumberToObject(x, "predicted_after_s", pts[i].pred_after_s);
		cJSON_AddNumberToObject(x, "predicted_held_out_s", pts[i].pred_cv_s);
		cJSON_AddItemToArray(rs, x);
	}
	char *s = cJSON_Print(o);
	cJSON_Delete(o);
	if (s) puts(s);
	free(s);
}

int cmd_calibrate(int argc, char **argv)
{
	char err[ERR_LEN];
	struct cal_args a;
	memset(&a, 0, sizeof(a));
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { cal_usage(stdout); return EXIT_OK; }
	if (parse_args(argc, argv, &a, err)) { cli_error("calibrate", "%s", err); return EXIT_BADINPUT; }
	a.o.by_source = !a.db; /* measured-run files: leave one source out, as the text says */
	struct hw h0, out;
	if (hw_load(a.gpu, &h0, err)) { cli_error("calibrate", "%s", err); return EXIT_BADINPUT; }
	struct points ps = {0};
	int skipped = 0, rc = EXIT_OK;
	if (a.db ? points_from_db(&a, &h0, &ps, err) : points_from_tsv(&a, &h0, &ps, &skipped, err)) {
		cli_error("calibrate", "%s", err);
		rc = EXIT_BADINPUT;
	} else if (!ps.n) {
		cli_error("calibrate", "no measured run of this profile to fit (%d rows left out)", skipped);
		rc = EXIT_BADINPUT;
	}
	struct cal_result r;
	if (!rc && calibrate_fit(&h0, ps.p, ps.n, &a.o, &out, &r, err)) { cli_error("calibrate", "%s", err); rc = EXIT_RUNTIME; }
	if (!rc && a.out && write_profile(&a, &out, &r, err)) { cli_error("calibrate", "%s", err); rc = EXIT_RUNTIME; }
	if (!rc) {
		if (a.json) print_json(ps.p, &r);
		else {
			print_text(&a, ps.p, &r, skipped);
			if (a.out) printf("wrote %s\n", a.out);
		}
	}
	free(ps.p);
	return rc;
}
