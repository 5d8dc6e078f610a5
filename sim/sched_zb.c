/* sched_zb — the zero-bubble schedules, whose backward is split into B (input gradients) and W
 * (weight gradients): ZB-H1, ZB-H2, and ZB-V with two chunks per rank in a V
 * (reference/model.md §4.5). */
#include <math.h>
#include "sim/sched_impl.h"
#include "sim/util.h"

/* ZB-H1 / ZB-H2: 1F1B-like F/B order with input-only B; the W of a finished B waits in a FIFO
 * and runs while more than `lag` are pending (lag r for H1, 2r for H2); H2 warms up with
 * 2(p-r)-2 forwards [ZB §2.1-2.2; model.md §4.5] */
static void gen_zbh(struct sched_emit *e, int p, int m, int r, int h2)
{
	int warm = sched_imin(h2 ? 2 * (p - r) - 2 : p - r - 1, m);
	int lag = h2 ? 2 * r : r;
	int f = 0, b = 0, w = 0;
	while (f < warm) sched_put(e, OP_F, f++, 0, 0, 0);
	while (b < m) {
		if (f < m) sched_put(e, OP_F, f++, 0, 0, 0);
		sched_put(e, OP_B, b++, 0, 0, 0);
		while (b - w > lag) sched_put(e, OP_W, w++, 0, 0, 0);
	}
	while (w < m) sched_put(e, OP_W, w++, 0, 0, 0);
}

static void gen_zbh1(struct sched_emit *e, const struct sched *s, int r, int *wq)
{
	(void)wq;
	gen_zbh(e, s->pp, s->m, r, 0);
}

static void gen_zbh2(struct sched_emit *e, const struct sched *s, int r, int *wq)
{
	(void)wq;
	gen_zbh(e, s->pp, s->m, r, 1);
}

/* ZB-V: 2p chunks in a V, rank r holds stages r and 2p-1-r. Warm-up 2(p-r)-1 F of chunk 0,
 * r x (F1, F0), p-r x (F1 B1 W1); steady (F0 B0 W0 F1 B1 W1); cool-down r x (B0 B1),
 * p-r x (B0 W0), then the remaining W [ZB §6; model.md §4.5]. The order is laid out for
 * max(m, 2p-1) micro-batches and ops of micro-batches >= m are dropped. */
struct vstate {
	struct sched_emit *e;
	int m;
};

static void vput(struct vstate *v, int kind, int mb, int chunk)
{
	if (mb < v->m) sched_put(v->e, kind, mb, chunk, 0, 0);
}

static void zbv_cooldown(struct vstate *v, int p, int r, int b0, int b1)
{
	int w0 = b0, w1 = b1;
	for (int i = 0; i < r; i++) {
		vput(v, OP_B, b0++, 0);
		vput(v, OP_B, b1++, 1);
	}
	for (int i = 0; i < p - r; i++) {
		vput(v, OP_B, b0++, 0);
		vput(v, OP_W, w0++, 0);
	}
	while (w1 < b1) vput(v, OP_W, w1++, 1);
	while (w0 < b0) vput(v, OP_W, w0++, 0);
}

static void gen_zbv(struct sched_emit *e, const struct sched *s, int r, int *wq)
{
	(void)wq;
	int p = s->pp, m = s->m;
	struct vstate v = {e, m};
	int n = m > 2 * p - 1 ? m : 2 * p - 1;
	int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
	for (int i = 0; i < 2 * (p - r) - 1; i++) vput(&v, OP_F, f0++, 0);
	for (int i = 0; i < r; i++) {
		vput(&v, OP_F, f1++, 1);
		vput(&v, OP_F, f0++, 0);
	}
	for (int i = 0; i < p - r; i++) {
		vput(&v, OP_F, f1++, 1);
		vput(&v, OP_B, b1, 1);
		vput(&v, OP_W, b1++, 1);
	}
	while (f1 < f0 || f0 < n) {
		if (f0 < n) vput(&v, OP_F, f0++, 0);
		vput(&v, OP_B, b0, 0);
		vput(&v, OP_W, b0++, 0);
		vput(&v, OP_F, f1++, 1);
		vput(&v, OP_B, b1, 1);
		vput(&v, OP_W, b1++, 1);
	}
	zbv_cooldown(&v, p, r, b0, b1);
}

