/* store — SQLite results database. Every write is one BEGIN IMMEDIATE transaction, so a
 * contended writer waits in the busy handler instead of failing with SQLITE_BUSY half-way
 * (a DEFERRED transaction that upgrades to a write cannot be retried by busy_timeout;
 * reference/ecosystem.md §6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>
#include "tuner/store.h"
#include "tuner/store_impl.h"
#include "sim/proc.h"
#include "sim/util.h"

#define BUSY_TIMEOUT_MS 30000

/* Migration i takes the schema from version i to i+1. Never edit a released entry: add one. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
	"CREATE TABLE tunes("
	"  id INTEGER PRIMARY KEY, created REAL NOT NULL, version TEXT NOT NULL,"
	"  model TEXT NOT NULL, gpu TEXT NOT NULL, gpus INTEGER NOT NULL,"
	"  inputs TEXT NOT NULL, enumerated INTEGER NOT NULL, feasible INTEGER NOT NULL,"
	"  rejected TEXT NOT NULL, search_s REAL NOT NULL) STRICT;"
	"CREATE TABLE finalists("
	"  id INTEGER PRIMARY KEY,"
	"  tune_id INTEGER NOT NULL REFERENCES tunes(id) ON DELETE CASCADE,"
	"  rank INTEGER NOT NULL, plan TEXT NOT NULL,"
	"  step_time_s REAL, tokens_per_s_per_gpu REAL, mfu REAL, peak_mem_bytes REAL,"
	"  capacity_bytes REAL, fits INTEGER NOT NULL, bubble_fraction REAL, exposed_comm_s REAL,"
	"  refined INTEGER NOT NULL, UNIQUE(tune_id, rank)) STRICT;"
	"CREATE TABLE runs("
	"  id INTEGER PRIMARY KEY, finalist_id INTEGER REFERENCES finalists(id),"
	"  plan TEXT NOT NULL, host TEXT NOT NULL, started REAL NOT NULL,"
	"  status TEXT NOT NULL DEFAULT 'running') STRICT;"
	"CREATE TABLE measurements("
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	"  step INTEGER NOT NULL, step_time_s REAL, tokens_per_s REAL, peak_mem_bytes REAL,"
	"  loss REAL, PRIMARY KEY(run_id, step)) STRICT;",
	STORE_MIGRATION_BENCH, /* tuner/store_bench.c */
	/* 3: who runs a run, so that a later open can tell one whose process is gone */
	"ALTER TABLE runs ADD COLUMN pid INTEGER;"
	"ALTER TABLE runs ADD COLUMN proc_start TEXT;",
};

/* err from SQLite's last error on s, by cause: every caller's message names the file, what
 * was being done, and the cause in words before SQLite's own text. */
static int db_errf(struct store *s, char *err, const char *what)
{
	const char *m = sqlite3_errmsg(s->db);
	switch (sqlite3_errcode(s->db)) {
	case SQLITE_READONLY:
		return errf(err, "store: %s: %s: the store is read-only for this user (%s)", s->path, what, m);
	case SQLITE_BUSY: case SQLITE_LOCKED:
		return errf(err, "store: %s: %s: busy, another process held its lock for more than %d ms (%s)", s->path,
			    what, s->busy_ms, m);
	case SQLITE_CORRUPT:
		return errf(err, "store: %s is damaged: %s failed (%s); `sqlite3 %s .recover` may save its rows", s->path,
			    what, m, s->path);
	case SQLITE_NOTADB:
		return errf(err, "store: %s is not a scaleplan database (%s); left untouched", s->path, m);
	case SQLITE_FULL:
		return errf(err, "store: %s: %s: the disk is full (%s)", s->path, what, m);
	case SQLITE_CANTOPEN:
		return errf(err, "store: %s: %s: cannot open the file or its journal (%s)", s->path, what, m);
	default:
		return errf(err, "store: %s: %s (%s)", s->path, what, m);
	}
}

