/* sched_impl — what the schedule rows (sim/sched_*.c) share: appending an op, and the stage
 * maps of more than one row. Only sim/schedule.c and the rows include this. */
#ifndef SCALEPLAN_SCHED_IMPL_H
#define SCALEPLAN_SCHED_IMPL_H

#include "sim/schedule.h"

static inline void sched_put(struct sched_emit *e, int kind, int mb, int chunk, int dir, int overlap)
{
	struct sched_op *o = &e->ops[e->n++];
	o->mb = mb;
	o->kind = (uint8_t)kind;
	o->chunk = (uint8_t)chunk;
	o->dir = (uint8_t)dir;
	o->overlap = (uint8_t)overlap;
}

static inline int sched_imin(int a, int b) { return a < b ? a : b; }

/* one stage per rank: stage r on rank r (sim/schedule.c) */
int sched_stage_rank(int pp, int rank, int chunk, int dir);
void sched_locate_rank(int pp, int dir, int stage, int *rank, int *chunk);
/* the V: rank r holds stages r and 2pp-1-r (sim/sched_zb.c) */
int sched_stage_v(int pp, int rank, int chunk, int dir);
void sched_locate_v(int pp, int dir, int stage, int *rank, int *chunk);

/* the rows, one per schedule; sim/schedule.c indexes them by enum schedule */
extern const struct sched_family sched_row_afab, sched_row_1f1b, sched_row_interleaved, sched_row_zbh1,
	sched_row_zbh2, sched_row_zbv, sched_row_dualpipe, sched_row_dualpipev;

#endif
