/* tp — the communication of tensor parallelism (Shoeybi et al. 2019, Megatron-LM) and of
 * sequence parallelism (Korthikanti et al. 2022, model.md §3.2) as the model pass uses it,
 * plus the vocabulary-parallel cross-entropy. Every function that takes a communicator is
 * collective over the TP group `g`; g == NULL or a group of one makes it a no-op (or the
 * single-rank computation).
 *
 * Megatron's conjugate operators around a column-parallel linear followed by a row-parallel
 * one, on activations of N tokens × w features:
 *                   before column-parallel (fwd / bwd)      after row-parallel (fwd / bwd)
 *   without SP      identity / all-reduce                   all-reduce / identity
 *   with SP         all-gather / reduce-scatter             reduce-scatter / all-gather
 * With SP each rank holds tokens [rank·N/tp, (rank+1)·N/tp) of the residual stream.
 *
 * Every buffer is memory of the backend instance k (kernels/backend.h): activations (marked
 * so) are elements of k's row and travel as COMM_BF16 on a 2-byte row, COMM_F32 on a 4-byte
 * one; the loss statistics, maxima and gradients are fp32 on every row. Kernels run through
 * k; each collective first waits for the kernels issued before it (kern_sync), since the
 * communicator (NCCL's stream, or MPI on the host) does not order itself after them.
 *
 * Ownership: the caller owns every buffer and the instance. Units: element counts. Errors
 * return -1 with a message naming the operation. */
#ifndef SCALEPLAN_RUNTIME_TP_H
#define SCALEPLAN_RUNTIME_TP_H

#include <stddef.h>
#include "kernels/backend.h"
#include "runtime/comm.h"

int tp_size_of(const struct comm *g); /* 1 for NULL */
int tp_rank_of(const struct comm *g); /* 0 for NULL */
/* The communication type of k's activation elements: COMM_BF16 (2 bytes) or COMM_F32 (4). */
enum comm_dtype tp_act_dtype(const struct kern *k);

/* SP all-gather along the sequence, in place (activations): rank r's local_count elements are
 * at full + r·local_count on entry; on return `full` holds every rank's. */
int tp_seq_gather(struct comm *g, struct kern *k, float *full, size_t local_count, char *err);

/* Turns per-rank partial sums (full_count activation elements) into the sum: without sp an
 * all-reduce into `out` (out may be `partial`); with sp a reduce-scatter, out getting this
 * rank's full_count/tp elements (out must not overlap partial). */
int tp_reduce(struct comm *g, struct kern *k, int sp, float *partial, float *out, size_t full_count, char *err);

/* In-place sum of count fp32 values (gradients, router weight gradients). */
int tp_allreduce(struct comm *g, struct kern *k, float *buf, size_t count, char *err);

/* ---- vocabulary-parallel softmax cross-entropy (Megatron's vocab_parallel_cross_entropy)
 * Each rank holds logits (N, V_local) for vocabulary ids [v0, v0 + V_local). The global max
 * comes from an all-gather of per-rank maxima (the comm layer reduces by sum only), then the
 * sums of exp(z - max) and the target logit (found on one rank, 0 elsewhere) are all-reduced
 * together. Same outputs as crossentropy_forward over the whole vocabulary: targets < 0 give
 * loss 0 and lse 0. logits are activations; losses, lse and scratch (tp_ce_scratch_floats(N,
 * tp) floats) fp32. The steps between the collectives are k's ce_shard_* entries
 * (kernels/cpu_shard.h). */
size_t tp_ce_scratch_floats(int N, int tp);
int tp_crossentropy_forward(struct comm *g, struct kern *k, float *losses /* (N) */, float *lse /* (N) */,
                            const float *logits /* (N, V_local) */, const int *targets /* (N) */,
                            int N, int V_local, int v0, float *scratch, char *err);
/* dloss · (softmax - onehot) on the local columns; no communication (lse is global).
 * dlogits may alias logits. */
void tp_crossentropy_backward(struct kern *k, float *dlogits, const float *logits, const float *lse,
                              const int *targets, float dloss, int N, int V_local, int v0);

#endif
