/* Pipeline schedules and the event engine: completeness of every op list, deadlock freedom,
 * activation-memory bounds (reference/model.md §2.3), closed-form bubbles (§4) and the
 * published vectors TV-ZB2, TV-ZB3, TV-ZB4, TV-ZB5, TV-D1, TV-G2, TV-G3 (§5). Expected numbers
 * come from those sections, or from a hand-worked timeline written out in the comment. */
#include <stdlib.h>
#include <string.h>
#include "sim/engine.h"
#include "sim/plan.h"
#include "sim/schedule.h"
#include "sim/util.h"
#include "tests/test.h"

/* uniform per-stage costs */
struct costs {
	double *f, *b, *w, *fb, *p2p, *mb, *mw;
	struct engine_costs c;
};

static double *fill(int n, double v)
{
	double *a = malloc((size_t)(n > 0 ? n : 1) * sizeof(*a));
	for (int i = 0; i < n; i++) a[i] = v;
	return a;
}

static void costs_init(struct costs *k, int nstages, double f, double b, double w, double comm)
{
	memset(k, 0, sizeof(*k));
	k->f = fill(nstages, f);
	k->b = fill(nstages, b);
	k->w = fill(nstages, w);
	k->p2p = fill(nstages, comm);
	k->c.t_f = k->f;
	k->c.t_b = k->b;
	k->c.t_w = k->w;
	k->c.p2p = k->p2p;
}

static void costs_free(struct costs *k)
{
	free(k->f); free(k->b); free(k->w); free(k->fb); free(k->p2p); free(k->mb); free(k->mw);
}

/* Runs schedule t with uniform times; returns 0 and fills r, or -1 (and reports why). */
static int simulate(enum schedule t, int p, int m, int v, double f, double b, double w,
		    double comm, double fb, struct engine_result *r)
{
	char err[ERR_LEN];
	struct sched *s = sched_create(t, p, m, v, err);
	CHECK(s != NULL, "%s p=%d m=%d: %s", schedule_name(t), p, m, err);
	if (!s) return -1;
	struct costs k;
	costs_init(&k, s->nstages, f, b, w, comm);
	if (fb > 0) { k.fb = fill(s->nstages, fb); k.c.t_fb = k.fb; }
	int rc = engine_run(s, &k.c, r, err);
	CHECK(rc == 0, "%s p=%d m=%d: %s", schedule_name(t), p, m, err);
	costs_free(&k);
	sched_destroy(s);
	return rc;
}

static const enum schedule all_scheds[] = {SCHED_AFAB, SCHED_1F1B, SCHED_INTERLEAVED, SCHED_ZBH1,
					   SCHED_ZBH2, SCHED_ZBV, SCHED_DUALPIPE, SCHED_DUALPIPEV};
#define NSCHED (sizeof(all_scheds) / sizeof(all_scheds[0]))

/* Each (dir, stage, mb) has one F and one BW, or one F, one B and one W, on the rank that
 * holds the stage, in the order F < B < W. Returns the number of violations. */
static int check_complete(const struct sched *s)
{
	size_t n = (size_t)s->ndirs * s->nstages * s->mb_per_dir;
	int *cnt = calloc(n * OP_KIND_COUNT, sizeof(int));
	long *pos = malloc(n * OP_KIND_COUNT * sizeof(long));
	int bad = 0;
	for (int r = 0; r < s->pp; r++) {
		for (size_t i = s->off[r]; i < s->off[r + 1]; i++) {
			const struct sched_op *o = &s->ops[i];
			if (o->chunk >= s->chunks || o->dir >= s->ndirs || o->mb < 0 || o->mb >= s->mb_per_dir) {
				bad++;
				continue;
			}
			int stage = sched_stage(s, r, o->chunk, o->dir), rr, cc;
			sched_locate(s, o->dir, stage, &rr, &cc);
			if (rr != r || cc != o->chunk) bad++;
			size_t k = ((size_t)o->dir * s->nstages + stage) * s->mb_per_dir + o->mb;
			cnt[k * OP_KIND_COUNT + o->kind]++;
			pos[k * OP_KIND_COUNT + o->kind] = (long)i;
		}
	}
	for (size_t k = 0; k < n; k++) {
		int *c = &cnt[k * OP_KIND_COUNT];
		long *q = &pos[k * OP_KIND_COUNT];
		int fused = c[OP_F] == 1 && c[OP_BW] == 1 && !c[OP_B] && !c[OP_W] && q[OP_F] < q[OP_BW];
		int split = c[OP_F] == 1 && c[OP_B] == 1 && c[OP_W] == 1 && !c[OP_BW] &&
			    q[OP_F] < q[OP_B] && q[OP_B] < q[OP_W];
		if (!fused && !split) bad++;
	}
	free(cnt);
	free(pos);
	return bad;
}

