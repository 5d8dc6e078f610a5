/* bench_tune — the whole search, top 10 with their layer splits: Llama-3-70B on 512 H100s,
 * Llama-3.1-405B on 16384 H100s, DeepSeek-V3 on 2048 H800s, and every built-in model on 16384
 * GPUs (target: each <= 2 s on one core). CPU time is reported beside wall time: on a shared
 * machine wall time includes waiting for a core. */
#include <string.h>
#include <time.h>
#include "bench/bench.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/util.h"
#include "tuner/search.h"

/* one search; returns its CPU seconds (-1 on failure) */
static double one(const char *tag, const char *model, const char *gpu, int gpus, int seq, int gbs, int print)
{
	struct model m;
	struct hw h;
	struct search_req rq;
	struct search_result res;
	char err[ERR_LEN], name[96];
	if (model_load(model, &m, err) || hw_load(gpu, &h, err)) {
		fprintf(stderr, "bench_tune: %s\n", err);
		return -1;
	}
	memset(&rq, 0, sizeof(rq));
	rq.m = &m; rq.h = &h; rq.gpus = gpus; rq.seq = seq; rq.gbs = gbs; rq.top = 10;
	plan_defaults(&rq.base);
	search_fix_init(&rq.fix);
	clock_t c0 = clock();
	double t0 = now_s();
	if (search_run(&rq, &res, err)) {
		fprintf(stderr, "bench_tune: %s\n", err);
		return -1;
	}
	double wall = now_s() - t0, cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
	if (!print) {
		search_result_free(&res);
		return cpu;
	}
	snprintf(name, sizeof(name), "tune_%s_plans", tag);
	BENCH_LINE(name, res.enumerated, "plans");
	snprintf(name, sizeof(name), "tune_%s_priced", tag);
	BENCH_LINE(name, res.evaluated, "plans");
	snprintf(name, sizeof(name), "tune_%s_cpu_s", tag);
	BENCH_LINE(name, cpu, "s");
	snprintf(name, sizeof(name), "tune_%s_wall_s", tag);
	BENCH_LINE(name, wall, "s");
	snprintf(name, sizeof(name), "tune_%s_plans_per_cpu_s", tag);
	BENCH_LINE(name, res.enumerated / (cpu > 0 ? cpu : 1e-9), "plans/s");
	search_result_free(&res);
	return cpu;
}

void bench_tune(void)
{
	one("llama70b_512", "llama-3-70b", "h100-sxm", 512, 8192, 512, 1);          /* 4M tokens per batch */
	one("llama405b_16384", "llama-3.1-405b", "h100-sxm", 16384, 8192, 2048, 1); /* 16M tokens [L3 Table 4] */
	one("deepseekv3_2048_h800", "deepseek-v3", "h800", 2048, 4096, 4096, 1);     /* 16M tokens [DSV3 §3] */
	/* every built-in model on 16384 GPUs, 16M tokens per batch: the slowest search */
	static const char *const models[] = {"llama-3-8b", "llama-3-70b", "llama-3.1-405b", "mixtral-8x7b",
					     "mixtral-8x22b", "deepseek-v3", "qwen2.5-72b", "gpt3-175b"};
	double worst = 0;
	const char *which = "";
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		double cpu = one("", models[i], !strcmp(models[i], "deepseek-v3") ? "h800" : "h100-sxm", 16384, 4096, 4096, 0);
		if (cpu > worst) { worst = cpu; which = models[i]; }
	}
	printf("bench tune_builtin_16384_worst_cpu_s %.3f s (%s)\n", worst, which);
}