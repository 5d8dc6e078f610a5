/* search_report — what the tuner tells its reader: counts, the ranked table, why the winner
 * wins, the best plan of each other shape, and for an impossible request the closest plan
 * with what would make it fit. Text, JSON, Markdown and HTML share the same facts. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "tuner/report.h"
#include "tuner/search.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/util.h"

#define GIB 1073741824.0

static void rc_text(const struct search_cand *k, char *buf, size_t cap)
{
	if (k->recompute == RC_FULL && k->recompute_layers >= 0)
		snprintf(buf, cap, "full(%d/st)", k->recompute_layers);
	else
		snprintf(buf, cap, "%s", recompute_name((enum recompute)k->recompute));
}

static void sched_text(const struct search_cand *k, char *buf, size_t cap)
{
	if (k->schedule == SCHED_INTERLEAVED) snprintf(buf, cap, "interleaved v%d", k->vpp);
	else snprintf(buf, cap, "%s", schedule_name((enum schedule)k->schedule));
}

static void cand_short(const struct search_cand *k, char *buf, size_t cap)
{
	char rc[32], sc[32];
	rc_text(k, rc, sizeof(rc));
	sched_text(k, sc, sizeof(sc));
	snprintf(buf, cap, "dp%d tp%d pp%d cp%d%s zero%d sp %s, recompute %s, mbs %d, %s", k->dp, k->tp,
		 k->pp, k->cp, k->ep > 1 ? "" : "", k->zero, k->sp ? "on" : "off", rc, k->mbs, sc);
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

static void table_header(FILE *f)
{
	fprintf(f, "%4s %6s %5s %3s %3s %3s %3s %4s %3s %-11s %3s %5s %-15s %-11s %-15s %9s %10s %6s %8s %8s %8s %7s\n",
		"rank", "gpus", "dp", "tp", "pp", "cp", "ep", "zero", "sp", "recompute", "mbs", "accum", "schedule",
		"order", "layers", "step (s)", "tok/s/GPU", "MFU", "peak GiB", "headroom", "exp.comm", "bubble");
}

static void table_row(const struct search_req *rq, const struct search_cand *k, int rank, FILE *f)
{
	char rc[32], sc[32], ly[128];
	rc_text(k, rc, sizeof(rc));
	sched_text(k, sc, sizeof(sc));
	layers_text(rq, k, ly, sizeof(ly));
	fprintf(f, "%4d %6d %5d %3d %3d %3d %3d %4d %3s %-11s %3d %5d %-15s %-11s %-15s %9.3f %10.0f %5.1f%% %8.1f %8.1f %8.3f %6.1f%%%s\n",
		rank, k->gpus, k->dp, k->tp, k->pp, k->cp, k->ep, k->zero, k->sp ? "on" : "off", rc, k->mbs, accum(rq, k), sc,
		search_order_name(k->order), ly, k->step_s, k->tokens_per_s_per_gpu, 100 * k->mfu, k->peak_bytes / GIB,
		(k->capacity_bytes - k->peak_bytes) / GIB, k->exposed_comm_s, 100 * k->bubble_fraction,
		k->refined ? "" : " *");
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

static void explain(const struct search_req *rq, const struct search_result *res, FILE *f)
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
		fprintf(f, "  #%d is %.1f%% slower: %s +%.3f s (%.3f vs %.3f)", i + 1, slower, cat_names[worst],
			r[worst] - w[worst], r[worst], w[worst]);
		if (k->peak_bytes < res->top[0].peak_bytes)
			fprintf(f, "; uses %.1f GiB less memory", (res->top[0].peak_bytes - k->peak_bytes) / GIB);
		fputc('\n', f);
	}
}

/* Shapes other than the winner's: each the best feasible plan with that property. */
struct shape { const char *name; int (*has)(const struct search_cand *); };
static int no_pp(const struct search_cand *k) { return k->pp == 1; }
static int no_tp(const struct search_cand *k) { return k->tp == 1; }
static int no_zero(const struct search_cand *k) { return k->zero == 0; }
static int zero3(const struct search_cand *k) { return k->zero == 3; }
static int no_rc(const struct search_cand *k) { return k->recompute == RC_NONE; }
static int with_cp(const struct search_cand *k) { return k->cp > 1; }
static int zb_like(const struct search_cand *k) { return k->schedule >= SCHED_ZBH1; }
static const struct shape shapes[] = {
	{"no pipeline (pp 1)", no_pp}, {"no tensor parallelism (tp 1)", no_tp},
	{"no DP sharding (ZeRO-0)", no_zero}, {"fully sharded (ZeRO-3/FSDP)", zero3},
	{"no recompute", no_rc}, {"context parallel (cp > 1)", with_cp},
	{"zero-bubble or DualPipe schedule", zb_like}};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* all[] is sorted best first by the analytical score: the first match is the best. */
