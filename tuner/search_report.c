/* search_report — what the tuner tells its reader: counts, the ranked table, which plans the
 * model cannot tell apart, why the winner wins, the best plan of each other shape, how to
 * reproduce and launch the winner, and for an impossible request the closest plan with the
 * changes that lower its peak. Text and JSON here; Markdown and HTML (search_doc.c) print the
 * same cells and the same paragraphs. Every figure is the analytical estimate's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "tuner/search.h"
#include "tuner/search_impl.h"
#include "reports/estimate_report.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/util.h"


const char *const search_engine_note =
	"every figure is the analytical estimate (sim/estimate.c), the model `make validate` scores and "
	"`scaleplan sim` prints; `scaleplan sim --engine event` re-times one plan with the event engine";

static void rc_text(const struct search_cand *k, char *buf, size_t cap)
{
	if (k->recompute == RC_FULL && k->recompute_layers >= 0)
		snprintf(buf, cap, "full(%d/st)", k->recompute_layers);
	else
		snprintf(buf, cap, "%s", recompute_name((enum recompute)k->recompute));
}

static void sched_text(const struct search_cand *k, char *buf, size_t cap)
{
	if (sched_family((enum schedule)k->schedule)->flags & SCHED_F_VIRTUAL)
		snprintf(buf, cap, "%s v%d", schedule_name((enum schedule)k->schedule), k->vpp);
	else snprintf(buf, cap, "%s", schedule_name((enum schedule)k->schedule));
}

/* R gradient reduction, G parameter gather, T TP collectives, B TP backward alone, P pipeline
 * sends; "-" none */
static void overlap_text(int ov, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s%s%s", ov & OV_GRAD ? "R" : "", ov & OV_PARAM ? "G" : "", ov & OV_TP ? "T" : "",
		 ov & OV_TPBWD && !(ov & OV_TP) ? "B" : "", ov & OV_P2P ? "P" : "");
	if (!buf[0]) snprintf(buf, cap, "-");
}

void search_cand_short(const struct search_cand *k, char *buf, size_t cap)
{
	char rc[32], sc[32], ov[8];
	rc_text(k, rc, sizeof(rc));
	sched_text(k, sc, sizeof(sc));
	overlap_text(k->overlap, ov, sizeof(ov));
	snprintf(buf, cap, "dp%d tp%d pp%d cp%d%s zero%d sp %s, recompute %s, mbs %d, %s, overlap %s", k->dp, k->tp,
		 k->pp, k->cp, "", k->zero, k->sp ? "on" : "off", rc, k->mbs, sc, ov);
	if (k->ep > 1) {
		size_t n = strlen(buf);
		snprintf(buf + n, cap - n, ", ep%d", k->ep);
	}
}

/* Layers per pipeline stage, "19/20/20/21"; a run of three or more equal counts as "5x12"
 * (12 stages of 5 layers); "-" for pp 1. The default split is rebuilt when the candidate
 * carries none. */
static void layers_text(const struct search_req *rq, const struct search_cand *k, char *buf, size_t cap)
{
	char err[ERR_LEN];
	struct plan p;
	buf[0] = 0;
	if (k->pp < 2 || search_cand_plan(rq, k, &p, err)) { snprintf(buf, cap, "-"); return; }
	size_t n = 0;
	for (int i = 0; i < p.nstage_layers && n + 16 < cap;) {
		int j = i;
		while (j < p.nstage_layers && p.stage_layers[j] == p.stage_layers[i]) j++;
		if (j - i >= 3) n += (size_t)snprintf(buf + n, cap - n, "%s%dx%d", i ? "/" : "", p.stage_layers[i], j - i);
		else
			for (int t = i; t < j; t++) n += (size_t)snprintf(buf + n, cap - n, "%s%d", t ? "/" : "", p.stage_layers[t]);
		i = j;
	}
}

static int accum(const struct search_req *rq, const struct search_cand *k) { return rq->gbs / (k->dp * k->mbs); }

const char *const search_columns[SEARCH_NCOLS] = {
	"rank", "tie", "gpus", "dp", "tp", "pp", "cp", "ep", "zero", "sp", "recompute", "mbs", "accum", "schedule",
	"order", "overlap", "layers", "step (s)", "tok/s/GPU", "MFU", "peak GiB", "headroom", "exp.comm", "bubble"};

