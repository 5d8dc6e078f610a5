/* sched_interleaved — Megatron's interleaved 1F1B: vpp model chunks per rank, chunk c of rank r
 * is stage c*pp + r (reference/model.md §4.4). */
#include <math.h>
#include "sim/sched_impl.h"
#include "sim/util.h"

/* virtual micro-batch n runs chunk (n/p)%v on micro-batch (n/(p v))p + n%p, backwards with the
 * chunk order reversed [MCODE-sched] */
static void inter_op(struct sched_emit *e, int kind, int n, int p, int v)
{
	int c = (n / p) % v;
	int mb = (n / (p * v)) * p + n % p;
	sched_put(e, kind, mb, kind == OP_F ? c : v - 1 - c, 0, 0);
}

/* warm-up 2(p-r-1)+(v-1)p chunk-ops, then (F, B) pairs, then the cool-down backwards */
static void gen_interleaved(struct sched_emit *e, const struct sched *s, int r, int *wq)
{
	(void)wq;
	int p = s->pp, v = s->chunks, total = s->m * v;
	int warm = sched_imin(2 * (p - r - 1) + (v - 1) * p, total);
	int f = 0, b = 0;
	while (f < warm) inter_op(e, OP_F, f++, p, v);
	while (f < total) {
		inter_op(e, OP_F, f++, p, v);
		inter_op(e, OP_BW, b++, p, v);
	}
	while (b < total) inter_op(e, OP_BW, b++, p, v);
}

static int stage_interleaved(int pp, int rank, int chunk, int dir)
{
	(void)dir;
	return chunk * pp + rank;
}

static void locate_interleaved(int pp, int dir, int stage, int *rank, int *chunk)
{
	(void)dir;
	*rank = stage % pp;
	*chunk = stage / pp;
}

/* Megatron's interleaved order groups micro-batches by pp [MEG §2.2.2] */
static int mb_rule(const struct sched_family *f, int pp, int mb, char *err)
{
	if (mb % pp)
		return errf(err, "plan: %s schedule needs micro-batches (%d) to be a multiple of pp (%d)", f->name, mb, pp);
	return 0;
}

static int gen_rule(const struct sched_family *f, int pp, int m, char *err)
{
	if (m % pp) return errf(err, "%s: pp (%d) does not divide microbatches (%d)", f->name, pp, m);
	return 0;
}

/* warm-up 2(p−r−1)+(v−1)p chunk-ops, +1 [MCODE-sched, TV-G3] */
static double inflight(double pp, double v, int r, int mb, double w_ratio)
{
	(void)w_ratio;
	double lim = mb;
	return fmin(lim * v, 2 * (pp - r - 1) + (v - 1) * pp + 1) / v;
}

/* bubble (p−1)/(v·m) [MEG §2.2.2]; overlapped P2P (Megatron overlap_p2p_comm) waits only on
 * the fill and drain chains, blocking P2P on every send and receive */
static double span(const struct sched_span_in *in, double *pp_exposed)
{
	double s = in->mb * in->Tmax + (in->sum / in->np) * (in->pp - 1) / in->v;
	*pp_exposed = (2 * (in->pp - 1) + (in->overlap_p2p ? 0 : 2 * in->mb * in->v)) * in->t_p2p;
	return s + *pp_exposed;
}

const struct sched_family sched_row_interleaved = {
	.id = SCHED_INTERLEAVED, .name = "interleaved",
	.flags = SCHED_F_VIRTUAL | SCHED_F_BLOCKING_P2P | SCHED_F_EVEN_SPLIT,
	.ndirs = 1,
	.fw_name = {[SCHED_FW_MEGATRON] = "interleaved", [SCHED_FW_TORCHTITAN] = "Interleaved1F1B"},
	.stage = stage_interleaved, .locate = locate_interleaved,
	.mb_rule = mb_rule, .gen_rule = gen_rule,
	.inflight = inflight, .span = span, .gen = gen_interleaved,
};
