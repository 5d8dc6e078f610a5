/* layout — the one mapping between a global rank and its coordinates in the process grid, and
 * the ranks of every communication group. Built from a plan's degrees and rank order
 * (innermost first; ours tp-cp-dp-pp). The MoE layers lay their own grid over the same ranks
 * of a pipeline stage (Megatron's expert "parallel folding"): the stage index
 * K = tp + tp_size·(cp + cp_size·dp) splits as etp (innermost), ep, then expert-DP, so with
 * etp = tp and ep dividing dp·cp the EP group sits inside the DP×CP group as before.
 *
 * Invariant: for each group kind, the groups partition the ranks; group member i has
 * coordinate i along that dimension. Ranks r and r' are on the same node iff
 * r / gpus_per_node == r' / gpus_per_node. */
#ifndef SCALEPLAN_LAYOUT_H
#define SCALEPLAN_LAYOUT_H

struct plan;

enum dim { DIM_TP, DIM_CP, DIM_DP, DIM_PP, DIM_COUNT };

enum group_kind {
	GROUP_TP, GROUP_CP, GROUP_DP, GROUP_PP,
	GROUP_DPCP,  /* dense gradient reduction: all ranks with the same tp and pp coordinate */
	GROUP_EP,    /* expert parallel: ep ranks of the stage's expert grid (same etp, edp index) */
	GROUP_EDP,   /* expert data parallel: ranks holding the same expert shard, tp*dp*cp/(ep*etp) */
	GROUP_COUNT
};

struct layout {
	int world;
	int gpus_per_node;
	int size[DIM_COUNT];
	int stride[DIM_COUNT];
	int ep, etp;
};

struct coords {
	int c[DIM_COUNT];
	int ep, edp;  /* position in the EP group and in the expert-DP group */
	int etp;      /* position in the expert-TP group */
};

int layout_init(struct layout *l, const struct plan *p, char *err);
void layout_coords(const struct layout *l, int rank, struct coords *out);
int layout_rank(const struct layout *l, const int c[DIM_COUNT]);
/* Size of groups of this kind. */
int layout_group_size(const struct layout *l, enum group_kind g);
/* Fills ranks[0..n) with the members of `rank`'s group of kind g (ordered by position in the
 * group) and returns n; `cap` must be >= layout_group_size(). Returns -1 if cap is too small. */
int layout_group(const struct layout *l, enum group_kind g, int rank, int *ranks, int cap);
/* Position of `rank` inside its group of kind g. */
int layout_group_index(const struct layout *l, enum group_kind g, int rank);
/* Number of distinct units of `unit` consecutive ranks (a node, a leaf group) that rank 0's
 * group of kind g touches; closed form for the arithmetic progressions most groups are. */
int layout_group_units(const struct layout *l, enum group_kind g, int unit);
/* Number of distinct nodes spanned by `rank`'s group of kind g. */
int layout_group_nodes(const struct layout *l, enum group_kind g, int rank);
const char *group_name(enum group_kind g);

#endif