/* p2p sends an independent count expects: one per micro-batch per direction (F and B) per
 * boundary between stages on different ranks */
static size_t expected_sends(const struct sched *s)
{
	size_t n = 0;
	for (int d = 0; d < s->ndirs; d++)
		for (int st = 0; st + 1 < s->nstages; st++) {
			int r0, c0, r1, c1;
			sched_locate(s, d, st, &r0, &c0);
			sched_locate(s, d, st + 1, &r1, &c1);
			if (r0 != r1) n += 2 * (size_t)s->mb_per_dir;
		}
	return n;
}

static void test_complete_and_deadlock_free(void)
{
	int grid_p[] = {1, 2, 3, 4, 6, 8};
	for (size_t k = 0; k < NSCHED; k++) {
		enum schedule t = all_scheds[k];
		for (size_t a = 0; a < sizeof(grid_p) / sizeof(grid_p[0]); a++) {
			int p = grid_p[a];
			for (int m = 1; m <= 3 * p + 3; m++) {
				int v = t == SCHED_INTERLEAVED ? 2 + m % 3 : 1;
				char err[ERR_LEN];
				if (sched_check(t, p, m, v, err)) continue;
				struct sched *s = sched_create(t, p, m, v, err);
				CHECK(s && check_complete(s) == 0, "%s p=%d m=%d v=%d incomplete", schedule_name(t), p, m, v);
				if (!s) continue;
				struct costs c;
				costs_init(&c, s->nstages, 1.0, 1.3, 0.6, 0.05);
				struct engine_result r;
				int rc = engine_run(s, &c.c, &r, err);
				CHECK(rc == 0, "%s p=%d m=%d v=%d: %s", schedule_name(t), p, m, v, err);
				if (!rc) {
					size_t sends = 0;
					for (size_t i = 0; i < r.tl.n; i++) sends += r.tl.ev[i].kind == TL_P2P;
					CHECK(sends == expected_sends(s), "%s p=%d m=%d: %zu sends, want %zu",
					      schedule_name(t), p, m, sends, expected_sends(s));
					engine_result_free(&r);
				}
				costs_free(&c);
				sched_destroy(s);
			}
		}
	}
}

/* the deadlock check can fail: swap rank 1's first F with its first B */
static void test_deadlock_detected(void)
{
	char err[ERR_LEN] = "";
	struct sched *s = sched_create(SCHED_1F1B, 4, 8, 1, err);
	struct sched_op *o = &s->ops[s->off[1]];
	size_t j = 0;
	while (o[j].kind != OP_BW) j++;
	struct sched_op tmp = o[0];
	o[0] = o[j];
	o[j] = tmp;
	struct costs c;
	costs_init(&c, s->nstages, 1, 1, 0, 0);
	struct engine_result r;
	CHECK(engine_run(s, &c.c, &r, err) != 0 && strstr(err, "deadlock") && strstr(err, "rank 1"),
	      "swapped order must deadlock on rank 1, got '%s'", err);
	costs_free(&c);
	sched_destroy(s);
}