void search_row_cells(const struct search_req *rq, const struct search_result *res, int i,
		      char cells[SEARCH_NCOLS][SEARCH_CELL])
{
	const struct search_cand *k = &res->top[i];
	int tie = res->ntop > 1 && search_is_tie(&res->top[0], k) && (i > 0 || search_is_tie(&res->top[0], &res->top[1]));
	snprintf(cells[0], SEARCH_CELL, "%d", i + 1);
	snprintf(cells[1], SEARCH_CELL, "%s", tie ? "=" : "");
	int ints[] = {k->gpus, k->dp, k->tp, k->pp, k->cp, k->ep, k->zero};
	for (int c = 0; c < 7; c++) snprintf(cells[2 + c], SEARCH_CELL, "%d", ints[c]);
	snprintf(cells[9], SEARCH_CELL, "%s", k->sp ? "on" : "off");
	rc_text(k, cells[10], SEARCH_CELL);
	snprintf(cells[11], SEARCH_CELL, "%d", k->mbs);
	snprintf(cells[12], SEARCH_CELL, "%d", accum(rq, k));
	sched_text(k, cells[13], SEARCH_CELL);
	search_orders_text(k->orders | (1 << k->order), cells[14], SEARCH_CELL);
	overlap_text(k->overlap, cells[15], SEARCH_CELL);
	layers_text(rq, k, cells[16], SEARCH_CELL);
	snprintf(cells[17], SEARCH_CELL, "%.3f", k->step_s);
	snprintf(cells[18], SEARCH_CELL, "%.0f", k->tokens_per_s_per_gpu);
	snprintf(cells[19], SEARCH_CELL, "%.1f%%", 100 * k->mfu);
	snprintf(cells[20], SEARCH_CELL, "%.1f", k->peak_bytes / GIB);
	snprintf(cells[21], SEARCH_CELL, "%.1f", (k->capacity_bytes - k->peak_bytes) / GIB);
	snprintf(cells[22], SEARCH_CELL, "%.3f", k->exposed_comm_s);
	snprintf(cells[23], SEARCH_CELL, "%.1f%%", 100 * k->bubble_fraction);
}

/* The ranked table, columns as wide as their widest cell; text columns left-aligned. */
static void print_table(const struct search_req *rq, const struct search_result *res, FILE *f)
{
	static char cells[64][SEARCH_NCOLS][SEARCH_CELL];
	int n = res->ntop < 64 ? res->ntop : 64, w[SEARCH_NCOLS];
	for (int c = 0; c < SEARCH_NCOLS; c++) w[c] = (int)strlen(search_columns[c]);
	for (int i = 0; i < n; i++) {
		search_row_cells(rq, res, i, cells[i]);
		for (int c = 0; c < SEARCH_NCOLS; c++) if ((int)strlen(cells[i][c]) > w[c]) w[c] = (int)strlen(cells[i][c]);
	}
	for (int c = 0; c < SEARCH_NCOLS; c++) {
		int left = c == 10 || c == 13 || c == 14 || c == 15 || c == 16;
		fprintf(f, "%s%*s", c ? " " : "", left ? -w[c] : w[c], search_columns[c]);
	}
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		for (int c = 0; c < SEARCH_NCOLS; c++) {
			int left = c == 10 || c == 13 || c == 14 || c == 15 || c == 16;
			fprintf(f, "%s%*s", c ? " " : "", left ? -w[c] : w[c], cells[i][c]);
		}
		fputc('\n', f);
	}
}

/* Time breakdown of a candidate, by category, on the rank kind that is slowest. */
enum { C_COMPUTE, C_RECOMPUTE, C_BUBBLE, C_TPCPEP, C_PP, C_DP, C_OPT, C_N };
static const char *const cat_names[C_N] = {"compute", "recompute", "pipeline bubble",
					   "exposed TP/CP/EP communication", "exposed PP communication",
					   "exposed DP/ZeRO communication", "optimizer step"};

