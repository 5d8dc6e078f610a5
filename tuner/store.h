/* store — the results database: one SQLite file (default "scaleplan.db") holding every tune
 * (its request as JSON, program version, time, enumeration counts), its finalists (full plan
 * JSON + the prediction), and runs of plans with their per-step measurements (written by the
 * runtime). Several processes may write one file at once: WAL journal, a busy timeout, and
 * BEGIN IMMEDIATE around every write (reference/ecosystem.md §6). The file must live on a
 * local disk (WAL does not work over network file systems).
 *
 * Ownership: struct store is opaque (store_open/store_close). Records read back own their
 * strings; free them with store_tune_clear / store_finalist_clear / store_free_*. Records
 * passed to the writers are only borrowed.
 *
 * Units: seconds, bytes; times of day are Unix seconds.
 *
 * Opening read-only (STORE_READ: db list/show/diff/export, export --id) never writes: no
 * journal switch, no migration, no transaction that could take a write lock; so a store the
 * user may only read can be read (when SQLite cannot create the WAL index beside such a file,
 * it is read as immutable: a tune committing at that moment may be missed). A write open
 * (STORE_CREATE) marks `aborted` the runs left `running` by a process that is gone (same
 * host, and no live process with that pid and start time).
 *
 * Errors name the cause: a read-only file ("read-only for this user"), a lock held past the
 * busy timeout ("busy"), a damaged file ("damaged"), a full disk, each with SQLite's text.
 *
 * Invariant: a file is only ever written after it has been recognised as a scaleplan store
 * (application_id) or as an empty database; anything else — a corrupt file, a text file,
 * another program's database, a store from a newer scaleplan — is refused untouched, and the
 * schema version (PRAGMA user_version) only moves forward inside the transaction that ran the
 * migrations. */
#ifndef SCALEPLAN_STORE_H
#define SCALEPLAN_STORE_H

#include <stddef.h>

#define STORE_DEFAULT_PATH "scaleplan.db"
#define STORE_SCHEMA_VERSION 3
/* the oldest schema the read-only verbs understand (read-only opens cannot migrate): 2, the
 * benchmarks table db show reads; 3 only adds run columns they do not read */
#define STORE_MIN_READ_VERSION 2
#define STORE_APPLICATION_ID 0x53504c4e /* "SPLN" */

struct store;

struct store_tune {
	long id;               /* set by store_add_tune */
	double created_s;      /* Unix time; store_add_tune fills it when 0 */
	char version[32];      /* program version that ran the search */
	char model[256], gpu[256];
	int gpus;
	char *inputs_json;     /* the request, a JSON object */
	char *rejected_json;   /* {"reason": count, ...} */
	long enumerated, feasible;
	double search_s;       /* wall time of the search */
	int nfinalists;        /* read back: finalists stored with it */
};

struct store_finalist {
	long id, tune_id;      /* set by the store */
	int rank;              /* 1 = best */
	char *plan_json;
	double step_time_s, tokens_per_s_per_gpu, mfu, peak_mem_bytes, capacity_bytes;
	double bubble_fraction, exposed_comm_s;
	int fits, refined;     /* refined: the event engine, not the analytical model, timed it */
};

/* Open modes. */
#define STORE_READ 0    /* must exist; never written */
#define STORE_CREATE 1  /* read-write, created when absent, migrated */

/* Opens the store at path. Returns 0; -2 with err when path is not a usable store (absent
 * for STORE_READ, not a regular file, not a database, another program's, a newer schema,
 * empty): the caller's input is wrong; -1 with err for anything else (read-only for this
 * user, busy, damaged, I/O). */
int store_open(const char *path, int mode, struct store **out, char *err);
/* Milliseconds a statement waits for another process's lock before failing as busy
 * (default 30000). */
void store_set_busy_timeout(struct store *s, int ms);
void store_close(struct store *s);
/* The schema version of the open file (== STORE_SCHEMA_VERSION after a successful open). */
int store_user_version(struct store *s);

/* One transaction: the tune and its finalists. Sets t->id and each f[i].id/tune_id. */
int store_add_tune(struct store *s, struct store_tune *t, struct store_finalist *f, int nf,
		   char *err);

