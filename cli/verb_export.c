/* export — `scaleplan export`: a plan as another framework's launch settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "sim/util.h"
#include "tuner/export.h"
#include "tuner/store.h"

static void export_usage(FILE *f)
{
	fprintf(f,
		"usage: scaleplan export [PLAN.json] --format megatron|nanotron|torchtitan|deepspeed [PLAN-FLAGS]\n"
		"       scaleplan export --db PATH --id N --format FORMAT\n\n"
		"Prints the plan as that framework's launch flags (megatron), YAML (nanotron), TOML\n"
		"(torchtitan v0.2.x, with the equivalent overrides for main) or config (deepspeed). Plan\n"
		"features the framework cannot express are named on '# no equivalent:' comment lines.\n\n"
		"  --format F     output format (required)\n"
		"  --db PATH      results store (default %s), with --id\n"
		"  --id N         a stored finalist (ids: scaleplan db show TUNE)\n\n", STORE_DEFAULT_PATH);
	plan_print_flags_help(f);
}

static int load_finalist(const char *db, long id, struct plan *p)
{
	char err[ERR_LEN];
	struct store *s;
	struct store_finalist fin;
	int orc = store_open(db, STORE_READ, &s, err);
	if (orc) {
		cli_error("export", "%s", err);
		return orc == -2 ? EXIT_BADINPUT : EXIT_RUNTIME;
	}
	int rc = store_get_finalist(s, id, &fin, err);
	store_close(s);
	if (rc) { cli_error("export", "%s", err); return EXIT_BADINPUT; }
	rc = plan_from_json(fin.plan_json, p, err);
	store_finalist_clear(&fin);
	if (rc) { cli_error("export", "finalist %ld: %s", id, err); return EXIT_BADINPUT; }
	return EXIT_OK;
}

static int load_plan_file(const char *path, struct plan *p)
{
	char err[ERR_LEN];
	char *text = read_file(path, 1 << 20, err);
	if (!text) { cli_error("export", "%s", err); return EXIT_BADINPUT; }
	int rc = plan_from_json(text, p, err);
	free(text);
	if (rc) { cli_error("export", "%s: %s", path, err); return EXIT_BADINPUT; }
	return EXIT_OK;
}

int cmd_export(int argc, char **argv)
{
	struct plan p;
	struct model m;
	struct hw h;
	char err[ERR_LEN];
	const char *db = STORE_DEFAULT_PATH, *file = NULL, *fmt_name = NULL;
	long id = 0;
	int rc;
	plan_defaults(&p);
	/* the plan's base (file or stored finalist) first, so flags given anywhere override it */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { export_usage(stdout); return EXIT_OK; }
		if (!strcmp(argv[i], "--db") || !strcmp(argv[i], "--id") || !strcmp(argv[i], "--format")) {
			if (i + 1 >= argc) { cli_error("export", "%s: missing value", argv[i]); return EXIT_BADINPUT; }
			const char *v = argv[++i];
			if (!strcmp(argv[i - 1], "--db")) db = v;
			else if (!strcmp(argv[i - 1], "--format")) fmt_name = v;
			else if (parse_int(v, "--id", 1, 1L << 40, &id, err)) { cli_error("export", "%s", err); return EXIT_BADINPUT; }
		} else if (argv[i][0] != '-') {
			if (file) { cli_error("export", "more than one plan file ('%s')", argv[i]); return EXIT_BADINPUT; }
			file = argv[i];
		} else {
			/* a plan flag: skip its value now, apply it in the second pass */
			struct plan scratch = p;
			cli_plan_flag(argc, argv, &i, &scratch, err);
		}
	}
	enum export_format fmt;
	if (!fmt_name) { cli_error("export", "--format is required (megatron, nanotron, torchtitan, deepspeed)"); return EXIT_BADINPUT; }
	if (export_format_from_name(fmt_name, &fmt)) {
		cli_error("export", "unknown format '%s' (megatron, nanotron, torchtitan, deepspeed)", fmt_name);
		return EXIT_BADINPUT;
	}
	if (file && id) { cli_error("export", "give a plan file or --id, not both"); return EXIT_BADINPUT; }
	if (id && (rc = load_finalist(db, id, &p))) return rc;
	if (file && (rc = load_plan_file(file, &p))) return rc;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--db") || !strcmp(argv[i], "--id") || !strcmp(argv[i], "--format")) { i++; continue; }
		if (argv[i][0] != '-') continue;
		int r = cli_plan_flag(argc, argv, &i, &p, err);
		if (r < 0) { cli_error("export", "%s", err); return EXIT_BADINPUT; }
		if (r == 0) { cli_error("export", "unknown option '%s'", argv[i]); return EXIT_BADINPUT; }
	}
	if ((rc = cli_load_plan("export", &p, &m, &h))) return rc;
	if (export_plan(&p, &m, fmt, stdout, err) < 0) { cli_error("export", "%s", err); return EXIT_RUNTIME; }
	return EXIT_OK;
}
