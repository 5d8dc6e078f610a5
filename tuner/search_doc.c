/* search_doc — a tune as DIR/report.md and DIR/report.html: the inputs, the search counts, the
 * ranked table (the cells the text table prints), ties and why the winner wins, the winner's
 * sim flags and launch lines for every framework (tuner/export.h), and the pictures
 * (tuner/report.h) as PNG with the SVG linked. Both files say the same. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "reports/escape.h"
#include "tuner/export.h"
#include "tuner/report.h"
#include "tuner/search.h"
#include "tuner/search_impl.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/outfile.h"
#include "sim/util.h"


/* text: HTML-escaped (reports/escape.h) for the HTML file, as it is for Markdown */
static void put_text(FILE *f, const char *s, int html)
{
	if (html) esc_html(f, s);
	else fputs(s, f);
}

/* a user string (a model or GPU name, a caption): HTML-escaped in both files, since Markdown
 * renderers pass raw HTML through */
static void put_user(FILE *f, const char *s)
{
	esc_html(f, s);
}

/* preformatted text (NUL-terminated, len bytes): escaped in <pre> for HTML; in Markdown fenced
 * by more backquotes than the longest run inside it (CommonMark: a fence closes only on a run
 * at least as long), so a user string in it cannot end the block */
static void put_block(FILE *f, const char *text, size_t len, int html)
{
	size_t fence = 3, run = 0;
	for (size_t i = 0; i < len; i++) {
		run = text[i] == '`' ? run + 1 : 0;
		if (run + 1 > fence) fence = run + 1;
	}
	if (html) fputs("<pre>", f);
	else for (size_t i = 0; i <= fence; i++) fputc(i < fence ? '`' : '\n', f);
	if (html) esc_html(f, text);
	else fwrite(text, 1, len, f);
	if (!html && len && text[len - 1] != '\n') fputc('\n', f);
	if (html) fputs("</pre>\n", f);
	else for (size_t i = 0; i <= fence; i++) fputc(i < fence ? '`' : '\n', f);
}

static void heading(FILE *f, const char *title, int html)
{
	if (html) fprintf(f, "<h2>%s</h2>\n", title);
	else fprintf(f, "\n## %s\n\n", title);
}

static void table(const struct search_req *rq, const struct search_result *res, FILE *f, int html)
{
	char cells[SEARCH_NCOLS][SEARCH_CELL];
	fputs(html ? "<table>\n<tr>" : "|", f);
	for (int c = 0; c < SEARCH_NCOLS; c++) {
		fputs(html ? "<th>" : " ", f);
		put_text(f, search_columns[c], html);
		fputs(html ? "</th>" : " |", f);
	}
	fputs(html ? "</tr>\n" : "\n|", f);
	if (!html) { for (int c = 0; c < SEARCH_NCOLS; c++) fputs("---|", f); fputc('\n', f); }
	for (int i = 0; i < res->ntop; i++) {
		search_row_cells(rq, res, i, cells);
		fputs(html ? "<tr>" : "|", f);
		for (int c = 0; c < SEARCH_NCOLS; c++) {
			fputs(html ? "<td>" : " ", f);
			put_text(f, cells[c], html);
			fputs(html ? "</td>" : " |", f);
		}
		fputs(html ? "</tr>\n" : "\n", f);
	}
	if (html) fputs("</table>\n", f);
	fputs(html ? "<p>" : "\n", f);
	put_text(f, "tie = within the model's measured error of #1; order = rank orders that give this same plan; "
		    "overlap: R gradient reduction, G parameter gather, T TP collectives, B TP backward, P pipeline sends; "
		    "GiB = 2^30 B. Every figure is the analytical estimate, as scaleplan sim prints it.", html);
	fputs(html ? "</p>\n" : "\n", f);
}

