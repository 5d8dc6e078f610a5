/* search — enumerate, price, prune, rank; then re-time the finalists with the event engine.
 * The loops go from the degrees (cheap integer checks, each failure counted for every plan
 * below it) down to the micro-batch, where a plan is built, validated by plan_validate and
 * priced by estimate_plan. */
#include <stdlib.h>
#include <string.h>
#include "tuner/search.h"
#include "tuner/search_impl.h"
#include "sim/event.h"
#include "sim/flops.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/util.h"

static const char *const reason_names[REJ_COUNT] = {
	"tp larger than a node", "tp does not divide heads/kv heads/vocab/ffn",
	"2*cp does not divide seq", "tp does not divide seq/cp (SP)", "more stages than layers",
	"ep does not divide experts or dp*cp", "dp*mbs does not divide the global batch",
	"schedule micro-batch rules", "other plan rule", "does not fit in memory",
	"does not fit in memory (model states alone)",
	"does not fit in memory (smaller micro-batch already did not)",
	"dominated (less recompute already fits)"};
static const char *const order_names[] = {"tp-cp-dp-pp", "tp-cp-pp-dp", "tp-dp-cp-pp"};
static const char *const objective_names[] = {"throughput", "cost", "time"};

const char *search_reason_name(enum reject_reason r) { return r < REJ_COUNT ? reason_names[r] : "?"; }
const char *search_order_name(int order) { return order >= 0 && order < 3 ? order_names[order] : "?"; }
const char *objective_name(enum objective o) { return o <= OBJ_TIME ? objective_names[o] : "?"; }

void search_fix_init(struct search_fix *f)
{
	f->dp = f->tp = f->pp = f->cp = f->ep = f->vpp = f->zero = f->sp = -1;
	f->recompute = f->recompute_layers = f->mbs = f->schedule = f->order = -1;
}

int search_fix_parse(struct search_req *rq, const char *kv, char *err)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv) return errf(err, "--fix: '%s' is not key=value", kv);
	char key[64];
	size_t n = (size_t)(eq - kv);
	if (n >= sizeof(key)) return errf(err, "--fix: key too long in '%s'", kv);
	memcpy(key, kv, n);
	key[n] = 0;
	for (char *c = key; *c; c++) if (*c == '-') *c = '_';
	/* parse through the one plan parser, then read the value back */
	struct plan probe = rq->base;
	if (plan_set(&probe, key, eq + 1, err)) return -1;
	struct search_fix *f = &rq->fix;
	struct { const char *k; int *dst; int val; } dims[] = {
		{"dp", &f->dp, probe.dp}, {"tp", &f->tp, probe.tp}, {"pp", &f->pp, probe.pp},
		{"cp", &f->cp, probe.cp}, {"ep", &f->ep, probe.ep}, {"vpp", &f->vpp, probe.vpp},
		{"zero", &f->zero, probe.zero}, {"sp", &f->sp, probe.sp},
		{"recompute", &f->recompute, (int)probe.recompute},
		{"recompute_layers", &f->recompute_layers, probe.recompute_layers},
		{"mbs", &f->mbs, probe.mbs}, {"schedule", &f->schedule, (int)probe.schedule}};
	for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
		if (!strcmp(key, dims[i].k)) { *dims[i].dst = dims[i].val; return 0; }
	if (!strcmp(key, "order")) {
		for (int o = 0; o < 3; o++)
			if (!strcmp(probe.order, order_names[o])) { f->order = o; return 0; }
		return errf(err, "--fix order: the search knows %s, %s and %s", order_names[0], order_names[1], order_names[2]);
	}
	if (!strcmp(key, "stage_layers"))
		return errf(err, "--fix stage_layers: the tuner balances each finalist's split itself; pin pp and schedule instead");
	if (!strcmp(key, "gpus") || !strcmp(key, "gbs") || !strcmp(key, "seq") ||
	    !strcmp(key, "model") || !strcmp(key, "gpu"))
		return errf(err, "--fix %s: give it as its own option, not a fix", key);
	rq->base = probe; /* precision, overlaps, fp32_grads, gpus_per_node, ... */
	return 0;
}

/* ---- enumeration state ---- */

