/* Pipeline executor (runtime/pp.h) under mpirun, pp = number of ranks (2, 4 or 8). For every
 * schedule, over two training steps, the step loss, the gradients of every tensor a rank
 * holds (in every model copy) and the weights after each clipped AdamW step must match a
 * single-rank run of the same m micro-batches on the same data (llama_forward /
 * llama_backward with dloss = 1/m, then llama_step), within 1e-5 of each tensor's largest
 * magnitude. Every rank computes that reference itself with the plain single-rank model,
 * which shares no code with the executor beyond the per-layer passes. Also: the
 * gradient-ready hook covers each held tensor exactly once with gradients that no longer
 * change (and, with 4 ranks, drives runtime/dp's bucketed all-reduce for dp 2 x pp 2,
 * overlapped with the pipeline); the op records follow the op list; the activation pool
 * matches the in-flight counts of reference/model.md §2.3; one-rank pipelines (every hand-off
 * between chunks local) give the same results; every multi-rank case runs again on sharded
 * models (llama_create_par of only the rank's stages, compared element by element through
 * llama_full_index); bad inputs fail with a message.
 * AdamW's eps is 1e-4 here so that an update is a smooth function of its gradient (with eps
 * 1e-8 the first step is lr·sign(g), and a gradient within rounding of zero could flip). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu.h"
#include "runtime/comm.h"
#include "runtime/ctx.h"
#include "runtime/dp.h"
#include "runtime/pp.h"
#include "sim/util.h"
#include "tests/mpi/harness.h"
#include "tests/tiny.h"

enum { MBS = 1, SEQ = 16, NTOK = MBS * SEQ };
#define TOL 1e-5

/* tests/tiny.h's dense or MoE model with `layers` layers, tied or not */
static struct model tiny(int layers, int tied, int moe)
{
	struct model c = moe ? tiny_moe("tiny-pp", 2) : tiny_dense("tiny-pp", 2);
	c.layers = layers;
	c.tied = tied;
	return c;
}

/* m micro-batches of tests/tiny.h's next-token data; one ignored target per micro-batch */
static void make_batch(int *tok, int *tgt, int m, unsigned seed)
{
	tiny_batch(tok, tgt, m * NTOK, SEQ, seed, 2);
	for (int j = 0; j < m; j++) tgt[j * NTOK + 2 + j % 5] = -1;
}

static void opts(struct adamw_opts *o)
{
	adamw_opts_default(o);
	o->lr = 1e-3f;
	o->eps = 1e-4f;
}

/* The single-rank reference over STEPS steps (batch k of step k): gradients of the m
 * micro-batches (dloss 1/m), then an AdamW step clipped at half the gradient norm (so that
 * clipping acts). */
#define STEPS 2
struct ref {
	float *grads[STEPS], *params[STEPS];   /* gradients of step k, weights after step k */
	float loss[STEPS], norm[STEPS];
};

static int ref_run(const struct model *cfg, int m, const int *tok, const int *tgt, struct ref *r, char *err)
{
	memset(r, 0, sizeof *r);
	struct llama *ml = NULL;
	struct llama_acts *a = NULL;
	int rc = llama_create(&ml, cfg, NULL, err) || llama_acts_create(&a, ml, MBS, SEQ, 0, err) ? -1 : 0;
	for (int k = 0; k < STEPS && !rc; k++) {
		const size_t at = (size_t)k * (size_t)m * NTOK;
		double loss = 0.0;
		llama_zero_grad(ml);
		for (int j = 0; j < m; j++) {
			loss += llama_forward(ml, a, tok + at + (size_t)j * NTOK, tgt + at + (size_t)j * NTOK);
			llama_backward(ml, a, 1.0f / (float)m);
		}
		r->loss[k] = (float)(loss / m);
		r->grads[k] = malloc(sizeof(float) * ml->n_params);
		r->params[k] = malloc(sizeof(float) * ml->n_params);
		if (!r->grads[k] || !r->params[k]) { rc = errf(err, "out of memory"); break; }
		memcpy(r->grads[k], ml->grads, sizeof(float) * ml->n_params);
		float ss = 0.0f;
		grad_sumsq(&ss, ml->grads, ml->n_params);
		r->norm[k] = sqrtf(ss);
		struct adamw_opts o;
		opts(&o);
		o.max_grad_norm = 0.5f * r->norm[k];
		llama_step(ml, &o);
		memcpy(r->params[k], ml->params, sizeof(float) * ml->n_params);
	}
	llama_acts_destroy(a);
	llama_destroy(ml);
	return rc;
}

