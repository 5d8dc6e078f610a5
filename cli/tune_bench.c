/* tune_bench — `tune --bench-top K`: after a tune is recorded, runs its K best distinct
 * finalists for real, one process each (`scaleplan run` under mpirun, or srun), records every
 * outcome as a benchmark linked to its finalist, and prints predicted against measured with
 * the plans re-ranked by measurement. The command lines and the reading of the output are the
 * tuner's (tuner/bench.h); this file only starts processes and prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/tune_bench.h"
#include "runtime/train.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tuner/bench.h"
#include "tuner/store.h"

#define MIB 1048576.0

static void plan_text(const char *plan_json, char *buf, size_t cap)
{
	struct plan p;
	char err[ERR_LEN];
	plan_defaults(&p);
	if (plan_from_json(plan_json, &p, err)) { snprintf(buf, cap, "?"); return; }
	int n = snprintf(buf, cap, "dp%d tp%d pp%d", p.dp, p.tp, p.pp);
	if (p.cp > 1) n += snprintf(buf + n, cap - (size_t)n, " cp%d", p.cp);
	if (p.ep > 1) n += snprintf(buf + n, cap - (size_t)n, " ep%d", p.ep);
	if (p.zero) n += snprintf(buf + n, cap - (size_t)n, " z%d", p.zero);
	if (p.sp && p.tp > 1) n += snprintf(buf + n, cap - (size_t)n, " sp");
	if (p.recompute) n += snprintf(buf + n, cap - (size_t)n, " rc-%s", recompute_name(p.recompute));
	n += snprintf(buf + n, cap - (size_t)n, " mbs%d", p.mbs);
	if (p.pp > 1) snprintf(buf + n, cap - (size_t)n, " %s%s", schedule_name(p.schedule), p.vpp > 1 ? "·v" : "");
}

struct tick_ctx {
	int i, n, tty;
	long fin;
	const char *what;
};

static void on_tick(void *ctx, double s)
{
	struct tick_ctx *t = ctx;
	if (t->tty) fprintf(stderr, "\rbench %d/%d: finalist %ld (%s) running, %.0f s", t->i, t->n, t->fin, t->what, s);
	else if ((int)s % 30 == 0) fprintf(stderr, "bench %d/%d: finalist %ld still running, %.0f s\n", t->i, t->n, t->fin, s);
	fflush(stderr);
}

/* Whether `scaleplan run` can train this finalist's plan; why not in why. */
static int runnable(const char *plan_json, char *why)
{
	struct plan p;
	struct model m;
	plan_defaults(&p);
	return !plan_from_json(plan_json, &p, why) && !model_load(p.model, &m, why) && !train_supported(&p, &m, why);
}

/* one finalist: start, wait, read, record */
static int bench_one(const struct tune_bench_args *ba, const struct bench_opts *bo, struct store *s,
		     const struct store_finalist *f, int i, int n, struct store_bench *b, char *err)
{
	struct bench_cmd c;
	char what[160];
	plan_text(f->plan_json, what, sizeof(what));
	if (bench_command(bo, f->plan_json, f->id, &c, err)) return -1;
	struct tick_ctx tc = {i, n, isatty(2), f->id, what};
	fprintf(stderr, "bench %d/%d: finalist %ld (%s), %d ranks ...%s", i, n, f->id, what, c.ranks, tc.tty ? "" : "\n");
	fflush(stderr);
	struct spawn_opts so = {ba->timeout_s, on_tick, &tc};
	struct spawn_result r;
	int rc = cli_spawn(c.argv, &so, &r, err);
	if (!rc) {
		struct bench_exit x = {r.exit_code, r.signal, r.timed_out, r.wall_s};
		rc = bench_parse(r.out, r.errtext, &x, bo->warmup, c.ranks, b, err);
		spawn_result_free(&r);
	}
	if (!rc) {
		b->tune_id = f->tune_id;
		b->finalist_id = f->id;
		b->command = c.line;
		c.line = NULL;
		rc = store_add_benchmark(s, b, err);
		fprintf(stderr, "%sbench %d/%d: finalist %ld %s", tc.tty ? "\r\033[K" : "", i, n, f->id, b->status);
		if (!strcmp(b->status, "ok")) fprintf(stderr, ", %.4g s per step (%.0f s in all)\n", b->step_time_s, b->wall_s);
		else fprintf(stderr, ": %s\n", b->message);
	}
	bench_cmd_free(&c);
	return rc;
}