struct ctx {
	const struct search_req *rq;
	struct search_result *res;
	int cap_all;
	int gpn;                   /* GPUs per node */
	int gpus;                  /* world size being enumerated */
	double best_excess;        /* closest infeasible plan: least peak/capacity */
	double params_dense, params_expert; /* whole model, for the model-state bound */
	struct plan scratch;
};

#define MILP_EACH_S 0.1   /* GLPK's time limit per finalist */
#define MILP_TOTAL_S 0.3  /* and over all finalists */
#define FIXED(f, v) ((f) >= 0 && (f) != (v))

static int add_feasible(struct ctx *c, const struct search_cand *k)
{
	struct search_result *r = c->res;
	if (r->nall == c->cap_all) {
		int nc = c->cap_all ? c->cap_all * 2 : 4096;
		struct search_cand *na = realloc(r->all, sizeof(*na) * (size_t)nc);
		if (!na) return -1;
		r->all = na;
		c->cap_all = nc;
	}
	r->all[r->nall++] = *k;
	return 0;
}

/* Fills p from the candidate's fields; 0, or -1 with err (plan rule). */
static int build_plan(const struct search_req *rq, const struct search_cand *k, struct plan *p, char *err)
{
	*p = rq->base;
	p->gpus = k->gpus;
	p->dp = k->dp; p->tp = k->tp; p->pp = k->pp; p->cp = k->cp; p->ep = k->ep;
	p->etp = k->etp > 0 ? k->etp : k->tp;
	p->vpp = k->vpp; p->zero = k->zero; p->sp = k->sp;
	p->recompute = (enum recompute)k->recompute;
	p->recompute_layers = k->recompute_layers;
	p->mbs = k->mbs; p->gbs = rq->gbs; p->seq = rq->seq;
	p->schedule = (enum schedule)k->schedule;
	strcpy(p->order, order_names[k->order]);
	p->nstage_layers = 0;
	if (k->stage_layers && k->nstage_layers > 0 && k->nstage_layers <= PLAN_MAX_STAGES) {
		memcpy(p->stage_layers, k->stage_layers, sizeof(int) * (size_t)k->nstage_layers);
		p->nstage_layers = k->nstage_layers;
	}
	if (plan_resolve(p, rq->m, rq->h, err)) return -1;
	return plan_validate(p, rq->m, rq->h, err);
}

int search_cand_plan(const struct search_req *rq, const struct search_cand *c, struct plan *p, char *err)
{
	return build_plan(rq, c, p, err);
}

/* Bytes per GPU of weights, gradients and Adam states, a lower bound on what the estimator
 * counts: parameters evenly spread (the most loaded stage holds at least the mean), norms
 * treated as TP-sharded, experts as sharded over ep·tp, and ZeRO over the whole dp·cp group. */
static double model_state_bound(const struct ctx *c, const struct search_cand *k)
{
	double per = c->params_dense / ((double)k->tp * k->pp) + c->params_expert / ((double)k->ep * k->tp * k->pp);
	double n = (double)k->dp * k->cp;
	static const double bytes_per_param[4][2] = {{16, 0}, {4, 12}, {2, 14}, {0, 16}}; /* [ZERO §5] */
	return per * (bytes_per_param[k->zero][0] + bytes_per_param[k->zero][1] / n);
}

/* Prices one candidate: 1 fits, 0 does not fit, -1 rejected (counted), -2 out of memory. */
static int price(struct ctx *c, struct search_cand *k)
{
	char err[ERR_LEN];
	struct search_result *r = c->res;
	struct estimate e;
	double bound = model_state_bound(c, k);
	/* pruned, unless it might be the closest plan yet (the peak is at least the bound) */
	if (!c->rq->exhaustive && bound > c->rq->h->hbm_bytes &&
	    r->have_closest && bound / c->rq->h->hbm_bytes >= c->best_excess) {
		r->rejected[REJ_MEMORY_STATES]++;
		return 0;
	}
	if (build_plan(c->rq, k, &c->scratch, err) || estimate_plan(c->rq->m, c->rq->h, &c->scratch, &e, err)) {
		r->rejected[REJ_OTHER]++;
		return -1;
	}
	r->evaluated++;
	k->step_s = k->analytic_step_s = e.step_time_s;
	k->tokens_per_s = e.tokens_per_s;
	k->tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
	k->mfu = e.mfu;
	k->peak_bytes = e.peak_mem_bytes;
	k->capacity_bytes = e.capacity_bytes;
	k->bubble_fraction = e.bubble_fraction;
	k->exposed_comm_s = e.exposed_comm_s;
	k->fits = e.fits;
	k->refined = 0;
	k->score = search_score(c->rq, k);
	if (!e.fits) {
		r->rejected[REJ_MEMORY]++;
		double excess = e.peak_mem_bytes / e.capacity_bytes;
		if (!r->have_closest || excess < c->best_excess) {
			r->closest = *k;
			r->have_closest = 1;
			c->best_excess = excess;
		}
		return 0;
	}
	r->feasible++;
	if (add_feasible(c, k)) return -2;
	return 1;
}

