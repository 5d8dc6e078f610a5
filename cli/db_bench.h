/* db_bench — benchmarks in `scaleplan db` (cli/db_bench.c). */
#ifndef SCALEPLAN_DB_BENCH_H
#define SCALEPLAN_DB_BENCH_H

#include <stdio.h>
#include "tuner/store.h"

struct cJSON;

/* The latest benchmark of finalist_id among b[0..n), or NULL. */
const struct store_bench *db_bench_of(const struct store_bench *b, int n, long finalist_id);
/* Adds bench_status and the measured_* fields of b to a finalist's object (nothing when NULL). */
void db_bench_json(struct cJSON *o, const struct store_bench *b);
/* Every benchmark as a row of a validation TSV (shared/validation/FORMAT.md). Exit code. */
int db_export_tsv(struct store *s, FILE *o);

#endif
