/* bench — command lines for benchmark runs and the reading of their output. A plan travels
 * as flags (every key of its JSON as --key value), so the command line printed for srun is
 * complete by itself. */
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sim/plan.h"
#include "sim/util.h"
#include "tuner/bench.h"

/* a finalist's plan with the settings that change nothing at its degrees set to their
 * defaults (ZeRO without data parallelism, SP without TP), as JSON: two plans that run the
 * same have the same key */
static char *run_key(const char *plan_json)
{
	struct plan p;
	char err[ERR_LEN];
	plan_defaults(&p);
	if (plan_from_json(plan_json, &p, err)) return strdup(plan_json);
	if (p.dp * p.cp == 1) p.zero = 0;
	if (p.tp == 1) p.sp = 0;
	return plan_to_json(&p);
}

void bench_select(const struct store_finalist *f, int nf, int k, int *idx, int *n)
{
	char *keys[256];
	*n = 0;
	for (int i = 0; i < nf && *n < k && *n < 256; i++) {
		if (!f[i].fits) continue;
		char *key = run_key(f[i].plan_json);
		int dup = !key;
		for (int j = 0; j < *n && !dup; j++) dup = !strcmp(keys[j], key);
		if (dup) { free(key); continue; }
		keys[*n] = key;
		idx[(*n)++] = i;
	}
	for (int j = 0; j < *n; j++) free(keys[j]);
}

/* ---- command lines ---------------------------------------------------------------------- */

struct argv_buf {
	char **v;
	int n, cap;
	int oom;
};

static void push(struct argv_buf *a, const char *s)
{
	if (a->oom) return;
	if (a->n + 2 > a->cap) {
		int nc = a->cap ? 2 * a->cap : 32;
		char **nv = realloc(a->v, (size_t)nc * sizeof(char *));
		if (!nv) { a->oom = 1; return; }
		a->v = nv;
		a->cap = nc;
	}
	a->v[a->n] = strdup(s);
	if (!a->v[a->n]) { a->oom = 1; return; }
	a->v[++a->n] = NULL;
}

static void push_num(struct argv_buf *a, double v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%.17g", v);
	push(a, buf);
}

/* --key value for every key of the plan (model and gpu as the tune was given them) */
static int push_plan(struct argv_buf *a, const struct bench_opts *o, const cJSON *plan, char *err)
{
	for (const cJSON *it = plan->child; it; it = it->next) {
		char flag[80];
		snprintf(flag, sizeof(flag), "--%s", it->string);
		for (char *c = flag + 2; *c; c++) if (*c == '_') *c = '-';
		if (!strcmp(it->string, "model") && o->model) { push(a, flag); push(a, o->model); continue; }
		if (!strcmp(it->string, "gpu") && o->gpu) { push(a, flag); push(a, o->gpu); continue; }
		if (cJSON_IsString(it)) { if (!*it->valuestring) continue; push(a, flag); push(a, it->valuestring); }
		else if (cJSON_IsBool(it) && !strcmp(it->string, "sp")) push(a, cJSON_IsTrue(it) ? "--sp" : "--no-sp"); /* flags without a value */
		else if (cJSON_IsBool(it)) { push(a, flag); push(a, cJSON_IsTrue(it) ? "1" : "0"); }
		else if (cJSON_IsNumber(it)) { push(a, flag); push_num(a, it->valuedouble); }
		else if (cJSON_IsArray(it)) {
			char buf[4096];
			size_t n = 0;
			buf[0] = 0;
			for (const cJSON *e = it->child; e && n + 16 < sizeof(buf); e = e->next)
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d", n ? "," : "", e->valueint);
			push(a, flag);
			push(a, buf);
		} else return errf(err, "bench: plan key %s has a value of no known kind", it->string);
	}
	return 0;
}

