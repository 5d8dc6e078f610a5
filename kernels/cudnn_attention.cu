/* cudnn_attention — the context of kernels/cudnn_attention.h: the cuDNN handle, the per-shape
 * plan cache, the workspace, and the variant packs that bind the packed qkv / out / lse / dout /
 * dqkv buffers to the graphs of kernels/cudnn_attention_graph.cu.
 *
 * Backward workspace layout: [cuDNN's workspace | fp32 softmax row sums (B, H, T) | fp32 dQ
 * accumulator (B, H, T, d)], each part 256-byte aligned. cuDNN >= 9.6 clears the accumulator
 * itself (as cudnn-frontend assumes); older versions need it zeroed, which is done here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cudnn_attention_impl.h"

#define ATT_CACHE 16

struct att_entry {
	int used;
	struct att_shape shape;
	struct att_graph graph;
	float scale, neginf, one;    /* by-value scalars: read by cudnnBackendExecute from host memory */
};

struct cudnn_att {
	cudnnHandle_t handle;
	void *workspace;
	size_t workspace_bytes;
	int next;                    /* entry to reuse once the cache is full */
	struct att_entry cache[ATT_CACHE];
};

static size_t align256(size_t n) { return (n + 255) / 256 * 256; }

static int att_err(char *err, const struct att_shape *sh, const char *what, cudnnStatus_t st)
{
	char detail[160] = "";
	cudnnGetLastErrorString(detail, sizeof detail);
	if (err)
		snprintf(err, 256, "cudnn_attention: %s B=%d T=%d H=%d Hkv=%d d=%d: %s: %s%s%s", sh->bwd ? "backward" : "forward",
		         sh->B, sh->T, sh->H, sh->Hkv, sh->d, what ? what : "?", cudnnGetErrorString(st), detail[0] ? "; " : "",
		         detail);
	return -1;
}

int cudnn_att_create(struct cudnn_att **out, char *err)
{
	*out = NULL;
	struct cudnn_att *a = (struct cudnn_att *)calloc(1, sizeof *a);
	if (!a) {
		if (err) snprintf(err, 256, "cudnn_attention: out of host memory");
		return -1;
	}
	cudnnStatus_t st = cudnnCreate(&a->handle);
	if (st != CUDNN_STATUS_SUCCESS) {
		free(a);
		if (err) snprintf(err, 256, "cudnn_attention: cudnnCreate: %s", cudnnGetErrorString(st));
		return -1;
	}
	*out = a;
	return 0;
}

void cudnn_att_destroy(struct cudnn_att *a)
{
	if (!a) return;
	for (int i = 0; i < ATT_CACHE; i++)
		if (a->cache[i].used) att_graph_release(&a->cache[i].graph);
	cudaFree(a->workspace);
	cudnnDestroy(a->handle);
	free(a);
}

int cudnn_att_cached(const struct cudnn_att *a)
{
	int n = 0;
	for (int i = 0; i < ATT_CACHE; i++) n += a->cache[i].used;
	return n;
}

/* bytes of the workspace a plan needs, extras of the backward included */
static size_t need_bytes(const struct att_entry *e)
{
	const struct att_shape *sh = &e->shape;
	size_t n = align256((size_t)e->graph.workspace_bytes);
	if (sh->bwd) {
		n += align256(sizeof(float) * (size_t)sh->B * sh->H * sh->T);
		n += align256(sizeof(float) * (size_t)sh->B * sh->H * sh->T * sh->d);
	}
	return n;
}

static int check_shape(const struct att_shape *sh, char *err)
{
	const char *why = NULL;
	if (sh->B <= 0 || sh->T <= 0 || sh->H <= 0 || sh->Hkv <= 0 || sh->d <= 0) why = "every dimension must be positive";
	else if (sh->H % sh->Hkv) why = "Hkv must divide H";
	else if (sh->d % 8) why = "d must be a multiple of 8 (16-byte aligned heads)";
	if (!why) return 0;
	if (err)
		snprintf(err, 256, "cudnn_attention: B=%d T=%d H=%d Hkv=%d d=%d: %s", sh->B, sh->T, sh->H, sh->Hkv, sh->d, why);
	return -1;
}

/* the graphs declare 16-byte aligned tensors */
static int check_aligned(const struct att_shape *sh, const void *const *p, int n, char *err)
{
	for (int i = 0; i < n; i++)
		if ((uintptr_t)p[i] % 16)
			return att_err(err, sh, "a buffer is not 16-byte aligned", CUDNN_STATUS_BAD_PARAM);
	return 0;
}

static struct att_entry *entry_get(struct cudnn_att *a, const struct att_shape *sh, char *err)
{
	struct att_entry *slot = NULL;
	for (int i = 0; i < ATT_CACHE; i++) {
		struct att_entry *e = &a->cache[i];
		if (e->used && !memcmp(&e->shape, sh, sizeof *sh)) return e;
		if (!e->used && !slot) slot = e;
	}
	if (!slot) {
		slot = &a->cache[a->next];
		a->next = (a->next + 1) % ATT_CACHE;
		att_graph_release(&slot->graph);
		slot->used = 0;
	}
	if (att_graph_build(&slot->graph, a->handle, sh)) {
		att_err(err, sh, slot->graph.what, slot->graph.st);
		att_graph_release(&slot->graph);
		return NULL;
	}
	slot->used = 1;
	slot->shape = *sh;
	slot->scale = 1.0f / sqrtf((float)sh->d);
	slot->neginf = -INFINITY;
	slot->one = 1.0f;
	return slot;
}

