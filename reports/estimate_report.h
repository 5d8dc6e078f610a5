/* estimate_report — renders an analytical estimate (sim/estimate.h), what `scaleplan sim`,
 * `validate --row` and `tune` print: the table of memory and time per rank kind, the changes
 * that lower a plan's peak, and the JSON document. GB = 1e9 bytes, GiB = 2^30 bytes; the
 * table says which. Nothing is kept; the caller owns the stream. */
#ifndef SCALEPLAN_ESTIMATE_REPORT_H
#define SCALEPLAN_ESTIMATE_REPORT_H

#include <stdio.h>
#include "sim/estimate.h"
#include "sim/plan.h"

void estimate_print(const struct estimate *e, const struct plan *p, FILE *f);
/* the changes of estimate_fixes, or the line saying that none lowers the peak */
void estimate_print_fixes(const struct plan_fix *fx, int n, FILE *f);
/* one line of JSON; 0, or -1 when out of memory (nothing written) */
int estimate_write_json(const struct estimate *e, const struct plan *p, FILE *f);

#endif
