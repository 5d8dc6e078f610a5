/* cuda_bf16_moe — MoE routing and token permutation of kernels/cuda_bf16.h: the router
 * (softmax over E experts, top-k, renormalised weights), the Switch load-balancing loss
 * (Fedus et al. 2021, eq. 4), the router backward, the stable counting sort of assignments by
 * expert, and the gather / combine that move bf16 token rows and their backwards.
 *
 * Invariant: every result is deterministic. Counts use integer atomics (exact in any order);
 * the sort is stable because each chunk of CUDA_BF16_DISPATCH_CHUNK assignments learns how many
 * earlier chunks sent to each expert, then places its own assignments in index order; sums of
 * the k expert outputs of a token run in j order in one thread. */
#include "kernels/cuda_bf16_util.h"

#define MOE_MAX_E 1024

/* ---- router: one thread per token, the reference's loops --------------------------------- */

__global__ static void k_router_fwd(float *probs, int *topk_idx, float *topk_w, const float *logits, int N, int E, int k)
{
	const int n = blockIdx.x * blockDim.x + threadIdx.x;
	if (n >= N) return;
	const float *z = logits + (size_t)n * E;
	float *p = probs + (size_t)n * E, *w = topk_w + (size_t)n * k;
	int *idx = topk_idx + (size_t)n * k;
	float mx = z[0], sum = 0.0f;
	for (int e = 1; e < E; e++) mx = fmaxf(mx, z[e]);
	for (int e = 0; e < E; e++) { p[e] = expf(z[e] - mx); sum += p[e]; }
	for (int e = 0; e < E; e++) p[e] /= sum;
	float wsum = 0.0f;
	for (int j = 0; j < k; j++) {          /* k selection passes; ties go to the lower index */
		int best = -1;
		for (int e = 0; e < E; e++) {
			int taken = 0;
			for (int i = 0; i < j; i++) taken |= idx[i] == e;
			if (!taken && (best < 0 || p[e] > p[best])) best = e;
		}
		idx[j] = best;
		w[j] = p[best];
		wsum += p[best];
	}
	for (int j = 0; j < k; j++) w[j] /= wsum;
}

void cuda_bf16_moe_router_forward(float *probs, int *topk_idx, float *topk_w, const float *logits, int N, int E, int k,
                                  cudaStream_t s)
{
	if (N > 0) k_router_fwd<<<(unsigned)((N + 127) / 128), 128, 0, s>>>(probs, topk_idx, topk_w, logits, N, E, k);
}

/* One block: frac_e = count_e / (N·k); loss = E/N · Σ_n Σ_e p_ne · f_e. */
__global__ static void __launch_bounds__(1024)
k_aux_loss(float *loss, float *frac, const float *probs, const int *topk_idx, int N, int E, int k)
{
	__shared__ int cnt[MOE_MAX_E];
	__shared__ float f[MOE_MAX_E];
	const size_t NK = (size_t)N * k, NE = (size_t)N * E;
	for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = 0;
	__syncthreads();
	for (size_t a = threadIdx.x; a < NK; a += blockDim.x) atomicAdd(&cnt[topk_idx[a]], 1);
	__syncthreads();
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		f[e] = (float)cnt[e] / ((float)N * k);
		frac[e] = f[e];
	}
	__syncthreads();
	double acc = 0.0;
	for (size_t i = threadIdx.x; i < NE; i += blockDim.x) acc += (double)probs[i] * f[i % E];
	acc = block_sum_d(acc);
	if (threadIdx.x == 0) *loss = (float)(acc * E / N);
}

void cuda_bf16_moe_aux_loss_forward(float *loss, float *frac, const float *probs, const int *topk_idx, int N, int E,
                                    int k, cudaStream_t s)
{
	if (N > 0 && E <= MOE_MAX_E) k_aux_loss<<<1, 1024, 0, s>>>(loss, frac, probs, topk_idx, N, E, k);
}