static const struct store_finalist *fin_of(const struct store_finalist *f, int nf, long id)
{
	for (int i = 0; i < nf; i++)
		if (f[i].id == id) return &f[i];
	return NULL;
}

static void print_table(const struct store_finalist *f, int nf, const struct store_bench *b, int n, FILE *o)
{
	int order[256];
	bench_rank(b, n, order);
	fprintf(o, "\nbenchmarks, ranked by measurement (median step after warm-up; error = predicted/measured - 1):\n");
	fprintf(o, "%4s %4s %6s  %-34s %10s %10s %8s %12s %12s %10s  %s\n", "meas", "pred", "fin.id", "plan",
		"pred s", "meas s", "error", "pred tok/s/g", "meas tok/s/g", "peak MiB", "status");
	for (int k = 0; k < n; k++) {
		const struct store_bench *x = &b[order[k]];
		const struct store_finalist *fi = fin_of(f, nf, x->finalist_id);
		char what[160];
		plan_text(fi ? fi->plan_json : "{}", what, sizeof(what));
		int ok = !strcmp(x->status, "ok");
		fprintf(o, "%4s %4d %6ld  %-34.34s %10.4g ", ok ? "" : "-", fi ? fi->rank : 0, x->finalist_id, what,
			fi ? fi->step_time_s : 0);
		if (ok) {
			fprintf(o, "%10.4g %+7.1f%% %12.0f %12.0f %10.1f  ok\n", x->step_time_s,
				100 * ((fi ? fi->step_time_s : 0) / x->step_time_s - 1), fi ? fi->tokens_per_s_per_gpu : 0,
				x->tokens_per_s_per_gpu, x->peak_mem_bytes / MIB);
		} else {
			fprintf(o, "%10s %8s %12.0f %12s %10s  %s: %.120s\n", "-", "-", fi ? fi->tokens_per_s_per_gpu : 0, "-", "-",
				x->status, x->message);
		}
	}
	for (int k = 0, shown = 0; k < n && !shown; k++) {
		const struct store_bench *x = &b[order[k]];
		if (strcmp(x->status, "ok")) continue;
		const struct store_finalist *fi = fin_of(f, nf, x->finalist_id);
		fprintf(o, "fastest measured: finalist %ld (predicted rank %d), %.0f tokens/s/GPU%s\n", x->finalist_id,
			fi ? fi->rank : 0, x->tokens_per_s_per_gpu,
			fi && fi->rank == 1 ? " (the predicted best)" : "");
		shown = 1;
	}
}

static cJSON *bench_json(const struct store_bench *b, int n)
{
	int order[256];
	bench_rank(b, n, order);
	cJSON *a = cJSON_CreateArray();
	for (int k = 0; k < n; k++) {
		const struct store_bench *x = &b[order[k]];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "finalist_id", (double)x->finalist_id);
		cJSON_AddNumberToObject(o, "measured_rank", k + 1);
		cJSON_AddStringToObject(o, "bench_status", x->status);
		cJSON_AddNumberToObject(o, "measured_step_time_s", x->step_time_s);
		cJSON_AddNumberToObject(o, "measured_tokens_per_s_per_gpu", x->tokens_per_s_per_gpu);
		cJSON_AddNumberToObject(o, "measured_peak_mem_bytes", x->peak_mem_bytes);
		cJSON_AddItemToObject(o, "measured_peak_mem_bytes_per_rank", cJSON_CreateDoubleArray(x->peak_mem_bytes_per_rank, x->nranks));
		cJSON_AddNumberToObject(o, "steps", x->steps);
		cJSON_AddNumberToObject(o, "wall_s", x->wall_s);
		cJSON_AddStringToObject(o, "message", x->message);
		cJSON_AddStringToObject(o, "command", x->command);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* the exe the runs use: --bench-exe, else this very program */
static int self_exe(const struct tune_bench_args *ba, char *buf, size_t cap)
{
	if (ba->exe) { snprintf(buf, cap, "%s", ba->exe); return 0; }
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
	if (n <= 0) return -1;
	buf[n] = 0;
	return 0;
}

static int on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];
	for (const char *p = path; p && *p;) {
		const char *e = strchr(p, ':');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, p, prog);
		if (access(buf, X_OK) == 0) return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

