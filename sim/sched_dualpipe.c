/* sched_dualpipe — DualPipe (micro-batches enter from both ends; rank r holds stage r of one
 * direction and stage pp-1-r of the other) and DualPipeV (one direction folded into a V over
 * 2pp stages), with F and B of two micro-batches overlapped (reference/model.md §4.6). */
#include <math.h>
#include <string.h>
#include "sim/sched_impl.h"
#include "sim/util.h"

/* The eight steps of [DP-code dualpipe.py, dualpipev.py]. `phase` 0/1 is the code's chunk
 * phase; for DualPipe ranks in the second half swap phases so that chunk == direction. B ops
 * marked zb are input-only and queue their W in a FIFO that W ops pop. */
struct dual {
	struct sched_emit *e;
	int flip;          /* dualpipe second half: phase ^ 1 */
	int bidir;         /* dualpipe: chunk index is also the direction */
	int f[2], b[2];    /* next micro-batch per chunk */
	int *wq;           /* FIFO of chunk*mb_per_dir + mb */
	int wq_head, wq_tail, mbpd;
};

static void dual_f(struct dual *d, int phase, int overlap)
{
	int c = phase ^ d->flip;
	sched_put(d->e, OP_F, d->f[c]++, c, d->bidir ? c : 0, overlap);
}

static void dual_b(struct dual *d, int phase, int zb)
{
	int c = phase ^ d->flip;
	int mb = d->b[c]++;
	sched_put(d->e, zb ? OP_B : OP_BW, mb, c, d->bidir ? c : 0, 0);
	if (zb) d->wq[d->wq_tail++] = c * d->mbpd + mb;
}

static void dual_w(struct dual *d)
{
	int x = d->wq[d->wq_head++];
	int c = x / d->mbpd;
	sched_put(d->e, OP_W, x % d->mbpd, c, d->bidir ? c : 0, 0);
}

/* steps 4-5: the overlapped F&B pairs of the steady state, then the drain of chunk 1 */
static void dual_steady(struct dual *d, int half, int hr, int nmb, int middle)
{
	int main_steps = nmb - 2 * half + hr + 1;
	for (int i = 0; i < main_steps; i++) {
		if (i == 0 && middle) { /* not overlapped there, to shorten the bubble [DP-code] */
			dual_f(d, 0, 0);
			dual_b(d, 1, 0);
		} else {
			dual_f(d, 0, 1);
			dual_b(d, 1, 0);
		}
		dual_f(d, 1, 1);
		dual_b(d, 0, 0);
	}
	for (int i = 0; i < half - hr - 1; i++) {
		dual_b(d, 1, 0);
		dual_f(d, 1, 1);
		dual_b(d, 0, 0);
	}
}

/* half: ranks per half (DualPipe pp/2, DualPipeV pp); hr: the rank's distance from the edge;
 * nmb: micro-batches per direction (DualPipe) or in all (DualPipeV) */
static void gen_dual(struct dual *d, int half, int hr, int nmb, int middle)
{
	for (int i = 0; i < 2 * (half - hr - 1); i++) dual_f(d, 0, 0);
	for (int i = 0; i < hr + 1; i++) {
		dual_f(d, 0, 0);
		dual_f(d, 1, 0);
	}
	for (int i = 0; i < half - hr - 1; i++) {
		dual_b(d, 1, 1);
		dual_w(d);
		dual_f(d, 1, 0);
	}
	dual_steady(d, half, hr, nmb, middle);
	int s6 = hr + 1, zb = 0;
	for (int i = 0; i < s6; i++) {
		if (i == s6 / 2 && hr % 2 == 1) zb = 1;
		dual_b(d, 1, zb);
		if (i == s6 / 2 && hr % 2 == 0) zb = 1;
		dual_b(d, 0, zb);
	}
	for (int i = 0; i < half - hr - 1; i++) {
		dual_w(d);
		dual_b(d, 0, 1);
	}
	while (d->wq_head < d->wq_tail) dual_w(d);
}

/* the generator's state for one rank's op list */
static struct dual dual_init(struct sched_emit *e, const struct sched *s, int *wq)
{
	struct dual d;
	memset(&d, 0, sizeof(d));
	d.e = e;
	d.wq = wq;
	d.mbpd = s->mb_per_dir;
	return d;
}

static void gen_dualpipe(struct sched_emit *e, const struct sched *s, int r, int *wq)
{
	struct dual d = dual_init(e, s, wq);
	int half = s->pp / 2, hr = sched_imin(r, s->pp - 1 - r);
	d.flip = r >= half;
	d.bidir = 1;
	gen_dual(&d, half, hr, s->mb_per_dir, hr == half - 1);
}

