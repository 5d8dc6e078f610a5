/* pp — the pipeline-parallel executor: runs one training step's op list (sim/schedule.h, the
 * very lists the event engine and the bubble plots walk) on this pipeline rank. F of stage 0
 * embeds, F of a later stage receives the previous stage's output residual stream, runs its
 * layers and sends its output on; the last stage runs the head (loss) in F and starts B from
 * it with dloss = 1/m (gradient accumulation); B receives d(output) from the next stage, runs
 * the input-gradient pass of its layers (stage 0 also the embedding gradient) and sends
 * d(input) down; W runs the deferred weight-gradient pass; BW runs B then W layer by layer.
 * A rank holds `chunks` stages (interleaved, zb-v, dualpipev: stage = sched_stage(rank,
 * chunk, 0)); DualPipe holds stage r of direction 0 and stage pp-1-r of direction 1 in two
 * model copies whose gradients are summed with the partner rank pp-1-r after the step, so
 * both copies stay equal. Ops flagged `overlap` (DualPipe's F&B pair) run one after the other.
 *
 * Communication: every transfer is one (B*T, hidden) fp32 tensor, non-blocking, through a
 * pool of message buffers (the activations are copied in and out, so an activation set never
 * waits for a send). Point-to-point messages carry no tags, so a receiver posts its receives
 * from each peer in the order that peer sends them (known from the peer's op list) and keeps
 * two posted ahead; messages that arrive before they are needed wait in their buffers. No
 * send is waited for before the end of the step, so a rank blocks only on a message its
 * schedule needs now, which the sender's own list produces without waiting for anything
 * else: every schedule sched_create builds runs without deadlock.
 *
 * Memory: one activation set (struct llama_acts, shared by this rank's chunks) per
 * micro-batch in flight; the pool size is the exact peak, over this rank's op list, of
 * micro-batches whose first F has run and whose last W/BW has not (pp_act_sets(); 1F1B
 * stage r: min(pp-r, m); ZB-H1: min(pp, m); ZB-H2: 2pp-1; AFAB: m). Sets keep W inputs per
 * layer (split_w) only when the schedule has separate W ops.
 *
 * Ownership: pp_create borrows the schedule, the pipeline communicator and the models (which
 * must outlive the executor); pp_create_from_ctx builds and owns its schedule. pp_destroy
 * frees everything else (NULL is fine). Units: seconds (timing), element counts (ranges).
 *
 * Invariant a reader could not guess: pp_step zeroes, then fully computes, the gradients of
 * the tensors this rank holds (its chunks' layers; embedding on stage 0 and, when tied, on
 * the last stage; final norm and LM head on the last stage); other tensors of the models are
 * never read or written, so the models may hold only those (pp_create_sharded builds such
 * shards; each copy is then indexed by its own spec table). */
#ifndef SCALEPLAN_PP_H
#define SCALEPLAN_PP_H

#include <stddef.h>
#include "runtime/comm.h"
#include "runtime/model.h"
#include "sim/schedule.h"

struct plan;

struct ctx;
struct pp;

/* One executed op, for a Chrome trace: seconds since this rank entered pp_step. start_s is
 * when its input was available (wait_s before it was spent waiting for the message). */
struct pp_op_time {
	double start_s, end_s, wait_s;
	int kind;          /* enum op_kind */
	int mb, chunk, dir, stage;
};

/* Gradients of a flat range of model copy `copy` are final for this step. */
enum pp_part { PP_PART_LAYERS, PP_PART_EMBED, PP_PART_HEAD };
struct pp_ready {
	int copy;                /* model copy (DualPipe direction), else 0 */
	enum pp_part part;
	int layer0, layer1;      /* PP_PART_LAYERS: decoder blocks [layer0, layer1) */
	size_t off, count;       /* range of the copy's flat params/grads buffers, in floats */
};
/* Called from inside pp_step, at most once per range and step: after the chunk's last W/BW
 * (or, for DualPipe and a tied embedding, after the summation that finishes them). Returning
 * non-zero fails the step with err. */
typedef int (*pp_ready_fn)(void *arg, const struct pp_ready *r, char *err);

