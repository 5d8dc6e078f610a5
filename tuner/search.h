/* search — the tuner: enumerates every plan for (model, cluster, batch) — each factorization of
 * the GPUs into dp·tp·pp·cp, EP inside dp·cp for MoE models, ZeRO 0–3, SP on/off, recompute
 * none / selective / full / full on half of each stage's layers, micro-batch 1, 2, 4, 8, every
 * pipeline schedule (interleaved with every v <= 8 that splits the layers evenly, or with every
 * v <= 8 on an uneven split where none does, e.g. 61 layers), rank orders tp-cp-dp-pp,
 * tp-cp-pp-dp (pp > 1) and tp-dp-cp-pp (cp > 1), all keeping TP innermost, and the overlap
 * switches that apply to the plan (gradient reduction with dp·cp > 1, parameter gathers with
 * ZeRO >= 1, TP communication with SP or the TP backward alone, pipeline sends of the AFAB,
 * 1F1B and interleaved schedules) — prices
 * each with the analytical estimator, and ranks them. Every figure the tuner reports is the
 * analytical estimate's (the model `make validate` scores), so `scaleplan sim` of a plan gives
 * the same number. Every candidate not priced is counted under a reason.
 *
 * Pruning that skips the estimator (each counted, each checked against brute force or the
 * exhaustive search in tests/test_search.c): (0) a lower bound on model-state bytes per GPU
 * (parameters spread evenly over tp·pp (experts over ep·tp·pp), ZeRO over dp·cp,
 * mixed-precision Adam's 2+2+12 bytes [ZERO §5]) above the capacity; (1) at fixed everything
 * else, more recompute only adds time, so once a recompute mode fits, modes that recompute a
 * superset of its work are "dominated"; (2) a larger micro-batch never needs less memory, so
 * once no recompute mode fits at micro-batch b, larger ones are rejected for memory without
 * pricing; (3) an overlap switch turned on never adds time or memory, so the plans with an
 * applicable switch off (unless --fix pins it) are dominated; (4) rank orders that put every
 * communication group on the same number of nodes give the same estimate: the first is priced
 * and lists the others ("twins"). Plans that price identically except for their rank order
 * are merged the same way after pricing; (5) all-forward-all-backward has 1F1B's time and at
 * least its memory [MEG §2.2.1], so it is dominated unless pinned; (6) bound: a plan is never
 * faster than its sibling with a lighter recompute mode, with SP on, or with ZeRO-1 in place of
 * ZeRO-2, so once such a sibling priced below the K-th best plan found so far and below the
 * best found so far of every shape the plan has (search_shapes), the plan cannot be shown and
 * is not priced.
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
 * default form. When nothing fits, the closest plan is partitioned the same way and, if a split
 * makes it fit, becomes the one finalist (moved from the memory rejections to feasible).
 *
 * Invariant: enumerated == feasible + Σ rejected[...] (memory, pruned, dominated and twin plans
 * included); the top list is sorted best first by the objective and holds distinct plans. */
#ifndef SCALEPLAN_SEARCH_H
#define SCALEPLAN_SEARCH_H

#include <stddef.h>
#include <stdio.h>
#include "sim/framework.h"
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
	REJ_OVERLAP_OFF, /* not priced: the same plan with the overlap switch on is never slower */
	REJ_AFAB,        /* not priced: 1F1B runs the same plan in the same time with no more memory */
	REJ_BOUND,       /* not priced: slower than the plan with less recompute, itself below the
			  * K-th best and below the best of each of its shapes */
	REJ_TWIN,        /* the same estimate as another rank order, listed with it */
	REJ_COUNT
};

/* Overlap switches of a candidate (search_cand.overlap), as the plan keys overlap_*: gradient
 * reduction, parameter gathers, TP collectives (both directions, needs SP), pipeline sends,
 * and TP backward collectives alone (Megatron's asynchronous all-reduce; moot with OV_TP). */
enum { OV_GRAD = 1, OV_PARAM = 2, OV_TP = 4, OV_P2P = 8, OV_TPBWD = 16 };
#define OV_COUNT 5
#define SEARCH_ORDERS 3