/* the words as one shell command line (put_shell_word quotes each) */
static char *join(char **v)
{
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	if (!m) return NULL;
	for (int i = 0; v[i]; i++) {
		if (i) fputc(' ', m);
		put_shell_word(m, v[i]);
	}
	if (fclose(m)) {
		free(line);
		return NULL;
	}
	return line;
}

int bench_command(const struct bench_opts *o, const char *plan_json, long finalist_id, struct bench_cmd *c, char *err)
{
	memset(c, 0, sizeof(*c));
	cJSON *plan = cJSON_Parse(plan_json);
	if (!cJSON_IsObject(plan)) { cJSON_Delete(plan); return errf(err, "bench: finalist %ld: its plan is not a JSON object", finalist_id); }
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(plan, "gpus");
	c->ranks = cJSON_IsNumber(g) ? g->valueint : 0;
	if (c->ranks < 1) { cJSON_Delete(plan); return errf(err, "bench: finalist %ld: its plan has no gpus", finalist_id); }
	struct argv_buf a = {0};
	if (o->launcher == LAUNCH_SRUN) {
		push(&a, "srun");
		push(&a, "-n");
		push_num(&a, c->ranks);
		if (o->gpus_per_node > 0) { push(&a, "--ntasks-per-node"); push_num(&a, o->gpus_per_node < c->ranks ? o->gpus_per_node : c->ranks); }
	} else {
		push(&a, "mpirun");
		push(&a, "--oversubscribe"); /* CPU ranks may outnumber cores: one rank per "GPU" */
		push(&a, "-np");
		push_num(&a, c->ranks);
	}
	push(&a, o->exe);
	push(&a, "run");
	int rc = push_plan(&a, o, plan, err);
	cJSON_Delete(plan);
	push(&a, "--steps");
	push_num(&a, o->steps);
	push(&a, "--json");
	if (o->db) {
		push(&a, "--db");
		push(&a, o->db);
		push(&a, "--finalist");
		push_num(&a, (double)finalist_id);
	}
	c->argv = a.v;
	c->argc = a.n;
	if (!rc && !a.oom && !(c->line = join(a.v))) a.oom = 1;
	if (rc || a.oom) {
		bench_cmd_free(c);
		return rc ? -1 : errf(err, "bench: out of memory");
	}
	return 0;
}

void bench_cmd_free(struct bench_cmd *c)
{
	for (int i = 0; c->argv && i < c->argc; i++) free(c->argv[i]);
	free(c->argv);
	free(c->line);
	memset(c, 0, sizeof(*c));
}

/* ---- reading a run ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* case-insensitive substring */
static int has(const char *text, const char *what)
{
	size_t n = strlen(what);
	for (const char *p = text; p && *p; p++)
		if (!strncasecmp(p, what, n)) return 1;
	return 0;
}

/* our own error lines (they start "scaleplan"), else the end of stderr: at most 400 bytes */
static char *message_of(const char *errtext)
{
	char buf[400];
	size_t n = 0;
	buf[0] = 0;
	for (const char *l = errtext; l && *l && n + 2 < sizeof(buf);) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		if (!strncmp(l, "scaleplan", 9))
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%.*s", n ? " | " : "", (int)len, l);
		l = e ? e + 1 : NULL;
	}
	if (!n && errtext) {
		size_t len = strlen(errtext);
		snprintf(buf, sizeof(buf), "%s", errtext + (len > 300 ? len - 300 : 0));
	}
	for (char *c = buf; *c; c++) if (*c == '\n' || *c == '\t') *c = ' ';
	return strdup(buf);
}

struct steps {
	double *t;                 /* step times in order */
	int n, cap;
	double tokens_per_step;
};

