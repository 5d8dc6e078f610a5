/* dp — bucketed gradient reduction started from backward's ready marks. The gradients, the
 * shard and the accumulation scratch are the backend's memory (dp_cfg.k; without one, host
 * memory through a CPU backend of dp's own): the fills and the means run through it. */
#include <stdlib.h>
#include <string.h>
#include "runtime/dp.h"
#include "sim/util.h"

struct dp {
	struct comm *group;
	struct dp_cfg cfg;
	size_t nparams, padded, shard_len;
	int nb;
	struct dp_bucket *b;
	size_t *left;               /* per bucket: elements not yet marked ready */
	unsigned char *marked;      /* one bit per parameter: marked ready in this reduction */
	struct comm_req **req;      /* per bucket: in-flight collective */
	float *scratch;             /* accumulate mode: reduce-scatter lands here first */
	struct kern *k;             /* borrowed unless own_k */
	int own_k;
	/* one reduction */
	float *grads, *shard;
	int accumulate, armed;
	int next;                   /* next bucket to start, counting down */
};

size_t dp_default_bucket_params(int dp)
{
	size_t a = 40000000, b = (size_t)1000000 * (size_t)(dp > 0 ? dp : 1);
	return a > b ? a : b;
}

size_t dp_padded(const struct dp *d) { return d->padded; }
size_t dp_shard_len(const struct dp *d) { return d->shard_len; }
int dp_nbuckets(const struct dp *d) { return d->nb; }
const struct dp_bucket *dp_bucket(const struct dp *d, int i) { return i >= 0 && i < d->nb ? &d->b[i] : NULL; }
struct comm *dp_group(const struct dp *d) { return d->group; }
int dp_started(const struct dp *d) { return d->nb - 1 - d->next; }

int dp_create(struct comm *group, size_t nparams, const struct dp_cfg *cfg, struct dp **out, char *err)
{
	*out = NULL;
	int n = comm_size(group);
	if (nparams == 0) return errf(err, "dp: no parameters");
	struct dp *d = calloc(1, sizeof(*d));
	if (!d) return errf(err, "dp: out of memory");
	d->group = group;
	d->cfg = *cfg;
	d->nparams = nparams;
	d->k = cfg->k;
	if (!d->k) {
		if (kern_create(&d->k, &kern_cpu_ops, 0, err)) {
			free(d);
			return -1;
		}
		d->own_k = 1;
	}
	size_t bp = cfg->bucket_params ? cfg->bucket_params : dp_default_bucket_params(n);
	size_t unit = cfg->reduce_scatter ? (size_t)n : 1;
	bp = (bp + unit - 1) / unit * unit;
	d->nb = (int)((nparams + bp - 1) / bp);
	d->b = calloc((size_t)d->nb, sizeof(*d->b));
	d->left = calloc((size_t)d->nb, sizeof(*d->left));
	d->req = calloc((size_t)d->nb, sizeof(*d->req));
	d->marked = calloc(nparams / 8 + 1, 1);
	if (!d->b || !d->left || !d->req || !d->marked) {
		dp_destroy(d);
		return errf(err, "dp: out of memory for %d buckets", d->nb);
	}
	size_t off = 0;
	for (int i = 0; i < d->nb; i++) {
		size_t len = nparams - off < bp ? nparams - off : bp;
		len = (len + unit - 1) / unit * unit;
		d->b[i].off = off;
		d->b[i].len = len;
		d->b[i].shard_off = d->shard_len;
		d->shard_len += len / (size_t)n;
		off += len;
	}
	d->padded = off;
	if (!cfg->reduce_scatter) d->shard_len = 0;
	*out = d;
	return 0;
}

void dp_destroy(struct dp *d)
{
	if (!d) return;
	for (int i = 0; d->req && i < d->nb; i++) comm_wait(d->req[i], NULL);
	free(d->b);
	free(d->left);
	free(d->marked);
	free(d->req);
	if (d->k) kern_free(d->k, d->scratch);
	if (d->own_k) kern_destroy(d->k);
	free(d);
}

int dp_begin(struct dp *d, float *grads, float *shard, int accumulate, char *err)
{
	if (d->armed) return errf(err, "dp: dp_begin while a reduction is in flight");
	if (d->cfg.reduce_scatter && !shard) return errf(err, "dp: reduce-scatter needs a shard buffer");
	if (accumulate && d->cfg.reduce_scatter && !d->scratch) {
		d->scratch = kern_alloc(d->k, d->shard_len * sizeof(float));
		if (!d->scratch) return errf(err, "dp: out of memory for the accumulation buffer");
	}
	d->grads = grads;
	d->shard = shard;
	d->accumulate = accumulate && d->cfg.reduce_scatter;
	for (int i = 0; i < d->nb; i++) d->left[i] = d->b[i].len;
	memset(d->marked, 0, d->nparams / 8 + 1);
	/* padding counts as ready: nobody marks it */
	kern_zero(d->k, grads + d->nparams, (d->padded - d->nparams) * sizeof(float));
	d->left[d->nb - 1] -= d->padded - d->nparams;
	d->next = d->nb - 1;
	d->armed = 1;
	return 0;
}

