/* bench_kernels — what OpenBLAS sgemm reaches on this machine (square and the 124M model's
 * shapes), and one single-rank training step (forward + backward + AdamW) of a GPT-2-small-
 * shaped Llama model, whose model FLOP/s is reported as a fraction of the sgemm rate. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include "bench/bench.h"
#include "runtime/model.h"
#include "sim/util.h"
#include "tests/tiny.h"

/* FLOP/s of out (M,N) = A (M,K) · Bᵀ, the layout of linear_forward. */
static double sgemm_gflops(int M, int N, int K)
{
	float *a = malloc(sizeof(float) * (size_t)M * K), *b = malloc(sizeof(float) * (size_t)N * K);
	float *c = malloc(sizeof(float) * (size_t)M * N);
	if (!a || !b || !c) { free(a); free(b); free(c); return 0.0; }
	for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)(i % 13) * 1e-3f;
	for (size_t i = 0; i < (size_t)N * K; i++) b[i] = (float)(i % 7) * 1e-3f;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N);
	double flops = 2.0 * M * N * K, t0 = now_s(), t;
	int reps = 0;
	do {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N);
		reps++;
		t = now_s() - t0;
	} while (t < 1.0);
	free(a); free(b); free(c);
	return flops * reps / t * 1e-9;
}

/* SwiGLU with 2/3 of 4h: the same MLP parameters as GPT-2's 3072 */
static struct model gpt2_small_llama(void)
{
	struct model c = llama_shape("llama-124m", 12, 768, 2048, 12, 12, 64, 50304);
	c.tied = 1;
	return c;
}

void bench_kernels(void)
{
	/* best of three one-second runs: on a shared machine the best is closest to what the
	 * hardware allows, which makes the step's ratio below conservative */
	double peak = 0.0;
	for (int i = 0; i < 3; i++) {
		double g = sgemm_gflops(2048, 2048, 2048);
		peak = g > peak ? g : peak;
	}
	BENCH_LINE("sgemm_gflops", peak, "GFLOP/s");
	static const int shapes[][3] = {{4096, 2304, 768}, {4096, 4096, 768}, {4096, 768, 2048}, {4096, 50304, 768}};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		char name[64];
		snprintf(name, sizeof name, "sgemm_%dx%dx%d_gflops", shapes[i][0], shapes[i][1], shapes[i][2]);
		BENCH_LINE(name, sgemm_gflops(shapes[i][0], shapes[i][1], shapes[i][2]), "GFLOP/s");
	}

	const int B = 4, T = 1024, N = B * T;
	struct model cfg = gpt2_small_llama();
	struct llama *m = NULL;
	struct llama_acts *a = NULL;
	char err[ERR_LEN];
	int *tok = malloc(sizeof(int) * N), *tgt = malloc(sizeof(int) * N);
	if (!tok || !tgt || llama_create(&m, &cfg, NULL, err) || llama_acts_create(&a, m, B, T, 0, err)) {
		fprintf(stderr, "bench kernels: %s\n", tok && tgt ? err : "out of memory");
		goto out;
	}
	BENCH_LINE("step124m_params", (double)m->n_params, "params");
	for (int i = 0; i < N; i++) tok[i] = (int)((i * 2654435761u) % (unsigned)cfg.vocab);
	for (int i = 0; i < N; i++) tgt[i] = tok[(i + 1) % N];
	struct adamw_opts ao;
	adamw_opts_default(&ao);
	/* two steps, the second timed: the first runs measurably slower (OpenBLAS buffers,
	 * first use of every page) even though the slabs were zeroed at creation */
	double best = 0, tf = 0, tb = 0, to = 0;
	for (int it = 0; it < 2; it++) {
		double t0 = now_s();
		llama_zero_grad(m);
		llama_forward(m, a, tok, tgt);
		double t1 = now_s();
		llama_backward(m, a, 1.0f);
		double t2 = now_s();
		llama_step(m, &ao);
		double t3 = now_s();
		best = t3 - t0; tf = t1 - t0; tb = t2 - t1; to = t3 - t2;
	}
	double gflops = llama_step_flops(&cfg, B, T) / best * 1e-9;
	BENCH_LINE("step124m_fwd_s", tf, "s");
	BENCH_LINE("step124m_bwd_s", tb, "s");
	BENCH_LINE("step124m_adamw_s", to, "s");
	BENCH_LINE("step124m_s", best, "s");
	BENCH_LINE("step124m_gflops", gflops, "GFLOP/s");
	BENCH_LINE("step124m_vs_sgemm", gflops / peak, "ratio");
out:
	llama_acts_destroy(a);
	llama_destroy(m);
	free(tok);
	free(tgt);
}
