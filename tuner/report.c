/* report — simulate the finalists once each and draw their pictures, PNG and SVG. */
#include <stdio.h>
#include <string.h>
#include "reports/plan_charts.h"
#include "sim/estimate.h"
#include "sim/event.h"
#include "sim/hw.h"
#include "sim/util.h"
#include "tuner/report.h"

#define BUBBLES 3
#define COMPARED 5

enum chart { CH_BUBBLE, CH_MEMORY, CH_COMPARE };

struct chart_in {
	enum chart kind;
	const struct plan *p;
	const struct estimate *e;
	const struct event_sim *s;
	const struct plot_cmp_plan *cmp;
	int ncmp;
};

static int draw(const struct chart_in *c, const char *path, char *err)
{
	switch (c->kind) {
	case CH_BUBBLE: return chart_bubble(c->p, c->s, path, 0, err);
	case CH_MEMORY: return chart_memory(c->p, c->e, c->s, PLOT_MEM_BOTH, path, err);
	default: return chart_compare(c->cmp, c->ncmp, "top plans compared (analytical estimate, the table's figures)", path, err);
	}
}

/* Draws one chart as base.png and base.svg and lists it; 0, or -1 with err (nothing listed). */
static int add_chart(struct report_pics *out, const char *dir, const char *base, const struct chart_in *c,
		     const char *caption, char *err)
{
	char path[1200];
	if (out->n == REPORT_MAX_PICS) return errf(err, "report: more than %d pictures", REPORT_MAX_PICS);
	struct report_pic *pic = &out->pic[out->n];
	snprintf(pic->png, sizeof(pic->png), "%s.png", base);
	snprintf(pic->svg, sizeof(pic->svg), "%s.svg", base);
	snprintf(pic->caption, sizeof(pic->caption), "%s", caption);
	snprintf(path, sizeof(path), "%s/%s", dir, pic->png);
	if (draw(c, path, err)) return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, pic->svg);
	if (draw(c, path, err)) return -1;
	out->n++;
	return 0;
}

int report_pictures(const struct search_req *rq, const struct search_result *res, const char *dir,
		    struct report_pics *out, char *err)
{
	struct plot_cmp_plan cmp[COMPARED];
	char base[32], desc[128], caption[256];
	int ncmp = 0;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < res->ntop && i < COMPARED; i++) {
		struct plan p;
		struct estimate e;
		struct event_sim s;
		if (search_cand_plan(rq, &res->top[i], &p, err) || estimate_plan(rq->m, rq->h, &p, &e, err) ||
		    event_run(rq->m, rq->h, &p, &e, NULL, &s, err))
			return -1;
		plan_short(&p, desc, sizeof(desc));
		int rc = 0;
		if (i < BUBBLES) {
			struct chart_in c = {CH_BUBBLE, &p, &e, &s, NULL, 0};
			snprintf(base, sizeof(base), "bubble_%d", i + 1);
			snprintf(caption, sizeof(caption), "#%d %s: pipeline timeline (event engine), bubble fraction %.3f",
				 i + 1, desc, s.bubble_fraction);
			rc = add_chart(out, dir, base, &c, caption, err);
			if (!rc) {
				c.kind = CH_MEMORY;
				snprintf(base, sizeof(base), "memory_%d", i + 1);
				snprintf(caption, sizeof(caption), "#%d %s: memory per rank kind, peak %.1f GiB of %.1f GiB "
					 "(analytical estimate), and over one step (event engine)", i + 1, desc,
					 e.peak_mem_bytes / GIB, e.capacity_bytes / GIB);
				rc = add_chart(out, dir, base, &c, caption, err);
			}
		}
		char label[160];
		snprintf(label, sizeof(label), "#%d %s", i + 1, desc);
		chart_cmp_entry_est(label, &e, &cmp[ncmp++]);
		event_sim_free(&s);
		if (rc) return -1;
	}
	if (ncmp >= 1) {
		struct chart_in c = {CH_COMPARE, NULL, NULL, NULL, cmp, ncmp};
		snprintf(caption, sizeof(caption), "top %d plans: step-time breakdown and peak memory against each plan's "
			 "capacity (analytical estimate)", ncmp);
		if (add_chart(out, dir, "compare", &c, caption, err)) return -1;
	}
	return 0;
}
