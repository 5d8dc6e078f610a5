/* report — the pictures of a tune report: for the top 3 plans a bubble diagram (the event
 * engine's timeline) and a memory chart (the estimate's breakdown per rank kind, the engine's
 * memory over the step), for the top 5 a comparison of step-time parts and peak memory against
 * each plan's capacity (analytical estimate, the table's figures). Each is drawn by
 * reports/plan_charts.h as PNG and as SVG into the report's directory. The Markdown/HTML text
 * that shows them is written by search_write_report (tuner/search.h).
 *
 * Ownership: the caller owns `out`; file names in it are relative to the directory.
 * Invariant: every picture listed in `out` exists and is non-empty in the directory in both
 * formats. */
#ifndef SCALEPLAN_REPORT_H
#define SCALEPLAN_REPORT_H

#include "tuner/search.h"

#define REPORT_MAX_PICS 8

struct report_pic {
	char png[32], svg[32]; /* e.g. "bubble_1.png", "bubble_1.svg" */
	char caption[256];
};
struct report_pics {
	struct report_pic pic[REPORT_MAX_PICS];
	int n;
};

/* Writes the pictures into dir (which must exist). 0, or -1 with err (gnuplot missing or
 * failing, a finalist that no longer simulates); pictures written before a failure stay listed. */
int report_pictures(const struct search_req *rq, const struct search_result *res, const char *dir,
		    struct report_pics *out, char *err);

#endif
