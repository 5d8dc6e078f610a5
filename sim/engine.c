/* engine — dependency-driven event simulation. A rank advances through its op list until an
 * op's cross-stage input is not produced yet; it then parks on that input's key and is woken
 * when the producer finishes. Since each rank's order is fixed and an op's start depends only on
 * finished ops, the processing order does not change any time: the result is the fixed point
 * of the rules in reference/model.md §4.8. All memory is allocated once per run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim/engine.h"
#include "sim/util.h"

enum { K_F, K_B, K_CLASSES }; /* what a key records: forward done, input gradient done */

struct rank_state {
	size_t pos, end;
	double t_free;          /* compute stream */
	double ag_free, dp_free;
	double send_end;        /* end of the last send (blocking sends hold the compute stream) */
	double prev_start, prev_end;
	int last_gathered;      /* chunk whose params are resident (-1 none) */
	int inflight;
	double mem;
};

struct eng {
	const struct sched *s;
	const struct engine_costs *c;
	struct engine_result *out;
	double *done;           /* key -> end time; < 0 while not done */
	int *waiter[2];         /* key -> rank parked on it, -1 none */
	int *stack, sp;
	int *grad_left;         /* (rank, chunk) -> gradient ops left before the DP reduction */
	struct rank_state *rs;
	int oom;                /* an event could not be recorded */
};

static size_t key_of(const struct sched *s, int cls, int dir, int stage, int mb)
{
	return (((size_t)cls * (size_t)s->ndirs + (size_t)dir) * (size_t)s->nstages + (size_t)stage) *
	       (size_t)s->mb_per_dir + (size_t)mb;
}

static double p2p_between(const struct eng *e, int r, int other, int boundary)
{
	if (other == r || !e->c->p2p) return 0;
	return e->c->p2p[boundary];
}

/* Earliest time op can start given its inputs; -1 after parking rank r on a missing input. */
static double dep_ready(struct eng *e, int r, const struct sched_op *op, int stage)
{
	const struct sched *s = e->s;
	size_t k;
	int prod = r, chunk, boundary = 0;
	if (op->kind == OP_F) {
		if (stage == 0) return 0;
		k = key_of(s, K_F, op->dir, stage - 1, op->mb);
		sched_locate(s, op->dir, stage - 1, &prod, &chunk);
		boundary = stage - 1;
	} else if (op->kind == OP_W) {
		k = key_of(s, K_B, op->dir, stage, op->mb);
	} else {
		size_t own = key_of(s, K_F, op->dir, stage, op->mb);
		if (e->done[own] < 0) {
			k = own;
		} else if (stage == s->nstages - 1) {
			return e->done[own];
		} else {
			k = key_of(s, K_B, op->dir, stage + 1, op->mb);
			sched_locate(s, op->dir, stage + 1, &prod, &chunk);
			boundary = stage;
		}
	}
	if (e->done[k] < 0) {
		if (e->waiter[0][k] < 0 || e->waiter[0][k] == r) e->waiter[0][k] = r;
		else e->waiter[1][k] = r;
		return -1;
	}
	return e->done[k] + p2p_between(e, r, prod, boundary);
}

static void mark_done(struct eng *e, size_t k, double t)
{
	e->done[k] = t;
	for (int i = 0; i < 2; i++) {
		if (e->waiter[i][k] >= 0) {
			e->stack[e->sp++] = e->waiter[i][k];
			e->waiter[i][k] = -1;
		}
	}
}

static double op_duration(const struct eng *e, const struct sched_op *op, int stage)
{
	const struct engine_costs *c = e->c;
	switch (op->kind) {
	case OP_F: return c->t_f[stage];
	case OP_B: return c->t_b[stage];
	case OP_W: return c->t_w ? c->t_w[stage] : 0;
	default: return c->t_b[stage] + (c->t_w ? c->t_w[stage] : 0);
	}
}