static const struct search_cand *best_of_shape(const struct search_result *res, const struct shape *s)
{
	for (int i = 0; i < res->nall; i++)
		if (s->has(&res->all[i])) return &res->all[i];
	return NULL;
}

static void print_shapes(const struct search_req *rq, const struct search_result *res, FILE *f)
{
	char buf[200];
	(void)rq;
	fprintf(f, "\nbest plan of each other shape (analytical estimate, vs #1):\n");
	for (size_t i = 0; i < NSHAPES; i++) {
		if (shapes[i].has(&res->top[0])) continue;
		const struct search_cand *k = best_of_shape(res, &shapes[i]);
		if (!k) { fprintf(f, "  %-34s none fits\n", shapes[i].name); continue; }
		cand_short(k, buf, sizeof(buf));
		fprintf(f, "  %-34s %8.0f tok/s/GPU (%+.1f%%)  %s\n", shapes[i].name, k->tokens_per_s_per_gpu,
			100 * (k->tokens_per_s_per_gpu / res->top[0].tokens_per_s_per_gpu - 1), buf);
	}
}

/* What would make the closest plan fit: each remedy priced on its own. */
struct remedy { char what[96]; double peak, cap; int fits, valid; };
#define NREM 6
static int remedies(const struct search_req *rq, const struct search_cand *k, struct remedy *out)
{
	char err[ERR_LEN];
	struct plan base, p;
	struct estimate e;
	int n = 0;
	if (search_cand_plan(rq, k, &base, err)) return 0;
	for (int i = 0; i < NREM; i++) {
		p = base;
		p.nstage_layers = 0;
		struct remedy *r = &out[n];
		memset(r, 0, sizeof(*r));
		switch (i) {
		case 0: p.zero = 3; snprintf(r->what, sizeof(r->what), "ZeRO-3 (shard parameters too)"); break;
		case 1: p.recompute = RC_FULL; p.recompute_layers = -1; snprintf(r->what, sizeof(r->what), "full recompute"); break;
		case 2: p.zero = 3; p.recompute = RC_FULL; p.recompute_layers = -1; snprintf(r->what, sizeof(r->what), "ZeRO-3 and full recompute"); break;
		case 3: p.seq /= 2; p.gbs *= 2; snprintf(r->what, sizeof(r->what), "half the sequence (%d), same tokens per batch", p.seq); break;
		case 4: /* the fewest doublings of dp (ZeRO-3, full recompute) that fit, up to 1024x */
			p.zero = 3; p.recompute = RC_FULL; p.recompute_layers = -1;
			for (int x = 2; x <= 1024; x *= 2) {
				struct plan q = base;
				q.zero = 3; q.recompute = RC_FULL; q.recompute_layers = -1; q.nstage_layers = 0;
				q.dp = base.dp * x; q.gpus = base.gpus * x;
				if (q.gbs % (q.dp * q.mbs)) q.gbs = q.dp * q.mbs;
				p = q;
				if (!plan_resolve(&q, rq->m, rq->h, err) && !plan_validate(&q, rq->m, rq->h, err) &&
				    !estimate_plan(rq->m, rq->h, &q, &e, err) && e.fits)
					break;
			}
			snprintf(r->what, sizeof(r->what), "%d GPUs (dp %d, ZeRO-3, full recompute, gbs %d)", p.gpus, p.dp, p.gbs);
			break;
		case 5: p.mbs = 1; p.sp = p.tp > 1; snprintf(r->what, sizeof(r->what), "micro-batch 1 with SP"); break;
		}
		if (plan_resolve(&p, rq->m, rq->h, err) || plan_validate(&p, rq->m, rq->h, err) ||
		    estimate_plan(rq->m, rq->h, &p, &e, err))
			continue;
		r->peak = e.peak_mem_bytes;
		r->cap = e.capacity_bytes;
		r->fits = e.fits;
		r->valid = 1;
		n++;
	}
	return n;
}

