/* charts — memory and plan-comparison charts through gnuplot (reports/gnuplot.h): rowstacked
 * histograms for the breakdowns, step lines for memory over time, a dashed line at the GPU
 * capacity. GiB = 2^30 bytes on every axis. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reports/escape.h"
#include "reports/gnuplot.h"
#include "reports/plot.h"
#include "sim/util.h"


static const char *const mem_names[PM_PARTS] = {"weights", "gradients", "optimizer states", "activations",
						"buffers (comm, logits)", "overhead (context, allocator)"};
static const char *const mem_colors[PM_PARTS] = {"#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860"};
static const char *const part_colors[PLOT_CMP_PARTS] = {"#4C72B0", "#8FAADC", "#DD8452", "#F2B48A", "#E3999B",
							"#8172B3", "#C44E52", "#BBBBBB", "#55A868", "#937860"};

static int close_checked(FILE *f, struct gp *g, char *err)
{
	return gp_fclose(g, f, err);
}

/* `set xtics (LABEL 0, LABEL 1, ...)`: labels live in the script, escaped; data files hold
 * numbers only */
static void write_xtics(FILE *f, const char *const *labels, int n, const char *font)
{
	fputs("set xtics (", f);
	for (int i = 0; i < n; i++) {
		fputs(i ? ", " : "", f);
		esc_gnuplot(f, labels[i]);
		fprintf(f, " %d", i);
	}
	fprintf(f, ") nomirror%s\n", font);
}

/* data: bar index then one column per part, GiB */
static int write_bars(struct gp *g, const struct plot_memory_in *in, char *err)
{
	FILE *f = gp_file(g, "bars.dat", err);
	if (!f) return -1;
	for (int i = 0; i < in->nbars; i++) {
		fprintf(f, "%d", i);
		for (int k = 0; k < PM_PARTS; k++) fprintf(f, " %.6g", in->bars[i].bytes[k] / GIB);
		fputc('\n', f);
	}
	return close_checked(f, g, err);
}

static void script_bars(FILE *f, const struct plot_memory_in *in)
{
	const char *labels[PLOT_MEM_MAX_BARS];
	for (int i = 0; i < in->nbars; i++) labels[i] = in->bars[i].label;
	double cap = in->capacity_bytes / GIB, top = cap;
	for (int i = 0; i < in->nbars; i++) {
		double sum = 0;
		for (int k = 0; k < PM_PARTS; k++) sum += in->bars[i].bytes[k] / GIB;
		if (sum > top) top = sum;
	}
	fprintf(f, "set title \"memory per GPU by rank kind\"\nset style data histograms\n"
		   "set style histogram rowstacked\nset style fill solid 1.0 border rgb \"#202020\"\n"
		   "set boxwidth 0.6\nset ylabel \"GiB per GPU (2^30 B)\"\nunset xlabel\n"
		   "set key outside right top vertical Left reverse noenhanced\n"
		   "set xrange [-0.6:%d.6]\nset yrange [0:%.6g]\nset grid ytics\n",
		in->nbars - 1, top * 1.12);
	write_xtics(f, labels, in->nbars, "");
	fprintf(f, "plot 'bars.dat' using 2 title \"%s\" lc rgb \"%s\"", mem_names[0], mem_colors[0]);
	for (int k = 1; k < PM_PARTS; k++)
		fprintf(f, ", '' using %d title \"%s\" lc rgb \"%s\"", k + 2, mem_names[k], mem_colors[k]);
	fprintf(f, ", %.6g with lines lw 2 dt 2 lc rgb \"#D62728\" title \"capacity %.1f GiB\"\n", cap, cap);
}

/* one file per sampled rank: (time s, GiB) after every compute op */
static int write_time(struct gp *g, const struct plot_memory_in *in, int *rows, int *nrows, char *err)
{
	const struct timeline *tl = in->tl;
	*nrows = plot_pick_rows(tl->nranks, 8, 8, rows);
	for (int k = 0; k < *nrows; k++) {
		char name[24];
		int r = rows[k];
		snprintf(name, sizeof(name), "mem%d.dat", k);
		FILE *f = gp_file(g, name, err);
		if (!f) return -1;
		double base = in->static_bytes[r] / GIB, scale = in->act_scale > 0 ? in->act_scale : 1;
		fprintf(f, "0 %.6g\n", base);
		for (size_t i = 0; i < tl->n; i++) {
			const struct tl_event *e = &tl->ev[i];
			if (e->rank == r && e->stream == TL_COMPUTE && e->kind <= TL_BW)
				fprintf(f, "%.9g %.6g\n", e->end, base + scale * e->mem_bytes / GIB);
		}
		fprintf(f, "%.9g %.6g\n", timeline_end(tl), base);
		if (close_checked(f, g, err)) return -1;
	}
	return 0;
}