static int read_step(const cJSON *o, struct steps *s, struct store_bench *b)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "step_time_s");
	const cJSON *tps = cJSON_GetObjectItemCaseSensitive(o, "tokens_per_s");
	const cJSON *mem = cJSON_GetObjectItemCaseSensitive(o, "peak_mem_bytes_per_rank");
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(o, "run_id");
	if (!cJSON_IsNumber(t)) return 0;
	if (s->n == s->cap) {
		int nc = s->cap ? 2 * s->cap : 64;
		double *nt = realloc(s->t, (size_t)nc * sizeof(double));
		if (!nt) return -1;
		s->t = nt;
		s->cap = nc;
	}
	s->t[s->n++] = t->valuedouble;
	if (cJSON_IsNumber(tps)) s->tokens_per_step = tps->valuedouble * t->valuedouble;
	if (cJSON_IsNumber(run) && is_int_in(run->valuedouble, 0, 1e15)) b->run_id = (long)run->valuedouble;
	int r = 0;
	for (const cJSON *e = cJSON_IsArray(mem) ? mem->child : NULL; e && r < STORE_BENCH_MAX_RANKS; e = e->next, r++)
		if (e->valuedouble > b->peak_mem_bytes_per_rank[r]) b->peak_mem_bytes_per_rank[r] = e->valuedouble;
	if (r > b->nranks) b->nranks = r;
	return 0;
}

int bench_parse(const char *out, const char *errtext, const struct bench_exit *x, int warmup, int gpus,
		struct store_bench *b, char *err)
{
	struct steps s = {0};
	char line[1 << 16];
	for (const char *l = out; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		if (len < sizeof(line) && *l == '{') {
			memcpy(line, l, len);
			line[len] = 0;
			cJSON *o = cJSON_Parse(line);
			int bad = o && read_step(o, &s, b);
			cJSON_Delete(o);
			if (bad) { free(s.t); return errf(err, "bench: out of memory"); }
		}
		l = e ? e + 1 : NULL;
	}
	b->wall_s = x->wall_s;
	if (x->timed_out) snprintf(b->status, sizeof(b->status), "timeout");
	else if (!x->signal && x->exit_code == 0 && s.n > 0) snprintf(b->status, sizeof(b->status), "ok");
	else if (has(errtext, "out of memory") || has(errtext, "cannot allocate memory") || has(errtext, "signal 9") ||
		 x->signal == 9)
		snprintf(b->status, sizeof(b->status), "oom");
	else snprintf(b->status, sizeof(b->status), "crashed");
	int first = s.n > warmup ? warmup : 0;
	b->steps = s.n - first;
	if (b->steps > 0 && (!strcmp(b->status, "ok") || !strcmp(b->status, "oom"))) {
		qsort(s.t + first, (size_t)b->steps, sizeof(double), cmp_double);
		double *v = s.t + first;
		int m = b->steps;
		b->step_time_s = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
		b->tokens_per_s_per_gpu = b->step_time_s > 0 && gpus > 0 ? s.tokens_per_step / b->step_time_s / gpus : 0;
	} else {
		b->steps = 0;
	}
	for (int r = 0; r < b->nranks; r++)
		if (b->peak_mem_bytes_per_rank[r] > b->peak_mem_bytes) b->peak_mem_bytes = b->peak_mem_bytes_per_rank[r];
	free(s.t);
	b->message = strcmp(b->status, "ok") ? message_of(errtext) : strdup("");
	if (x->timed_out && b->message) {
		char *m = malloc(strlen(b->message) + 64);
		if (m) sprintf(m, "ended after %.0f s (the per-plan timeout)%s%s", x->wall_s, *b->message ? ": " : "", b->message);
		free(b->message);
		b->message = m;
	}
	return b->message ? 0 : errf(err, "bench: out of memory");
}

void bench_rank(const struct store_bench *b, int n, int *order)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (!strcmp(b[i].status, "ok")) order[k++] = i;
	for (int i = 1; i < k; i++) /* insertion sort, stable: fastest first */
		for (int j = i; j > 0 && b[order[j]].tokens_per_s_per_gpu > b[order[j - 1]].tokens_per_s_per_gpu; j--) {
			int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
		}
	for (int i = 0; i < n; i++)
		if (strcmp(b[i].status, "ok")) order[k++] = i;
}
