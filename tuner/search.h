/* search — the tuner: enumerates every plan for (model, cluster, batch) — each factorization of
 * the GPUs into dp·tp·pp·cp, EP inside dp·cp for MoE models, ZeRO 0–3, SP on/off, recompute
 * none / selective / full / full on half of each stage's layers, micro-batch 1, 2, 4, 8, every
 * pipeline schedule (interleaved with every v <= 8 that splits the layers evenly, or with every
 * v <= 8 on an uneven split where none does, e.g. 61 layers), and rank
 * orders tp-cp-dp-pp, tp-cp-pp-dp (pp > 1) and tp-dp-cp-pp (cp > 1), all keeping TP innermost
 * — prices each with the analytical estimator, and ranks them. The top K are re-timed with
 * the event engine. Every candidate not priced is counted under a reason.
 *
 * Pruning that skips the estimator (each counted, each checked against brute force in
 * tests/test_search.c): (0) a lower bound on model-state bytes per GPU (parameters spread
 * evenly over tp·pp (experts over ep·tp·pp), ZeRO over dp·cp, mixed-precision Adam's
 * 2+2+12 bytes [ZERO §5]) above the capacity; (1) at fixed everything else, more recompute only adds time, so once
 * a recompute mode fits, modes that recompute a superset of its work are "dominated";
 * (2) a larger micro-batch never needs less memory, so once no recompute mode fits at
 * micro-batch b, larger ones are rejected for memory without pricing.
 *
 * Ownership: search_run fills a caller-owned result whose arrays it allocates;
 * search_result_free releases them. Units: seconds, bytes, tokens.
 *
 * Partitioning (tuner/partition.h): every finalist with pp > 1 also gets a layer-to-stage
 * split balanced for time (exact DP over per-layer costs read off the estimator: a dense
 * layer, a MoE layer, the embedding's share of the first stage, the LM head and loss on the
 * last; then, where a rank holds several stages, single-layer moves that lower the slowest
 * rank). Where memory binds (full recompute, or the balanced split does not fit) and each rank
 * holds one stage, the layers per stage and the recompute count per stage are chosen under
 * each stage's cap by an exact capped DP for every count, and on small problems (layers x
 * stages <= 96) by the GLPK MILP choosing layer by layer, its largest per-stage count becoming
 * the plan's. A split (and the recompute it implies) replaces the default only when the
 * re-estimated plan fits and is faster, so a partitioned finalist is never slower than its
 * default form; when the top K are re-timed, the default form is re-timed too and the faster
 * of the two is kept. When nothing fits, the closest plan is partitioned the same way and, if
 * a split makes it fit, becomes the one finalist (moved from the memory rejections to
 * feasible).
 *
 * Invariant: enumerated == feasible + Σ rejected[...] (memory, pruned and dominated plans
 * included); the top list is sorted best first by the objective. */
#ifndef SCALEPLAN_SEARCH_H
#define SCALEPLAN_SEARCH_H

#include <stdio.h>
#include "sim/plan.h"
#include "sim/estimate.h"

struct model;
struct hw;

enum objective {
	OBJ_THROUGHPUT, /* max tokens/s on exactly `gpus` GPUs */
	OBJ_COST,       /* max tokens/s per GPU (min GPU-hours per token) on gpus, gpus/2, ... */
	OBJ_TIME        /* max tokens/s on any of gpus, gpus/2, ... */
};

enum reject_reason {
	REJ_TP_NODE,     /* tp larger than a node */
	REJ_TP_SHAPE,    /* tp does not divide heads / kv heads / vocab / ffn */
	REJ_CP_SEQ,      /* 2*cp does not divide seq */
	REJ_SP_SEQ,      /* tp does not divide seq/cp under SP */
	REJ_LAYERS,      /* more pipeline stages than layers */
	REJ_EXPERTS,     /* ep does not divide experts or dp*cp */
	REJ_BATCH,       /* dp*mbs does not divide the global batch */
	REJ_SCHEDULE,    /* the schedule's micro-batch rules */
	REJ_OTHER,       /* another plan rule (plan_validate) or an estimator error */
	REJ_MEMORY,      /* priced and does not fit */
	REJ_MEMORY_STATES, /* not priced: weights+grads+optimizer alone exceed the capacity */
	REJ_MEMORY_MBS,  /* not priced: a smaller micro-batch already did not fit */
	REJ_DOMINATED,   /* not priced: less recompute already fits */
	REJ_COUNT
};

/* Pinned values (--fix k=v); -1 leaves the dimension free. */
struct search_fix {
	int dp, tp, pp, cp, ep, vpp, zero, sp, recompute, recompute_layers, mbs, schedule, order;
};

