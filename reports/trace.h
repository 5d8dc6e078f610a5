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

#include "sim/event.h"
#include "sim/timeline.h"

/* Writes path. `name` labels the trace (otherData.name), may be NULL. 0 or -1 with err. */
int trace_write(const struct timeline *tl, const char *path, double us_per_unit, const char *name,
		char *err);

/* Reads measured op durations from a Chrome Trace Event JSON file (an object with
 * "traceEvents", or a bare array): every `ph:"X"` event named F, B, W, BW or optimizer, with
 * args.stage (and args.mb for F/B/W/BW), adds its `dur` (microseconds) to the mean of its
 * (stage, kind); other names (collectives) and other phases are skipped. Fills a caller-owned
 * op_times (free with op_times_free). 0, or -1 with err naming the event and the field
 * (malformed JSON, a missing or non-numeric field, no op events at all). */
int trace_read_op_times(const char *path, struct op_times *out, char *err);
/* The same from the file's text; `path` only names it in messages. */
int trace_parse_op_times(const char *text, const char *path, struct op_times *out, char *err);

#endif
