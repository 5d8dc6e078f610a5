/* search — enumerate, price, prune, rank; then re-time the finalists with the event engine.
 * The loops go from the degrees (cheap integer checks, each failure counted for every plan
 * below it) down to the micro-batch, where a plan is built, validated by plan_validate and
 * priced by estimate_plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tuner/partition.h"
#include "tuner/search.h"
#include "sim/event.h"
#include "sim/flops.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/schedule.h"
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
#define MILP_MAX_CELLS 96 /* layers x stages up to which the MILP runs (GLPK takes seconds on
			   * 61 layers x 4 stages without proving optimality) */
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

static double score_of(const struct search_req *rq, const struct search_cand *k)
{
	return rq->objective == OBJ_TIME ? k->tokens_per_s : k->tokens_per_s_per_gpu;
}

/* Fills p from the candidate's fields; 0, or -1 with err (plan rule). */
static int build_plan(const struct search_req *rq, const struct search_cand *k, struct plan *p, char *err)
{
	*p = rq->base;
	p->gpus = k->gpus;
	p->dp = k->dp; p->tp = k->tp; p->pp = k->pp; p->cp = k->cp; p->ep = k->ep;
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
	k->score = score_of(c->rq, k);
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
				for (int ep = 1; ep <= (model_is_moe(m) ? dpcp : 1); ep++) {
					if (dpcp % ep || FIXED(rq->fix.ep, ep)) continue;
					int rej1 = rej;
					if (rej1 < 0 && model_is_moe(m) && m->moe_experts % ep) rej1 = REJ_EXPERTS;
					struct search_cand k;
					memset(&k, 0, sizeof(k));
					k.gpus = gpus; k.dp = dp; k.tp = tp; k.pp = pp; k.cp = cp; k.ep = ep;
					if (below_degrees(c, &k, rej1)) return -1;
				}
			}
		}
	}
	return 0;
}

/* ---- partitioning of the finalists (tuner/partition.h) ---- */

/* Costs read off the estimator by probing the candidate's own plan with explicit splits: one
 * more layer on the first stage adds exactly that layer's work and memory (the estimator sums
 * per-layer costs linearly), and what a stage holds beyond its layers is its fixed part. */
struct probe_costs {
	double t[2], w[2], a[2];       /* per layer, [0] dense [1] MoE: F+B+W per micro-batch (s),
					* model-state bytes, activation bytes per micro-batch with
					* the allocator's fragmentation factor */
	double t_first, t_last;        /* fixed time per micro-batch: embedding, LM head + loss */
	double b_first, b_mid, b_last; /* fixed bytes per stage (embedding/head states, logits,
					* buffers, context) */
	double k_first, k_last;        /* micro-batches in flight at the first / last stage's peak */
};

/* Schedules with one stage per pipeline rank: the MILP's per-stage memory caps are per-GPU. */
static int one_stage_per_rank(int sched)
{
	return sched == SCHED_AFAB || sched == SCHED_1F1B || sched == SCHED_ZBH1 || sched == SCHED_ZBH2;
}

static double kind_t(const struct rank_est *k) { return k->t_f + k->t_b + k->t_w; }
static double kind_states(const struct rank_est *k) { return k->weights_bytes + k->grads_bytes + k->optim_bytes; }

/* Estimates q with a layers on stage 0 and the rest spread over the other stages. */
static int probe(const struct search_req *rq, struct plan *q, int a, struct estimate *e)
{
	char err[ERR_LEN];
	int L = rq->m->layers, n = q->pp;
	if (a < 1 || L - a < n - 1) return -1;
	q->nstage_layers = n;
	q->stage_layers[0] = a;
	int base = (L - a) / (n - 1), extra = (L - a) % (n - 1);
	for (int s = 1; s < n; s++) q->stage_layers[s] = base + (s <= extra);
	if (estimate_plan(rq->m, rq->h, q, e, err) || e->nkinds < 2) return -1;
	return 0;
}