static int exec(struct store *s, const char *sql, char *err)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		char what[48];
		snprintf(what, sizeof(what), "%.40s", sql);
		return db_errf(s, err, what);
	}
	return 0;
}

/* The first row's first n columns of one statement, as integers (one statement: one snapshot). */
static int query_ints(struct store *s, const char *sql, long *out, int n, char *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		db_errf(s, err, "read");
		sqlite3_finalize(st);
		return -1;
	}
	for (int i = 0; i < n; i++) out[i] = sqlite3_column_int64(st, i);
	sqlite3_finalize(st);
	return 0;
}

static int query_int(struct store *s, const char *sql, long *out, char *err)
{
	return query_ints(s, sql, out, 1, err);
}

static void rollback(struct store *s)
{
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Brings the schema to STORE_SCHEMA_VERSION. The version is re-read inside the write
 * transaction: another process may have migrated between our check and our lock. */
static int migrate(struct store *s, char *err)
{
	long v;
	if (exec(s, "BEGIN IMMEDIATE", err)) return -1;
	if (query_int(s, "PRAGMA user_version", &v, err)) goto fail;
	if (v > STORE_SCHEMA_VERSION) {
		errf(err, "store: %s has schema version %ld, newer than this scaleplan's (%d); left untouched",
		     s->path, v, STORE_SCHEMA_VERSION);
		goto fail;
	}
	for (long i = v; i < STORE_SCHEMA_VERSION; i++)
		if (exec(s, migrations[i], err)) goto fail;
	if (v < STORE_SCHEMA_VERSION) {
		char sql[96];
		snprintf(sql, sizeof(sql), "PRAGMA user_version=%d; PRAGMA application_id=%d",
			 STORE_SCHEMA_VERSION, STORE_APPLICATION_ID);
		if (exec(s, sql, err)) goto fail;
	}
	return exec(s, "COMMIT", err) ? (rollback(s), -1) : 0;
fail:
	rollback(s);
	return -1;
}

/* Refuses anything that is not an empty database or one of ours, before any write. */
static int recognise(struct store *s, char *err)
{
	/* table count, application_id and user_version in one statement, so one read snapshot:
	 * read one by one, another process's first migration could commit between them (0
	 * tables, then user_version 1) and the file would look like another program's */
	static const char header[] = "SELECT (SELECT count(*) FROM sqlite_schema),"
				     " (SELECT application_id FROM pragma_application_id),"
				     " (SELECT user_version FROM pragma_user_version)";
	long h[3] = {0, 0, 0};
	/* the first read of the header. While another process switches a fresh file to WAL, a
	 * reader can get SQLITE_BUSY at once, without the busy handler; wait as long as
	 * busy_timeout would have. */
	struct timespec nap = {0, 5 * 1000 * 1000};
	for (int waited_ms = 0;; waited_ms += 5) {
		if (!query_ints(s, header, h, 3, err)) break;
		int code = sqlite3_errcode(s->db);
		if ((code == SQLITE_BUSY || code == SQLITE_LOCKED) && waited_ms < s->busy_ms) {
			nanosleep(&nap, NULL);
			continue;
		}
		switch (code) {
		case SQLITE_BUSY: case SQLITE_LOCKED: case SQLITE_CANTOPEN: case SQLITE_READONLY:
		case SQLITE_NOMEM: case SQLITE_IOERR: case SQLITE_FULL: case SQLITE_PERM:
			return -1;  /* db_errf's message stands */
		default:          /* NOTADB, CORRUPT, "unsupported file format", ...: not ours */
			return errf(err, "store: %s is not a scaleplan database (%s); left untouched", s->path,
				    sqlite3_errmsg(s->db)), -2;
		}
	}
	long ntables = h[0], app = h[1], uv = h[2];
	if (app != STORE_APPLICATION_ID && (app != 0 || ntables > 0 || uv != 0))
		return errf(err, "store: %s is an SQLite database of another program (application_id %ld, %ld tables); left untouched",
			    s->path, app, ntables), -2;
	if (uv > STORE_SCHEMA_VERSION)
		return errf(err, "store: %s has schema version %ld, newer than this scaleplan's (%d); left untouched",
			    s->path, uv, STORE_SCHEMA_VERSION), -2;
	if (s->mode == STORE_READ && uv == 0)
		return errf(err, "store: %s holds no scaleplan data yet (run `scaleplan tune --db %s` first)", s->path,
			    s->path), -2;
	if (s->mode == STORE_READ && uv < STORE_MIN_READ_VERSION)
		return errf(err, "store: %s has schema version %ld, older than this scaleplan reads without upgrading it (%d);"
			    " a writing verb (tune) upgrades it", s->path, uv, STORE_MIN_READ_VERSION), -2;
	return 0;
}

/* journal_mode=WAL is persistent, but switching needs an exclusive lock, and SQLite answers
 * SQLITE_BUSY at once (no busy handler) when several processes open a fresh file together;
 * so retry for as long as busy_timeout would have waited. */
static int set_wal(struct store *s, char *err)
{
	struct timespec nap = {0, 5 * 1000 * 1000};
	for (int waited_ms = 0;; waited_ms += 5) {
		sqlite3_stmt *st = NULL;
		int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
		if (rc == SQLITE_OK) rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc == SQLITE_ROW) return 0;
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited_ms >= s->busy_ms)
			return db_errf(s, err, "switching to the WAL journal");
		nanosleep(&nap, NULL);
	}
}