static void ref_free(struct ref *r)
{
	for (int k = 0; k < STEPS; k++) {
		free(r->grads[k]);
		free(r->params[k]);
	}
}

/* The hook records every range and a copy of its gradients at the time of the call. */
#define MAX_READY 64
struct hook {
	struct llama *const *models;
	int n;
	struct pp_ready r[MAX_READY];
	float *snap[MAX_READY];
};

static int on_ready(void *arg, const struct pp_ready *r, char *err)
{
	struct hook *h = arg;
	if (h->n == MAX_READY) return errf(err, "hook: too many ranges");
	h->r[h->n] = *r;
	h->snap[h->n] = malloc(sizeof(float) * r->count);
	if (!h->snap[h->n]) return errf(err, "hook: out of memory");
	memcpy(h->snap[h->n], h->models[r->copy]->grads + r->off, sizeof(float) * r->count);
	h->n++;
	return 0;
}

struct pcase {
	enum schedule type;
	int m, vpp, layers, tied, moe;
	int split[16];       /* stage_layers, 0-terminated; empty: even */
};

static const char *case_name(const struct pcase *c, char *buf, size_t n)
{
	snprintf(buf, n, "%s m=%d vpp=%d L=%d%s%s", schedule_name(c->type), c->m, c->vpp, c->layers,
	         c->tied ? " tied" : "", c->moe ? " moe" : "");
	return buf;
}

/* Activation sets at the peak, reference/model.md §2.3 (m >= 2pp for DualPipe here). */
static int expected_sets(enum schedule t, int pp, int r, int m)
{
	switch (t) {
	case SCHED_AFAB: return m;
	case SCHED_1F1B: return pp - r < m ? pp - r : m;
	case SCHED_ZBH1: return pp < m ? pp : m;
	case SCHED_ZBH2: return 2 * pp - 1 < m ? 2 * pp - 1 : m;
	case SCHED_DUALPIPE: return pp + 1; /* [DSV3 Table 2]: PP + 1 per device */
	default: return -1;
	}
}

static void check_hook(struct hook *h, struct pp *p, struct llama *const *models, const char *name)
{
	int twice = 0, missing = 0, changed = 0;
	for (int c = 0; c < pp_copies(p); c++) {
		const struct llama *m = models[c];
		for (int i = 0; i < m->n_specs; i++) {
			int seen = 0;
			for (int k = 0; k < h->n; k++)
				if (h->r[k].copy == c && m->specs[i].offset >= h->r[k].off &&
				    m->specs[i].offset + m->specs[i].numel <= h->r[k].off + h->r[k].count) seen++;
			if (pp_holds(p, c, i)) { twice += seen > 1; missing += seen == 0; }
			else twice += seen > 0;
		}
	}
	for (int k = 0; k < h->n; k++)
		changed += memcmp(h->snap[k], models[h->r[k].copy]->grads + h->r[k].off, sizeof(float) * h->r[k].count) != 0;
	CHECK(!twice && !missing && !changed, "%s: hook ranges: %d held tensors missing, %d reported twice or not held, "
	      "%d ranges changed after being reported", name, missing, twice, changed);
}

static void check_times(struct pp *p, const char *name, int rank)
{
	size_t n;
	const struct pp_op_time *t = pp_times(p, &n);
	const struct sched *s = pp_sched(p);
	const struct sched_op *ops = s->ops + s->off[rank];
	int bad = n != sched_rank_len(s, rank);
	for (size_t i = 0; i < n && !bad; i++) {
		bad += t[i].kind != ops[i].kind || t[i].mb != ops[i].mb || t[i].chunk != ops[i].chunk;
		bad += t[i].stage != sched_stage(s, rank, ops[i].chunk, ops[i].dir);
		bad += !(t[i].start_s >= 0 && t[i].end_s >= t[i].start_s && t[i].wait_s >= 0);
		bad += i > 0 && t[i].start_s < t[i - 1].end_s;
	}
	CHECK(!bad, "%s: op records do not follow rank %d's op list", name, rank);
}

