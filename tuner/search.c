/* search — enumerate, price, prune, rank, merge twins, partition the finalists. The loops go
 * from the degrees (cheap integer checks, each failure counted for every plan below it) down
 * to the micro-batch and the overlap switches, where a plan is built, validated by
 * plan_validate and priced by estimate_plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tuner/search.h"
#include "tuner/search_impl.h"
#include "sim/layout.h"
#include "sim/flops.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/util.h"


/* ---- enumeration state ---- */

struct ctx {
	const struct search_req *rq;
	struct search_result *res;
	int cap_all;
	int gpn;                   /* GPUs per node */
	int gpus;                  /* world size being enumerated */
	double best_excess;        /* closest infeasible plan: least peak/capacity */
	double params_dense, params_expert; /* whole model, for the model-state bound */
	double cap_bound;          /* HBM less what no plan's pool can use (context, one communicator) */
	double f0, f1;             /* progress: the fraction of the space this world covers */
	long next_progress;        /* enumerated count at which to report progress next */
	int dominated;             /* a reason every plan below the current schedule takes (AFAB), or -1 */
	/* the bound (search.h, pruning 6): the K best distinct scores so far (a min-heap) and the
	 * best score so far of each shape (-1: none fits yet) */
	double *kbest;
	int nk, k;
	double shape_best[SEARCH_NSHAPES];
	/* upper bounds on the score of the plans of the current schedule and order, by [zero][sp]
	 * [micro-batch 1,2,4,8][recompute option]: a priced score, or the bound that skipped it;
	 * -1 unknown */
	double ubt[4][2][4][4];
	struct plan scratch;
	/* what tune --framework's profile offers (its "offers"): bits of the ZeRO stages, the
	 * schedules (enum schedule) and the recompute modes (enum recompute) it has for the
	 * current degrees; all bits without a framework */
	unsigned offer_zero, offer_sched, offer_rc;
	int rc_sel;                /* the partial recompute mode searched: Megatron's selective, or
				    * per-op checkpointing where the framework has that instead */
	int offers_cond;           /* an offer has a condition: the masks follow the degrees */
};

/* The offer masks (struct ctx) of the framework for plan p (NULL: the unconditional offers) */
static void offer_masks(struct ctx *c, const struct plan *p)
{
	const struct framework *fw = &c->rq->fw;
	char v[12];
	c->offer_zero = c->offer_sched = c->offer_rc = ~0u;
	for (int z = 0; z <= 3; z++) {
		snprintf(v, sizeof(v), "%d", z);
		if (!framework_offers(fw, "zero", v, p)) c->offer_zero &= ~(1u << z);
	}
	/* no pipeline is every framework's */
	for (int sc = SCHED_NONE + 1; sc < SCHED_COUNT; sc++)
		if (!framework_offers(fw, "schedule", schedule_name((enum schedule)sc), p)) c->offer_sched &= ~(1u << sc);
	for (int m = RC_NONE; m <= RC_OP; m++)
		if (!framework_offers(fw, "recompute", recompute_name((enum recompute)m), p)) c->offer_rc &= ~(1u << m);
}

/* the score a plan must beat to be shown: the K-th best so far and the best so far of every
 * shape it has; -1 while any of them is unknown */
static double show_bar(const struct ctx *c, const struct search_cand *k)
{
	if (c->nk < c->k) return -1;
	double bar = c->kbest[0];
	for (int i = 0; i < SEARCH_NSHAPES; i++)
		if (search_shapes[i].has(k)) {
			if (c->shape_best[i] < 0) return -1;
			if (c->shape_best[i] < bar) bar = c->shape_best[i];
		}
	return bar;
}

/* a fitting plan raises the bars; equal scores count once (a twin merged later must not
 * take a second place among the K) */