static int breakdown(const struct search_req *rq, const struct search_cand *k, double *cat)
{
	char err[ERR_LEN];
	struct plan p;
	struct estimate e;
	if (search_cand_plan(rq, k, &p, err) || estimate_plan(rq->m, rq->h, &p, &e, err)) return -1;
	for (int i = 0; i < C_N; i++) cat[i] = 0;
	for (int j = 0; j < e.nkinds; j++) {
		const struct rank_est *r = &e.kind[j];
		double v[C_N] = {r->compute_s - r->recompute_s, r->recompute_s, r->bubble_s,
				 r->tp_comm_s + r->cp_comm_s + r->ep_comm_s, r->pp_comm_s, r->dp_exposed_s, r->optimizer_s};
		for (int i = 0; i < C_N; i++) cat[i] = fmax(cat[i], v[i]);
	}
	return 0;
}

/* The rows the model cannot rank against #1, and what would. */
void search_print_ties(const struct search_result *res, FILE *f)
{
	int n = 0;
	for (int i = 1; i < res->ntop; i++) n += search_is_tie(&res->top[0], &res->top[i]);
	if (!n) {
		fprintf(f, "\n#1 leads every other plan by more than the model's measured error (%.1f %%)\n", 100 * SEARCH_TIE_REL);
		return;
	}
	fprintf(f, "\nties (=): #1 and %d more plan%s predict within %.1f %% of each other, the model's throughput error\n"
		   "on published runs (make validate); it cannot tell them apart. What decides between them is\n"
		   "measuring them: launch each for a few steps on the target cluster (the export lines below, or\n"
		   "scaleplan export --id N) and keep the fastest measured.\n",
		n, n > 1 ? "s" : "", 100 * SEARCH_TIE_REL);
}

void search_explain(const struct search_req *rq, const struct search_result *res, FILE *f)
{
	double w[C_N], r[C_N];
	if (res->ntop < 2 || breakdown(rq, &res->top[0], w)) return;
	fprintf(f, "\nwhy #1 wins (what limits the runners-up, per step, on their slowest rank kind):\n");
	for (int i = 1; i < res->ntop && i < 5; i++) {
		const struct search_cand *k = &res->top[i];
		if (breakdown(rq, k, r)) continue;
		int worst = 0;
		for (int c = 1; c < C_N; c++) if (r[c] - w[c] > r[worst] - w[worst]) worst = c;
		double slower = 100 * (res->top[0].score / k->score - 1);
		fprintf(f, "  #%d is %.1f%% slower%s: %s +%.3f s (%.3f vs %.3f)", i + 1, slower,
			search_is_tie(&res->top[0], k) ? " (a tie)" : "", cat_names[worst], r[worst] - w[worst], r[worst], w[worst]);
		if (k->peak_bytes < res->top[0].peak_bytes)
			fprintf(f, "; uses %.1f GiB less memory", (res->top[0].peak_bytes - k->peak_bytes) / GIB);
		fputc('\n', f);
	}
}

/* The top list holds the finalists as partitioned and every plan better than the rest of all[]
 * (sorted best first), so the first match in top, else in all[], is the shape's best: the
 * same figure the table shows for a plan that is in both. */
static const struct search_cand *best_of_shape(const struct search_result *res, const struct search_shape *s)
{
	for (int i = 0; i < res->ntop; i++)
		if (s->has(&res->top[i])) return &res->top[i];
	for (int i = 0; i < res->nall; i++)
		if (s->has(&res->all[i])) return &res->all[i];
	return NULL;
}

void search_print_shapes(const struct search_req *rq, const struct search_result *res, FILE *f)
{
	char buf[240];
	(void)rq;
	fprintf(f, "\nbest plan of each other shape (vs #1):\n");
	for (int i = 0; i < SEARCH_NSHAPES; i++) {
		const struct search_shape *sh = &search_shapes[i];
		if (sh->has(&res->top[0])) continue;
		const struct search_cand *k = best_of_shape(res, sh);
		if (!k) { fprintf(f, "  %-34s none fits\n", sh->name); continue; }
		search_cand_short(k, buf, sizeof(buf));
		fprintf(f, "  %-34s %8.0f tok/s/GPU (%+.1f%%%s)  %s\n", sh->name, k->tokens_per_s_per_gpu,
			100 * (k->tokens_per_s_per_gpu / res->top[0].tokens_per_s_per_gpu - 1),
			search_is_tie(&res->top[0], k) ? ", a tie" : "", buf);
	}
}