/* max over held tensors of harness_rel_err(models' buffer, reference buffer) */
static double held_err(struct pp *p, struct llama *const *models, int grads, const float *want, int *held)
{
	double e = 0.0;
	*held = 0;
	for (int k = 0; k < pp_copies(p); k++)
		for (int i = 0; i < models[k]->n_specs; i++) {
			if (!pp_holds(p, k, i)) continue;
			const struct param_spec *sp = &models[k]->specs[i];
			const float *got = (grads ? models[k]->grads : models[k]->params) + sp->offset;
			/* a shard's tensor is a block of the single-rank one: compare element by element */
			float *w = malloc(sizeof(float) * sp->numel);
			if (!w) { e = INFINITY; continue; }
			for (size_t j = 0; j < sp->numel; j++) w[j] = want[llama_full_index(models[k], i, j)];
			(*held)++;
			e = fmax(e, harness_rel_err(got, w, sp->numel));
			free(w);
		}
	return e;
}

/* Step k of a case: loss, gradients, hook, op records, pool size, then AdamW and weights. */
static int run_step(struct pp *p, struct comm *pcomm, struct llama *const *models, const struct ref *ref,
                    struct hook *h, const struct pcase *c, const int *tok, const int *tgt, int k, const char *name)
{
	char err[ERR_LEN];
	const int pp = comm_size(pcomm), rank = comm_rank(pcomm);
	float loss = -1.0f, loss0, norm = -1.0f;
	if (pp_step(p, tok, tgt, &loss, err)) { CHECK(0, "%s: step %d: %s", name, k, err); return -1; }
	CHECK_REL(loss, ref->loss[k], TOL, name);
	loss0 = loss;
	if (comm_broadcast(pcomm, &loss0, &loss0, 1, COMM_F32, 0, err)) CHECK(0, "%s", err);
	else CHECK(loss0 == loss, "%s: rank %d's step loss %.9g differs from rank 0's %.9g", name, rank, loss, loss0);
	int held;
	double gerr = held_err(p, models, 1, ref->grads[k], &held);
	CHECK(held > 0 && gerr <= TOL, "%s: step %d, rank %d: gradients of %d held tensors differ by %.3g of their max",
	      name, k, rank, held, gerr);
	check_hook(h, p, models, name);
	check_times(p, name, rank);
	int want = expected_sets(c->type, pp, rank, c->m);
	if (want > 0) CHECK(pp_act_sets(p) == want, "%s: rank %d: %d activation sets, want %d", name, rank, pp_act_sets(p), want);
	struct adamw_opts o;
	opts(&o);
	o.max_grad_norm = 0.5f * ref->norm[k];
	if (pp_adamw_step(p, &o, &norm, err)) { CHECK(0, "%s: adamw: %s", name, err); return -1; }
	CHECK_REL(norm, ref->norm[k], TOL, name);
	double perr = held_err(p, models, 0, ref->params[k], &held);
	CHECK(perr <= TOL, "%s: step %d, rank %d: weights after AdamW differ by %.3g of their max", name, k, rank, perr);
	if (rank == 0)
		printf("%-32s step %d  loss %.6f (ref %.6f)  grad err %.2g  weight err %.2g  sets %d  msg bufs %d\n", name, k,
		       loss, ref->loss[k], gerr, perr, pp_act_sets(p), pp_msg_buffers(p));
	return 0;
}

/* Runs one case with pp_create (or pp_create_from_ctx when x is given); sharded: each copy
 * is llama_create_par of only this rank's stages (pp_copy_par), as the trainer builds them. */
