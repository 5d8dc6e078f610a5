/* Times the cuDNN attention (kernels/cudnn_attention.h) forward, backward and both at T = 4096,
 * H = 32, Hkv = 8, d = 128 (Llama 3 8B's attention) for B = 1..4, and prints achieved TFLOP/s
 * against the dense bf16 tensor peak, one line per figure:
 *   bench attention_<fwd|bwd|fwd+bwd>_b<B> <TFLOP/s> TFLOP/s <percent of peak> %
 * FLOP convention (FlashAttention-2 paper, Dao 2023, section 4.1): the forward is two matmuls
 * of 2·B·H·T·T·d FLOP each, halved by the causal mask: 4·B·H·T²·d / 2; the backward counts as
 * 2.5 forwards (five matmuls instead of two). GQA does not change the count (every query head
 * does the work). Peak: PEAK_TFLOPS, default 989.4 (H100/H200 SXM dense bf16, NVIDIA H100
 * datasheet); pass another as argv[1]. Ends with "N passed, N failed" (a batch size passes when
 * all its calls succeed; there is no speed floor here: tests/gpu/run.sh judges the figures);
 * exits 1 if a call fails. */
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "kernels/cudnn_attention.h"

#define PEAK_TFLOPS 989.4
#define WARMUP 3
#define ITERS 10

static double fwd_flops(int B, int T, int H, int d) { return 4.0 * B * H * (double)T * T * d / 2.0; }

static int run(struct cudnn_att *a, int B, int T, int H, int Hkv, int d, double peak)
{
	const size_t nqkv = (size_t)B * T * (H + 2 * Hkv) * d, nout = (size_t)B * T * H * d;
	bf16_t *qkv = NULL, *out = NULL, *dout = NULL, *dqkv = NULL;
	float *lse = NULL;
	char err[256] = "";
	int rc = 0;
	cudaMalloc(&qkv, 2 * nqkv);
	cudaMalloc(&dqkv, 2 * nqkv);
	cudaMalloc(&out, 2 * nout);
	cudaMalloc(&dout, 2 * nout);
	cudaMalloc(&lse, 4 * (size_t)B * H * T);
	/* every element 0x3c3c (bf16 0.0115): the timing does not depend on the values */
	cudaMemset(qkv, 0x3c, 2 * nqkv);
	cudaMemset(dout, 0x3c, 2 * nout);
	cudaEvent_t e0, e1, e2;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	cudaEventCreate(&e2);
	float fwd_ms = 0, bwd_ms = 0;
	for (int it = 0; it < WARMUP + ITERS && !rc; it++) {
		cudaEventRecord(e0, 0);
		rc = cudnn_att_forward(a, out, lse, qkv, B, T, H, Hkv, d, 0, err);
		cudaEventRecord(e1, 0);
		if (!rc) rc = cudnn_att_backward(a, dqkv, dout, qkv, out, lse, B, T, H, Hkv, d, 0, err);
		cudaEventRecord(e2, 0);
		cudaEventSynchronize(e2);
		if (it >= WARMUP) {
			float f, b;
			cudaEventElapsedTime(&f, e0, e1);
			cudaEventElapsedTime(&b, e1, e2);
			fwd_ms += f;
			bwd_ms += b;
		}
	}
	cudaError_t ce = cudaGetLastError();
	if (!rc && ce != cudaSuccess) {
		snprintf(err, sizeof err, "cuda: %s", cudaGetErrorString(ce));
		rc = -1;
	}
	if (rc) fprintf(stderr, "bench attention B=%d: %s\n", B, err);
	else {
		const double ff = fwd_flops(B, T, H, d), fb = 2.5 * ff;
		const double tf = ff / (fwd_ms / ITERS * 1e-3) / 1e12, tb = fb / (bwd_ms / ITERS * 1e-3) / 1e12;
		const double tt = (ff + fb) / ((fwd_ms + bwd_ms) / ITERS * 1e-3) / 1e12;
		printf("bench attention_fwd_b%d %.1f TFLOP/s %.1f %%  (%.3f ms)\n", B, tf, 100 * tf / peak, fwd_ms / ITERS);
		printf("bench attention_bwd_b%d %.1f TFLOP/s %.1f %%  (%.3f ms)\n", B, tb, 100 * tb / peak, bwd_ms / ITERS);
		printf("bench attention_fwd+bwd_b%d %.1f TFLOP/s %.1f %%  (T=%d H=%d Hkv=%d d=%d)\n", B, tt, 100 * tt / peak,
		       T, H, Hkv, d);
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	cudaEventDestroy(e2);
	cudaFree(qkv);
	cudaFree(dqkv);
	cudaFree(out);
	cudaFree(dout);
	cudaFree(lse);
	return rc;
}

int main(int argc, char **argv)
{
	const double peak = argc > 1 ? atof(argv[1]) : PEAK_TFLOPS;
	struct cudnn_att *a = NULL;
	char err[256] = "";
	if (cudnn_att_create(&a, err)) {
		fprintf(stderr, "bench attention: %s\n", err);
		return 1;
	}
	int passed = 0, failed = 0;
	for (int B = 1; B <= 4; B++) {
		if (run(a, B, 4096, 32, 8, 128, peak)) failed++;
		else passed++;
	}
	cudnn_att_destroy(a);
	printf("%d passed, %d failed\n", passed, failed); /* a batch passes when every call succeeded */
	return failed ? 1 : 0;
}