static void raise_bar(struct ctx *c, const struct search_cand *k)
{
	for (int i = 0; i < SEARCH_NSHAPES; i++)
		if (search_shapes[i].has(k) && k->score > c->shape_best[i]) c->shape_best[i] = k->score;
	double *h = c->kbest;
	for (int i = 0; i < c->nk; i++) if (h[i] == k->score) return;
	if (c->nk == c->k && k->score <= h[0]) return;
	int i = c->nk < c->k ? c->nk++ : 0;
	h[i] = k->score;
	if (i) { /* sift up */
		for (; i > 0 && h[(i - 1) / 2] > h[i]; i = (i - 1) / 2) { double t = h[i]; h[i] = h[(i - 1) / 2]; h[(i - 1) / 2] = t; }
		return;
	}
	for (;;) { /* the root replaced: sift down */
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < c->nk && h[l] < h[m]) m = l;
		if (r < c->nk && h[r] < h[m]) m = r;
		if (m == i) break;
		double t = h[i]; h[i] = h[m]; h[m] = t;
		i = m;
	}
}

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

/* Prices one candidate: 1 fits, 0 priced and does not fit (its score is set), 2 does not fit
 * without being priced, -1 rejected (counted), -2 out of memory. */
static int price(struct ctx *c, struct search_cand *k)
{
	char err[ERR_LEN];
	struct search_result *r = c->res;
	struct estimate e;
	double bound = model_state_bound(c, k) + c->rq->h->workspace_bytes;
	/* pruned, unless it might be the closest plan yet (the peak is at least the bound) */
	if (!c->rq->exhaustive && bound > c->cap_bound &&
	    r->have_closest && bound / c->cap_bound >= c->best_excess) {
		r->rejected[REJ_MEMORY_STATES]++;
		return 2;
	}
	if (search_cand_plan(c->rq, k, &c->scratch, err) || estimate_plan(c->rq->m, c->rq->h, &c->scratch, &e, err)) {
		r->rejected[REJ_OTHER]++;
		return -1;
	}
	r->evaluated++;
	search_cand_priced(c->rq, k, &e);
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
	if (c->kbest) raise_bar(c, k);
	return 1;
}

/* Recompute options in increasing recompute work: none, selective, full on half of each
 * stage's layers (or on the pinned count), full. full does a superset of the work of every
 * other mode. Returns 0 when option i is not enumerated. */
#define NRC 4
static int rc_option(const struct search_fix *fx, int i, int stage_layers, int sel, int *mode, int *layers)
{
	*mode = i == 0 ? RC_NONE : i == 1 ? sel : RC_FULL;
	*layers = i == 2 ? (stage_layers + 1) / 2 : -1;
	if (fx->recompute_layers >= 0) {
		if (i != 2) return 0;
		*layers = fx->recompute_layers;
		return 1;
	}
	if (i == 2 && stage_layers < 2) return 0; /* the same as none or full */
	return !FIXED(fx->recompute, *mode);
}

/* The overlap switches that change candidate k's estimate (search.h): *free_mask those the
 * search chooses, *on the value of each pinned or chosen-on switch. TP overlap is a choice
 * only with SP (every framework that overlaps TP collectives needs the sequence-parallel
 * layout); the TP backward alone matters only when TP overlap is off. A switch pinned on stays
 * on wherever it applies. */
static void overlap_options(const struct search_req *rq, const struct search_cand *k, int *free_mask, int *on)
{
	const struct search_fix *fx = &rq->fix;
	int blocking_p2p = !!(sched_family((enum schedule)k->schedule)->flags & SCHED_F_BLOCKING_P2P);
	int applies = (k->dp * k->cp > 1 ? OV_GRAD : 0) | (k->zero >= 1 && k->dp * k->cp > 1 ? OV_PARAM : 0) |
		      (k->tp > 1 ? OV_TP | OV_TPBWD : 0) | (blocking_p2p ? OV_P2P : 0);
	*free_mask = *on = 0;
	for (int i = 0; i < OV_COUNT; i++) {
		int bit = 1 << i;
		if (!(applies & bit)) continue;
		/* moot under TP overlap; the exhaustive search prices it there too (the same plan) */
		if (bit == OV_TPBWD && (*on & OV_TP) && !(rq->exhaustive && (*free_mask & OV_TP))) continue;
		if (fx->overlap[i] >= 0) { if (fx->overlap[i]) *on |= bit; continue; }
		if (bit == OV_TP && !k->sp) continue;
		*free_mask |= bit;
		*on |= bit;
	}
}

