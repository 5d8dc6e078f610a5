/* plot — gnuplot charts. plot_bubble() draws a pipeline bubble diagram from any timeline
 * (simulated or measured): one row per rank, boxes coloured by F / B / W / fused BW /
 * communication / optimizer, micro-batch numbers inside boxes wide enough to hold them, idle
 * time as the grey background, a legend and a title. PNG or SVG by the output's extension.
 *
 * gnuplot runs as a child process on a data file and a script written to a private temporary
 * directory, which is removed afterwards; its exit status is checked. Ownership: nothing is
 * kept. Units: the timeline's; `time_unit` only labels the x axis.
 *
 * Invariant: a chart never silently drops ranks — with more than `max_rows` ranks it shows an
 * evenly spaced sample that always includes the first and last rank, and says so on the chart. */
#ifndef SCALEPLAN_PLOT_H
#define SCALEPLAN_PLOT_H

#include "sim/timeline.h"

struct plot_bubble_opts {
	const char *title;      /* first title line, e.g. "1f1b  pp=8 m=24  bubble 0.29" */
	const char *time_unit;  /* x-axis unit label; NULL: "time" without unit */
	int max_rows;           /* most rows drawn; 0: 32 */
	int sample_rows;        /* rows drawn when sampling; 0: 16 */
	int width_px;           /* 0: 1400 */
};

/* Writes path (.png or .svg). Returns 0, or -1 with err (bad extension, gnuplot missing or
 * failing — the message carries gnuplot's first error line). */
int plot_bubble(const struct timeline *tl, const char *path, const struct plot_bubble_opts *o,
		char *err);

/* 0 for a .png path, 1 for .svg; -1 with err for anything else. Lets a caller reject a bad
 * name before doing any work. Any other character may appear in the path: it never reaches
 * gnuplot (the chart is written in a private directory and installed by sim/outfile.h). */
int plot_format(const char *path, char *err);

/* Memory charts (reports/charts.c). Breakdown panel: one stacked bar per rank kind against a
 * line at the GPU capacity. Time panel: memory of sampled pipeline ranks over one step, the
 * static part plus the activation bytes the timeline's compute events carry. */
enum { PM_WEIGHTS, PM_GRADS, PM_OPTIM, PM_ACT, PM_BUFFERS, PM_OVERHEAD, PM_PARTS };
struct plot_mem_bar {
	char label[40];
	double bytes[PM_PARTS];
};
#define PLOT_MEM_MAX_BARS 64
enum { PLOT_MEM_BREAKDOWN = 1, PLOT_MEM_TIME = 2, PLOT_MEM_BOTH = 3 };
struct plot_memory_in {
	const char *title;
	const struct plot_mem_bar *bars;  /* nbars entries (breakdown panel), at most PLOT_MEM_MAX_BARS */
	int nbars;
	double capacity_bytes;
	const struct timeline *tl;        /* time panel: NULL leaves it out */
	const double *static_bytes;       /* per timeline rank */
	double act_scale;                 /* activation bytes count this many times (0: 1) */
	int panels;                       /* PLOT_MEM_*; 0: both */
};
int plot_memory(const struct plot_memory_in *in, const char *path, char *err);

/* Plans side by side: stacked step-time parts per plan and peak memory per plan against each
 * plan's own capacity (plans differ in the NCCL buffers outside the pool, or in GPU). Labels
 * are wrapped at spaces to fit under their bar. Up to PLOT_CMP_MAX plans. */
#define PLOT_CMP_MAX 16
#define PLOT_CMP_PARTS 10
struct plot_cmp_plan {
	char label[160];
	double part_s[PLOT_CMP_PARTS];
	double peak_bytes, capacity_bytes;
};
int plot_compare(const struct plot_cmp_plan *plans, int n, const char *const *part_names,
		 const char *title, const char *path, char *err);

/* Which rows a chart of nranks shows: fills rows[] (ascending ranks) and returns the count. */
int plot_pick_rows(int nranks, int max_rows, int sample_rows, int *rows);

#endif