static int probe_costs(const struct search_req *rq, const struct plan *p, enum recompute rc, struct probe_costs *pc)
{
	const struct model *m = rq->m;
	const struct hw *h = rq->h;
	struct plan q = *p;
	struct estimate e1, e2;
	q.vpp = 1;
	if (!one_stage_per_rank(q.schedule)) q.schedule = SCHED_1F1B;
	q.recompute = rc;
	q.recompute_layers = -1;
	memset(pc, 0, sizeof(*pc));
	int moe = model_is_moe(m), D = moe ? m->moe_dense_layers : m->layers, L = m->layers;
	double frag = h->frag_factor;
	for (int ty = 0; ty < 2; ty++) {
		/* the first layer of this type past layer 0 */
		int at = ty == 0 ? (D >= 2 ? 1 : -1) : (moe ? (D > 1 ? D : 1) : -1);
		if (at < 0) continue;
		if (probe(rq, &q, at, &e1) || probe(rq, &q, at + 1, &e2)) return -1;
		pc->t[ty] = kind_t(&e2.kind[0]) - kind_t(&e1.kind[0]);
		pc->w[ty] = kind_states(&e2.kind[0]) - kind_states(&e1.kind[0]);
		pc->a[ty] = frag * (e2.kind[0].act_per_mb_bytes - e1.kind[0].act_per_mb_bytes);
	}
	if (moe && D == 1) { /* one dense layer, always with the embedding: scale by its FLOPs */
		double r = layer_matmul_flops_fwd(m, 0) / layer_matmul_flops_fwd(m, 1);
		pc->t[0] = r * pc->t[1]; pc->w[0] = r * pc->w[1]; pc->a[0] = pc->a[1];
	}
	if (probe(rq, &q, 1, &e1)) return -1;
	const struct rank_est *k0 = &e1.kind[0], *kl = &e1.kind[e1.nkinds - 1];
	int t0 = model_layer_is_moe(m, 0);
	pc->t_first = kind_t(k0) - pc->t[t0];
	pc->b_first = kind_states(k0) - pc->w[t0] + frag * (k0->logits_bytes + k0->buffers_bytes) + h->overhead_bytes;
	double tl = 0, wl = 0;
	for (int l = L - q.stage_layers[q.pp - 1]; l < L; l++) {
		tl += pc->t[model_layer_is_moe(m, l)];
		wl += pc->w[model_layer_is_moe(m, l)];
	}
	pc->t_last = kind_t(kl) - tl;
	pc->b_last = kind_states(kl) - wl + frag * (kl->logits_bytes + kl->buffers_bytes) + h->overhead_bytes;
	pc->b_mid = h->overhead_bytes;
	if (e1.nkinds > 2) pc->b_mid += frag * (e1.kind[1].logits_bytes + e1.kind[1].buffers_bytes);
	pc->k_first = k0->act_inflight;
	pc->k_last = kl->act_inflight;
	return 0;
}

/* Per-micro-batch load of every pipeline rank for a split: a rank sums the stages it holds
 * (interleaved: stage s on rank s mod pp; zb-v and dualpipev: the V, stages s and 2pp-1-s on
 * rank s; dualpipe: stages s and pp-1-s on rank s, each micro-batch visiting one of the two);
 * returns the slowest rank's load. pre: prefix sums of the per-layer times. */
static double rank_loads(const struct plan *p, const double *pre, const double *stage, const int *counts, int n,
			 double *load)
{
	double worst = 0;
	for (int r = 0; r < p->pp; r++) load[r] = 0;
	for (int s = 0, l = 0; s < n; l += counts[s], s++) {
		double t = stage[s] + pre[l + counts[s]] - pre[l];
		switch (p->schedule) {
		case SCHED_INTERLEAVED: load[s % p->pp] += t; break;
		case SCHED_ZBV: case SCHED_DUALPIPEV: load[s < p->pp ? s : 2 * p->pp - 1 - s] += t; break;
		case SCHED_DUALPIPE: load[s] += t / 2; load[p->pp - 1 - s] += t / 2; break;
		default: load[s] += t;
		}
	}
	for (int r = 0; r < p->pp; r++) worst = fmax(worst, load[r]);
	return worst;
}

/* Ranks holding several stages: from the stage-balanced split, move single layers across
 * stage boundaries while that lowers the slowest rank (then the sum of squared loads). */
static double rank_balance(const struct plan *p, const double *pre, const double *stage, int *counts, int n,
			   double *load)
{
	double best = rank_loads(p, pre, stage, counts, n, load), best_sq = 0;
	for (int r = 0; r < p->pp; r++) best_sq += load[r] * load[r];
	for (int iter = 0; iter < 64 * n; iter++) {
		int mb = -1, md = 0;
		double nb = best, nsq = best_sq;
		for (int b = 0; b + 1 < n; b++)
			for (int d = -1; d <= 1; d += 2) { /* d -1: stage b gives its last layer to b+1 */
				if ((d < 0 && counts[b] < 2) || (d > 0 && counts[b + 1] < 2)) continue;
				counts[b] += d; counts[b + 1] -= d;
				double w = rank_loads(p, pre, stage, counts, n, load), sq = 0;
				for (int r = 0; r < p->pp; r++) sq += load[r] * load[r];
				counts[b] -= d; counts[b + 1] += d;
				if (w < nb * (1 - 1e-12) || (w <= nb * (1 + 1e-12) && sq < nsq * (1 - 1e-12))) {
					nb = w; nsq = sq; mb = b; md = d;
				}
			}
		if (mb < 0) break;
		counts[mb] += md; counts[mb + 1] -= md;
		best = nb; best_sq = nsq;
	}
	return rank_loads(p, pre, stage, counts, n, load);
}

