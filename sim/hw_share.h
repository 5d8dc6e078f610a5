/* hw_share — ranks that share cores. A CPU profile measured with more ranks than cores
 * (tables.ranks > tables.cores, `scaleplan profile` on a 2-core machine with 4 ranks) holds
 * kernel times of a rank while every rank computes: each gets cores/ranks of a core. In a
 * step, a rank that waits (a pipeline bubble, a slower peer) gives its core to one that
 * works (kernels, or collectives: on a CPU those copy bytes), so a plan whose ranks work a
 * fraction f of the step runs its kernels at
 * max(cores/ranks, f) of the tables' times (processor sharing: R·f ranks computing on C cores
 * each get min(1, C/(R·f)) of a core). f depends on the kernel times, so the estimate is
 * repeated to the fixed point F = max(C/R, f(F)).
 *
 * Units: seconds. Invariant: a profile without such tables (every GPU profile) is left
 * exactly as estimate_plan priced it. */
#ifndef SCALEPLAN_HW_SHARE_H
#define SCALEPLAN_HW_SHARE_H

struct model;
struct hw;
struct plan;
struct estimate;

/* Called by estimate_plan on its result: re-estimates with the shared-core speed when h's
 * tables say ranks shared cores; *factor (may be NULL) gets F (1 when nothing changed). */
int hw_share_adjust(const struct model *m, const struct hw *h, const struct plan *p, struct estimate *e,
		    double *factor, char *err);

#endif
