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

/* 0 for a .png path, 1 for .svg; -1 with err for anything else (or a path gnuplot cannot
 * quote). Lets a caller reject a bad name before doing any work. */
int plot_format(const char *path, char *err);

/* Which rows a chart of nranks shows: fills rows[] (ascending ranks) and returns the count. */
int plot_pick_rows(int nranks, int max_rows, int sample_rows, int *rows);

#endif