/* Every tune, oldest first (*out malloc'd, free with store_free_tunes). */
int store_list_tunes(struct store *s, struct store_tune **out, int *n, char *err);
/* One tune; -1 with "store: no tune N" when absent. */
int store_get_tune(struct store *s, long id, struct store_tune *t, char *err);
/* Finalists of one tune by rank, or of every tune when tune_id == 0. */
int store_list_finalists(struct store *s, long tune_id, struct store_finalist **out, int *n,
			 char *err);
int store_get_finalist(struct store *s, long id, struct store_finalist *f, char *err);

void store_tune_clear(struct store_tune *t);
void store_finalist_clear(struct store_finalist *f);
void store_free_tunes(struct store_tune *t, int n);
void store_free_finalists(struct store_finalist *f, int n);

/* Runs (the runtime executing a plan): finalist_id 0 when the plan came from elsewhere. The
 * calling process's pid and start time are recorded with the host, so that a later write
 * open can tell a run whose process is gone. */
int store_add_run(struct store *s, long finalist_id, const char *plan_json, const char *host,
		  long *run_id, char *err);
int store_add_measurement(struct store *s, long run_id, int step, double step_time_s,
			  double tokens_per_s, double peak_mem_bytes, double loss, char *err);
int store_finish_run(struct store *s, long run_id, const char *status, char *err);
/* Measurements of a run: number of steps and their mean step time (0 steps: mean 0). */
int store_run_summary(struct store *s, long run_id, int *steps, double *mean_step_s, char *err);

/* ---- tuner/store_bench.c: measured profiles and benchmarks of finalists ---------------- */

/* A hardware profile written by `scaleplan profile` (its JSON text). */
int store_add_profile(struct store *s, const char *host, const char *backend, int ranks,
		      const char *profile_json, long *id, char *err);

/* One benchmark: a finalist run for real by `tune --bench-top`. Measured values are 0 unless
 * status is "ok" (an "oom" run may carry the steps it logged). */
#define STORE_BENCH_MAX_RANKS 64
struct store_bench {
	long id, tune_id, finalist_id;
	long run_id;               /* the runs row the process wrote (0: none) */
	double started_s;          /* Unix time; filled when 0 */
	char status[8];            /* ok | oom | crashed | timeout */
	int steps;                 /* steps measured after warm-up */
	double step_time_s;        /* median of those steps */
	double tokens_per_s_per_gpu, peak_mem_bytes; /* peak: the largest rank */
	int nranks;
	double peak_mem_bytes_per_rank[STORE_BENCH_MAX_RANKS];
	double wall_s;             /* the process's wall time */
	char *command;             /* the command line, as a shell would take it */
	char *message;             /* the first lines the process wrote to stderr on failure */
};
int store_add_benchmark(struct store *s, struct store_bench *b, char *err);
/* Benchmarks of one tune (tune_id > 0) or all, by tune then finalist rank then id. */
int store_list_benchmarks(struct store *s, long tune_id, struct store_bench **out, int *n, char *err);
void store_free_benchmarks(struct store_bench *b, int n);

/* A recorded run. store_list_finished_runs fills id, finalist_id, plan_json, steps and
 * median_step_s (of the steps after the first; all steps when there is one); store_list_runs
 * fills the rest too: the means, which leave out the first step when there are more, and the
 * stored finalist's prediction when the run ran one (0 otherwise). */
struct store_run {
	long id, finalist_id, tune_id; /* finalist_id, tune_id 0: not a stored finalist */
	char *plan_json;
	char host[256], status[32];
	double started_s;
	int steps;
	double median_step_s;
	double mean_step_s, mean_tokens_per_s, peak_mem_bytes, final_loss;
	double predicted_step_s, predicted_tokens_per_s_per_gpu, predicted_peak_mem_bytes;
};
/* Runs that finished, oldest first. */
int store_list_finished_runs(struct store *s, struct store_run **out, int *n, char *err);
/* Every run, oldest first (*out malloc'd, free with store_free_runs). */
int store_list_runs(struct store *s, struct store_run **out, int *n, char *err);
void store_free_runs(struct store_run *r, int n);

#endif
