/* args — plan flags shared by every verb that takes a plan (sim, plot, tune, run). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "sim/framework.h"
#include "sim/util.h"

/* Appends s to out (cap bytes, NUL-terminated) with control characters written as escapes
 * (\n, \r, \t, \xNN): a user string in a message can neither break it into two lines nor
 * send a terminal escape sequence. */
static size_t put_escaped(char *out, size_t n, size_t cap, const char *s)
{
	for (; *s && n + 5 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '\n') n += (size_t)snprintf(out + n, cap - n, "\\n");
		else if (c == '\r') n += (size_t)snprintf(out + n, cap - n, "\\r");
		else if (c == '\t') n += (size_t)snprintf(out + n, cap - n, "\\t");
		else if (c < 0x20 || c == 0x7f) n += (size_t)snprintf(out + n, cap - n, "\\x%02x", c);
		else out[n++] = (char)c;
	}
	out[n] = 0;
	return n;
}

void cli_error(const char *verb, const char *fmt, ...)
{
	char msg[1024], line[4200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	size_t n = put_escaped(line, 0, sizeof(line) - 1, "scaleplan");
	if (verb && *verb) {
		n = put_escaped(line, n, sizeof(line) - 1, " ");
		n = put_escaped(line, n, sizeof(line) - 1, verb);
	}
	n = put_escaped(line, n, sizeof(line) - 1, ": ");
	n = put_escaped(line, n, sizeof(line) - 1, msg);
	line[n++] = '\n';
	/* one write(2) per message: lines of several ranks sharing a terminal do not interleave */
	fflush(stderr);
	for (size_t off = 0; off < n;) {
		ssize_t k = write(2, line + off, n - off);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) break;
		off += (size_t)k;
	}
}

int cli_plan_flag(int argc, char **argv, int *i, struct plan *p, char *err)
{
	const char *a = argv[*i];
	if (strncmp(a, "--", 2) != 0)
		return 0;
	if (!strcmp(a, "--sp")) return plan_set(p, "sp", "1", err) ? -1 : 1;
	if (!strcmp(a, "--no-sp")) return plan_set(p, "sp", "0", err) ? -1 : 1;
	char key[64];
	const char *eq = strchr(a, '=');
	size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
	if (n >= sizeof(key)) return 0;
	memcpy(key, a + 2, n);
	key[n] = 0;
	for (char *c = key; *c; c++) if (*c == '-') *c = '_';
	const char *val;
	if (!strcmp(key, "plan")) {
		val = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
		if (!val) return errf(err, "--plan: missing file name");
		char *text = read_file(val, 1 << 20, err);
		if (!text) return -1;
		int rc = plan_from_json(text, p, err);
		free(text);
		return rc ? -1 : 1;
	}
	struct plan probe = *p;
	char e2[ERR_LEN];
	/* is it a plan key at all? (unknown keys are not ours; the verb decides) */
	if (plan_set(&probe, key, "1", e2) && strstr(e2, "unknown key"))
		return 0;
	val = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
	if (!val) return errf(err, "--%s: missing value", a + 2);
	return plan_set(p, key, val, err) ? -1 : 1;
}

int cli_load_plan(const char *verb, struct plan *p, struct model *m, struct hw *h)
{
	char err[ERR_LEN];
	if (!p->model[0]) { cli_error(verb, "--model is required"); return EXIT_BADINPUT; }
	if (!p->gpu[0]) { cli_error(verb, "--gpu is required"); return EXIT_BADINPUT; }
	int split_given = p->nstage_layers > 0;
	if (p->framework[0]) { /* its documented defaults fill the keys the user did not give */
		struct framework fw;
		if (framework_load(p->framework, &fw, err) || framework_apply(&fw, p, 0, NULL, 0, NULL, err) < 0) {
			cli_error(verb, "%s", err);
			return EXIT_BADINPUT;
		}
	}
	if (model_load(p->model, m, err) || hw_load(p->gpu, h, err) ||
	    plan_prepare(p, m, h, err)) {
		cli_error(verb, "%s", err);
		return EXIT_BADINPUT;
	}
	if (!split_given && plan_validate_default_split(p, m, err)) {
		cli_error(verb, "%s", err);
		return EXIT_BADINPUT;
	}
	return EXIT_OK;
}