static void print_infeasible(const struct search_req *rq, const struct search_result *res, FILE *f)
{
	char buf[200];
	if (!res->have_closest) {
		fprintf(f, "\nno plan passes the divisibility rules; see the rejections above\n");
		return;
	}
	const struct search_cand *k = &res->closest;
	cand_short(k, buf, sizeof(buf));
	fprintf(f, "\nno plan fits in %.1f GiB per GPU. closest: %s\n  peak %.1f GiB (%.1f GiB over)\n",
		k->capacity_bytes / GIB, buf, k->peak_bytes / GIB, (k->peak_bytes - k->capacity_bytes) / GIB);
	struct remedy r[NREM];
	int n = remedies(rq, k, r);
	fprintf(f, "what would make it fit:\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "  %-50s peak %7.1f GiB  %s\n", r[i].what, r[i].peak / GIB, r[i].fits ? "fits" : "still does not fit");
	fprintf(f, "  (or a GPU with more memory; re-run tune with more --gpus to search the whole space)\n");
}

static void print_counts(const struct search_req *rq, const struct search_result *res, FILE *f)
{
	fprintf(f, "enumerated %ld plans in %.3f s (%.0f plans/s), priced %ld, %ld fit\n", res->enumerated,
		res->seconds, res->plans_per_s, res->evaluated, res->feasible);
	fprintf(f, "rejected:\n");
	for (int i = 0; i < REJ_COUNT; i++)
		if (res->rejected[i]) fprintf(f, "  %10ld  %s\n", res->rejected[i], search_reason_name((enum reject_reason)i));
	(void)rq;
}

void search_print(const struct search_req *rq, const struct search_result *res, const struct search_out *o, FILE *f)
{
	fprintf(f, "scaleplan tune: %s on %d x %s, seq %d, global batch %d sequences (%.2fM tokens), objective %s\n",
		rq->m->name, rq->gpus, rq->h->name, rq->seq, rq->gbs, (double)rq->gbs * rq->seq / 1048576.0,
		objective_name(rq->objective));
	print_counts(rq, res, f);
	if (!res->ntop) { print_infeasible(rq, res, f); return; }
	if (res->refined)
		fprintf(f, "\nranked by the analytical estimate; the top %d re-timed with the event engine (sim/event.h)\n", res->ntop);
	else
		fprintf(f, "\nranked by the analytical estimate only (not refined with the event engine)\n");
	table_header(f);
	for (int i = 0; i < res->ntop; i++) table_row(rq, &res->top[i], i + 1, f);
	fprintf(f, "(step time of the analytical estimate where marked *; headroom = capacity - peak, GiB = 2^30 B;\n"
		   " layers per pipeline stage, AxN = N stages of A layers)\n");
	for (int i = 0; i < res->ntop; i++) {
		const struct search_cand *k = &res->top[i];
		if (k->partitioned && res->rescued && k->src < 0)
			fprintf(f, "#%d: fits only with a %s split (%s): no plan fits with the default splits\n", i + 1,
				k->partitioned == 1 ? "time-balanced" : "memory-capped", k->partitioned == 1 ? "layers" : "layers and recompute");
		else if (k->partitioned)
			fprintf(f, "#%d: %s split, analytical step %.3f s vs %.3f s with the default split (%.1f%% faster)\n",
				i + 1, k->partitioned == 3 ? "memory-capped layer and recompute (MILP)" :
				k->partitioned == 2 ? "memory-capped layer and recompute" : "time-balanced layer",
				k->analytic_step_s, k->uniform_step_s, 100 * (k->uniform_step_s / k->analytic_step_s - 1));
	}
	explain(rq, res, f);
	print_shapes(rq, res, f);
	const struct search_cand *w = &res->top[0];
	if (o && o->tokens > 0) {
		double days = o->tokens / w->tokens_per_s / 86400, gpu_h = days * 24 * w->gpus;
		fprintf(f, "\n%.3g tokens: %.1f days on %d GPUs, %.3g GPU-hours", o->tokens, days, w->gpus, gpu_h);
		if (o->price > 0) fprintf(f, ", $%.3g at $%.2f/GPU-hour", gpu_h * o->price, o->price);
		fputc('\n', f);
	}
	if (o && o->tune_id) fprintf(f, "\nrecorded as tune %ld (scaleplan db show %ld)\n", o->tune_id, o->tune_id);
}

static cJSON *cand_json(const struct search_req *rq, const struct search_cand *k)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "gpus", k->gpus);
	cJSON_AddNumberToObject(o, "dp", k->dp);
	cJSON_AddNumberToObject(o, "tp", k->tp);
	cJSON_AddNumberToObject(o, "pp", k->pp);
	cJSON_AddNumberToObject(o, "cp", k->cp);
	cJSON_AddNumberToObject(o, "ep", k->ep);
	cJSON_AddNumberToObject(o, "vpp", k->vpp);
	cJSON_AddNumberToObject(o, "zero", k->zero);
	cJSON_AddBoolToObject(o, "sp", k->sp);
	cJSON_AddStringToObject(o, "recompute", recompute_name((enum recompute)k->recompute));
	cJSON_AddNumberToObject(o, "recompute_layers", k->recompute_layers);
	cJSON_AddNumberToObject(o, "mbs", k->mbs);
	cJSON_AddNumberToObject(o, "accumulation", accum(rq, k));
	cJSON_AddStringToObject(o, "schedule", schedule_name((enum schedule)k->schedule));
	cJSON_AddStringToObject(o, "order", search_order_name(k->order));
	cJSON_AddNumberToObject(o, "step_time_s", k->step_s);
	cJSON_AddNumberToObject(o, "analytic_step_time_s", k->analytic_step_s);
	cJSON_AddNumberToObject(o, "tokens_per_s_per_gpu", k->tokens_per_s_per_gpu);
	cJSON_AddNumberToObject(o, "mfu", k->mfu);
	cJSON_AddNumberToObject(o, "peak_mem_bytes", k->peak_bytes);
	cJSON_AddNumberToObject(o, "capacity_bytes", k->capacity_bytes);
	cJSON_AddBoolToObject(o, "fits", k->fits);
	cJSON_AddNumberToObject(o, "bubble_fraction", k->bubble_fraction);
	cJSON_AddNumberToObject(o, "exposed_comm_s", k->exposed_comm_s);
	cJSON_AddBoolToObject(o, "refined", k->refined);
	char err[ERR_LEN];
	struct plan p;
	if (!search_cand_plan(rq, k, &p, err))
		cJSON_AddItemToObject(o, "stage_layers", cJSON_CreateIntArray(p.stage_layers, p.nstage_layers));
	cJSON_AddStringToObject(o, "split", k->partitioned == 3 ? "milp" : k->partitioned == 2 ? "capped" :
				k->partitioned == 1 ? "balanced" : "default");
	if (k->partitioned && k->src >= 0) cJSON_AddNumberToObject(o, "default_split_step_time_s", k->uniform_step_s);
	if (k->partitioned && k->src < 0) cJSON_AddBoolToObject(o, "default_split_fits", 0);
	if (k->partitioned && k->uniform_refined_step_s > 0)
		cJSON_AddNumberToObject(o, "default_split_refined_step_time_s", k->uniform_refined_step_s);
	return o;
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
	cJSON_AddStringToObject(root, "ranked_by", res->refined ? "event engine (top K), analytical estimate (rest)" : "analytical estimate");
	cJSON *plans = cJSON_AddArrayToObject(root, "plans");
	for (int i = 0; i < res->ntop; i++) cJSON_AddItemToArray(plans, cand_json(rq, &res->top[i]));
	cJSON_AddNumberToObject(root, "enumerated", (double)res->enumerated);
	cJSON_AddNumberToObject(root, "evaluated", (double)res->evaluated);
	cJSON_AddNumberToObject(root, "feasible", (double)res->feasible);
	cJSON *rej = cJSON_AddObjectToObject(root, "rejected");
	for (int i = 0; i < REJ_COUNT; i++)
		cJSON_AddNumberToObject(rej, search_reason_name((enum reject_reason)i), (double)res->rejected[i]);
	cJSON_AddNumberToObject(root, "search_s", res->seconds);
	cJSON_AddNumberToObject(root, "plans_per_s", res->plans_per_s);
	if (!res->ntop && res->have_closest) {
		cJSON_AddItemToObject(root, "closest", cand_json(rq, &res->closest));
		struct remedy r[NREM];
		int n = remedies(rq, &res->closest, r);
		cJSON *sug = cJSON_AddArrayToObject(root, "suggestions");
		for (int i = 0; i < n; i++) {
			cJSON *s = cJSON_CreateObject();
			cJSON_AddStringToObject(s, "change", r[i].what);
			cJSON_AddNumberToObject(s, "peak_mem_bytes", r[i].peak);
			cJSON_AddBoolToObject(s, "fits", r[i].fits);
			cJSON_AddItemToArray(sug, s);
		}
	}
	if (o && o->tune_id) cJSON_AddNumberToObject(root, "tune_id", (double)o->tune_id);
	char *s = cJSON_Print(root);
	if (s) { fputs(s, f); fputc('\n', f); }
	free(s);
	cJSON_Delete(root);
}