/* The tuner's accuracy, from `make validate`: the analytical model's throughput MAPE on the
 * published runs (../shared/validation/published_calibration.tsv; README, "Measured figures").
 * Plans whose predicted throughput is within this fraction of the best are ties: the model
 * cannot tell them apart. tests/cli/tune.sh checks it against validate's output. */
#define SEARCH_TIE_REL 0.078

/* Pinned values (--fix k=v); -1 leaves the dimension free. */
struct search_fix {
	int dp, tp, pp, cp, ep, vpp, zero, sp, recompute, recompute_layers, mbs, schedule, order;
	int overlap[OV_COUNT];     /* OV_GRAD .. OV_TPBWD in bit order: 0/1 pinned */
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
	/* tune --framework: its documented defaults set every key the search does not choose, in
	 * every candidate (search_cand_plan), so each is priced as that framework runs it */
	int has_fw;
	struct framework fw;
	int exhaustive;            /* price everything (no pruning, no twins skipped): for tests */
	/* called every few thousand plans: plans enumerated so far, fraction of the space done */
	void (*progress)(void *ctx, long plans, double fraction);
	void *progress_ctx;
};

/* One priced plan, compact (the full plan is rebuilt with search_cand_plan). */
struct search_cand {
	int gpus, dp, tp, pp, cp, ep, vpp, zero, sp, recompute, recompute_layers, mbs, schedule, order;
	int etp;                   /* expert TP: tp, or 1 when ep folds over tp ranks (0 = tp) */
	int overlap;               /* OV_* switches on */
	int orders;                /* bit o: rank order o gives this same estimate (order's bit set) */
	double step_s, tokens_per_s, tokens_per_s_per_gpu, mfu, peak_bytes, capacity_bytes;
	double bubble_fraction, exposed_comm_s;
	double analytic_step_s;    /* with the split the candidate carries */
	double score;              /* higher is better, by the objective */
	int fits;
	/* explicit layer-to-stage split (finalists only; NULL = the plan's balanced default);
	 * owned by the result (search_result_free) */
	int *stage_layers;
	int nstage_layers;
	int partitioned;           /* 0 default split; 1 time-balanced DP; 2 memory-capped DP with a
				    * recompute count; 3 MILP */
	double uniform_step_s;     /* analytical step time with the default split */
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
	int rescued;               /* nothing fit with default splits; the closest plan fits with a
				    * partitioned split and is the one finalist */
};

void search_fix_init(struct search_fix *f);
/* Applies "key=value": an enumerated dimension is pinned, any other plan key is set on base. */
int search_fix_parse(struct search_req *rq, const char *kv, char *err);
/* The pinned values against the request (gpus, seq, gbs, model, cluster), before a search:
 * 0, or -1 with err naming the fix and the rule it breaks ("--fix tp=3: tp must divide the
 * 512 GPUs"). */
int search_fix_check(const struct search_req *rq, char *err);
/* After a search with nothing priced: the rule that rejected most plans, as a message. */
void search_no_valid_plan(const struct search_req *rq, const struct search_result *res, char *err);

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
/* What the search's selective recompute re-runs (plan recompute_modules): the request's when
 * it pins them (--fix recompute_modules=...), else framework_cheap_modules (sim/framework.h) */
int search_selective_modules(const struct search_req *rq);

/* Output (tuner/search_report.c). The request's names (model, gpu) come from rq->base. */
struct search_out {
	double tokens;             /* training tokens for time and cost lines; 0 = none */
	double price;              /* $ per GPU-hour; 0 = none */
	long tune_id;              /* store id, 0 = not recorded */
	long winner_id;            /* store id of #1's finalist (scaleplan export --id), 0 = none */
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
/* "tp-cp-dp-pp, tp-cp-pp-dp": every order in a candidate's orders mask */
void search_orders_text(int orders, char *buf, size_t cap);
const char *objective_name(enum objective o);
/* Is k within the model's measured error (SEARCH_TIE_REL) of the best score? */
int search_is_tie(const struct search_cand *best, const struct search_cand *k);

#endif
