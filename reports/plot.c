/* plot — bubble diagrams through gnuplot (reference/ecosystem.md §5: boxxyerror rectangles
 * with explicit x and y bounds). One data file per box category so each gets a legend entry;
 * touching boxes of one category merge when they are too narrow to show a border or label,
 * which keeps 64 ranks x 512 micro-batches small in SVG. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "reports/escape.h"
#include "reports/gnuplot.h"
#include "reports/plot.h"
#include "sim/util.h"

/* odd model chunks (interleaved, V schedules) and DualPipe's reverse direction get a lighter
 * shade of their kind's colour, as the published diagrams do [PB PP figures; DP-README] */
enum cat { CAT_F, CAT_B, CAT_W, CAT_BW, CAT_F1, CAT_B1, CAT_W1, CAT_BW1, CAT_COMM, CAT_OPT, CAT_COUNT };

static const char *const cat_file[CAT_COUNT] = {"f.dat", "b.dat", "w.dat", "bw.dat", "f1.dat", "b1.dat",
						"w1.dat", "bw1.dat", "comm.dat", "opt.dat"};
static const char *const cat_title[CAT_COUNT] = {
	"F (forward)", "B (input grad)", "W (weight grad)", "B+W (fused backward)", "F, odd chunk",
	"B, odd chunk", "W, odd chunk", "B+W, odd chunk", "communication", "optimizer"};
static const char *const cat_color[CAT_COUNT] = {"#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8FAADC",
						 "#F2B48A", "#95D0A5", "#E3999B", "#8172B3", "#937860"};

struct box {
	double x0, x1, y0, y1;
	int open;
};

struct chart {
	struct gp g;
	FILE *f[CAT_COUNT];
	FILE *labels;
	size_t count[CAT_COUNT];
	size_t nlabels;
	struct box *pending;    /* (row, category) -> box being merged */
	int *row_of;            /* rank -> row, -1 when not drawn */
	int nrows;
	double t0, t1;
	double px_per_unit;
	int dense;              /* boxes too narrow for borders: merge neighbours */
};

int plot_pick_rows(int nranks, int max_rows, int sample_rows, int *rows)
{
	if (max_rows <= 0) max_rows = 32;
	if (sample_rows <= 1) sample_rows = 16;
	if (nranks <= max_rows) {
		for (int r = 0; r < nranks; r++) rows[r] = r;
		return nranks;
	}
	int n = sample_rows < nranks ? sample_rows : nranks;
	for (int k = 0; k < n; k++)
		rows[k] = (int)(((long)k * (nranks - 1) + (n - 1) / 2) / (n - 1));
	return n;
}

static int category(const struct tl_event *e)
{
	int odd = (e->chunk % 2) ? CAT_F1 - CAT_F : 0;
	switch (e->kind) {
	case TL_F: return CAT_F + odd;
	case TL_B: return CAT_B + odd;
	case TL_W: return CAT_W + odd;
	case TL_BW: return CAT_BW + odd;
	case TL_OPT: return CAT_OPT;
	default: return CAT_COMM;
	}
}

static void flush_box(struct chart *c, int cat, struct box *b)
{
	if (!b->open) return;
	fprintf(c->f[cat], "%.9g %.9g %.9g %.9g %.9g %.9g\n", (b->x0 + b->x1) / 2, (b->y0 + b->y1) / 2,
		b->x0, b->x1, b->y0, b->y1);
	c->count[cat]++;
	b->open = 0;
}

/* y extent of an event inside its row: compute on top, communication in a strip below;
 * the halves of an overlapped F&B pair split the compute box */
static void extent(const struct tl_event *e, int row, double *y0, double *y1)
{
	if (e->stream != TL_COMPUTE) {
		*y0 = row + 0.22;
		*y1 = row + 0.42;
	} else if (e->overlap) {
		*y0 = e->kind == TL_F ? row - 0.42 : row - 0.11;
		*y1 = e->kind == TL_F ? row - 0.11 : row + 0.18;
	} else {
		*y0 = row - 0.42;
		*y1 = row + 0.18;
	}
}

