/* profile — measures the machine a job runs on, for a hardware profile (`scaleplan profile`):
 * GEMM throughput over a grid of (M, N, K), attention forward and backward by sequence
 * length, memory-bound kernel bandwidth by size, streaming memory bandwidth, and collective
 * time by operation, group size and message size (nccl-tests sizes [NCCLT]). Every rank of the
 * world measures at the same time, as the ranks of a training job run: on a CPU with fewer
 * cores than ranks each rank gets its share, which is what a plan with that many ranks sees.
 * Collectives run on groups of consecutive ranks, all groups of one size at once.
 *
 * Backends are a table of method structs (one file each: profile_cpu.c, profile_cuda.cu);
 * profile_backend_find() looks one up by name. The CUDA row exists only in a build that links
 * it (`make CUDA=1`): profile.c's reference to it is weak, so the CPU build has no CUDA symbol.
 * A backend with devices (device_count != NULL) drives one device per rank, rank r the device
 * r mod the devices it sees (profile_device_for), and may measure collectives on a world of
 * its own over the same ranks (NCCL, bootstrapped over the MPI or one-rank world); barriers
 * and the agreement on times stay on the host world.
 *
 * Units: seconds, bytes, FLOP/s. Ownership: the caller owns the world communicator and the
 * result (plain data). Invariant: every rank returns the same result (values are agreed over
 * the world: the slowest rank's time per call, the ranks having started together). */
#ifndef SCALEPLAN_PROFILE_H
#define SCALEPLAN_PROFILE_H

#include <stddef.h>
#include "sim/hw_table.h"

struct comm;

/* What one backend can run; every method works on the workspace `ws` that open() made for
 * shapes up to the limits, and returns 0 or -1 with err. Times are taken by the driver around
 * a call and sync(). */
struct profile_limits {
	int max_dim;               /* largest GEMM dimension */
	int max_seq, heads, head_dim; /* attention shapes */
	size_t max_bytes;          /* largest memory-bound pass and collective message */
};
struct profile_backend {
	const char *name;          /* "cpu", "cuda" */
	const char *dtype;         /* arithmetic the kernels run: "fp32", "bf16" */
	int shares_cores;          /* ranks on one machine share its CPU cores (not one device each) */
	/* `device`: the device this rank drives (profile_device_for); 0 and unused on the host */
	int (*open)(const struct profile_limits *lim, int device, void **ws, char *err);
	void (*close)(void *ws);
	/* out (M, N) = a (M, K) · w (N, K)ᵀ: the runtime's linear layer forward */
	int (*gemm)(void *ws, int M, int N, int K, char *err);
	/* causal attention of one sequence of T tokens, H heads of width d; backward after forward */
	int (*attention)(void *ws, int T, int H, int d, int backward, char *err);
	/* one memory-bound pass of the runtime's element-wise kernels; *moved: bytes read + written */
	int (*elementwise)(void *ws, size_t bytes, double *moved, char *err);
	/* copies `bytes` (reads and writes them once) */
	int (*stream)(void *ws, size_t bytes, char *err);
	/* two buffers of max_bytes each that collectives may use (host memory for MPI, device
	 * memory for NCCL) */
	void *(*comm_buf)(void *ws, int which);
	int (*sync)(void *ws, char *err);
	/* devices this process sees (0 when none or no driver); NULL: a host backend */
	int (*device_count)(void);
	/* the world collectives are measured on, over the ranks of `host` (which it borrows:
	 * destroy it first); NULL: collectives run on the host world itself */
	int (*coll_world)(struct comm *host, int device, struct comm **out, char *err);
	/* the device's name ("" unknown) and memory in bytes (0 unknown); NULL: the host */
	void (*device_info)(void *ws, char *name, size_t len, double *mem_bytes);
};

/* The backend called `name`, or NULL (see profile_backend_known). */
const struct profile_backend *profile_backend_find(const char *name);
/* 1 when `name` is a backend scaleplan has (cpu, cuda), built into this binary or not. */
int profile_backend_known(const char *name);
/* Names of the backends built in, comma separated, static storage. */
const char *profile_backend_names(void);

/* The device rank `rank` drives among `visible` devices: rank mod visible (one node's ranks,
 * one device each, as `scaleplan run` places them). 0, or -1 with err when none is visible. */
int profile_device_for(const char *backend, int rank, int visible, int *device, char *err);
/* The default profile name: BACKEND-DEVICE-Nr for a device ("cuda-NVIDIA-H200-1r"), else
 * BACKEND-HOST-Nr; characters other than letters, digits, '.', '_' and '-' become '-'. */
void profile_default_name(const char *backend, const char *device, const char *host, int ranks, char *out,
			  size_t len);

/* Fills the fields of lim that are 0 with b's defaults: on the host GEMMs to 2048, attention
 * to 1024 tokens of 4 heads of 64, passes to 16 MiB (seconds of CPU); on a device (a row with
 * device_count) GEMMs to 8192, attention to 4096 tokens of 16 heads of 128 (a 1-8B model's
 * layer, where a bf16 tensor core runs near its peak), passes to 256 MiB (past the caches). */
void profile_limits_default(const struct profile_backend *b, struct profile_limits *lim);

struct profile_opts {
	struct profile_limits lim;
	double min_time_s;         /* each measurement repeats its call for at least this long */
	int device;                /* the device this rank drives (backends with devices) */
	struct comm *coll_world;   /* the world collectives run on (NULL: the host world) */
	void (*progress)(void *ctx, const char *what, double fraction); /* rank 0 only; may be NULL */
	void *progress_ctx;
};
/* the host's limits (profile_limits_default without a backend), 0.05 s a measurement */
void profile_opts_default(struct profile_opts *o);

struct profile_result {
	struct hw_tables t;        /* tables; meta strings and reference values left to the caller */
	double peak_flops;         /* the best GEMM throughput measured */
	double stream_bps;         /* streaming bandwidth per rank (bytes read + written per s) */
	double elem_bps;           /* element-wise bandwidth at the largest size */
	double attn_flops;         /* attention forward throughput at the longest sequence */
	double coll_busbw_bps;     /* all-reduce busbw of the whole world at the largest size */
	double coll_lat_s;         /* all-reduce time of the whole world at the smallest size */
	int ranks;
	char device[64];           /* rank 0's device name ("" on the host) */
	double device_mem_bytes;   /* its memory (0 on the host) */
};

/* Runs every measurement on every rank of `world` (collective; the host world: barriers and
 * the agreement on times run on it, collectives on o->coll_world when set). */
int profile_run(const struct profile_backend *b, struct comm *world, const struct profile_opts *o,
		struct profile_result *r, char *err);

#endif
