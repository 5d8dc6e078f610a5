/* event — builds the engine's cost tables from an estimate, runs the engine three times (full;
 * without DP/ZeRO communication; without that and p2p) and reads the exposed PP and DP time off
 * the differences: what each kind of communication adds to the step is exactly what the step
 * would lose without it. The estimate's per-rank op times cover every chunk a rank holds, so
 * they are split evenly over the rank's stages (DualPipe excepted: its estimate already gives
 * one stage's share, since each micro-batch visits one of the rank's two stages). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim/event.h"
#include "sim/hw.h"
#include "sim/util.h"

static const char *const dim_names[EV_DIM_COUNT] = {"tp", "cp", "ep", "pp", "dp"};
static const char *const part_names[EVP_COUNT] = {"compute", "recompute", "exposed tp", "exposed cp",
						  "exposed ep", "exposed pp", "exposed dp", "bubble",
						  "optimizer", "overhead"};

const char *ev_dim_name(int d) { return d >= 0 && d < EV_DIM_COUNT ? dim_names[d] : "?"; }
const char *ev_part_name(int p) { return p >= 0 && p < EVP_COUNT ? part_names[p] : "?"; }

void op_times_free(struct op_times *t)
{
	if (!t) return;
	for (int k = 0; k < OPT_KINDS; k++) {
		free(t->mean_s[k]);
		free(t->n[k]);
		t->mean_s[k] = NULL;
		t->n[k] = NULL;
	}
	free(t->layers);
	t->layers = NULL;
	free(t->plan_json);
	t->plan_json = NULL;
	t->nstages = 0;
}

int event_kind_of_rank(const struct estimate *e, int rank, int pp)
{
	for (int j = 0; j < e->nkinds; j++)
		if (e->kind[j].stage == rank) return j;
	if (e->nkinds == 1 || rank == 0) return 0;
	if (rank == pp - 1) return e->nkinds - 1;
	return e->nkinds > 2 ? 1 : 0;
}

/* Per-stage cost tables, one allocation. */
enum { T_F, T_B, T_W, T_P2P, T_MB, T_MW, T_DP, T_AG, T_OPT, T_OPTG, T_COUNT };
struct tables {
	double *t[T_COUNT];
	int *layers;            /* per stage, for the layer-wise ZeRO-3 gather */
	int dp_buckets, dp_every_mb, has_dp, has_ag, has_optg;
	int overlap_red, overlap_ag;  /* the plan's overlap_grad_reduce, overlap_param_gather */
	int p2p_blocking;             /* sends the estimate prices as blocking (plan overlap_p2p off) */
};

/* Share of activation bytes still held after B until W, from the estimate itself: ZB-H1 keeps
 * (p−r)·M_B + r·M_W at rank r [ZB §2.3], so a ZB-H1 estimate of the same plan at rank 1 gives
 * M_W/M_B. 0 when the plan has no pipeline to ask about. */
static double w_share(const struct hw *h, const struct plan *p, const struct model *m)
{
	if (p->pp < 2 || !m) return 0;
	struct plan q = *p;
	struct estimate e;
	char err[ERR_LEN];
	q.schedule = SCHED_ZBH1;
	q.vpp = 1;
	q.nstage_layers = 0;
	if (plan_resolve(&q, m, h, err) || estimate_plan(m, h, &q, &e, err)) return 0;
	int mb = e.m;
	for (int j = 0; j < e.nkinds; j++) {
		const struct rank_est *k = &e.kind[j];
		int r = k->stage;
		if (r < 1 || mb < 1) continue;
		double b = fmin(p->pp - r, mb), w = fmin(r, mb);
		double ratio = (k->act_inflight - b) / w;
		if (ratio >= 0 && ratio <= 1) return ratio;
	}
	return 0;
}

/* DP/ZeRO times of one stage from its rank's per-step total. The estimate sums the gradient
 * reduction and the parameter all-gather; both are ring collectives over the same group, so
 * their times stand in the ratio of their byte counts, gradient bytes / parameter bytes
 * [NCCLT]. ZeRO-2 reduces every micro-batch, ZeRO-3 gathers before every F and B and
 * reduces every micro-batch [ZERO §5; PB ZeRO-3] — the split follows those counts. */
