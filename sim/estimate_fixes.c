/* estimate_fixes — for a plan that does not fit, the plans one change away that do (what
 * `scaleplan sim` suggests under its table). Each candidate is the user's plan with a single
 * knob moved in the direction that saves memory, on the same GPUs and global batch: sequence
 * parallelism on, a heavier recompute mode, a higher ZeRO stage, a smaller micro-batch, or tp,
 * pp or cp doubled at half the dp. The search over every knob at once is `scaleplan tune`. */
#include <stdio.h>
#include "sim/estimate.h"
#include "sim/plan.h"
#include "sim/util.h"

/* prices q (a modified copy of the user's plan) and keeps it when it is valid and fits */
static void try_fix(const struct model *m, const struct hw *h, struct plan *q, const char *change,
		    struct plan_fix *out, int max, int *n)
{
	char err[ERR_LEN];
	struct estimate e;
	if (*n >= max || plan_resolve(q, m, h, err) || plan_validate(q, m, h, err) ||
	    estimate_plan(m, h, q, &e, err) || !e.fits)
		return;
	struct plan_fix *f = &out[(*n)++];
	snprintf(f->change, sizeof(f->change), "%s", change);
	f->peak_bytes = e.peak_mem_bytes;
	f->step_time_s = e.step_time_s;
	f->tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
}

/* one degree ('t', 'p' or 'c') doubled, dp halved; the layer split is redone when the
 * stages change, and TP stays inside a node */
static void try_degree(const struct model *m, const struct hw *h, const struct plan *p, char which,
		       struct plan_fix *out, int max, int *n)
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
	try_fix(m, h, &q, change, out, max, n);
}

int estimate_fixes(const struct model *m, const struct hw *h, const struct plan *p, struct plan_fix *out, int max)
{
	int n = 0;
	char change[64];
	struct plan q;
	if (p->tp > 1 && !p->sp) {
		q = *p;
		q.sp = 1;
		try_fix(m, h, &q, "--sp", out, max, &n);
	}
	if (p->recompute == RC_NONE) {
		q = *p;
		q.recompute = RC_SELECTIVE;
		try_fix(m, h, &q, "--recompute selective", out, max, &n);
	}
	if (p->recompute != RC_FULL || p->recompute_layers >= 0) {
		q = *p;
		q.recompute = RC_FULL;
		q.recompute_layers = -1;
		try_fix(m, h, &q, "--recompute full", out, max, &n);
	}
	for (int z = p->zero + 1; z <= 3 && p->dp * p->cp > 1; z++) {
		q = *p;
		q.zero = z;
		snprintf(change, sizeof(change), "--zero %d", z);
		try_fix(m, h, &q, change, out, max, &n);
	}
	for (int mbs = p->mbs / 2; mbs >= 1; mbs /= 2) {
		q = *p;
		q.mbs = mbs;
		snprintf(change, sizeof(change), "--mbs %d", mbs);
		try_fix(m, h, &q, change, out, max, &n);
	}
	try_degree(m, h, p, 't', out, max, &n);
	try_degree(m, h, p, 'p', out, max, &n);
	try_degree(m, h, p, 'c', out, max, &n);
	/* fastest first (insertion sort: a handful of entries) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && out[j].tokens_per_s_per_gpu > out[j - 1].tokens_per_s_per_gpu; j--) {
			struct plan_fix t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}