static struct tl_event *emit(struct eng *e, int r, int stream, int kind, double t0, double t1)
{
	if (e->c->no_timeline) return NULL;
	struct tl_event *ev = timeline_push(&e->out->tl);
	if (!ev) {
		e->oom = 1;
		return NULL;
	}
	ev->rank = r;
	ev->stream = (uint8_t)stream;
	ev->kind = (uint8_t)kind;
	ev->start = t0;
	ev->end = t1;
	ev->mb = -1;
	ev->stage = -1;
	return ev;
}

/* ZeRO-3: the all-gather this op waits for, on the rank's gather stream; returns its end and
 * sets *t_start (both 0 when the op needs no gather) */
static double gather_before(struct eng *e, int r, const struct sched_op *op, int stage, double *t_start)
{
	struct rank_state *st = &e->rs[r];
	const struct engine_costs *c = e->c;
	*t_start = 0;
	if (!c->param_gather || op->kind == OP_W) return 0;
	if (!c->gather_every_op && st->last_gathered == op->chunk) return 0;
	st->last_gathered = op->chunk;
	double issue = c->gather_prefetch ? st->prev_start : st->prev_end;
	double t0 = fmax(st->ag_free, issue), t1 = t0 + c->param_gather[stage];
	st->ag_free = t1;
	*t_start = t0;
	struct tl_event *ev = emit(e, r, TL_AG_COMM, TL_AG, t0, t1);
	if (ev) { ev->stage = stage; ev->chunk = op->chunk; ev->dir = op->dir; }
	return t1;
}

/* the stage's last gradient op finished: reduce its gradients bucket by bucket as the op
 * produces them (buckets become ready evenly over the op) */
static void dp_reduce(struct eng *e, int r, int stage, double t0, double t1)
{
	const struct engine_costs *c = e->c;
	struct rank_state *st = &e->rs[r];
	int nb = c->dp_buckets > 0 ? c->dp_buckets : 1;
	double each = c->dp_reduce[stage] / nb;
	for (int k = 0; k < nb; k++) {
		double ready = t0 + (t1 - t0) * (k + 1) / nb;
		double b0 = fmax(st->dp_free, ready);
		st->dp_free = b0 + each;
		struct tl_event *ev = emit(e, r, TL_DP_COMM, TL_DP, b0, st->dp_free);
		if (ev) ev->stage = stage;
	}
}

static void send_after(struct eng *e, int r, const struct sched_op *op, int stage, double t)
{
	const struct sched *s = e->s;
	int to, chunk, fwd = op->kind == OP_F;
	int next = fwd ? stage + 1 : stage - 1;
	if (!e->c->p2p || next < 0 || next >= s->nstages) return;
	sched_locate(s, op->dir, next, &to, &chunk);
	double d = p2p_between(e, r, to, fwd ? stage : stage - 1);
	if (d <= 0) return;
	if (t + d > e->rs[r].send_end) e->rs[r].send_end = t + d;
	struct tl_event *ev = emit(e, r, fwd ? TL_P2P_FWD : TL_P2P_BWD, TL_P2P, t, t + d);
	if (ev) { ev->mb = op->mb; ev->stage = stage; ev->chunk = op->chunk; ev->dir = op->dir; }
}

static void account_memory(struct eng *e, int r, const struct sched_op *op, int stage)
{
	const struct engine_costs *c = e->c;
	struct rank_state *st = &e->rs[r];
	struct engine_rank *er = &e->out->rank[r];
	double mb = c->m_b_bytes ? c->m_b_bytes[stage] : 1, mw = c->m_w_bytes ? c->m_w_bytes[stage] : 0;
	switch (op->kind) {
	case OP_F: st->mem += mb; st->inflight++; break;
	case OP_B: st->mem -= mb - mw; st->inflight--; break;
	case OP_W: st->mem -= mw; break;
	default: st->mem -= mb; st->inflight--; break;
	}
	if (st->mem > er->peak_act_bytes) er->peak_act_bytes = st->mem;
	if (st->inflight > er->peak_inflight) er->peak_inflight = st->inflight;
}

