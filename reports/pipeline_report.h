/* pipeline_report — renders one pipeline schedule run through the engine with uniform op
 * times (`scaleplan pipeline`): the span from the first op to the last event (where the bubble
 * diagram ends), the worst rank's bubble in both conventions, activations in flight, and per
 * rank span, busy time, bubble and peak in-flight micro-batches; as a table or one JSON object.
 * Times are in the caller's unit, named by `unit`. Nothing is kept; the caller owns the stream. */
#ifndef SCALEPLAN_PIPELINE_REPORT_H
#define SCALEPLAN_PIPELINE_REPORT_H

#include <stdio.h>
#include "sim/engine.h"
#include "sim/schedule.h"

/* the op times the schedule ran with, as given */
struct pipeline_times {
	const char *unit;    /* "s", "ms" or "us" */
	double t_f, t_b, t_w, t_comm;
};

void pipeline_print(const struct sched *s, const struct engine_result *r, const struct pipeline_times *t, FILE *f);
/* 0, or -1 when out of memory (nothing written) */
int pipeline_write_json(const struct sched *s, const struct engine_result *r, const struct pipeline_times *t, FILE *f);

#endif
