/* gnuplot — running gnuplot as a child process on files in a private temporary directory, for
 * every chart writer in reports/. A chart writes its data files and `plot.gp` into the
 * directory, gp_run() runs gnuplot there (its working directory, so the script names no path)
 * and checks its exit status and that the chart it wrote is complete, then installs the chart
 * at the caller's path through sim/outfile.h (whole or not at all); gp_close() removes every
 * file it created and the directory.
 *
 * No user string reaches the script except through esc_gnuplot (reports/escape.h): data files
 * hold numbers only, labels and titles are written into the script as quoted literals.
 *
 * Ownership: struct gp is caller-owned; gp_close() is safe after a failed gp_open() and twice.
 * Invariant: nothing is left in the temporary directory after gp_close(), and the caller's
 * path is either the complete chart or untouched. */
#ifndef SCALEPLAN_GNUPLOT_H
#define SCALEPLAN_GNUPLOT_H

#include <stdio.h>

#define GP_MAX_FILES 64

struct gp {
	char dir[64];
	char names[GP_MAX_FILES][24];
	int nfiles;
};

int gp_open(struct gp *g, char *err);
/* Opens DIR/name for writing (name <= 23 chars, recorded for removal); NULL with err. */
FILE *gp_file(struct gp *g, const char *name, char *err);
/* Closes a file from gp_file; 0, or -1 with err naming the OS reason of a failed write. */
int gp_fclose(struct gp *g, FILE *f, char *err);
/* The full path of DIR/name into buf. */
void gp_path(const struct gp *g, const char *name, char *buf, size_t cap);
/* Runs gnuplot on DIR/plot.gp and installs the chart at `out`; 0, or -1 with gnuplot's first
 * error line, or with the OS reason a write failed ("out.svg: No space left on device"). */
int gp_run(struct gp *g, const char *out, char *err);
void gp_close(struct gp *g);

/* `set terminal ...` (pngcairo or svg) and `set output` to the chart file in the directory. */
void gp_terminal(FILE *f, int svg, int width, int height);

#endif