/* rank/chunk -> stage agrees with plan_stages()/plan_chunks() and covers every stage once */
static void test_stage_map(void)
{
	for (size_t k = 0; k < NSCHED; k++) {
		enum schedule t = all_scheds[k];
		int p = 4, v = t == SCHED_INTERLEAVED ? 3 : 1, m = 16;
		char err[ERR_LEN];
		struct sched *s = sched_create(t, p, m, v, err);
		struct plan pl;
		plan_defaults(&pl);
		pl.pp = p;
		pl.vpp = v;
		pl.schedule = t;
		CHECK(s && s->nstages == plan_stages(&pl) && s->chunks == plan_chunks(&pl),
		      "%s: stages/chunks differ from plan", schedule_name(t));
		if (!s) continue;
		int seen[64] = {0};
		for (int d = 0; d < s->ndirs; d++)
			for (int r = 0; r < p; r++)
				for (int c = 0; c < s->chunks; c++)
					if (s->ndirs == 1 || c == d) seen[d * 32 + sched_stage(s, r, c, d)]++;
		int ok = 1;
		for (int d = 0; d < s->ndirs; d++)
			for (int st = 0; st < s->nstages; st++) ok &= seen[d * 32 + st] == 1;
		CHECK(ok, "%s: stage map does not cover every stage once", schedule_name(t));
		sched_destroy(s);
	}
	/* model.md §4.4 example: p=4, v=2 -> rank 0 holds stages 0 and 4; §4.5: ZB-V worker 1
	 * holds chunk 1 and chunk 2p; §4.6: DualPipe rank r holds stage PP-1-r in reverse */
	char err[ERR_LEN];
	struct sched *s = sched_create(SCHED_INTERLEAVED, 4, 8, 2, err);
	CHECK(sched_stage(s, 0, 1, 0) == 4 && sched_stage(s, 3, 1, 0) == 7, "interleaved stage map");
	sched_destroy(s);
	s = sched_create(SCHED_ZBV, 4, 8, 1, err);
	CHECK(sched_stage(s, 0, 1, 0) == 7 && sched_stage(s, 3, 1, 0) == 4, "zb-v stage map");
	sched_destroy(s);
	s = sched_create(SCHED_DUALPIPE, 4, 8, 1, err);
	CHECK(sched_stage(s, 0, 1, 1) == 3 && sched_stage(s, 3, 0, 0) == 3, "dualpipe stage map");
	sched_destroy(s);
}

static void expect_reject(enum schedule t, int p, int m, int v, const char *want)
{
	char err[ERR_LEN] = "";
	struct sched *s = sched_create(t, p, m, v, err);
	CHECK(!s && strstr(err, want), "%s p=%d m=%d v=%d: want error '%s', got '%s'",
	      schedule_name(t), p, m, v, want, err);
	sched_destroy(s);
}

static void test_validation(void)
{
	expect_reject(SCHED_DUALPIPE, 3, 12, 1, "dualpipe: pp (3) must be even");
	expect_reject(SCHED_DUALPIPE, 4, 9, 1, "microbatches (9) must be even");
	expect_reject(SCHED_DUALPIPE, 4, 6, 1, "at least 2*pp (8)");
	expect_reject(SCHED_DUALPIPEV, 4, 7, 1, "at least 2*pp (8)");
	expect_reject(SCHED_INTERLEAVED, 4, 6, 2, "pp (4) does not divide microbatches (6)");
	expect_reject(SCHED_INTERLEAVED, 4, 8, 1, "vpp (1) must be in [2,");
	expect_reject(SCHED_1F1B, 4, 8, 2, "vpp (2) applies only to the interleaved schedule");
	expect_reject(SCHED_1F1B, 0, 8, 1, "pp (0) must be in");
	expect_reject(SCHED_ZBH1, 4, 0, 1, "microbatches (0) must be in");
	expect_reject(SCHED_NONE, 4, 8, 1, "no pipeline schedule");
}

/* TV-G2: warm-up forwards 1F1B p-r-1, interleaved 2(p-r-1)+(v-1)p [MCODE-sched] */
static int leading_forwards(const struct sched *s, int r)
{
	int n = 0;
	for (size_t i = s->off[r]; i < s->off[r + 1] && s->ops[i].kind == OP_F; i++) n++;
	return n;
}

static void test_warmup_tv_g2(void)
{
	char err[ERR_LEN];
	int p = 8, v = 3, m = 32;
	struct sched *a = sched_create(SCHED_1F1B, p, m, 1, err);
	struct sched *b = sched_create(SCHED_INTERLEAVED, p, m, v, err);
	for (int r = 0; r < p; r++) {
		/* 1F1B: warm-up p-r-1, then the first steady F precedes the first B */
		CHECK(leading_forwards(a, r) == p - r - 1 + 1, "1f1b rank %d warm-up", r);
		CHECK(leading_forwards(b, r) == 2 * (p - r - 1) + (v - 1) * p + 1, "interleaved rank %d warm-up", r);
	}
	sched_destroy(a);
	sched_destroy(b);
}

