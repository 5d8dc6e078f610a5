/* op_scale — measured op times of one plan carried to another plan of the same model: the
 * trace-driven prediction of plans that were not run. Every op time splits into compute and
 * the communication inside the op (TP/SP collectives, CP ring steps, EP all-to-all), read off
 * the cost model as the difference between the profile and the same profile with free
 * communication. The trace's plan gives, per op kind (F, B, W), the ratio of measured compute
 * (measured time less the model's communication) to modelled compute; the target plan's op
 * times are its modelled compute times that ratio, plus its own modelled communication. The
 * profile's tables (sim/hw_table.h) price both, so the shapes the two plans give each GEMM,
 * attention and collective are what scales the measurement.
 *
 * Units: seconds. Ownership: `out` is caller-owned, filled with arrays op_times_free()
 * releases (its plan_json stays NULL). Invariant: when `to` is `from`, the op times of the
 * stages the trace measured come back as measured (up to rounding). */
#ifndef SCALEPLAN_OP_SCALE_H
#define SCALEPLAN_OP_SCALE_H

#include "sim/event.h"

struct model;
struct hw;
struct plan;

/* Both plans resolved and validated, of model m. 0, or -1 with err (a plan that does not
 * simulate, a trace without F or backward events, out of memory). */
int op_times_retarget(const struct model *m, const struct hw *h, const struct plan *from,
		      const struct op_times *meas, const struct plan *to, struct op_times *out, char *err);

#endif