/* "file:PATH?immutable=1" with PATH percent-encoded (RFC 3986 unreserved characters and '/'
 * kept), into a malloc'd string */
static char *immutable_uri(const char *path)
{
	size_t n = strlen(path);
	char *u = malloc(3 * n + 32), *o = u;
	if (!u) return NULL;
	o += sprintf(o, "file:");
	for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
		if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || strchr("-._~/", *c))
			*o++ = (char)*c;
		else
			o += sprintf(o, "%%%02X", *c);
	}
	strcpy(o, "?immutable=1");
	return u;
}

static int connect(struct store *s, const char *name, int flags, char *err)
{
	sqlite3_close(s->db);
	s->db = NULL;
	if (sqlite3_open_v2(name, &s->db, flags, NULL) != SQLITE_OK) {
		if (!s->db) return errf(err, "store: %s: out of memory", s->path);
		return db_errf(s, err, "open");
	}
	sqlite3_extended_result_codes(s->db, 0);
	sqlite3_busy_timeout(s->db, s->busy_ms);
	return 0;
}

/* Read-only: recognise without writing. A WAL store in a directory this user cannot write
 * has no WAL index SQLite could create (SQLITE_CANTOPEN): read it as immutable. */
static int open_read(struct store *s, char *err)
{
	if (connect(s, s->path, SQLITE_OPEN_READONLY, err)) return -1;
	int rc = recognise(s, err);
	int code = s->db ? sqlite3_errcode(s->db) : 0;
	if (rc == -1 && (code == SQLITE_CANTOPEN || code == SQLITE_READONLY) && access(s->path, W_OK)) {
		char *uri = immutable_uri(s->path);
		if (!uri) return errf(err, "store: out of memory");
		rc = connect(s, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err);
		free(uri);
		if (!rc) rc = recognise(s, err);
	}
	return rc;
}


