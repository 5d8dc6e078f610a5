/* cublaslt_gemm — see kernels/cublaslt_gemm.h. Each linear is one column-major cuBLASLt matmul
 * D (m, n) = op(A) · op(B) (+ beta·C), with the row-major operands read as their transposes:
 *   forward:   outᵀ (OC, N) = w (OC, IC as col-major (IC, OC), op T) · inpᵀ (IC, N)
 *   dinput:    dinpᵀ (IC, N) = wᵀ (IC, OC) · doutᵀ (OC, N)
 *   dweight:   dwᵀ (IC, OC) += inpᵀ (IC, N) · dout (N, OC, from col-major (OC, N), op T)
 * The workspace and the bias-gradient scratch belong to the context, so calls on one context
 * must be ordered on one stream (they are: the compute stream). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cublasLt.h>
#include "kernels/cublaslt_gemm.h"

#define CACHE_SLOTS 64

struct gemm_key {
	int m, n, k, lda, ldb, ldc;
	int transa, transb, out_f32, epilogue, beta_one;
	int align_a, align_b, align_c, align_bias;
};

struct gemm_entry {
	struct gemm_key key;
	int used;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t a, b, c;
	cublasLtMatmulAlgo_t algo;
};

struct cublaslt {
	cublasLtHandle_t handle;
	void *workspace;
	float *scratch;          /* bias-gradient partials, grown on demand */
	size_t scratch_floats;
	int next;                /* slot to reuse once the cache is full */
	struct gemm_entry cache[CACHE_SLOTS];
};

static int lt_err(char *err, const char *what, cublasStatus_t st)
{
	if (err) snprintf(err, 256, "cublaslt: %s failed (status %d)", what, (int)st);
	return -1;
}

/* the largest power of two <= 256 that divides the address (cuBLASLt's alignment preference) */
static int align_of(const void *p)
{
	const uintptr_t a = (uintptr_t)p;
	int al = 256;
	while (al > 1 && a % (uintptr_t)al) al >>= 1;
	return al;
}

int cublaslt_create(struct cublaslt **out, char *err)
{
	*out = NULL;
	struct cublaslt *g = (struct cublaslt *)calloc(1, sizeof *g);
	if (!g) {
		if (err) snprintf(err, 256, "cublaslt: out of host memory");
		return -1;
	}
	cublasStatus_t st = cublasLtCreate(&g->handle);
	if (st != CUBLAS_STATUS_SUCCESS) {
		free(g);
		return lt_err(err, "cublasLtCreate", st);
	}
	cudaError_t ce = cudaMalloc(&g->workspace, CUBLASLT_WORKSPACE_BYTES);
	if (ce != cudaSuccess) {
		cublasLtDestroy(g->handle);
		free(g);
		if (err) snprintf(err, 256, "cublaslt: workspace of %zu bytes: %s", CUBLASLT_WORKSPACE_BYTES,
		                  cudaGetErrorString(ce));
		return -1;
	}
	*out = g;
	return 0;
}

static void entry_release(struct gemm_entry *e)
{
	if (!e->used) return;
	cublasLtMatrixLayoutDestroy(e->a);
	cublasLtMatrixLayoutDestroy(e->b);
	cublasLtMatrixLayoutDestroy(e->c);
	cublasLtMatmulDescDestroy(e->desc);
	memset(e, 0, sizeof *e);
}

void cublaslt_destroy(struct cublaslt *g)
{
	if (!g) return;
	for (int i = 0; i < CACHE_SLOTS; i++) entry_release(&g->cache[i]);
	cudaFree(g->workspace);
	cudaFree(g->scratch);
	cublasLtDestroy(g->handle);
	free(g);
}

int cublaslt_cached(const struct cublaslt *g)
{
	int n = 0;
	for (int i = 0; i < CACHE_SLOTS; i++) n += g->cache[i].used;
	return n;
}

static int set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const void *v, size_t size,
                    char *err)
{
	cublasStatus_t st = cublasLtMatmulDescSetAttribute(d, attr, v, size);
	return st == CUBLAS_STATUS_SUCCESS ? 0 : lt_err(err, "cublasLtMatmulDescSetAttribute", st);
}

/* Descriptors, layouts and the heuristic's first algorithm for key k (stored in e). The bias
 * pointer is set before the query: the heuristic reads its alignment from it. */
