/* gnuplot — temporary directory, script run and clean-up shared by the chart writers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "reports/gnuplot.h"
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

void gp_close(struct gp *g)
{
	char path[128];
	if (!g->dir[0]) return;
	for (int i = 0; i < g->nfiles; i++) {
		gp_path(g, g->names[i], path, sizeof(path));
		unlink(path);
	}
	gp_path(g, "gnuplot.err", path, sizeof(path));
	unlink(path);
	rmdir(g->dir);
	g->dir[0] = 0;
	g->nfiles = 0;
}

int gp_run(struct gp *g, const char *out, char *err)
{
	char script[128], errpath[128];
	gp_path(g, "plot.gp", script, sizeof(script));
	gp_path(g, "gnuplot.err", errpath, sizeof(errpath));
	pid_t pid = fork();
	if (pid < 0) return errf(err, "plot: fork: %s", strerror(errno));
	if (pid == 0) {
		FILE *e = freopen(errpath, "w", stderr);
		(void)e;
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
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
	struct stat st;
	if (stat(out, &st) || st.st_size == 0) return errf(err, "plot: gnuplot wrote no %s", out);
	return 0;
}

void gp_terminal(FILE *f, const char *out, int svg, int width, int height)
{
	if (svg) fprintf(f, "set terminal svg size %d,%d dynamic font \"DejaVu Sans,10\"\n", width, height);
	else fprintf(f, "set terminal pngcairo size %d,%d font \"DejaVu Sans,10\"\n", width, height);
	fprintf(f, "set output '%s'\n", out);
}

void gp_put_string(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\') fputc('\\', f);
		if (*s == '\n') { fputs("\\n", f); continue; }
		fputc(*s, f);
	}
}