static void script_time(FILE *f, const struct plot_memory_in *in, const int *rows, int nrows)
{
	double cap = in->capacity_bytes / GIB;
	fputs("set title \"memory over one step by pipeline rank", f);
	if (nrows < in->tl->nranks) fprintf(f, " (%d of %d ranks shown, evenly sampled)", nrows, in->tl->nranks);
	fputs("\" noenhanced\nset style data lines\nunset style histogram\nset xtics auto\nset xrange [*:*]\n"
	      "set yrange [0:*]\nset xlabel \"time (s)\"\nset ylabel \"GiB per GPU (2^30 B)\"\nset grid xtics ytics\n"
	      "set key outside right top vertical Left reverse noenhanced\n", f);
	fputs("plot ", f);
	for (int k = 0; k < nrows; k++)
		fprintf(f, "'mem%d.dat' using 1:2 with steps lw 1.5 title \"rank %d\", ", k, rows[k]);
	fprintf(f, "%.6g with lines lw 2 dt 2 lc rgb \"#D62728\" title \"capacity %.1f GiB\"\n", cap, cap);
}

int plot_memory(const struct plot_memory_in *in, const char *path, char *err)
{
	int svg = plot_format(path, err);
	if (svg < 0) return -1;
	int panels = in->panels ? in->panels : PLOT_MEM_BOTH;
	if (!in->tl || !in->static_bytes) panels &= ~PLOT_MEM_TIME;
	if (in->nbars < 1) panels &= ~PLOT_MEM_BREAKDOWN;
	if (in->nbars > PLOT_MEM_MAX_BARS) return errf(err, "plot: more than %d memory bars", PLOT_MEM_MAX_BARS);
	if (!panels) return errf(err, "plot: no memory data to draw");
	struct gp g;
	int rc = -1, nrows = 0;
	int *rows = in->tl ? malloc((size_t)(in->tl->nranks > 0 ? in->tl->nranks : 1) * sizeof(int)) : NULL;
	if (in->tl && !rows) return errf(err, "plot: out of memory");
	if (gp_open(&g, err)) goto done;
	if ((panels & PLOT_MEM_BREAKDOWN) && write_bars(&g, in, err)) goto done;
	if ((panels & PLOT_MEM_TIME) && write_time(&g, in, rows, &nrows, err)) goto done;
	FILE *f = gp_file(&g, "plot.gp", err);
	if (!f) goto done;
	int both = panels == PLOT_MEM_BOTH;
	gp_terminal(f, svg, both ? 1600 : 1100, 560);
	fputs("set termoption noenhanced\n", f);
	if (both) {
		fputs("set multiplot layout 1,2 title ", f);
		esc_gnuplot(f, in->title ? in->title : "memory");
		fputs(" noenhanced\n", f);
	}
	if (panels & PLOT_MEM_BREAKDOWN) script_bars(f, in);
	if (panels & PLOT_MEM_TIME) {
		if (panels & PLOT_MEM_BREAKDOWN) fputs("unset xtics\n", f);
		script_time(f, in, rows, nrows);
	}
	if (both) fputs("unset multiplot\n", f);
	if (close_checked(f, &g, err)) goto done;
	rc = gp_run(&g, path, err);
done:
	gp_close(&g);
	free(rows);
	return rc;
}

/* x labels wrapped at spaces into lines of at most `width` characters (a newline between
 * lines, written through esc_gnuplot); returns the most lines a label took */