static void dp_split(const struct plan *p, int mb, double total, double *red, double *ag)
{
	double gb = p->fp32_grads || p->precision == PREC_FP32 ? 4 : 2, pb = p->precision == PREC_FP32 ? 4 : 2;
	double rho = gb / pb;
	switch (p->zero) {
	case 0: *red = total; *ag = 0; break;
	case 1: *ag = total / (rho + 1); *red = total - *ag; break;
	case 2: *ag = total / (mb * rho + 1); *red = rho * *ag; break;
	default: *ag = total / (mb * (2 + rho)); *red = rho * *ag; break;
	}
}

static int build_tables(const struct hw *h, const struct plan *p, const struct model *m, const struct estimate *e,
			const struct sched *s, struct tables *tb, char *err)
{
	int n = s->nstages;
	double *buf = calloc((size_t)n * T_COUNT, sizeof(double));
	tb->layers = calloc((size_t)n, sizeof(int));
	if (!buf || !tb->layers) { free(buf); return errf(err, "event: out of memory"); }
	for (int k = 0; k < T_COUNT; k++) tb->t[k] = buf + (size_t)k * n;
	int mdiv = s->chunks, tdiv = s->ndirs > 1 ? 1 : s->chunks;
	double wr = w_share(h, p, m);
	int dpcp = p->dp * p->cp;
	double bucket_params = fmax(40e6, 1e6 * dpcp); /* Megatron's bucket [TV-G4] */
	tb->dp_buckets = 1;
	tb->dp_every_mb = p->zero >= 2;
	tb->overlap_red = p->overlap_grad_reduce;
	tb->overlap_ag = p->overlap_param_gather;
	/* as the estimate prices them: AFAB, 1F1B and interleaved sends wait for completion
	 * unless overlap_p2p; the zero-bubble and DualPipe schedules' run on their own stream */
	tb->p2p_blocking = !p->overlap_p2p && (sched_family(p->schedule)->flags & SCHED_F_BLOCKING_P2P);
	for (int st = 0; st < n; st++) {
		int rank, chunk, rank2, chunk2;
		sched_locate(s, 0, st, &rank, &chunk);
		const struct rank_est *k = &e->kind[event_kind_of_rank(e, rank, p->pp)];
		/* An explicit split gives stages of one rank kind different layer counts: their op
		 * times and activations scale with the layers they hold (embedding and head stay
		 * with the first and last kinds, which are their own kinds). */
		double per_chunk = (double)k->layers / mdiv, scale = 1;
		if (st < p->nstage_layers && per_chunk > 0) scale = p->stage_layers[st] / per_chunk;
		tb->t[T_F][st] = k->t_f / tdiv * scale;
		tb->t[T_B][st] = k->t_b / tdiv * scale;
		tb->t[T_W][st] = k->t_w / tdiv * scale;
		if (st + 1 < n) {
			sched_locate(s, 0, st + 1, &rank2, &chunk2);
			tb->t[T_P2P][st] = rank2 == rank ? 0 : k->t_p2p;
		}
		tb->layers[st] = st < p->nstage_layers ? p->stage_layers[st] : k->layers / mdiv;
		tb->t[T_MB][st] = k->act_per_mb_bytes / mdiv * scale;
		tb->t[T_MW][st] = tb->t[T_MB][st] * wr;
		double red, ag;
		dp_split(p, e->m, k->dp_comm_s / mdiv, &red, &ag);
		tb->t[T_DP][st] = red;
		if (p->zero >= 3) tb->t[T_AG][st] = ag;
		else if (!p->overlap_param_gather) tb->t[T_OPTG][st] = ag; /* else hidden behind the next forward */
		tb->t[T_OPT][st] = k->optimizer_s / mdiv;
		tb->has_dp |= red > 0;
		tb->has_ag |= tb->t[T_AG][st] > 0;
		tb->has_optg |= tb->t[T_OPTG][st] > 0;
		if (p->overlap_grad_reduce) {
			int nb = (int)ceil(k->params / mdiv / bucket_params);
			if (nb > tb->dp_buckets) tb->dp_buckets = nb > 64 ? 64 : nb;
		}
	}
	return 0;
}

