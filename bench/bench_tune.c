/* bench_tune — the whole search: Llama-3-70B on 512 H100s (target: >= 100k plans enumerated,
 * searched and top 10 refined in <= 1 s on one core) and Llama-3.1-405B on 16384 H100s
 * (target <= 10 s). CPU time is reported beside wall time: on a shared machine wall time
 * includes waiting for a core. */
#include <string.h>
#include <time.h>
#include "bench/bench.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/util.h"
#include "tuner/search.h"

static void one(const char *tag, const char *model, int gpus, int seq, int gbs)
{
	struct model m;
	struct hw h;
	struct search_req rq;
	struct search_result res;
	char err[ERR_LEN], name[96];
	if (model_load(model, &m, err) || hw_load("h100-sxm", &h, err)) {
		fprintf(stderr, "bench_tune: %s\n", err);
		return;
	}
	memset(&rq, 0, sizeof(rq));
	rq.m = &m; rq.h = &h; rq.gpus = gpus; rq.seq = seq; rq.gbs = gbs; rq.top = 10; rq.refine = 1;
	plan_defaults(&rq.base);
	search_fix_init(&rq.fix);
	clock_t c0 = clock();
	double t0 = now_s();
	if (search_run(&rq, &res, err)) {
		fprintf(stderr, "bench_tune: %s\n", err);
		return;
	}
	double wall = now_s() - t0, cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
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
}

void bench_tune(void)
{
	one("llama70b_512", "llama-3-70b", 512, 8192, 512);          /* 4M tokens per batch */
	one("llama405b_16384", "llama-3.1-405b", 16384, 8192, 2048); /* 16M tokens [L3 Table 4] */
}