/* dL/dp_{i_m} = (dw_m - Σ_j dw_j·w_j)/S, plus daux·E·f_e/N, then dz = p ⊙ (g - p·g) */
__global__ static void k_router_bwd(float *dlogits, const float *dtopk_w, const float *probs, const int *topk_idx,
                                    const float *topk_w, const float *frac, float daux, int N, int E, int k)
{
	const int n = blockIdx.x * blockDim.x + threadIdx.x;
	if (n >= N) return;
	const float *p = probs + (size_t)n * E, *w = topk_w + (size_t)n * k, *dw = dtopk_w + (size_t)n * k;
	const int *idx = topk_idx + (size_t)n * k;
	float *g = dlogits + (size_t)n * E;
	for (int e = 0; e < E; e++) g[e] = frac ? daux * E * frac[e] / N : 0.0f;
	float S = 0.0f, sw = 0.0f;
	for (int j = 0; j < k; j++) { S += p[idx[j]]; sw += dw[j] * w[j]; }
	for (int j = 0; j < k; j++) g[idx[j]] += (dw[j] - sw) / S;
	float dot = 0.0f;
	for (int e = 0; e < E; e++) dot += p[e] * g[e];
	for (int e = 0; e < E; e++) g[e] = p[e] * (g[e] - dot);
}

void cuda_bf16_moe_router_backward(float *dlogits, const float *dtopk_w, const float *probs, const int *topk_idx,
                                   const float *topk_w, const float *frac, float daux, int N, int E, int k,
                                   cudaStream_t s)
{
	if (N > 0)
		k_router_bwd<<<(unsigned)((N + 127) / 128), 128, 0, s>>>(dlogits, dtopk_w, probs, topk_idx, topk_w, frac,
		                                                         daux, N, E, k);
}

/* ---- dispatch: stable counting sort in three launches ------------------------------------- */

size_t cuda_bf16_dispatch_scratch_ints(int N, int E, int k)
{
	const size_t NK = (size_t)(N > 0 ? N : 1) * (k > 0 ? k : 1);
	return (NK + CUDA_BF16_DISPATCH_CHUNK - 1) / CUDA_BF16_DISPATCH_CHUNK * (size_t)(E > 0 ? E : 1);
}

/* cnt[chunk][e] = assignments of the chunk routed to e */
__global__ static void k_dispatch_count(int *cnt, const int *topk_idx, int NK, int E)
{
	__shared__ int c[MOE_MAX_E];
	const int a0 = blockIdx.x * CUDA_BF16_DISPATCH_CHUNK, a1 = min(NK, a0 + CUDA_BF16_DISPATCH_CHUNK);
	for (int e = threadIdx.x; e < E; e += blockDim.x) c[e] = 0;
	__syncthreads();
	for (int a = a0 + threadIdx.x; a < a1; a += blockDim.x) atomicAdd(&c[topk_idx[a]], 1);
	__syncthreads();
	for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[(size_t)blockIdx.x * E + e] = c[e];
}

/* One block: cnt[chunk][e] becomes the number routed to e by earlier chunks; offsets is the
 * exclusive scan of the expert totals. */
__global__ static void __launch_bounds__(1024) k_dispatch_scan(int *offsets, int *cnt, int chunks, int E)
{
	__shared__ int total[MOE_MAX_E];
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		int run = 0;
		for (int j = 0; j < chunks; j++) {
			const int v = cnt[(size_t)j * E + e];
			cnt[(size_t)j * E + e] = run;
			run += v;
		}
		total[e] = run;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		int run = 0;
		for (int e = 0; e < E; e++) { offsets[e] = run; run += total[e]; }
		offsets[E] = run;
	}
}

/* Each expert's thread walks the chunk in index order, so equal experts keep their order. */
__global__ static void k_dispatch_place(int *perm, int *slot_of, const int *offsets, const int *cnt,
                                        const int *topk_idx, int NK, int E)
{
	__shared__ int sidx[CUDA_BF16_DISPATCH_CHUNK];
	const int a0 = blockIdx.x * CUDA_BF16_DISPATCH_CHUNK, len = min(NK - a0, CUDA_BF16_DISPATCH_CHUNK);
	for (int j = threadIdx.x; j < len; j += blockDim.x) sidx[j] = topk_idx[a0 + j];
	__syncthreads();
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		int slot = offsets[e] + cnt[(size_t)blockIdx.x * E + e];
		for (int j = 0; j < len; j++)
			if (sidx[j] == e) {
				perm[slot] = a0 + j;
				slot_of[a0 + j] = slot;
				slot++;
			}
	}
}