static void md_table(const struct search_req *rq, const struct search_result *res, FILE *f, int html)
{
	const char *cols[] = {"rank", "dp", "tp", "pp", "cp", "ep", "ZeRO", "SP", "recompute", "mbs", "accum",
			      "schedule", "layers", "step (s)", "tokens/s/GPU", "MFU", "peak GiB", "headroom GiB", "exposed comm (s)", "bubble"};
	size_t nc = sizeof(cols) / sizeof(cols[0]);
	fputs(html ? "<table>\n<tr>" : "|", f);
	for (size_t i = 0; i < nc; i++) fprintf(f, html ? "<th>%s</th>" : " %s |", cols[i]);
	fputs(html ? "</tr>\n" : "\n|", f);
	if (!html) { for (size_t i = 0; i < nc; i++) fputs("---|", f); fputc('\n', f); }
	for (int i = 0; i < res->ntop; i++) {
		const struct search_cand *k = &res->top[i];
		char rc[32], sc[32], ly[128], cell[20][128];
		rc_text(k, rc, sizeof(rc));
		sched_text(k, sc, sizeof(sc));
		layers_text(rq, k, ly, sizeof(ly));
		snprintf(cell[0], 128, "%d", i + 1); snprintf(cell[1], 128, "%d", k->dp); snprintf(cell[2], 128, "%d", k->tp);
		snprintf(cell[3], 128, "%d", k->pp); snprintf(cell[4], 128, "%d", k->cp); snprintf(cell[5], 128, "%d", k->ep);
		snprintf(cell[6], 128, "%d", k->zero); snprintf(cell[7], 128, "%s", k->sp ? "on" : "off");
		snprintf(cell[8], 128, "%s", rc); snprintf(cell[9], 128, "%d", k->mbs); snprintf(cell[10], 128, "%d", accum(rq, k));
		snprintf(cell[11], 128, "%s", sc); snprintf(cell[12], 128, "%s", ly);
		snprintf(cell[13], 128, "%.3f", k->step_s);
		snprintf(cell[14], 128, "%.0f", k->tokens_per_s_per_gpu); snprintf(cell[15], 128, "%.1f%%", 100 * k->mfu);
		snprintf(cell[16], 128, "%.1f", k->peak_bytes / GIB); snprintf(cell[17], 128, "%.1f", (k->capacity_bytes - k->peak_bytes) / GIB);
		snprintf(cell[18], 128, "%.3f", k->exposed_comm_s); snprintf(cell[19], 128, "%.1f%%", 100 * k->bubble_fraction);
		fputs(html ? "<tr>" : "|", f);
		for (size_t c = 0; c < nc; c++) fprintf(f, html ? "<td>%s</td>" : " %s |", cell[c]);
		fputs(html ? "</tr>\n" : "\n", f);
	}
	if (html) fputs("</table>\n", f);
}

