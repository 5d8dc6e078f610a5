/* cudnn_attention_impl — internals shared by kernels/cudnn_attention.cu (context, plan cache,
 * execution) and kernels/cudnn_attention_graph.cu (the two operation graphs). Not a public
 * interface.
 *
 * A `struct att_graph` owns every backend descriptor made while building one plan (tensors,
 * operation descriptors, the graph, engine configs, the plan) and destroys them together; the
 * first failing cuDNN call stops the build and its name and status end up in `what`/`st`.
 * Tensor unique ids below 100 are the graph's inputs and outputs (bound in the variant pack);
 * virtual tensors count up from 100. */
#ifndef SCALEPLAN_KERNELS_CUDNN_ATTENTION_IMPL_H
#define SCALEPLAN_KERNELS_CUDNN_ATTENTION_IMPL_H

#include <cudnn_graph.h>
#include "kernels/cudnn_attention.h"

#define ATT_MAX_DESC 160
#define ATT_MAX_OPS 48

/* unique ids of the non-virtual tensors */
enum {
	UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_NEGINF, UID_DO, UID_DQ, UID_DK, UID_DV, UID_ONE,
	UID_SOFTMAX_SUM, UID_DQ_ACCUM
};

struct att_shape {
	int bwd;
	int B, T, H, Hkv, d;
};

struct att_graph {
	cudnnBackendDescriptor_t owned[ATT_MAX_DESC];
	int nowned;
	cudnnBackendDescriptor_t ops[ATT_MAX_OPS];
	int nops;
	int64_t next_uid;
	cudnnStatus_t st;
	const char *what;            /* the call that failed */
	cudnnBackendDescriptor_t plan;
	int64_t workspace_bytes;     /* cuDNN's own workspace for the plan */
};

/* Builds the forward or backward graph of shape sh and finalizes a plan for it on handle h.
 * Returns 0, or -1 with g->st / g->what (or g->what alone for "no engine") describing why. */
int att_graph_build(struct att_graph *g, cudnnHandle_t h, const struct att_shape *sh);
void att_graph_release(struct att_graph *g);

#endif