/* Activation bounds, model.md §2.3 */
static void peak_bytes(enum schedule t, int p, int m, int v, double mb, double mw, struct engine_result *r)
{
	char err[ERR_LEN];
	struct sched *s = sched_create(t, p, m, v, err);
	struct costs c;
	costs_init(&c, s->nstages, 1, 1, 1, 0);
	c.mb = fill(s->nstages, mb);
	c.mw = fill(s->nstages, mw);
	c.c.m_b_bytes = c.mb;
	c.c.m_w_bytes = c.mw;
	if (engine_run(s, &c.c, r, err)) { CHECK(0, "%s", err); memset(r, 0, sizeof(*r)); }
	costs_free(&c);
	sched_destroy(s);
}

static void test_memory_bounds(void)
{
	struct engine_result r;
	int p = 8, m = 24;
	/* AFAB: m micro-batches [MEG §2.2.1]; 1F1B: stage i holds min(p-i, m) [KOR §4.2.3] */
	peak_bytes(SCHED_AFAB, p, m, 1, 1, 0, &r);
	for (int i = 0; i < p; i++) CHECK(r.rank[i].peak_inflight == m, "afab rank %d", i);
	engine_result_free(&r);
	for (int mm = 3; mm <= 24; mm += 21) {
		peak_bytes(SCHED_1F1B, p, mm, 1, 1, 0, &r);
		for (int i = 0; i < p; i++)
			CHECK(r.rank[i].peak_inflight == (p - i < mm ? p - i : mm), "1f1b m=%d rank %d: %d", mm, i,
			      r.rank[i].peak_inflight);
		engine_result_free(&r);
	}
	/* TV-G3: p=8, v=3 -> factor 1.2917, i.e. 1.2917*p stage activations = 31 chunk
	 * activations, 11 micro-batches in flight [MCODE-mem] */
	peak_bytes(SCHED_INTERLEAVED, 8, 24, 3, 1, 0, &r);
	CHECK(r.rank[0].peak_inflight == 31, "interleaved rank 0: %d chunk activations", r.rank[0].peak_inflight);
	CHECK((r.rank[0].peak_inflight + 2) / 3 == 11, "interleaved: 11 in flight");
	engine_result_free(&r);
	/* TV-ZB5 / [ZB §2.3]: ZB-H1 worker i (1-indexed) (p-i+1)M_B + (i-1)M_W, peak p M_B;
	 * ZB-H2 (2p-2i+1)M_B + (2i-2)M_W, peak (2p-1)M_B. M_B = 1, M_W = 0.25 */
	peak_bytes(SCHED_ZBH1, p, m, 1, 1, 0.25, &r);
	for (int i = 1; i <= p; i++)
		CHECK_REL(r.rank[i - 1].peak_act_bytes, (p - i + 1) + (i - 1) * 0.25, 1e-12, "zb-h1 worker memory");
	CHECK_REL(r.max_act_bytes, p, 1e-12, "zb-h1 peak p*M_B");
	engine_result_free(&r);
	peak_bytes(SCHED_ZBH2, p, m, 1, 1, 0.25, &r);
	for (int i = 1; i <= p; i++)
		CHECK_REL(r.rank[i - 1].peak_act_bytes, (2 * p - 2 * i + 1) + (2 * i - 2) * 0.25, 1e-12,
			  "zb-h2 worker memory");
	CHECK_REL(r.max_act_bytes, 2 * p - 1, 1e-12, "zb-h2 peak (2p-1)*M_B");
	engine_result_free(&r);
	/* ZB-V: p*M_B with M_B of a whole stage = 2 chunks [ZB §6] */
	peak_bytes(SCHED_ZBV, p, m, 1, 0.5, 0, &r);
	CHECK(r.max_act_bytes <= p + 1e-12, "zb-v peak %g > p*M_B", r.max_act_bytes);
	engine_result_free(&r);
	/* DualPipe: PP+1 activations per device [DSV3 Table 2]; DualPipeV on PP/2 devices also
	 * PP+1 [DP-README] */
	peak_bytes(SCHED_DUALPIPE, 16, 64, 1, 1, 0, &r);
	CHECK(r.max_inflight <= 17, "dualpipe PP=16: %d in flight > 17", r.max_inflight);
	engine_result_free(&r);
	peak_bytes(SCHED_DUALPIPEV, 8, 64, 1, 1, 0, &r);
	CHECK(r.max_inflight <= 17, "dualpipev PP=16 stages: %d in flight > 17", r.max_inflight);
	engine_result_free(&r);
}

