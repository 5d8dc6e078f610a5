/* bench — benchmarking a tune's best plans for real, with no runtime code in the tuner: this
 * module picks the K best distinct finalists, builds the command line that runs one of them
 * (`scaleplan run` under mpirun or srun, linked to its finalist in the store), reads what that
 * process printed (its --json step lines, its stderr, how it ended) into a store_bench record,
 * and ranks the plans by what they measured. Starting the processes is cli/'s job
 * (cli/spawn.c), which calls these.
 *
 * Units: seconds, bytes, tokens. Ownership: bench_cmd owns its strings (bench_cmd_free);
 * bench_parse fills a caller-owned store_bench whose strings it allocates
 * (store_free_benchmarks or free of command/message).
 *
 * Invariant: a run is "ok" only when the process exited 0 and printed at least one step; the
 * measured step time is the median of the steps after the warm-up steps (all steps when the
 * run printed no more than the warm-up). */
#ifndef SCALEPLAN_BENCH_H
#define SCALEPLAN_BENCH_H

#include "tuner/store.h"

enum bench_launcher { LAUNCH_MPIRUN, LAUNCH_SRUN };

struct bench_opts {
	int top;                   /* K distinct plans */
	int steps;                 /* steps per run, warm-up included */
	int warmup;                /* leading steps left out of the median */
	double timeout_s;          /* per plan */
	enum bench_launcher launcher;
	const char *exe;           /* the scaleplan binary the runs use */
	const char *db;            /* store the runs write to (NULL: none) */
	const char *model, *gpu;   /* as the tune was given them (names or paths) */
	int gpus_per_node;         /* srun: tasks per node */
};

/* Indices (into f[0..nf), best first) of the k best finalists that fit and run differently
 * (ZeRO stages without data parallelism, or SP without TP, do not make another run); *n
 * set. idx holds k entries (at most 256). */
void bench_select(const struct store_finalist *f, int nf, int k, int *idx, int *n);

struct bench_cmd {
	char **argv;               /* NULL-terminated */
	int argc;
	char *line;                /* the same, quoted for a POSIX shell */
	int ranks;                 /* processes the plan needs */
};
/* The command that runs `plan_json` (a plan as plan_to_json writes it) for finalist_id. */
int bench_command(const struct bench_opts *o, const char *plan_json, long finalist_id, struct bench_cmd *c,
		  char *err);
void bench_cmd_free(struct bench_cmd *c);

/* How the process ended, as cli/spawn.c saw it. */
struct bench_exit {
	int exit_code;             /* when it exited */
	int signal;                /* when a signal ended it (0: exited) */
	int timed_out;             /* the launcher ended it at the timeout */
	double wall_s;
};
/* Reads the process's stdout (the --json step lines) and stderr into b: status, steps,
 * median step time, tokens/s per GPU, peak memory per rank, run id, message. Fills every
 * field but the ids of tune and finalist and the command. 0, or -1 with err (out of memory). */
int bench_parse(const char *out, const char *errtext, const struct bench_exit *x, int warmup, int gpus,
		struct store_bench *b, char *err);

/* Order of b[0..n) by measurement, fastest first (ok runs by tokens/s per GPU, then the
 * others in their given order): fills order[0..n). */
void bench_rank(const struct store_bench *b, int n, int *order);

#endif