static void run_case_sh(struct comm *pcomm, const struct ctx *x, const struct pcase *c, int sharded)
{
	char err[ERR_LEN], name[96];
	case_name(c, name, sizeof name);
	const int pp = comm_size(pcomm);
	struct model cfg = tiny(c->layers, c->tied, c->moe);
	int *tok = malloc(sizeof(int) * STEPS * (size_t)c->m * NTOK), *tgt = malloc(sizeof(int) * STEPS * (size_t)c->m * NTOK);
	struct ref ref = {0};
	struct llama *models[2] = {NULL, NULL};
	struct sched *s = NULL;
	struct pp *p = NULL;
	struct hook h = {0};
	make_batch(tok, tgt, STEPS * c->m, 77u + (unsigned)c->m);
	if (ref_run(&cfg, c->m, tok, tgt, &ref, err)) { CHECK(0, "%s: reference: %s", name, err); goto out; }
	int ncopies = c->type == SCHED_DUALPIPE ? 2 : 1;
	int split[64];
	if (!x) {
		s = sched_create(c->type, pp, c->m, c->vpp, err);
		if (!s) { CHECK(0, "%s: %s", name, err); goto out; }
		for (int i = 0; i < s->nstages; i++)
			split[i] = c->split[0] ? c->split[i] : c->layers / s->nstages + (i < c->layers % s->nstages);
	}
	for (int k = 0; k < ncopies; k++) {
		struct llama_par par;
		struct llama_layer_range rg[16];
		llama_par_default(&par);
		if (sharded && s) {
			pp_copy_par(s, comm_rank(pcomm), split, k, rg, &par.n_ranges, &par.has_embed, &par.has_head);
			par.ranges = rg;
		}
		if (llama_create_par(&models[k], &cfg, NULL, &par, err)) { CHECK(0, "%s: %s", name, err); goto out; }
		if (sharded && pp > 1)
			CHECK(models[k]->n_params < models[k]->n_params_full, "%s: copy %d of rank %d holds all %zu parameters",
			      name, k, comm_rank(pcomm), models[k]->n_params);
	}
	if (sharded) strncat(name, " sharded", sizeof name - strlen(name) - 1);
	if (x) {
		if (pp_create_from_ctx(x, models, &p, err)) { CHECK(0, "%s: %s", name, err); goto out; }
	} else {
		struct pp_cfg pc = {.sched = s, .comm = pcomm, .stage_layers = split,
		                    .models = {models[0], models[1]}, .B = MBS, .T = SEQ};
		if (pp_create(&pc, &p, err)) { CHECK(0, "%s: %s", name, err); goto out; }
	}
	h.models = models;
	pp_set_ready_hook(p, on_ready, &h);
	for (int k = 0; k < STEPS; k++) {
		for (int i = 0; i < h.n; i++) free(h.snap[i]);
		h.n = 0;
		if (run_step(p, pcomm, models, &ref, &h, c, tok + (size_t)k * (size_t)c->m * NTOK,
		             tgt + (size_t)k * (size_t)c->m * NTOK, k, name)) break;
	}
out:
	for (int k = 0; k < h.n; k++) free(h.snap[k]);
	pp_destroy(p);
	sched_destroy(s);
	llama_destroy(models[0]);
	llama_destroy(models[1]);
	ref_free(&ref);
	free(tok);
	free(tgt);
}

static void run_case(struct comm *pcomm, const struct ctx *x, const struct pcase *c) { run_case_sh(pcomm, x, c, 0); }

/* The ready hook driving runtime/dp's bucketed all-reduce: dp 2 x pp 2 on 4 ranks, zb-v. The
 * averaged gradients must equal a single-rank run of both replicas' 2m micro-batches with
 * dloss = 1/(2m), and on pipeline rank 0 (stages 0 and 3) buckets must have started when
 * stage 0's layers are reported, i.e. while its last W ops still ran after stage 3 was done:
 * the reduction overlaps the pipeline. The models hold every tensor for
 * now, so the tensors this rank does not hold are marked ready (as zeros) up front. */
struct dp_hook { struct dp *d; int calls, started_before_stage0; };

static int dp_ready(void *arg, const struct pp_ready *r, char *err)
{
	struct dp_hook *h = arg;
	h->calls++;
	if (r->part == PP_PART_LAYERS && r->layer0 == 0) h->started_before_stage0 = dp_started(h->d);
	return dp_grad_ready(h->d, r->off, r->count, err);
}

/* A pipeline-only plan of the tiny shapes: pp ranks, dp data-parallel copies, schedule,
 * gbs sequences; stage layers left to the caller. */