/* Bubbles with uniform op times, model.md §4.2-4.6 */
static void test_closed_forms(void)
{
	struct engine_result r;
	int ps[] = {2, 4, 8};
	for (int a = 0; a < 3; a++) {
		int p = ps[a];
		for (int m = p; m <= 4 * p; m += p) {
			/* GPipe/1F1B fraction (p-1)/m [MEG §2.2.1; PB] */
			if (!simulate(SCHED_AFAB, p, m, 1, 1, 2, 0, 0, 0, &r)) {
				CHECK_REL(r.bubble_fraction, (double)(p - 1) / m, 1e-12, "afab (p-1)/m");
				engine_result_free(&r);
			}
			if (!simulate(SCHED_1F1B, p, m, 1, 1, 1.5, 0.5, 0, 0, &r)) {
				CHECK_REL(r.bubble_fraction, (double)(p - 1) / m, 1e-12, "1f1b (p-1)/m");
				/* ZB-README rate (p-1)/(m+p-1) */
				CHECK_REL(r.bubble_rate, (double)(p - 1) / (m + p - 1), 1e-12, "1f1b (p-1)/(m+p-1)");
				engine_result_free(&r);
			}
			/* interleaved (p-1)/(v m) [MEG §2.2.2] */
			for (int v = 2; v <= 4; v++) {
				if (!simulate(SCHED_INTERLEAVED, p, m, v, 0.5, 1.0, 0, 0, 0, &r)) {
					CHECK_REL(r.bubble_fraction, (double)(p - 1) / (v * m), 1e-12, "interleaved (p-1)/(vm)");
					engine_result_free(&r);
				}
			}
			/* ZB-H1 absolute bubble (p-1)(T_F + T_B - T_W) [ZB Table 2] */
			double f = 1.2, b = 1.0, w = 0.7;
			if (!simulate(SCHED_ZBH1, p, m, 1, f, b, w, 0, 0, &r)) {
				CHECK_REL(r.cost - m * (f + b + w), (p - 1) * (f + b - w), 1e-9, "zb-h1 (p-1)(F+B-W)");
				engine_result_free(&r);
			}
			/* ZB-H2 (p-1)(T_F + T_B - 2T_W) = 0 and ZB-V zero with T_F = T_B = T_W
			 * [ZB §2.2, §6], for m >= 2p */
			if (m >= 2 * p) {
				if (!simulate(SCHED_ZBH2, p, m, 1, 1, 1, 1, 0, 0, &r)) {
					CHECK_ABS(r.bubble_rate, 0, 1e-12, "zb-h2 zero bubble");
					engine_result_free(&r);
				}
				if (!simulate(SCHED_ZBV, p, m, 1, 1, 1, 1, 0, 0, &r)) {
					CHECK_ABS(r.bubble_rate, 0, 1e-12, "zb-v zero bubble");
					engine_result_free(&r);
				}
			}
		}
	}
}

/* TV-ZB2 [ZB Table 2]: T = 1, p = 4, m = 8: bubbles 9/3/0, cost 33/27/24, rates
 * 0.2727/0.1111/0, Narayanan fraction 3/8 for 1F1B. TV-ZB4: p = 8, m = 24, 1F1B rate 7/31,
 * exact ZB-H1 rate 7/79, ZB-V 0. */