/* Prices k under every overlap variant the search keeps: with pruning only the one with every
 * free switch on (the others are dominated: turning a switch on never adds time or memory);
 * exhaustive, all of them. Returns what price() returned for the first variant, -2 out of
 * memory. */
struct overlaps { int free_mask, on; long variants; };

static void overlaps_of(const struct search_req *rq, const struct search_cand *k, struct overlaps *o)
{
	overlap_options(rq, k, &o->free_mask, &o->on);
	o->variants = 1L << __builtin_popcount((unsigned)o->free_mask);
}

static int price_overlaps(struct ctx *c, struct search_cand *k, const struct overlaps *ov)
{
	struct search_result *r = c->res;
	int free_mask = ov->free_mask, on = ov->on;
	long variants = ov->variants;
	r->enumerated += variants;
	if (!c->rq->exhaustive) {
		k->overlap = on;
		r->rejected[REJ_OVERLAP_OFF] += variants - 1;
		return price(c, k);
	}
	int first = 0;
	for (int sub = free_mask;; sub = (sub - 1) & free_mask) {
		k->overlap = (on & ~free_mask) | sub;
		int f = price(c, k);
		if (f == -2) return -2;
		if (sub == free_mask) first = f;
		if (!sub) break;
	}
	return first;
}

/* Counts the enumerated plans of one (micro-batch, recompute) choice, every overlap variant,
 * under a rejection reason. */
static void reject_all(struct ctx *c, const struct overlaps *ov, int reason)
{
	c->res->enumerated += ov->variants;
	c->res->rejected[reason] += ov->variants;
}

/* An upper bound on candidate k's score (-1: none known) from the plans already priced that
 * differ from it in one knob toward less time (search.h, pruning 6): a lighter recompute option
 * (none is never slower than the rest; selective and half never slower than full), SP on
 * (the same collectives, element-wise work on 1/tp of the tokens), or ZeRO-1 in place of
 * ZeRO-2 (the same gradient reduction once per step instead of every micro-batch). */
static double score_cap(const struct ctx *c, const struct search_cand *k, int mi, int i)
{
	const double *ub = c->ubt[k->zero][k->sp][mi];
	double cap = -1;
	for (int l = 0; l < (i == 3 ? 3 : i > 0 ? 1 : 0); l++)
		if (ub[l] >= 0) cap = cap < 0 ? ub[l] : fmin(cap, ub[l]);
	double sib[2] = {k->sp == 0 && k->tp > 1 ? c->ubt[k->zero][1][mi][i] : -1,
			 k->zero == 2 ? c->ubt[1][k->sp][mi][i] : -1};
	for (int j = 0; j < 2; j++)
		if (sib[j] >= 0) cap = cap < 0 ? sib[j] : fmin(cap, sib[j]);
	return cap;
}