/* Runs one op (or an overlapped pair) that starts at t0 and ends at t1. */
static void finish_op(struct eng *e, int r, size_t i, int stage, double t0, double t1)
{
	const struct sched *s = e->s;
	const struct sched_op *op = &s->ops[i];
	account_memory(e, r, op, stage);
	struct tl_event *ev = emit(e, r, TL_COMPUTE, op->kind, t0, t1);
	if (ev) {
		ev->mb = op->mb;
		ev->stage = stage;
		ev->chunk = op->chunk;
		ev->dir = op->dir;
		ev->overlap = op->overlap || (i > s->off[r] && op[-1].overlap);
		ev->mem_bytes = e->rs[r].mem;
	}
	if (op->kind == OP_F) mark_done(e, key_of(s, K_F, op->dir, stage, op->mb), t1);
	if (op->kind == OP_B || op->kind == OP_BW) mark_done(e, key_of(s, K_B, op->dir, stage, op->mb), t1);
	if (op->kind != OP_W) send_after(e, r, op, stage, t1);
	if (op->kind == OP_W || op->kind == OP_BW) {
		int last = --e->grad_left[r * s->chunks + op->chunk] == 0;
		if (e->c->dp_reduce && (last || e->c->dp_every_mb)) dp_reduce(e, r, stage, t0, t1);
	}
}

static double group_duration(const struct eng *e, size_t i, int n, const int *stage)
{
	const struct engine_costs *c = e->c;
	const struct sched_op *op = &e->s->ops[i];
	if (c->op_time && c->op_time[i] >= 0) return c->op_time[i];
	if (n == 1) return op_duration(e, op, stage[0]);
	if (c->t_fb && c->t_fb[stage[0]] > 0) return c->t_fb[stage[0]];
	return op_duration(e, &op[0], stage[0]) + op_duration(e, &op[1], stage[1]);
}

/* Advances rank r as far as its inputs allow. */
static void advance(struct eng *e, int r)
{
	const struct sched *s = e->s;
	struct rank_state *st = &e->rs[r];
	struct engine_rank *er = &e->out->rank[r];
	while (st->pos < st->end) {
		size_t i = st->pos;
		const struct sched_op *op = &s->ops[i];
		int n = op->overlap && i + 1 < st->end ? 2 : 1;
		int stage[2];
		double ready = st->t_free;
		for (int k = 0; k < n; k++) {
			stage[k] = sched_stage(s, r, op[k].chunk, op[k].dir);
			double t = dep_ready(e, r, &op[k], stage[k]);
			if (t < 0) return;
			ready = fmax(ready, t);
		}
		/* a layer-wise gather lets the op start after its first layer's share and end no
		 * earlier than one layer of compute after the last share */
		double min_end = 0, dur = group_duration(e, i, n, stage);
		for (int k = 0; k < n; k++) {
			double g0, g1 = gather_before(e, r, &op[k], stage[k], &g0);
			int layers = e->c->gather_layers && e->c->gather_layers[stage[k]] > 1 ? e->c->gather_layers[stage[k]] : 1;
			ready = fmax(ready, g0 + (g1 - g0) / layers);
			min_end = fmax(min_end, g1 > 0 ? g1 + dur / layers : 0);
		}
		double t1 = fmax(ready + dur, min_end);
		if (i == s->off[r]) er->start = ready;
		for (int k = 0; k < n; k++) finish_op(e, r, i + (size_t)k, stage[k], ready, t1);
		er->busy += t1 - ready;
		st->prev_start = ready;
		st->prev_end = st->t_free = t1;
		if (e->c->dp_blocking && e->c->dp_reduce) st->prev_end = st->t_free = fmax(st->t_free, st->dp_free);
		if (e->c->p2p_blocking) st->prev_end = st->t_free = fmax(st->t_free, st->send_end);
		st->pos += (size_t)n;
	}
}

