/* hw — one GPU kind and the cluster fabric around it, read from profiles/hw/NAME.json.
 * Units are converted once at load: FLOP/s, bytes, bytes/s, seconds.
 *
 * Bandwidths are *bus* bandwidths as nccl-tests reports them for large messages (achievable,
 * not line rate), so a collective's time is size * busbw_factor / bw + latency terms. */
#ifndef SCALEPLAN_HW_H
#define SCALEPLAN_HW_H

struct hw {
	char name[64];
	double peak_bf16_flops;   /* dense tensor-core peak, per GPU */
	double peak_fp8_flops;    /* 0 if the GPU has no FP8 */
	double hbm_bytes;         /* usable device memory */
	double hbm_bw_bps;        /* device memory bandwidth, bytes/s */
	int gpus_per_node;
	double intra_bw_bps;      /* per-GPU busbw inside a node (NVLink/NVSwitch ring) */
	double inter_bw_bps;      /* per-GPU busbw across nodes (the GPU's NIC share) */
	double intra_lat_s;       /* per-step latency of one collective hop, inside a node */
	double inter_lat_s;       /* the same across nodes */
	/* efficiency parameters (dimensionless) */
	double gemm_eff;          /* best achievable fraction of peak on large GEMMs (MAMF/peak) */
	double gemm_eff_fp8;      /* the same for FP8 GEMMs against the FP8 peak (default gemm_eff) */
	double gemm_half_dim;     /* GEMM size (elements of the smallest dim) at which efficiency halves */
	double attn_eff;          /* fraction of peak flash attention reaches */
	double mem_eff;           /* fraction of HBM bandwidth element-wise kernels reach */
	double comm_eff;          /* busbw derating when collectives share SMs with compute */
	double workspace_bytes;   /* GEMM library workspaces, allocated through the pool */
	double frag_native;       /* PyTorch's native caching allocator: reserved/live on dynamic memory */
	double frag_expandable;   /* the same with expandable_segments:True */
	double context_bytes;     /* CUDA context and library handles, outside the allocator's pool */
	int nccl_channels;        /* NCCL channels of a communicator on this fabric */
	int nccl_conns;           /* connections per channel (ring peers and tree parent/children) */
	double nccl_conn_bytes;   /* NCCL buffers of one connection (all protocols), outside the pool */
	double step_overhead_s;   /* fixed per-step host/launch overhead */
	double kernel_overhead_s; /* per-layer-op launch/synchronisation overhead */
};

/* Loads a built-in profile name ("h100-sxm") or a path to a JSON file of the same format. */
int hw_load(const char *name_or_path, struct hw *h, char *err);
int hw_from_json(const char *text, const char *name, struct hw *h, char *err);

/* Names of the built-in hardware profiles, NULL-terminated, static storage. */
const char *const *hw_builtin_names(void);

#endif