int tune_bench(const struct tune_bench_args *ba, const char *db, long tune_id, const char *model, const char *gpu,
	       int gpus_per_node, cJSON *json_out)
{
	char err[ERR_LEN], exe[4096];
	if (self_exe(ba, exe, sizeof(exe))) { cli_error("tune", "--bench-top: cannot find this program's path"); return EXIT_RUNTIME; }
	int srun = ba->launcher && !strcmp(ba->launcher, "srun");
	struct bench_opts bo = {(int)ba->top, (int)ba->steps, 1, ba->timeout_s, srun ? LAUNCH_SRUN : LAUNCH_MPIRUN, exe, db,
				model, gpu, gpus_per_node};
	struct store *s;
	struct store_finalist *f = NULL;
	int nf = 0, rc = EXIT_OK;
	if (store_open(db, STORE_CREATE, &s, err) || store_list_finalists(s, tune_id, &f, &nf, err)) {
		cli_error("tune", "%s", err);
		store_close(s);
		return EXIT_RUNTIME;
	}
	/* the runtime's own rule first: a plan it cannot train is said once and not launched, so the
	 * K benchmarks are K plans that run */
	struct store_finalist *g = calloc((size_t)(nf ? nf : 1), sizeof(*g));
	int ng = 0;
	for (int i = 0; g && i < nf; i++) {
		char why[ERR_LEN];
		if (runnable(f[i].plan_json, why)) g[ng++] = f[i];
		else fprintf(stderr, "bench: finalist %ld skipped: %s\n", f[i].id, why);
	}
	int idx[256], n = 0;
	if (g) bench_select(g, ng, ba->top > 256 ? 256 : (int)ba->top, idx, &n);
	struct store_bench *b = calloc((size_t)(n ? n : 1), sizeof(*b));
	int print_only = ba->print_only || (srun && !on_path("srun"));
	if (!b || !g) rc = EXIT_RUNTIME;
	if (print_only && !rc) {
		printf("\n%s: the command lines of the %d benchmark runs (nothing run or recorded):\n",
		       srun && !ba->print_only ? "srun is not on PATH" : "--bench-print", n);
		for (int i = 0; i < n && !rc; i++) {
			struct bench_cmd c;
			if (bench_command(&bo, g[idx[i]].plan_json, g[idx[i]].id, &c, err)) { cli_error("tune", "%s", err); rc = EXIT_RUNTIME; break; }
			printf("%s\n", c.line);
			bench_cmd_free(&c);
		}
	}
	int done = 0;
	for (int i = 0; i < n && !rc && !print_only; i++, done++)
		if (bench_one(ba, &bo, s, &g[idx[i]], i + 1, n, &b[i], err)) { cli_error("tune", "%s", err); rc = EXIT_RUNTIME; }
	if (!print_only && !rc) {
		if (json_out) cJSON_AddItemToObject(json_out, "benchmarks", bench_json(b, done));
		else print_table(f, nf, b, done, stdout);
	}
	for (int i = 0; b && i < done; i++) { free(b[i].command); free(b[i].message); }
	free(b);
	free(g); /* shallow copies of f's entries */
	store_free_finalists(f, nf);
	store_close(s);
	return rc;
}
