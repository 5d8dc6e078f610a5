/* bench_comm — in-process costs of the data-parallel machinery, on one rank (an MPI
 * singleton): AdamW update bandwidth against a memcpy of the same bytes, the bookkeeping
 * cost of dp_grad_ready() per call, and a 1-rank bucketed reduction. Multi-rank bandwidth
 * figures (algbw/busbw per collective) come from `make bench-comm`. */
#include <stdlib.h>
#include <string.h>
#include "bench/bench.h"
#include "runtime/comm.h"
#include "runtime/dp.h"
#include "kernels/cpu.h"
#include "runtime/optim.h"
#include "sim/util.h"

static void bench_adamw(void)
{
	size_t n = (size_t)4 << 20;
	float *p = calloc(n, 4), *g = calloc(n, 4), *m = calloc(n, 4), *v = calloc(n, 4);
	if (!p || !g || !m || !v) goto out;
	for (size_t i = 0; i < n; i++) g[i] = (float)(i % 13) * 0.1f;
	int reps = 5;
	double t0 = now_s();
	for (int s = 1; s <= reps; s++) adamw_step(p, g, m, v, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, s, 1.0f);
	double t = (now_s() - t0) / reps;
	/* 4 arrays read, 3 written: 28 bytes per parameter */
	BENCH_LINE("comm.adamw_step_gbps", 28.0 * n / t / 1e9, "GB/s");
	BENCH_LINE("comm.adamw_step_ns_per_param", t / n * 1e9, "ns");
	t0 = now_s();
	for (int s = 0; s < reps; s++) {
		memcpy(m, p, n * 4);
		memcpy(v, g, n * 4);
		memcpy(p, m, n * 4);
		memcpy(g, v, n * 4);
	}
	t = (now_s() - t0) / reps;
	BENCH_LINE("comm.memcpy_gbps_reference", 32.0 * n / t / 1e9, "GB/s");
out:
	free(p); free(g); free(m); free(v);
}

static void bench_dp(void)
{
	char err[ERR_LEN];
	struct comm *w;
	if (comm_mpi_world(&w, err)) {
		fprintf(stderr, "bench comm: %s\n", err);
		return;
	}
	size_t n = (size_t)16 << 20, chunk = 4096;
	struct dp *d;
	struct dp_cfg cfg = {.bucket_params = (size_t)1 << 20};
	float *grads = NULL;
	if (dp_create(w, n, &cfg, &d, err) || !(grads = calloc(dp_padded(d), 4))) {
		fprintf(stderr, "bench comm: %s\n", err);
		goto out;
	}
	double t0 = now_s();
	int rc = dp_begin(d, grads, NULL, 0, err);
	for (size_t off = n; !rc && off > 0; off -= chunk) rc = dp_grad_ready(d, off - chunk, chunk, err);
	double t_marks = now_s() - t0;
	if (!rc) rc = dp_finish(d, err);
	double t = now_s() - t0;
	if (rc) fprintf(stderr, "bench comm: %s\n", err);
	BENCH_LINE("comm.dp_reduce_1rank_16M_s", t, "s");
	BENCH_LINE("comm.dp_grad_ready_ns_per_call_4096", t_marks / (double)(n / chunk) * 1e9, "ns");
	BENCH_LINE("comm.dp_buckets", dp_nbuckets(d), "buckets");
out:
	free(grads);
	dp_destroy(d);
	comm_destroy(w);
}

void bench_comm(void)
{
	bench_adamw();
	bench_dp();
}
