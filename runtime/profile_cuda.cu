/* profile_cuda — the CUDA backend of the profiler (runtime/profile.h), in bf16, with the
 * kernels the bf16 training path runs: GEMMs through cuBLASLt (kernels/cublaslt_gemm.h: bf16
 * in, fp32 accumulate, bf16 out, the linear layer's forward), causal attention forward and
 * backward through cuDNN's fused graphs (kernels/cudnn_attention.h, one sequence, H query and
 * H kv heads), the element-wise pass as RMSNorm forward then SwiGLU forward
 * (kernels/cuda_bf16.h), the streaming pass as a device-to-device copy, and device buffers
 * for NCCL collectives (the collective world is NCCL's, runtime/comm_nccl.h). Every call is
 * enqueued on the workspace's one stream and sync() waits for it, so the driver's host clock
 * around calls + sync is device time plus one synchronisation.
 *
 * This row exists only in a build that links it (`make CUDA=1`, which names profile_cuda to
 * the linker): runtime/profile.c refers to it weakly, so the CPU build has no CUDA symbol.
 *
 * Ownership: the workspace owns its stream, the cuBLASLt and cuDNN contexts (which cache a
 * plan per shape: the driver's warm-up call builds it) and every buffer, sized once by open()
 * for the largest shapes. Units: bytes, element counts where kernels take them.
 * Invariant a reader could not guess: inputs are pseudo-random bf16 values in [-0.5, 0.5),
 * so that no kernel meets denormals, infinities or NaNs that would change its speed; the
 * attention backward reads the output and log-sum-exp that the forward at the same length
 * wrote just before (the driver times forward, then backward, at each length). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cublaslt_gemm.h"
#include "kernels/cudnn_attention.h"
#include "runtime/comm_nccl.h"
extern "C" {
#include "runtime/profile.h"
#include "sim/util.h"
}

extern "C" const struct profile_backend profile_cuda;

/* the element-wise pass's row width: a hidden size of the order decoder blocks use, so that
 * RMSNorm runs one block per row over many rows */
#define ELEM_C 1024

struct cuda_ws {
	struct profile_limits lim;
	int device;
	cudaStream_t s;
	struct cublaslt *lt;
	struct cudnn_att *att;
	bf16_t *a, *w, *out;                 /* GEMM: (max_dim, max_dim) each */
	bf16_t *qkv, *att_out, *dout, *dqkv; /* attention: (T, 3Hd), (T, Hd), (T, Hd), (T, 3Hd) */
	float *lse;                          /* (H, T) */
	bf16_t *e_in, *e_out, *e_act, *e_w;  /* element-wise: max_bytes each but e_w (ELEM_C) */
	float *e_rstd;                       /* (rows) */
	void *cbuf[2];                       /* collectives: max_bytes each */
	size_t e_elems;                      /* bf16 elements of e_in, e_out */
};

/* x_i = hash(seed, i) mapped to [-0.5, 0.5): the same values on every run */
__global__ static void k_fill(bf16_t *p, size_t n, unsigned seed)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		unsigned x = (unsigned)i * 2654435761u ^ seed * 2246822519u;
		x ^= x >> 15;
		x *= 2246822519u;
		x ^= x >> 13;
		p[i] = __float2bfloat16((float)(x & 0xffff) / 65536.0f - 0.5f);
	}
}

static int cuda_fail(const char *what, cudaError_t e, char *err)
{
	return errf(err, "profile: cuda: %s: %s", what, cudaGetErrorString(e));
}

static void cuda_close(void *p)
{
	struct cuda_ws *ws = (struct cuda_ws *)p;
	if (!ws) return;
	cudaSetDevice(ws->device);
	if (ws->s) cudaStreamSynchronize(ws->s);
	void *bufs[] = {ws->a, ws->w, ws->out, ws->qkv, ws->att_out, ws->dout, ws->dqkv, ws->lse,
			ws->e_in, ws->e_out, ws->e_act, ws->e_w, ws->e_rstd, ws->cbuf[0], ws->cbuf[1]};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) cudaFree(bufs[i]);
	cublaslt_destroy(ws->lt);
	cudnn_att_destroy(ws->att);
	if (ws->s) cudaStreamDestroy(ws->s);
	free(ws);
}