static int check_costs(const struct sched *s, const struct engine_costs *c, char *err)
{
	if (!c->t_f || !c->t_b) return errf(err, "engine: t_f and t_b per stage are required");
	for (int k = 0; k < s->nstages; k++) {
		double w = c->t_w ? c->t_w[k] : 0;
		if (!(c->t_f[k] >= 0) || !(c->t_b[k] >= 0) || !(w >= 0))
			return errf(err, "engine: stage %d: op times must be non-negative numbers", k);
		if (c->p2p && k + 1 < s->nstages && !(c->p2p[k] >= 0))
			return errf(err, "engine: boundary %d: p2p time must be a non-negative number", k);
		if ((c->dp_reduce && !(c->dp_reduce[k] >= 0)) || (c->param_gather && !(c->param_gather[k] >= 0)) ||
		    (c->opt && !(c->opt[k] >= 0)) || (c->opt_gather && !(c->opt_gather[k] >= 0)) ||
		    (c->t_fb && isnan(c->t_fb[k])))
			return errf(err, "engine: stage %d: reduce/gather/optimizer times must be non-negative numbers", k);
	}
	if (c->op_time)
		for (size_t i = 0; i < s->nops; i++)
			if (isnan(c->op_time[i]))
				return errf(err, "engine: measured time of op %zu is not a number", i);
	return 0;
}

static int eng_alloc(struct eng *e, const struct sched *s, struct engine_result *out, char *err)
{
	size_t nkeys = K_CLASSES * (size_t)s->ndirs * (size_t)s->nstages * (size_t)s->mb_per_dir;
	e->done = malloc(nkeys * sizeof(*e->done));
	e->waiter[0] = malloc(nkeys * sizeof(int));
	e->waiter[1] = malloc(nkeys * sizeof(int));
	e->stack = malloc(((size_t)s->pp * 2 + 4) * sizeof(int));
	e->grad_left = malloc((size_t)s->pp * (size_t)s->chunks * sizeof(int));
	e->rs = calloc((size_t)s->pp, sizeof(*e->rs));
	out->rank = calloc((size_t)s->pp, sizeof(*out->rank));
	size_t cap = e->c->no_timeline ? 0 : s->nops * 2 + (size_t)s->pp * (size_t)s->chunks * 4 + 64;
	if (cap && e->c->param_gather) cap += s->nops;
	if (cap && e->c->dp_reduce && e->c->dp_buckets > 1) cap += (size_t)s->pp * s->chunks * (size_t)e->c->dp_buckets;
	if (cap && e->c->dp_reduce && e->c->dp_every_mb) cap += s->nops * (size_t)(e->c->dp_buckets > 1 ? e->c->dp_buckets : 1);
	if (!e->done || !e->waiter[0] || !e->waiter[1] || !e->stack || !e->grad_left || !e->rs ||
	    !out->rank || timeline_init(&out->tl, s->pp, cap, err))
		return errf(err, "engine: out of memory (%zu ops)", s->nops);
	for (size_t k = 0; k < nkeys; k++) {
		e->done[k] = -1;
		e->waiter[0][k] = e->waiter[1][k] = -1;
	}
	for (int r = 0; r < s->pp; r++) {
		e->rs[r].pos = s->off[r];
		e->rs[r].end = s->off[r + 1];
		e->rs[r].last_gathered = -1;
		for (int c = 0; c < s->chunks; c++) e->grad_left[r * s->chunks + c] = s->mb_per_dir;
	}
	return 0;
}

static void eng_free(struct eng *e)
{
	free(e->done);
	free(e->waiter[0]);
	free(e->waiter[1]);
	free(e->stack);
	free(e->grad_left);
	free(e->rs);
}

