/* gnuplot — temporary directory, script run, chart check and install, clean-up. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "reports/gnuplot.h"
#include "sim/outfile.h"
#include "sim/util.h"

int gp_open(struct gp *g, char *err)
{
	memset(g, 0, sizeof(*g));
	const char *tmp = getenv("TMPDIR");
	snprintf(g->dir, sizeof(g->dir), "%s/scaleplan-plot-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(g->dir)) {
		g->dir[0] = 0;
		return errf(err, "plot: cannot create a temporary directory: %s", strerror(errno));
	}
	return 0;
}

void gp_path(const struct gp *g, const char *name, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", g->dir, name);
}

FILE *gp_file(struct gp *g, const char *name, char *err)
{
	char path[128];
	if (g->nfiles == GP_MAX_FILES || strlen(name) >= sizeof(g->names[0])) {
		errf(err, "plot: too many temporary files");
		return NULL;
	}
	gp_path(g, name, path, sizeof(path));
	FILE *f = fopen(path, "w");
	if (!f) {
		errf(err, "plot: %s: %s", path, strerror(errno));
		return NULL;
	}
	snprintf(g->names[g->nfiles++], sizeof(g->names[0]), "%s", name);
	return f;
}

int gp_fclose(struct gp *g, FILE *f, char *err)
{
	/* after a failed write glibc keeps the unwritten bytes, so this flush fails again and
	 * sets errno to the reason */
	int e = fflush(f) ? errno : 0, bad = ferror(f);
	if (fclose(f) && !e) e = errno;
	if (bad || e) return errf(err, "plot: temporary file in %s: %s", g->dir, strerror(e ? e : EIO));
	return 0;
}

void gp_close(struct gp *g)
{
	char path[128];
	if (!g->dir[0]) return;
	for (int i = 0; i < g->nfiles; i++) {
		gp_path(g, g->names[i], path, sizeof(path));
		unlink(path);
	}
	static const char *const theirs[] = {"gnuplot.err", "chart.svg", "chart.png"};
	for (size_t i = 0; i < sizeof(theirs) / sizeof(theirs[0]); i++) {
		gp_path(g, theirs[i], path, sizeof(path));
		unlink(path);
	}
	rmdir(g->dir);
	g->dir[0] = 0;
	g->nfiles = 0;
}

/* The chart gnuplot writes in the directory, by format. */
static const char *chart_name(int svg)
{
	return svg ? "chart.svg" : "chart.png";
}

/* gnuplot exits 0 even when its output file could not be written whole (a full disk): an SVG
 * must end with its closing tag, a PNG with its IEND chunk. */
static int chart_complete(const char *path, int svg)
{
	static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
	unsigned char tail[64];
	FILE *f = fopen(path, "rb");
	if (!f) return 0;
	if (fseek(f, -(long)sizeof(tail), SEEK_END)) rewind(f); /* a file shorter than the tail */
	size_t n = fread(tail, 1, sizeof(tail), f);
	fclose(f);
	if (!svg) return n >= sizeof(iend) && !memcmp(tail + n - sizeof(iend), iend, sizeof(iend));
	while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == ' ' || tail[n - 1] == '\r')) n--;
	return n >= 6 && !memcmp(tail + n - 6, "</svg>", 6);
}

static int run_child(struct gp *g, char *err)
{
	char errpath[128];
	gp_path(g, "gnuplot.err", errpath, sizeof(errpath));
	pid_t pid = fork();
	if (pid < 0) return errf(err, "plot: fork: %s", strerror(errno));
	if (pid == 0) {
		FILE *e = freopen(errpath, "w", stderr);
		(void)e;
		if (chdir(g->dir)) _exit(126);
		execlp("gnuplot", "gnuplot", "plot.gp", (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) return errf(err, "plot: waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return errf(err, "plot: gnuplot not found");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char line[160] = "";
		FILE *e = fopen(errpath, "r");
		if (e) {
			while (fgets(line, sizeof(line), e) && strspn(line, " \t\n^") == strlen(line)) {}
			fclose(e);
		}
		line[strcspn(line, "\n")] = 0;
		return errf(err, "plot: gnuplot failed (status %d): %s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, line);
	}
	return 0;
}

int gp_run(struct gp *g, const char *out, char *err)
{
	char chart[128];
	size_t n = strlen(out);
	int svg = n > 4 && !strcmp(out + n - 4, ".svg");
	gp_path(g, chart_name(svg), chart, sizeof(chart));
	if (run_child(g, err)) return -1;
	struct stat st;
	if (stat(chart, &st) || st.st_size == 0) return errf(err, "plot: gnuplot wrote no chart in %s (is that disk full?)", g->dir);
	if (!chart_complete(chart, svg))
		return errf(err, "plot: gnuplot's chart in %s is cut short (is that disk full?)", g->dir);
	struct outfile o;
	if (outfile_open(&o, out, err)) return -1;
	if (outfile_copy(&o, chart, err)) {
		outfile_abort(&o);
		return -1;
	}
	return outfile_commit(&o, err);
}

void gp_terminal(FILE *f, int svg, int width, int height)
{
	if (svg) fprintf(f, "set terminal svg size %d,%d dynamic font \"DejaVu Sans,10\"\n", width, height);
	else fprintf(f, "set terminal pngcairo size %d,%d font \"DejaVu Sans,10\"\n", width, height);
	fprintf(f, "set output '%s'\n", chart_name(svg));
}
