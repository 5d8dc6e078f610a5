/* hw — one GPU kind and the cluster fabric around it, read from profiles/hw/NAME.json, with
 * the collective library's cost model (profiles/comm/nccl.json).
 * Units are converted once at load: FLOP/s, bytes, bytes/s, seconds.
 *
 * Bandwidths are *bus* bandwidths as nccl-tests reports them for large messages (achievable,
 * not line rate); the fabric is a list of tiers (NVLink domain, leaf, spine), each with its
 * per-GPU bandwidth and oversubscription (sim/collective.h prices a collective on it). */
#ifndef SCALEPLAN_HW_H
#define SCALEPLAN_HW_H

#include "sim/hw_table.h"

/* NCCL's cost model (profiles/comm/nccl.json): per algorithm and protocol a base latency and a
 * per-hop latency by link kind (< 0: not offered), and the protocols' share of the bus bandwidth */
enum { PROTO_LL, PROTO_LL128, PROTO_SIMPLE, PROTO_COUNT };
enum { ALGO_RING, ALGO_TREE, ALGO_NVLS, ALGO_PAT, ALGO_COUNT, ALGO_P2P = ALGO_COUNT };
struct coll_lib {
	double base_s[ALGO_COUNT][PROTO_COUNT];
	double hop_nvl_s[ALGO_COUNT][PROTO_COUNT];
	double hop_net_s[ALGO_COUNT][PROTO_COUNT];
	double bw_frac[PROTO_COUNT];
	double pat_bw_frac;       /* PAT's bandwidth as a share of the ring's */
	double pat_rank_s;        /* PAT latency per rank */
	double conns[ALGO_COUNT + 1]; /* connections per channel each algorithm sets up; P2P: per peer */
	double nvls_head_bytes;   /* NVLS buffers per NVLink-SHARP head (one per GPU of the domain) */
	double p2p_net_shared_bytes; /* per channel and direction: the pool all network send/recv peers share */
};

/* One tier of the fabric: the NVLink domain (tier 0), then network tiers (a leaf or rail
 * group, the spine). A tier's unit holds `gpus` GPUs (0: the whole cluster); a group whose
 * members sit in more than one unit of tier t-1 sends traffic over tier t. */
#define HW_MAX_TIERS 4
#define HW_CURVE_MAX 25 /* points of a measured NVLink-domain collective curve */
struct hw_tier {
	char name[16];
	int gpus;
	int net;                  /* 0: NVLink-class links, 1: the network (NICs and switches) */
	double busbw_bps;         /* per-GPU ring bus bandwidth over this tier (nccl-tests) */
	double nvls_busbw_bps;    /* NVLink SHARP all-reduce bus bandwidth, 0 = none */
	double oversub;           /* >= 1: oversubscription of the uplinks into this tier */
	/* latency of one ring or tree step that crosses this tier, by protocol (LL, LL128,
	 * Simple), replacing the collective library's per-hop figure for a network link; a
	 * fabric whose library plugin models its own (aws-ofi-nccl's tuner on EFA) states it.
	 * has_hop 0: the library's figure (NCCL's, measured on InfiniBand) */
	int has_hop;
	double hop_s[PROTO_COUNT];
};

/* One collective measured inside one NVLink domain (optional "nvlink_coll_curve"), set at
 * load: NCCL's cost model against it. At each point after the first, k is the measured time
 * above the first (smallest) message's over the model's time above its own latency, at least
 * 1, against the profile's model as loaded (a later change of comm_eff leaves k as it was); bus
 * is the bytes each rank moves there (size x busbw factor). A collective on one NVLink domain
 * is its latency plus k, read at its own bus bytes, times the rest (sim/collective.c). */
struct hw_coll_curve {
	int op, ranks, n;               /* n points as the file states them; 0: no curve */
	double mib[HW_CURVE_MAX], gbps[HW_CURVE_MAX];
	double bus[HW_CURVE_MAX], lbus[HW_CURVE_MAX], k[HW_CURVE_MAX]; /* points 1..n-1; lbus = log(bus) */
};

struct hw {
	char name[64];
	double peak_bf16_flops;   /* dense tensor-core peak, per GPU */
	double peak_fp8_flops;    /* 0 if the GPU has no FP8 */
	double hbm_bytes;         /* usable device memory */
	double hbm_bw_bps;        /* device memory bandwidth, bytes/s */
	int gpus_per_node;        /* GPUs of one NVLink domain: tier[0].gpus */
	int ntiers;
	struct hw_tier tier[HW_MAX_TIERS];
	struct coll_lib lib;
	/* efficiency parameters (dimensionless) */
	double gemm_eff;          /* best achievable fraction of peak on large GEMMs (MAMF/peak) */
	double gemm_eff_fp8;      /* the same for FP8 GEMMs against the FP8 peak (default gemm_eff) */
	double gemm_half_dim;     /* GEMM size (elements of the smallest dim) at which efficiency halves */
	double attn_eff;          /* fraction of peak flash attention reaches */
	double attn_eff_cudnn;    /* the same for cuDNN's fused attention (0: not measured here) */
	double mem_eff;           /* fraction of HBM bandwidth element-wise kernels reach */
	double comm_eff;          /* busbw derating when collectives share SMs with compute */
	double overlap_slowdown;  /* compute slowdown while a collective runs under it (fraction) */
	double workspace_bytes;   /* GEMM library workspaces, allocated through the pool */
	double frag_native;       /* PyTorch's native caching allocator: reserved/live on dynamic memory */
	double frag_expandable;   /* the same with expandable_segments:True */
	double context_bytes;     /* CUDA context and library handles, outside the allocator's pool */
	int nccl_channels;        /* NCCL channels of a communicator on this fabric */
	int nccl_p2p_net_channels; /* channels NCCL gives each send/recv peer across the network */
	double nccl_conn_bytes;   /* NCCL buffers of one connection (all protocols), outside the pool */
	double step_overhead_s;   /* fixed per-step host/launch overhead */
	double kernel_s;          /* GPU time one kernel costs beyond its work (launch, ramp, tail) */
	double host_op_s;         /* host time to dispatch and launch one eager framework op */
	double host_coll_s;       /* host time to launch one collective through torch.distributed */
	struct hw_tables tables;  /* measured tables (optional "tables" key; sim/hw_table.h) */
	struct hw_coll_curve curve; /* optional "nvlink_coll_curve" */
};

/* Loads a built-in profile name ("h100-sxm") or a path to a JSON file of the same format. A
 * profile with "base": NAME_OR_PATH has every key of that profile, replaced by its own, and
 * its "sources" merged into the base's (null drops one). */
int hw_load(const char *name_or_path, struct hw *h, char *err);
int hw_from_json(const char *text, const char *name, struct hw *h, char *err);
/* The same profile as one JSON object, its base resolved (a tool that rewrites a profile
 * writes it whole); NULL and err on failure. The caller frees it with cJSON_Delete. */
struct cJSON;
struct cJSON *hw_json_load(const char *name_or_path, char *err);

/* Time a collective of length comm adds to the compute window of length win it runs under:
 * what the window cannot cover, plus overlap_slowdown of the overlapped part (the two share
 * SMs and memory bandwidth). The one home of that cost: DP, ZeRO-3, TP, CP and EP overlaps. */
double hw_overlap_cost(const struct hw *h, double comm, double win);

#endif
