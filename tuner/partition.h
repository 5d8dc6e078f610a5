/* partition — which layers go on which pipeline stage, for layers that are not all alike
 * (embedding on the first stage, LM head and loss on the last, dense layers ahead of MoE
 * layers, layer counts that do not divide evenly). Two solvers:
 *
 *   partition_dp    contiguous split minimising the slowest stage, exact, O(S·L²)
 *                   (the inter-op DP of Alpa and Galvatron; reference/ecosystem.md §7.2);
 *   partition_dp_capped  the same under each stage's memory cap, with the first r layers of
 *                   every stage fully recomputed (one recompute count per stage, the form a
 *                   plan and Megatron's --recompute-method block express), exact, O(S·L²);
 *   partition_milp  the coupled choice of layers per stage *and* which layers are fully
 *                   recomputed, under each stage's memory cap (GLPK branch and cut on a
 *                   "staircase" formulation, §7.1), minimising the slowest stage's
 *                   compute + recompute time.
 *
 * Units: seconds and bytes, as the caller gives them (per micro-batch or per step — only
 * ratios matter). Ownership: the caller owns every array; nothing is kept.
 *
 * Invariant: a returned split is contiguous, gives every stage at least one layer, and sums
 * to nlayers; stage s's time is stage_s[s] + Σ time_s of its layers (+ recompute_s of its
 * recomputed layers), and its memory stage_bytes[s] + Σ weight_bytes + inflight[s]·Σ act
 * (ckpt_bytes instead of act_bytes for recomputed layers). */
#ifndef SCALEPLAN_PARTITION_H
#define SCALEPLAN_PARTITION_H

struct part_problem {
	int nlayers, nstages;
	const double *time_s;        /* [nlayers] forward + backward time of each layer */
	const double *stage_s;       /* [nstages] fixed time per stage (embedding, head); NULL = 0 */
	/* partition_milp only */
	const double *recompute_s;   /* [nlayers] extra time when the layer is fully recomputed */
	const double *weight_bytes;  /* [nlayers] model states held for the layer */
	const double *act_bytes;     /* [nlayers] activations kept per micro-batch, no recompute */
	const double *ckpt_bytes;    /* [nlayers] kept per micro-batch under full recompute */
	const double *inflight;      /* [nstages] micro-batches in flight at the stage's peak */
	const double *stage_bytes;   /* [nstages] fixed bytes per stage; NULL = 0 */
	const double *cap_bytes;     /* [nstages] memory capacity per stage */
};

enum part_status { PART_OPTIMAL, PART_FEASIBLE, PART_INFEASIBLE };

struct part_result {
	int *counts;        /* [nstages] caller-provided: layers per stage */
	int *recompute;     /* [nlayers] caller-provided (milp only; may be NULL for dp): 1 = recompute */
	double max_stage_s; /* the objective */
	enum part_status status;
};

/* Exact min-max contiguous split (no memory). Returns 0, or -1 with err when nstages is not in
 * 1..nlayers. */
int partition_dp(const struct part_problem *pb, struct part_result *r, char *err);

/* Exact min-max contiguous split under the memory caps, recomputing the first rc_layers
 * layers of each stage (-1: all; stages with fewer layers recompute all of theirs). Uses every
 * field partition_milp uses. No split fits: returns 0 with status PART_INFEASIBLE. r->recompute
 * (if not NULL) receives the recomputed layers. Returns -1 with err on a malformed problem. */
int partition_dp_capped(const struct part_problem *pb, int rc_layers, struct part_result *r, char *err);

/* Time of every stage of a given split and recompute choice (recompute may be NULL);
 * returns the slowest. */
double partition_stage_time(const struct part_problem *pb, const int *counts, const int *recompute,
			    double *stage_out);
/* Memory of stage s for a given split and recompute choice (recompute may be NULL). */
double partition_stage_bytes(const struct part_problem *pb, const int *counts, const int *recompute, int s);

/* MILP; time_limit_s bounds GLPK's search (status PART_FEASIBLE if it stopped early with a
 * solution). No split that fits every cap: returns 0 with status PART_INFEASIBLE. Returns -1
 * with err on a malformed problem or a solver failure. */
int partition_milp(const struct part_problem *pb, double time_limit_s, struct part_result *r, char *err);

#endif
