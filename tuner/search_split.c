/* search_split — partitioning the search's finalists (tuner/partition.h): the per-layer and
 * per-stage costs read off the estimator by probing, the balanced split, and the memory-aware
 * MILP split when the balanced one does not fit or balance; search_split is the public entry.
 * Enumeration and ranking: search.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tuner/partition.h"
#include "tuner/search.h"
#include "tuner/search_impl.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/flops.h"
#include "sim/util.h"

#define MILP_MAX_CELLS 96 /* layers x stages up to which the MILP runs (GLPK takes seconds on
			   * 61 layers x 4 stages without proving optimality) */

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
	const struct sched_family *f = sched_family((enum schedule)sched);
	return sched != SCHED_NONE && f->ndirs == 1 && sched_chunks(f, 1) == 1 && !(f->flags & SCHED_F_VIRTUAL);
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
	if (!one_stage_per_rank(q.schedule)) q.schedule = SCHED_1F1B; /* the same layers, one stage a rank */
	q.recompute = rc;
	q.recompute_layers = -1;
	memset(pc, 0, sizeof(*pc));
	int moe = model_is_moe(m), D = moe ? m->moe_dense_layers : m->layers, L = m->layers;
	double frag = estimate_fit_factor(h, p); /* what must fit a stage */
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
	pc->b_first = rank_est_kept_bytes(k0) - pc->w[t0] + frag * rank_est_churn_bytes(k0) + h->workspace_bytes;
	double tl = 0, wl = 0;
	for (int l = L - q.stage_layers[q.pp - 1]; l < L; l++) {
		tl += pc->t[model_layer_is_moe(m, l)];
		wl += pc->w[model_layer_is_moe(m, l)];
	}
	pc->t_last = kind_t(kl) - tl;
	pc->b_last = rank_est_kept_bytes(kl) - wl + frag * rank_est_churn_bytes(kl) + h->workspace_bytes;
	pc->b_mid = h->workspace_bytes;
	if (e1.nkinds > 2) pc->b_mid += e1.kind[1].recv_bytes + frag * rank_est_churn_bytes(&e1.kind[1]); /* its states go with its layers */
	pc->k_first = k0->act_inflight;
	pc->k_last = kl->act_inflight;
	return 0;
}

/* Per-micro-batch load of every pipeline rank for a split: a rank sums the stages it holds (the
 * schedule's stage map; with two directions, as DualPipe's, a stage sits on one rank per
 * direction and each micro-batch visits one of them); returns the slowest rank's load. pre:
 * prefix sums of the per-layer times. */
static double rank_loads(const struct plan *p, const double *pre, const double *stage, const int *counts, int n,
			 double *load)
{
	const struct sched_family *f = sched_family(p->schedule);
	double worst = 0;
	for (int r = 0; r < p->pp; r++) load[r] = 0;
	for (int s = 0, l = 0; s < n; l += counts[s], s++) {
		double t = stage[s] + pre[l + counts[s]] - pre[l];
		for (int d = 0; d < f->ndirs; d++) {
			int rank, chunk;
			f->locate(p->pp, d, s, &rank, &chunk);
			load[rank] += f->ndirs > 1 ? t / f->ndirs : t;
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

/* Every split of L layers into n non-empty stages, for problems with few of them: the exact
 * optimum of the ranks' loads (the slowest rank, then the sum of squared loads), which the
 * single-layer moves above can miss when a rank's stages are not adjacent (V-shaped
 * schedules: a rank holds a prefix and a suffix, and what balances them is where the middle
 * stages sit, not how long they are). */
#define EXHAUSTIVE_MAX 200000.0

static double compositions(int L, int n)
{
	double c = 1;
	for (int i = 1; i < n; i++) c = c * (L - n + i) / i; /* binomial(L-1, n-1) */
	return c;
}

struct exh {
	const struct plan *p;
	const double *pre, *stage;
	int n;
	int *cur, *best;
	double *load, best_w, best_sq;
};

static void exh_walk(struct exh *x, int s, int left)
{
	if (s == x->n - 1) {
		x->cur[s] = left;
		double w = rank_loads(x->p, x->pre, x->stage, x->cur, x->n, x->load), sq = 0;
		for (int r = 0; r < x->p->pp; r++) sq += x->load[r] * x->load[r];
		if (w < x->best_w * (1 - 1e-12) || (w <= x->best_w * (1 + 1e-12) && sq < x->best_sq * (1 - 1e-12))) {
			x->best_w = w;
			x->best_sq = sq;
			memcpy(x->best, x->cur, sizeof(int) * (size_t)x->n);
		}
		return;
	}
	for (int c = 1; c <= left - (x->n - 1 - s); c++) {
		x->cur[s] = c;
		exh_walk(x, s + 1, left - c);
	}
}

/* Replaces counts by the exhaustive optimum when it beats them; returns the slowest rank's load. */
static double rank_exhaustive(const struct plan *p, const double *pre, const double *stage, int *counts, int n,
			      int L, double *load)
{
	double w0 = rank_loads(p, pre, stage, counts, n, load), sq0 = 0;
	for (int r = 0; r < p->pp; r++) sq0 += load[r] * load[r];
	int *buf = malloc(sizeof(int) * (size_t)(2 * n));
	if (!buf) return w0;
	struct exh x = {p, pre, stage, n, buf, buf + n, load, w0, sq0};
	memcpy(x.best, counts, sizeof(int) * (size_t)n);
	exh_walk(&x, 0, L);
	memcpy(counts, x.best, sizeof(int) * (size_t)n);
	free(buf);
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
	if (search_cand_plan(rq, &c, &p, err)) return -1;
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
	if (!rc && plan_chunks(&p) > 1) {
		*max_stage_s = rank_balance(&p, pre, stage, counts, n, load);
		if (compositions(L, n) <= EXHAUSTIVE_MAX) *max_stage_s = rank_exhaustive(&p, pre, stage, counts, n, L, load);
	}
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
	if (search_cand_plan(rq, &c, &p, err) || estimate_plan(rq->m, rq->h, &p, &e, err) || !e.fits ||
	    (best->fits && e.step_time_s >= best->analytic_step_s * (1 - 1e-12))) {
		free(split);
		return;
	}
	search_cand_priced(rq, &c, &e); /* e fits here */
	c.partitioned = how;
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
	if (search_cand_plan(rq, &c, &p, err) || probe_costs(rq, &p, RC_NONE, &pn) || probe_costs(rq, &p, RC_FULL, &pf)) return;
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
void search_partition_finalist(const struct search_req *rq, struct search_cand *k, double milp_s)
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

