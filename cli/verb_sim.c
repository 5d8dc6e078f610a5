/* sim — `scaleplan sim`: estimate one plan. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "sim/estimate.h"
#include "sim/util.h"

static void sim_usage(FILE *f)
{
	fprintf(f, "usage: scaleplan sim --model M --gpu G --gpus N [PLAN-FLAGS] [--json]\n\n");
	plan_print_flags_help(f);
}

int cmd_sim(int argc, char **argv)
{
	struct plan p;
	struct model m;
	struct hw h;
	char err[ERR_LEN];
	int json = 0;
	plan_defaults(&p);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { sim_usage(stdout); return EXIT_OK; }
		if (!strcmp(argv[i], "--json")) { json = 1; continue; }
		int r = cli_plan_flag(argc, argv, &i, &p, err);
		if (r < 0) { cli_error("sim", "%s", err); return EXIT_BADINPUT; }
		if (r == 0) { cli_error("sim", "unknown option '%s'", argv[i]); return EXIT_BADINPUT; }
	}
	int rc = cli_load_plan("sim", &p, &m, &h);
	if (rc) return rc;
	struct estimate e;
	if (estimate_plan(&m, &h, &p, &e, err)) {
		cli_error("sim", "%s", err);
		return EXIT_RUNTIME;
	}
	if (json) estimate_write_json(&e, &p, stdout);
	else estimate_print(&e, &p, stdout);
	if (!e.fits) {
		fprintf(stderr, "scaleplan sim: plan does not fit: peak %.2f GiB exceeds %s capacity %.2f GiB by %.2f GiB\n",
			e.peak_mem_bytes / 1073741824.0, h.name, e.capacity_bytes / 1073741824.0,
			(e.peak_mem_bytes - e.capacity_bytes) / 1073741824.0);
		return EXIT_INFEASIBLE;
	}
	return EXIT_OK;
}