static int open_write(struct store *s, char *err)
{
	if (connect(s, s->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err)) return -1;
	int rc = recognise(s, err);
	if (rc) return rc;
	if (set_wal(s, err) || exec(s, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON", err) || migrate(s, err))
		return -1;
	return store_mark_aborted(s, err);
}

int store_open(const char *path, int mode, struct store **out, char *err)
{
	*out = NULL;
	if (!path || !*path) return errf(err, "store: empty database path"), -2;
	struct stat stbuf;
	if (stat(path, &stbuf) != 0) {
		if (mode == STORE_READ) return errf(err, "store: %s: no such database (run `scaleplan tune` first)", path), -2;
	} else if (!S_ISREG(stbuf.st_mode)) {
		return errf(err, "store: %s is not a regular file", path), -2;
	}
	struct store *s = calloc(1, sizeof(*s));
	if (!s) return errf(err, "store: out of memory");
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->mode = mode == STORE_READ ? STORE_READ : STORE_CREATE;
	s->busy_ms = BUSY_TIMEOUT_MS;
	int rc = s->mode == STORE_READ ? open_read(s, err) : open_write(s, err);
	if (rc) {
		store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void store_set_busy_timeout(struct store *s, int ms)
{
	s->busy_ms = ms;
	sqlite3_busy_timeout(s->db, ms);
}

void store_close(struct store *s)
{
	if (!s) return;
	sqlite3_close(s->db);
	free(s);
}

int store_user_version(struct store *s)
{
	long v = -1;
	return query_int(s, "PRAGMA user_version", &v, NULL) ? -1 : (int)v;
}

static int prepare(struct store *s, const char *sql, sqlite3_stmt **st, char *err)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
		return db_errf(s, err, "prepare");
	return 0;
}

static int step_done(struct store *s, sqlite3_stmt *st, char *err)
{
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) return db_errf(s, err, "write");
	return 0;
}

static int insert_finalist(struct store *s, long tune_id, struct store_finalist *f, char *err)
{
	sqlite3_stmt *st;
	if (prepare(s, "INSERT INTO finalists(tune_id, rank, plan, step_time_s, tokens_per_s_per_gpu,"
		    " mfu, peak_mem_bytes, capacity_bytes, fits, bubble_fraction, exposed_comm_s, refined)"
		    " VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", &st, err))
		return -1;
	sqlite3_bind_int64(st, 1, tune_id);
	sqlite3_bind_int(st, 2, f->rank);
	sqlite3_bind_text(st, 3, f->plan_json ? f->plan_json : "{}", -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 4, f->step_time_s);
	sqlite3_bind_double(st, 5, f->tokens_per_s_per_gpu);
	sqlite3_bind_double(st, 6, f->mfu);
	sqlite3_bind_double(st, 7, f->peak_mem_bytes);
	sqlite3_bind_double(st, 8, f->capacity_bytes);
	sqlite3_bind_int(st, 9, f->fits);
	sqlite3_bind_double(st, 10, f->bubble_fraction);
	sqlite3_bind_double(st, 11, f->exposed_comm_s);
	sqlite3_bind_int(st, 12, f->refined);
	if (step_done(s, st, err)) return -1;
	f->id = (long)sqlite3_last_insert_rowid(s->db);
	f->tune_id = tune_id;
	return 0;
}

int store_add_tune(struct store *s, struct store_tune *t, struct store_finalist *f, int nf, char *err)
{
	sqlite3_stmt *st;
	if (t->created_s == 0) t->created_s = (double)time(NULL);
	if (exec(s, "BEGIN IMMEDIATE", err)) return -1;
	if (prepare(s, "INSERT INTO tunes(created, version, model, gpu, gpus, inputs, enumerated,"
		    " feasible, rejected, search_s) VALUES(?,?,?,?,?,?,?,?,?,?)", &st, err))
		goto fail;
	sqlite3_bind_double(st, 1, t->created_s);
	sqlite3_bind_text(st, 2, t->version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, t->model, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, t->gpu, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, t->gpus);
	sqlite3_bind_text(st, 6, t->inputs_json ? t->inputs_json : "{}", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, t->enumerated);
	sqlite3_bind_int64(st, 8, t->feasible);
	sqlite3_bind_text(st, 9, t->rejected_json ? t->rejected_json : "{}", -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 10, t->search_s);
	if (step_done(s, st, err)) goto fail;
	t->id = (long)sqlite3_last_insert_rowid(s->db);
	for (int i = 0; i < nf; i++)
		if (insert_finalist(s, t->id, &f[i], err)) goto fail;
	if (exec(s, "COMMIT", err)) goto fail;
	t->nfinalists = nf;
	return 0;
fail:
	rollback(s);
	return -1;
}

static char *col_strdup(sqlite3_stmt *st, int i)
{
	const unsigned char *v = sqlite3_column_text(st, i);
	return strdup(v ? (const char *)v : "");
}

static void col_copy(sqlite3_stmt *st, int i, char *dst, size_t cap)
{
	const unsigned char *v = sqlite3_column_text(st, i);
	snprintf(dst, cap, "%s", v ? (const char *)v : "");
}

#define TUNE_COLS "t.id, t.created, t.version, t.model, t.gpu, t.gpus, t.inputs, t.enumerated," \
	" t.feasible, t.rejected, t.search_s, (SELECT count(*) FROM finalists f WHERE f.tune_id = t.id)"

static int read_tune(sqlite3_stmt *st, struct store_tune *t)
{
	memset(t, 0, sizeof(*t));
	t->id = (long)sqlite3_column_int64(st, 0);
	t->created_s = sqlite3_column_double(st, 1);
	col_copy(st, 2, t->version, sizeof(t->version));
	col_copy(st, 3, t->model, sizeof(t->model));
	col_copy(st, 4, t->gpu, sizeof(t->gpu));
	t->gpus = sqlite3_column_int(st, 5);
	t->inputs_json = col_strdup(st, 6);
	t->enumerated = (long)sqlite3_column_int64(st, 7);
	t->feasible = (long)sqlite3_column_int64(st, 8);
	t->rejected_json = col_strdup(st, 9);
	t->search_s = sqlite3_column_double(st, 10);
	t->nfinalists = sqlite3_column_int(st, 11);
	return t->inputs_json && t->rejected_json ? 0 : -1;
}

/* Grows *arr (elements of size sz) to hold n+1. */
static int grow(void **arr, int n, int *cap, size_t sz)
{
	if (n < *cap) return 0;
	int nc = *cap ? *cap * 2 : 16;
	void *na = realloc(*arr, (size_t)nc * sz);
	if (!na) return -1;
	*arr = na;
	*cap = nc;
	return 0;
}

int store_list_tunes(struct store *s, struct store_tune **out, int *n, char *err)
{
	sqlite3_stmt *st;
	struct store_tune *arr = NULL;
	int cnt = 0, cap = 0, rc;
	*out = NULL;
	*n = 0;
	if (prepare(s, "SELECT " TUNE_COLS " FROM tunes t ORDER BY t.id", &st, err)) return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (grow((void **)&arr, cnt, &cap, sizeof(*arr))) break;
		if (read_tune(st, &arr[cnt++])) break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_free_tunes(arr, cnt);
		return rc == SQLITE_ROW ? errf(err, "store: out of memory") : db_errf(s, err, "read tunes");
	}
	*out = arr;
	*n = cnt;
	return 0;
}

int store_get_tune(struct store *s, long id, struct store_tune *t, char *err)
{
	sqlite3_stmt *st;
	memset(t, 0, sizeof(*t));
	if (prepare(s, "SELECT " TUNE_COLS " FROM tunes t WHERE t.id = ?", &st, err)) return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st), r = 0;
	if (rc == SQLITE_ROW) {
		if (read_tune(st, t)) { store_tune_clear(t); r = errf(err, "store: out of memory"); }
	} else if (rc == SQLITE_DONE) {
		r = errf(err, "store: %s: no tune %ld", s->path, id);
	} else {
		r = db_errf(s, err, "read tune");
	}
	sqlite3_finalize(st);
	return r;
}