/* Recompute options in increasing recompute work: none, selective, full on half of each
 * stage's layers (or on the pinned count), full. full does a superset of the work of every
 * other mode. Returns 0 when option i is not enumerated. */
#define NRC 4
static int rc_option(const struct search_fix *fx, int i, int stage_layers, int *mode, int *layers)
{
	*mode = i == 0 ? RC_NONE : i == 1 ? RC_SELECTIVE : RC_FULL;
	*layers = i == 2 ? (stage_layers + 1) / 2 : -1;
	if (fx->recompute_layers >= 0) {
		if (i != 2) return 0;
		*layers = fx->recompute_layers;
		return 1;
	}
	if (i == 2 && stage_layers < 2) return 0; /* the same as none or full */
	return !FIXED(fx->recompute, *mode);
}

/* The innermost loops: micro-batch, then recompute, with the two prunings. */
static int inner(struct ctx *c, struct search_cand *k, int rej, int stage_layers) /* rej -1: none */
{
	const struct search_req *rq = c->rq;
	struct search_result *r = c->res;
	int mbs_dead = 0;
	for (int mbs = 1; mbs <= 8; mbs *= 2) {
		if (FIXED(rq->fix.mbs, mbs)) continue;
		k->mbs = mbs;
		int rej2 = rej;
		if (rej2 < 0 && rq->gbs % (k->dp * mbs)) rej2 = REJ_BATCH;
		if (rej2 < 0) {
			int mb = rq->gbs / (k->dp * mbs);
			enum schedule s = (enum schedule)k->schedule;
			if ((s == SCHED_INTERLEAVED && mb % k->pp) || (s == SCHED_ZBV && mb < k->pp) ||
			    ((s == SCHED_DUALPIPE || s == SCHED_DUALPIPEV) && (mb % 2 || mb < 2 * k->pp)))
				rej2 = REJ_SCHEDULE;
		}
		int any_fit = 0, fit_at = -1;
		for (int i = 0; i < NRC; i++) {
			int mode, layers;
			if (!rc_option(&rq->fix, i, stage_layers, &mode, &layers)) continue;
			r->enumerated++;
			if (rej2 >= 0) { r->rejected[rej2]++; continue; }
			if (mbs_dead && !rq->exhaustive) { r->rejected[REJ_MEMORY_MBS]++; continue; }
			/* dominated: none fits -> everything else; selective or half fits -> full */
			if (!rq->exhaustive && fit_at >= 0 && (fit_at == 0 || i == 3)) { r->rejected[REJ_DOMINATED]++; continue; }
			k->recompute = mode;
			k->recompute_layers = layers;
			int f = price(c, k);
			if (f == -2) return -1;
			if (f == 1) { any_fit = 1; if (fit_at < 0) fit_at = i; }
		}
		if (rej2 < 0 && !any_fit) mbs_dead = 1;
	}
	return 0;
}

