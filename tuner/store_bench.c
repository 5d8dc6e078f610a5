/* store_bench — the tables of schema version 2: profiles measured by `scaleplan profile` and
 * benchmarks of finalists (`tune --bench-top`). Every write is one IMMEDIATE transaction,
 * as in store.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "tuner/store.h"
#include "tuner/store_impl.h"
#include "sim/util.h"

int store_add_profile(struct store *s, const char *host, const char *backend, int ranks,
		      const char *profile_json, long *id, char *err)
{
	sqlite3_stmt *st;
	if (store_prepare(s, "INSERT INTO profiles(created, host, backend, ranks, profile) VALUES(?,?,?,?,?)", &st, err))
		return -1;
	sqlite3_bind_double(st, 1, (double)time(NULL));
	sqlite3_bind_text(st, 2, host ? host : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, backend ? backend : "", -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, ranks);
	sqlite3_bind_text(st, 5, profile_json ? profile_json : "{}", -1, SQLITE_STATIC);
	if (store_write1(s, st, err)) return -1;
	*id = (long)sqlite3_last_insert_rowid(s->db);
	return 0;
}

static char *ranks_json(const struct store_bench *b)
{
	cJSON *a = cJSON_CreateDoubleArray(b->peak_mem_bytes_per_rank, b->nranks > 0 ? b->nranks : 0);
	char *t = a ? cJSON_PrintUnformatted(a) : NULL;
	cJSON_Delete(a);
	return t;
}

int store_add_benchmark(struct store *s, struct store_bench *b, char *err)
{
	sqlite3_stmt *st;
	if (b->started_s == 0) b->started_s = (double)time(NULL);
	char *ranks = ranks_json(b);
	if (!ranks) return errf(err, "store: out of memory");
	if (store_prepare(s, "INSERT INTO benchmarks(tune_id, finalist_id, run_id, started, status, steps,"
			  " step_time_s, tokens_per_s_per_gpu, peak_mem_bytes, peak_mem_bytes_per_rank, wall_s,"
			  " command, message) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", &st, err)) {
		free(ranks);
		return -1;
	}
	sqlite3_bind_int64(st, 1, b->tune_id);
	sqlite3_bind_int64(st, 2, b->finalist_id);
	if (b->run_id > 0) sqlite3_bind_int64(st, 3, b->run_id);
	else sqlite3_bind_null(st, 3);
	sqlite3_bind_double(st, 4, b->started_s);
	sqlite3_bind_text(st, 5, b->status, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 6, b->steps);
	sqlite3_bind_double(st, 7, b->step_time_s);
	sqlite3_bind_double(st, 8, b->tokens_per_s_per_gpu);
	sqlite3_bind_double(st, 9, b->peak_mem_bytes);
	sqlite3_bind_text(st, 10, ranks, -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 11, b->wall_s);
	sqlite3_bind_text(st, 12, b->command ? b->command : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 13, b->message ? b->message : "", -1, SQLITE_STATIC);
	int rc = store_write1(s, st, err);
	free(ranks);
	if (rc) return -1;
	b->id = (long)sqlite3_last_insert_rowid(s->db);
	return 0;
}

static int read_bench(sqlite3_stmt *st, struct store_bench *b)
{
	memset(b, 0, sizeof(*b));
	b->id = (long)sqlite3_column_int64(st, 0);
	b->tune_id = (long)sqlite3_column_int64(st, 1);
	b->finalist_id = (long)sqlite3_column_int64(st, 2);
	b->run_id = (long)sqlite3_column_int64(st, 3);
	b->started_s = sqlite3_column_double(st, 4);
	const unsigned char *v = sqlite3_column_text(st, 5);
	snprintf(b->status, sizeof(b->status), "%s", v ? (const char *)v : "");
	b->steps = sqlite3_column_int(st, 6);
	b->step_time_s = sqlite3_column_double(st, 7);
	b->tokens_per_s_per_gpu = sqlite3_column_double(st, 8);
	b->peak_mem_bytes = sqlite3_column_double(st, 9);
	cJSON *a = cJSON_Parse((const char *)sqlite3_column_text(st, 10));
	for (cJSON *e = a ? a->child : NULL; e && b->nranks < STORE_BENCH_MAX_RANKS; e = e->next)
		b->peak_mem_bytes_per_rank[b->nranks++] = e->valuedouble;
	cJSON_Delete(a);
	b->wall_s = sqlite3_column_double(st, 11);
	v = sqlite3_column_text(st, 12);
	b->command = strdup(v ? (const char *)v : "");
	v = sqlite3_column_text(st, 13);
	b->message = strdup(v ? (const char *)v : "");
	return b->command && b->message ? 0 : -1;
}

int store_list_benchmarks(struct store *s, long tune_id, struct store_bench **out, int *n, char *err)
{
	sqlite3_stmt *st;
	struct store_bench *arr = NULL;
	int cnt = 0, cap = 0, rc;
	*out = NULL;
	*n = 0;
	static const char cols[] = "SELECT b.id, b.tune_id, b.finalist_id, b.run_id, b.started, b.status, b.steps,"
				   " b.step_time_s, b.tokens_per_s_per_gpu, b.peak_mem_bytes, b.peak_mem_bytes_per_rank,"
				   " b.wall_s, b.command, b.message FROM benchmarks b JOIN finalists f ON f.id = b.finalist_id";
	char sql[640];
	snprintf(sql, sizeof(sql), "%s%s ORDER BY b.tune_id, f.rank, b.id", cols, tune_id ? " WHERE b.tune_id = ?" : "");
	if (store_prepare(s, sql, &st, err)) return -1;
	if (tune_id) sqlite3_bind_int64(st, 1, tune_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cnt == cap) {
			int nc = cap ? 2 * cap : 16;
			struct store_bench *na = realloc(arr, (size_t)nc * sizeof(*arr));
			if (!na) break;
			arr = na;
			cap = nc;
		}
		if (read_bench(st, &arr[cnt++])) break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_free_benchmarks(arr, cnt);
		return rc == SQLITE_ROW ? errf(err, "store: out of memory") : store_db_errf(s, err, "read benchmarks");
	}
	*out = arr;
	*n = cnt;
	return 0;
}

void store_free_benchmarks(struct store_bench *b, int n)
{
	for (int i = 0; b && i < n; i++) {
		free(b[i].command);
		free(b[i].message);
	}
	free(b);
}

/* median of the run's step times after its first step */
static int run_median(struct store *s, struct store_run *r, char *err)
{
	sqlite3_stmt *st;
	if (store_prepare(s, "SELECT step_time_s FROM measurements WHERE run_id = ? ORDER BY step", &st, err)) return -1;
	sqlite3_bind_int64(st, 1, r->id);
	double v[4096];
	int n = 0, rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < 4096) v[n++] = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) return store_db_errf(s, err, "read measurements");
	int first = n > 1 ? 1 : 0, m = n - first;
	double *x = v + first;
	for (int i = 1; i < m; i++)
		for (int j = i; j > 0 && x[j] < x[j - 1]; j--) { double t = x[j]; x[j] = x[j - 1]; x[j - 1] = t; }
	r->steps = m;
	r->median_step_s = m <= 0 ? 0 : m % 2 ? x[m / 2] : 0.5 * (x[m / 2 - 1] + x[m / 2]);
	return 0;
}

