/* cuda_bf16_norm — the per-token kernels of kernels/cuda_bf16.h that move rows around or
 * normalise them: casts, the embedding lookup and its scatter-add, RMSNorm forward/backward,
 * the two-pass column sums behind the RMSNorm weight and bias gradients, and RoPE.
 * One block per row for row statistics; column sums run one thread per column over chunks of
 * CUDA_BF16_COLSUM_ROWS rows, then one thread per column adds the chunk partials in order. */
#include <stdio.h>
#include "kernels/cuda_bf16_util.h"

int cuda_bf16_last_error(char *err)
{
	cudaError_t e = cudaGetLastError();
	if (e == cudaSuccess) return 0;
	if (err) snprintf(err, 256, "cuda: %s", cudaGetErrorString(e));
	return -1;
}

/* ---- casts --------------------------------------------------------------------------- */

__global__ static void k_from_f32(bf16_t *out, const float *in, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = tob(in[i]);
}

__global__ static void k_to_f32(float *out, const bf16_t *in, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = tof(in[i]);
}

void cuda_bf16_from_f32(bf16_t *out, const float *in, size_t n, cudaStream_t s)
{
	if (n) k_from_f32<<<bf16_grid(n), BF16_THREADS, 0, s>>>(out, in, n);
}

void cuda_bf16_to_f32(float *out, const bf16_t *in, size_t n, cudaStream_t s)
{
	if (n) k_to_f32<<<bf16_grid(n), BF16_THREADS, 0, s>>>(out, in, n);
}

/* ---- embedding ------------------------------------------------------------------------- */

__global__ static void k_embedding_fwd(bf16_t *out, const int *tokens, const bf16_t *wte, int N, int C, int v0, int V)
{
	const size_t total = (size_t)N * C;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		const int n = (int)(i / C), c = (int)(i % C), r = tokens[n] - v0;
		out[i] = (r >= 0 && r < V) ? wte[(size_t)r * C + c] : tob(0.0f);
	}
}

/* float atomics: a token repeated in the batch adds in arrival order */
__global__ static void k_embedding_bwd(float *dwte, const bf16_t *dout, const int *tokens, int N, int C, int v0, int V)
{
	const size_t total = (size_t)N * C;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		const int n = (int)(i / C), c = (int)(i % C), r = tokens[n] - v0;
		if (r >= 0 && r < V) atomicAdd(&dwte[(size_t)r * C + c], tof(dout[i]));
	}
}

void cuda_bf16_embedding_forward(bf16_t *out, const int *tokens, const bf16_t *wte, int N, int C, int v0, int V,
                                 cudaStream_t s)
{
	if (N > 0 && C > 0) k_embedding_fwd<<<bf16_grid((size_t)N * C), BF16_THREADS, 0, s>>>(out, tokens, wte, N, C, v0, V);
}

void cuda_bf16_embedding_backward(float *dwte, const bf16_t *dout, const int *tokens, int N, int C, int v0, int V,
                                  cudaStream_t s)
{
	if (N > 0 && C > 0) k_embedding_bwd<<<bf16_grid((size_t)N * C), BF16_THREADS, 0, s>>>(dwte, dout, tokens, N, C, v0, V);
}

/* ---- column sums in two passes ----------------------------------------------------------- */

size_t cuda_bf16_colsum_scratch_floats(int N, int C)
{
	const size_t chunks = ((size_t)(N > 0 ? N : 1) + CUDA_BF16_COLSUM_ROWS - 1) / CUDA_BF16_COLSUM_ROWS;
	return chunks * (size_t)(C > 0 ? C : 1);
}

/* part[chunk][c] = Σ_{n in chunk} dy[n][c] · (x ? x[n][c] · rstd[n] : 1); grid (ceil(C/256), chunks) */
__global__ static void k_colsum_part(float *part, const bf16_t *dy, const bf16_t *x, const float *rstd, int N, int C)
{
	const int c = blockIdx.x * blockDim.x + threadIdx.x, chunk = blockIdx.y;
	if (c >= C) return;
	const int n0 = chunk * CUDA_BF16_COLSUM_ROWS, n1 = min(N, n0 + CUDA_BF16_COLSUM_ROWS);
	float acc = 0.0f;
	for (int n = n0; n < n1; n++) {
		const size_t i = (size_t)n * C + c;
		acc += x ? tof(dy[i]) * tof(x[i]) * rstd[n] : tof(dy[i]);
	}
	part[(size_t)chunk * C + c] = acc;
}

__global__ static void k_colsum_final(float *acc, const float *part, int chunks, int C)
{
	const int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= C) return;
	float sum = 0.0f;
	for (int j = 0; j < chunks; j++) sum += part[(size_t)j * C + c];
	acc[c] += sum;
}

static void colsum(float *acc, const bf16_t *dy, const bf16_t *x, const float *rstd, float *scratch, int N, int C,
                   cudaStream_t s)
{
	if (N <= 0 || C <= 0) return;
	const int chunks = (N + CUDA_BF16_COLSUM_ROWS - 1) / CUDA_BF16_COLSUM_ROWS;
	const dim3 grid((unsigned)((C + BF16_THREADS - 1) / BF16_THREADS), (unsigned)chunks);
	k_colsum_part<<<grid, BF16_THREADS, 0, s>>>(scratch, dy, x, rstd, N, C);
	k_colsum_final<<<(unsigned)((C + BF16_THREADS - 1) / BF16_THREADS), BF16_THREADS, 0, s>>>(acc, scratch, chunks, C);
}