static void test_tv_zb2_zb4(void)
{
	const enum schedule t[3] = {SCHED_1F1B, SCHED_ZBH1, SCHED_ZBH2};
	const double bubble[3] = {9, 3, 0}, cost[3] = {33, 27, 24}, rate[3] = {0.2727, 0.1111, 0};
	struct engine_result r;
	for (int k = 0; k < 3; k++) {
		if (simulate(t[k], 4, 8, 1, 1, 1, 1, 0, 0, &r)) continue;
		CHECK_ABS(r.cost, cost[k], 1e-12, "TV-ZB2 cost");
		CHECK_ABS(r.cost - 24, bubble[k], 1e-12, "TV-ZB2 bubble");
		CHECK_ABS(r.bubble_rate, rate[k], 5e-5, "TV-ZB2 rate");
		if (k == 0) CHECK_REL(r.bubble_fraction, 3.0 / 8, 1e-12, "TV-ZB2 Narayanan fraction");
		engine_result_free(&r);
	}
	if (!simulate(SCHED_1F1B, 8, 24, 1, 1, 1, 1, 0, 0, &r)) {
		CHECK_REL(r.bubble_rate, 7.0 / 31, 1e-12, "TV-ZB4 1F1B 7/31");
		engine_result_free(&r);
	}
	if (!simulate(SCHED_ZBH1, 8, 24, 1, 1, 1, 1, 0, 0, &r)) {
		CHECK_REL(r.bubble_rate, 7.0 / 79, 1e-12, "TV-ZB4 exact ZB-H1 7/79");
		engine_result_free(&r);
	}
	if (!simulate(SCHED_ZBV, 8, 24, 1, 1, 1, 1, 0, 0, &r)) {
		CHECK_ABS(r.bubble_rate, 0, 1e-12, "TV-ZB4 ZB-V 0");
		engine_result_free(&r);
	}
}

/* TV-ZB3 [ZB Tables 5, 9]: bubble rates from profiled times, p = 8 */
static void test_tv_zb3(void)
{
	static const double rows[6][9] = {
		/* m, T_F, T_B, T_W, T_comm, 1F1B, ZB-H1, ZB-H2 */
		{24, 18.522, 18.086, 9.337, 0.601, 0.2431, 0.1585, 0.1083},
		{32, 18.513, 18.086, 9.331, 0.626, 0.1985, 0.1242, 0.0837},
		{64, 18.546, 18.097, 9.321, 0.762, 0.1240, 0.0674, 0.0444},
		{24, 29.718, 29.444, 19.927, 0.527, 0.2347, 0.1323, 0.0698},
		{32, 29.802, 29.428, 19.530, 0.577, 0.1898, 0.1045, 0.0559},
		{64, 29.935, 29.621, 19.388, 0.535, 0.1091, 0.0554, 0.0294},
	};
	const enum schedule t[3] = {SCHED_1F1B, SCHED_ZBH1, SCHED_ZBH2};
	for (int i = 0; i < 6; i++) {
		const double *x = rows[i];
		for (int k = 0; k < 3; k++) {
			struct engine_result r;
			if (simulate(t[k], 8, (int)x[0], 1, x[1], x[2], x[3], x[4], 0, &r)) continue;
			CHECK_ABS(r.bubble_rate, x[5 + k], 1e-3, schedule_name(t[k]));
			engine_result_free(&r);
		}
	}
}

/* TV-D1 [DSV3 Table 2, §3.2.1]: PP = 16, F = 1, B (full) = 2, W = 1, F&B = 3: bubble 1F1B 45,
 * ZB1P 15, DualPipe 7*(3+2-3) = 14; DualPipeV the same on PP/2 devices [DP-README]; the
 * DualPipe bubble does not grow with the micro-batch count. */
static void test_tv_d1(void)
{
	struct engine_result r;
	if (!simulate(SCHED_1F1B, 16, 64, 1, 1, 1, 1, 0, 0, &r)) {
		CHECK_ABS(r.cost - r.rank[0].busy, 45, 1e-9, "TV-D1 1F1B bubble");
		engine_result_free(&r);
	}
	if (!simulate(SCHED_ZBH1, 16, 64, 1, 1, 1, 1, 0, 0, &r)) {
		CHECK_ABS(r.cost - r.rank[0].busy, 15, 1e-9, "TV-D1 ZB1P bubble");
		engine_result_free(&r);
	}
	for (int m = 32; m <= 96; m += 32) {
		if (!simulate(SCHED_DUALPIPE, 16, m, 1, 1, 1, 1, 0, 3, &r)) {
			double worst = 0;
			for (int i = 0; i < 16; i++)
				if (r.cost - r.rank[i].busy > worst) worst = r.cost - r.rank[i].busy;
			CHECK_ABS(worst, 14, 1e-9, "TV-D1 DualPipe bubble");
			engine_result_free(&r);
		}
		if (!simulate(SCHED_DUALPIPEV, 8, m, 1, 1, 1, 1, 0, 3, &r)) {
			CHECK_ABS(r.cost - r.rank[0].busy, 14, 1e-9, "TV-D1 DualPipeV bubble");
			engine_result_free(&r);
		}
	}
}