static void add_event(struct chart *c, const struct tl_event *e)
{
	int row = c->row_of[e->rank];
	if (row < 0 || !(e->end > e->start)) return;
	int cat = category(e);
	double y0, y1;
	extent(e, row, &y0, &y1);
	char text[16] = "";
	if (e->mb >= 0 && e->stream == TL_COMPUTE && e->kind != TL_OPT) {
		int len = snprintf(text, sizeof(text), "%d", e->mb);
		if ((e->end - e->start) * c->px_per_unit < 6.5 * len + 4 || (y1 - y0) < 0.25) text[0] = 0;
	}
	struct box *b = &c->pending[row * CAT_COUNT + cat];
	double gap_px = (e->start - b->x1) * c->px_per_unit;
	if (b->open && c->dense && !text[0] && b->y0 == y0 && b->y1 == y1 && gap_px >= -0.5 && gap_px < 0.5) {
		b->x1 = e->end;
		return;
	}
	flush_box(c, cat, b);
	*b = (struct box){e->start, e->end, y0, y1, 1};
	if (text[0]) {
		/* white on the dark shades, near-black on the light ones (rgb as an integer) */
		int dark = cat < CAT_F1 || cat >= CAT_COMM;
		fprintf(c->labels, "%.9g %.9g %s %d\n", (e->start + e->end) / 2, (y0 + y1) / 2, text,
			dark ? 0xFFFFFF : 0x202020);
		c->nlabels++;
	}
}

static int open_files(struct chart *c, char *err)
{
	if (gp_open(&c->g, err)) return -1;
	for (int k = 0; k < CAT_COUNT; k++)
		if (!(c->f[k] = gp_file(&c->g, cat_file[k], err))) return -1;
	if (!(c->labels = gp_file(&c->g, "labels.dat", err))) return -1;
	return 0;
}

/* 0, or -1 with the first failure's reason in err (NULL: closing after another failure) */
static int close_files(struct chart *c, char *err)
{
	int bad = 0;
	for (int k = 0; k < CAT_COUNT; k++)
		if (c->f[k]) { bad |= gp_fclose(&c->g, c->f[k], bad ? NULL : err); c->f[k] = NULL; }
	if (c->labels) { bad |= gp_fclose(&c->g, c->labels, bad ? NULL : err); c->labels = NULL; }
	return bad;
}

static void write_ytics(FILE *f, const int *rows, int n)
{
	fputs("set ytics (", f);
	for (int k = 0; k < n; k++) fprintf(f, "%s\"rank %d\" %d", k ? ", " : "", rows[k], k);
	fputs(") nomirror\n", f);
}

/* "TEXT" followed by one more line, as a gnuplot string expression */
static void put_title(FILE *f, const char *text, const char *more)
{
	char *t = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&t, &len);
	if (m) {
		fprintf(m, "%s%s%s", text, more[0] ? "\n" : "", more);
		fclose(m);
	}
	esc_gnuplot(f, t ? t : text);
	free(t);
}

static void write_script(FILE *f, const struct chart *c, int svg, int width, const struct plot_bubble_opts *o,
			 const int *rows, int nranks)
{
	int height = 150 + c->nrows * (c->nrows > 16 ? 22 : 34);
	char more[96] = "", unit[64] = "time";
	gp_terminal(f, svg, width, height);
	if (c->nrows < nranks)
		snprintf(more, sizeof(more), "showing %d of %d ranks (evenly sampled, first and last included)", c->nrows, nranks);
	fputs("set title ", f);
	put_title(f, o->title ? o->title : "pipeline timeline", more);
	fputs(" noenhanced\n", f);
	if (o->time_unit) snprintf(unit, sizeof(unit), "time (%s)", o->time_unit);
	fputs("set xlabel ", f);
	esc_gnuplot(f, unit);
	fputs(" noenhanced\n", f);
	fprintf(f, "set xrange [%.9g:%.9g]\nset yrange [%d.6:-0.6]\n", c->t0, c->t1, c->nrows - 1);
	write_ytics(f, rows, c->nrows);
	fputs("set key outside right top vertical Left reverse noenhanced\nset grid xtics\n", f);
	fprintf(f, "set style fill solid 1.0 %s\n", c->dense ? "noborder" : "border lc rgb \"#202020\"");
	/* idle time: a grey band behind every row, visible wherever no box covers it */
	for (int k = 0; k < c->nrows; k++)
		fprintf(f, "set object %d rectangle from %.9g,%g to %.9g,%g fc rgb \"#E4E4E4\" fs solid 1.0 noborder behind\n",
			k + 1, c->t0, k - 0.42, c->t1, k + 0.18);
	fputs("plot keyentry with boxes fc rgb \"#E4E4E4\" title \"idle\"", f);
	for (int k = 0; k < CAT_COUNT; k++)
		if (c->count[k])
			fprintf(f, ", \\\n  '%s' using 1:2:3:4:5:6 with boxxyerror fc rgb \"%s\" title \"%s\"",
				cat_file[k], cat_color[k], cat_title[k]);
	if (c->nlabels)
		fputs(", \\\n  'labels.dat' using 1:2:3:4 with labels font \",8\" tc rgb variable notitle", f);
	fputs("\n", f);
}

