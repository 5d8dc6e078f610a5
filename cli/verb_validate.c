/* validate — `scaleplan validate FILE.tsv [--json]`: predicted vs measured. */
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "reports/estimate_report.h"
#include "reports/validate_report.h"
#include "sim/estimate.h"
#include "sim/util.h"
#include "sim/validate.h"

void cli_validate_note(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "validate: %s\n", msg);
}

/* `--row`: the row's whole estimate, the `sim` table, as soon as it is made */
static void explain_row(void *ctx, const struct val_row *r, const struct plan *p, const struct estimate *e)
{
	(void)ctx;
	printf("%s: %s (%s)\n", r->id, r->model, r->source);
	if (*r->assumed) printf("assumed: %s\n", r->assumed);
	estimate_print(e, p, stdout);
	printf("\n");
}

int cmd_validate(int argc, char **argv)
{
	const char *path = NULL;
	struct val_opts o = {0};
	int json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: scaleplan validate FILE.tsv [--row ID] [--set KEY=VALUE ...] [--by COL[,COL...]] [--json]\n\n"
			       "Predicts every row of a measured-run file (shared/validation/FORMAT.md) and prints\n"
			       "predicted vs measured tokens/s per GPU and memory, then throughput MAPE and median\n"
			       "APE, memory MAPE, fit/OOM accuracy, and per group (model, gpu, gpus, seq, batch)\n"
			       "the mean Spearman rank correlation and mean top-1 regret. Columns are read by\n"
			       "header name; FORMAT.md's required columns must be there, an absent optional one is\n"
			       "unknown in every row (said once on stderr).\n\n"
			       "  --row ID   only the row with this id, preceded by its full estimate (the sim table)\n"
			       "  --set K=V  override a plan key (sim's flag names, e.g. recompute=selective) on every row,\n"
			       "             as if the row stated it: the framework's defaults that depend on it follow\n"
			       "             (compile=1 selects torchtitan's compiled block and loss)\n"
			       "  --by COL   also group the rows by a column of the file (source, framework, gpu, precision,\n"
			       "             tp, pp, zero, ...), or by up to 4 of them (tp,pp: one group per pair of cells):\n"
			       "             rows, scored rows, mean and median signed error, MAPE, memory MAPE and fit\n"
			       "             accuracy per group (in --json: \"by\")\n");
			return EXIT_OK;
		}
		if (!strcmp(argv[i], "--json")) json = 1;
		else if (!strcmp(argv[i], "--row")) {
			if (i + 1 >= argc) { cli_error("validate", "--row needs a row id"); return EXIT_BADINPUT; }
			o.only = argv[++i];
		} else if (!strcmp(argv[i], "--by")) {
			if (i + 1 >= argc) { cli_error("validate", "--by needs a column name"); return EXIT_BADINPUT; }
			o.by = argv[++i];
		} else if (!strcmp(argv[i], "--set")) {
			if (i + 1 >= argc) { cli_error("validate", "--set needs KEY=VALUE"); return EXIT_BADINPUT; }
			if (o.nset == VAL_MAX_SET) { cli_error("validate", "--set: at most %d", VAL_MAX_SET); return EXIT_BADINPUT; }
			/* split at '=' in place and check the pair once, on a default plan */
			char *kv = argv[++i], *eq = strchr(kv, '='), e2[ERR_LEN];
			if (!eq) { cli_error("validate", "--set '%s': expected key=value", kv); return EXIT_BADINPUT; }
			*eq = 0;
			struct plan probe;
			plan_defaults(&probe);
			if (plan_set(&probe, kv, eq + 1, e2)) { cli_error("validate", "--set: %s", e2); return EXIT_BADINPUT; }
			o.set_key[o.nset] = kv;
			o.set_val[o.nset++] = eq + 1;
		}
		else if (argv[i][0] == '-') { cli_error("validate", "unknown option '%s'", argv[i]); return EXIT_BADINPUT; }
		else if (path) { cli_error("validate", "one file at a time ('%s' and '%s')", path, argv[i]); return EXIT_BADINPUT; }
		else path = argv[i];
	}
	if (!path) { cli_error("validate", "missing FILE.tsv"); return EXIT_BADINPUT; }
	struct val_row *rows;
	int n;
	char err[ERR_LEN];
	if (o.only && !json) o.explain = explain_row;
	o.note = cli_validate_note;
	if (validate_file(path, &o, &rows, &n, err)) { cli_error("validate", "%s", err); return EXIT_BADINPUT; }
	if (o.only && n == 0) { free(rows); cli_error("validate", "--row: no row with id '%s' in %s", o.only, path); return EXIT_BADINPUT; }
	struct val_summary s;
	validate_summarize(rows, n, &s);
	struct val_group *g = NULL;
	int ng = 0;
	if (o.by && (ng = validate_by(rows, n, &g)) < 0) { free(rows); cli_error("validate", "out of memory"); return EXIT_RUNTIME; }
	int rc = EXIT_OK;
	if (json && validate_write_json(path, rows, n, &s, o.by, g, ng, stdout)) {
		cli_error("validate", "out of memory");
		rc = EXIT_RUNTIME;
	}
	if (!json) {
		validate_print(path, rows, n, &s, stdout);
		if (o.by) validate_print_by(o.by, g, ng, stdout);
	}
	free(g);
	free(rows);
	return rc;
}