/* The inputs: request, pinned dimensions, base plan switches. */
static void inputs(const struct search_req *rq, FILE *f, int html)
{
	const struct search_fix *x = &rq->fix;
	static const char *const ov_keys[OV_COUNT] = {"overlap_grad_reduce", "overlap_param_gather", "overlap_tp_comm",
						      "overlap_p2p", "overlap_tp_bwd"};
	struct { const char *k; int v; } pins[] = {{"dp", x->dp}, {"tp", x->tp}, {"pp", x->pp}, {"cp", x->cp},
		{"ep", x->ep}, {"vpp", x->vpp}, {"zero", x->zero}, {"sp", x->sp}, {"mbs", x->mbs},
		{"recompute_layers", x->recompute_layers}};
	const char *li = html ? "<li>" : "- ", *end = html ? "</li>\n" : "\n";
	heading(f, "Inputs", html);
	if (html) fputs("<ul>\n", f);
	fprintf(f, "%smodel ", li);
	put_user(f, rq->m->name);
	fprintf(f, " (%d layers), %d x ", rq->m->layers, rq->gpus);
	put_user(f, rq->h->name);
	fprintf(f, " (%.1f GiB each, %d per node)%s", rq->h->hbm_bytes / GIB, rq->h->gpus_per_node, end);
	fprintf(f, "%ssequence %d tokens, global batch %d sequences (%.2fM tokens), objective %s, top %d%s", li, rq->seq,
		rq->gbs, (double)rq->gbs * rq->seq / 1048576.0, objective_name(rq->objective), rq->top, end);
	fprintf(f, "%sprecision %s; the overlap switches are searched like the other knobs%s", li,
		precision_name(rq->base.precision), end);
	fprintf(f, "%spinned:", li);
	int any = 0;
	for (size_t i = 0; i < sizeof(pins) / sizeof(pins[0]); i++)
		if (pins[i].v >= 0) { fprintf(f, " %s=%d", pins[i].k, pins[i].v); any = 1; }
	for (int i = 0; i < OV_COUNT; i++)
		if (x->overlap[i] >= 0) { fprintf(f, " %s=%d", ov_keys[i], x->overlap[i]); any = 1; }
	if (x->recompute >= 0) { fprintf(f, " recompute=%s", recompute_name((enum recompute)x->recompute)); any = 1; }
	if (x->schedule >= 0) { fprintf(f, " schedule=%s", schedule_name((enum schedule)x->schedule)); any = 1; }
	if (x->order >= 0) { fprintf(f, " order=%s", search_order_name(x->order)); any = 1; }
	if (rq->max_pp) { fprintf(f, " max_pp=%d", rq->max_pp); any = 1; }
	fprintf(f, "%s%s", any ? "" : " nothing", end);
	if (html) fputs("</ul>\n", f);
}

static void counts(const struct search_result *res, FILE *f, int html)
{
	heading(f, "Search", html);
	fprintf(f, html ? "<p>" : "");
	fprintf(f, "Enumerated %ld plans in %.3f s (%.0f plans/s); priced %ld, %ld fit.", res->enumerated, res->seconds,
		res->plans_per_s, res->evaluated, res->feasible);
	fprintf(f, html ? "</p>\n<ul>\n" : "\n\nRejected:\n\n");
	for (int i = 0; i < REJ_COUNT; i++)
		if (res->rejected[i])
			fprintf(f, html ? "<li>%ld: %s</li>\n" : "- %ld: %s\n", res->rejected[i], search_reason_name((enum reject_reason)i));
	if (html) fputs("</ul>\n", f);
}

/* ties, why #1 wins and the shapes, as the text output prints them */
static void why(const struct search_req *rq, const struct search_result *res, FILE *f, int html)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m) return;
	search_print_ties(res, m);
	search_explain(rq, res, m);
	search_print_shapes(rq, res, m);
	fclose(m);
	heading(f, "Why the winner wins", html);
	put_block(f, text[0] == '\n' ? text + 1 : text, text[0] == '\n' ? len - 1 : len, html);
	free(text);
}

/* #1 as sim flags and as every framework's launch settings */
static void launch(const struct search_req *rq, const struct search_result *res, const struct search_out *o, FILE *f,
		   int html)
{
	static const enum export_format fmts[] = {EXPORT_MEGATRON, EXPORT_TORCHTITAN, EXPORT_DEEPSPEED, EXPORT_NANOTRON};
	char err[ERR_LEN];
	struct plan p;
	if (search_cand_plan(rq, &res->top[0], &p, err)) return;
	heading(f, "Launching #1", html);
	char *flags = plan_to_flags(&p);
	if (flags) {
		fputs(html ? "<p>The same figures from the simulator:</p>\n" : "The same figures from the simulator:\n\n", f);
		char line[4096];
		snprintf(line, sizeof(line), "scaleplan sim %s\n", flags);
		put_block(f, line, strlen(line), html);
	}
	free(flags);
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		if (!m) return;
		int notes = export_plan(&p, rq->m, fmts[i], m, err);
		fclose(m);
		if (notes >= 0) {
			fprintf(f, html ? "<h3>%s</h3>\n<p>" : "### %s\n\n", export_format_name(fmts[i]));
			if (o && o->winner_id) fprintf(f, "scaleplan export --id %ld --format %s", o->winner_id, export_format_name(fmts[i]));
			else fprintf(f, "scaleplan export --format %s with the sim flags above", export_format_name(fmts[i]));
			fprintf(f, notes ? "; %d plan feature%s this framework cannot express, named in the comments" : "", notes,
				notes > 1 ? "s" : "");
			fputs(html ? ":</p>\n" : ":\n\n", f);
			put_block(f, text, len, html);
		}
		free(text);
	}
}