/* n elements of `bytes` each into *p; bf16 buffers are filled with seed (0: zeroed) */
static int dev_alloc(void **p, size_t n, size_t bytes, unsigned seed, cudaStream_t s, char *err)
{
	cudaError_t e = cudaMalloc(p, (n ? n : 1) * bytes);
	if (e != cudaSuccess) return errf(err, "profile: cuda: %zu bytes of device memory: %s", n * bytes, cudaGetErrorString(e));
	if (seed && bytes == sizeof(bf16_t) && n) {
		unsigned g = (unsigned)((n + 255) / 256 < 65535u * 16 ? (n + 255) / 256 : 65535u * 16);
		k_fill<<<g, 256, 0, s>>>((bf16_t *)*p, n, seed);
		e = cudaGetLastError();
	} else {
		e = cudaMemsetAsync(*p, 0, (n ? n : 1) * bytes, s);
	}
	return e == cudaSuccess ? 0 : cuda_fail("filling a buffer", e, err);
}

static int alloc_all(struct cuda_ws *ws, char *err)
{
	const struct profile_limits *lim = &ws->lim;
	size_t g = (size_t)lim->max_dim * lim->max_dim, T = (size_t)lim->max_seq;
	size_t hd = (size_t)lim->heads * lim->head_dim, B = sizeof(bf16_t);
	ws->e_elems = lim->max_bytes / B;
	size_t rows = ws->e_elems / ELEM_C + 1;
	cudaStream_t s = ws->s;
	if (dev_alloc((void **)&ws->a, g, B, 1, s, err) || dev_alloc((void **)&ws->w, g, B, 2, s, err) ||
	    dev_alloc((void **)&ws->out, g, B, 0, s, err) || dev_alloc((void **)&ws->qkv, T * 3 * hd, B, 4, s, err) ||
	    dev_alloc((void **)&ws->att_out, T * hd, B, 0, s, err) || dev_alloc((void **)&ws->dout, T * hd, B, 6, s, err) ||
	    dev_alloc((void **)&ws->dqkv, T * 3 * hd, B, 0, s, err) ||
	    dev_alloc((void **)&ws->lse, (size_t)lim->heads * T, sizeof(float), 0, s, err) ||
	    dev_alloc((void **)&ws->e_in, ws->e_elems, B, 10, s, err) || dev_alloc((void **)&ws->e_out, ws->e_elems, B, 0, s, err) ||
	    dev_alloc((void **)&ws->e_act, ws->e_elems / 2 + 1, B, 0, s, err) || dev_alloc((void **)&ws->e_w, ELEM_C, B, 12, s, err) ||
	    dev_alloc((void **)&ws->e_rstd, rows, sizeof(float), 0, s, err) ||
	    dev_alloc(&ws->cbuf[0], lim->max_bytes, 1, 0, s, err) || dev_alloc(&ws->cbuf[1], lim->max_bytes, 1, 0, s, err))
		return -1;
	cudaError_t e = cudaStreamSynchronize(s);
	return e == cudaSuccess ? 0 : cuda_fail("filling the workspace", e, err);
}

static int cuda_open(const struct profile_limits *lim, int device, void **out, char *err)
{
	struct cuda_ws *ws = (struct cuda_ws *)calloc(1, sizeof(*ws));
	if (!ws) return errf(err, "profile: out of memory");
	ws->lim = *lim;
	ws->device = device;
	cudaError_t e = cudaSetDevice(device);
	if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&ws->s, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		free(ws);
		return errf(err, "profile: cuda: device %d: %s", device, cudaGetErrorString(e));
	}
	if (cublaslt_create(&ws->lt, err) || cudnn_att_create(&ws->att, err) || alloc_all(ws, err)) {
		char why[ERR_LEN];
		snprintf(why, sizeof(why), "%s", err);
		cuda_close(ws);
		return errf(err, "%s (device %d, max dim %d, max seq %d, %zu bytes)", why, device, lim->max_dim,
			    lim->max_seq, lim->max_bytes);
	}
	*out = ws;
	return 0;
}

/* out (M, N) = a (M, K) · w (N, K)ᵀ: cublaslt_linear_forward with N rows, IC = K, OC = N */
static int cuda_gemm(void *p, int M, int N, int K, char *err)
{
	struct cuda_ws *ws = (struct cuda_ws *)p;
	if (M > ws->lim.max_dim || N > ws->lim.max_dim || K > ws->lim.max_dim)
		return errf(err, "profile: gemm %dx%dx%d beyond the workspace", M, N, K);
	return cublaslt_linear_forward(ws->lt, ws->out, ws->a, ws->w, NULL, M, K, N, ws->s, err);
}

