/* validate — reads measured training runs in the TSV format of shared/validation/FORMAT.md,
 * predicts each row with the analytical model, and scores the predictions: throughput MAPE
 * and median APE, memory MAPE, fit/OOM accuracy, and per group of rows sharing model, GPU,
 * GPU count, sequence length and global batch the Spearman rank correlation and top-1 regret.
 *
 * Unknown plan settings (empty cells) take the documented defaults of the row's framework
 * (profiles/frameworks), then the fastest completion that fits among the values the framework
 * offers; a framework default (ZeRO stage, schedule) that fits no completion of a run that ran
 * gives way to the fastest offered values that fit. A pipeline of unknown schedule is 1F1B
 * (interleaved when chunks are stated), an unknown vocabulary 51200. Each row says what it
 * assumed ("assumed: ..."). Rows that cannot be simulated are kept with the reason. Fractions,
 * not percent. */
#ifndef SCALEPLAN_VALIDATE_H
#define SCALEPLAN_VALIDATE_H

#include <stdint.h>
#include <stdio.h>

struct estimate;
struct hw;
struct model;
struct plan;

struct val_row {
	char id[32];
	char source[64];
	char model[64];
	char gpu[32];
	char framework[24];         /* FORMAT.md's framework cell; "" = unknown */
	char by[96];                /* the cells of the --by columns (val_opts.by), comma-joined; "" when none */
	char status[8];
	int num_gpus, seq, gbs;
	int simulated;
	char reason[300];          /* why not simulated */
	char assumed[1024];          /* defaults filled in for empty cells */
	double meas_tps, meas_mem_gib; /* < 0 = not measured */
	double pred_tps, pred_mem_gib, pred_step_s, pred_mfu;
	double pred_peak_gib;
	double pred_static_gib, pred_act_gib, pred_logits_gib, pred_buf_gib; /* parts of pred_mem_gib's rank */       /* peak over every rank kind (pred_mem_gib may be rank 0's) */
	int pred_fits;
	int excluded;              /* predicted, but left out of the scores (reason says why) */
	int year;                  /* of the source (0 unknown): which framework defaults applied */
	uint64_t fw_mask;          /* plan keys the row's framework filled (plan_key_index bits) */
	int filled_overlaps;       /* overlap switches neither the row nor its framework states */
	int mem_rank0;             /* measurement covers rank 0 only (compare the first stage) */
	int mem_allocated;         /* mem_kind allocated: compare live tensors, not the reserved pool */
};

struct val_summary {
	int rows, simulated, not_simulated;
	int excluded;              /* of not_simulated: predicted but excluded from the scores */
	int tps_rows, mem_rows, fit_rows, groups;
	double throughput_mape, throughput_median_ape, memory_mape, fit_accuracy;
	double rank_spearman, top1_regret;
	double top1_regret_median;  /* median over groups: one noisy group cannot decide it */
};

/* One group of rows sharing the cells of the --by columns: how many rows were scored and how
 * far off they are (signed: predicted above measured is positive). */
struct val_group {
	char key[96];
	int rows, tps_rows, mem_rows, fit_rows;
	/* the median is what a class of rows is off by when a few of them are far off */
	double mean_signed_err, median_signed_err, mape, memory_mape, fit_accuracy;
};

/* Options of a validation run; a NULL struct means all rows, no overrides, no explanation. */
#define VAL_MAX_SET 16
#define VAL_MAX_BY 4       /* columns --by takes */
#define VAL_BY_NAME 48     /* bytes of one --by column name, its terminator included */
struct val_opts {
	const char *only;                 /* only the row with this id, or NULL */
	const char *set_key[VAL_MAX_SET]; /* plan keys overridden after each row is read (what-if) */
	const char *set_val[VAL_MAX_SET];
	int nset;
	/* called with each simulated row's estimate as soon as it is made (`validate --row` prints
	 * the `sim` table of it), or NULL */
	void (*explain)(void *ctx, const struct val_row *r, const struct plan *p, const struct estimate *e);
	/* called once per optional column the header lacks (read as unknown in every row) with a
	 * one-line note naming the file and the column, or NULL */
	void (*note)(void *ctx, const char *msg);
	const char *by;                   /* COL[,COL...]: column names of the file (at most VAL_MAX_BY); rows
	                                   * keep their cells, comma-joined, in val_row.by */
	const struct hw *hw;              /* price every row on this profile instead of its gpu cell */
	/* called with each simulated row's model and plan as predicted (calibrate collects them) */
	void (*row)(void *ctx, const struct val_row *r, const struct model *m, const struct plan *p);
	void *row_ctx;                    /* also the ctx of explain and note */
};

/* Parses and predicts every row of `path`. *rows is malloc'd (caller frees). Returns 0, or -1
 * with err for a file that is not in the format (a missing required column, no header) or an override
 * the plan parser refuses. */
int validate_file(const char *path, const struct val_opts *opts, struct val_row **rows, int *nrows, char *err);
void validate_summarize(const struct val_row *rows, int n, struct val_summary *s);
/* Groups rows by val_row.by (first-seen order); *groups is malloc'd. Returns the count, -1 on
 * allocation failure. */
int validate_by(const struct val_row *rows, int n, struct val_group **groups);

/* Spearman rank correlation of x and y (average ranks for ties); 0 if undefined. */
double spearman(const double *x, const double *y, int n);

#endif