int sched_stage_v(int pp, int rank, int chunk, int dir)
{
	(void)dir;
	return chunk ? 2 * pp - 1 - rank : rank;
}

void sched_locate_v(int pp, int dir, int stage, int *rank, int *chunk)
{
	(void)dir;
	*chunk = stage >= pp;
	*rank = *chunk ? 2 * pp - 1 - stage : stage;
}

static int zbv_mb_rule(const struct sched_family *f, int pp, int mb, char *err)
{
	if (mb < pp) return errf(err, "plan: %s needs at least pp (%d) micro-batches, got %d", f->name, pp, mb);
	return 0;
}

/* (p−r)·M_B + r·M_W [ZB §2.3]; H2 (2p−2r−1)·M_B + 2r·M_W; ZB-V p·M_B, balanced [ZB §6] */
static double inflight_zbh1(double pp, double v, int r, int mb, double w_ratio)
{
	(void)v;
	double lim = mb;
	return fmin(pp - r, lim) + fmin(r, lim) * w_ratio;
}

static double inflight_zbh2(double pp, double v, int r, int mb, double w_ratio)
{
	(void)v;
	double lim = mb;
	return fmin(2 * pp - 2 * r - 1, lim) + fmin(2 * r, lim) * w_ratio;
}

static double inflight_zbv(double pp, double v, int r, int mb, double w_ratio)
{
	(void)v; (void)r; (void)w_ratio;
	return fmin(pp, mb);
}

/* (p−1)(F+B−W) [ZB Table 2]; H2 (p−1)(F+B−2W); ZB-V half of H2's over 2p chunks [ZB §6] */
static double span_zbh1(const struct sched_span_in *in, double *pp_exposed)
{
	double s = in->mb * in->Tmax + (in->pp - 1) * fmax(0, in->Fm + in->Bm - in->Wm);
	*pp_exposed = (2 * (in->pp - 1) + in->mb) * in->t_p2p;
	return s + *pp_exposed;
}

static double span_zbh2(const struct sched_span_in *in, double *pp_exposed)
{
	double s = in->mb * in->Tmax + (in->pp - 1) * fmax(0, in->Fm + in->Bm - 2 * in->Wm);
	*pp_exposed = (2 * (in->pp - 1) + in->mb) * in->t_p2p;
	return s + *pp_exposed;
}

static double span_zbv(const struct sched_span_in *in, double *pp_exposed)
{
	double s = in->mb * in->Tmax + (in->pp - 1) * fmax(0, in->Fm + in->Bm - 2 * in->Wm) / 2;
	*pp_exposed = (4 * (in->pp - 1) + in->mb) * in->t_p2p;
	return s + *pp_exposed;
}

const struct sched_family sched_row_zbh1 = {
	.id = SCHED_ZBH1, .name = "zb-h1", .paper = "zero-bubble",
	.flags = SCHED_F_SPLIT_W, .ndirs = 1, .chunks = 1,
	.stage = sched_stage_rank, .locate = sched_locate_rank,
	.inflight = inflight_zbh1, .span = span_zbh1, .gen = gen_zbh1,
};

const struct sched_family sched_row_zbh2 = {
	.id = SCHED_ZBH2, .name = "zb-h2", .paper = "zero-bubble",
	.flags = SCHED_F_SPLIT_W, .ndirs = 1, .chunks = 1,
	.stage = sched_stage_rank, .locate = sched_locate_rank,
	.inflight = inflight_zbh2, .span = span_zbh2, .gen = gen_zbh2,
};

const struct sched_family sched_row_zbv = {
	.id = SCHED_ZBV, .name = "zb-v", .paper = "zero-bubble",
	.flags = SCHED_F_SPLIT_W, .ndirs = 1, .chunks = 2,
	.fw_name = {[SCHED_FW_TORCHTITAN] = "ZBVZeroBubble"},
	.stage = sched_stage_v, .locate = sched_locate_v, .mb_rule = zbv_mb_rule,
	.inflight = inflight_zbv, .span = span_zbv, .gen = gen_zbv,
};
