/* store_run — the runs of the results store: a run and its process identity, one row per
 * measured step, its end (ok, failed, aborted when its process is gone), and the runs beside
 * the prediction they were made for. The handle, the schema and the tunes are tuner/store.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>
#include "tuner/store.h"
#include "tuner/store_impl.h"
#include "sim/proc.h"
#include "sim/util.h"

int store_add_run(struct store *s, long finalist_id, const char *plan_json, const char *host,
		  long *run_id, char *err)
{
	sqlite3_stmt *st;
	char ident[128];
	long pid = (long)getpid();
	proc_identity(pid, ident, sizeof(ident));
	if (store_prepare(s, "INSERT INTO runs(finalist_id, plan, host, started, pid, proc_start) VALUES(?,?,?,?,?,?)", &st, err))
		return -1;
	if (finalist_id > 0) sqlite3_bind_int64(st, 1, finalist_id);
	else sqlite3_bind_null(st, 1);
	sqlite3_bind_text(st, 2, plan_json ? plan_json : "{}", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, host ? host : "", -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 4, (double)time(NULL));
	sqlite3_bind_int64(st, 5, pid);
	sqlite3_bind_text(st, 6, ident, -1, SQLITE_STATIC);
	if (store_write1(s, st, err)) return -1;
	*run_id = (long)sqlite3_last_insert_rowid(s->db);
	return 0;
}

/* Runs of this host left `running` whose process is gone become `aborted`, in one write
 * transaction (rows of other hosts, and rows without a pid, cannot be judged and stay). */
int store_mark_aborted(struct store *s, char *err)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	sqlite3_stmt *st, *up;
	if (store_exec(s, "BEGIN IMMEDIATE", err)) return -1;
	if (store_prepare(s, "SELECT id, pid, coalesce(proc_start, '') FROM runs WHERE status = 'running' AND host = ?"
		       " AND pid IS NOT NULL", &st, err))
		goto fail;
	if (store_prepare(s, "UPDATE runs SET status = 'aborted' WHERE id = ?", &up, err)) {
		sqlite3_finalize(st);
		goto fail;
	}
	sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
	int rc, bad = 0;
	while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (proc_alive((long)sqlite3_column_int64(st, 1), (const char *)sqlite3_column_text(st, 2))) continue;
		sqlite3_bind_int64(up, 1, sqlite3_column_int64(st, 0));
		bad = sqlite3_step(up) != SQLITE_DONE;
		sqlite3_reset(up);
	}
	if (!bad && rc != SQLITE_DONE) bad = 1;
	if (bad) store_db_errf(s, err, "marking aborted runs");
	sqlite3_finalize(st);
	sqlite3_finalize(up);
	if (!bad && !store_exec(s, "COMMIT", err)) return 0;
fail:
	store_rollback(s);
	return -1;
}

int store_add_measurement(struct store *s, long run_id, int step, double step_time_s,
			  double tokens_per_s, double peak_mem_bytes, double loss, char *err)
{
	sqlite3_stmt *st;
	if (store_prepare(s, "INSERT INTO measurements(run_id, step, step_time_s, tokens_per_s,"
		    " peak_mem_bytes, loss) VALUES(?,?,?,?,?,?)", &st, err))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, step);
	sqlite3_bind_double(st, 3, step_time_s);
	sqlite3_bind_double(st, 4, tokens_per_s);
	sqlite3_bind_double(st, 5, peak_mem_bytes);
	sqlite3_bind_double(st, 6, loss);
	return store_write1(s, st, err);
}

int store_finish_run(struct store *s, long run_id, const char *status, char *err)
{
	sqlite3_stmt *st;
	if (store_prepare(s, "UPDATE runs SET status = ? WHERE id = ?", &st, err)) return -1;
	sqlite3_bind_text(st, 1, status ? status : "done", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, run_id);
	if (store_write1(s, st, err)) return -1;
	if (sqlite3_changes(s->db) != 1) return errf(err, "store: %s: no run %ld", s->path, run_id);
	return 0;
}

int store_run_summary(struct store *s, long run_id, int *steps, double *mean_step_s, char *err)
{
	sqlite3_stmt *st;
	if (store_prepare(s, "SELECT count(*), coalesce(avg(step_time_s), 0) FROM measurements WHERE run_id = ?",
		    &st, err))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*steps = sqlite3_column_int(st, 0);
		*mean_step_s = sqlite3_column_double(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : store_db_errf(s, err, "read measurements");
}

#define RUN_MEAN(col) "(SELECT coalesce(avg(CASE WHEN m.step > (SELECT min(step) FROM measurements WHERE run_id = r.id)" \
	" THEN m." col " END), avg(m." col ")) FROM measurements m WHERE m.run_id = r.id)"

int store_list_runs(struct store *s, struct store_run **out, int *n, char *err)
{
	sqlite3_stmt *st;
	struct store_run *arr = NULL;
	int cnt = 0, cap = 0, rc;
	*out = NULL;
	*n = 0;
	if (store_prepare(s, "SELECT r.id, coalesce(r.finalist_id, 0), coalesce(f.tune_id, 0), r.plan, r.host, r.started,"
		    " r.status, (SELECT count(*) FROM measurements WHERE run_id = r.id), "
		    RUN_MEAN("step_time_s") ", " RUN_MEAN("tokens_per_s") ","
		    " (SELECT max(peak_mem_bytes) FROM measurements WHERE run_id = r.id),"
		    " (SELECT loss FROM measurements WHERE run_id = r.id ORDER BY step DESC LIMIT 1),"
		    " coalesce(f.step_time_s, 0), coalesce(f.tokens_per_s_per_gpu, 0), coalesce(f.peak_mem_bytes, 0)"
		    " FROM runs r LEFT JOIN finalists f ON f.id = r.finalist_id ORDER BY r.id", &st, err))
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (store_grow((void **)&arr, cnt, &cap, sizeof(*arr))) break;
		struct store_run *r = &arr[cnt++];
		memset(r, 0, sizeof(*r));
		r->id = (long)sqlite3_column_int64(st, 0);
		r->finalist_id = (long)sqlite3_column_int64(st, 1);
		r->tune_id = (long)sqlite3_column_int64(st, 2);
		r->plan_json = store_col_strdup(st, 3);
		const unsigned char *h = sqlite3_column_text(st, 4), *stat = sqlite3_column_text(st, 6);
		snprintf(r->host, sizeof(r->host), "%s", h ? (const char *)h : "");
		r->started_s = sqlite3_column_double(st, 5);
		snprintf(r->status, sizeof(r->status), "%s", stat ? (const char *)stat : "");
		r->steps = sqlite3_column_int(st, 7);
		r->mean_step_s = sqlite3_column_double(st, 8);
		r->mean_tokens_per_s = sqlite3_column_double(st, 9);
		r->peak_mem_bytes = sqlite3_column_double(st, 10);
		r->final_loss = sqlite3_column_double(st, 11);
		r->predicted_step_s = sqlite3_column_double(st, 12);
		r->predicted_tokens_per_s_per_gpu = sqlite3_column_double(st, 13);
		r->predicted_peak_mem_bytes = sqlite3_column_double(st, 14);
		if (!r->plan_json) break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_free_runs(arr, cnt);
		return rc == SQLITE_ROW ? errf(err, "store: out of memory") : store_db_errf(s, err, "read runs");
	}
	*out = arr;
	*n = cnt;
	return 0;
}

