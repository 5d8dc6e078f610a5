/* plan_charts — the charts of one simulated plan (sim/event.h): its bubble diagram, its memory
 * (breakdown per rank kind and over time per pipeline rank), and the step-time/memory
 * comparison of several plans. Shared by `scaleplan plot` and the tuner's report, so both draw
 * the same picture of a plan.
 *
 * Ownership: nothing is kept; the caller owns the plan, estimate and simulation. Units: the
 * simulation's seconds and bytes; charts label GiB (2^30 B). */
#ifndef SCALEPLAN_PLAN_CHARTS_H
#define SCALEPLAN_PLAN_CHARTS_H

#include <stddef.h>
#include "reports/plot.h"
#include "sim/estimate.h"
#include "sim/event.h"
#include "sim/plan.h"

/* "dp2 tp4 pp2 cp1 zero1 1f1b mbs1 rc none" (ep and vpp only when > 1) */
void plan_short(const struct plan *p, char *buf, size_t cap);

int chart_bubble(const struct plan *p, const struct event_sim *s, const char *path, int max_rows, char *err);
/* panels: PLOT_MEM_BREAKDOWN (the estimate's memory per rank kind, its peak in the title),
 * PLOT_MEM_TIME (the event engine's memory over the step) or PLOT_MEM_BOTH */
int chart_memory(const struct plan *p, const struct estimate *e, const struct event_sim *s, int panels,
		 const char *path, char *err);
/* One entry of a comparison from a simulated plan (the event engine's step parts and peak). */
void chart_cmp_entry(const char *label, const struct event_sim *s, struct plot_cmp_plan *out);
/* The same from the analytical estimate: the step parts of its busiest rank kind (the DP tail
 * is what the step holds beyond them), its peak and capacity — the figures sim and tune print. */
void chart_cmp_entry_est(const char *label, const struct estimate *e, struct plot_cmp_plan *out);
/* Each entry carries its own capacity. */
int chart_compare(const struct plot_cmp_plan *plans, int n, const char *title, const char *path, char *err);

#endif
