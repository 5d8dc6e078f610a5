/* trace — writes a timeline as Chrome Trace Event JSON (reference/ecosystem.md §4.1) so it opens
 * in Perfetto or chrome://tracing: one `ph:"X"` complete event per timeline event with
 * pid = rank and tid = stream, process/thread name and sort-index metadata, and an activation
 * memory counter per rank.
 *
 * Units: `ts`/`dur` are microseconds; the caller says how many microseconds one timeline unit
 * is (1e6 for seconds, 1e3 for milliseconds). Ownership: nothing is kept; the file is written
 * and closed. Invariant: each (pid, tid) track holds non-overlapping events, since the
 * timeline's streams do (the two halves of an F&B pair share one interval and so nest). */
#ifndef SCALEPLAN_TRACE_H
#define SCALEPLAN_TRACE_H

#include "sim/timeline.h"

/* Writes path. `name` labels the trace (otherData.name), may be NULL. 0 or -1 with err. */
int trace_write(const struct timeline *tl, const char *path, double us_per_unit, const char *name,
		char *err);

#endif