int search_split(const struct search_req *rq, const struct search_cand *k, int *counts, int *nstages,
		 double *max_stage_s, char *err)
{
	const struct model *m = rq->m;
	struct plan p;
	struct search_cand c = *k;
	c.stage_layers = NULL;
	c.nstage_layers = 0;
	if (build_plan(rq, &c, &p, err)) return -1;
	int L = m->layers, n = plan_stages(&p);
	if (p.pp < 2) return errf(err, "split: pp 1 has one stage");
	if (L < p.pp + 2 || L < n) return errf(err, "split: %d layers are too few to balance over %d stages", L, n);
	int partial = p.recompute == RC_FULL && p.recompute_layers >= 0;
	struct probe_costs pc, full;
	if (probe_costs(rq, &p, partial ? RC_NONE : p.recompute, &pc) || (partial && probe_costs(rq, &p, RC_FULL, &full)))
		return errf(err, "split: the estimator did not price the probe splits");
	double *time = malloc(sizeof(double) * (size_t)(2 * L + 1 + n + p.pp));
	if (!time) return errf(err, "split: out of memory");
	double *pre = time + L, *stage = pre + L + 1, *load = stage + n;
	pre[0] = 0;
	for (int l = 0; l < L; l++) {
		time[l] = pc.t[model_layer_is_moe(m, l)];
		pre[l + 1] = pre[l] + time[l];
	}
	for (int s = 0; s < n; s++) stage[s] = 0;
	if (partial) { /* the first recompute_layers of every stage run their forward twice */
		int ty = model_is_moe(m);
		for (int s = 0; s < n; s++) stage[s] = p.recompute_layers * (full.t[ty] - pc.t[ty]);
	}
	stage[0] += pc.t_first;
	stage[n - 1] += pc.t_last;
	struct part_problem pb = {.nlayers = L, .nstages = n, .time_s = time, .stage_s = stage};
	struct part_result r = {.counts = counts};
	int rc = partition_dp(&pb, &r, err);
	*nstages = n;
	*max_stage_s = r.max_stage_s;
	if (!rc && n > p.pp) *max_stage_s = rank_balance(&p, pre, stage, counts, n, load);
	else if (!rc && p.schedule == SCHED_DUALPIPE) *max_stage_s = rank_balance(&p, pre, stage, counts, n, load);
	free(time);
	return rc;
}

/* Prices the candidate with the given split and recompute; adopts it into *best when it fits
 * and *best does not, or when it fits and is faster. */
static void try_split(const struct search_req *rq, struct search_cand *best, const int *counts, int n,
		      int rc_mode, int rc_layers, int how)
{
	char err[ERR_LEN];
	struct plan p;
	struct estimate e;
	struct search_cand c = *best;
	int *split = malloc(sizeof(int) * (size_t)n);
	if (!split) return;
	memcpy(split, counts, sizeof(int) * (size_t)n);
	c.stage_layers = split;
	c.nstage_layers = n;
	c.recompute = rc_mode;
	c.recompute_layers = rc_mode == RC_FULL ? rc_layers : -1;
	/* a plan that does not fit takes any split that fits; one that fits only a faster one */
	if (build_plan(rq, &c, &p, err) || estimate_plan(rq->m, rq->h, &p, &e, err) || !e.fits ||
	    (best->fits && e.step_time_s >= best->analytic_step_s * (1 - 1e-12))) {
		free(split);
		return;
	}
	c.step_s = c.analytic_step_s = e.step_time_s;
	c.tokens_per_s = e.tokens_per_s;
	c.tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
	c.mfu = e.mfu;
	c.peak_bytes = e.peak_mem_bytes;
	c.capacity_bytes = e.capacity_bytes;
	c.bubble_fraction = e.bubble_fraction;
	c.exposed_comm_s = e.exposed_comm_s;
	c.fits = 1;
	c.partitioned = how;
	c.score = score_of(rq, &c);
	free(best->stage_layers);
	*best = c;
}

/* Where memory binds: layers per stage and which layers recompute, under each stage's cap.
 * The plan holds one recompute count per stage (a stage recomputes its first r layers, as the
 * estimator and Megatron's --recompute-method block do), so the exact capped DP runs for every
 * r; on small problems the GLPK MILP also chooses layers one by one, and the largest count it
 * recomputes on any stage becomes the plan's r. Each split is re-priced by the estimator. */
