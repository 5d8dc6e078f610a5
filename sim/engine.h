/* engine — discrete-event simulation of one training step of a pipeline schedule: walks the
 * schedule's per-rank op lists (sim/schedule.h) with the rules of reference/model.md §4.8 —
 * each rank runs its ops strictly in order on one compute stream, and an op starts at
 *   max(end of the previous op on the stream, end of its cross-stage dependency + p2p time).
 * Optional extras on their own streams per rank: point-to-point sends, DP gradient reduction in
 * buckets once a stage's last weight gradient is produced (overlapping the rest of the
 * backward), ZeRO-3 parameter all-gathers ahead of each op (with prefetch), and the optimizer
 * step at the end (then, optionally, the ZeRO-1/2 parameter all-gather). Activation memory is allocated at F and released at B (M_B - M_W) and W
 * (M_W), so the memory over time of every rank is exact for the given sizes.
 *
 * Units: durations in whatever unit the caller uses (the simulator uses seconds), bytes as
 * given. Ownership: engine_run() fills a caller-owned result whose arrays it allocates;
 * engine_result_free() releases them. The cost tables are only read.
 *
 * Invariant: a schedule either completes (every op runs once) or engine_run() fails with a
 * message naming the rank and op that can never start (deadlock). */
#ifndef SCALEPLAN_ENGINE_H
#define SCALEPLAN_ENGINE_H

#include <stddef.h>
#include "sim/schedule.h"
#include "sim/timeline.h"

/* Durations per pipeline stage (arrays of sched->nstages entries, stage order of
 * sched_stage()). Only t_f and t_b are required; every other pointer may be NULL. */
struct engine_costs {
	const double *t_f;          /* forward of one micro-batch */
	const double *t_b;          /* input-gradient backward; a fused BW takes t_b + t_w */
	const double *t_w;          /* weight-gradient backward */
	const double *t_fb;         /* overlapped F&B pair, by the forward's stage; <= 0: sum of both */
	const double *p2p;          /* p2p[s]: send between stage s and s+1 (nstages-1 entries);
				     * 0 between chunks on the same rank */
	int p2p_blocking;           /* 1: a send holds its rank's compute stream until it ends (not
				     * overlapped with the next op); 0: it runs on its own stream */
	const double *op_time;      /* measured override per op (indexed like sched->ops); < 0: tables.
				     * For an overlapped pair the first op's entry is the pair's time */
	const double *m_b_bytes;    /* activations one F keeps until its B; NULL: 1 per chunk op */
	const double *m_w_bytes;    /* the part still held after B until W; NULL: 0 */
	const double *dp_reduce;    /* gradient reduce-scatter/all-reduce of the stage; NULL: none */
	int dp_buckets;             /* buckets per stage, >= 1 (0 means 1) */
	int dp_every_mb;            /* 1: reduce after every gradient op of the stage (ZeRO-2/3,
				     * dp_reduce is then one micro-batch's share); 0: once per step */
	int dp_blocking;            /* 1: the rank's next op waits for the reduction (not
				     * overlapped with compute); 0: it runs on its own stream */
	const double *param_gather; /* ZeRO-3 all-gather of the stage's params; NULL: none */
	int gather_every_op;        /* 1: before every F/B/BW; 0: only when the chunk changes */
	int gather_prefetch;        /* 1: issued when the previous op starts; 0: when it ends */
	const int *gather_layers;   /* per stage: the gather streams layer by layer, so an op waits
				     * only for the first layer's share and ends no earlier than one
				     * layer of compute after the gather; NULL: all before the op */
	const double *opt;          /* optimizer step of the stage's params; NULL: none */
	const double *opt_gather;   /* parameter all-gather after the optimizer on the DP stream
				     * (ZeRO-1/2 without overlap); NULL: none */
	int no_timeline;            /* 1: record no events, only the per-rank results (faster) */
};

struct engine_rank {
	double start, end;          /* first compute op's start, last compute op's end */
	double span;                /* end - start */
	double busy;                /* compute time (an overlapped pair counts once) */
	double bubble_fraction;     /* (span - busy) / busy: bubble over ideal [MEG §2.2.1] */
	double bubble_rate;         /* (span - busy) / span [ZB §5.3] */
	double step_end;            /* after gradient reduction and optimizer */
	double peak_act_bytes;      /* peak of activation bytes held */
	int peak_inflight;          /* peak chunk activations held (F done, B not yet) */
};

struct engine_result {
	struct timeline tl;
	int nranks;
	struct engine_rank *rank;   /* nranks entries */
	double cost;                /* largest span over ranks [ZB §5.3] */
	double step;                /* last event end: pipeline + exposed DP tail + optimizer */
	double bubble_rate;         /* max over ranks of their bubble_rate [ZB §5.3] */
	double bubble_fraction;     /* max over ranks of their bubble_fraction [MEG §2.2.1] */
	int max_inflight;
	double max_act_bytes;
	size_t nops;                /* compute ops simulated */
};

/* Simulates one step. Returns 0, or -1 with err (bad cost table, deadlock, out of memory);
 * on failure `out` holds nothing to free. */
int engine_run(const struct sched *s, const struct engine_costs *c, struct engine_result *out,
	       char *err);
void engine_result_free(struct engine_result *r);

#endif
