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

struct sched_family;

struct sched {
	enum schedule type;
	const struct sched_family *fam; /* the type's row of the table */
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

/* --- the schedule table ---------------------------------------------------------------------
 * One row of methods per schedule (sim/schedule.c holds the table, sim/sched_*.c the rows).
 * Everything that differs between schedules is asked of the row: names, chunks per rank, the
 * stage of a rank's chunk, the plan's micro-batch rules and the generator's, activations in
 * flight, the closed-form span, the op-list generator, and the names frameworks give it. */

/* what the closed-form span of one step needs (sim/estimate.c fills it) */
struct sched_span_in {
	double pp, v;            /* pipeline ranks; the plan's vpp */
	int mb, np;              /* micro-batches per step; pipeline ranks priced (<= pp) */
	double Tmax, Fm, Bm, Wm; /* s: the slowest rank's F+B+W per micro-batch and its parts */
	double sum;              /* s: F+B+W per micro-batch summed over the priced ranks */
	double t_p2p;            /* s: one pipeline send */
	int overlap_p2p;         /* the plan's overlap_p2p */
};

enum sched_flag {
	SCHED_F_VIRTUAL = 1 << 0,       /* chunks per rank are the plan's vpp (>= 2) */
	SCHED_F_BLOCKING_P2P = 1 << 1,  /* sends wait for completion unless overlap_p2p */
	SCHED_F_SPLIT_W = 1 << 2,       /* zero-bubble-like: weight gradients run apart from B */
	SCHED_F_DOMINATED = 1 << 3,     /* another row has its time with less memory */
	SCHED_F_SPAN_SUMS = 1 << 4,     /* the span sums every stage's time once (fill and drain) */
	SCHED_F_EP_OVERLAP = 1 << 5,    /* MoE all-to-all hidden behind the paired F&B */
	SCHED_F_EVEN_SPLIT = 1 << 6,    /* its framework needs the layers to split evenly unless the
					 * user gives the split (plan_validate_default_split) */
};

/* the frameworks exports write; a row's fw_name is that framework's name of it, NULL: none */
enum sched_fw { SCHED_FW_MEGATRON, SCHED_FW_TORCHTITAN, SCHED_FW_NANOTRON, SCHED_FW_DEEPSPEED, SCHED_FW_COUNT };

struct sched_emit {
	struct sched_op *ops;
	size_t n;
};

struct sched_family {
	enum schedule id;
	const char *name;
	const char *alias;         /* another name the parsers accept, or NULL */
	const char *paper;         /* the family's name in prose ("GPipe", "zero-bubble"), or NULL */
	unsigned flags;            /* enum sched_flag */
	int ndirs;                 /* 2: micro-batches enter from both ends (each rank: two copies) */
	int chunks;                /* model chunks per rank (ignored with SCHED_F_VIRTUAL) */
	enum schedule with_vpp;    /* what this schedule with vpp > 1 means; SCHED_NONE: nothing */
	enum schedule fold_to;     /* the row a framework without this one runs instead, or NONE */
	const char *fw_name[SCHED_FW_COUNT];
	/* stage (0..nstages-1 in direction dir) of a rank's chunk, and its inverse */
	int (*stage)(int pp, int rank, int chunk, int dir);
	void (*locate)(int pp, int dir, int stage, int *rank, int *chunk);
	/* the plan's rules (plan_validate, the tuner): pipeline ranks, then micro-batches per
	 * step; NULL: any; -1 with err ("plan: ...") */
	int (*pp_rule)(const struct sched_family *f, int pp, char *err);
	int (*mb_rule)(const struct sched_family *f, int pp, int mb, char *err);
	/* the generator's rule on pp and micro-batches, past the ranges sched_check checks;
	 * NULL: any; -1 with err ("<name>: ...") */
	int (*gen_rule)(const struct sched_family *f, int pp, int m, char *err);
	/* activations held at rank r's peak, in micro-batches through all its layers
	 * (model.md §2.3); w_ratio = M_W/M_B */
	double (*inflight)(double pp, double v, int r, int mb, double w_ratio);
	/* span of one step, *pp_exposed its exposed pipeline sends (included) */
	double (*span)(const struct sched_span_in *in, double *pp_exposed);
	/* appends rank r's ops; wq: scratch for 2m+1 ints */
	void (*gen)(struct sched_emit *e, const struct sched *s, int r, int *wq);
};

/* The row of a schedule (SCHED_NONE's for anything out of range). */
const struct sched_family *sched_family(enum schedule t);
/* The row named name or one of its aliases; NULL when none is. */
const struct sched_family *sched_by_name(const char *name);
/* "afab, 1f1b, ..." every pipeline schedule's name in table order, then "none" when
 * with_none; into buf. */
const char *sched_name_list(char *buf, size_t cap, const char *sep, int with_none);
/* model chunks per rank, and stages in one direction's pipeline */
int sched_chunks(const struct sched_family *f, int vpp);
int sched_nstages(const struct sched_family *f, int pp, int vpp);
/* The plan's schedule rules: vpp, pp and micro-batches; -1 with err ("plan: ..."). */
int sched_plan_rules(const struct sched_family *f, int pp, int vpp, int mb, char *err);

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
