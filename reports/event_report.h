/* event_report — renders one plan re-timed by the event engine (`scaleplan sim --engine
 * event`, sim/event.h): headline step time beside the analytical estimate's, bubbles in both
 * conventions, exposed communication per dimension, per-stage op times and where they came
 * from (the model, or a measured trace), per-rank span, bubble and memory; as a table or as one
 * JSON document. mt is the measured op times (NULL: none) read from mt_path. GiB = 2^30 bytes.
 * Nothing is kept; the caller owns the stream. */
#ifndef SCALEPLAN_EVENT_REPORT_H
#define SCALEPLAN_EVENT_REPORT_H

#include <stdio.h>
#include "sim/estimate.h"
#include "sim/event.h"
#include "sim/plan.h"

void event_print(const struct plan *p, const struct estimate *e, const struct event_sim *s,
		 const struct op_times *mt, const char *mt_path, FILE *f);
void event_write_json(const struct plan *p, const struct estimate *e, const struct event_sim *s,
		      const struct op_times *mt, const char *mt_path, FILE *f);

#endif
