/* The results store: round trip of tunes/finalists/runs, concurrent writers from several
 * processes losing nothing, files that are not ours refused untouched; a read-only open
 * writes nothing and reads an older schema; busy, damaged and read-only files each get their
 * own message; runs whose process is gone (exited without finishing, or a reused pid) are
 * marked aborted by the next write open, live ones and other hosts' are not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tuner/store.h"
#include "sim/util.h"
#include "tests/test.h"

static char dir[] = "/tmp/sp_store_XXXXXX";

static void path_in(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

static void fill_tune(struct store_tune *t, int k)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->version, sizeof(t->version), "0.1");
	snprintf(t->model, sizeof(t->model), "llama-3-70b");
	snprintf(t->gpu, sizeof(t->gpu), "h100-sxm");
	t->gpus = 512 + k;
	t->inputs_json = "{\"model\":\"llama-3-70b\",\"gpus\":512}";
	t->rejected_json = "{\"memory\":12}";
	t->enumerated = 1000 + k;
	t->feasible = 10 + k;
	t->search_s = 0.5;
}

static void test_round_trip(void)
{
	char path[256], err[ERR_LEN] = "";
	path_in(path, sizeof(path), "rt.db");
	struct store *s;
	CHECK(store_open(path, 0, &s, err) != 0 && strstr(err, "no such database"), "open without create refuses: %s", err);
	CHECK(store_open(path, 1, &s, err) == 0, "create: %s", err);
	if (!s) return;
	CHECK(store_user_version(s) == STORE_SCHEMA_VERSION, "schema version %d", store_user_version(s));
	struct store_tune t;
	fill_tune(&t, 7);
	struct store_finalist f[2] = {
		{.rank = 1, .plan_json = "{\"tp\":8}", .step_time_s = 1.5, .tokens_per_s_per_gpu = 3000,
		 .mfu = 0.45, .peak_mem_bytes = 7e10, .capacity_bytes = 8e10, .fits = 1, .refined = 1},
		{.rank = 2, .plan_json = "{\"tp\":4}", .step_time_s = 1.6, .fits = 1},
	};
	CHECK(store_add_tune(s, &t, f, 2, err) == 0, "add tune: %s", err);
	CHECK(t.id == 1 && f[0].id > 0 && f[1].tune_id == t.id, "ids set: tune %ld fin %ld", t.id, f[0].id);
	store_close(s);

	CHECK(store_open(path, STORE_READ, &s, err) == 0, "reopen read-only: %s", err);
	if (!s) return;
	struct store_tune got;
	CHECK(store_get_tune(s, t.id, &got, err) == 0, "get tune: %s", err);
	CHECK(got.gpus == 519 && got.enumerated == 1007 && got.feasible == 17 && got.nfinalists == 2 &&
	      !strcmp(got.model, "llama-3-70b") && !strcmp(got.rejected_json, "{\"memory\":12}") &&
	      got.created_s > 1.6e9, "tune fields survive");
	store_tune_clear(&got);
	CHECK(store_get_tune(s, 99, &got, err) != 0 && strstr(err, "no tune 99"), "missing tune: %s", err);
	struct store_finalist *fl;
	int n;
	CHECK(store_list_finalists(s, t.id, &fl, &n, err) == 0 && n == 2, "list finalists n=%d %s", n, err);
	if (n == 2)
		CHECK(fl[0].rank == 1 && !strcmp(fl[0].plan_json, "{\"tp\":8}") && fl[0].mfu == 0.45 &&
		      fl[0].refined == 1 && fl[1].rank == 2 && fl[1].step_time_s == 1.6, "finalist fields survive");
	store_free_finalists(fl, n);
	struct store_finalist one;
	CHECK(store_get_finalist(s, f[1].id, &one, err) == 0 && !strcmp(one.plan_json, "{\"tp\":4}"), "get finalist: %s", err);
	store_finalist_clear(&one);

	long run;
	int steps;
	double mean;
	CHECK(store_add_run(s, f[0].id, "{\"tp\":8}", "node0", &run, err) != 0 && strstr(err, "read-only"),
	      "a read-only open refuses writes: %s", err);
	store_close(s);
	CHECK(store_open(path, STORE_CREATE, &s, err) == 0, "reopen for writing: %s", err);
	if (!s) return;
	CHECK(store_add_run(s, f[0].id, "{\"tp\":8}", "node0", &run, err) == 0, "add run: %s", err);
	CHECK(store_add_measurement(s, run, 1, 2.0, 1e5, 7e10, 3.2, err) == 0 &&
	      store_add_measurement(s, run, 2, 4.0, 1e5, 7e10, 3.1, err) == 0, "measurements: %s", err);
	CHECK(store_add_measurement(s, run, 2, 4.0, 1e5, 7e10, 3.1, err) != 0, "duplicate step refused");
	CHECK(store_add_measurement(s, 12345, 1, 1, 1, 1, 1, err) != 0, "measurement of unknown run refused (foreign key)");
	CHECK(store_run_summary(s, run, &steps, &mean, err) == 0 && steps == 2 && mean == 3.0, "summary %d %g", steps, mean);
	CHECK(store_finish_run(s, run, "done", err) == 0, "finish: %s", err);
	CHECK(store_finish_run(s, run + 5, "done", err) != 0, "finish unknown run refused");
	store_close(s);
}

/* NPROC processes write NTUNES tunes each (3 finalists apiece) into one fresh file at once. */
#define NPROC 4
#define NTUNES 25
static void test_concurrent_writers(void)
{
	char path[256], err[ERR_LEN] = "";
	path_in(path, sizeof(path), "conc.db");
	pid_t pids[NPROC];
	for (int p = 0; p < NPROC; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			struct store *s;
			int bad = 0;
			/* the connection is opened after fork, never shared across it */
			if (store_open(path, 1, &s, err)) { fprintf(stderr, "child: %s\n", err); _exit(1); }
			for (int k = 0; k < NTUNES; k++) {
				struct store_tune t;
				fill_tune(&t, p * 1000 + k);
				struct store_finalist f[3] = {{.rank = 1, .plan_json = "{}"}, {.rank = 2, .plan_json = "{}"},
							      {.rank = 3, .plan_json = "{}"}};
				if (store_add_tune(s, &t, f, 3, err)) { fprintf(stderr, "child: %s\n", err); bad = 1; }
			}
			store_close(s);
			_exit(bad);
		}
	}
	int failed = 0;
	for (int p = 0; p < NPROC; p++) {
		int st;
		waitpid(pids[p], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) failed++;
	}
	CHECK(failed == 0, "%d writer processes failed", failed);
	struct store *s;
	CHECK(store_open(path, 0, &s, err) == 0, "open after writers: %s", err);
	if (!s) return;
	struct store_tune *t;
	struct store_finalist *f;
	int nt = 0, nf = 0;
	CHECK(store_list_tunes(s, &t, &nt, err) == 0 && nt == NPROC * NTUNES, "tunes %d of %d", nt, NPROC * NTUNES);
	CHECK(store_list_finalists(s, 0, &f, &nf, err) == 0 && nf == 3 * NPROC * NTUNES, "finalists %d", nf);
	int seen[NPROC] = {0};
	for (int i = 0; i < nt; i++) seen[(t[i].gpus - 512) / 1000]++;
	for (int p = 0; p < NPROC; p++) CHECK(seen[p] == NTUNES, "writer %d: %d tunes stored", p, seen[p]);
	store_free_tunes(t, nt);
	store_free_finalists(f, nf);
	store_close(s);
}