static void gen_dualpipev(struct sched_emit *e, const struct sched *s, int r, int *wq)
{
	struct dual d = dual_init(e, s, wq);
	gen_dual(&d, s->pp, r, s->m, r == s->pp - 1);
}

/* DualPipe: direction 0 runs stage r on rank r, direction 1 stage pp-1-r; chunk = direction */
static int stage_dualpipe(int pp, int rank, int chunk, int dir)
{
	(void)chunk;
	return dir ? pp - 1 - rank : rank;
}

static void locate_dualpipe(int pp, int dir, int stage, int *rank, int *chunk)
{
	*chunk = dir;
	*rank = dir ? pp - 1 - stage : stage;
}

/* [DSV3 §3.2.1; DP-code dualpipe.py, dualpipev.py] */
static int pp_rule(const struct sched_family *f, int pp, char *err)
{
	if (pp % 2) return errf(err, "plan: %s needs an even pp (%d)", f->name, pp);
	return 0;
}

static int mb_rule(const struct sched_family *f, int pp, int mb, char *err)
{
	if (mb % 2) return errf(err, "plan: %s needs an even number of micro-batches (%d)", f->name, mb);
	if (mb < 2 * pp)
		return errf(err, "plan: %s needs at least %d micro-batches (2*pp), got %d", f->name, 2 * pp, mb);
	return 0;
}

static int gen_rule_dualpipe(const struct sched_family *f, int pp, int m, char *err)
{
	if (pp % 2) return errf(err, "%s: pp (%d) must be even", f->name, pp);
	if (m % 2) return errf(err, "%s: microbatches (%d) must be even (half per direction)", f->name, m);
	if (m < 2 * pp) return errf(err, "%s: microbatches (%d) must be at least 2*pp (%d)", f->name, m, 2 * pp);
	return 0;
}

static int gen_rule_dualpipev(const struct sched_family *f, int pp, int m, char *err)
{
	if (m < 2 * pp) return errf(err, "%s: microbatches (%d) must be at least 2*pp (%d)", f->name, m, 2 * pp);
	return 0;
}

/* PP+1 stage-units per device, a DualPipe rank = 2 stages [DSV3 Table 2]; DualPipeV PP + 1/2 */
static double inflight_dualpipe(double pp, double v, int r, int mb, double w_ratio)
{
	(void)v; (void)r; (void)w_ratio;
	return fmin((pp + 1) / 2, mb);
}

static double inflight_dualpipev(double pp, double v, int r, int mb, double w_ratio)
{
	(void)v; (void)r; (void)w_ratio;
	return fmin(pp + 0.5, mb);
}

/* (PP/2−1)(F&B + B − 3W), chunk = one of the rank's two stages, F&B = F + B_full
 * [DSV3 Table 2]; DualPipeV the same over pp ranks of two half-size chunks */
static double span_dualpipe(const struct sched_span_in *in, double *pp_exposed)
{
	double s = in->mb * in->Tmax + (in->pp / 2 - 1) * fmax(0, in->Fm + 2 * (in->Bm + in->Wm) - 3 * in->Wm);
	*pp_exposed = 2 * (in->pp - 1) * in->t_p2p;
	return s + *pp_exposed;
}

static double span_dualpipev(const struct sched_span_in *in, double *pp_exposed)
{
	double f = in->Fm / 2, bf = (in->Bm + in->Wm) / 2, ww = in->Wm / 2;
	double s = in->mb * in->Tmax + (in->pp - 1) * fmax(0, f + 2 * bf - 3 * ww);
	*pp_exposed = 4 * (in->pp - 1) * in->t_p2p;
	return s + *pp_exposed;
}

const struct sched_family sched_row_dualpipe = {
	.id = SCHED_DUALPIPE, .name = "dualpipe",
	.flags = SCHED_F_SPLIT_W | SCHED_F_EP_OVERLAP, .ndirs = 2, .chunks = 2, .fold_to = SCHED_DUALPIPEV,
	.stage = stage_dualpipe, .locate = locate_dualpipe,
	.pp_rule = pp_rule, .mb_rule = mb_rule, .gen_rule = gen_rule_dualpipe,
	.inflight = inflight_dualpipe, .span = span_dualpipe, .gen = gen_dualpipe,
};

const struct sched_family sched_row_dualpipev = {
	.id = SCHED_DUALPIPEV, .name = "dualpipev",
	.flags = SCHED_F_SPLIT_W | SCHED_F_EP_OVERLAP, .ndirs = 1, .chunks = 2,
	.fw_name = {[SCHED_FW_TORCHTITAN] = "DualPipeV"},
	.stage = sched_stage_v, .locate = sched_locate_v,
	.mb_rule = mb_rule, .gen_rule = gen_rule_dualpipev,
	.inflight = inflight_dualpipev, .span = span_dualpipev, .gen = gen_dualpipev,
};