/* Names the stuck rank that got least far: usually the one whose own order is wrong. */
static int deadlock(const struct eng *e, char *err)
{
	const struct sched *s = e->s;
	int worst = -1, stuck = 0;
	for (int r = 0; r < s->pp; r++) {
		const struct rank_state *st = &e->rs[r];
		if (st->pos >= st->end) continue;
		stuck++;
		if (worst < 0 || st->pos - s->off[r] < e->rs[worst].pos - s->off[worst]) worst = r;
	}
	if (worst < 0) return 0;
	size_t i = e->rs[worst].pos;
	const struct sched_op *op = &s->ops[i];
	return errf(err, "%s: deadlock: %d rank(s) stuck; rank %d cannot start op %zu (%s mb %d chunk %d dir %d)",
		    schedule_name(s->type), stuck, worst, i - s->off[worst],
		    op_kind_name((enum op_kind)op->kind), op->mb, op->chunk, op->dir);
}

static void optimizer_step(struct eng *e, int r)
{
	const struct sched *s = e->s;
	struct rank_state *st = &e->rs[r];
	struct engine_rank *er = &e->out->rank[r];
	double t = fmax(st->t_free, st->dp_free);
	if (e->c->opt) {
		double d = 0;
		for (int c = 0; c < s->chunks; c++)
			for (int dir = 0; dir < s->ndirs; dir++)
				if (s->ndirs == 1 || dir == c) d += e->c->opt[sched_stage(s, r, c, dir)];
		emit(e, r, TL_COMPUTE, TL_OPT, t, t + d);
		t += d;
	}
	if (e->c->opt_gather) {
		double d = 0;
		for (int c = 0; c < s->chunks; c++)
			for (int dir = 0; dir < s->ndirs; dir++)
				if (s->ndirs == 1 || dir == c) d += e->c->opt_gather[sched_stage(s, r, c, dir)];
		if (d > 0) emit(e, r, TL_DP_COMM, TL_AG, t, t + d);
		t += d;
	}
	er->step_end = fmax(t, st->ag_free);
}

static void summarise(struct engine_result *out)
{
	out->cost = 0;
	for (int r = 0; r < out->nranks; r++) {
		struct engine_rank *er = &out->rank[r];
		er->span = er->end - er->start;
		er->bubble_fraction = er->busy > 0 ? (er->span - er->busy) / er->busy : 0;
		er->bubble_rate = er->span > 0 ? (er->span - er->busy) / er->span : 0;
		if (er->span > out->cost) out->cost = er->span;
		if (er->step_end > out->step) out->step = er->step_end;
		if (er->peak_inflight > out->max_inflight) out->max_inflight = er->peak_inflight;
		if (er->peak_act_bytes > out->max_act_bytes) out->max_act_bytes = er->peak_act_bytes;
	}
	/* the headline is the worst rank's own figure, so it is one of the per-rank values shown
	 * beside it */
	for (int r = 0; r < out->nranks; r++) {
		const struct engine_rank *er = &out->rank[r];
		if (er->bubble_rate > out->bubble_rate) out->bubble_rate = er->bubble_rate;
		if (er->bubble_fraction > out->bubble_fraction) out->bubble_fraction = er->bubble_fraction;
	}
}

int engine_run(const struct sched *s, const struct engine_costs *c, struct engine_result *out,
	       char *err)
{
	memset(out, 0, sizeof(*out));
	if (check_costs(s, c, err)) return -1;
	struct eng e;
	memset(&e, 0, sizeof(e));
	e.s = s;
	e.c = c;
	e.out = out;
	out->nranks = s->pp;
	out->nops = s->nops;
	int rc = eng_alloc(&e, s, out, err);
	if (!rc) {
		for (int r = s->pp - 1; r >= 0; r--) e.stack[e.sp++] = r;
		while (e.sp > 0) advance(&e, e.stack[--e.sp]);
		rc = deadlock(&e, err);
	}
	if (!rc) {
		for (int r = 0; r < s->pp; r++) {
			out->rank[r].end = e.rs[r].t_free;
			optimizer_step(&e, r);
		}
		summarise(out);
	}
	if (!rc && e.oom) rc = errf(err, "engine: out of memory for the timeline");
	eng_free(&e);
	if (rc) engine_result_free(out);
	return rc;
}

void engine_result_free(struct engine_result *r)
{
	if (!r) return;
	timeline_free(&r->tl);
	free(r->rank);
	r->rank = NULL;
}
