/* zero — ZeRO stages 0-2 over runtime/dp.h, and gradient clipping by global norm. Moments and
 * the gradient shard are memory of the optimizer's backend (zero_cfg.opt.k; without one a CPU
 * backend of zero's own), which also runs the sums of squares, the scaling and AdamW. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/zero.h"
#include "sim/util.h"

struct zero {
	struct zero_cfg cfg;
	struct comm *group;
	struct dp *dp;
	size_t nparams, owned;   /* owned: elements this rank updates */
	float *grads;            /* the caller's, from zero_reduce_begin */
	float *shard, *m, *v;
	int step;
	struct kern *k;          /* borrowed unless own_k */
	int own_k;
	struct comm_req **req;
	double gather_s[2];      /* last zero_step's parameter all-gather: first start, last end */
};

int grad_norm_global(double local_sq, struct comm *const *groups, int ngroups, double *norm, char *err)
{
	double sq = local_sq;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] && comm_size(groups[i]) > 1 && comm_allreduce(groups[i], &sq, &sq, 1, COMM_F64, err))
			return -1;
	*norm = sqrt(sq);
	return 0;
}

float grad_clip_coef(double norm, float max_norm)
{
	double c = max_norm / (norm + 1e-6);
	return max_norm > 0 && c < 1.0 ? (float)c : 1.0f;
}

double grad_sq_skip(struct kern *kn, const float *g, size_t flat0, size_t n, const struct decay_range *skip,
                    int nskip)
{
	double sq = 0;
	size_t k = 0;
	for (int i = 0; i <= nskip && k < n; i++) {
		/* elements before skip range i (or up to n after the last) count */
		size_t end = i < nskip ? (skip[i].off > flat0 ? skip[i].off - flat0 : 0) : n;
		if (end > n) end = n;
		if (end > k) kn->ops->grad_sumsq_acc(kn->state, &sq, g + k, end - k);
		if (end > k) k = end;
		if (i < nskip) {
			size_t after = skip[i].off + skip[i].len;
			if (after > flat0 + k) k = after - flat0 < n ? after - flat0 : n;
		}
	}
	return sq;
}

int grad_clip_sq(struct kern *k, float *g, size_t n, double sq, struct comm *dpg, struct comm *const *mp, int nmp,
		 float max_norm, double *norm, char *err)
{
	struct comm *groups[8];
	int ng = 0;
	if (nmp > 7) return errf(err, "zero: at most 7 model-parallel groups for clipping");
	if (dpg) groups[ng++] = dpg;
	for (int i = 0; i < nmp; i++) groups[ng++] = mp[i];
	if (grad_norm_global(sq, groups, ng, norm, err)) return -1;
	float c = grad_clip_coef(*norm, max_norm);
	if (c < 1.0f) k->ops->grad_scale(k->state, g, n, c);
	return 0;
}

int grad_clip_global(struct kern *k, float *g, size_t n, struct comm *dpg, struct comm *const *mp, int nmp,
		      float max_norm, double *norm, char *err)
{
	return grad_clip_sq(k, g, n, grad_sq_skip(k, g, 0, n, NULL, 0), dpg, mp, nmp, max_norm, norm, err);
}

int zero_create(struct comm *group, size_t nparams, const struct zero_cfg *cfg, struct zero **out, char *err)
{
	*out = NULL;
	if (cfg->stage < 0 || cfg->stage > 2)
		return errf(err, "zero: stage %d is not 0, 1 or 2 (stage 3 is zero3_create)", cfg->stage);
	struct zero *z = calloc(1, sizeof(*z));
	if (!z) return errf(err, "zero: out of memory");
	z->cfg = *cfg;
	z->group = group;
	z->nparams = nparams;
	z->k = cfg->opt.k;
	if (!z->k) {
		if (kern_create(&z->k, &kern_cpu_ops, 0, err)) {
			free(z);
			return -1;
		}
		z->own_k = 1;
		z->cfg.opt.k = z->k;
	}
	struct dp_cfg dc = {.bucket_params = cfg->bucket_params, .reduce_scatter = cfg->stage > 0, .k = z->k};
	if (dp_create(group, nparams, &dc, &z->dp, err)) {
		zero_destroy(z);
		return -1;
	}
	z->owned = cfg->stage ? dp_shard_len(z->dp) : dp_padded(z->dp);
	z->m = kern_zalloc(z->k, z->owned * sizeof(float));
	z->v = kern_zalloc(z->k, z->owned * sizeof(float));
	z->req = calloc((size_t)dp_nbuckets(z->dp), sizeof(*z->req));
	if (cfg->stage) z->shard = kern_zalloc(z->k, z->owned * sizeof(float));
	if (!z->m || !z->v || !z->req || (cfg->stage && !z->shard)) {
		size_t owned = z->owned;
		zero_destroy(z);
		return errf(err, "zero: out of memory for %zu optimizer elements", owned);
	}
	*out = z;
	return 0;
}

