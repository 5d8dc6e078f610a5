/* profile_cpu — the CPU backend of the profiler: the runtime's own fp32 kernels (OpenBLAS
 * sgemm through linear_forward, the blockwise causal attention, RMSNorm and SwiGLU) on host
 * buffers sized once for the largest shapes. Inputs are small pseudo-random values so that no
 * kernel meets denormals or infinities that would change its speed. */
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu.h"
#include "runtime/profile.h"
#include "sim/util.h"

struct cpu_ws {
	struct profile_limits lim;
	float *a, *w, *out;              /* GEMM: (max, max) each */
	float *qkv, *att, *lse, *dqkv, *dout, *scratch; /* attention of one sequence */
	float *e_in, *e_out, *e_w, *e_rstd; /* element-wise and stream */
	void *cbuf[2];                   /* collectives */
	size_t e_floats;
};

static void fill(float *p, size_t n, unsigned seed)
{
	unsigned x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		p[i] = (float)((x >> 9) & 0xffff) / 65536.0f - 0.5f;
	}
}

static void cpu_close(void *p)
{
	struct cpu_ws *ws = p;
	if (!ws) return;
	float *bufs[] = {ws->a, ws->w, ws->out, ws->qkv, ws->att, ws->lse, ws->dqkv, ws->dout, ws->scratch,
			 ws->e_in, ws->e_out, ws->e_w, ws->e_rstd};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) free(bufs[i]);
	free(ws->cbuf[0]);
	free(ws->cbuf[1]);
	free(ws);
}

static float *alloc_filled(size_t n, unsigned seed, int *bad)
{
	float *p = malloc((n ? n : 1) * sizeof(float));
	if (!p) { *bad = 1; return NULL; }
	fill(p, n, seed);
	return p;
}

static int cpu_open(const struct profile_limits *lim, int device, void **out, char *err)
{
	(void)device; /* the host: no device */
	struct cpu_ws *ws = calloc(1, sizeof(*ws));
	if (!ws) return errf(err, "profile: out of memory");
	ws->lim = *lim;
	int bad = 0;
	size_t g = (size_t)lim->max_dim * lim->max_dim, T = (size_t)lim->max_seq;
	size_t H = (size_t)lim->heads, d = (size_t)lim->head_dim;
	ws->a = alloc_filled(g, 1, &bad);
	ws->w = alloc_filled(g, 2, &bad);
	ws->out = alloc_filled(g, 3, &bad);
	ws->qkv = alloc_filled(T * 3 * H * d, 4, &bad);
	ws->att = alloc_filled(T * H * d, 5, &bad);
	ws->dout = alloc_filled(T * H * d, 6, &bad);
	ws->dqkv = alloc_filled(T * 3 * H * d, 7, &bad);
	ws->lse = alloc_filled(H * T, 8, &bad);
	ws->scratch = alloc_filled(attention_scratch_floats(1, (int)T, (int)H), 9, &bad);
	ws->e_floats = lim->max_bytes / sizeof(float);
	ws->e_in = alloc_filled(ws->e_floats, 10, &bad);
	ws->e_out = alloc_filled(ws->e_floats, 11, &bad);
	ws->e_w = alloc_filled(ws->e_floats, 12, &bad);
	ws->e_rstd = alloc_filled(ws->e_floats, 13, &bad);
	ws->cbuf[0] = alloc_filled(ws->e_floats, 14, &bad);
	ws->cbuf[1] = alloc_filled(ws->e_floats, 15, &bad);
	if (bad) {
		cpu_close(ws);
		return errf(err, "profile: out of memory for the cpu workspace (max dim %d, %zu bytes)", lim->max_dim, lim->max_bytes);
	}
	*out = ws;
	return 0;
}

static int cpu_gemm(void *p, int M, int N, int K, char *err)
{
	struct cpu_ws *ws = p;
	if (M > ws->lim.max_dim || N > ws->lim.max_dim || K > ws->lim.max_dim)
		return errf(err, "profile: gemm %dx%dx%d beyond the workspace", M, N, K);
	linear_forward(ws->out, ws->a, ws->w, NULL, M, K, N);
	return 0;
}

static int cpu_attention(void *p, int T, int H, int d, int backward, char *err)
{
	struct cpu_ws *ws = p;
	if (T > ws->lim.max_seq || H > ws->lim.heads || d > ws->lim.head_dim)
		return errf(err, "profile: attention T %d beyond the workspace", T);
	if (!backward) attention_forward(ws->att, ws->lse, ws->qkv, ws->scratch, 1, T, H, H, d);
	else attention_backward(ws->dqkv, ws->dout, ws->qkv, ws->att, ws->lse, ws->scratch, 1, T, H, H, d);
	return 0;
}

/* RMSNorm over rows of 256 (reads x, writes y) then SwiGLU over the same floats (reads the
 * gate|up pair, writes half): the two kinds of pass a decoder block runs besides GEMMs */
static int cpu_elementwise(void *p, size_t bytes, double *moved, char *err)
{
	struct cpu_ws *ws = p;
	size_t n = bytes / sizeof(float);
	if (n > ws->e_floats || n < 512) return errf(err, "profile: element-wise pass of %zu bytes out of range", bytes);
	int C = 256, N = (int)(n / (size_t)C);
	rmsnorm_forward(ws->e_out, ws->e_rstd, ws->e_in, ws->e_w, N, C, 1e-5f);
	swiglu_forward(ws->e_rstd, ws->e_out, N, C / 2);
	*moved = (double)sizeof(float) * ((double)N * C * 2 + (double)N * C * 1.5);
	return 0;
}

static int cpu_stream(void *p, size_t bytes, char *err)
{
	struct cpu_ws *ws = p;
	if (bytes > ws->e_floats * sizeof(float)) return errf(err, "profile: stream of %zu bytes beyond the workspace", bytes);
	memcpy(ws->e_out, ws->e_in, bytes);
	return 0;
}

static void *cpu_comm_buf(void *p, int which) { return ((struct cpu_ws *)p)->cbuf[which ? 1 : 0]; }
static int cpu_sync(void *p, char *err) { (void)p; (void)err; return 0; }

const struct profile_backend profile_cpu = {
	"cpu", "fp32", 1, cpu_open, cpu_close, cpu_gemm, cpu_attention, cpu_elementwise, cpu_stream,
	cpu_comm_buf, cpu_sync, NULL, NULL, NULL,
};