struct search_req {
	const struct model *m;
	const struct hw *h;
	struct plan base;          /* model/gpu names, precision, overlaps, ... (from --fix too) */
	int gpus, seq, gbs;        /* gbs in sequences */
	int top;                   /* K finalists */
	enum objective objective;
	int max_pp;                /* 0 = no limit */
	struct search_fix fix;
	int refine;                /* re-time the top K with the event engine */
	int exhaustive;            /* price everything (no pruning): for tests */
	void (*progress)(void *ctx, double fraction);
	void *progress_ctx;
};

/* One priced plan, compact (the full plan is rebuilt with search_cand_plan). */
struct search_cand {
	int gpus, dp, tp, pp, cp, ep, vpp, zero, sp, recompute, recompute_layers, mbs, schedule, order;
	int etp;                   /* expert TP: tp, or 1 when ep folds over tp ranks (0 = tp) */
	double step_s, tokens_per_s, tokens_per_s_per_gpu, mfu, peak_bytes, capacity_bytes;
	double bubble_fraction, exposed_comm_s;
	double analytic_step_s;    /* before refinement */
	double score;              /* higher is better, by the objective */
	int fits, refined;
	/* explicit layer-to-stage split (finalists only; NULL = the plan's balanced default);
	 * owned by the result (search_result_free) */
	int *stage_layers;
	int nstage_layers;
	int partitioned;           /* 0 default split; 1 time-balanced DP; 2 memory-capped DP with a
				    * recompute count; 3 MILP */
	double uniform_step_s;     /* analytical step time with the default split */
	double uniform_refined_step_s; /* event-engine step with the default split (partitioned
				    * and refined finalists; else 0) */
	int src;                   /* finalists: index of the default form in all[]; else 0 */
};

struct search_result {
	long enumerated, evaluated, feasible;
	long rejected[REJ_COUNT];
	double seconds, plans_per_s; /* enumerated per second of search */
	struct search_cand *top;   /* best first */
	int ntop;
	struct search_cand *all;   /* every feasible plan, unordered */
	int nall;
	struct search_cand closest;/* when nothing fits: the plan with the least memory excess */
	int have_closest;
	int refined;               /* the top list was re-timed with the event engine */
	int rescued;               /* nothing fit with default splits; the closest plan fits with a
				    * partitioned split and is the one finalist */
};

void search_fix_init(struct search_fix *f);
/* Applies "key=value": an enumerated dimension is pinned, any other plan key is set on base. */
int search_fix_parse(struct search_req *rq, const char *kv, char *err);

int search_run(const struct search_req *rq, struct search_result *res, char *err);
void search_result_free(struct search_result *res);

/* The time-balanced contiguous split of a candidate's layers over its pipeline stages (the
 * DP of tuner/partition.h on per-layer costs read off the estimator; where a rank holds several
 * stages — interleaved, zb-v, dualpipe, dualpipev — then single-layer moves across stage
 * boundaries while they lower the slowest rank): counts[0..*nstages); *max_stage_s the slowest
 * pipeline rank's per-micro-batch F+B+W in that cost model. counts holds PLAN_MAX_STAGES
 * entries. Returns 0, or -1 with err (pp 1, too few layers to probe). */
int search_split(const struct search_req *rq, const struct search_cand *k, int *counts, int *nstages,
		 double *max_stage_s, char *err);

/* The full plan of a candidate (resolved and validated). */
int search_cand_plan(const struct search_req *rq, const struct search_cand *c, struct plan *p, char *err);

/* Output (tuner/search_report.c). The request's names (model, gpu) come from rq->base. */
struct search_out {
	double tokens;             /* training tokens for time and cost lines; 0 = none */
	double price;              /* $ per GPU-hour; 0 = none */
	long tune_id;              /* store id, 0 = not recorded */
};
/* Human text: counts and reasons, ranked table, why the winner wins, best plan of each other
 * shape, or (nothing fits) the closest plan and what would make it fit. */
void search_print(const struct search_req *rq, const struct search_result *res,
		  const struct search_out *o, FILE *f);
void search_write_json(const struct search_req *rq, const struct search_result *res,
		       const struct search_out *o, FILE *f);
/* DIR/report.md and DIR/report.html (DIR is created if absent). */
int search_write_report(const struct search_req *rq, const struct search_result *res,
			const struct search_out *o, const char *dir, char *err);

const char *search_reason_name(enum reject_reason r);
const char *search_order_name(int order);
const char *objective_name(enum objective o);

#endif