/* The inputs: request, pinned dimensions, base plan switches. */
static void report_inputs(const struct search_req *rq, FILE *f, int html)
{
	const struct search_fix *x = &rq->fix;
	struct { const char *k; int v; } pins[] = {{"dp", x->dp}, {"tp", x->tp}, {"pp", x->pp}, {"cp", x->cp},
		{"ep", x->ep}, {"vpp", x->vpp}, {"zero", x->zero}, {"sp", x->sp}, {"mbs", x->mbs},
		{"recompute_layers", x->recompute_layers}};
	const char *li = html ? "<li>" : "- ", *end = html ? "</li>\n" : "\n";
	fputs(html ? "<h2>Inputs</h2>\n<ul>\n" : "## Inputs\n\n", f);
	fprintf(f, "%smodel %s (%d layers), %d x %s (%.1f GiB each, %d per node)%s", li, rq->m->name, rq->m->layers,
		rq->gpus, rq->h->name, rq->h->hbm_bytes / GIB, rq->h->gpus_per_node, end);
	fprintf(f, "%ssequence %d tokens, global batch %d sequences (%.2fM tokens), objective %s, top %d%s", li, rq->seq,
		rq->gbs, (double)rq->gbs * rq->seq / 1048576.0, objective_name(rq->objective), rq->top, end);
	fprintf(f, "%sprecision %s, overlap: grad reduce %s, param gather %s, tp comm %s%s", li,
		precision_name(rq->base.precision),
		rq->base.overlap_grad_reduce ? "on" : "off", rq->base.overlap_param_gather ? "on" : "off",
		rq->base.overlap_tp_comm ? "on" : "off", end);
	fprintf(f, "%spinned:", li);
	int any = 0;
	for (size_t i = 0; i < sizeof(pins) / sizeof(pins[0]); i++)
		if (pins[i].v >= 0) { fprintf(f, " %s=%d", pins[i].k, pins[i].v); any = 1; }
	if (x->recompute >= 0) { fprintf(f, " recompute=%s", recompute_name((enum recompute)x->recompute)); any = 1; }
	if (x->schedule >= 0) { fprintf(f, " schedule=%s", schedule_name((enum schedule)x->schedule)); any = 1; }
	if (x->order >= 0) { fprintf(f, " order=%s", search_order_name(x->order)); any = 1; }
	if (rq->max_pp) { fprintf(f, " max_pp=%d", rq->max_pp); any = 1; }
	fprintf(f, "%s%s", any ? "" : " nothing", end);
	if (html) fputs("</ul>\n", f);
}

