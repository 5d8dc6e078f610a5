/* store_impl — what the files of the store module share (tuner/store.c, tuner/store_run.c, tuner/store_bench.c):
 * the handle and the statement functions. Nothing outside the store includes it. */
#ifndef SCALEPLAN_STORE_IMPL_H
#define SCALEPLAN_STORE_IMPL_H

#include <stddef.h>
#include <sqlite3.h>

struct store {
	sqlite3 *db;
	char path[512];
	int mode;       /* STORE_READ or STORE_CREATE */
	int busy_ms;
};

int store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, char *err);
/* one statement in its own BEGIN IMMEDIATE transaction; finalizes st */
int store_write1(struct store *s, sqlite3_stmt *st, char *err);
int store_db_errf(struct store *s, char *err, const char *what);
int store_exec(struct store *s, const char *sql, char *err);
void store_rollback(struct store *s);
char *store_col_strdup(sqlite3_stmt *st, int i); /* the column's text, "" for NULL; malloc'd */
int store_grow(void **arr, int n, int *cap, size_t sz); /* grows *arr (elements of sz) to hold n+1 */
/* a writing open marks the runs whose process is gone as aborted (tuner/store_run.c) */
int store_mark_aborted(struct store *s, char *err);

/* schema version 2: measured profiles and benchmarks of finalists (additive: version-1 stores
 * gain the two tables, nothing else changes) */
#define STORE_MIGRATION_BENCH \
	"CREATE TABLE profiles(" \
	"  id INTEGER PRIMARY KEY, created REAL NOT NULL, host TEXT NOT NULL, backend TEXT NOT NULL," \
	"  ranks INTEGER NOT NULL, profile TEXT NOT NULL) STRICT;" \
	"CREATE TABLE benchmarks(" \
	"  id INTEGER PRIMARY KEY," \
	"  tune_id INTEGER NOT NULL REFERENCES tunes(id) ON DELETE CASCADE," \
	"  finalist_id INTEGER NOT NULL REFERENCES finalists(id) ON DELETE CASCADE," \
	"  run_id INTEGER REFERENCES runs(id), started REAL NOT NULL," \
	"  status TEXT NOT NULL CHECK(status IN ('ok', 'oom', 'crashed', 'timeout'))," \
	"  steps INTEGER NOT NULL, step_time_s REAL, tokens_per_s_per_gpu REAL, peak_mem_bytes REAL," \
	"  peak_mem_bytes_per_rank TEXT NOT NULL, wall_s REAL NOT NULL, command TEXT NOT NULL," \
	"  message TEXT NOT NULL) STRICT;" \
	"CREATE INDEX benchmarks_tune ON benchmarks(tune_id);"

#endif
