/* report — simulate the finalists once each and draw their pictures. */
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

static int add_pic(struct report_pics *out, const char *dir, const char *file, char *path, size_t cap)
{
	if (out->n == REPORT_MAX_PICS) return -1;
	snprintf(out->pic[out->n].file, sizeof(out->pic[0].file), "%s", file);
	snprintf(path, cap, "%s/%s", dir, file);
	return out->n++;
}

int report_pictures(const struct search_req *rq, const struct search_result *res, const char *dir,
		    struct report_pics *out, char *err)
{
	struct plot_cmp_plan cmp[COMPARED];
	char path[1200], file[32], desc[128];
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
			snprintf(file, sizeof(file), "bubble_%d.svg", i + 1);
			int k = add_pic(out, dir, file, path, sizeof(path));
			snprintf(out->pic[k].caption, sizeof(out->pic[0].caption),
				 "#%d %s: pipeline timeline (event engine), bubble fraction %.3f", i + 1, desc, s.bubble_fraction);
			rc = chart_bubble(&p, &s, path, 0, err);
			if (!rc) {
				snprintf(file, sizeof(file), "memory_%d.svg", i + 1);
				k = add_pic(out, dir, file, path, sizeof(path));
				snprintf(out->pic[k].caption, sizeof(out->pic[0].caption),
					 "#%d %s: memory per rank kind and over one step, peak %.1f GiB", i + 1, desc,
					 s.peak_mem_bytes / 1073741824.0);
				rc = chart_memory(&p, &e, &s, PLOT_MEM_BOTH, path, err);
			}
			if (rc) out->n--; /* the failed picture is not listed */
		}
		char label[160];
		snprintf(label, sizeof(label), "#%d %s", i + 1, desc);
		chart_cmp_entry(label, &s, &cmp[ncmp++]);
		event_sim_free(&s);
		if (rc) return -1;
	}
	if (ncmp >= 1) {
		int k = add_pic(out, dir, "compare.svg", path, sizeof(path));
		snprintf(out->pic[k].caption, sizeof(out->pic[0].caption),
			 "top %d plans: step-time breakdown and peak memory (event engine)", ncmp);
		if (chart_compare(cmp, ncmp, rq->h->hbm_bytes, "top plans compared (event engine)", path, err)) {
			out->n--;
			return -1;
		}
	}
	return 0;
}