/* explain() and print_shapes() as preformatted text (HTML-escaped for the HTML file) */
static void report_why(const struct search_req *rq, const struct search_result *res, FILE *f, int html)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m) return;
	explain(rq, res, m);
	print_shapes(rq, res, m);
	fclose(m);
	fputs(html ? "<h2>Why the winner wins</h2>\n<pre>" : "\n## Why the winner wins\n\n```", f);
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (html && c == '<') fputs("&lt;", f);
		else if (html && c == '>') fputs("&gt;", f);
		else if (html && c == '&') fputs("&amp;", f);
		else fputc(c, f);
	}
	fputs(html ? "</pre>\n" : "```\n", f);
	free(text);
}

static void report_pics_section(const struct report_pics *pics, FILE *f, int html)
{
	if (!pics->n) return;
	fputs(html ? "<h2>Pictures</h2>\n" : "\n## Pictures\n\n", f);
	for (int i = 0; i < pics->n; i++) {
		const struct report_pic *p = &pics->pic[i];
		if (html)
			fprintf(f, "<figure><a href=\"%s\"><img src=\"%s\" alt=\"%s\" style=\"max-width:100%%\"></a>"
				"<figcaption>%s</figcaption></figure>\n", p->file, p->file, p->file, p->caption);
		else
			fprintf(f, "![%s](%s)\n\n%s ([%s](%s))\n\n", p->file, p->file, p->caption, p->file, p->file);
	}
}