static void pictures(const struct report_pics *pics, FILE *f, int html)
{
	if (!pics->n) return;
	heading(f, "Pictures", html);
	for (int i = 0; i < pics->n; i++) {
		const struct report_pic *p = &pics->pic[i];
		if (html) {
			fprintf(f, "<figure><a href=\"%s\"><img src=\"%s\" alt=\"%s\" style=\"max-width:100%%\"></a><figcaption>",
				p->svg, p->png, p->png);
			put_user(f, p->caption);
			fprintf(f, " (<a href=\"%s\">SVG</a>)</figcaption></figure>\n", p->svg);
		} else {
			fprintf(f, "![%s](%s)\n\n", p->png, p->png);
			put_user(f, p->caption);
			fprintf(f, " ([SVG](%s))\n\n", p->svg);
		}
	}
}

static int report_file(const struct search_req *rq, const struct search_result *res, const struct search_out *o,
		       const struct report_pics *pics, const char *path, int html, char *err)
{
	struct outfile out;
	char e2[ERR_LEN];
	if (outfile_open(&out, path, e2)) return errf(err, "report: %s", e2);
	FILE *f = outfile_text(&out);
	if (!f) {
		outfile_abort(&out);
		return errf(err, "report: out of memory");
	}
	fputs(html ? "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>scaleplan tune</title>\n"
		     "<style>body{font-family:sans-serif} table{border-collapse:collapse} td,th{border:1px solid #aaa;"
		     "padding:2px 6px;text-align:right} pre{background:#f4f4f4;padding:6px;overflow-x:auto}</style>\n"
		     "</head><body>\n<h1>scaleplan tune: " : "# scaleplan tune: ", f);
	put_user(f, rq->m->name);
	fprintf(f, html ? " on %d &times; " : " on %d x ", rq->gpus);
	put_user(f, rq->h->name);
	fputs(html ? "</h1>\n" : "\n", f);
	inputs(rq, f, html);
	counts(res, f, html);
	heading(f, "Ranked plans", html);
	if (res->ntop) table(rq, res, f, html);
	else fputs(html ? "<p>No plan fits.</p>\n" : "No plan fits.\n", f);
	fputs(html ? "<p>" : "\n", f);
	put_text(f, search_engine_note, html);
	fputs(html ? ".</p>\n" : ".\n", f);
	if (res->ntop) {
		why(rq, res, f, html);
		launch(rq, res, o, f, html);
	}
	pictures(pics, f, html);
	if (o && o->tune_id) fprintf(f, html ? "<p>Recorded as tune %ld.</p>\n" : "\nRecorded as tune %ld.\n", o->tune_id);
	if (html) fputs("</body></html>\n", f);
	if (outfile_commit(&out, e2)) return errf(err, "report: %s", e2);
	return 0;
}

int search_write_report(const struct search_req *rq, const struct search_result *res, const struct search_out *o,
			const char *dir, char *err)
{
	char path[1024];
	struct report_pics pics;
	if (mkdir(dir, 0777) && errno != EEXIST) return errf(err, "report: %s: %s", dir, strerror(errno));
	int rc = report_pictures(rq, res, dir, &pics, err);
	/* the text is written even when a picture failed; the failure is still reported */
	char err2[ERR_LEN];
	snprintf(path, sizeof(path), "%s/report.md", dir);
	if (report_file(rq, res, o, &pics, path, 0, err2)) return errf(err, "%s", err2);
	snprintf(path, sizeof(path), "%s/report.html", dir);
	if (report_file(rq, res, o, &pics, path, 1, err2)) return errf(err, "%s", err2);
	return rc;
}