/* Schedules for pp > 1, as (schedule, v) pairs; returns the count. */
static int schedules(const struct model *m, int pp, int *sched, int *vpp)
{
	int n = 0;
	if (pp == 1) { sched[0] = SCHED_NONE; vpp[0] = 1; return 1; }
	const int plain[] = {SCHED_AFAB, SCHED_1F1B, SCHED_ZBH1, SCHED_ZBH2, SCHED_ZBV, SCHED_DUALPIPE, SCHED_DUALPIPEV};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) { sched[n] = plain[i]; vpp[n++] = 1; }
	/* interleaved with every v <= 8 that splits the layers evenly; where none does (61 layers,
	 * or 126 over pp 4) with every v, on an uneven split (balanced later for the finalists) */
	int even = 0;
	for (int v = 2; v <= 8; v++)
		if ((long)pp * v <= m->layers && m->layers % (pp * v) == 0) { sched[n] = SCHED_INTERLEAVED; vpp[n++] = v; even++; }
	for (int v = 2; v <= 8 && !even; v++)
		if ((long)pp * v <= m->layers) { sched[n] = SCHED_INTERLEAVED; vpp[n++] = v; }
	return n;
}

static int stages_of(int sched, int pp, int v)
{
	if (sched == SCHED_INTERLEAVED) return pp * v;
	if (sched == SCHED_ZBV || sched == SCHED_DUALPIPEV) return 2 * pp;
	return pp;
}

/* Degree-level rules, cheapest first; returns a reason or -1. */
static int degree_reason(const struct ctx *c, int tp, int cp, int pp)
{
	const struct model *m = c->rq->m;
	if (tp > c->gpn) return REJ_TP_NODE;
	if (m->heads % tp || (m->kv_heads % tp && tp % m->kv_heads) || m->vocab % tp || m->ffn_hidden % tp)
		return REJ_TP_SHAPE;
	if (cp > 1 && c->rq->seq % (2 * cp)) return REJ_CP_SEQ;
	if (pp > m->layers) return REJ_LAYERS;
	return -1;
}

static int orders_for(const struct search_cand *k, int *ord)
{
	int n = 0;
	ord[n++] = 0;
	if (k->pp > 1 && k->dp > 1) ord[n++] = 1;
	if (k->cp > 1 && k->dp > 1) ord[n++] = 2;
	return n;
}

/* Everything below the degrees (and ep); rej -1: no rule broken so far. */
static int below_degrees(struct ctx *c, struct search_cand *k, int rej)
{
	const struct search_req *rq = c->rq;
	int sched[16], vpp[16], ord[3];
	int ns = schedules(rq->m, k->pp, sched, vpp);
	for (int si = 0; si < ns; si++) {
		if (FIXED(rq->fix.schedule, sched[si]) || FIXED(rq->fix.vpp, vpp[si])) continue;
		k->schedule = sched[si];
		k->vpp = vpp[si];
		int nst = stages_of(sched[si], k->pp, vpp[si]);
		int rej1 = rej;
		if (rej1 < 0 && nst > rq->m->layers) rej1 = REJ_LAYERS;
		if (rej1 < 0 && sched[si] == SCHED_DUALPIPE && k->pp % 2) rej1 = REJ_SCHEDULE;
		int stage_layers = rq->m->layers / (nst > 0 ? nst : 1);
		if (sched[si] == SCHED_DUALPIPE) stage_layers = rq->m->layers / k->pp;
		int no = orders_for(k, ord);
		for (int oi = 0; oi < no; oi++) {
			if (FIXED(rq->fix.order, ord[oi])) continue;
			k->order = ord[oi];
			for (int zero = 0; zero <= 3; zero++) {
				if (FIXED(rq->fix.zero, zero)) continue;
				k->zero = zero;
				for (int sp = 0; sp <= (k->tp > 1); sp++) {
					if (FIXED(rq->fix.sp, sp)) continue;
					k->sp = sp;
					int rej2 = rej1;
					if (rej2 < 0 && sp && (rq->seq / k->cp) % k->tp) rej2 = REJ_SP_SEQ;
					if (inner(c, k, rej2, stage_layers)) return -1;
				}
			}
		}
	}
	return 0;
}

