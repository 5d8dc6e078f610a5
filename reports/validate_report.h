/* validate_report — renders a validation (sim/validate.h): rows and scores as a table, the
 * --by groups as a table, or everything as one JSON document. Fractions are printed as percent
 * in the tables and as fractions in JSON. Nothing is kept; the caller owns the stream. */
#ifndef SCALEPLAN_VALIDATE_REPORT_H
#define SCALEPLAN_VALIDATE_REPORT_H

#include <stdio.h>
#include "sim/validate.h"

void validate_print(const char *path, const struct val_row *rows, int n, const struct val_summary *s, FILE *f);
void validate_print_by(const char *column, const struct val_group *g, int n, FILE *f);
/* one line of JSON; by_column/groups may be NULL/0 (no --by). 0, or -1 when out of memory
 * (nothing written) */
int validate_write_json(const char *path, const struct val_row *rows, int n, const struct val_summary *s,
			const char *by_column, const struct val_group *groups, int ngroups, FILE *f);

#endif