/* Measured means replace the model's op times of the stages they cover. A fused BW measured
 * alone keeps the model's B:W proportion (ZB schedules need both halves). */
static int apply_measured(const struct op_times *mt, struct tables *tb, struct event_sim *out, char *err)
{
	if (mt->nstages > out->nstages)
		return errf(err, "op times: the trace has stage %d but the plan has %d stages (0..%d)",
			    mt->nstages - 1, out->nstages, out->nstages - 1);
	for (int st = 0; st < mt->nstages; st++) {
		unsigned char bits = 0;
		double *f = &tb->t[T_F][st], *b = &tb->t[T_B][st], *w = &tb->t[T_W][st];
		if (mt->n[OPT_F][st]) { *f = mt->mean_s[OPT_F][st]; bits |= 1u << OPT_F; }
		int hb = mt->n[OPT_B][st] > 0, hw = mt->n[OPT_W][st] > 0;
		if (hb) { *b = mt->mean_s[OPT_B][st]; bits |= 1u << OPT_B; }
		if (hw) { *w = mt->mean_s[OPT_W][st]; bits |= 1u << OPT_W; }
		if (mt->n[OPT_BW][st] && !(hb && hw)) {
			double bw = mt->mean_s[OPT_BW][st];
			if (hb) *w = fmax(0, bw - *b);
			else if (hw) *b = fmax(0, bw - *w);
			else if (*b + *w > 0) { double r = *b / (*b + *w); *b = bw * r; *w = bw - *b; }
			else *b = bw;
			bits |= 1u << OPT_BW;
		}
		if (mt->n[OPT_OPT][st]) { tb->t[T_OPT][st] = mt->mean_s[OPT_OPT][st]; bits |= 1u << OPT_OPT; }
		out->measured[st] = bits;
		out->stages_measured += bits != 0;
	}
	return 0;
}

static void fill_costs(const struct tables *tb, int dp, int p2p, struct engine_costs *c)
{
	memset(c, 0, sizeof(*c));
	c->t_f = tb->t[T_F];
	c->t_b = tb->t[T_B];
	c->t_w = tb->t[T_W];
	c->p2p = p2p ? tb->t[T_P2P] : NULL;
	c->p2p_blocking = tb->p2p_blocking;
	c->m_b_bytes = tb->t[T_MB];
	c->m_w_bytes = tb->t[T_MW];
	c->opt = tb->t[T_OPT];
	if (!dp) return;
	c->dp_reduce = tb->has_dp ? tb->t[T_DP] : NULL;
	c->dp_buckets = tb->dp_buckets;
	c->dp_every_mb = tb->dp_every_mb;
	c->param_gather = tb->has_ag ? tb->t[T_AG] : NULL;
	c->dp_blocking = !tb->overlap_red;
	c->gather_every_op = 1;
	/* with overlap_param_gather, ZeRO-3 prefetches the next gather and streams it layer by
	 * layer under the compute [PB ZeRO-3]; without, each op waits for its whole gather */
	c->gather_prefetch = tb->overlap_ag;
	c->gather_layers = tb->overlap_ag ? tb->layers : NULL;
	c->opt_gather = tb->has_optg ? tb->t[T_OPTG] : NULL;
}

/* Step parts on the rank with the largest span: its busy time split as its kind's estimate
 * splits compute, recompute and in-op TP/CP/EP communication; the rest of the step is exposed
 * PP and DP time, optimizer, fixed overhead and, what remains, bubble. */
