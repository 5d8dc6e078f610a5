/* event — the estimate → event-engine glue, in one place for `sim --engine event`, `plot`,
 * the tuner's refinement and its report. From a plan and its analytical estimate it builds the
 * schedule's op lists and the engine's per-stage cost tables (op times t_f / t_b / t_w of the
 * rank kind holding the stage, p2p on the fabric tier the layout puts the pipeline on, DP
 * reduction in buckets, ZeRO-3 gathers, optimizer, activation bytes per micro-batch), runs the
 * engine, and derives the step time, the exposed communication per dimension, and the memory of
 * every pipeline rank over time (static memory from the estimate + the engine's activation curve).
 * Measured op times (from a runtime trace) may replace the cost model's, stage by stage.
 *
 * Units: seconds and bytes. Ownership: event_run() fills a caller-owned struct event_sim whose
 * arrays (and schedule and timeline) it allocates; event_sim_free() releases them (NULL-safe).
 * struct op_times is caller-owned; event_run() only reads it.
 *
 * Invariant: step_s == the engine's step (pipeline + exposed DP tail + optimizer) + the fixed
 * per-step overhead, and the parts of `part_s` add up to step_s exactly. */
#ifndef SCALEPLAN_EVENT_H
#define SCALEPLAN_EVENT_H

#include "sim/engine.h"
#include "sim/estimate.h"
#include "sim/plan.h"
#include "sim/schedule.h"

struct model;
struct hw;

/* Exposed communication dimensions, in output order. */
enum ev_dim { EV_TP, EV_CP, EV_EP, EV_PP, EV_DP, EV_DIM_COUNT };

/* Parts of the step time on the rank with the largest span; they add up to step_s. */
enum ev_part { EVP_COMPUTE, EVP_RECOMPUTE, EVP_TP, EVP_CP, EVP_EP, EVP_PP, EVP_DP, EVP_BUBBLE,
	       EVP_OPT, EVP_OVERHEAD, EVP_COUNT };

/* Measured op times: mean duration per (stage, kind) in seconds, n_* the events averaged
 * (0: not measured, the cost model's value stays). Arrays of nstages entries. */
enum { OPT_F, OPT_B, OPT_W, OPT_BW, OPT_OPT, OPT_KINDS };
struct op_times {
	int nstages;              /* 1 + the largest stage seen */
	double *mean_s[OPT_KINDS];
	int *n[OPT_KINDS];
	int *layers;              /* per stage: args.layers last seen, -1 when not given */
	long events, ignored;     /* complete events read; of which not an op kind used here */
	char *plan_json;          /* the plan the trace measured (otherData.plan), or NULL */
};
void op_times_free(struct op_times *t);

struct event_rank {
	double static_bytes;      /* weights, grads, optimizer, buffers, logits, fixed overhead */
	double peak_act_bytes;    /* from the engine's activation curve (before act_scale) */
	double peak_bytes;        /* static + act_scale * peak activations */
	double bubble_fraction;   /* (span - busy) / busy [MEG §2.2.1] */
	double bubble_rate;       /* (span - busy) / span [ZB §5.3] */
	double span_s, busy_s;
	int kind;                 /* index into the estimate's rank kinds */
};

struct event_sim {
	struct sched *sched;
	struct engine_result r;   /* the full run: its timeline is what plots draw */
	struct event_rank *rank;  /* sched->pp entries */
	double *t_f, *t_b, *t_w;  /* per stage as simulated (after measured overrides) */
	unsigned char *measured;  /* per stage: bit k set when OPT kind k came from the trace */
	double step_s, pipeline_span_s, tokens_per_s, tokens_per_s_per_gpu, mfu;
	double bubble_fraction, bubble_rate;   /* worst rank, engine conventions */
	double exposed_s[EV_DIM_COUNT];
	double part_s[EVP_COUNT];
	double peak_mem_bytes, capacity_bytes;
	double act_scale;         /* allocator fragmentation on dynamic memory (the estimate's factor):
				   * memory at time t = static + act_scale * activation bytes held */
	int fits;
	int nstages, stages_measured;
};

/* Simulates the plan (resolved and validated, of model m) with its estimate e. `measured` may be NULL.
 * Returns 0, or -1 with err (a measured stage outside the plan's stages, engine failure, out
 * of memory). On failure `out` holds nothing to free. */
/* What event_run would refuse in the plan itself (a schedule it cannot build, e.g. more
 * micro-batches than the schedules take): 0, or -1 with err naming the rule — bad input,
 * unlike event_run's other failures. */
int event_check(const struct plan *p, char *err);
int event_run(const struct model *m, const struct hw *h, const struct plan *p, const struct estimate *e,
	      const struct op_times *measured, struct event_sim *out, char *err);
void event_sim_free(struct event_sim *s);

/* The estimate's rank kind that describes pipeline rank r. */
int event_kind_of_rank(const struct estimate *e, int rank, int pp);

const char *ev_dim_name(int d);
const char *ev_part_name(int part);

#endif
