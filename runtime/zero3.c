/* zero3 — ZeRO-3 / FSDP: parameters sharded by unit, gathered just before use with the next
 * unit prefetched, freed after; unit gradients reduce-scattered into the gradient shard
 * (Rajbhandari et al., SC20, §5.3; model.md §2.4 "ZeRO-3 / FSDP gather buffers"). Every
 * buffer is memory of the optimizer's backend (adamw_cfg.k; without one a CPU backend of
 * zero3's own), which runs the fills, the means, the sums of squares and AdamW. */
#include <stdlib.h>
#include <string.h>
#include "runtime/zero.h"
#include "sim/util.h"

struct unit {
	size_t n, padded, sl;     /* real elements, padded length, shard length */
	size_t flat_off;          /* start in the unpadded full vector */
	size_t shard_off;         /* start of this rank's slice in the shard buffers */
	float *full;              /* gathered parameters, or NULL */
	struct comm_req *ag;      /* in-flight all-gather into full */
	float *grad;              /* unit gradient from backward, or NULL */
	float *rs_out;            /* reduce-scatter result, added to the shard on completion */
	struct comm_req *rs;
};

struct zero3 {
	struct comm *group;
	struct adamw_cfg opt;
	int nu, step;
	struct unit *u;
	size_t shard_len;
	float *p, *g, *m, *v;     /* shard: parameters, gradients, moments */
	size_t live, peak;
	struct kern *k;           /* borrowed unless own_k */
	int own_k;
};

static void live_add(struct zero3 *z, size_t n)
{
	z->live += n;
	if (z->live > z->peak) z->peak = z->live;
}

int zero3_create(struct comm *group, const size_t *unit_params, int nunits,
		 const struct adamw_cfg *opt, struct zero3 **out, char *err)
{
	*out = NULL;
	if (nunits < 1) return errf(err, "zero3: no units");
	struct zero3 *z = calloc(1, sizeof(*z));
	if (!z) return errf(err, "zero3: out of memory");
	z->group = group;
	z->opt = *opt;
	z->nu = nunits;
	z->k = opt->k;
	if (!z->k) {
		if (kern_create(&z->k, &kern_cpu_ops, 0, err)) {
			free(z);
			return -1;
		}
		z->own_k = 1;
		z->opt.k = z->k;
	}
	z->u = calloc((size_t)nunits, sizeof(*z->u));
	if (!z->u) {
		zero3_destroy(z);
		return errf(err, "zero3: out of memory");
	}
	size_t n = (size_t)comm_size(group), flat = 0;
	for (int i = 0; i < nunits; i++) {
		struct unit *u = &z->u[i];
		u->n = unit_params[i];
		u->padded = (u->n + n - 1) / n * n;
		u->sl = u->padded / n;
		u->flat_off = flat;
		u->shard_off = z->shard_len;
		flat += u->n;
		z->shard_len += u->sl;
	}
	z->p = kern_zalloc(z->k, z->shard_len * sizeof(float));
	z->g = kern_zalloc(z->k, z->shard_len * sizeof(float));
	z->m = kern_zalloc(z->k, z->shard_len * sizeof(float));
	z->v = kern_zalloc(z->k, z->shard_len * sizeof(float));
	if (!z->p || !z->g || !z->m || !z->v) {
		zero3_destroy(z);
		return errf(err, "zero3: out of memory for a shard of %zu elements", flat / n);
	}
	*out = z;
	return 0;
}

static void unit_free(struct kern *k, struct unit *u)
{
	comm_wait(u->ag, NULL);
	comm_wait(u->rs, NULL);
	kern_free(k, u->full);
	kern_free(k, u->grad);
	kern_free(k, u->rs_out);
	u->full = u->grad = u->rs_out = NULL;
	u->ag = u->rs = NULL;
}

void zero3_destroy(struct zero3 *z)
{
	if (!z) return;
	for (int i = 0; z->u && i < z->nu; i++) unit_free(z->k, &z->u[i]);
	free(z->u);
	kern_free(z->k, z->p);
	kern_free(z->k, z->g);
	kern_free(z->k, z->m);
	kern_free(z->k, z->v);
	if (z->own_k) kern_destroy(z->k);
	free(z);
}

