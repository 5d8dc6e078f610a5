/* scaleplan — one binary, one verb per job (git style). This file holds only the verb table
 * and the dispatch. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "kernels/cpu.h"

static const struct verb verbs[] = {
	{"sim", cmd_sim, "simulate one plan: memory and time per rank kind"},
	{"validate", cmd_validate, "predict measured runs from a TSV file and report the error"},
	{"tune", cmd_tune, "search every plan for a model on a cluster and rank them"},
	{"export", cmd_export, "print a plan as Megatron-LM, nanotron, torchtitan or DeepSpeed settings"},
	{"db", cmd_db, "list, show, diff and export recorded tunes (SQLite store)"},
	{"plot", cmd_plot, "charts of plans: bubble diagram, memory, comparison (gnuplot PNG/SVG)"},
	{"run", cmd_run, "train a plan for real (mpirun -np N): losses, step time, memory, trace"},
	{"profile", cmd_profile, "measure this machine: a hardware profile with GEMM, attention, memory and collective tables"},
	{"calibrate", cmd_calibrate, "fit a hardware profile's efficiency parameters to measured runs (GSL)"},
	{"pipeline", cmd_pipeline, "simulate one pipeline schedule: bubbles, activations, diagram, trace"},
};
#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

/* What a verb printed must have reached stdout: a full disk or a closed pipe behind a
 * redirection is a failed run, not a success (the first failed flush leaves errno set). */
static int close_stdout(const char *verb, int rc)
{
	int e = fflush(stdout) ? errno : 0;
	if (!e && !ferror(stdout)) return rc;
	cli_error(verb, "stdout: %s", strerror(e ? e : EIO));
	return rc ? rc : EXIT_RUNTIME;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: scaleplan VERB [options]   (scaleplan VERB --help for each verb)\n\nverbs:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_BADINPUT;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("scaleplan 0.1\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "run") || !strcmp(argv[1], "profile")) /* the verbs that run GEMMs */
		cli_blas_reexec();
	for (size_t i = 0; i < NVERBS; i++)
		if (!strcmp(argv[1], verbs[i].name))
			return close_stdout(verbs[i].name, verbs[i].run(argc - 1, argv + 1));
	cli_error("", "unknown verb '%s'", argv[1]);
	usage(stderr);
	return EXIT_BADINPUT;
}
