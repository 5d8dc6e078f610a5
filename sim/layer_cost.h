/* layer_cost — the cost of one decoder block for one micro-batch on one rank: compute from a
 * roofline with shape-dependent GEMM efficiency, the TP/SP, CP and EP communication it
 * exposes, the activations it keeps for backward and the parameters it holds. The rest of
 * the analytical model (estimate.c) sums these per pipeline rank; this header is shared by
 * the two files only.
 *
 * Units: seconds, bytes, FLOP. */
#ifndef SCALEPLAN_LAYER_COST_H
#define SCALEPLAN_LAYER_COST_H

#include "sim/collective.h"

struct model;
struct hw;
struct plan;

/* The collectives' candidates on the groups of one estimate, each derived at its first use. */
struct coll_memo {
	int n;
	struct coll_fit f[16];
};

/* Everything derived once from (model, hw, plan). */
struct ectx {
	const struct model *m;
	const struct hw *h;
	const struct plan *p;
	int mb;                     /* micro-batches per pipeline */
	double T;                   /* tokens per micro-batch on one rank's sequence shard: b*s/cp */
	double gemm_peak;           /* FLOP/s of the linear layers' GEMMs (bf16 or fp8) */
	double gemm_eff_max;        /* their best achievable fraction of it (MAMF) */
	struct span tp_g, cp_g, dpcp_g, ep_g, edp_g, pp_g; /* where each group sits on the fabric */
	int pp_cross;               /* pipeline neighbours on different nodes */
	int dpcp, edp;              /* sizes of the dense and expert gradient groups */
	int etp;                    /* expert tensor parallelism (the plan's, tp when unset) */
	struct span etp_g;          /* the expert-TP group: etp consecutive ranks of the TP group */
	double act_bytes;           /* bytes per activation element: 2 (bf16/fp8 runs) or 4 (fp32) */
	double tp_embed_f, tp_embed_b; /* TP collectives of the embedding, per micro-batch (estimate.c) */
	double tp_head_f, tp_head_b;   /* of the LM head and its vocab-parallel loss */
	double pool_capacity;       /* HBM less the memory outside the caching allocator */
	int nccl_comms;             /* NCCL communicators one rank uses */
	struct coll_memo *memo;     /* the estimate's, written through a const ectx */
};

/* Cost of one decoder block for one micro-batch on one rank. Times in seconds. */
struct layer_cost {
	double f, b, w;             /* compute: forward, input-gradient backward, weight-gradient */
	double rc;                  /* recompute added to the backward (per the plan's mode) */
	double rc_tp, rc_ep;        /* collectives a selective recompute's modules re-run */
	double tp_f, tp_b;          /* exposed TP/SP communication, forward and backward */
	double cp_f, cp_b;          /* exposed CP communication */
	double ep_f, ep_b;          /* exposed EP all-to-all */
	double hw_flops, model_flops;
	double act_full;            /* bytes kept for backward without recompute */
	double act_w;               /* bytes still needed by W after B (linear inputs) */
	double act_ckpt;            /* bytes kept under full recompute (the block input) */
	double act_op;              /* bytes kept under per-op checkpointing (RC_OP) */
	double act_rc;              /* bytes selective recompute's modules free, re-created for the
	                             * block being back-propagated */
	double params;              /* parameters held by this rank for this block */
	double params_dense_grad;   /* of which reduced over the dp*cp group */
	double params_expert;       /* of which reduced over the expert-DP group */
};

/* time of `count` GEMMs (M×K)·(K×N) at the plan's precision */
double gemm_t(const struct ectx *c, double M, double N, double K, double count);
/* time of moving `bytes` through HBM (element-wise kernels) */
double elem_t(const struct ectx *c, double bytes);
/* coll_time and coll_algo of collective k over g, through the estimate's memo */
double ectx_coll(const struct ectx *c, enum coll k, double bytes, const struct span *g, int *algo);
static inline double ectx_coll_time(const struct ectx *c, enum coll k, double bytes, const struct span *g)
{
	int a;
	return ectx_coll(c, k, bytes, g, &a);
}
/* a dense block (moe = 0) or an MoE block (moe = 1) */
void layer_cost(const struct ectx *c, int moe, struct layer_cost *lc);

#endif