static void step_parts(const struct estimate *e, struct event_sim *o, double opt_s, double overhead_s)
{
	int worst = 0;
	for (int r = 1; r < o->r.nranks; r++)
		if (o->r.rank[r].span > o->r.rank[worst].span) worst = r;
	const struct rank_est *k = &e->kind[o->rank[worst].kind];
	double busy = o->r.rank[worst].busy;
	double model_busy = k->compute_s + k->tp_comm_s + k->cp_comm_s + k->ep_comm_s;
	double share = model_busy > 0 ? busy / model_busy : 0;
	memset(o->part_s, 0, sizeof(o->part_s));
	o->part_s[EVP_COMPUTE] = share * (k->compute_s - k->recompute_s);
	o->part_s[EVP_RECOMPUTE] = share * k->recompute_s;
	o->part_s[EVP_TP] = share * k->tp_comm_s;
	o->part_s[EVP_CP] = share * k->cp_comm_s;
	o->part_s[EVP_EP] = share * k->ep_comm_s;
	if (!(model_busy > 0)) o->part_s[EVP_COMPUTE] = busy;
	o->part_s[EVP_PP] = o->exposed_s[EV_PP];
	o->part_s[EVP_DP] = o->exposed_s[EV_DP];
	o->part_s[EVP_OPT] = opt_s;
	o->part_s[EVP_OVERHEAD] = overhead_s;
	double rest = o->step_s;
	for (int i = 0; i < EVP_COUNT; i++) rest -= o->part_s[i];
	o->part_s[EVP_BUBBLE] = fmax(0, rest);
	if (rest < 0) o->part_s[EVP_OPT] = fmax(0, opt_s + rest); /* keep the sum exact */
}

/* Static memory re-assembled from the estimate's parts so that fragmentation scales only
 * what is dynamic: the estimate's peak is weights + grads + optimizer + frag·(activations +
 * logits + buffers) + workspaces, of which the engine supplies the activations. */
static void per_rank(const struct hw *h, const struct estimate *e, const struct plan *p, struct event_sim *o)
{
	o->peak_mem_bytes = 0;
	o->act_scale = estimate_frag_factor(h, p);
	for (int r = 0; r < o->r.nranks; r++) {
		struct event_rank *x = &o->rank[r];
		const struct engine_rank *er = &o->r.rank[r];
		x->kind = event_kind_of_rank(e, r, p->pp);
		const struct rank_est *k = &e->kind[x->kind];
		x->static_bytes = rank_est_kept_bytes(k) + o->act_scale * rank_est_churn_bytes(k) + h->workspace_bytes;
		x->peak_act_bytes = er->peak_act_bytes;
		double live = k->live_bytes - k->act_bytes + x->peak_act_bytes; /* the engine's activations */
		x->peak_bytes = estimate_pool_peak(p, live, x->static_bytes + o->act_scale * x->peak_act_bytes,
						   e->capacity_bytes);
		x->bubble_fraction = er->bubble_fraction;
		x->bubble_rate = er->bubble_rate;
		x->span_s = er->span;
		x->busy_s = er->busy;
		if (x->peak_bytes > o->peak_mem_bytes) o->peak_mem_bytes = x->peak_bytes;
	}
	o->capacity_bytes = e->capacity_bytes;
	o->fits = o->peak_mem_bytes <= o->capacity_bytes;
}

static int alloc_out(struct event_sim *o, int pp, int n, char *err)
{
	o->rank = calloc((size_t)pp, sizeof(*o->rank));
	o->t_f = calloc((size_t)n * 3, sizeof(double));
	o->measured = calloc((size_t)n, 1);
	if (!o->rank || !o->t_f || !o->measured) return errf(err, "event: out of memory");
	o->t_b = o->t_f + n;
	o->t_w = o->t_f + 2 * (size_t)n;
	return 0;
}

/* Largest optimizer time over ranks, as the engine sums it per rank. */
static double opt_time(const struct sched *s, const double *opt)
{
	double best = 0;
	for (int r = 0; r < s->pp; r++) {
		double d = 0;
		for (int c = 0; c < s->chunks; c++)
			for (int dir = 0; dir < s->ndirs; dir++)
				if (s->ndirs == 1 || dir == c) d += opt[sched_stage(s, r, c, dir)];
		if (d > best) best = d;
	}
	return best;
}