void cuda_bf16_moe_dispatch(int *offsets, int *perm, int *slot_of, const int *topk_idx, int *scratch, int N, int E,
                            int k, cudaStream_t s)
{
	const int NK = N * k, chunks = (NK + CUDA_BF16_DISPATCH_CHUNK - 1) / CUDA_BF16_DISPATCH_CHUNK;
	if (E <= 0 || E > MOE_MAX_E) return;
	if (NK <= 0) { cudaMemsetAsync(offsets, 0, sizeof(int) * (size_t)(E + 1), s); return; }
	k_dispatch_count<<<(unsigned)chunks, 256, 0, s>>>(scratch, topk_idx, NK, E);
	k_dispatch_scan<<<1, 1024, 0, s>>>(offsets, scratch, chunks, E);
	k_dispatch_place<<<(unsigned)chunks, 256, 0, s>>>(perm, slot_of, offsets, scratch, topk_idx, NK, E);
}

/* ---- gather / combine ------------------------------------------------------------------- */

__global__ static void k_gather(bf16_t *xe, const bf16_t *x, const int *perm, int NK, int C, int k)
{
	const size_t total = (size_t)NK * C;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		const size_t slot = i / C, c = i % C;
		xe[i] = x[(size_t)(perm[slot] / k) * C + c];
	}
}

/* dx[n] += Σ_j dxe[slot_of[n·k + j]], summed in fp32 and rounded once */
__global__ static void k_gather_bwd(bf16_t *dx, const bf16_t *dxe, const int *slot_of, int N, int C, int k)
{
	const size_t total = (size_t)N * C;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		const size_t n = i / C, c = i % C;
		float acc = tof(dx[i]);
		for (int j = 0; j < k; j++) acc += tof(dxe[(size_t)slot_of[n * k + j] * C + c]);
		dx[i] = tob(acc);
	}
}

/* out[n] += Σ_j topk_w[n, j] · ye[slot_of[n·k + j]] */
__global__ static void k_combine(bf16_t *out, const bf16_t *ye, const float *topk_w, const int *slot_of, int N, int C,
                                 int k)
{
	const size_t total = (size_t)N * C;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		const size_t n = i / C, c = i % C;
		float acc = tof(out[i]);
		for (int j = 0; j < k; j++) acc += topk_w[n * k + j] * tof(ye[(size_t)slot_of[n * k + j] * C + c]);
		out[i] = tob(acc);
	}
}

/* one block per assignment a = n·k + j: dye[slot] = w·dout[n], dtopk_w[a] = dout[n] · ye[slot] */
__global__ static void k_combine_bwd(bf16_t *dye, float *dtopk_w, const bf16_t *dout, const bf16_t *ye,
                                     const float *topk_w, const int *slot_of, int C, int k)
{
	const int a = blockIdx.x, n = a / k;
	const size_t slot = (size_t)slot_of[a];
	const float w = topk_w[a];
	const bf16_t *g = dout + (size_t)n * C, *y = ye + slot * C;
	bf16_t *dy = dye + slot * C;
	float dot = 0.0f;
	for (int c = threadIdx.x; c < C; c += blockDim.x) {
		const float gc = tof(g[c]);
		dot += gc * tof(y[c]);
		dy[c] = tob(w * gc);
	}
	dot = block_sum(dot);
	if (threadIdx.x == 0) dtopk_w[a] = dot;
}

void cuda_bf16_moe_gather(bf16_t *xe, const bf16_t *x, const int *perm, int N, int C, int k, cudaStream_t s)
{
	const size_t n = (size_t)N * k * C;
	if (n) k_gather<<<bf16_grid(n), BF16_THREADS, 0, s>>>(xe, x, perm, N * k, C, k);
}

void cuda_bf16_moe_gather_backward(bf16_t *dx, const bf16_t *dxe, const int *slot_of, int N, int C, int k,
                                   cudaStream_t s)
{
	const size_t n = (size_t)N * C;
	if (n) k_gather_bwd<<<bf16_grid(n), BF16_THREADS, 0, s>>>(dx, dxe, slot_of, N, C, k);
}

void cuda_bf16_moe_combine(bf16_t *out, const bf16_t *ye, const float *topk_w, const int *slot_of, int N, int C, int k,
                           cudaStream_t s)
{
	const size_t n = (size_t)N * C;
	if (n) k_combine<<<bf16_grid(n), BF16_THREADS, 0, s>>>(out, ye, topk_w, slot_of, N, C, k);
}

void cuda_bf16_moe_combine_backward(bf16_t *dye, float *dtopk_w, const bf16_t *dout, const bf16_t *ye,
                                    const float *topk_w, const int *slot_of, int N, int C, int k, cudaStream_t s)
{
	if (N > 0 && k > 0)
		k_combine_bwd<<<(unsigned)(N * k), BF16_THREADS, 0, s>>>(dye, dtopk_w, dout, ye, topk_w, slot_of, C, k);
}