/* The closest plan's changes that lower its peak: the one suggestion engine `sim` uses. */
static int closest_fixes(const struct search_req *rq, const struct search_result *res, struct plan_fix *fx)
{
	char err[ERR_LEN];
	struct plan p;
	if (search_cand_plan(rq, &res->closest, &p, err)) return 0;
	return estimate_fixes(rq->m, rq->h, &p, fx, FIX_MAX);
}

static void print_infeasible(const struct search_req *rq, const struct search_result *res, FILE *f)
{
	char buf[240];
	if (!res->have_closest) {
		char err[ERR_LEN];
		search_no_valid_plan(rq, res, err);
		fprintf(f, "\n%s\n", err);
		return;
	}
	const struct search_cand *k = &res->closest;
	search_cand_short(k, buf, sizeof(buf));
	fprintf(f, "\nno plan fits in %.1f GiB per GPU. closest: %s\n  peak %.1f GiB (%.1f GiB over)\n",
		k->capacity_bytes / GIB, buf, k->peak_bytes / GIB, (k->peak_bytes - k->capacity_bytes) / GIB);
	struct plan_fix fx[FIX_MAX];
	estimate_print_fixes(fx, closest_fixes(rq, res, fx), f);
	fprintf(f, "  (or a GPU with more memory)\n");
}

static void print_counts(const struct search_result *res, FILE *f)
{
	fprintf(f, "enumerated %ld plans in %.3f s (%.0f plans/s), priced %ld, %ld fit\n", res->enumerated,
		res->seconds, res->plans_per_s, res->evaluated, res->feasible);
	if (!res->enumerated) return;
	fprintf(f, "rejected:\n");
	for (int i = 0; i < REJ_COUNT; i++)
		if (res->rejected[i]) fprintf(f, "  %10ld  %s\n", res->rejected[i], search_reason_name((enum reject_reason)i));
}

/* How to reproduce #1 with sim, and launch it. */
static void print_winner(const struct search_req *rq, const struct search_result *res, const struct search_out *o, FILE *f)
{
	char err[ERR_LEN];
	struct plan p;
	if (search_cand_plan(rq, &res->top[0], &p, err)) return;
	char *flags = plan_to_flags(&p);
	if (flags) fprintf(f, "\n#1 as sim flags (the same figures): scaleplan sim %s\n", flags);
	free(flags);
	if (o && o->winner_id)
		fprintf(f, "launch lines: scaleplan export --id %ld --format megatron|torchtitan|deepspeed|nanotron\n",
			o->winner_id);
}

void search_print(const struct search_req *rq, const struct search_result *res, const struct search_out *o, FILE *f)
{
	char fw[96] = "";
	if (rq->has_fw) snprintf(fw, sizeof(fw), ", every plan priced as %s runs it (its documented defaults)", rq->fw.name);
	fprintf(f, "scaleplan tune: %s on %d x %s, seq %d, global batch %d sequences (%.2fM tokens), objective %s%s\n",
		rq->m->name, rq->gpus, rq->h->name, rq->seq, rq->gbs, (double)rq->gbs * rq->seq / 1048576.0,
		objective_name(rq->objective), fw);
	print_counts(res, f);
	if (!res->ntop) { print_infeasible(rq, res, f); return; }
	fprintf(f, "\n%s\n", search_engine_note);
	print_table(rq, res, f);
	fprintf(f, "(tie = within the model's measured error of #1; order = rank orders that give this same plan;\n"
		   " overlap: R gradient reduction, G parameter gather, T TP collectives, B TP backward, P pipeline sends;\n"
		   " headroom = capacity - peak, GiB = 2^30 B; layers per pipeline stage, AxN = N stages of A layers)\n");
	for (int i = 0; i < res->ntop; i++) {
		const struct search_cand *k = &res->top[i];
		if (k->partitioned && res->rescued && k->src < 0)
			fprintf(f, "#%d: fits only with a %s split (%s): no plan fits with the default splits\n", i + 1,
				k->partitioned == 1 ? "time-balanced" : "memory-capped", k->partitioned == 1 ? "layers" : "layers and recompute");
		else if (k->partitioned)
			fprintf(f, "#%d: %s split, step %.3f s vs %.3f s with the default split (%.1f%% faster)\n",
				i + 1, k->partitioned == 3 ? "memory-capped layer and recompute (MILP)" :
				k->partitioned == 2 ? "memory-capped layer and recompute" : "time-balanced layer",
				k->analytic_step_s, k->uniform_step_s, 100 * (k->uniform_step_s / k->analytic_step_s - 1));
	}
	search_print_ties(res, f);
	search_explain(rq, res, f);
	search_print_shapes(rq, res, f);
	print_winner(rq, res, o, f);
	const struct search_cand *w = &res->top[0];
	if (o && o->tokens > 0) {
		double days = o->tokens / w->tokens_per_s / 86400, gpu_h = days * 24 * w->gpus;
		fprintf(f, "\n%.3g tokens: %.1f days on %d GPUs, %.3g GPU-hours", o->tokens, days, w->gpus, gpu_h);
		if (o->price > 0) fprintf(f, ", $%.3g at $%.2f/GPU-hour", gpu_h * o->price, o->price);
		fputc('\n', f);
	}
	if (o && o->tune_id) fprintf(f, "\nrecorded as tune %ld (scaleplan db show %ld)\n", o->tune_id, o->tune_id);
}