/* The innermost loops: micro-batch, then recompute, with the prunings. */
static int inner(struct ctx *c, struct search_cand *k, int rej, int stage_layers) /* rej -1: none */
{
	const struct search_req *rq = c->rq;
	struct overlaps ov; /* the overlap switches do not depend on the micro-batch or recompute */
	overlaps_of(rq, k, &ov);
	int mbs_dead = 0;
	for (int mbs = 1; mbs <= 8; mbs *= 2) {
		if (FIXED(rq->fix.mbs, mbs)) continue;
		k->mbs = mbs;
		int rej2 = rej;
		if (rej2 < 0 && rq->gbs % (k->dp * mbs)) rej2 = REJ_BATCH;
		if (rej2 < 0) {
			int mb = rq->gbs / (k->dp * mbs);
			const struct sched_family *f = sched_family((enum schedule)k->schedule);
			if (f->mb_rule && f->mb_rule(f, k->pp, mb, NULL)) rej2 = REJ_SCHEDULE;
		}
		if (rej2 < 0 && c->dominated >= 0) rej2 = c->dominated;
		int any_fit = 0, fit_at = -1, skipped = 0, mi = mbs == 1 ? 0 : mbs == 2 ? 1 : mbs == 4 ? 2 : 3;
		double *ub = c->ubt[k->zero][k->sp][mi];
		for (int i = 0; i < NRC; i++) {
			int mode, layers;
			if (!rc_option(&rq->fix, i, stage_layers, c->rc_sel, &mode, &layers) || !(c->offer_rc >> mode & 1)) continue;
			k->recompute = mode;
			k->recompute_layers = layers;
			if (rej2 >= 0) { reject_all(c, &ov, rej2); continue; }
			if (mbs_dead && !rq->exhaustive) { reject_all(c, &ov, REJ_MEMORY_MBS); continue; }
			/* dominated: none fits -> everything else; selective or half fits -> full */
			if (!rq->exhaustive && fit_at >= 0 && (fit_at == 0 || i == 3)) {
				reject_all(c, &ov, REJ_DOMINATED);
				ub[i] = ub[fit_at];
				continue;
			}
			double cap = score_cap(c, k, mi, i);
			if (!rq->exhaustive && cap >= 0 && cap < show_bar(c, k)) {
				reject_all(c, &ov, REJ_BOUND);
				skipped = 1;
				ub[i] = cap;
				continue;
			}
			int f = price_overlaps(c, k, &ov);
			if (f == -2) return -1;
			if (f == 1) { any_fit = 1; if (fit_at < 0) fit_at = i; }
			if (f == 0 || f == 1) ub[i] = k->score;
		}
		/* a larger micro-batch never needs less memory: dead once no mode fits here (a mode
		 * skipped by the bound might have fitted) */
		if (rej2 < 0 && !any_fit && !skipped) mbs_dead = 1;
	}
	return 0;
}

/* Schedules for pp > 1, as (schedule, v) pairs; returns the count. */
static int schedules(const struct model *m, int pp, int *sched, int *vpp)
{
	int n = 0;
	if (pp == 1) { sched[0] = SCHED_NONE; vpp[0] = 1; return 1; }
	for (int t = SCHED_NONE + 1; t < SCHED_COUNT; t++)
		if (!(sched_family((enum schedule)t)->flags & SCHED_F_VIRTUAL)) { sched[n] = t; vpp[n++] = 1; }
	/* chunked schedules with every v <= 8 that splits the layers evenly; where none does (61
	 * layers, or 126 over pp 4) with every v, on an uneven split (balanced later for the
	 * finalists) */
	for (int t = SCHED_NONE + 1; t < SCHED_COUNT; t++) {
		if (!(sched_family((enum schedule)t)->flags & SCHED_F_VIRTUAL)) continue;
		int even = 0;
		for (int v = 2; v <= 8; v++)
			if ((long)pp * v <= m->layers && m->layers % (pp * v) == 0) { sched[n] = t; vpp[n++] = v; even++; }
		for (int v = 2; v <= 8 && !even; v++)
			if ((long)pp * v <= m->layers) { sched[n] = t; vpp[n++] = v; }
	}
	return n;
}

/* a parallel degree the framework runs at all (its profile's unconditional "offers" for tp, cp
 * or ep: llm-foundry has no context parallelism) */
