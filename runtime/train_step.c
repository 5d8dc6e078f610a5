/* train_step — one training step of a trainer (runtime/train.h): micro-batches under ZeRO
 * 0-2 or ZeRO-3, the model-parallel path through the pipeline executor, gradient reduction,
 * clipping and AdamW; and reading the parameters and state back. State and creation:
 * train.c. */
#include <stdlib.h>
#include <string.h>
#include "runtime/cp.h"
#include "runtime/pp.h"
#include "runtime/train.h"
#include "runtime/train_impl.h"
#include "runtime/zero.h"
#include "sim/util.h"

/* ---- one micro-batch, ZeRO 0-2 ------------------------------------------------------ */

/* Loads micro-batch j of this rank's share of the current step's global batch. */
static void load_batch(struct trainer *t, int j)
{
	const struct plan *p = &t->x->plan;
	int per_rank = p->gbs / p->dp, d = comm_rank(ctx_comm(t->x, GROUP_DP));
	uint64_t first = (uint64_t)t->steps * (uint64_t)p->gbs + (uint64_t)d * (uint64_t)per_rank +
			 (uint64_t)j * (uint64_t)p->mbs;
	for (int b = 0; b < p->mbs; b++)
		data_sample(t->data, first + (uint64_t)b, p->seq, t->tokens + (size_t)b * p->seq,
			    t->targets + (size_t)b * p->seq);
}

/* Marks unit u's gradients ready when this backward feeds the reduction. */
/* Sequence parallelism leaves the norms' gradients of unit u (in g, which starts at the
 * unit's first element) as per-TP-rank partial sums: add them up before they are reduced. */
static int sp_finish_unit(struct trainer *t, int u, float *g, char *err)
{
	const struct llama *m = t->m;
	if (!m->sp) return 0;
	for (int i = 0; i < m->n_specs; i++) {
		const struct param_spec *s = &m->specs[i];
		if (!s->seq_partial || s->offset < t->bound[u] || s->offset >= t->bound[u + 1]) continue;
		float *x = g + (s->offset - t->bound[u]);
		if (comm_allreduce(m->tp, x, x, s->numel, COMM_F32, err)) return -1;
	}
	return 0;
}

static int ready(struct trainer *t, int reduce, int u, char *err)
{
	if (!reduce) return 0;
	if (sp_finish_unit(t, u, t->m->grads + t->bound[u], err)) return -1;
	if (zero_grad_ready(t->z, t->bound[u], t->bound[u + 1] - t->bound[u], err)) return -1;
	if (t->rs_start_s < 0 && dp_started(zero_dp(t->z)) > 0) t->rs_start_s = now_s();
	return 0;
}

static int microbatch_zero012(struct trainer *t, int j, float dloss, int reduce, double *loss, char *err)
{
	struct llama *m = t->m;
	double s = now_s();
	*loss = llama_forward(m, t->a, t->tok, t->tgt);
	double e = now_s();
	train_record(t, EV_F, EV_COMPUTE, s, e, j, 0, t->L);
	llama_head_backward(m, t->a, dloss);
	if (ready(t, reduce, t->L + 1, err)) return -1;
	for (int l = t->L - 1; l >= 0; l--) {
		llama_layers_backward(m, t->a, l, l + 1);
		if (ready(t, reduce, 1 + l, err)) return -1;
	}
	llama_embed_backward(m, t->a);
	if (t->a->failed) return errf(err, "train: %s", t->a->err);
	if (ready(t, reduce, 0, err)) return -1;
	train_record(t, EV_BW, EV_COMPUTE, e, now_s(), j, 0, t->L);
	return 0;
}

/* ---- one micro-batch, ZeRO-3 -------------------------------------------------------- */

/* A model whose weights (and gradients) for unit u sit in the unit's own buffers. */
static struct llama view_of(const struct trainer *t, int u, const float *params, float *grads)
{
	struct llama v = *t->m;
	v.params = (float *)params;   /* the passes only read params */
	v.grads = grads;
	v.layer = t->rebased;
	v.embed = 0;
	v.final_norm = 0;
	v.lm_head = t->m->lm_head - t->bound[u];
	return v;
}