void zero_destroy(struct zero *z)
{
	if (!z) return;
	dp_destroy(z->dp);
	if (z->k) {
		kern_free(z->k, z->shard);
		kern_free(z->k, z->m);
		kern_free(z->k, z->v);
	}
	if (z->own_k) kern_destroy(z->k);
	free(z->req);
	free(z);
}

size_t zero_padded(const struct zero *z) { return dp_padded(z->dp); }
struct dp *zero_dp(struct zero *z) { return z->dp; }
float *zero_grad_shard(struct zero *z) { return z->shard; }

int zero_reduce_begin(struct zero *z, float *grads, int accumulate, char *err)
{
	z->grads = grads;
	return dp_begin(z->dp, grads, z->shard, z->cfg.stage == 2 && accumulate, err);
}

int zero_grad_ready(struct zero *z, size_t off, size_t count, char *err)
{
	return dp_grad_ready(z->dp, off, count, err);
}

int zero_reduce_finish(struct zero *z, char *err) { return dp_finish(z->dp, err); }

int zero_clip_grad_norm(struct zero *z, struct comm *const *mp, int nmp, float max_norm,
			double *norm, char *err)
{
	if (!z->cfg.stage && !z->grads) return errf(err, "zero: clipping before any reduction");
	/* stage 0: every dp rank holds the same averaged gradient, so no dp reduction */
	return z->cfg.stage ? grad_clip_global(z->k, z->shard, z->owned, z->group, mp, nmp, max_norm, norm, err)
			    : grad_clip_global(z->k, z->grads, z->nparams, NULL, mp, nmp, max_norm, norm, err);
}

int zero_clip_grad_norm_skip(struct zero *z, const struct decay_range *skip, int nskip,
			     struct comm *const *mp, int nmp, float max_norm, double *norm, char *err)
{
	if (!z->cfg.stage && !z->grads) return errf(err, "zero: clipping before any reduction");
	double sq = zero_grad_sq_skip(z, skip, nskip);
	if (!z->cfg.stage) return grad_clip_sq(z->k, z->grads, z->nparams, sq, NULL, mp, nmp, max_norm, norm, err);
	return grad_clip_sq(z->k, z->shard, z->owned, sq, z->group, mp, nmp, max_norm, norm, err);
}

double zero_grad_sq_skip(const struct zero *z, const struct decay_range *skip, int nskip)
{
	if (!z->cfg.stage) return z->grads ? grad_sq_skip(z->k, z->grads, 0, z->nparams, skip, nskip) : 0.0;
	int n = comm_size(z->group), r = comm_rank(z->group), nb = dp_nbuckets(z->dp);
	double sq = 0;
	for (int i = 0; i < nb; i++) {
		const struct dp_bucket *b = dp_bucket(z->dp, i);
		size_t sl = b->len / (size_t)n;
		sq += grad_sq_skip(z->k, z->shard + b->shard_off, b->off + (size_t)r * sl, sl, skip, nskip);
	}
	return sq;
}

void zero_scale_grads(struct zero *z, float coef)
{
	float *g = z->cfg.stage ? z->shard : z->grads;
	size_t n = z->cfg.stage ? z->owned : z->nparams;
	if (g && n) z->k->ops->grad_scale(z->k->state, g, n, coef);
}

int zero_step(struct zero *z, float *params, char *err)
{
	z->step++;
	if (!z->cfg.stage) {
		if (!z->grads) return errf(err, "zero: step before any reduction");
		adamw_apply(&z->cfg.opt, params, z->grads, z->m, z->v, z->nparams, z->step);
		return 0;
	}
	int n = comm_size(z->group), r = comm_rank(z->group), nb = dp_nbuckets(z->dp);
	for (int i = 0; i < nb; i++) {
		const struct dp_bucket *b = dp_bucket(z->dp, i);
		size_t sl = b->len / (size_t)n, so = b->shard_off;
		float *p = params + b->off + (size_t)r * sl;
		adamw_apply_at(&z->cfg.opt, p, z->shard + so, z->m + so, z->v + so, b->off + (size_t)r * sl, sl,
			       z->step);
		/* gathers start bucket by bucket so the first overlap the remaining updates */
		if (i == 0) z->gather_s[0] = now_s();
		if (comm_iallgather(z->group, p, params + b->off, sl, COMM_F32, &z->req[i], err)) {
			for (int j = 0; j < i; j++) comm_wait(z->req[j], NULL), z->req[j] = NULL;
			return -1;
		}
	}
	int rc = 0;
	for (int i = 0; i < nb; i++) {
		char e2[ERR_LEN];
		if (comm_wait(z->req[i], e2) && !rc) rc = errf(err, "%s", e2);
		z->req[i] = NULL;
	}
	z->gather_s[1] = now_s();
	return rc;
}

void zero_last_gather(const struct zero *z, double *start_s, double *end_s)
{
	*start_s = z->gather_s[0];
	*end_s = z->gather_s[1];
}

int zero_state(struct zero *z, struct zero_state *st)
{
	st->p = NULL;
	st->m = z->m;
	st->v = z->v;
	st->n = z->owned;
	st->step = &z->step;
	return 0;
}
