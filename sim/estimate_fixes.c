/* estimate_fixes — for a plan that does not fit, the changes that lower its peak memory: what
 * `scaleplan sim` prints under its table and `scaleplan tune` under its closest plan, from this
 * one list. Each is the plan with one thing moved in the direction that saves memory: sequence
 * parallelism on, a heavier recompute mode, a higher ZeRO stage, a smaller micro-batch, tp, pp
 * or cp doubled at half the dp (same GPUs and global batch); then the resources: the fewest
 * doublings of the GPUs (dp, at ZeRO-3 with full recompute) that fit, or half the sequence at
 * the same tokens per batch. A
 * change is kept only when the plan parser accepts it and the estimate's peak is lower. The
 * search over every knob at once is `scaleplan tune`. */
#include <stdio.h>
#include "sim/estimate.h"
#include "sim/plan.h"
#include "sim/util.h"

struct fixes {
	const struct model *m;
	const struct hw *h;
	double peak_bytes;        /* the plan's own */
	struct plan_fix *out;
	int max, n;
};

/* prices q (a modified copy of the user's plan) and keeps it when it is valid and lowers the
 * peak; returns whether it fits */
static int try_fix(struct fixes *x, struct plan *q, const char *change)
{
	char err[ERR_LEN];
	struct estimate e;
	if (x->n >= x->max || estimate_prepared(x->m, x->h, q, &e, err) || !(e.peak_mem_bytes < x->peak_bytes))
		return 0;
	struct plan_fix *f = &x->out[x->n++];
	snprintf(f->change, sizeof(f->change), "%s", change);
	f->peak_bytes = e.peak_mem_bytes;
	f->capacity_bytes = e.capacity_bytes;
	f->step_time_s = e.step_time_s;
	f->tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
	f->fits = e.fits;
	return e.fits;
}

/* one degree ('t', 'p' or 'c') doubled, dp halved; the layer split is redone when the
 * stages change, and TP stays inside a node */
static void try_degree(struct fixes *x, const struct plan *p, char which)
{
	if (p->dp % 2) return;
	struct plan q = *p;
	int *d = which == 't' ? &q.tp : which == 'p' ? &q.pp : &q.cp;
	*d *= 2;
	q.dp /= 2;
	if (which == 'p') q.nstage_layers = 0;
	if (which == 't' && q.gpus_per_node > 0 && q.tp > q.gpus_per_node) return;
	char change[64];
	snprintf(change, sizeof(change), "--%s %d --dp %d", which == 't' ? "tp" : which == 'p' ? "pp" : "cp", *d, q.dp);
	try_fix(x, &q, change);
}

/* the knobs of the plan itself, on the same GPUs and global batch */
static void knob_fixes(struct fixes *x, const struct plan *p)
{
	char change[64];
	struct plan q;
	if (p->tp > 1 && !p->sp) {
		q = *p;
		q.sp = 1;
		try_fix(x, &q, "--sp");
	}
	if (p->recompute == RC_NONE) {
		q = *p;
		q.recompute = RC_SELECTIVE;
		try_fix(x, &q, "--recompute selective");
	}
	if (p->recompute != RC_FULL || p->recompute_layers >= 0) {
		q = *p;
		q.recompute = RC_FULL;
		q.recompute_layers = -1;
		try_fix(x, &q, "--recompute full");
	}
	for (int z = p->zero + 1; z <= 3; z++) {
		q = *p;
		q.zero = z;
		snprintf(change, sizeof(change), "--zero %d", z);
		try_fix(x, &q, change);
	}
	for (int mbs = p->mbs / 2; mbs >= 1; mbs /= 2) {
		q = *p;
		q.mbs = mbs;
		snprintf(change, sizeof(change), "--mbs %d", mbs);
		try_fix(x, &q, change);
	}
	try_degree(x, p, 't');
	try_degree(x, p, 'p');
	try_degree(x, p, 'c');
}

/* more GPUs: dp doubled, up to 64x, at ZeRO-3 with full recompute (the least memory the knobs
 * give), the fewest doublings that fit, the global batch raised to one micro-batch per replica
 * where it no longer divides; or half the sequence at the same tokens per batch */
static void resource_fixes(struct fixes *x, const struct plan *p)
{
	char change[64];
	struct plan q;
	for (int k = 2; k <= 64; k *= 2) {
		q = *p;
		q.dp = p->dp * k;
		q.gpus = p->gpus * k;
		q.zero = 3;
		q.recompute = RC_FULL;
		q.recompute_layers = -1;
		if (q.gbs % (q.dp * q.mbs)) q.gbs = q.dp * q.mbs;
		int n = snprintf(change, sizeof(change), "--gpus %d --dp %d", q.gpus, q.dp);
		if (q.gbs != p->gbs) n += snprintf(change + n, sizeof(change) - (size_t)n, " --gbs %d", q.gbs);
		if (p->zero != 3) n += snprintf(change + n, sizeof(change) - (size_t)n, " --zero 3");
		if (p->recompute != RC_FULL || p->recompute_layers >= 0)
			snprintf(change + n, sizeof(change) - (size_t)n, " --recompute full");
		int n0 = x->n;
		if (try_fix(x, &q, change) || k == 64) break;
		x->n = n0; /* only the first doubling that fits, or the last tried */
	}
	if (p->seq % 2 == 0) {
		q = *p;
		q.seq = p->seq / 2;
		q.gbs = p->gbs * 2;
		snprintf(change, sizeof(change), "--seq %d --gbs %d", q.seq, q.gbs);
		try_fix(x, &q, change);
	}
}

int estimate_fixes(const struct model *m, const struct hw *h, const struct plan *p, struct plan_fix *out, int max)
{
	char err[ERR_LEN];
	struct estimate e;
	if (estimate_plan(m, h, p, &e, err)) return 0;
	struct fixes x = {m, h, e.peak_mem_bytes, out, max, 0};
	knob_fixes(&x, p);
	resource_fixes(&x, p);
	/* the ones that fit first, fastest first; then the rest, lowest peak first */
	for (int i = 1; i < x.n; i++)
		for (int j = i; j > 0; j--) {
			const struct plan_fix *a = &out[j - 1], *b = &out[j];
			int before = b->fits != a->fits ? b->fits : b->fits ? b->tokens_per_s_per_gpu > a->tokens_per_s_per_gpu
									 : b->peak_bytes < a->peak_bytes;
			if (!before) break;
			struct plan_fix t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return x.n;
}