static int gather(struct trainer *t, int u, int dir, const float **w, char *err)
{
	double s = now_s();
	if (zero3_gather(t->z3, u, dir, w, err)) return -1;
	train_record(t, EV_ALLGATHER, EV_COMM, s, now_s(), -1, -1, -1);
	train_note_peak(t);
	return 0;
}

static int microbatch_zero3(struct trainer *t, int j, float dloss, double *loss, char *err)
{
	const int L = t->L, head = L + 1;
	const float *w;
	struct llama v;
	double s = now_s();
	if (gather(t, 0, +1, &w, err)) return -1;
	v = view_of(t, 0, w, NULL);
	llama_embed_forward(&v, t->a, t->tok);
	zero3_release(t->z3, 0);
	for (int l = 0; l < L; l++) {
		if (gather(t, 1 + l, +1, &w, err)) return -1;
		v = view_of(t, 1 + l, w, NULL);
		llama_layers_forward(&v, t->a, l, l + 1);
		zero3_release(t->z3, 1 + l);
	}
	if (gather(t, head, -1, &w, err)) return -1;
	v = view_of(t, head, w, NULL);
	*loss = llama_head_forward(&v, t->a, t->tgt) + llama_aux_loss(&v, t->a, 0, L);
	double e = now_s();
	train_record(t, EV_F, EV_COMPUTE, s, e, j, 0, L);
	for (int u = head; u >= 0; u--) {
		if (u != head && gather(t, u, -1, &w, err)) return -1;
		float *g = zero3_grad(t->z3, u, err);
		if (!g) return -1;
		train_note_peak(t);
		v = view_of(t, u, w, g);
		if (u == head) llama_head_backward(&v, t->a, dloss);
		else if (u > 0) llama_layers_backward(&v, t->a, u - 1, u);
		else llama_embed_backward(&v, t->a);
		zero3_release(t->z3, u);
		if (t->a->failed) return errf(err, "train: %s", t->a->err);
		if (sp_finish_unit(t, u, g, err) || zero3_reduce(t->z3, u, err)) return -1;
		train_note_peak(t);
	}
	train_record(t, EV_BW, EV_COMPUTE, e, now_s(), j, 0, L);
	return 0;
}

static int load_par(struct trainer *t, int j, int *tok, int *tgt, char *err);

/* Forward and backward of micro-batch j, its gradient added into this rank's accumulator:
 * the one place a tensor- or pipeline-parallel executor replaces. `reduce` says whether this
 * backward feeds a data-parallel reduction (stages 0-2 mark gradients ready as they go). */
static int run_microbatch(struct trainer *t, int j, float dloss, int reduce, double *loss, char *err)
{
	if (t->par) {
		if (load_par(t, j, t->mtok, t->mtgt, err)) return -1;
		t->tok = t->mtok;
		t->tgt = t->mtgt;
	} else {
		load_batch(t, j);
		t->tok = t->tokens;
		t->tgt = t->targets;
	}
	if (t->z3) return microbatch_zero3(t, j, dloss, loss, err);
	return microbatch_zero012(t, j, dloss, reduce, loss, err);
}

/* ---- the step ----------------------------------------------------------------------- */

static int finish_reduce(struct trainer *t, char *err)
{
	double s = now_s();
	if (zero_reduce_finish(t->z, err)) return -1;
	double start = t->rs_start_s >= 0 ? t->rs_start_s : s;
	train_record(t, t->stage ? EV_REDUCE_SCATTER : EV_ALLREDUCE, EV_COMM, start, now_s(), -1, -1, -1);
	t->rs_start_s = -1;
	return 0;
}

static int accumulate(struct trainer *t, double *loss_sum, char *err)
{
	/* the reduction averages over dp*cp, but CP ranks' gradients are shares of one
	 * sequence's gradient that must add up: scale by cp (exact for powers of two) */
	const float dloss = (float)t->x->plan.cp / (float)t->micro;
	if (t->z) llama_zero_grad(t->m);
	for (int j = 0; j < t->micro; j++) {
		/* stage 2 reduces every micro-batch; 0 and 1 only the last one's backward */
		int reduce = t->z && (t->stage == 2 || j == t->micro - 1);
		if (reduce && zero_reduce_begin(t->z, t->m->grads, t->stage == 2 && j > 0, err)) return -1;
		double l;
		if (run_microbatch(t, j, dloss, reduce, &l, err)) return -1;
		*loss_sum += l;
		if (reduce && finish_reduce(t, err)) return -1;
		if (reduce && t->stage == 2 && j < t->micro - 1) llama_zero_grad(t->m);
	}
	return 0;
}