/* DP reduction, optimizer, ZeRO-3 gathers, overrides and memory over time on timelines worked
 * out by hand in the comments. */
static void test_engine_extras(void)
{
	char err[ERR_LEN];
	struct engine_result r;
	/* 1F1B p=2 m=2, F = BW = 1: rank 0 runs F0[0,1] F1[1,2] BW0[3,4] BW1[5,6]; rank 1 F0[1,2]
	 * BW0[2,3] F1[3,4] BW1[4,5]. DP 10 in 2 buckets over rank 0's BW1: ready 5.5 and 6 ->
	 * [5.5,10.5] [10.5,15.5]; optimizer 1 -> ends 16.5. Rank 1: [4.5,9.5] [9.5,14.5], 15.5. */
	struct sched *s = sched_create(SCHED_1F1B, 2, 2, 1, err);
	struct costs c;
	costs_init(&c, 2, 1, 1, 0, 0);
	double dp[2] = {10, 10}, opt[2] = {1, 1};
	c.c.dp_reduce = dp;
	c.c.dp_buckets = 2;
	c.c.opt = opt;
	if (!engine_run(s, &c.c, &r, err)) {
		CHECK_ABS(r.rank[0].step_end, 16.5, 1e-12, "dp buckets + optimizer rank 0");
		CHECK_ABS(r.rank[1].step_end, 15.5, 1e-12, "dp buckets + optimizer rank 1");
		CHECK_ABS(r.step, 16.5, 1e-12, "step");
		CHECK_ABS(r.cost, 6, 1e-12, "pipeline cost excludes the tail");
		engine_result_free(&r);
	} else CHECK(0, "%s", err);
	costs_free(&c);
	sched_destroy(s);

	/* AFAB p=1 m=2, all ops 1, gather 0.5 before every op. No prefetch: each op waits for a
	 * gather issued when the previous op ends -> 4 * 1.5 = 6. Prefetch: gathers issued when
	 * the previous op starts hide behind it -> 0.5 + 4 = 4.5. Memory after each op: 1 2 1 0. */
	s = sched_create(SCHED_AFAB, 1, 2, 1, err);
	costs_init(&c, 1, 1, 1, 0, 0);
	double ag[1] = {0.5};
	c.c.param_gather = ag;
	c.c.gather_every_op = 1;
	for (int pf = 0; pf <= 1; pf++) {
		c.c.gather_prefetch = pf;
		if (engine_run(s, &c.c, &r, err)) { CHECK(0, "%s", err); continue; }
		CHECK_ABS(r.rank[0].end, pf ? 4.5 : 6, 1e-12, "zero-3 gather (prefetch on/off)");
		double want[4] = {1, 2, 1, 0};
		int k = 0;
		for (size_t i = 0; i < r.tl.n; i++)
			if (r.tl.ev[i].stream == TL_COMPUTE && k < 4)
				CHECK_ABS(r.tl.ev[i].mem_bytes, want[k++], 1e-12, "memory over time");
		engine_result_free(&r);
	}
	/* gathering only on chunk change: once, 0.5 + 4 */
	c.c.gather_every_op = 0;
	if (!engine_run(s, &c.c, &r, err)) {
		CHECK_ABS(r.rank[0].end, 4.5, 1e-12, "gather once per chunk");
		engine_result_free(&r);
	}
	/* measured override of the second op: 1 + 5 + 1 + 1 */
	c.c.param_gather = NULL;
	double ov[4] = {-1, 5, -1, -1};
	c.c.op_time = ov;
	if (!engine_run(s, &c.c, &r, err)) {
		CHECK_ABS(r.rank[0].end, 8, 1e-12, "per-op override");
		engine_result_free(&r);
	}
	double neg[1] = {-1};
	c.c.op_time = NULL;
	c.c.t_f = neg;
	CHECK(engine_run(s, &c.c, &r, err) != 0 && strstr(err, "non-negative"), "negative time rejected: %s", err);
	costs_free(&c);
	sched_destroy(s);
}

int main(void)
{
	test_complete_and_deadlock_free();
	test_deadlock_detected();
	test_stage_map();
	test_validation();
	test_warmup_tv_g2();
	test_memory_bounds();
	test_closed_forms();
	test_tv_zb2_zb4();
	test_tv_zb3();
	test_tv_d1();
	test_engine_extras();
	return test_summary("test_schedule");
}