static int report_file(const struct search_req *rq, const struct search_result *res, const struct search_out *o,
		       const struct report_pics *pics, const char *path, int html, char *err)
{
	FILE *f = fopen(path, "w");
	if (!f) return errf(err, "report: %s: %s", path, strerror(errno));
	if (html)
		fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>scaleplan tune</title>\n"
			"<style>body{font-family:sans-serif} table{border-collapse:collapse} td,th{border:1px solid #aaa;padding:2px 6px;text-align:right}</style>\n"
			"</head><body>\n<h1>scaleplan tune: %s on %d &times; %s</h1>\n", rq->m->name, rq->gpus, rq->h->name);
	else
		fprintf(f, "# scaleplan tune: %s on %d x %s\n\n", rq->m->name, rq->gpus, rq->h->name);
	report_inputs(rq, f, html);
	fputs(html ? "<h2>Search</h2>\n<p>" : "\n## Search\n\n", f);
	fprintf(f, "Enumerated %ld plans in %.3f s (%.0f plans/s); priced %ld, %ld fit.", res->enumerated, res->seconds,
		res->plans_per_s, res->evaluated, res->feasible);
	fprintf(f, html ? "</p>\n<ul>\n" : "\n\nRejected:\n\n");
	for (int i = 0; i < REJ_COUNT; i++)
		if (res->rejected[i])
			fprintf(f, html ? "<li>%ld: %s</li>\n" : "- %ld: %s\n", res->rejected[i], search_reason_name((enum reject_reason)i));
	fprintf(f, html ? "</ul>\n<h2>Ranked plans</h2>\n" : "\n## Ranked plans\n\n");
	if (res->ntop) md_table(rq, res, f, html);
	else fprintf(f, html ? "<p>No plan fits.</p>\n" : "No plan fits.\n");
	fprintf(f, html ? "<p>%s</p>\n" : "\n%s\n", res->refined ? "Top plans re-timed with the event engine (sim/event.h)." :
		"Ranked by the analytical estimate only.");
	if (res->ntop) report_why(rq, res, f, html);
	report_pics_section(pics, f, html);
	if (o && o->tune_id) fprintf(f, html ? "<p>Recorded as tune %ld.</p>\n" : "\nRecorded as tune %ld.\n", o->tune_id);
	if (html) fputs("</body></html>\n", f);
	if (fclose(f)) return errf(err, "report: %s: %s", path, strerror(errno));
	return 0;
}

int search_write_report(const struct search_req *rq, const struct search_result *res, const struct search_out *o,
			const char *dir, char *err)
{
	char path[1024];
	struct report_pics pics;
	if (mkdir(dir, 0777) && errno != EEXIST) return errf(err, "report: %s: %s", dir, strerror(errno));
	int rc = report_pictures(rq, res, dir, &pics, err);
	/* the text is written even when a picture failed; the failure is still reported */
	char err2[ERR_LEN];
	snprintf(path, sizeof(path), "%s/report.md", dir);
	if (report_file(rq, res, o, &pics, path, 0, err2)) return errf(err, "%s", err2);
	snprintf(path, sizeof(path), "%s/report.html", dir);
	if (report_file(rq, res, o, &pics, path, 1, err2)) return errf(err, "%s", err2);
	return rc;
}