/* ---- model parallelism -------------------------------------------------------------- */

/* This rank's rows of micro-batch j into tok/tgt (mbs, Tl): its dp share of the global
 * batch, the same on every TP and PP rank, the zig-zag rows under CP. */
static int load_par(struct trainer *t, int j, int *tok, int *tgt, char *err)
{
	const struct plan *p = &t->x->plan;
	load_batch(t, j);
	if (p->cp == 1) {
		memcpy(tok, t->tokens, sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
		memcpy(tgt, t->targets, sizeof(int) * (size_t)p->mbs * (size_t)p->seq);
		return 0;
	}
	int r = comm_rank(ctx_comm(t->x, GROUP_CP));
	if (cp_shard_tokens(tok, t->tokens, p->mbs, p->seq, p->cp, r, err) ||
	    cp_shard_tokens(tgt, t->targets, p->mbs, p->seq, p->cp, r, err))
		return -1;
	return 0;
}

static int ev_of_op(int kind)
{
	return kind == OP_F ? EV_F : kind == OP_B ? EV_B : kind == OP_W ? EV_W : EV_BW;
}

/* Gradients of copy m averaged over data parallelism: dense tensors summed over dp*cp (CP
 * ranks hold their rows' shares of the same sequences' gradient, which add up to it), routed
 * experts over the expert-DP group (the EP all-to-all already summed the EP group's tokens),
 * all divided by dp, so the result is the single-rank gradient of the global batch. */
static int reduce_par(struct trainer *t, struct llama *m, char *err)
{
	const struct plan *p = &t->x->plan;
	struct comm *dpcp = ctx_comm(t->x, GROUP_DPCP), *edp = ctx_comm(t->x, GROUP_EDP);
	const float inv = 1.0f / (float)p->dp;
	size_t i = 0;
	while ((int)i < m->n_specs) {
		int expert = m->specs[i].shard == SHARD_EXPERT;
		size_t j = i, off = m->specs[i].offset, n = 0;
		while ((int)j < m->n_specs && (m->specs[j].shard == SHARD_EXPERT) == expert &&
		       m->specs[j].offset == off + n)
			n += m->specs[j++].numel;
		struct comm *g = expert ? edp : dpcp;
		float *gr = m->grads + off;
		if (comm_size(g) > 1 && comm_allreduce(g, gr, gr, n, COMM_F32, err)) return -1;
		if (p->dp > 1) t->k->ops->grad_scale(t->k->state, gr, n, inv);
		i = j;
	}
	return 0;
}

/* Pipeline with ZeRO 1/2: the executor leaves the step's whole gradient (all micro-batches)
 * on each rank, so one reduce-scatter per step over dp*cp (stage 2 behaves as stage 1 here),
 * clipping over dp*cp, tp and pp counting each tensor once, AdamW on the shard, all-gather. */
static int finish_pp_zero(struct trainer *t, double *norm, char *err)
{
	struct llama *m = t->m;
	const int cp = t->x->plan.cp;
	if (llama_grads_finish(m, err)) return -1;
	if (cp > 1) /* the reduction averages over dp*cp; CP shares must add up (see accumulate) */
		t->k->ops->grad_scale(t->k->state, m->grads, m->n_params, (float)cp);
	double s = now_s();
	if (zero_reduce_begin(t->z, m->grads, 0, err) || zero_grad_ready(t->z, 0, m->n_params, err) ||
	    zero_reduce_finish(t->z, err))
		return -1;
	train_record(t, EV_REDUCE_SCATTER, EV_COMM, s, now_s(), -1, -1, -1);
	s = now_s();
	struct comm *mp[2] = {ctx_comm(t->x, GROUP_TP), ctx_comm(t->x, GROUP_PP)};
	if (zero_clip_grad_norm_skip(t->z, t->skip, t->nskip, mp, 2, t->o.opt.max_grad_norm, norm, err) ||
	    zero_step(t->z, m->params, err))
		return -1;
	double gs, ge;
	zero_last_gather(t->z, &gs, &ge);
	train_record(t, EV_ALLGATHER, EV_COMM, gs, ge, -1, -1, -1);
	size_t before = t->nev;
	train_record(t, EV_OPT, EV_COMPUTE, s, now_s(), -1, -1, -1);
	if (t->nev > before) t->ev[t->nev - 1].stage = comm_rank(ctx_comm(t->x, GROUP_PP));
	return 0;
}

/* ZeRO 1/2 with ep > 1 after the step's micro-batches: each pack reduce-scattered over its
 * group (scaled first so that the group's average is the single-rank gradient: dense by cp
 * as in accumulate, experts by |edp|/dp as reduce_par's sum over edp divided by dp), one norm
 * over both (dense shards tile dp*cp; expert shards tile each edp group and the EP ranks hold
 * different experts, so the sum over dp*cp counts every element once; then over tp and pp),
 * clipping, AdamW on the shards, all-gathers, and the packs copied back into the model. Stage
 * 2 reduces once per step here, as stage 1. */
static int finish_ep_zero(struct trainer *t, double *norm, char *err)
{
	struct llama *m = t->m;
	const struct plan *p = &t->x->plan;
	struct zero *zs[2] = {t->z, t->ze};
	const float scale[2] = {(float)p->cp, (float)comm_size(ctx_comm(t->x, GROUP_EDP)) / (float)p->dp};
	if (llama_grads_finish(m, err)) return -1;
	double s = now_s(), sq = 0;
	for (int k = 0; k < 2; k++) {
		struct ep_pack *q = &t->pk[k];
		if (!zs[k]) continue;
		size_t at = 0;
		for (int i = 0; i < q->nruns; at += q->runs[i++].len)
			kern_copy_dev(t->k, q->buf + at, m->grads + q->runs[i].off, sizeof(float) * q->runs[i].len);
		t->k->ops->grad_scale(t->k->state, q->buf, at, scale[k]);
		if (zero_reduce_begin(zs[k], q->buf, 0, err) || zero_grad_ready(zs[k], 0, q->n, err) ||
		    zero_reduce_finish(zs[k], err))
			return -1;
		sq += zero_grad_sq_skip(zs[k], q->skip, q->nskip);
	}
	train_record(t, EV_REDUCE_SCATTER, EV_COMM, s, now_s(), -1, -1, -1);
	s = now_s();
	struct comm *groups[3] = {ctx_comm(t->x, GROUP_DPCP), ctx_comm(t->x, GROUP_TP), ctx_comm(t->x, GROUP_PP)};
	if (grad_norm_global(sq, groups, 3, norm, err)) return -1;
	const float coef = grad_clip_coef(*norm, t->o.opt.max_grad_norm);
	for (int k = 0; k < 2; k++) {
		struct ep_pack *q = &t->pk[k];
		if (!zs[k]) continue;
		if (t->o.opt.max_grad_norm > 0 && coef < 1.0f) zero_scale_grads(zs[k], coef);
		size_t at = 0;
		for (int i = 0; i < q->nruns; at += q->runs[i++].len)
			kern_copy_dev(t->k, q->buf + at, m->params + q->runs[i].off, sizeof(float) * q->runs[i].len);
		if (zero_step(zs[k], q->buf, err)) return -1;
		at = 0;
		for (int i = 0; i < q->nruns; at += q->runs[i++].len)
			kern_copy_dev(t->k, m->params + q->runs[i].off, q->buf + at, sizeof(float) * q->runs[i].len);
	}
	size_t before = t->nev;
	train_record(t, EV_OPT, EV_COMPUTE, s, now_s(), -1, -1, -1);
	if (t->nev > before) t->ev[t->nev - 1].stage = comm_rank(ctx_comm(t->x, GROUP_PP));
	return 0;
}

static int step_par(struct trainer *t, double *loss_sum, double *norm, char *err)
{
	const struct plan *p = &t->x->plan;
	const size_t rows = (size_t)p->mbs * (size_t)t->Tl;
	if (t->pp) {
		for (int j = 0; j < t->micro; j++)
			if (load_par(t, j, t->mtok + (size_t)j * rows, t->mtgt + (size_t)j * rows, err)) return -1;
		float loss;
		double s = now_s();
		if (pp_step(t->pp, t->mtok, t->mtgt, &loss, err)) return -1;
		*loss_sum = (double)loss * t->micro;
		size_t n;
		const struct pp_op_time *ot = pp_times(t->pp, &n);
		for (size_t i = 0; i < n && t->o.trace; i++) {
			size_t before = t->nev;
			train_record(t, ev_of_op(ot[i].kind), EV_COMPUTE, s + ot[i].start_s, s + ot[i].end_s, ot[i].mb,
			       t->stage_l0[ot[i].stage], t->stage_l0[ot[i].stage + 1]);
			if (t->nev > before) {
				t->ev[t->nev - 1].chunk = ot[i].chunk;
				t->ev[t->nev - 1].stage = ot[i].stage;
			}
		}
	} else {
		const float dloss = 1.0f / (float)t->micro;
		llama_zero_grad(t->m);
		for (int j = 0; j < t->micro; j++) {
			if (load_par(t, j, t->mtok, t->mtgt, err)) return -1;
			double s = now_s();
			float l = llama_forward(t->m, t->a, t->mtok, t->mtgt);
			double e = now_s();
			if (t->a->failed) return errf(err, "train: %s", t->a->err);
			llama_backward(t->m, t->a, dloss);
			if (t->a->failed) return errf(err, "train: %s", t->a->err);
			train_record(t, EV_F, EV_COMPUTE, s, e, j, 0, t->L);
			train_record(t, EV_BW, EV_COMPUTE, e, now_s(), j, 0, t->L);
			*loss_sum += l;
		}
	}
	if (t->pk[0].runs) return finish_ep_zero(t, norm, err);
	if (t->z) return finish_pp_zero(t, norm, err);
	double s = now_s();
	for (int c = 0; c < t->ncopies; c++)
		if (llama_grads_finish(t->copy[c], err) || reduce_par(t, t->copy[c], err)) return -1;
	train_record(t, EV_ALLREDUCE, EV_COMM, s, now_s(), -1, -1, -1);
	s = now_s();
	float nrm;
	if (t->pp) {
		if (t->ncopies == 2) t->copy[1]->step = t->copy[0]->step; /* a restore sets copy 0's */
		if (pp_adamw_step_par(t->pp, &t->o.opt, NULL, 0, &nrm, err)) return -1;
	} else if (llama_step_par(t->m, &t->o.opt, NULL, 0, &nrm, err)) {
		return -1;
	}
	size_t before = t->nev;
	train_record(t, EV_OPT, EV_COMPUTE, s, now_s(), -1, -1, -1);
	if (t->nev > before) t->ev[t->nev - 1].stage = comm_rank(ctx_comm(t->x, GROUP_PP));
	*norm = nrm;
	return 0;
}

int train_step(struct trainer *t, struct train_stats *st, char *err)
{
	const struct plan *p = &t->x->plan;
	struct comm *dpg = ctx_comm(t->x, GROUP_DPCP);
	double t_start = now_s(), loss_sum = 0, norm = 0;
	if (t->wc_stale) {
		if (!t->ncopies) llama_weights_refresh(t->m);
		for (int c = 0; c < t->ncopies; c++) llama_weights_refresh(t->copy[c]);
	}
	t->wc_stale = 0;
	if (t->par && (t->pp || t->pk[0].runs || (!t->z && !t->z3))) {
		if (step_par(t, &loss_sum, &norm, err)) return -1;
		goto done;
	}
	if (accumulate(t, &loss_sum, err)) return -1;
	double s = now_s();
	float max_norm = t->o.opt.max_grad_norm;
	struct comm *mp[1] = {ctx_comm(t->x, GROUP_TP)};
	int nmp = t->par ? 1 : 0;
	if (t->z3) {
		/* clipping first waits for the unit reduce-scatters still in flight */
		if (zero3_clip_grad_norm_skip(t->z3, t->skip, t->nskip, mp, nmp, max_norm, &norm, err)) return -1;
		train_record(t, EV_REDUCE_SCATTER, EV_COMM, s, now_s(), -1, -1, -1);
		s = now_s();
	}
	if (t->z ? zero_clip_grad_norm_skip(t->z, t->skip, t->nskip, mp, nmp, max_norm, &norm, err) ||
			   zero_step(t->z, t->m->params, err)
		 : zero3_step(t->z3, err))
		return -1;
	double e = now_s();
	if (t->z && t->stage) {
		/* the optimizer op runs until the parameters are gathered again, as in a
		 * non-overlapped step; the gather shows on the comm stream beside it */
		double gs, ge;
		zero_last_gather(t->z, &gs, &ge);
		train_record(t, EV_ALLGATHER, EV_COMM, gs, ge, -1, -1, -1);
	}
	train_record(t, EV_OPT, EV_COMPUTE, s, e, -1, -1, -1);
done:
	t->wc_stale = t->z || t->ze || t->z3; /* their optimizers write params only */
	/* the step ends when the backend has finished its kernels (a no-op on the CPU) */
	if (t->k->ops->sync(t->k->state, err)) return -1;
	t->steps++;
	if (comm_allreduce(dpg, &loss_sum, &loss_sum, 1, COMM_F64, err)) return -1;
	/* the step ends when the slowest rank ends (comm has sum-reductions only: gather) */
	double dt = now_s() - t_start, *all = malloc(sizeof(double) * (size_t)t->x->world);
	if (!all) return errf(err, "train: out of memory");
	int rc = comm_allgather(t->x->world_comm, &dt, all, 1, COMM_F64, err);
	for (int r = 0; r < t->x->world; r++) dt = all[r] > dt ? all[r] : dt;
	free(all);
	if (rc) return -1;
	train_note_peak(t);
	st->step = t->steps;
	st->loss = loss_sum / ((double)t->micro * comm_size(dpg));
	st->grad_norm = norm;
	st->step_time_s = dt;
	st->tokens_per_s = (double)p->gbs * p->seq / st->step_time_s;
	st->mem_bytes_local = t->peak_bytes;
	st->rss_bytes_local = train_peak_rss_bytes();
	return 0;
}

/* ---- state -------------------------------------------------------------------------- */

int train_full_params(struct trainer *t, float *full, char *err)
{
	if (t->par && t->z3) {
		float *local = kern_alloc(t->k, sizeof(float) * (t->m->n_params + 1));
		if (!local) return errf(err, "train: out of memory");
		int rc = 0;
		for (int u = 0; u < t->nunits && !rc; u++) {
			const float *w;
			rc = zero3_gather(t->z3, u, 0, &w, err);
			if (!rc) kern_copy_dev(t->k, local + t->bound[u], w, (t->bound[u + 1] - t->bound[u]) * sizeof(float));
			zero3_release(t->z3, u);
		}
		if (!rc) rc = llama_gather_full(t->m, local, full, NULL, 0, err);
		kern_free(t->k, local);
		return rc;
	}
	if (t->par) {
		/* copy 0 of every pipeline rank holds each stage once (DualPipe's copy 1 repeats
		 * a partner's); TP and EP pieces are summed in by llama_gather_full */
		struct comm *g = ctx_comm(t->x, GROUP_PP);
		return llama_gather_full(t->m, t->m->params, full, &g, 1, err);
	}
	if (t->z) {
		kern_to_host(t->k, full, t->m->params, t->m->n_params * sizeof(float));
		return 0;
	}
	for (int u = 0; u < t->nunits; u++) {
		const float *w;
		if (zero3_gather(t->z3, u, 0, &w, err)) return -1;
		kern_to_host(t->k, full + t->bound[u], w, (t->bound[u + 1] - t->bound[u]) * sizeof(float));
		zero3_release(t->z3, u);
	}
	return 0;
}

int train_state(struct trainer *t, struct train_state *s)
{
	t->wc_stale = 1; /* the caller may write params (a checkpoint load) */
	if (t->par && !t->z && !t->z3) {
		size_t n = t->m->n_params + (t->ncopies == 2 ? t->copy[1]->n_params : 0);
		*s = (struct train_state){t->m->params, n, t->m->m, t->m->v, n, &t->m->step, &t->steps};
		return 0;
	}
	struct zero_state zs;
	if (t->z) zero_state(t->z, &zs);
	else zero3_state(t->z3, &zs);
	s->params = t->z ? t->m->params : zs.p;
	s->n_params = t->z ? t->m->n_params : zs.n;
	s->m = zs.m;
	s->v = zs.v;
	s->n_moments = zs.n;
	s->adam_step = zs.step;
	s->steps_done = &t->steps;
	return 0;
}
