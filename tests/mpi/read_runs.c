/* Prints what a store holds about runs, for tests/cli/run.sh: "runs N finished N aborted N
 * measurements N steps N mean_step_s X" — the last two from store_run_summary of the newest
 * run. Usage: read_runs DB. (Not an MPI program; it lives here because tests/mpi holds the
 * programs that CLI scripts start.) */
#include <stdio.h>
#include <sqlite3.h>
#include "sim/util.h"
#include "tuner/store.h"

static long count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long n = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
	if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

int main(int argc, char **argv)
{
	char err[ERR_LEN];
	if (argc != 2) {
		fprintf(stderr, "usage: read_runs DB\n");
		return 2;
	}
	sqlite3 *db;
	if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		fprintf(stderr, "read_runs: cannot open %s\n", argv[1]);
		sqlite3_close(db);
		return 1;
	}
	long runs = count(db, "SELECT count(*) FROM runs");
	long fin = count(db, "SELECT count(*) FROM runs WHERE status = 'finished'");
	long aborted = count(db, "SELECT count(*) FROM runs WHERE status = 'aborted'");
	long meas = count(db, "SELECT count(*) FROM measurements");
	long last = count(db, "SELECT max(id) FROM runs");
	sqlite3_close(db);
	struct store *s;
	int steps = 0;
	double mean = 0;
	if (store_open(argv[1], STORE_READ, &s, err) || store_run_summary(s, last, &steps, &mean, err)) {
		fprintf(stderr, "read_runs: %s\n", err);
		return 1;
	}
	store_close(s);
	printf("runs %ld finished %ld aborted %ld measurements %ld steps %d mean_step_s %g\n", runs, fin, aborted, meas,
	       steps, mean);
	return 0;
}