static int write_cmp_xtics(FILE *f, const struct plot_cmp_plan *plans, int n, int width)
{
	char wrapped[PLOT_CMP_MAX][sizeof(plans[0].label)];
	const char *labels[PLOT_CMP_MAX];
	int most = 1;
	for (int i = 0; i < n; i++) {
		char *o = wrapped[i];   /* never longer than the label: runs of spaces become one byte */
		int lines = 1, col = 0;
		for (const char *w = plans[i].label; *w;) {
			size_t len = strcspn(w, " ");
			if (col && col + 1 + (int)len > width) { *o++ = '\n'; lines++; col = 0; }
			else if (col) { *o++ = ' '; col++; }
			memcpy(o, w, len);
			o += len;
			col += (int)len;
			w += len;
			while (*w == ' ') w++;
		}
		*o = 0;
		labels[i] = wrapped[i];
		if (lines > most) most = lines;
	}
	write_xtics(f, labels, n, " font \",9\"");
	return most;
}

int plot_compare(const struct plot_cmp_plan *plans, int n, const char *const *part_names,
		 const char *title, const char *path, char *err)
{
	int svg = plot_format(path, err);
	if (svg < 0) return -1;
	if (n < 1 || n > PLOT_CMP_MAX) return errf(err, "plot: compare takes 1 to %d plans, not %d", PLOT_CMP_MAX, n);
	struct gp g;
	int rc = -1;
	if (gp_open(&g, err)) goto done;
	FILE *f = gp_file(&g, "plans.dat", err);
	if (!f) goto done;
	double top_mem = 0;
	int same_cap = 1;
	for (int i = 0; i < n; i++) {
		fprintf(f, "%d", i);
		for (int k = 0; k < PLOT_CMP_PARTS; k++) fprintf(f, " %.9g", plans[i].part_s[k]);
		fprintf(f, " %.6g %.6g\n", plans[i].peak_bytes / GIB, plans[i].capacity_bytes / GIB);
		top_mem = fmax(top_mem, fmax(plans[i].peak_bytes, plans[i].capacity_bytes) / GIB);
		same_cap &= plans[i].capacity_bytes == plans[0].capacity_bytes;
	}
	if (close_checked(f, &g, err) || !(f = gp_file(&g, "plot.gp", err))) goto done;
	/* each half of a 1600-px chart keeps about 540 px for its bars once the y label and the
	 * key outside it are drawn, so a label gets 540/n px, at some 8 px per character of the
	 * 9-point font (five plans: 13 characters a line) */
	int width = 540 / (8 * n);
	if (width < 8) width = 8;
	gp_terminal(f, svg, 1600, 640);
	fputs("set termoption noenhanced\n", f);
	int lines = write_cmp_xtics(f, plans, n, width);
	fputs("set multiplot layout 1,2 title ", f);
	esc_gnuplot(f, title ? title : "plans compared");
	fprintf(f, " noenhanced\nset style data histograms\nset style histogram rowstacked\n"
		   "set style fill solid 1.0 border rgb \"#202020\"\nset boxwidth 0.6\nset grid ytics\n"
		   "set key outside right top vertical Left reverse noenhanced\nset bmargin %d\n", lines + 2);
	fprintf(f, "set title \"step time by part\"\nset ylabel \"seconds per step\"\nset xrange [-0.6:%d.6]\nset yrange [0:*]\n", n - 1);
	fprintf(f, "plot 'plans.dat' using 2 title \"%s\" lc rgb \"%s\"", part_names[0], part_colors[0]);
	for (int k = 1; k < PLOT_CMP_PARTS; k++)
		fprintf(f, ", '' using %d title \"%s\" lc rgb \"%s\"", k + 2, part_names[k], part_colors[k]);
	fprintf(f, "\nset title \"peak memory per GPU\"\nset ylabel \"GiB (2^30 B)\"\nset yrange [0:%.6g]\n", top_mem * 1.12);
	/* the capacity of each plan as a dash across its own bar */
	fprintf(f, "plot 'plans.dat' using %d title \"peak\" lc rgb \"#4C72B0\", "
		   "'' using 0:%d:(0.4) with xerrorbars pt -1 lw 2 lc rgb \"#D62728\" title \"",
		PLOT_CMP_PARTS + 2, PLOT_CMP_PARTS + 3);
	if (same_cap) fprintf(f, "capacity %.1f GiB\"\nunset multiplot\n", plans[0].capacity_bytes / GIB);
	else fputs("capacity of each plan\"\nunset multiplot\n", f);
	if (close_checked(f, &g, err)) goto done;
	rc = gp_run(&g, path, err);
done:
	gp_close(&g);
	return rc;
}
