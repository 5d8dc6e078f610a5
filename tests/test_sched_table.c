/* The schedule table (sim/schedule.c): every row is reachable by its name and alias, its stage
 * map and its inverse agree, and its closed-form bubble (the estimate's) equals the event
 * engine's on the row's own op lists with uniform op times. The cases are those whose bubbles
 * reference/model.md §4-5 publishes: (p-1)(F+B) for 1F1B and AFAB [MEG §2.2.1], (p-1)(F+B)/v
 * for interleaved [MEG §2.2.2], (p-1)(F+B-W) for ZB-H1 and zero for ZB-H2 and ZB-V with
 * F = B = W and m >= 2p [ZB Table 2, §6], 14 for DualPipe (PP 16) and DualPipeV (PP 8) with
 * F = B = W = 1, F&B = 3 [DSV3 Table 2, TV-D1]. A row without a case fails. */
#include <stdlib.h>
#include <string.h>
#include "sim/engine.h"
#include "sim/plan.h"
#include "sim/schedule.h"
#include "sim/util.h"
#include "tests/test.h"

struct bcase {
	enum schedule t;
	int p, m, v;
	double f, b, w, fb; /* per stage; fb > 0: an overlapped F&B pair's time */
	double bubble;      /* the published bubble, absolute */
};

static const struct bcase cases[] = {
	{SCHED_NONE, 1, 8, 1, 1, 1.5, 0.5, 0, 0},
	{SCHED_AFAB, 4, 8, 1, 1, 2, 0, 0, 3 * 3.0},
	{SCHED_1F1B, 4, 8, 1, 1, 1.5, 0.5, 0, 3 * 3.0},
	{SCHED_INTERLEAVED, 4, 8, 2, 0.5, 1.0, 0, 0, 3 * 3.0 / 2},
	{SCHED_ZBH1, 4, 8, 1, 1.2, 1.0, 0.7, 0, 3 * (1.2 + 1.0 - 0.7)},
	{SCHED_ZBH2, 4, 8, 1, 1, 1, 1, 0, 0},
	{SCHED_ZBV, 4, 8, 1, 1, 1, 1, 0, 0},
	{SCHED_DUALPIPE, 16, 32, 1, 1, 1, 1, 3, 14},
	{SCHED_DUALPIPEV, 8, 32, 1, 1, 1, 1, 3, 14},
};

static double *fill(int n, double v)
{
	double *a = malloc((size_t)(n > 0 ? n : 1) * sizeof(*a));
	for (int i = 0; i < n; i++) a[i] = v;
	return a;
}

/* worst rank's idle time on the engine: largest span minus the rank's busy time */
static int engine_bubble(const struct bcase *c, double *out)
{
	char err[ERR_LEN];
	enum schedule t = c->t == SCHED_NONE ? SCHED_1F1B : c->t; /* one rank runs 1F1B */
	struct sched *s = sched_create(t, c->p, c->m, c->v, err);
	CHECK(s != NULL, "%s: %s", schedule_name(c->t), err);
	if (!s) return -1;
	double *f = fill(s->nstages, c->f), *b = fill(s->nstages, c->b), *w = fill(s->nstages, c->w);
	double *p2p = fill(s->nstages, 0), *fb = fill(s->nstages, c->fb);
	struct engine_costs k = {.t_f = f, .t_b = b, .t_w = w, .p2p = p2p, .t_fb = c->fb > 0 ? fb : NULL};
	struct engine_result r;
	int rc = engine_run(s, &k, &r, err);
	CHECK(rc == 0, "%s: %s", schedule_name(c->t), err);
	if (!rc) {
		*out = 0;
		for (int i = 0; i < r.nranks; i++)
			if (r.cost - r.rank[i].busy > *out) *out = r.cost - r.rank[i].busy;
		engine_result_free(&r);
	}
	free(f); free(b); free(w); free(p2p); free(fb);
	sched_destroy(s);
	return rc;
}

