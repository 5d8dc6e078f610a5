/* ep — expert parallelism for one MoE layer (GShard, Lepikhin et al. 2020; Megatron-LM MoE;
 * model.md §3.2 EP): experts 0..E−1 are split contiguously over the EP group, rank r owning
 * experts [r·El, (r+1)·El) with El = E/ep. Dispatch sends each routed assignment's input row
 * to the rank owning its expert (per-expert row counts first, with an all-to-all, then the
 * rows with an all-to-all-v); the owner runs its experts (SwiGLU, the kernels and weight
 * layout of runtime/model_pass.c) on the rows it received; combine sends the output rows
 * back and adds them to their tokens weighted by the router, as moe_combine does. Backward
 * mirrors it: the input-gradient pass (B) sends dY to the owners and dX back; the
 * weight-gradient pass (W) only accumulates the local experts' gradients from what B kept.
 * The router itself (logits, top-k, aux loss) stays with the caller, on every rank.
 *
 * Every kernel runs through a backend instance k (kernels/backend.h): x, out, dx, dout and
 * the expert buffers are activations of k's row (rows travel as COMM_BF16 on a 2-byte row,
 * COMM_F32 on a 4-byte one), topk_w and dtopk_w fp32, topk_idx ints, all k's memory; w_local
 * is the weights the kernels read (the compute copy on a row that has one) and dw_local the
 * fp32 gradients. The host reads the expert offsets and the routing (to check it) through
 * explicit copies; every exchange first waits for the kernels issued before it (kern_sync).
 *
 * Ownership: struct ep_batch holds one micro-batch's exchange plan (counts, displacements,
 * permutations) and the expert activations the backward needs, from ep_forward until the
 * next ep_forward; create one per MoE layer and micro-batch in flight. Its received-row buffers
 * grow to the largest count seen (the number of rows a rank receives depends on the routing);
 * they and the permutations are k's memory, the plan below host memory. The communicator and
 * the instance are borrowed; the caller owns x, out, the routing arrays and the weights.
 * Units: element counts; counts and displacements in plan are in elements (rows · C).
 *
 * Invariant a reader could not guess: received rows are regrouped expert-major with the
 * sending ranks in rank order and each rank's rows in its own (stable) dispatch order, so
 * expert e sees its rows in the order the single-rank layer over the concatenated ranks'
 * tokens would (moe_dispatch is a stable sort); every call is collective over the group. */
#ifndef SCALEPLAN_RUNTIME_EP_H
#define SCALEPLAN_RUNTIME_EP_H

#include <stddef.h>
#include "kernels/backend.h"
#include "runtime/comm.h"

/* One micro-batch's exchange plan (host memory); filled by ep_forward, read by the backward
 * passes. moe_dispatch's permutations and the wire/local maps live in the batch, on k. */
struct ep_plan {
	int n, rank;                 /* EP group size, this rank's position in it */
	int N, E, El, k, C, Fe;      /* local tokens, experts (all, per rank), top-k, widths */
	int *offsets;                /* (E+1) local assignments by expert, moe_dispatch's (a copy) */
	int *recv_rows;              /* (n·El) rows from rank p for local expert j: [p·El + j] */
	int *loc_offsets;            /* (El+1) received rows of local expert j: [loc[j], loc[j+1]) */
	size_t *send_counts, *send_displs, *recv_counts, *recv_displs; /* (n) dispatch, in elements */
	int R;                       /* rows received by this rank's experts */
};

struct ep_batch;

/* Checks the shapes (E a multiple of the group size, 1 <= k <= E, widths positive) and
 * sizes the token-side buffers for N tokens. Not collective. */
int ep_batch_create(struct ep_batch **out, struct comm *ep, struct kern *k, int N, int E, int topk, int C,
                    int Fe, char *err);
void ep_batch_destroy(struct ep_batch *b);
const struct ep_plan *ep_batch_plan(const struct ep_batch *b);

/* out (N, C) += Σ_j topk_w[n, j] · expert_{topk_idx[n, j]}(x[n]).
 * topk_idx/topk_w as moe_router_forward gives them; w_local holds this rank's El experts,
 * expert j at w_local + j·3·Fe·C elements: gate|up (2Fe, C) then down (C, Fe), as in
 * runtime/model.c.
 * Collective over the EP group. */
int ep_forward(struct ep_batch *b, float *out /* (N, C), += */, const float *x /* (N, C) */,
               const int *topk_idx /* (N, k) */, const float *topk_w /* (N, k) */,
               const float *w_local, char *err);
/* Input-gradient pass: dx (N, C) += d/dx, dtopk_w (N, k) overwritten (for the router's
 * backward), from dout (N, C) and the topk_w of the forward. Collective. */
int ep_backward_input(struct ep_batch *b, float *dx /* (N, C), += */, float *dtopk_w /* (N, k) */,
                      const float *dout /* (N, C) */, const float *topk_w, const float *w_local,
                      char *err);
/* Weight-gradient pass: dw_local (layout of w_local) += the local experts' gradients.
 * Local only; needs ep_backward_input of the same micro-batch first. */
int ep_backward_weight(struct ep_batch *b, float *dw_local, char *err);

#endif
