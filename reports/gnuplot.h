/* gnuplot — running gnuplot as a child process on files in a private temporary directory, for
 * every chart writer in reports/. A chart writes its data files and `plot.gp` into the
 * directory, gp_run() runs gnuplot on the script and checks its exit status and the output
 * file, gp_close() removes every file it created and the directory.
 *
 * Ownership: struct gp is caller-owned; gp_close() is safe after a failed gp_open() and twice.
 * Invariant: nothing is left in the temporary directory after gp_close(). */
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
/* The full path of DIR/name into buf. */
void gp_path(const struct gp *g, const char *name, char *buf, size_t cap);
/* Runs gnuplot on DIR/plot.gp; 0 when it exits 0 and `out` is non-empty, else -1 with
 * gnuplot's first error line. */
int gp_run(struct gp *g, const char *out, char *err);
void gp_close(struct gp *g);

/* `set terminal ...` and `set output '...'` for a .png (pngcairo) or .svg path. */
void gp_terminal(FILE *f, const char *out, int svg, int width, int height);
/* A gnuplot double-quoted string body: quotes and backslashes escaped, newlines as \n. */
void gp_put_string(FILE *f, const char *s);

#endif