#define FIN_COLS "id, tune_id, rank, plan, step_time_s, tokens_per_s_per_gpu, mfu, peak_mem_bytes," \
	" capacity_bytes, fits, bubble_fraction, exposed_comm_s, refined"

static int read_finalist(sqlite3_stmt *st, struct store_finalist *f)
{
	memset(f, 0, sizeof(*f));
	f->id = (long)sqlite3_column_int64(st, 0);
	f->tune_id = (long)sqlite3_column_int64(st, 1);
	f->rank = sqlite3_column_int(st, 2);
	f->plan_json = col_strdup(st, 3);
	f->step_time_s = sqlite3_column_double(st, 4);
	f->tokens_per_s_per_gpu = sqlite3_column_double(st, 5);
	f->mfu = sqlite3_column_double(st, 6);
	f->peak_mem_bytes = sqlite3_column_double(st, 7);
	f->capacity_bytes = sqlite3_column_double(st, 8);
	f->fits = sqlite3_column_int(st, 9);
	f->bubble_fraction = sqlite3_column_double(st, 10);
	f->exposed_comm_s = sqlite3_column_double(st, 11);
	f->refined = sqlite3_column_int(st, 12);
	return f->plan_json ? 0 : -1;
}

int store_list_finalists(struct store *s, long tune_id, struct store_finalist **out, int *n, char *err)
{
	sqlite3_stmt *st;
	struct store_finalist *arr = NULL;
	int cnt = 0, cap = 0, rc;
	*out = NULL;
	*n = 0;
	if (prepare(s, tune_id ? "SELECT " FIN_COLS " FROM finalists WHERE tune_id = ? ORDER BY rank"
			       : "SELECT " FIN_COLS " FROM finalists ORDER BY tune_id, rank", &st, err))
		return -1;
	if (tune_id) sqlite3_bind_int64(st, 1, tune_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (grow((void **)&arr, cnt, &cap, sizeof(*arr))) break;
		if (read_finalist(st, &arr[cnt++])) break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_free_finalists(arr, cnt);
		return rc == SQLITE_ROW ? errf(err, "store: out of memory") : db_errf(s, err, "read finalists");
	}
	*out = arr;
	*n = cnt;
	return 0;
}