static cJSON *cand_json(const struct search_req *rq, const struct search_cand *k, const struct search_cand *best)
{
	cJSON *o = cJSON_CreateObject();
	struct { const char *k; int v; } ints[] = {{"gpus", k->gpus}, {"dp", k->dp}, {"tp", k->tp}, {"pp", k->pp},
		{"cp", k->cp}, {"ep", k->ep}, {"vpp", k->vpp}, {"zero", k->zero}};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) cJSON_AddNumberToObject(o, ints[i].k, ints[i].v);
	cJSON_AddBoolToObject(o, "sp", k->sp);
	cJSON_AddStringToObject(o, "recompute", recompute_name((enum recompute)k->recompute));
	cJSON_AddNumberToObject(o, "recompute_layers", k->recompute_layers);
	if (k->recompute == RC_SELECTIVE) {
		char v[160];
		recompute_modules_text(search_selective_modules(rq), v, sizeof(v));
		cJSON_AddStringToObject(o, "recompute_modules", v);
	}
	cJSON_AddNumberToObject(o, "mbs", k->mbs);
	cJSON_AddNumberToObject(o, "accumulation", accum(rq, k));
	cJSON_AddStringToObject(o, "schedule", schedule_name((enum schedule)k->schedule));
	cJSON_AddStringToObject(o, "order", search_order_name(k->order));
	cJSON *ords = cJSON_AddArrayToObject(o, "orders");
	for (int i = 0; i < SEARCH_ORDERS; i++)
		if ((k->orders | (1 << k->order)) & (1 << i)) cJSON_AddItemToArray(ords, cJSON_CreateString(search_order_name(i)));
	cJSON *ov = cJSON_AddObjectToObject(o, "overlap");
	cJSON_AddBoolToObject(ov, "grad_reduce", k->overlap & OV_GRAD);
	cJSON_AddBoolToObject(ov, "param_gather", k->overlap & OV_PARAM);
	cJSON_AddBoolToObject(ov, "tp_comm", k->overlap & OV_TP);
	cJSON_AddBoolToObject(ov, "tp_bwd", k->overlap & OV_TPBWD);
	cJSON_AddBoolToObject(ov, "p2p", k->overlap & OV_P2P);
	cJSON_AddNumberToObject(o, "step_time_s", k->step_s);
	cJSON_AddNumberToObject(o, "tokens_per_s_per_gpu", k->tokens_per_s_per_gpu);
	cJSON_AddNumberToObject(o, "mfu", k->mfu);
	cJSON_AddNumberToObject(o, "peak_mem_bytes", k->peak_bytes);
	cJSON_AddNumberToObject(o, "capacity_bytes", k->capacity_bytes);
	cJSON_AddBoolToObject(o, "fits", k->fits);
	cJSON_AddNumberToObject(o, "bubble_fraction", k->bubble_fraction);
	cJSON_AddNumberToObject(o, "exposed_comm_s", k->exposed_comm_s);
	if (best) cJSON_AddBoolToObject(o, "tie", search_is_tie(best, k));
	char err[ERR_LEN];
	struct plan p;
	if (!search_cand_plan(rq, k, &p, err)) {
		cJSON_AddItemToObject(o, "stage_layers", cJSON_CreateIntArray(p.stage_layers, p.nstage_layers));
		char *js = plan_to_json(&p), *fl = plan_to_flags(&p);
		cJSON *pj = js ? cJSON_Parse(js) : NULL;
		if (pj) cJSON_AddItemToObject(o, "plan", pj);
		if (fl) cJSON_AddStringToObject(o, "sim_flags", fl);
		free(js);
		free(fl);
	}
	cJSON_AddStringToObject(o, "split", k->partitioned == 3 ? "milp" : k->partitioned == 2 ? "capped" :
				k->partitioned == 1 ? "balanced" : "default");
	if (k->partitioned && k->src >= 0) cJSON_AddNumberToObject(o, "default_split_step_time_s", k->uniform_step_s);
	if (k->partitioned && k->src < 0) cJSON_AddBoolToObject(o, "default_split_fits", 0);
	return o;
}