static void pp_plan(struct plan *pl, int pp, int dp, enum schedule sched, int gbs)
{
	plan_defaults(pl);
	pl->pp = pp;
	pl->dp = dp;
	pl->gpus = pp * dp;
	pl->schedule = sched;
	pl->mbs = MBS;
	pl->seq = SEQ;
	pl->gbs = gbs;
}

static void dp_overlap(struct comm *world)
{
	char err[ERR_LEN];
	enum { M = 4 };
	struct plan pl;
	pp_plan(&pl, 2, 2, SCHED_ZBV, 2 * M);
	pl.nstage_layers = 4;
	for (int i = 0; i < 4; i++) pl.stage_layers[i] = 1;
	struct model cfg = tiny(4, 0, 0);
	struct ctx *x = NULL;
	struct llama *m = NULL, *ref = NULL;
	struct llama_acts *a = NULL;
	struct pp *p = NULL;
	struct dp *d = NULL;
	int tok[2 * M * NTOK], tgt[2 * M * NTOK];
	make_batch(tok, tgt, 2 * M, 4242u);
	if (ctx_create(world, &pl, &x, err) || llama_create(&m, &cfg, NULL, err) || llama_create(&ref, &cfg, NULL, err) ||
	    llama_acts_create(&a, ref, MBS, SEQ, 0, err)) { CHECK(0, "dp overlap: %s", err); goto out; }
	for (int j = 0; j < 2 * M; j++) {
		llama_forward(ref, a, tok + j * NTOK, tgt + j * NTOK);
		llama_backward(ref, a, 1.0f / (2 * M));
	}
	struct llama *ms[2] = {m, NULL};
	struct dp_cfg dc = {.bucket_params = 20000};
	if (pp_create_from_ctx(x, ms, &p, err) || dp_create(ctx_comm(x, GROUP_DPCP), m->n_params, &dc, &d, err)) {
		CHECK(0, "dp overlap: %s", err);
		goto out;
	}
	struct dp_hook h = {d, 0, 0};
	pp_set_ready_hook(p, dp_ready, &h);
	int bad = dp_begin(d, m->grads, NULL, 0, err);
	for (int i = 0; i < m->n_specs && !bad; i++)
		if (!pp_holds(p, 0, i)) {
			memset(m->grads + m->specs[i].offset, 0, sizeof(float) * m->specs[i].numel);
			bad = dp_grad_ready(d, m->specs[i].offset, m->specs[i].numel, err);
		}
	const int r = comm_rank(ctx_comm(x, GROUP_DPCP));
	if (!bad) bad = pp_step(p, tok + r * M * NTOK, tgt + r * M * NTOK, NULL, err);
	if (!bad) bad = dp_finish(d, err);
	if (bad) { CHECK(0, "dp overlap: %s", err); goto out; }
	int held;
	double e = held_err(p, &m, 1, ref->grads, &held);
	CHECK(held > 0 && e <= TOL, "dp overlap: rank %d: averaged gradients differ by %.3g of their max", x->rank, e);
	if (comm_rank(ctx_comm(x, GROUP_PP)) == 0)
		CHECK(h.started_before_stage0 > 0, "dp overlap: rank %d: no bucket started before stage 0 finished "
		      "(%d of %d buckets, %d hook calls)", x->rank, h.started_before_stage0, dp_nbuckets(d), h.calls);
	if (x->rank == 0)
		printf("dp 2 x pp 2 zb-v: grad err %.2g, %d of %d buckets started before stage 0 finished\n", e,
		       h.started_before_stage0, dp_nbuckets(d));
out:
	dp_destroy(d);
	pp_destroy(p);
	llama_acts_destroy(a);
	llama_destroy(ref);
	llama_destroy(m);
	ctx_destroy(x);
}