static int simulate(const struct model *m, const struct hw *h, const struct plan *p, const struct estimate *e, const struct op_times *mt,
		    struct event_sim *out, struct tables *tb, char *err)
{
	struct sched *s = out->sched;
	if (build_tables(h, p, m, e, s, tb, err)) return -1;
	if (mt && apply_measured(mt, tb, out, err)) return -1;
	for (int st = 0; st < out->nstages; st++) {
		out->t_f[st] = tb->t[T_F][st];
		out->t_b[st] = tb->t[T_B][st];
		out->t_w[st] = tb->t[T_W][st];
	}
	struct engine_costs c;
	struct engine_result r0, r1;
	fill_costs(tb, 0, 0, &c);
	c.no_timeline = 1; /* the two reference runs only give step times */
	if (engine_run(s, &c, &r0, err)) return -1;
	fill_costs(tb, 0, 1, &c);
	c.no_timeline = 1;
	if (engine_run(s, &c, &r1, err)) { engine_result_free(&r0); return -1; }
	fill_costs(tb, 1, 1, &c);
	int rc = engine_run(s, &c, &out->r, err);
	if (!rc) {
		double overhead = e->kind[0].overhead_s;
		out->exposed_s[EV_PP] = fmax(0, r1.step - r0.step);
		out->exposed_s[EV_DP] = fmax(0, out->r.step - r1.step);
		for (int j = 0; j < e->nkinds; j++) {
			out->exposed_s[EV_TP] = fmax(out->exposed_s[EV_TP], e->kind[j].tp_comm_s);
			out->exposed_s[EV_CP] = fmax(out->exposed_s[EV_CP], e->kind[j].cp_comm_s);
			out->exposed_s[EV_EP] = fmax(out->exposed_s[EV_EP], e->kind[j].ep_comm_s);
		}
		out->step_s = out->r.step + overhead;
		out->pipeline_span_s = out->r.cost;
		out->bubble_fraction = out->r.bubble_fraction;
		out->bubble_rate = out->r.bubble_rate;
		out->tokens_per_s = e->tokens_per_step / out->step_s;
		out->tokens_per_s_per_gpu = out->tokens_per_s / p->gpus;
		out->mfu = e->model_flops_per_step / (out->step_s * p->gpus * h->peak_bf16_flops);
		per_rank(h, e, p, out);
		step_parts(e, out, opt_time(s, tb->t[T_OPT]), overhead);
	}
	engine_result_free(&r0);
	engine_result_free(&r1);
	return rc;
}

/* one pipeline rank runs its micro-batches F, B+W in turn: 1F1B on one rank */
static enum schedule event_schedule(const struct plan *p, int *vpp)
{
	enum schedule type = p->pp > 1 ? p->schedule : SCHED_1F1B;
	*vpp = sched_family(type)->flags & SCHED_F_VIRTUAL ? p->vpp : 1;
	return type;
}

int event_check(const struct plan *p, char *err)
{
	int vpp, m = plan_microbatches(p);
	enum schedule type = event_schedule(p, &vpp);
	char e2[ERR_LEN];
	if (sched_check(type, p->pp, m, vpp, e2))
		return errf(err, "plan: the event engine cannot run this plan's schedule: %s", e2);
	return 0;
}

int event_run(const struct model *m, const struct hw *h, const struct plan *p, const struct estimate *e,
	      const struct op_times *measured, struct event_sim *out, char *err)
{
	memset(out, 0, sizeof(*out));
	int vpp;
	enum schedule type = event_schedule(p, &vpp);
	out->sched = sched_create(type, p->pp, e->m, vpp, err);
	if (!out->sched) return -1;
	out->nstages = out->sched->nstages;
	struct tables tb;
	memset(&tb, 0, sizeof(tb));
	int rc = alloc_out(out, p->pp, out->nstages, err);
	if (!rc) rc = simulate(m, h, p, e, measured, out, &tb, err);
	free(tb.t[0]);
	free(tb.layers);
	if (rc) event_sim_free(out);
	return rc;
}

void event_sim_free(struct event_sim *s)
{
	if (!s) return;
	engine_result_free(&s->r);
	sched_destroy(s->sched);
	free(s->rank);
	free(s->t_f);
	free(s->measured);
	memset(s, 0, sizeof(*s));
}
