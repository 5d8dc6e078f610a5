/* cli — the command-line layer: one function per verb (cli/verb_NAME.c), a table of verbs in
 * cli/main.c. Only this layer prints to the user and chooses exit codes:
 *   0 ok, 1 runtime error, 2 bad input (incl. a plan breaking a divisibility rule),
 *   3 infeasible (a valid plan that does not fit, or no plan fits). */
#ifndef SCALEPLAN_CLI_H
#define SCALEPLAN_CLI_H

#include <stdio.h>
#include "sim/plan.h"
#include "sim/model.h"
#include "sim/hw.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_BADINPUT = 2, EXIT_INFEASIBLE = 3 };

struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int cmd_sim(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_db(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_pipeline(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* Shared plan-flag handling: if argv[*i] is a plan flag (--tp 8, --sp, --no-sp, --plan F,
 * --model M, --gpu G, ...), applies it to p, advances *i past its value and returns 1;
 * returns 0 if it is not a plan flag; -1 with err on a bad value. */
int cli_plan_flag(int argc, char **argv, int *i, struct plan *p, char *err);

/* Loads p->model and p->gpu, resolves derived values and validates. Returns an exit code
 * (EXIT_OK or EXIT_BADINPUT) and prints the one-line error itself. */
int cli_load_plan(const char *verb, struct plan *p, struct model *m, struct hw *h);

/* Runs argv (execvp) as a process group of its own with stdout and stderr captured
 * (cli/spawn.c); past timeout_s (0: none) the group gets SIGTERM, then SIGKILL. tick, if set,
 * is called about once a second with the seconds elapsed. */
struct spawn_opts {
	double timeout_s;
	void (*tick)(void *ctx, double elapsed_s);
	void *tick_ctx;
};
struct spawn_result {
	int exit_code, signal, timed_out;
	double wall_s;
	char *out, *errtext;      /* what it wrote, NUL-terminated (spawn_result_free) */
};
int cli_spawn(char *const argv[], const struct spawn_opts *o, struct spawn_result *r, char *err);
void spawn_result_free(struct spawn_result *r);

/* Prints "scaleplan VERB: msg" ("scaleplan: msg" when verb is empty) to stderr as one line in
 * one write(2), control characters in it escaped (\n, \t, \xNN). Every error message of the
 * program goes through here. */
/* Call first in main() of a program that trains: when OpenBLAS picked kernels below this CPU's
 * (blas_arch_reexec_core), sets OPENBLAS_CORETYPE and executes the program again with the same
 * arguments; returns only when nothing needed fixing or the exec failed. */
void cli_blas_reexec(void);

/* validate_file's note on a column the file lacks, on stderr (verb_validate.c; calibrate too) */
void cli_validate_note(void *ctx, const char *msg);

void cli_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