/* Bad inputs fail at creation (no communication), every rank alike. */
static void bad_inputs(struct comm *pcomm, struct comm *world)
{
	char err[ERR_LEN];
	const int pp = comm_size(pcomm);
	struct model cfg = tiny(4, 0, 0);
	struct llama *m0 = NULL, *m1 = NULL;
	struct pp *p = NULL;
	if (llama_create(&m0, &cfg, NULL, err) || llama_create(&m1, &cfg, NULL, err)) { CHECK(0, "%s", err); goto out; }
	struct llama *ms[2] = {m0, m1};

	/* too few micro-batches for DualPipe, through the plan path */
	struct plan pl;
	pp_plan(&pl, pp, 1, SCHED_DUALPIPE, 2);
	pl.nstage_layers = pp;
	for (int i = 0; i < pp; i++) pl.stage_layers[i] = 4 / pp + (i < 4 % pp);
	struct ctx *x = NULL;
	if (ctx_create(world, &pl, &x, err)) { CHECK(0, "%s", err); goto out; }
	CHECK(pp_create_from_ctx(x, ms, &p, err) == -1 && strstr(err, "must be at least 2*pp"),
	      "dualpipe with 2 micro-batches: '%s'", err);
	pp_destroy(p);
	p = NULL;
	x->plan.schedule = SCHED_1F1B;
	x->plan.gbs = 4;
	x->plan.nstage_layers = pp + 1;
	CHECK(pp_create_from_ctx(x, ms, &p, err) == -1 && strstr(err, "stage_layers entries"),
	      "wrong stage_layers count: '%s'", err);
	ctx_destroy(x);

	char want[128];
	struct sched *s = sched_create(SCHED_1F1B, pp, 4, 1, err);
	int split[8] = {3, 3, 3, 3, 3, 3, 3, 3};
	struct pp_cfg c = {.sched = s, .comm = pcomm, .stage_layers = split, .models = {m0, NULL}, .B = MBS, .T = SEQ};
	snprintf(want, sizeof want, "stage_layers sum to %d, not the model's layers (4)", 3 * pp);
	CHECK(s && pp_create(&c, &p, err) == -1 && strstr(err, want), "bad split: '%s'", err);
	sched_destroy(s);
	s = sched_create(SCHED_DUALPIPE, pp, 2 * pp, 1, err);
	c.sched = s;
	c.stage_layers = split;
	for (int i = 0; i < pp; i++) split[i] = 4 / pp + (i < 4 % pp);
	CHECK(s && pp_create(&c, &p, err) == -1 && strstr(err, "copy 1 is missing"), "one copy for dualpipe: '%s'", err);
	c.models[1] = m0;
	CHECK(s && pp_create(&c, &p, err) == -1 && strstr(err, "two distinct"), "same copy twice: '%s'", err);
	sched_destroy(s);
	CHECK(sched_create(SCHED_INTERLEAVED, pp, pp + 1, 2, err) == NULL && strstr(err, "does not divide microbatches"),
	      "interleaved with m not a multiple of pp: '%s'", err);
	c.sched = NULL;
	CHECK(pp_create(&c, &p, err) == -1 && strstr(err, "no schedule"), "no schedule: '%s'", err);
	if (pp == 2) { /* every rank holds stage 0 or the last stage: all refuse at once */
		s = sched_create(SCHED_1F1B, pp, 2, 1, err);
		c.sched = s;
		c.models[1] = NULL;
		split[0] = split[1] = 2;
		if (pp_create(&c, &p, err)) CHECK(0, "%s", err);
		else CHECK(pp_step(p, NULL, NULL, NULL, err) == -1 && strstr(err, comm_rank(pcomm) ? "no targets" : "no tokens"),
		           "step without data: '%s'", err);
		pp_destroy(p);
		p = NULL;
		sched_destroy(s);
	}
out:
	llama_destroy(m0);
	llama_destroy(m1);
}