size_t zero3_shard_len(const struct zero3 *z) { return z->shard_len; }
const float *zero3_shard(const struct zero3 *z) { return z->p; }
size_t zero3_live(const struct zero3 *z) { return z->live; }
size_t zero3_peak_live(const struct zero3 *z) { return z->peak; }

int zero3_load(struct zero3 *z, const float *full, char *err)
{
	(void)err;
	size_t r = (size_t)comm_rank(z->group);
	for (int i = 0; i < z->nu; i++) {
		const struct unit *u = &z->u[i];
		/* this rank's slice [r·sl, (r+1)·sl) of the padded unit: real elements, then padding */
		size_t j = r * u->sl, real = j < u->n ? u->n - j : 0;
		if (real > u->sl) real = u->sl;
		if (real) kern_copy_dev(z->k, z->p + u->shard_off, full + u->flat_off + j, real * sizeof(float));
		kern_zero(z->k, z->p + u->shard_off + real, (u->sl - real) * sizeof(float));
	}
	return 0;
}

static int start_gather(struct zero3 *z, int i, char *err)
{
	struct unit *u = &z->u[i];
	if (u->full) return 0;
	u->full = kern_alloc(z->k, u->padded * sizeof(float));
	if (!u->full) return errf(err, "zero3: out of memory gathering unit %d (%zu elements)", i, u->padded);
	live_add(z, u->padded);
	return comm_iallgather(z->group, z->p + u->shard_off, u->full, u->sl, COMM_F32, &u->ag, err);
}

/* waits for one unit's reduction and adds its result to the gradient shard; frees its buffers */
static int finish_reduce(struct zero3 *z, struct unit *u, char *err)
{
	float n = (float)comm_size(z->group);
	int rc = comm_wait(u->rs, err);
	u->rs = NULL;
	if (rc) return -1;
	z->k->ops->grad_add_div(z->k->state, z->g + u->shard_off, u->rs_out, u->sl, n);
	kern_free(z->k, u->grad);
	kern_free(z->k, u->rs_out);
	u->grad = u->rs_out = NULL;
	z->live -= u->padded + u->sl;
	return 0;
}

/* finishes reductions that are complete (all of them when block): frees their gradient buffers */
static int reap(struct zero3 *z, int block, char *err)
{
	for (int i = 0; i < z->nu; i++) {
		struct unit *u = &z->u[i];
		if (!u->rs) continue;
		int done = 1;
		if (!block && comm_test(u->rs, &done, err)) return -1;
		if (done && finish_reduce(z, u, err)) return -1;
	}
	return 0;
}

/* At most this many unit reductions in flight: a slow network must not let gradient buffers pile
 * up without bound (FSDP bounds its in-flight all-gathers the same way, limit_all_gathers), so a
 * unit's backward waits for the oldest reduction when the limit is reached. */
#define RS_IN_FLIGHT_MAX 2

static int bound_in_flight(struct zero3 *z, char *err)
{
	int n = 0;
	for (int i = 0; i < z->nu; i++) n += z->u[i].rs != NULL;
	/* backward walks the units downwards, so the oldest reduction has the highest index */
	for (int i = z->nu - 1; i >= 0 && n >= RS_IN_FLIGHT_MAX; i--) {
		if (!z->u[i].rs) continue;
		if (finish_reduce(z, &z->u[i], err)) return -1;
		n--;
	}
	return 0;
}

int zero3_gather(struct zero3 *z, int unit, int dir, const float **params, char *err)
{
	*params = NULL;
	if (unit < 0 || unit >= z->nu) return errf(err, "zero3: no unit %d (%d units)", unit, z->nu);
	struct unit *u = &z->u[unit];
	if (start_gather(z, unit, err)) return -1;
	int next = unit + dir;
	if (dir && next >= 0 && next < z->nu && start_gather(z, next, err)) return -1;
	if (reap(z, 0, err)) return -1;
	int rc = comm_wait(u->ag, err);
	u->ag = NULL;
	if (rc) return -1;
	*params = u->full;
	return 0;
}

void zero3_release(struct zero3 *z, int unit)
{
	if (unit < 0 || unit >= z->nu) return;
	struct unit *u = &z->u[unit];
	if (!u->full) return;
	comm_wait(u->ag, NULL);   /* a prefetch that was never used */
	u->ag = NULL;
	kern_free(z->k, u->full);
	u->full = NULL;
	z->live -= u->padded;
}