/* the closed form on the per-rank times the estimate hands it: a rank's F, B, W per micro-batch
 * sum its chunks, except with two directions, where a micro-batch visits one of them */
static double closed_bubble(const struct bcase *c)
{
	const struct sched_family *f = sched_family(c->t);
	int per = f->ndirs > 1 ? 1 : sched_chunks(f, c->v);
	struct sched_span_in in = {.pp = c->p, .v = c->v, .mb = c->m, .np = c->p};
	in.Fm = per * c->f;
	in.Bm = per * c->b;
	in.Wm = per * c->w;
	in.Tmax = in.Fm + in.Bm + in.Wm;
	in.sum = c->p * in.Tmax;
	double exposed = -1;
	double span = f->span(&in, &exposed);
	CHECK_ABS(exposed, 0, 0, "no sends, nothing exposed");
	return span - c->m * in.Tmax;
}

static void test_bubbles(void)
{
	for (int t = 0; t < SCHED_COUNT; t++) {
		const struct bcase *c = NULL;
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			if ((int)cases[i].t == t) c = &cases[i];
		CHECK(c != NULL, "schedule %s has a bubble case", schedule_name((enum schedule)t));
		if (!c) continue;
		double eng;
		if (engine_bubble(c, &eng)) continue;
		char what[96];
		snprintf(what, sizeof(what), "%s engine bubble, published", schedule_name(c->t));
		CHECK_ABS(eng, c->bubble, 1e-9, what);
		snprintf(what, sizeof(what), "%s closed-form bubble, engine", schedule_name(c->t));
		CHECK_ABS(closed_bubble(c), eng, 1e-9, what);
	}
}

static void test_names(void)
{
	char list[256];
	sched_name_list(list, sizeof(list), ",", 1);
	for (int t = 0; t < SCHED_COUNT; t++) {
		const struct sched_family *f = sched_family((enum schedule)t);
		CHECK((int)f->id == t, "row %d holds its own schedule (%d)", t, (int)f->id);
		CHECK(f->name && sched_by_name(f->name) == f, "row %d reachable by name", t);
		CHECK(!f->alias || sched_by_name(f->alias) == f, "%s reachable by its alias", f->name);
		enum schedule back = SCHED_COUNT;
		CHECK(schedule_from_name(f->name, &back) == 0 && (int)back == t, "%s parses back", f->name);
		CHECK(strstr(list, f->name) != NULL, "%s in the list of names", f->name);
		CHECK(f->span && f->inflight && f->stage && f->locate, "%s has every method", f->name);
		CHECK(t == SCHED_NONE || f->gen, "%s has a generator", f->name);
		for (int u = 0; u < t; u++)
			CHECK(strcmp(sched_family((enum schedule)u)->name, f->name) != 0, "%s named once", f->name);
	}
	/* the published alias: GPipe is all-forward-all-backward [PB] */
	CHECK(sched_by_name("gpipe") == sched_family(SCHED_AFAB), "gpipe is afab");
	CHECK(sched_by_name("no-such") == NULL, "unknown name");
	CHECK(strcmp(list, "afab,1f1b,interleaved,zb-h1,zb-h2,zb-v,dualpipe,dualpipev,none") == 0, "list: %s", list);
}

/* locate inverts stage on every row, for every direction and stage */
static void test_stage_maps(void)
{
	for (int t = 0; t < SCHED_COUNT; t++) {
		const struct sched_family *f = sched_family((enum schedule)t);
		int pp = 4, v = 3, n = sched_nstages(f, pp, v), ok = 1;
		for (int d = 0; d < f->ndirs; d++)
			for (int st = 0; st < n; st++) {
				int r = -1, c = -1;
				f->locate(pp, d, st, &r, &c);
				if (r < 0 || r >= pp || c < 0 || c >= sched_chunks(f, v) || f->stage(pp, r, c, d) != st) ok = 0;
			}
		CHECK(ok, "%s: locate inverts stage", f->name);
	}
}

int main(void)
{
	test_names();
	test_stage_maps();
	test_bubbles();
	return test_summary("test_sched_table");
}
