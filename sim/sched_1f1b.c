/* sched_1f1b — the one-stage-per-rank schedules with fused backwards: AFAB (GPipe) and 1F1B
 * (reference/model.md §4.2-4.3). */
#include <math.h>
#include "sim/sched_impl.h"

/* AFAB / GPipe: all forwards, then all (fused) backwards [PB; MEG §2.2.1] */
static void gen_afab(struct sched_emit *e, const struct sched *s, int r, int *wq)
{
	(void)r; (void)wq;
	for (int j = 0; j < s->m; j++) sched_put(e, OP_F, j, 0, 0, 0);
	for (int j = 0; j < s->m; j++) sched_put(e, OP_BW, j, 0, 0, 0);
}

/* 1F1B: warm-up min(p-r-1, m) forwards, (F, B) pairs, cool-down backwards [MCODE-sched] */
static void gen_1f1b(struct sched_emit *e, const struct sched *s, int r, int *wq)
{
	(void)wq;
	int m = s->m, warm = sched_imin(s->pp - r - 1, m), f = 0, b = 0;
	while (f < warm) sched_put(e, OP_F, f++, 0, 0, 0);
	while (f < m) {
		sched_put(e, OP_F, f++, 0, 0, 0);
		sched_put(e, OP_BW, b++, 0, 0, 0);
	}
	while (b < m) sched_put(e, OP_BW, b++, 0, 0, 0);
}

/* AFAB holds every micro-batch; 1F1B p - r [MEG §2.2.1] */
static double inflight_afab(double pp, double v, int r, int mb, double w_ratio)
{
	(void)pp; (void)v; (void)r; (void)w_ratio;
	return mb;
}

static double inflight_1f1b(double pp, double v, int r, int mb, double w_ratio)
{
	(void)v; (void)w_ratio;
	return fmin(pp - r, mb);
}

/* fill and drain walk every stage once; steady state runs at the slowest stage [MEG §2.2.1] */
static double span_fill_drain(const struct sched_span_in *in, double *pp_exposed)
{
	double span = (in->mb - 1) * in->Tmax + in->sum;
	*pp_exposed = (2 * (in->pp - 1) + (in->overlap_p2p ? 0 : 2 * in->mb)) * in->t_p2p;
	return span + *pp_exposed;
}

const struct sched_family sched_row_afab = {
	.id = SCHED_AFAB, .name = "afab", .alias = "gpipe", .paper = "GPipe",
	.flags = SCHED_F_BLOCKING_P2P | SCHED_F_DOMINATED | SCHED_F_SPAN_SUMS,
	.ndirs = 1, .chunks = 1,
	.fw_name = {[SCHED_FW_TORCHTITAN] = "GPipe", [SCHED_FW_NANOTRON] = "afab"},
	.stage = sched_stage_rank, .locate = sched_locate_rank,
	.inflight = inflight_afab, .span = span_fill_drain, .gen = gen_afab,
};

const struct sched_family sched_row_1f1b = {
	.id = SCHED_1F1B, .name = "1f1b",
	.flags = SCHED_F_BLOCKING_P2P | SCHED_F_SPAN_SUMS,
	.ndirs = 1, .chunks = 1, .with_vpp = SCHED_INTERLEAVED,
	.fw_name = {[SCHED_FW_MEGATRON] = "1F1B", [SCHED_FW_TORCHTITAN] = "1F1B", [SCHED_FW_NANOTRON] = "1f1b",
		    [SCHED_FW_DEEPSPEED] = "1F1B"},
	.stage = sched_stage_rank, .locate = sched_locate_rank,
	.inflight = inflight_1f1b, .span = span_fill_drain, .gen = gen_1f1b,
};