static int cuda_attention(void *p, int T, int H, int d, int backward, char *err)
{
	struct cuda_ws *ws = (struct cuda_ws *)p;
	if (T > ws->lim.max_seq || H > ws->lim.heads || d > ws->lim.head_dim)
		return errf(err, "profile: attention T %d beyond the workspace", T);
	if (!backward) return cudnn_att_forward(ws->att, ws->att_out, ws->lse, ws->qkv, 1, T, H, H, d, ws->s, err);
	return cudnn_att_backward(ws->att, ws->dqkv, ws->dout, ws->qkv, ws->att_out, ws->lse, 1, T, H, H, d, ws->s, err);
}

/* RMSNorm forward over N rows of ELEM_C (reads x and the gain, writes y and rstd), then SwiGLU
 * forward over y taken as gate|up pairs of width ELEM_C/2 (reads y, writes half as much):
 * the two kinds of memory-bound pass a decoder block runs besides its GEMMs. Bytes moved, each
 * byte a kernel must read or write counted once:
 *   RMSNorm 2·N·C (x) + 2·C (gain) + 2·N·C (y) + 4·N (rstd), SwiGLU 2·N·C (y) + 2·N·C/2 (out)
 *   = 7·N·C + 2·C + 4·N bytes. */
static int cuda_elementwise(void *p, size_t bytes, double *moved, char *err)
{
	struct cuda_ws *ws = (struct cuda_ws *)p;
	size_t n = bytes / sizeof(bf16_t);
	if (n > ws->e_elems || n < ELEM_C) return errf(err, "profile: element-wise pass of %zu bytes out of range", bytes);
	int C = ELEM_C, N = (int)(n / ELEM_C);
	cuda_bf16_rmsnorm_forward(ws->e_out, ws->e_rstd, ws->e_in, ws->e_w, N, C, 1e-5f, ws->s);
	cuda_bf16_swiglu_forward(ws->e_act, ws->e_out, N, C / 2, ws->s);
	*moved = 7.0 * N * C + 2.0 * C + 4.0 * N;
	return 0;
}

static int cuda_stream(void *p, size_t bytes, char *err)
{
	struct cuda_ws *ws = (struct cuda_ws *)p;
	if (bytes > ws->lim.max_bytes) return errf(err, "profile: stream of %zu bytes beyond the workspace", bytes);
	cudaError_t e = cudaMemcpyAsync(ws->e_out, ws->e_in, bytes, cudaMemcpyDeviceToDevice, ws->s);
	return e == cudaSuccess ? 0 : cuda_fail("device-to-device copy", e, err);
}

static void *cuda_comm_buf(void *p, int which) { return ((struct cuda_ws *)p)->cbuf[which ? 1 : 0]; }

/* the stream drained, then any launch error the kernels left (they return nothing) */
static int cuda_sync(void *p, char *err)
{
	struct cuda_ws *ws = (struct cuda_ws *)p;
	cudaError_t e = cudaStreamSynchronize(ws->s);
	if (e != cudaSuccess) return cuda_fail("stream synchronize", e, err);
	return cuda_bf16_last_error(err);
}

static int cuda_device_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError(); /* no driver or no device: clear the error, report none */
		return 0;
	}
	return n;
}

static int cuda_coll_world(struct comm *host, int device, struct comm **out, char *err)
{
	return comm_nccl_world(host, device, out, err);
}

static void cuda_device_info(void *p, char *name, size_t len, double *mem_bytes)
{
	struct cuda_ws *ws = (struct cuda_ws *)p;
	cudaDeviceProp prop;
	if (cudaGetDeviceProperties(&prop, ws->device) != cudaSuccess) {
		cudaGetLastError();
		snprintf(name, len, "%s", "");
		*mem_bytes = 0;
		return;
	}
	snprintf(name, len, "%s", prop.name);
	*mem_bytes = (double)prop.totalGlobalMem;
}

/* positional: name, dtype, shares_cores, open, close, gemm, attention, elementwise, stream,
 * comm_buf, sync, device_count, coll_world, device_info */
const struct profile_backend profile_cuda = {
	"cuda", "bf16", 0, cuda_open, cuda_close, cuda_gemm, cuda_attention, cuda_elementwise, cuda_stream,
	cuda_comm_buf, cuda_sync, cuda_device_count, cuda_coll_world, cuda_device_info,
};