static int file_equals(const char *path, const char *want, size_t n)
{
	char buf[4096];
	FILE *fp = fopen(path, "rb");
	if (!fp) return 0;
	size_t got = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	return got == n && memcmp(buf, want, n) == 0;
}

static void test_refuses_foreign_files(void)
{
	char path[256], err[ERR_LEN] = "";
	struct store *s;
	/* a text file, and a file with a damaged SQLite header */
	const char *texts[2] = {"this is not a database, just some notes about a training run\n",
				"SQLite format 3\0\x10\0\1\1\0\x40\x20\x20garbage-garbage-garbage-garbage-garbage!"};
	size_t lens[2] = {strlen(texts[0]), 64};
	char big[4096];
	for (int i = 0; i < 2; i++) {
		memset(big, 'x', sizeof(big));
		memcpy(big, texts[i], i == 1 ? 40 : lens[i]);
		size_t n = i == 1 ? sizeof(big) : lens[i];
		path_in(path, sizeof(path), i ? "hdr.db" : "notes.db");
		FILE *fp = fopen(path, "wb");
		fwrite(big, 1, n, fp);
		fclose(fp);
		err[0] = 0;
		CHECK(store_open(path, 1, &s, err) != 0 && strstr(err, "not a scaleplan database"),
		      "file %d refused: '%s'", i, err);
		CHECK(file_equals(path, big, n), "file %d left byte-for-byte untouched", i);
		char wal[300];
		snprintf(wal, sizeof(wal), "%s-wal", path);
		CHECK(access(wal, F_OK) != 0, "no WAL file created beside file %d", i);
	}
	/* another program's SQLite database */
	path_in(path, sizeof(path), "other.db");
	sqlite3 *db;
	sqlite3_open(path, &db);
	sqlite3_exec(db, "CREATE TABLE notes(x TEXT)", NULL, NULL, NULL);
	sqlite3_close(db);
	CHECK(store_open(path, 1, &s, err) != 0 && strstr(err, "another program"), "foreign db refused: %s", err);
	/* a store written by a newer scaleplan */
	path_in(path, sizeof(path), "newer.db");
	CHECK(store_open(path, 1, &s, err) == 0, "create: %s", err);
	store_close(s);
	sqlite3_open(path, &db);
	sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL);
	sqlite3_close(db);
	CHECK(store_open(path, 0, &s, err) != 0 && strstr(err, "newer"), "newer schema refused: %s", err);
	/* a directory */
	CHECK(store_open(dir, 1, &s, err) != 0 && strstr(err, "not a regular file"), "directory refused: %s", err);
}

