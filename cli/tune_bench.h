/* tune_bench — the benchmark step of `scaleplan tune` (cli/tune_bench.c). */
#ifndef SCALEPLAN_TUNE_BENCH_H
#define SCALEPLAN_TUNE_BENCH_H

struct cJSON;

struct tune_bench_args {
	long top;                  /* --bench-top K (0: no benchmarks) */
	long steps;                /* --bench-steps N */
	double timeout_s;          /* --bench-timeout S, per plan */
	const char *launcher;      /* --launcher mpirun|srun */
	const char *exe;           /* --bench-exe PATH: the scaleplan the runs use */
	int print_only;            /* --bench-print: print the command lines, run nothing */
};

/* Runs (or prints) the benchmarks of tune tune_id recorded in db; prints the table, or adds
 * "benchmarks" to json_out when given. Returns an exit code. */
int tune_bench(const struct tune_bench_args *ba, const char *db, long tune_id, const char *model, const char *gpu,
	       int gpus_per_node, struct cJSON *json_out);

#endif