static int entry_build(struct cublaslt *g, struct gemm_entry *e, const struct gemm_key *k, const void *bias,
                       char *err)
{
	memset(e, 0, sizeof *e);
	e->key = *k;
	cublasStatus_t st = cublasLtMatmulDescCreate(&e->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	if (st != CUBLAS_STATUS_SUCCESS) return lt_err(err, "cublasLtMatmulDescCreate", st);
	const cublasOperation_t ta = k->transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
	const cublasLtEpilogue_t epi = (cublasLtEpilogue_t)k->epilogue;
	const cudaDataType_t ctype = k->out_f32 ? CUDA_R_32F : CUDA_R_16BF, btype = CUDA_R_16BF;
	int rc = set_desc(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta, err);
	if (!rc) rc = set_desc(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb, err);
	if (!rc) rc = set_desc(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi, err);
	if (!rc && epi == CUBLASLT_EPILOGUE_BIAS)
		rc = set_desc(e->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &btype, sizeof btype, err);
	if (!rc && epi == CUBLASLT_EPILOGUE_BIAS)
		rc = set_desc(e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias, err);
	if (rc) { cublasLtMatmulDescDestroy(e->desc); return -1; }
	/* stored (pre-op) shapes: A is m x k, or k x m when transposed; B is k x n, or n x k */
	st = cublasLtMatrixLayoutCreate(&e->a, CUDA_R_16BF, k->transa ? k->k : k->m, k->transa ? k->m : k->k, k->lda);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&e->b, CUDA_R_16BF, k->transb ? k->n : k->k, k->transb ? k->k : k->n, k->ldb);
	if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&e->c, ctype, k->m, k->n, k->ldc);
	if (st != CUBLAS_STATUS_SUCCESS) {
		e->used = 1;
		entry_release(e);
		return lt_err(err, "cublasLtMatrixLayoutCreate", st);
	}
	e->used = 1;
	cublasLtMatmulPreference_t pref;
	st = cublasLtMatmulPreferenceCreate(&pref);
	if (st != CUBLAS_STATUS_SUCCESS) { entry_release(e); return lt_err(err, "cublasLtMatmulPreferenceCreate", st); }
	const uint64_t ws = CUBLASLT_WORKSPACE_BYTES;
	const uint32_t al[4] = {(uint32_t)k->align_a, (uint32_t)k->align_b, (uint32_t)k->align_c, (uint32_t)k->align_c};
	cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
	cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], sizeof al[0]);
	cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], sizeof al[1]);
	cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], sizeof al[2]);
	cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], sizeof al[3]);
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	memset(&res, 0, sizeof res);
	st = cublasLtMatmulAlgoGetHeuristic(g->handle, e->desc, e->a, e->b, e->c, e->c, pref, 1, &res, &found);
	cublasLtMatmulPreferenceDestroy(pref);
	if (st != CUBLAS_STATUS_SUCCESS || found < 1) {
		entry_release(e);
		if (err)
			snprintf(err, 256, "cublaslt: no algorithm for m=%d n=%d k=%d (transa %d, transb %d, %s out, epilogue %d, "
			         "status %d)", k->m, k->n, k->k, k->transa, k->transb, k->out_f32 ? "fp32" : "bf16",
			         k->epilogue, (int)st);
		return -1;
	}
	e->algo = res.algo;
	return 0;
}

static struct gemm_entry *entry_get(struct cublaslt *g, const struct gemm_key *k, const void *bias, char *err)
{
	struct gemm_entry *freeslot = NULL;
	for (int i = 0; i < CACHE_SLOTS; i++) {
		struct gemm_entry *e = &g->cache[i];
		if (e->used && !memcmp(&e->key, k, sizeof *k)) return e;
		if (!e->used && !freeslot) freeslot = e;
	}
	if (!freeslot) {
		freeslot = &g->cache[g->next];
		g->next = (g->next + 1) % CACHE_SLOTS;
		entry_release(freeslot);
	}
	return entry_build(g, freeslot, k, bias, err) ? NULL : freeslot;
}