static int enumerate_world(struct ctx *c, int gpus, double f0, double f1)
{
	const struct search_req *rq = c->rq;
	const struct model *m = rq->m;
	c->gpus = gpus;
	int ndiv = 0, divs[64];
	for (int d = 1; d <= gpus && ndiv < 64; d++) if (gpus % d == 0) divs[ndiv++] = d;
	for (int a = 0; a < ndiv; a++) {
		int tp = divs[a];
		if (FIXED(rq->fix.tp, tp)) continue;
		if (rq->progress) rq->progress(rq->progress_ctx, f0 + (f1 - f0) * a / ndiv);
		for (int b = 0; b < ndiv; b++) {
			int cp = divs[b];
			if (FIXED(rq->fix.cp, cp) || (gpus / tp) % cp) continue;
			for (int d = 0; d < ndiv; d++) {
				int pp = divs[d];
				if (FIXED(rq->fix.pp, pp) || (gpus / tp / cp) % pp) continue;
				if (rq->max_pp && pp > rq->max_pp) continue;
				int dp = gpus / tp / cp / pp;
				if (FIXED(rq->fix.dp, dp)) continue;
				int rej = degree_reason(c, tp, cp, pp);
				int dpcp = dp * cp;
				/* ep inside dp*cp with the experts' TP the attention's, or folded over the
				 * TP ranks too with expert TP 1 (Megatron's MoE parallel folding) */
				for (int ep = 1; ep <= (model_is_moe(m) ? tp * dpcp : 1); ep++) {
					int fold = dpcp % ep != 0;
					if ((tp * dpcp) % ep || FIXED(rq->fix.ep, ep)) continue;
					int rej1 = rej;
					if (rej1 < 0 && model_is_moe(m) && m->moe_experts % ep) rej1 = REJ_EXPERTS;
					struct search_cand k;
					memset(&k, 0, sizeof(k));
					k.gpus = gpus; k.dp = dp; k.tp = tp; k.pp = pp; k.cp = cp; k.ep = ep;
					k.etp = fold ? 1 : tp;
					if (below_degrees(c, &k, rej1)) return -1;
				}
			}
		}
	}
	return 0;
}

/* ---- refinement with the event engine (sim/event.h: the whole step, DP tail included) ---- */

static int cmp_score(const void *a, const void *b)
{
	const struct search_cand *x = a, *y = b;
	if (x->score != y->score) return x->score > y->score ? -1 : 1;
	/* ties: less memory first, then fewer pipeline stages (simpler) */
	if (x->peak_bytes != y->peak_bytes) return x->peak_bytes < y->peak_bytes ? -1 : 1;
	return x->pp - y->pp;
}

/* Re-times k with the event engine; 0, or -1 when the engine did not run (k unchanged). */
static int refine_one(const struct search_req *rq, struct search_cand *k)
{
	char err[ERR_LEN];
	struct plan p;
	struct estimate e;
	struct event_sim ev;
	if (build_plan(rq, k, &p, err) || estimate_plan(rq->m, rq->h, &p, &e, err) ||
	    event_run(rq->m, rq->h, &p, &e, NULL, &ev, err))
		return -1;
	int rc = -1;
	if (ev.step_s > 0) {
		k->step_s = ev.step_s;
		k->tokens_per_s = ev.tokens_per_s;
		k->tokens_per_s_per_gpu = ev.tokens_per_s_per_gpu;
		k->mfu = ev.mfu;
		k->bubble_fraction = ev.bubble_fraction;
		k->exposed_comm_s = 0;
		for (int d = 0; d < EV_DIM_COUNT; d++) k->exposed_comm_s += ev.exposed_s[d];
		k->refined = 1;
		rc = 0;
	}
	event_sim_free(&ev);
	k->score = search_score(rq, k);
	return rc;
}

/* A partitioned finalist is also re-timed in its default form (res->all[src]); the engine's
 * faster of the two is kept, so partitioning never makes a finalist slower in either model. */
static void refine_top(const struct search_req *rq, struct search_result *res)
{
	for (int i = 0; i < res->ntop; i++) {
		struct search_cand *k = &res->top[i];
		if (refine_one(rq, k)) continue;
		if (!k->partitioned || k->src < 0 || k->src >= res->nall) continue;
		struct search_cand u = res->all[k->src];
		if (refine_one(rq, &u)) continue;
		k->uniform_refined_step_s = u.step_s;
		if (u.step_s < k->step_s) {
			free(k->stage_layers);
			u.uniform_step_s = u.analytic_step_s;
			u.uniform_refined_step_s = u.step_s;
			u.src = k->src;
			*k = u;
		}
	}
	qsort(res->top, (size_t)res->ntop, sizeof(*res->top), cmp_score);
	res->refined = 1;
}