int main(void)
{
	char err[ERR_LEN];
	struct comm *world;
	if (harness_world(&world, 60)) return 1;   /* a deadlock fails instead of hanging */
	const int n = comm_size(world);
	struct plan pl;
	pp_plan(&pl, n, 1, SCHED_1F1B, 4);
	struct ctx *x = NULL;
	if (ctx_create(world, &pl, &x, err)) {
		CHECK(0, "%s", err);
	} else {
		struct comm *pc = ctx_comm(x, GROUP_PP);
		static const struct pcase two[] = {
			{SCHED_AFAB, 4, 1, 4, 0, 0, {0}},
			{SCHED_1F1B, 4, 1, 4, 0, 0, {1, 3}},
			{SCHED_INTERLEAVED, 4, 2, 4, 0, 0, {0}},
			{SCHED_ZBH1, 4, 1, 4, 0, 0, {0}},
			{SCHED_ZBH2, 4, 1, 4, 0, 0, {0}},
			{SCHED_ZBV, 4, 1, 4, 0, 0, {0}},
			{SCHED_DUALPIPE, 4, 1, 4, 0, 0, {0}},
			{SCHED_DUALPIPE, 8, 1, 4, 0, 0, {3, 1}},
			{SCHED_DUALPIPEV, 4, 1, 4, 0, 0, {0}},
			{SCHED_DUALPIPEV, 8, 1, 4, 0, 0, {2, 0, 1, 1}},
			{SCHED_INTERLEAVED, 8, 2, 4, 0, 0, {0}},
			{SCHED_1F1B, 4, 1, 4, 1, 0, {0}},
			{SCHED_ZBV, 4, 1, 4, 1, 0, {0}},
			{SCHED_DUALPIPE, 4, 1, 4, 1, 0, {0}},
			{SCHED_ZBH1, 4, 1, 4, 1, 1, {0}},
		};
		static const struct pcase four[] = {
			{SCHED_1F1B, 8, 1, 8, 0, 0, {1, 2, 2, 3}},
			{SCHED_INTERLEAVED, 8, 2, 8, 0, 0, {0}},
			{SCHED_ZBV, 8, 1, 8, 0, 0, {0}},
			{SCHED_ZBH2, 8, 1, 8, 0, 0, {0}},
			{SCHED_DUALPIPE, 8, 1, 8, 0, 0, {0}},
			{SCHED_DUALPIPEV, 8, 1, 8, 1, 1, {0}},
		};
		static const struct pcase eight[] = {
			{SCHED_INTERLEAVED, 8, 2, 16, 0, 0, {0}},
			{SCHED_ZBV, 8, 1, 16, 0, 0, {0}},
			{SCHED_DUALPIPE, 16, 1, 8, 1, 0, {0}},
		};
		const struct pcase *cs = n == 2 ? two : n == 4 ? four : eight;
		int nc = n == 2 ? (int)(sizeof two / sizeof two[0]) : n == 4 ? (int)(sizeof four / sizeof four[0])
		       : n == 8 ? (int)(sizeof eight / sizeof eight[0]) : 0;
		if (!nc) CHECK(0, "test_pp runs with 2, 4 or 8 ranks, not %d", n);
		for (int i = 0; i < nc; i++) run_case(pc, NULL, &cs[i]);
		/* and on sharded models: each copy holds only its stages' tensors */
		for (int i = 0; i < nc; i++) run_case_sh(pc, NULL, &cs[i], 1);
		/* the plan path: 1F1B with the plan's even split */
		const int L = n > 4 ? n : 4;
		x->plan.nstage_layers = n;
		for (int i = 0; i < n; i++) x->plan.stage_layers[i] = L / n + (i < L % n);
		struct pcase plan_case = {SCHED_1F1B, 4, 1, L, 0, 0, {0}};
		run_case(pc, x, &plan_case);
		bad_inputs(pc, world);
		/* one-rank pipelines (each rank alone): every stage hand-off is local */
		struct comm *self = NULL;
		int me = comm_rank(world);
		if (comm_create_group(world, &me, 1, "self", &self, err)) {
			CHECK(0, "%s", err);
		} else {
			static const struct pcase solo[] = {
				{SCHED_1F1B, 4, 1, 4, 0, 0, {0}},
				{SCHED_INTERLEAVED, 4, 3, 4, 0, 0, {2, 0, 2}},
				{SCHED_ZBV, 4, 1, 4, 1, 0, {0}},
				{SCHED_DUALPIPEV, 2, 1, 4, 0, 1, {0}},
			};
			for (int i = 0; n == 2 && me == 0 && i < (int)(sizeof solo / sizeof solo[0]); i++)
				run_case(self, NULL, &solo[i]);
		}
		comm_destroy(self);
		if (n == 4) dp_overlap(world);
	}
	ctx_destroy(x);
	return harness_finish(world, "test_pp");
}
