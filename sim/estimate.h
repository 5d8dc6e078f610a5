/* estimate — the analytical model: memory and time of one plan, per kind of rank (pipeline
 * stages differ: the first holds the embedding, the last the LM head and loss). Pure function
 * of (model, hw, plan); no allocation, so the tuner can call it ~1e6 times a second.
 *
 * Units: bytes, seconds, FLOP. Memory is per GPU; times are per optimizer step unless named
 * per micro-batch (t_f, t_b, t_w: one micro-batch through one pipeline stage of this kind,
 * communication inside the op included — what the event engine consumes).
 *
 * Invariant: step_time_s is the maximum over rank kinds of their step_s, and peak_mem_bytes
 * the maximum of their peak_bytes; fits == (peak_mem_bytes <= capacity_bytes). */
#ifndef SCALEPLAN_ESTIMATE_H
#define SCALEPLAN_ESTIMATE_H

#include <stdio.h>

struct model;
struct hw;
struct plan;

#define EST_MAX_KINDS 8

struct rank_est {
	char label[32];          /* "first stage", "middle stages", "last stage", "stage 3", "all" */
	int stage;               /* a pipeline rank of this kind (0-based) */
	int ranks;               /* GPUs of this kind */
	int layers;              /* transformer layers held (all chunks) */
	/* memory, bytes per GPU */
	double params;           /* parameters held before ZeRO sharding */
	double weights_bytes, grads_bytes, optim_bytes;
	double act_bytes;        /* activations at the peak, all micro-batches in flight */
	double act_per_mb_bytes; /* activations of one micro-batch through this rank's layers */
	double act_inflight;     /* micro-batches (stage-equivalents) in flight at the peak */
	double logits_bytes;     /* fp32 logits / loss buffers (last stage) */
	double buffers_bytes;    /* ZeRO-3 gather, DP buckets, CP/EP/TP comm buffers */
	double recv_bytes;       /* pipeline receive buffers made once for the step (pp_recv):
	                          * live, but outside the allocator's allowance */
	double overhead_bytes;   /* GEMM workspaces and the allocator's fragmentation allowance */
	double peak_bytes;
	double live_bytes;       /* peak of live tensors (max_memory_allocated): peak_bytes less the
	                          * allocator's fragmentation allowance on dynamic memory */
	/* time per step, seconds (compute_s includes recompute_s) */
	double compute_s, recompute_s;
	double tp_comm_s, cp_comm_s, ep_comm_s, pp_comm_s; /* exposed parts */
	double dp_comm_s, dp_exposed_s;                    /* total and exposed */
	double bubble_s, optimizer_s, overhead_s, step_s;
	/* per micro-batch, one stage (the event engine's op durations) */
	double t_f, t_b, t_w, t_p2p;
};

/* What a rank allocates once (model states, the pipeline's receive buffers), which the
 * allocator's allowance leaves alone, and what beside the activations it allocates and frees
 * every step, which takes it. */
static inline double rank_est_kept_bytes(const struct rank_est *k)
{
	return k->weights_bytes + k->grads_bytes + k->optim_bytes + k->recv_bytes;
}
static inline double rank_est_churn_bytes(const struct rank_est *k)
{
	return k->logits_bytes + k->buffers_bytes;
}

struct estimate {
	int m;                    /* micro-batches per pipeline per step */
	int nkinds;
	struct rank_est kind[EST_MAX_KINDS];
	double step_time_s, tokens_per_step, tokens_per_s, tokens_per_s_per_gpu;
	double model_flops_per_step, hw_flops_per_step, mfu, hfu;
	double peak_mem_bytes;    /* allocator pool (torch max_memory_reserved), worst rank */
	double live_peak_bytes;   /* live tensors (torch max_memory_allocated), worst rank: the pool
	                           * less its fragmentation allowance on dynamic memory */
	double capacity_bytes;    /* HBM less nonpool_bytes: what the pool may grow to */
	double nonpool_bytes;     /* CUDA context + NCCL buffers, outside the pool */
	int nccl_comms;           /* NCCL communicators one rank uses */
	int fits;
	double bubble_fraction;   /* Megatron convention: bubble / ideal compute, worst rank */
	double exposed_comm_s;    /* worst rank, all dimensions */
	int worst_kind;           /* index of the rank kind that sets the step time */
};

int estimate_plan(const struct model *m, const struct hw *h, const struct plan *p,
		  struct estimate *e, char *err);

/* plan_prepare, then estimate_plan: the one sequence every caller with a raw plan runs. */
int estimate_prepared(const struct model *m, const struct hw *h, struct plan *p, struct estimate *e,
		      char *err);

/* The pool a rank's allocator holds at its peak: `pool` unconstrained, or the device's capacity
 * where the allocator's free space goes back under pressure (expandable segments, or native
 * segments whose churn does not pin them) so that `live` still fits. */
double estimate_pool_peak(const struct plan *p, double live, double pool, double capacity);

/* The caching allocator's reserved/live ratio on dynamic memory for the plan's allocator mode. */
double estimate_frag_factor(const struct hw *h, const struct plan *p);
/* The ratio a plan's dynamic memory must fit the device with: estimate_frag_factor, or 1 where
 * the free space goes back under pressure (estimate_pool_peak). */
double estimate_fit_factor(const struct hw *h, const struct plan *p);

/* A change to a plan that does not fit, and what it costs. */
#define FIX_MAX 16
struct plan_fix {
	char change[64];          /* the sim flags that make the change, e.g. "--tp 8 --dp 4" */
	double peak_bytes, capacity_bytes, step_time_s, tokens_per_s_per_gpu;
	int fits;
};
/* The changes that lower p's peak (sim/estimate_fixes.c): one knob moved toward less memory on
 * the same GPUs and global batch (sp on, a heavier recompute, a higher ZeRO stage, a smaller
 * micro-batch, tp, pp or cp doubled at half the dp), then more GPUs (dp doubled at ZeRO-3 and
 * full recompute until it fits) or half the sequence at the same tokens per batch. Each is valid for the plan and lowers its
 * peak; the ones that fit come first, fastest first, then the rest, lowest peak first. Returns
 * how many, at most max. Used by `sim` and `tune` alike (printed by reports/estimate_report.h). */
int estimate_fixes(const struct model *m, const struct hw *h, const struct plan *p, struct plan_fix *out, int max);

#endif