/* One matmul D = op(A)·op(B) + beta·D (C and D are the same buffer). */
static int matmul(struct cublaslt *g, struct gemm_key k, const void *A, const void *B, void *D, const void *bias,
                  cudaStream_t s, char *err)
{
	if (k.m <= 0 || k.n <= 0) return 0;
	k.align_a = align_of(A);
	k.align_b = align_of(B);
	k.align_c = align_of(D);
	k.align_bias = bias ? align_of(bias) : 0;
	if (k.k <= 0 && !k.beta_one) {
		/* an empty sum: cuBLASLt rejects k = 0, the result is zero */
		cudaMemsetAsync(D, 0, (size_t)k.ldc * k.n * (k.out_f32 ? 4 : 2), s);
		return 0;
	}
	if (k.k <= 0) return 0;
	struct gemm_entry *e = entry_get(g, &k, bias, err);
	if (!e) return -1;
	if (bias && set_desc(e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias, err)) return -1;
	const float one = 1.0f, beta = k.beta_one ? 1.0f : 0.0f;
	cublasStatus_t st = cublasLtMatmul(g->handle, e->desc, &one, A, e->a, B, e->b, &beta, D, e->c, D, e->c, &e->algo,
	                                   g->workspace, CUBLASLT_WORKSPACE_BYTES, s);
	return st == CUBLAS_STATUS_SUCCESS ? 0 : lt_err(err, "cublasLtMatmul", st);
}

static struct gemm_key key_of(int m, int n, int k, int lda, int ldb, int ldc, int ta, int tb, int out_f32, int beta_one)
{
	struct gemm_key key;
	memset(&key, 0, sizeof key); /* the key is compared with memcmp */
	key.m = m; key.n = n; key.k = k;
	key.lda = lda; key.ldb = ldb; key.ldc = ldc;
	key.transa = ta; key.transb = tb;
	key.out_f32 = out_f32;
	key.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
	key.beta_one = beta_one;
	return key;
}

int cublaslt_linear_forward(struct cublaslt *g, bf16_t *out, const bf16_t *inp, const bf16_t *w, const bf16_t *bias,
                            int N, int IC, int OC, cudaStream_t s, char *err)
{
	struct gemm_key k = key_of(OC, N, IC, IC, IC, OC, 1, 0, 0, 0);
	if (bias) k.epilogue = CUBLASLT_EPILOGUE_BIAS;
	if (bias && IC <= 0) {
		if (err) snprintf(err, 256, "cublaslt: linear_forward with IC = %d and a bias is not supported", IC);
		return -1;
	}
	return matmul(g, k, w, inp, out, bias, s, err);
}

int cublaslt_linear_forward_f32(struct cublaslt *g, float *out, const bf16_t *inp, const bf16_t *w,
                                int N, int IC, int OC, cudaStream_t s, char *err)
{
	return matmul(g, key_of(OC, N, IC, IC, IC, OC, 1, 0, 1, 0), w, inp, out, NULL, s, err);
}

int cublaslt_linear_backward_input(struct cublaslt *g, bf16_t *dinp, const bf16_t *dout, const bf16_t *w,
                                   int N, int IC, int OC, int accumulate, cudaStream_t s, char *err)
{
	return matmul(g, key_of(IC, N, OC, IC, OC, IC, 0, 0, 0, accumulate != 0), w, dout, dinp, NULL, s, err);
}

static int scratch_reserve(struct cublaslt *g, size_t floats, char *err)
{
	if (floats <= g->scratch_floats) return 0;
	cudaFree(g->scratch);
	g->scratch = NULL;
	g->scratch_floats = 0;
	cudaError_t ce = cudaMalloc(&g->scratch, floats * sizeof(float));
	if (ce != cudaSuccess) {
		if (err) snprintf(err, 256, "cublaslt: bias-gradient scratch of %zu floats: %s", floats, cudaGetErrorString(ce));
		return -1;
	}
	g->scratch_floats = floats;
	return 0;
}

int cublaslt_linear_backward_weight(struct cublaslt *g, float *dw, float *dbias, const bf16_t *dout,
                                    const bf16_t *inp, int N, int IC, int OC, cudaStream_t s, char *err)
{
	if (matmul(g, key_of(IC, OC, N, IC, OC, IC, 0, 1, 1, 1), inp, dout, dw, NULL, s, err)) return -1;
	if (!dbias || N <= 0 || OC <= 0) return 0;
	if (scratch_reserve(g, cuda_bf16_colsum_scratch_floats(N, OC), err)) return -1;
	cuda_bf16_bias_backward(dbias, dout, g->scratch, N, OC, s);
	return 0;
}