int store_get_finalist(struct store *s, long id, struct store_finalist *f, char *err)
{
	sqlite3_stmt *st;
	memset(f, 0, sizeof(*f));
	if (prepare(s, "SELECT " FIN_COLS " FROM finalists WHERE id = ?", &st, err)) return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st), r = 0;
	if (rc == SQLITE_ROW) {
		if (read_finalist(st, f)) { store_finalist_clear(f); r = errf(err, "store: out of memory"); }
	} else if (rc == SQLITE_DONE) {
		r = errf(err, "store: %s: no finalist %ld", s->path, id);
	} else {
		r = db_errf(s, err, "read finalist");
	}
	sqlite3_finalize(st);
	return r;
}

void store_tune_clear(struct store_tune *t)
{
	if (!t) return;
	free(t->inputs_json);
	free(t->rejected_json);
	t->inputs_json = t->rejected_json = NULL;
}

void store_finalist_clear(struct store_finalist *f)
{
	if (!f) return;
	free(f->plan_json);
	f->plan_json = NULL;
}

void store_free_tunes(struct store_tune *t, int n)
{
	for (int i = 0; t && i < n; i++) store_tune_clear(&t[i]);
	free(t);
}

void store_free_finalists(struct store_finalist *f, int n)
{
	for (int i = 0; f && i < n; i++) store_finalist_clear(&f[i]);
	free(f);
}

/* One-statement write in its own IMMEDIATE transaction. */
static int write1(struct store *s, sqlite3_stmt *st, char *err)
{
	if (exec(s, "BEGIN IMMEDIATE", err)) { sqlite3_finalize(st); return -1; }
	if (step_done(s, st, err) || exec(s, "COMMIT", err)) { rollback(s); return -1; }
	return 0;
}

/* for the store's other files (tuner/store_impl.h) */
int store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, char *err) { return prepare(s, sql, st, err); }
int store_write1(struct store *s, sqlite3_stmt *st, char *err) { return write1(s, st, err); }
int store_db_errf(struct store *s, char *err, const char *what) { return db_errf(s, err, what); }
int store_exec(struct store *s, const char *sql, char *err) { return exec(s, sql, err); }
void store_rollback(struct store *s) { rollback(s); }
char *store_col_strdup(sqlite3_stmt *st, int i) { return col_strdup(st, i); }
int store_grow(void **arr, int n, int *cap, size_t sz) { return grow(arr, n, cap, sz); }