int store_list_finished_runs(struct store *s, struct store_run **out, int *n, char *err)
{
	sqlite3_stmt *st;
	struct store_run *arr = NULL;
	int cnt = 0, cap = 0, rc, bad = 0;
	*out = NULL;
	*n = 0;
	if (store_prepare(s, "SELECT id, coalesce(finalist_id, 0), plan FROM runs WHERE status = 'finished' ORDER BY id", &st, err))
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cnt == cap) {
			int nc = cap ? 2 * cap : 16;
			struct store_run *na = realloc(arr, (size_t)nc * sizeof(*arr));
			if (!na) { bad = 1; break; }
			arr = na;
			cap = nc;
		}
		struct store_run *r = &arr[cnt++];
		memset(r, 0, sizeof(*r));
		r->id = (long)sqlite3_column_int64(st, 0);
		r->finalist_id = (long)sqlite3_column_int64(st, 1);
		const unsigned char *v = sqlite3_column_text(st, 2);
		if (!(r->plan_json = strdup(v ? (const char *)v : "{}"))) { bad = 1; break; }
	}
	sqlite3_finalize(st);
	if (bad || (rc != SQLITE_DONE && rc != SQLITE_ROW)) {
		store_free_runs(arr, cnt);
		return bad ? errf(err, "store: out of memory") : store_db_errf(s, err, "read runs");
	}
	for (int i = 0; i < cnt; i++)
		if (run_median(s, &arr[i], err)) { store_free_runs(arr, cnt); return -1; }
	*out = arr;
	*n = cnt;
	return 0;
}

void store_free_runs(struct store_run *r, int n)
{
	for (int i = 0; r && i < n; i++) free(r[i].plan_json);
	free(r);
}
