/* train — one rank's training state for a plan, and the optimizer step that runs it: the
 * model (runtime/model.h), gradient accumulation over gbs/(dp·mbs) micro-batches (the step's
 * loss is the mean over the global batch's micro-batches; each backward is scaled by 1/m),
 * data parallelism with ZeRO-0/1/2 (runtime/zero.h, gradients marked ready layer by layer
 * during backward so bucket reductions overlap it) or ZeRO-3 (one unit per layer plus the
 * embedding and the head, gathered just before use with the next prefetched), clipping by
 * global norm, and AdamW decaying exactly the tensors llama_step decays.
 *
 * Model parallelism (tp > 1, pp > 1, cp > 1 or ep > 1): each rank builds its shard
 * (llama_create_par: TP slices with sequence parallelism, CP ring attention on its zig-zag rows,
 * its experts, its pipeline chunks' layers); pp > 1 runs the plan's schedule through the
 * pipeline executor (runtime/pp.h). Dense gradients are summed over dp*cp and routed experts
 * over the expert-DP group, divided by dp (CP ranks hold shares of one sequence's gradient);
 * the norm counts each tensor once over tp, pp, ep. ZeRO 1-3 run with tp and cp, ZeRO 1-2
 * also with pp (one reduce-scatter after the schedule, so 2 behaves as 1; not DualPipe);
 * expert-parallel plans run ZeRO 1/2 with dense tensors sharded over dp*cp and routed experts
 * over the expert-DP group, each packed into a buffer of its own (a reduce-scatter per step),
 * one clipping norm over both, and not ZeRO-3. Activation recomputation (the plan's recompute and
 * recompute_layers, pp_recompute_modes) drops activations from each micro-batch's buffers
 * and re-runs forwards before backward (llama_acts_create_rc); numerics are bit for bit
 * those of no recompute.
 *
 * Ownership: the trainer borrows the context and the data source (both must outlive it) and
 * owns everything else, including the rank's instance of the compute backend (train_opts:
 * kernels/backend.h), through whose tracking allocator every parameter, gradient, moment and
 * activation buffer is allocated and whose kernels run every op. Rows whose memory is not
 * host-visible run what train_supported_on lets through. Every call marked "collective" must be made by every rank of the
 * context, in the same order.
 *
 * Units: seconds, bytes, tokens. Invariant: step s reads global samples s·gbs .. s·gbs+gbs-1
 * (data.h), dp rank d the d-th gbs/dp of them, so any layout sees the same global batch. */
#ifndef SCALEPLAN_TRAIN_H
#define SCALEPLAN_TRAIN_H

#include <stddef.h>
#include <stdint.h>
#include "runtime/ctx.h"
#include "runtime/data.h"
#include "runtime/model.h"

struct train_opts {
	uint64_t seed;            /* initial weights (llama_opts.seed) */
	struct adamw_opts opt;    /* lr, betas, eps, weight decay, clipping norm */
	size_t bucket_params;     /* DP bucket size in parameters; 0 = Megatron's default */
	int trace;                /* record timed events (train_events) */
	const struct kern_ops *backend; /* compute backend row (kernels/backend.h); NULL: CPU */
	int device;               /* the backend's device for this rank */
};
void train_opts_default(struct train_opts *o);

/* What one step measured, identical on every rank except the *_local fields. */
struct train_stats {
	int step;                 /* 1-based index of the step just taken */
	double loss;              /* mean over the global batch (cross-entropy + MoE aux) */
	double grad_norm;         /* global norm before clipping */
	double step_time_s;       /* slowest rank */
	double tokens_per_s;      /* gbs·seq / step_time_s */
	double mem_bytes_local;   /* this rank's buffers at their peak (see train_mem_bytes) */
	double rss_bytes_local;   /* this process's peak resident set size */
};

/* Measured events for the trace: times in seconds since train_create's barrier. */
enum train_ev_name { EV_F, EV_B, EV_W, EV_BW, EV_OPT, EV_ALLREDUCE, EV_REDUCE_SCATTER,
		     EV_ALLGATHER, EV_NAME_COUNT };
enum train_ev_stream { EV_COMPUTE, EV_COMM };
struct train_event {
	double start_s, end_s;
	int name, stream;         /* enum train_ev_name / train_ev_stream */
	int mb, chunk, stage;     /* -1 where none */
	int layer0, layer1;       /* layers [layer0, layer1) of a compute op; -1 otherwise */
};
const char *train_ev_name(int name);

struct trainer;

/* Collective. Checks that the runtime supports the plan ("not yet supported by the runtime:
 * ..."), builds the model with o->seed, shards it. */
int train_create(struct ctx *x, const struct model *m, const struct train_opts *o,
		 const struct data *d, struct trainer **out, char *err);
void train_destroy(struct trainer *t);

/* Returns 0 when this build of the runtime can execute the plan, else -1 with a message
 * "not yet supported by the runtime: ..." (no communication; for early checks). */
int train_supported(const struct plan *p, const struct model *m, char *err);
/* train_supported, and what the backend row can run: a row whose memory the host cannot
 * read (a GPU) runs one rank without ZeRO-3 on a row with a compute format, and without CP
 * (no CUDA row has the blockwise attention entries); several ranks wait for the step's
 * host-side collectives to leave the NCCL world's groups (runtime/train.c says which).
 * TP, EP and the pipeline run through the row. -1 with a message naming the row. */
int train_supported_on(const struct plan *p, const struct model *m, const struct kern_ops *row, char *err);

/* Collective: one optimizer step over the next global batch. */
int train_step(struct trainer *t, struct train_stats *st, char *err);

int train_steps_done(const struct trainer *t);
size_t train_n_params(const struct trainer *t);
const struct llama *train_model(const struct trainer *t);  /* specs, layout (not values at ZeRO-3) */
/* Bytes of the buffers this rank holds, at their peak so far: weights, gradients, optimizer
 * moments and gradient shard, one micro-batch's activations, ZeRO-3 gathered units and
 * in-flight gradient buffers. */
double train_mem_bytes(const struct trainer *t);
/* The backend instance: its bytes_in_use and peak_bytes are this rank's measured memory, the
 * peak counted from the end of train_create (every rank builds its model whole once, before
 * sharding, which no plan's steady state holds). */
const struct kern *train_backend(const struct trainer *t);

/* Collective over the data-parallel group: the full parameter vector in the single-rank
 * layout (n_params floats) into `full` on every rank. */
int train_full_params(struct trainer *t, float *full, char *err);

/* The state a checkpoint holds: parameters (full at ZeRO 0-2, this rank's shard at ZeRO-3),
 * AdamW moments of what this rank updates, the AdamW step counter, the steps done (which is
 * also the data position: the next step reads samples from steps·gbs). Pointers stay owned
 * by the trainer; writing through them restores. */
struct train_state {
	float *params; size_t n_params;
	float *m, *v; size_t n_moments;
	int *adam_step;
	int *steps_done;
};
int train_state(struct trainer *t, struct train_state *s);

/* Recorded events (valid until the next call that records); train_clear_events forgets. */
const struct train_event *train_events(const struct trainer *t, size_t *n);
void train_clear_events(struct trainer *t);

#endif