static int offered_degree(const struct search_req *rq, const char *key, int v)
{
	char s[16];
	if (!rq->has_fw) return 1;
	snprintf(s, sizeof(s), "%d", v);
	return framework_offers(&rq->fw, key, s, NULL);
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
	if (c->offers_cond) { /* conditions on the degrees (DeepSpeed's stages with a pipeline) */
		struct plan *q = &c->scratch;
		*q = rq->base;
		q->gpus = k->gpus; q->dp = k->dp; q->tp = k->tp; q->pp = k->pp; q->cp = k->cp; q->ep = k->ep;
		offer_masks(c, q);
	}
	int sched[16], vpp[16], ord[SEARCH_ORDERS], rep[SEARCH_ORDERS], mask[SEARCH_ORDERS];
	int ns = schedules(rq->m, k->pp, sched, vpp);
	int no = 0, all_ord[SEARCH_ORDERS], nall_ord = orders_for(k, all_ord);
	for (int oi = 0; oi < nall_ord; oi++)
		if (!FIXED(rq->fix.order, all_ord[oi])) ord[no++] = all_ord[oi];
	/* twins only among plans no degree rule rejects (their signatures cost layout walks) */
	for (int i = 0; i < no; i++) { rep[i] = i; mask[i] = 1 << ord[i]; }
	if (rej < 0 && !rq->exhaustive) search_order_twins(rq, c->gpn, k, ord, no, rep, mask);
	for (int si = 0; si < ns; si++) {
		if (FIXED(rq->fix.schedule, sched[si]) || FIXED(rq->fix.vpp, vpp[si]) || !(c->offer_sched >> sched[si] & 1)) continue;
		k->schedule = sched[si];
		k->vpp = vpp[si];
		const struct sched_family *f = sched_family((enum schedule)sched[si]);
		c->dominated = (f->flags & SCHED_F_DOMINATED) && !rq->exhaustive && rq->fix.schedule != sched[si] ? REJ_AFAB : -1;
		int nst = sched_nstages(f, k->pp, vpp[si]);
		int rej1 = rej;
		if (rej1 < 0 && nst > rq->m->layers) rej1 = REJ_LAYERS;
		if (rej1 < 0 && f->pp_rule && f->pp_rule(f, k->pp, NULL)) rej1 = REJ_SCHEDULE;
		int stage_layers = rq->m->layers / (nst > 0 ? nst : 1);
		long plans[SEARCH_ORDERS]; /* enumerated under each order */
		for (int oi = 0; oi < no; oi++) {
			if (rep[oi] != oi) { /* a twin: the plans of its representative, counted again */
				plans[oi] = plans[rep[oi]];
				c->res->enumerated += plans[oi];
				c->res->rejected[REJ_TWIN] += plans[oi];
				continue;
			}
			long before = c->res->enumerated;
			k->order = ord[oi];
			k->orders = mask[oi];
			for (double *u = &c->ubt[0][0][0][0]; u < &c->ubt[0][0][0][0] + sizeof(c->ubt) / sizeof(double); u++) *u = -1;
			for (int zero = 0; zero <= 3; zero++) {
				if (FIXED(rq->fix.zero, zero) || !(c->offer_zero >> zero & 1)) continue;
				k->zero = zero;
				for (int sp = k->tp > 1; sp >= 0; sp--) { /* SP on first: it bounds SP off */
					if (FIXED(rq->fix.sp, sp)) continue;
					k->sp = sp;
					int rej2 = rej1;
					if (rej2 < 0 && sp && (rq->seq / k->cp) % k->tp) rej2 = REJ_SP_SEQ;
					if (inner(c, k, rej2, stage_layers)) return -1;
				}
			}
			plans[oi] = c->res->enumerated - before;
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
		if (FIXED(rq->fix.tp, tp) || !offered_degree(rq, "tp", tp)) continue;
		for (int b = 0; b < ndiv; b++) {
			int cp = divs[b];
			if (FIXED(rq->fix.cp, cp) || (gpus / tp) % cp || !offered_degree(rq, "cp", cp)) continue;
			for (int d = 0; d < ndiv; d++) {
				int pp = divs[d];
				if (rq->progress && c->res->enumerated >= c->next_progress) {
					double at = ((double)a * ndiv + b + (double)d / ndiv) / ((double)ndiv * ndiv);
					rq->progress(rq->progress_ctx, c->res->enumerated, f0 + (f1 - f0) * at);
					c->next_progress = c->res->enumerated + 20000;
				}
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
					if ((tp * dpcp) % ep || FIXED(rq->fix.ep, ep) || !offered_degree(rq, "ep", ep)) continue;
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

/* The search's state before the first world: pins, bounds, the model's parameter split. */
static int ctx_init(struct ctx *c, const struct search_req *rq, struct search_result *res, char *err)
{
	memset(c, 0, sizeof(*c));
	c->rq = rq;
	c->res = res;
	c->dominated = -1;
	c->k = rq->top > 0 ? rq->top : 10;
	for (int i = 0; i < SEARCH_NSHAPES; i++) c->shape_best[i] = -1;
	c->offer_zero = c->offer_sched = c->offer_rc = ~0u;
	c->rc_sel = RC_SELECTIVE;
	if (rq->has_fw) {
		offer_masks(c, NULL);
		if (framework_selective_is_op(&rq->fw, NULL)) c->rc_sel = RC_OP;
		c->offers_cond = framework_offers_conditional(&rq->fw);
	}
	if (!rq->exhaustive && !(c->kbest = malloc(sizeof(double) * (size_t)c->k))) return errf(err, "search: out of memory");
	c->gpn = rq->base.gpus_per_node > 0 ? rq->base.gpus_per_node : rq->h->gpus_per_node;
	/* every plan's peak holds the GEMM workspaces (added to the bound in price), and its pool
	 * loses at least the CUDA context (the communicators' buffers depend on the plan) */
	c->cap_bound = rq->h->hbm_bytes - rq->h->context_bytes;
	c->params_dense = embedding_params(rq->m) + head_params(rq->m);
	for (int l = 0; l < rq->m->layers; l++) {
		struct layer_params lp;
		layer_params(rq->m, l, &lp);
		c->params_dense += lp.total - lp.experts;
		c->params_expert += lp.experts;
	}
	return 0;
}

/* Nothing fits with the default splits: the closest plan may fit with a split that moves
 * layers off its fullest stage (and recomputes what the caps need). */
static int rescue_closest(struct ctx *c)
{
	struct search_result *res = c->res;
	struct search_cand cl = res->closest;
	cl.stage_layers = NULL;
	cl.nstage_layers = 0;
	search_partition_finalist(c->rq, &cl, MILP_EACH_S);
	if (!cl.fits || !cl.partitioned) return 0;
	cl.src = -1;
	if (add_feasible(c, &cl)) { free(cl.stage_layers); return -1; }
	res->rejected[REJ_MEMORY]--;
	res->feasible++;
	res->rescued = 1;
	return 0;
}

/* The top K of all[] (ranked, twins merged) become the finalists, each with its best split
 * (GLPK time: at most MILP_TOTAL_S over all of them). */
static int take_finalists(const struct search_req *rq, struct search_result *res)
{
	search_rank_and_merge(res);
	int k = rq->top > 0 ? rq->top : 10;
	if (k > res->nall) k = res->nall;
	if (!(res->top = malloc(sizeof(*res->top) * (size_t)k))) return -1;
	memcpy(res->top, res->all, sizeof(*res->top) * (size_t)k);
	res->ntop = k;
	for (int i = 0; i < res->nall; i++) { res->all[i].stage_layers = NULL; res->all[i].nstage_layers = 0; }
	double milp_t0 = now_s();
	for (int i = 0; i < k; i++) {
		if (!res->rescued) res->top[i].src = i;
		double left = MILP_TOTAL_S - (now_s() - milp_t0);
		search_partition_finalist(rq, &res->top[i], left < MILP_EACH_S ? left : MILP_EACH_S);
	}
	qsort(res->top, (size_t)res->ntop, sizeof(*res->top), search_cmp_full);
	return 0;
}

int search_run(const struct search_req *rq, struct search_result *res, char *err)
{
	memset(res, 0, sizeof(*res));
	if (rq->gpus < 1 || rq->seq < 1 || rq->gbs < 1)
		return errf(err, "search: gpus (%d), seq (%d) and gbs (%d) must be positive", rq->gpus, rq->seq, rq->gbs);
	struct ctx c;
	if (ctx_init(&c, rq, res, err)) return -1;
	double t0 = now_s();
	/* world sizes: exactly gpus for throughput; gpus, gpus/2, ... down to one node otherwise */
	int worlds[32], nw = 0;
	for (int g = rq->gpus; g >= 1 && nw < 32; g /= 2) {
		worlds[nw++] = g;
		if (rq->objective == OBJ_THROUGHPUT || g % 2 || g <= c.gpn) break;
	}
	int fail = 0;
	for (int i = 0; i < nw && !fail; i++) fail = enumerate_world(&c, worlds[i], (double)i / nw, (double)(i + 1) / nw);
	free(c.kbest);
	if (!fail && rq->progress) rq->progress(rq->progress_ctx, res->enumerated, 1.0);
	if (!fail && !res->nall && res->have_closest && res->closest.pp > 1) fail = rescue_closest(&c);
	if (!fail && res->nall) fail = take_finalists(rq, res);
	if (fail) {
		search_result_free(res);
		return errf(err, "search: out of memory");
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
