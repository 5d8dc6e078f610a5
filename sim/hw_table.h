/* hw_table — measured tables of a hardware profile (the optional "tables" key of a
 * profiles/hw JSON file, written by `scaleplan profile`): GEMM throughput by (M, N, K),
 * attention throughput by sequence length (forward and backward), memory-bound kernel
 * bandwidth by bytes moved, and collective time by operation, group size and message size
 * (nccl-tests sizes and bus-bandwidth convention [NCCLT]). The simulator interpolates them
 * where a profile has them and uses the efficiency parameters of struct hw otherwise.
 *
 * Interpolation: GEMM throughput trilinear in log M, log N, log K (clamped to the measured
 * box); curves piecewise linear in log-log (clamped below the first point;
 * collective times extrapolate above the last point at the last segment's bandwidth, so a
 * large message costs its bytes, not the largest measured time).
 *
 * Scaling (what `scaleplan calibrate` moves): a table holds what the kernels did when they
 * were measured, and `reference` holds the profile's efficiency values at that moment. The
 * time of an op is the table's time multiplied by reference/current for its parameter
 * (gemm_eff, attn_eff, mem_eff; collectives: all but the latency part, the smallest message's
 * time, by reference/current comm_eff·busbw of network tier 0). A profile straight from
 * `profile` has current == reference, so the tables apply as measured.
 *
 * Units: seconds, bytes, FLOP/s (the file: TFLOP/s, GB/s, microseconds). Ownership: plain
 * data inside struct hw (no pointers), copied with it. Invariant: every axis and curve is
 * strictly increasing in x with positive values (the reader refuses anything else). */
#ifndef SCALEPLAN_HW_TABLE_H
#define SCALEPLAN_HW_TABLE_H

#include "sim/coll.h"


#define HWT_MAX_AXIS 8     /* points per GEMM axis */
#define HWT_MAX_POINTS 24  /* points per curve */
#define HWT_MAX_GROUPS 6   /* group sizes per collective */
#define HWT_COLL_OPS COLL_PRICED /* all_reduce, reduce_scatter, all_gather, all_to_all, send_recv
                            * (the order of enum coll in sim/collective.h) */

struct cJSON;

struct hwt_curve {
	int n;
	double x[HWT_MAX_POINTS], y[HWT_MAX_POINTS];
};

struct hw_tables {
	int present;                   /* the profile had a "tables" key */
	char backend[16], dtype[8], host[64], measured[32];
	int ranks;                     /* ranks that ran at once while measuring */
	int cores;                     /* cores they shared (0: a device each; sim/hw_share.h) */
	int gm, gn, gk;                /* GEMM axis lengths (0: no GEMM table) */
	double gemm_m[HWT_MAX_AXIS], gemm_n[HWT_MAX_AXIS], gemm_k[HWT_MAX_AXIS];
	double gemm_flops[HWT_MAX_AXIS][HWT_MAX_AXIS][HWT_MAX_AXIS]; /* achieved FLOP/s, 2MNK/t */
	int attn_head_dim;
	struct hwt_curve attn_fwd, attn_bwd; /* x: sequence length; y: FLOP/s in the simulator's
					      * count (causal forward 4·h·T·(s/2)·d, backward 2.5×) */
	struct hwt_curve mem;          /* x: bytes moved by one kernel; y: bytes/s */
	int coll_ranks[HWT_COLL_OPS][HWT_MAX_GROUPS];
	struct hwt_curve coll[HWT_COLL_OPS][HWT_MAX_GROUPS]; /* x: nccl-tests size; y: seconds */
	/* the profile's values when measured (SI units) */
	double ref_gemm_eff, ref_attn_eff, ref_mem_eff, ref_comm_eff, ref_bw_bps;
};

/* Parses the "tables" object into t (zeroed first). 0, or -1 with err naming the key. */
int hw_tables_from_json(const struct cJSON *o, const char *name, struct hw_tables *t, char *err);
/* The tables as a JSON object in the file's units (caller owns it). */
struct cJSON *hw_tables_to_json(const struct hw_tables *t);

/* Curve value at x (log-log piecewise linear, clamped at both ends). */
double hwt_curve_at(const struct hwt_curve *c, double x);
/* Measured GEMM throughput (FLOP/s) at (M, N, K), interpolated; 0 without a GEMM table. */
double hwt_gemm_flops(const struct hw_tables *t, double M, double N, double K);
/* Time of collective op (0..HWT_COLL_OPS) over n ranks for S bytes (nccl-tests size): the
 * table's, its latency part (the smallest message's time) times lat_scale and the rest times
 * xfer_scale. 1 and *s set when the table has that op and group size, else 0. */
int hwt_coll_s(const struct hw_tables *t, int op, int n, double bytes, double lat_scale, double xfer_scale,
	       double *s);
/* cur/ref, the factor a table scaled by a parameter moves by (1 when either is not > 0) */
static inline double hwt_ratio(double cur, double ref) { return cur > 0 && ref > 0 ? cur / ref : 1; }
/* Appends one point to a curve (x increasing); -1 when full or out of order. */
int hwt_curve_add(struct hwt_curve *c, double x, double y);

#endif