float *zero3_grad(struct zero3 *z, int unit, char *err)
{
	if (unit < 0 || unit >= z->nu) {
		errf(err, "zero3: no unit %d (%d units)", unit, z->nu);
		return NULL;
	}
	struct unit *u = &z->u[unit];
	if (u->grad) {
		errf(err, "zero3: unit %d already has a gradient in flight", unit);
		return NULL;
	}
	u->grad = kern_zalloc(z->k, u->padded * sizeof(float));
	if (!u->grad) errf(err, "zero3: out of memory for unit %d's gradient", unit);
	else live_add(z, u->padded);
	return u->grad;
}

int zero3_reduce(struct zero3 *z, int unit, char *err)
{
	if (unit < 0 || unit >= z->nu) return errf(err, "zero3: no unit %d (%d units)", unit, z->nu);
	struct unit *u = &z->u[unit];
	if (!u->grad || u->rs) return errf(err, "zero3: unit %d has no gradient to reduce", unit);
	/* free what earlier reductions no longer need before holding another buffer */
	if (reap(z, 0, err) || bound_in_flight(z, err)) return -1;
	u->rs_out = kern_alloc(z->k, u->sl * sizeof(float));
	if (!u->rs_out) return errf(err, "zero3: out of memory reducing unit %d", unit);
	live_add(z, u->sl);
	kern_zero(z->k, u->grad + u->n, (u->padded - u->n) * sizeof(float));
	return comm_ireduce_scatter(z->group, u->grad, u->rs_out, u->sl, COMM_F32, &u->rs, err);
}

int zero3_clip_grad_norm(struct zero3 *z, struct comm *const *mp, int nmp, float max_norm,
			 double *norm, char *err)
{
	if (reap(z, 1, err)) return -1;
	return grad_clip_global(z->k, z->g, z->shard_len, z->group, mp, nmp, max_norm, norm, err);
}

int zero3_clip_grad_norm_skip(struct zero3 *z, const struct decay_range *skip, int nskip,
			      struct comm *const *mp, int nmp, float max_norm, double *norm, char *err)
{
	if (reap(z, 1, err)) return -1;
	int r = comm_rank(z->group);
	double sq = 0;
	for (int i = 0; i < z->nu; i++) {
		const struct unit *u = &z->u[i];
		sq += grad_sq_skip(z->k, z->g + u->shard_off, u->flat_off + (size_t)r * u->sl, u->sl, skip, nskip);
	}
	return grad_clip_sq(z->k, z->g, z->shard_len, sq, z->group, mp, nmp, max_norm, norm, err);
}

int zero3_step(struct zero3 *z, char *err)
{
	for (int i = 0; i < z->nu; i++)
		if (z->u[i].full) return errf(err, "zero3: step while unit %d is still gathered", i);
	if (reap(z, 1, err)) return -1;
	z->step++;
	/* unit by unit, so decay follows the flat index of each real element; padding elements
	 * have zero gradient and stay zero (wd*0 = 0, m = v = 0) */
	size_t r = (size_t)comm_rank(z->group);
	for (int i = 0; i < z->nu; i++) {
		const struct unit *u = &z->u[i];
		size_t first = r * u->sl, real = first < u->n ? u->n - first : 0;
		if (real > u->sl) real = u->sl;
		size_t o = u->shard_off;
		adamw_apply_at(&z->opt, z->p + o, z->g + o, z->m + o, z->v + o, u->flat_off + first, real, z->step);
		struct adamw_cfg nodecay = z->opt;
		nodecay.decay = NULL;
		nodecay.wd = 0.0f;
		o += real;
		adamw_apply(&nodecay, z->p + o, z->g + o, z->m + o, z->v + o, u->sl - real, z->step);
	}
	kern_zero(z->k, z->g, z->shard_len * sizeof(float));
	return 0;
}

int zero3_state(struct zero3 *z, struct zero_state *st)
{
	st->p = z->p;
	st->m = z->m;
	st->v = z->v;
	st->n = z->shard_len;
	st->step = &z->step;
	return 0;
}

int zero3_unit_flat_off(const struct zero3 *z, int unit, size_t *flat_off, size_t *n)
{
	if (unit < 0 || unit >= z->nu) return -1;
	*flat_off = z->u[unit].flat_off;
	*n = z->u[unit].n;
	return 0;
}