struct pp_cfg {
	const struct sched *sched;   /* borrowed */
	struct comm *comm;           /* pipeline group: position == pipeline rank; borrowed */
	const int *stage_layers;     /* sched->nstages entries: decoder blocks per stage, in order */
	struct llama *models[2];     /* one per direction (DualPipe: 2 distinct copies); borrowed */
	int B, T;                    /* micro-batch: sequences and tokens per sequence */
	const unsigned char *recompute; /* [layers] enum llama_rc per layer; NULL: none */
};

int pp_create(const struct pp_cfg *cfg, struct pp **out, char *err);
/* From the plan: schedule, pp, vpp, plan_microbatches(), mbs, seq, stage_layers (resolved by
 * plan_resolve) and the context's pipeline group. models as in pp_cfg. */
int pp_create_from_ctx(const struct ctx *x, struct llama *const *models, struct pp **out, char *err);
void pp_destroy(struct pp *p);
/* The plan's activation recomputation per layer (enum llama_rc, out[layers]): selective on
 * every layer, or full on the first recompute_layers (-1: all) layers of each stage; the
 * stages are the plan's stage_layers (one stage of every layer when it has none). */
void pp_recompute_modes(const struct plan *p, int layers, unsigned char *out);

void pp_set_ready_hook(struct pp *p, pp_ready_fn fn, void *arg);

/* One training step over the schedule's m micro-batches. tokens and targets are (m, B, T)
 * (T/cp rows of each sequence under context parallelism, the rank's zig-zag rows):
 * micro-batch j of direction d is row d*mb_per_dir + j. tokens are read only where stage 0
 * lives and targets where the last stage lives (NULL is accepted elsewhere). *loss (may be
 * NULL) is the step's mean loss (cross-entropy + MoE aux), the same on every pipeline rank.
 * After a failure the executor refuses further steps. */
int pp_step(struct pp *p, const int *tokens, const int *targets, float *loss, char *err);

/* llama_step on the tensors this rank holds: clipping by the global gradient norm over the
 * whole pipeline (each tensor counted once), then AdamW on every copy. *grad_norm may be NULL. */
int pp_adamw_step(struct pp *p, const struct adamw_opts *o, float *grad_norm, char *err);

/* pp_adamw_step with the norm also summed over the model's TP and EP groups and
 * groups[0..ngroups) (at most 4, orthogonal to them and to the pipeline group), counting each
 * tensor once: TP-replicated ones on TP rank 0, all but routed experts on EP rank 0. The
 * gradients must already be reduced over data parallelism. */
int pp_adamw_step_par(struct pp *p, const struct adamw_opts *o, struct comm *const *groups, int ngroups,
                      float *grad_norm, char *err);

/* The shard description of model copy `copy` on pipeline rank `rank`: the layer ranges of
 * its chunks of that direction (at most s->chunks), whether it holds stage 0 (embedding)
 * and the last stage (head). */
int pp_copy_par(const struct sched *s, int rank, const int *stage_layers, int copy,
                struct llama_layer_range *ranges, int *n_ranges, int *has_embed, int *has_head);
/* As pp_create_from_ctx, but the executor builds and owns sharded models: each copy is
 * llama_create_par(cfg, lo, base with this rank's layer ranges, embedding and head), so a
 * rank allocates only its stages (base gives the TP, CP and EP groups). */
int pp_create_sharded(const struct ctx *x, const struct model *cfg, const struct llama_opts *lo,
                      const struct llama_par *base, struct pp **out, char *err);
struct llama *pp_model(const struct pp *p, int copy);  /* NULL past the copies */

int pp_act_sets(const struct pp *p);              /* activation sets in the pool */
/* Message buffers (B*T*hidden floats each) allocated so far: at most the receives posted
 * ahead plus the sends not yet matched by their receiver. */
int pp_msg_buffers(const struct pp *p);
/* Bytes of the activation sets and the message buffers allocated so far. */
double pp_act_bytes(const struct pp *p);
int pp_copies(const struct pp *p);                /* model copies (2 for DualPipe) */
/* 1 when this rank holds tensor `spec` of copy `copy` (see the invariant above). */
int pp_holds(const struct pp *p, int copy, int spec);
/* The last step's op records, one per op of this rank in list order. */
const struct pp_op_time *pp_times(const struct pp *p, size_t *n);
const struct sched *pp_sched(const struct pp *p);

#endif
