/* trace — the one writer of Chrome Trace Event JSON: a simulated timeline, or the ops a run
 * measured. A timeline is written (reference/ecosystem.md §4.1) so it opens
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

/* One op a rank measured (`scaleplan run --trace`): seconds since the run's clock origin, its
 * name (F, B, W, BW, optimizer, a collective), stream (TRACE_COMPUTE or TRACE_COMM); for a
 * compute op its micro-batch, chunk and stage, and the layers [layer0, layer1) it ran
 * (layer0 < 0: no layers, the optimizer; stage < 0 too: no args). */
enum { TRACE_COMPUTE, TRACE_COMM };
struct trace_op {
	double start_s, end_s;
	const char *name;
	int stream, mb, chunk, stage, layer0, layer1;
};

/* Writes the measured trace of nranks ranks: rank r's nops[r] ops at ops[r * stride ...], one
 * process per rank with a compute and a comm thread. plan_json (the plan as a JSON object's
 * text, or NULL) rides along in otherData.plan so `sim --op-times` can scale these op times
 * to other plans. 0 or -1 with err. */
int trace_write_measured(const char *path, const char *plan_json, int nranks, const size_t *nops,
			 const struct trace_op *ops, size_t stride, char *err);

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