void cuda_bf16_bias_backward(float *dbias, const bf16_t *dout, float *scratch, int N, int C, cudaStream_t s)
{
	colsum(dbias, dout, NULL, NULL, scratch, N, C, s);
}

/* ---- RMSNorm ------------------------------------------------------------------------------ */

__global__ static void k_rmsnorm_fwd(bf16_t *out, float *rstd, const bf16_t *inp, const bf16_t *w, int C, float eps)
{
	const bf16_t *x = inp + (size_t)blockIdx.x * C;
	bf16_t *o = out + (size_t)blockIdx.x * C;
	float ss = 0.0f;
	for (int c = threadIdx.x; c < C; c += blockDim.x) {
		const float v = tof(x[c]);
		ss += v * v;
	}
	ss = block_sum(ss);
	const float r = 1.0f / sqrtf(ss / (float)C + eps);
	for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = tob(tof(x[c]) * r * tof(w[c]));
	if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

/* dx += r·(w⊙dy) - (r³/C)·x·Σ_c(w_c·dy_c·x_c), as rmsnorm_backward */
__global__ static void k_rmsnorm_bwd(bf16_t *dinp, const bf16_t *dout, const bf16_t *inp, const bf16_t *w,
                                     const float *rstd, int C)
{
	const size_t row = (size_t)blockIdx.x * C;
	const bf16_t *x = inp + row, *dy = dout + row;
	bf16_t *dx = dinp + row;
	const float r = rstd[blockIdx.x];
	float dot = 0.0f;
	for (int c = threadIdx.x; c < C; c += blockDim.x) dot += tof(w[c]) * tof(dy[c]) * tof(x[c]);
	dot = block_sum(dot);
	const float k = dot * r * r * r / (float)C;
	for (int c = threadIdx.x; c < C; c += blockDim.x)
		dx[c] = tob(tof(dx[c]) + r * tof(w[c]) * tof(dy[c]) - k * tof(x[c]));
}

void cuda_bf16_rmsnorm_forward(bf16_t *out, float *rstd, const bf16_t *inp, const bf16_t *w, int N, int C, float eps,
                               cudaStream_t s)
{
	if (N > 0 && C > 0) k_rmsnorm_fwd<<<(unsigned)N, BF16_THREADS, 0, s>>>(out, rstd, inp, w, C, eps);
}

void cuda_bf16_rmsnorm_backward(bf16_t *dinp, float *dw, const bf16_t *dout, const bf16_t *inp, const bf16_t *w,
                                const float *rstd, float *scratch, int N, int C, cudaStream_t s)
{
	if (N <= 0 || C <= 0) return;
	k_rmsnorm_bwd<<<(unsigned)N, BF16_THREADS, 0, s>>>(dinp, dout, inp, w, rstd, C);
	colsum(dw, dout, inp, rstd, scratch, N, C, s);
}

/* ---- RoPE ------------------------------------------------------------------------------- */

/* angle in double, like rope_table, so that the fp32 table matches the reference bit for bit
 * up to the device's cos/sin (both within 1 ulp in double) */
__global__ static void k_rope_table(float *tab, const int *pos, int T, int d, double theta)
{
	const int half = d / 2;
	const size_t total = (size_t)T * half;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		const int t = (int)(i / half), j = (int)(i % half);
		const double p = pos ? pos[t] : t, a = p * pow(theta, -2.0 * j / d);
		tab[i * 2 + 0] = (float)cos(a);
		tab[i * 2 + 1] = (float)sin(a);
	}
}

/* one thread per rotated pair (b, t, head, i) */
__global__ static void k_rope_rotate(bf16_t *x, const float *tab, int B, int T, int nh, int d, int ldx, float sign)
{
	const int half = d / 2;
	const size_t total = (size_t)B * T * nh * half;
	for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
		const int i = (int)(e % half);
		const size_t rest = e / half;
		const int h = (int)(rest % nh);
		const size_t bt = rest / nh;          /* b·T + t */
		const int t = (int)(bt % T);
		const float c = tab[((size_t)t * half + i) * 2], sn = sign * tab[((size_t)t * half + i) * 2 + 1];
		bf16_t *x1 = x + bt * ldx + (size_t)h * d + i, *x2 = x1 + half;
		const float a = tof(*x1), b = tof(*x2);
		*x1 = tob(a * c - b * sn);
		*x2 = tob(b * c + a * sn);
	}
}

void cuda_bf16_rope_table(float *tab, const int *pos, int T, int d, double theta, cudaStream_t s)
{
	if (T > 0 && d >= 2) k_rope_table<<<bf16_grid((size_t)T * (d / 2)), BF16_THREADS, 0, s>>>(tab, pos, T, d, theta);
}

void cuda_bf16_rope_forward(bf16_t *x, const float *tab, int B, int T, int nh, int d, int ld, cudaStream_t s)
{
	const size_t n = (size_t)B * T * nh * (d / 2);
	if (n) k_rope_rotate<<<bf16_grid(n), BF16_THREADS, 0, s>>>(x, tab, B, T, nh, d, ld, 1.0f);
}

/* the rotation is orthogonal: its transpose rotates by -angle */
void cuda_bf16_rope_backward(bf16_t *dx, const float *tab, int B, int T, int nh, int d, int ld, cudaStream_t s)
{
	const size_t n = (size_t)B * T * nh * (d / 2);
	if (n) k_rope_rotate<<<bf16_grid(n), BF16_THREADS, 0, s>>>(dx, tab, B, T, nh, d, ld, -1.0f);
}