static int start_bucket(struct dp *d, int i, char *err)
{
	const struct dp_bucket *b = &d->b[i];
	if (!d->cfg.reduce_scatter)
		return comm_iallreduce(d->group, d->grads + b->off, d->grads + b->off, b->len, COMM_F32,
				       &d->req[i], err);
	float *dst = (d->accumulate ? d->scratch : d->shard) + b->shard_off;
	return comm_ireduce_scatter(d->group, d->grads + b->off, dst, b->len / (size_t)comm_size(d->group),
				    COMM_F32, &d->req[i], err);
}

/* starts complete buckets in the fixed order, then lets the in-flight ones progress */
static int pump(struct dp *d, char *err)
{
	while (d->next >= 0 && d->left[d->next] == 0) {
		if (start_bucket(d, d->next, err)) return -1;
		d->next--;
	}
	for (int i = d->nb - 1; i > d->next; i--) {
		int done;
		if (d->req[i] && comm_test(d->req[i], &done, err)) return -1;
	}
	return 0;
}

/* Tests (set = 0: returns 1 if any bit of [a, b) is set) or sets the bits of [a, b): bit by
 * bit up to a byte boundary, then whole bytes, so a mark costs well under a ns per element */
static int mark(unsigned char *bits, size_t a, size_t b, int set)
{
	for (; a < b && (a & 7); a++) {
		if (!set && (bits[a >> 3] & (1u << (a & 7)))) return 1;
		if (set) bits[a >> 3] |= (unsigned char)(1u << (a & 7));
	}
	for (; a + 8 <= b; a += 8) {
		if (!set && bits[a >> 3]) return 1;
		if (set) bits[a >> 3] = 0xff;
	}
	for (; a < b; a++) {
		if (!set && (bits[a >> 3] & (1u << (a & 7)))) return 1;
		if (set) bits[a >> 3] |= (unsigned char)(1u << (a & 7));
	}
	return 0;
}

int dp_grad_ready(struct dp *d, size_t off, size_t count, char *err)
{
	if (!d->armed) return errf(err, "dp: gradient marked ready outside dp_begin/dp_finish");
	if (off > d->nparams || count > d->nparams - off)
		return errf(err, "dp: ready range [%zu, %zu) outside the %zu parameters", off, off + count,
			    d->nparams);
	if (mark(d->marked, off, off + count, 0))
		return errf(err, "dp: gradients in [%zu, %zu) marked ready twice", off, off + count);
	mark(d->marked, off, off + count, 1);
	while (count) {
		/* buckets are equal-sized except the last, so the bucket index is a division */
		int i = (int)(off / d->b[0].len);
		size_t end = d->b[i].off + d->b[i].len, k = end - off < count ? end - off : count;
		d->left[i] -= k;
		off += k;
		count -= k;
	}
	return pump(d, err);
}

int dp_finish(struct dp *d, char *err)
{
	if (!d->armed) return errf(err, "dp: dp_finish without dp_begin");
	int rc = 0;
	if (d->next >= 0) {
		size_t off = d->b[d->next].off;
		rc = errf(err, "dp: bucket %d (params from %zu) never complete: %zu gradients not marked ready",
			  d->next, off, d->left[d->next]);
	}
	for (int i = d->nb - 1; i > d->next; i--) {
		char e2[ERR_LEN];
		if (comm_wait(d->req[i], e2) && !rc) rc = errf(err, "%s", e2);
		d->req[i] = NULL;
	}
	d->armed = 0;
	if (rc) return rc;
	/* divide rather than multiply by 1/n: the mean is then correctly rounded for any n */
	float n = d->cfg.no_average ? 1.0f : (float)comm_size(d->group);
	const struct kern_ops *o = d->k->ops;
	if (!d->cfg.reduce_scatter) o->grad_div(d->k->state, d->grads, d->nparams, n);
	else if (d->accumulate) o->grad_add_div(d->k->state, d->shard, d->scratch, d->shard_len, n);
	else o->grad_div(d->k->state, d->shard, d->shard_len, n);
	return 0;
}