static int workspace_reserve(struct cudnn_att *a, size_t need, char *err)
{
	if (need <= a->workspace_bytes) return 0;
	cudaFree(a->workspace); /* synchronises: earlier work may still use the old one */
	a->workspace = NULL;
	a->workspace_bytes = 0;
	cudaError_t ce = cudaMalloc(&a->workspace, need);
	if (ce != cudaSuccess) {
		if (err) snprintf(err, 256, "cudnn_attention: workspace of %zu bytes: %s", need, cudaGetErrorString(ce));
		return -1;
	}
	a->workspace_bytes = need;
	return 0;
}

static int execute(struct cudnn_att *a, struct att_entry *e, int n, const int64_t *uids, void *const *ptrs,
                   cudaStream_t s, char *err)
{
	cudnnBackendDescriptor_t vp = NULL;
	cudnnStatus_t st = cudnnSetStream(a->handle, s);
	const char *what = "cudnnSetStream";
	if (st == CUDNN_STATUS_SUCCESS) { what = "variant pack"; st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp); }
	if (st == CUDNN_STATUS_SUCCESS) {
		what = "VARIANT_PACK_UNIQUE_IDS";
		st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
	}
	if (st == CUDNN_STATUS_SUCCESS) {
		what = "VARIANT_PACK_DATA_POINTERS";
		st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
	}
	if (st == CUDNN_STATUS_SUCCESS) {
		what = "VARIANT_PACK_WORKSPACE";
		st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &a->workspace);
	}
	if (st == CUDNN_STATUS_SUCCESS) { what = "variant pack finalize"; st = cudnnBackendFinalize(vp); }
	if (st == CUDNN_STATUS_SUCCESS) { what = "cudnnBackendExecute"; st = cudnnBackendExecute(a->handle, e->graph.plan, vp); }
	if (vp) cudnnBackendDestroyDescriptor(vp);
	return st == CUDNN_STATUS_SUCCESS ? 0 : att_err(err, &e->shape, what, st);
}

int cudnn_att_forward(struct cudnn_att *a, bf16_t *out, float *lse, const bf16_t *qkv, int B, int T, int H, int Hkv,
                      int d, cudaStream_t s, char *err)
{
	struct att_shape sh;
	memset(&sh, 0, sizeof sh); /* compared with memcmp */
	sh.bwd = 0; sh.B = B; sh.T = T; sh.H = H; sh.Hkv = Hkv; sh.d = d;
	if (check_shape(&sh, err)) return -1;
	struct att_entry *e = entry_get(a, &sh, err);
	if (!e || workspace_reserve(a, need_bytes(e), err)) return -1;
	const size_t hd = (size_t)H * d, kvd = (size_t)Hkv * d;
	const int64_t uids[7] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_NEGINF};
	void *const ptrs[7] = {(void *)qkv, (void *)(qkv + hd), (void *)(qkv + hd + kvd), out, lse, &e->scale, &e->neginf};
	if (check_aligned(&sh, ptrs, 5, err)) return -1;
	return execute(a, e, 7, uids, ptrs, s, err);
}

int cudnn_att_backward(struct cudnn_att *a, bf16_t *dqkv, const bf16_t *dout, const bf16_t *qkv, const bf16_t *out,
                       const float *lse, int B, int T, int H, int Hkv, int d, cudaStream_t s, char *err)
{
	struct att_shape sh;
	memset(&sh, 0, sizeof sh);
	sh.bwd = 1; sh.B = B; sh.T = T; sh.H = H; sh.Hkv = Hkv; sh.d = d;
	if (check_shape(&sh, err)) return -1;
	struct att_entry *e = entry_get(a, &sh, err);
	if (!e || workspace_reserve(a, need_bytes(e), err)) return -1;
	const size_t hd = (size_t)H * d, kvd = (size_t)Hkv * d;
	char *ws = (char *)a->workspace;
	float *rowsum = (float *)(ws + align256((size_t)e->graph.workspace_bytes));
	float *dq_acc = (float *)((char *)rowsum + align256(sizeof(float) * (size_t)B * H * T));
	if (cudnnGetVersion() < 90600)
		cudaMemsetAsync(dq_acc, 0, sizeof(float) * (size_t)B * H * T * d, s);
	const int64_t uids[14] = {UID_Q,  UID_K,  UID_V,     UID_O,      UID_STATS, UID_DO,          UID_DQ,
	                          UID_DK, UID_DV, UID_SCALE, UID_NEGINF, UID_ONE,   UID_SOFTMAX_SUM, UID_DQ_ACCUM};
	void *const ptrs[14] = {(void *)qkv, (void *)(qkv + hd), (void *)(qkv + hd + kvd), (void *)out, (void *)lse,
	                        (void *)dout, dqkv, dqkv + hd, dqkv + hd + kvd, &e->scale, &e->neginf, &e->one,
	                        rowsum, dq_acc};
	if (check_aligned(&sh, ptrs, 9, err)) return -1;
	return execute(a, e, 14, uids, ptrs, s, err);
}
