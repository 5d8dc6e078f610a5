/* schedule — pipeline schedules as data: for every pipeline rank, the ordered list of compute
 * ops it runs in one training step (F, B = input-gradient backward, W = weight-gradient
 * backward, BW = fused B+W), each naming its micro-batch, model chunk and direction. The
 * event engine, the runtime's pipeline executor and the bubble plots all walk these lists;
 * nothing else decides an order. Per-rank orders follow reference/model.md §4.
 *
 * Ownership: sched_create() returns one malloc'd object holding every list; sched_destroy()
 * frees it (NULL is fine). No units here: ops are ordinal, durations live in the engine.
 *
 * Invariant: for each direction d, stage s (in that direction's pipeline order) and
 * micro-batch j < mb_per_dir, the lists hold exactly one F and either one BW or one B and one W
 * for (d, s, j), all on the rank sched_locate(d, s) names, F before B before W. An op with
 * `overlap` set runs fused with the next op of its rank (DualPipe's F&B pair). */
#ifndef SCALEPLAN_SCHEDULE_H
#define SCALEPLAN_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include "sim/plan.h"

enum op_kind { OP_F, OP_B, OP_W, OP_BW, OP_KIND_COUNT };

struct sched_op {
	int32_t mb;        /* micro-batch within its direction, 0..mb_per_dir-1 */
	uint8_t kind;      /* enum op_kind */
	uint8_t chunk;     /* model chunk on this rank, 0..chunks-1 */
	uint8_t dir;       /* 0, or 1 for DualPipe's reverse direction */
	uint8_t overlap;   /* 1: runs overlapped with the next op on this rank (F&B) */
};

struct sched {
	enum schedule type;
	int pp;            /* pipeline ranks */
	int m;             /* micro-batches per step (DualPipe: both directions together) */
	int chunks;        /* model chunks per rank (plan_chunks) */
	int nstages;       /* stages in one direction's pipeline (plan_stages) */
	int ndirs;         /* 2 for dualpipe, else 1 */
	int mb_per_dir;    /* m / ndirs */
	size_t nops;
	size_t *off;       /* pp + 1 offsets: rank r's ops are ops[off[r] .. off[r+1]) */
	struct sched_op *ops;
};

/* Builds the op lists. vpp is the chunk count for interleaved and must be 1 (or 0) otherwise.
 * Returns NULL with err naming the violated rule, e.g.
 * "dualpipe: pp (3) must be even". */
struct sched *sched_create(enum schedule type, int pp, int m, int vpp, char *err);
void sched_destroy(struct sched *s);

/* Checks the rules sched_create checks, without building anything. */
int sched_check(enum schedule type, int pp, int m, int vpp, char *err);

/* Pipeline stage (0..nstages-1 in direction dir) of a rank's chunk; consistent with
 * plan_stages(): interleaved chunk c*pp + r; zb-v / dualpipev r and 2pp-1-r; dualpipe r
 * (direction 0) and pp-1-r (direction 1). */
int sched_stage(const struct sched *s, int rank, int chunk, int dir);
/* Inverse: the rank and chunk holding stage `stage` of direction dir. */
void sched_locate(const struct sched *s, int dir, int stage, int *rank, int *chunk);

/* Number of ops of a rank; ops of a rank start at s->ops + s->off[rank]. */
static inline size_t sched_rank_len(const struct sched *s, int rank)
{
	return s->off[rank + 1] - s->off[rank];
}

const char *op_kind_name(enum op_kind k);

#endif