static void memory_split(const struct search_req *rq, struct search_cand *best, double milp_s)
{
	const struct model *m = rq->m;
	char err[ERR_LEN];
	struct plan p;
	struct probe_costs pn, pf;
	struct search_cand c = *best;
	c.stage_layers = NULL;
	c.nstage_layers = 0;
	if (build_plan(rq, &c, &p, err) || probe_costs(rq, &p, RC_NONE, &pn) || probe_costs(rq, &p, RC_FULL, &pf)) return;
	int L = m->layers, n = p.pp;
	double *buf = malloc(sizeof(double) * (size_t)(5 * L + 4 * n));
	int *ibuf = malloc(sizeof(int) * (size_t)(L + n));
	if (!buf || !ibuf) { free(buf); free(ibuf); return; }
	double *time = buf, *rct = buf + L, *wb = buf + 2 * L, *ab = buf + 3 * L, *cb = buf + 4 * L;
	double *stage = buf + 5 * L, *infl = stage + n, *sb = infl + n, *cap = sb + n;
	for (int l = 0; l < L; l++) {
		int ty = model_layer_is_moe(m, l);
		time[l] = pn.t[ty];
		rct[l] = fmax(0, pf.t[ty] - pn.t[ty]);
		wb[l] = pn.w[ty];
		ab[l] = pn.a[ty];
		cb[l] = pf.a[ty];
	}
	for (int s = 0; s < n; s++) {
		stage[s] = s == 0 ? pn.t_first : s == n - 1 ? pn.t_last : 0;
		/* in flight: the first and last stages' counts, linear in between (1F1B: pp - s;
		 * ZB-H1: (pp - s) + s·M_W/M_B) */
		infl[s] = pn.k_first + (pn.k_last - pn.k_first) * s / (n - 1);
		sb[s] = s == 0 ? pf.b_first : s == n - 1 ? pf.b_last : pf.b_mid;
		cap[s] = rq->h->hbm_bytes;
	}
	struct part_problem pb = {.nlayers = L, .nstages = n, .time_s = time, .stage_s = stage, .recompute_s = rct,
				  .weight_bytes = wb, .act_bytes = ab, .ckpt_bytes = cb, .inflight = infl,
				  .stage_bytes = sb, .cap_bytes = cap};
	int *counts = ibuf + L;
	struct part_result r = {.counts = counts, .recompute = ibuf};
	int rmax = L - n + 1;
	for (int rc = -1; rc <= rmax; rc++) {
		if (rq->fix.recompute >= 0 && rq->fix.recompute != (rc ? RC_FULL : RC_NONE)) continue;
		if (rq->fix.recompute_layers >= 0 && rq->fix.recompute_layers != rc) continue;
		if (partition_dp_capped(&pb, rc, &r, err) || r.status == PART_INFEASIBLE) continue;
		int biggest = 0;
		for (int s = 0; s < n; s++) if (counts[s] > biggest) biggest = counts[s];
		if (rc > 0 && rc >= biggest) continue; /* the same as rc -1 */
		try_split(rq, best, counts, n, rc ? RC_FULL : RC_NONE, rc, 2);
	}
	if (milp_s > 0 && (long)L * n <= MILP_MAX_CELLS && rq->fix.recompute < 0 && rq->fix.recompute_layers < 0 &&
	    !partition_milp(&pb, milp_s, &r, err) && r.status != PART_INFEASIBLE) {
		int most = 0, biggest = 0;
		for (int s = 0, l = 0; s < n; s++) {
			int k = 0;
			for (int j = 0; j < counts[s]; j++, l++) k += ibuf[l];
			if (k > most) most = k;
			if (counts[s] > biggest) biggest = counts[s];
		}
		try_split(rq, best, counts, n, most ? RC_FULL : RC_NONE, most >= biggest ? -1 : most, 3);
	}
	free(buf);
	free(ibuf);
}

/* The finalist's best of: default split, time-balanced split, memory-capped MILP split. */
static void partition_finalist(const struct search_req *rq, struct search_cand *k, double milp_s)
{
	char err[ERR_LEN];
	int counts[PLAN_MAX_STAGES], n;
	double ms;
	k->uniform_step_s = k->analytic_step_s;
	if (k->pp < 2) return;
	if (!search_split(rq, k, counts, &n, &ms, err)) try_split(rq, k, counts, n, k->recompute, k->recompute_layers, 1);
	/* memory binds when the finalist needed full recompute or the balanced split did not fit */
	if (one_stage_per_rank(k->schedule) && (k->recompute == RC_FULL || k->partitioned != 1) &&
	    rq->m->layers >= k->pp + 2)
		memory_split(rq, k, milp_s);
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
	k->score = score_of(rq, k);
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
		partition_finalist(rq, &cl, MILP_EACH_S);
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
			partition_finalist(rq, &res->top[i], left < MILP_EACH_S ? left : MILP_EACH_S);
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