static void json_suggestions(const struct search_req *rq, const struct search_result *res, cJSON *root)
{
	cJSON_AddItemToObject(root, "closest", cand_json(rq, &res->closest, NULL));
	struct plan_fix fx[FIX_MAX];
	int n = closest_fixes(rq, res, fx);
	cJSON *sug = cJSON_AddArrayToObject(root, "suggestions");
	for (int i = 0; i < n; i++) {
		cJSON *s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "change", fx[i].change);
		cJSON_AddNumberToObject(s, "peak_mem_bytes", fx[i].peak_bytes);
		cJSON_AddNumberToObject(s, "tokens_per_s_per_gpu", fx[i].tokens_per_s_per_gpu);
		cJSON_AddBoolToObject(s, "fits", fx[i].fits);
		cJSON_AddItemToArray(sug, s);
	}
}

void search_write_json(const struct search_req *rq, const struct search_result *res, const struct search_out *o, FILE *f)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "model", rq->m->name);
	cJSON_AddStringToObject(root, "gpu", rq->h->name);
	cJSON_AddNumberToObject(root, "gpus", rq->gpus);
	cJSON_AddNumberToObject(root, "seq", rq->seq);
	cJSON_AddNumberToObject(root, "gbs", rq->gbs);
	cJSON_AddStringToObject(root, "objective", objective_name(rq->objective));
	cJSON_AddStringToObject(root, "engine", "analytical");
	cJSON_AddNumberToObject(root, "tie_rel", SEARCH_TIE_REL);
	if (rq->has_fw) cJSON_AddStringToObject(root, "framework", rq->fw.name);
	cJSON *plans = cJSON_AddArrayToObject(root, "plans");
	for (int i = 0; i < res->ntop; i++) cJSON_AddItemToArray(plans, cand_json(rq, &res->top[i], &res->top[0]));
	cJSON_AddNumberToObject(root, "enumerated", (double)res->enumerated);
	cJSON_AddNumberToObject(root, "evaluated", (double)res->evaluated);
	cJSON_AddNumberToObject(root, "feasible", (double)res->feasible);
	cJSON *rej = cJSON_AddObjectToObject(root, "rejected");
	for (int i = 0; i < REJ_COUNT; i++)
		cJSON_AddNumberToObject(rej, search_reason_name((enum reject_reason)i), (double)res->rejected[i]);
	cJSON_AddNumberToObject(root, "search_s", res->seconds);
	cJSON_AddNumberToObject(root, "plans_per_s", res->plans_per_s);
	if (!res->ntop && res->have_closest) json_suggestions(rq, res, root);
	if (o && o->tune_id) cJSON_AddNumberToObject(root, "tune_id", (double)o->tune_id);
	char *s = cJSON_Print(root);
	if (s) { fputs(s, f); fputc('\n', f); }
	free(s);
	cJSON_Delete(root);
}