int search_run(const struct search_req *rq, struct search_result *res, char *err)
{
	memset(res, 0, sizeof(*res));
	if (rq->gpus < 1 || rq->seq < 1 || rq->gbs < 1)
		return errf(err, "search: gpus (%d), seq (%d) and gbs (%d) must be positive", rq->gpus, rq->seq, rq->gbs);
	struct ctx c;
	memset(&c, 0, sizeof(c));
	c.rq = rq;
	c.res = res;
	c.gpn = rq->base.gpus_per_node > 0 ? rq->base.gpus_per_node : rq->h->gpus_per_node;
	c.params_dense = embedding_params(rq->m) + head_params(rq->m);
	for (int l = 0; l < rq->m->layers; l++) {
		struct layer_params lp;
		layer_params(rq->m, l, &lp);
		c.params_dense += lp.total - lp.experts;
		c.params_expert += lp.experts;
	}
	double t0 = now_s();
	/* world sizes: exactly gpus for throughput; gpus, gpus/2, ... down to one node otherwise */
	int worlds[32], nw = 0;
	for (int g = rq->gpus; g >= 1 && nw < 32; g /= 2) {
		worlds[nw++] = g;
		if (rq->objective == OBJ_THROUGHPUT || g % 2 || g <= c.gpn) break;
	}
	for (int i = 0; i < nw; i++)
		if (enumerate_world(&c, worlds[i], (double)i / nw, (double)(i + 1) / nw)) {
			search_result_free(res);
			return errf(err, "search: out of memory");
		}
	if (rq->progress) rq->progress(rq->progress_ctx, 1.0);
	/* nothing fits with the default splits: the closest plan may fit with a split that moves
	 * layers off its fullest stage (and recomputes what the caps need) */
	if (!res->nall && res->have_closest && res->closest.pp > 1) {
		struct search_cand cl = res->closest;
		cl.stage_layers = NULL;
		cl.nstage_layers = 0;
		search_partition_finalist(rq, &cl, MILP_EACH_S);
		if (cl.fits && cl.partitioned) {
			cl.src = -1;
			if (add_feasible(&c, &cl)) {
				free(cl.stage_layers);
				search_result_free(res);
				return errf(err, "search: out of memory");
			}
			res->rejected[REJ_MEMORY]--;
			res->feasible++;
			res->rescued = 1;
		}
	}
	int k = rq->top > 0 ? rq->top : 10;
	if (k > res->nall) k = res->nall;
	if (res->nall) {
		/* partial selection would do; a full sort of ~1e5 entries costs a few ms */
		qsort(res->all, (size_t)res->nall, sizeof(*res->all), cmp_score);
		if (k < 1) k = 1;
		res->top = malloc(sizeof(*res->top) * (size_t)k);
		if (!res->top) { search_result_free(res); return errf(err, "search: out of memory"); }
		memcpy(res->top, res->all, sizeof(*res->top) * (size_t)k);
		res->ntop = k;
		for (int i = 0; i < res->nall; i++) { res->all[i].stage_layers = NULL; res->all[i].nstage_layers = 0; }
		/* GLPK time: at most MILP_TOTAL_S over all finalists */
		double milp_t0 = now_s();
		for (int i = 0; i < k; i++) {
			if (!res->rescued) res->top[i].src = i;
			double left = MILP_TOTAL_S - (now_s() - milp_t0);
			search_partition_finalist(rq, &res->top[i], left < MILP_EACH_S ? left : MILP_EACH_S);
		}
		qsort(res->top, (size_t)res->ntop, sizeof(*res->top), cmp_score);
		if (rq->refine) refine_top(rq, res);
	}
	res->seconds = now_s() - t0;
	res->plans_per_s = res->seconds > 0 ? res->enumerated / res->seconds : 0;
	return 0;
}

void search_result_free(struct search_result *res)
{
	if (!res) return;
	for (int i = 0; res->top && i < res->ntop; i++) free(res->top[i].stage_layers);
	if (!res->top && res->rescued) /* the split is owned by all[0] until top takes it */
		for (int i = 0; res->all && i < res->nall; i++) free(res->all[i].stage_layers);
	free(res->top);
	free(res->all);
	res->top = res->all = NULL;
	res->ntop = res->nall = 0;
}