static int check_output(const char *path, int *svg, char *err)
{
	size_t n = strlen(path);
	if (n > 4 && !strcmp(path + n - 4, ".png")) *svg = 0;
	else if (n > 4 && !strcmp(path + n - 4, ".svg")) *svg = 1;
	else return errf(err, "plot: output '%s' must end in .png or .svg", path);
	return 0;
}

int plot_format(const char *path, char *err)
{
	int svg = 0;
	return check_output(path, &svg, err) ? -1 : svg;
}

static void chart_scale(struct chart *c, const struct timeline *tl, int width)
{
	c->t0 = 0;
	c->t1 = timeline_end(tl);
	if (!(c->t1 > c->t0)) c->t1 = c->t0 + 1;
	c->px_per_unit = (width - 330) / (c->t1 - c->t0);
	size_t shown = 0;
	for (size_t i = 0; i < tl->n; i++)
		shown += tl->ev[i].rank >= 0 && tl->ev[i].rank < tl->nranks && tl->ev[i].stream == TL_COMPUTE;
	/* average compute box narrower than ~6 px: borders would turn the rows black */
	double per_row = tl->nranks ? (double)shown / tl->nranks : 0;
	c->dense = per_row > 0 && (width - 330) / per_row < 6;
}

int plot_bubble(const struct timeline *tl, const char *path, const struct plot_bubble_opts *o,
		char *err)
{
	struct plot_bubble_opts def = {0};
	if (!o) o = &def;
	int svg = 0, rc = -1;
	if (check_output(path, &svg, err)) return -1;
	if (tl->nranks < 1) return errf(err, "plot: timeline has no ranks");
	int width = o->width_px > 400 ? o->width_px : 1400;
	struct chart c;
	memset(&c, 0, sizeof(c));
	int *rows = malloc((size_t)tl->nranks * sizeof(int));
	c.row_of = malloc((size_t)tl->nranks * sizeof(int));
	if (!rows || !c.row_of) { errf(err, "plot: out of memory"); goto done; }
	c.nrows = plot_pick_rows(tl->nranks, o->max_rows, o->sample_rows, rows);
	for (int r = 0; r < tl->nranks; r++) c.row_of[r] = -1;
	for (int k = 0; k < c.nrows; k++) c.row_of[rows[k]] = k;
	c.pending = calloc((size_t)c.nrows * CAT_COUNT, sizeof(*c.pending));
	if (!c.pending) { errf(err, "plot: out of memory"); goto done; }
	chart_scale(&c, tl, width);
	if (open_files(&c, err)) goto done;
	for (size_t i = 0; i < tl->n; i++)
		if (tl->ev[i].rank >= 0 && tl->ev[i].rank < tl->nranks) add_event(&c, &tl->ev[i]);
	for (int k = 0; k < c.nrows * CAT_COUNT; k++) flush_box(&c, k % CAT_COUNT, &c.pending[k]);
	FILE *f = gp_file(&c.g, "plot.gp", err);
	if (!f) goto done;
	write_script(f, &c, svg, width, o, rows, tl->nranks);
	if (gp_fclose(&c.g, f, err) || close_files(&c, err)) goto done;
	rc = gp_run(&c.g, path, err);
done:
	close_files(&c, NULL);
	gp_close(&c.g);
	free(c.pending);
	free(c.row_of);
	free(rows);
	return rc;
}
