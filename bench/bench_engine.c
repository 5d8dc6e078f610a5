/* bench_engine — event-engine speed: one 1F1B step with p = 64, m = 512 and p2p time on every
 * boundary (target <= 50 ms on one core), and the op rate over all schedules (target >= 5 M
 * compute ops/s). Times include building the op lists, as a tuner refining a plan pays both. */
#include <stdlib.h>
#include "bench/bench.h"
#include "sim/engine.h"
#include "sim/schedule.h"
#include "sim/util.h"

/* Seconds per run (best of `reps`) and compute ops per run; -1 on failure. */
static double time_one(enum schedule t, int p, int m, int v, int reps, size_t *nops)
{
	char err[ERR_LEN];
	int n = p * (v > 2 ? v : 2); /* at least the stage count of every schedule */
	double *c = malloc((size_t)n * 4 * sizeof(*c));
	if (!c) return -1;
	for (int k = 0; k < n; k++) {
		c[k] = 1.0;              /* F */
		c[n + k] = 1.1;          /* B */
		c[2 * n + k] = 0.9;      /* W */
		c[3 * n + k] = 0.05;     /* p2p */
	}
	struct engine_costs costs = {.t_f = c, .t_b = c + n, .t_w = c + 2 * n, .p2p = c + 3 * n};
	double best = -1;
	for (int i = 0; i < reps; i++) {
		double t0 = now_s();
		struct sched *s = sched_create(t, p, m, v, err);
		struct engine_result r;
		if (!s || engine_run(s, &costs, &r, err)) {
			fprintf(stderr, "bench engine: %s\n", err);
			sched_destroy(s);
			free(c);
			return -1;
		}
		double dt = now_s() - t0;
		*nops = s->nops;
		engine_result_free(&r);
		sched_destroy(s);
		if (best < 0 || dt < best) best = dt;
	}
	free(c);
	return best;
}

void bench_engine(void)
{
	size_t nops = 0;
	double t = time_one(SCHED_1F1B, 64, 512, 1, 10, &nops);
	if (t < 0) return;
	BENCH_LINE("engine_1f1b_p64_m512_ms", t * 1e3, "ms");
	BENCH_LINE("engine_1f1b_p64_m512_target_ms", 50, "ms");
	static const struct { enum schedule t; int v; } all[] = {
		{SCHED_AFAB, 1}, {SCHED_1F1B, 1}, {SCHED_INTERLEAVED, 4}, {SCHED_ZBH1, 1}, {SCHED_ZBH2, 1},
		{SCHED_ZBV, 1}, {SCHED_DUALPIPE, 1}, {SCHED_DUALPIPEV, 1},
	};
	double total_s = 0;
	size_t total_ops = 0;
	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
		double dt = time_one(all[k].t, 32, 256, all[k].v, 5, &nops);
		if (dt < 0) return;
		total_s += dt;
		total_ops += nops;
	}
	BENCH_LINE("engine_ops_per_s", total_ops / total_s, "ops/s");
	BENCH_LINE("engine_ops_per_s_target", 5e6, "ops/s");
}