static long q_long(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long v = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) v = (long)sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

static void test_read_only(void)
{
	char path[256], wal[300], err[ERR_LEN] = "";
	struct store *s;
	/* an empty file: nothing to read, and it stays empty, with no journal beside it */
	path_in(path, sizeof(path), "empty.db");
	FILE *fp = fopen(path, "w");
	if (fp) fclose(fp);
	CHECK(store_open(path, STORE_READ, &s, err) == -2 && strstr(err, "holds no scaleplan data"), "empty: %s", err);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	CHECK(q_long(path, "SELECT count(*) FROM sqlite_schema") == 0 && access(wal, F_OK) != 0, "the empty file is untouched");
	/* a schema-2 store (as the previous release wrote it): read-only reads it without
	 * migrating; a write open migrates it to the runs' pid columns. A schema-1 store lacks
	 * the benchmarks table the read verbs query: read-only refuses it, naming the upgrade */
	path_in(path, sizeof(path), "v2.db");
	CHECK(store_open(path, STORE_CREATE, &s, err) == 0, "create: %s", err);
	store_close(s);
	sqlite3 *db;
	sqlite3_open(path, &db);
	sqlite3_exec(db, "ALTER TABLE runs DROP COLUMN proc_start; ALTER TABLE runs DROP COLUMN pid; PRAGMA user_version=2", NULL, NULL, NULL);
	sqlite3_close(db);
	struct store_tune *t;
	int n = -1;
	CHECK(store_open(path, STORE_READ, &s, err) == 0 && store_user_version(s) == 2, "v2 read-only: %s", err);
	CHECK(s && store_list_tunes(s, &t, &n, err) == 0 && n == 0, "v2 lists: %s", err);
	if (n >= 0) store_free_tunes(t, n);
	store_close(s);
	sqlite3_open(path, &db);
	sqlite3_exec(db, "PRAGMA user_version=1", NULL, NULL, NULL);
	sqlite3_close(db);
	CHECK(store_open(path, STORE_READ, &s, err) == -2 && strstr(err, "schema version 1, older"), "v1 read-only: %s", err);
	sqlite3_open(path, &db);
	sqlite3_exec(db, "PRAGMA user_version=2", NULL, NULL, NULL);
	sqlite3_close(db);
	CHECK(store_open(path, STORE_CREATE, &s, err) == 0 && store_user_version(s) == STORE_SCHEMA_VERSION, "migrated: %s", err);
	store_close(s);
	CHECK(q_long(path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN ('pid', 'proc_start')") == 2, "pid columns added");
}

static void test_busy_and_damaged(void)
{
	char path[256], err[ERR_LEN] = "";
	struct store *s;
	path_in(path, sizeof(path), "busy.db");
	CHECK(store_open(path, STORE_CREATE, &s, err) == 0, "create: %s", err);
	if (!s) return;
	sqlite3 *db;
	sqlite3_open(path, &db);
	CHECK(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK, "another connection locks the store");
	store_set_busy_timeout(s, 200);
	struct store_tune tu;
	fill_tune(&tu, 1);
	CHECK(store_add_tune(s, &tu, NULL, 0, err) != 0 && strstr(err, "busy, another process held its lock for more than 200 ms"),
	      "busy: %s", err);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(db);
	for (int k = 0; k < 40; k++) {
		fill_tune(&tu, k);
		store_add_tune(s, &tu, NULL, 0, err);
	}
	store_close(s);
	/* overwrite the middle of the tunes' pages: a damaged file, not "not ours" */
	long size = q_long(path, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");
	FILE *fp = fopen(path, "r+b");
	if (fp && size > 8192) {
		fseek(fp, 4096 + 100, SEEK_SET);
		for (int i = 0; i < 2000; i++) fputc(0xA5, fp);
	}
	if (fp) fclose(fp);
	struct store_tune *t;
	int n = 0;
	int rc = store_open(path, STORE_READ, &s, err);
	if (!rc) rc = store_list_tunes(s, &t, &n, err);
	if (!rc) store_free_tunes(t, n);
	store_close(s);  /* NULL after a failed open */
	CHECK(size > 8192 && rc != 0 && strstr(err, "is damaged"), "damaged (%ld bytes): %s", size, err);
}

static void test_aborted_runs(void)
{
	char path[256], err[ERR_LEN] = "", host[256] = "";
	gethostname(host, sizeof(host) - 1);
	path_in(path, sizeof(path), "runs.db");
	struct store *s;
	long mine = 0, other = 0, reused = 0;
	CHECK(store_open(path, STORE_CREATE, &s, err) == 0, "create: %s", err);
	if (!s) return;
	CHECK(store_add_run(s, 0, "{}", host, &mine, err) == 0 && store_add_run(s, 0, "{}", "elsewhere", &other, err) == 0 &&
	      store_add_run(s, 0, "{}", host, &reused, err) == 0, "runs: %s", err);
	store_close(s);
	/* a process that records a run and dies without finishing it (as kill -9 would) */
	pid_t pid = fork();
	if (pid == 0) {
		long id;
		if (store_open(path, STORE_CREATE, &s, err) || store_add_run(s, 0, "{}", host, &id, err)) _exit(1);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child recorded its run");
	/* our own pid with another start time: the recorded process is gone, the pid reused */
	char sql[160];
	sqlite3 *db;
	sqlite3_open(path, &db);
	snprintf(sql, sizeof(sql), "UPDATE runs SET proc_start = 'another-boot/1' WHERE id = %ld", reused);
	sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	CHECK(q_long(path, "SELECT count(*) FROM runs WHERE status = 'running'") == 4, "four runs running before the open");
	CHECK(store_open(path, STORE_CREATE, &s, err) == 0, "reopen: %s", err);
	store_close(s);
	CHECK(q_long(path, "SELECT count(*) FROM runs WHERE status = 'aborted'") == 2, "two runs aborted");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM runs WHERE status = 'running' AND id IN (%ld, %ld)", mine, other);
	CHECK(q_long(path, sql) == 2, "this process's run and another host's stay running");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM runs WHERE status = 'aborted' AND id = %ld", reused);
	CHECK(q_long(path, sql) == 1, "the run of a reused pid is aborted");
}

int main(void)
{
	if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
	test_round_trip();
	test_concurrent_writers();
	test_refuses_foreign_files();
	test_read_only();
	test_busy_and_damaged();
	test_aborted_runs();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
	return test_summary("test_store");
}
