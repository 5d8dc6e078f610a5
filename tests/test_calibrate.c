/* calibrate: runs made from known parameters are recovered within 2 %; fitted parameters stay
 * inside their physical bounds; the errors it reports are the ones its predictions give.
 * Expected values are the known parameters themselves (the runs are synthetic: their step
 * times are the analytical model's on a profile with those parameters). */
#include <string.h>
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"
#include "tuner/calibrate.h"

struct shape { int gpus, tp, pp, cp, mbs, gbs, seq; const char *sched; };

/* plans of llama-3-8b on 8..64 H100s that exercise GEMMs, attention, element-wise passes and
 * TP/CP/DP collectives in different proportions */
static const struct shape shapes[] = {
	{8, 1, 1, 1, 1, 64, 4096, "none"}, {8, 2, 1, 1, 1, 64, 4096, "none"}, {8, 4, 1, 1, 2, 64, 4096, "none"},
	{8, 8, 1, 1, 1, 32, 8192, "none"}, {16, 2, 2, 1, 1, 64, 4096, "1f1b"}, {16, 4, 2, 1, 1, 64, 8192, "1f1b"},
	{16, 1, 1, 2, 1, 32, 16384, "none"}, {32, 8, 1, 2, 1, 32, 32768, "none"}, {32, 2, 4, 1, 1, 128, 4096, "1f1b"},
	{64, 4, 2, 1, 2, 256, 4096, "zb-h1"}, {64, 8, 1, 1, 1, 128, 2048, "none"}, {16, 1, 1, 1, 4, 128, 1024, "none"},
};
#define NSHAPES (int)(sizeof(shapes) / sizeof(shapes[0]))

static int make_points(const struct hw *truth, struct cal_point *pts)
{
	char err[ERR_LEN];
	int n = 0;
	for (int i = 0; i < NSHAPES; i++) {
		const struct shape *s = &shapes[i];
		struct cal_point *pt = &pts[n];
		memset(pt, 0, sizeof(*pt));
		if (model_load("llama-3-8b", &pt->m, err)) { CHECK(0, "%s", err); return 0; }
		plan_defaults(&pt->p);
		pt->p.gpus = s->gpus; pt->p.tp = s->tp; pt->p.pp = s->pp; pt->p.cp = s->cp;
		pt->p.mbs = s->mbs; pt->p.gbs = s->gbs; pt->p.seq = s->seq; pt->p.sp = s->tp > 1;
		pt->p.recompute = RC_SELECTIVE;
		if (schedule_from_name(s->sched, &pt->p.schedule)) { CHECK(0, "schedule %s", s->sched); return 0; }
		if (plan_resolve(&pt->p, &pt->m, truth, err) || plan_validate(&pt->p, &pt->m, truth, err)) {
			CHECK(0, "shape %d: %s", i, err);
			continue;
		}
		snprintf(pt->id, sizeof(pt->id), "S%d", i);
		snprintf(pt->source, sizeof(pt->source), "group%d", i % 4);
		pt->meas_step_s = calibrate_predict(truth, pt, 0);
		CHECK(pt->meas_step_s > 0, "shape %d simulates", i);
		n++;
	}
	return n;
}

static void test_recovers_known_parameters(void)
{
	char err[ERR_LEN];
	struct hw h0, truth, out;
	CHECK(hw_load("h100-sxm", &h0, err) == 0, "%s", err);
	truth = h0;
	truth.gemm_eff = 0.62;   /* h100-sxm has 0.803 */
	truth.attn_eff = 0.28;   /* 0.35 */
	truth.mem_eff = 0.66;    /* 0.8 */
	truth.comm_eff = 0.71;   /* 0.9 */
	static struct cal_point pts[NSHAPES];
	int n = make_points(&truth, pts);
	struct cal_opts o;
	struct cal_result r;
	cal_opts_default(&o);
	o.mask = 1u << CP_GEMM_EFF | 1u << CP_ATTN_EFF | 1u << CP_MEM_EFF | 1u << CP_COMM_EFF;
	CHECK(calibrate_fit(&h0, pts, n, &o, &out, &r, err) == 0, "fit: %s", err);
	CHECK_REL(out.gemm_eff, 0.62, 0.02, "gemm_eff recovered");
	CHECK_REL(out.attn_eff, 0.28, 0.02, "attn_eff recovered");
	CHECK_REL(out.mem_eff, 0.66, 0.02, "mem_eff recovered");
	CHECK_REL(out.comm_eff, 0.71, 0.02, "comm_eff recovered");
	CHECK(r.n == 4, "four parameters fitted (%d)", r.n);
	CHECK(r.error_before > 0.05, "the datasheet profile misses these runs (%.3f)", r.error_before);
	CHECK(r.error_after < 0.005, "the fit reproduces them (%.4f)", r.error_after);
	CHECK(r.cv_error >= 0 && r.cv_error < 0.01, "leave-one-out error small on noise-free runs (%.4f)", r.cv_error);
	/* the reported errors are the mean |pred/meas - 1| of the predictions it stored */
	double s = 0;
	for (int i = 0; i < n; i++) s += fabs(pts[i].pred_before_s / pts[i].meas_step_s - 1);
	CHECK_REL(r.error_before, s / n, 1e-9, "error_before is the mean of its predictions");
	o.by_source = 1;
	CHECK(calibrate_fit(&h0, pts, n, &o, &out, &r, err) == 0, "fit by source: %s", err);
	CHECK(r.groups == 4, "leave-one-source-out over 4 sources (%d)", r.groups);
}

/* runs whose GPUs would need comm_eff 1.3: the fit stops at the bound 1 */
static void test_stays_in_bounds(void)
{
	char err[ERR_LEN];
	struct hw h0, truth, out;
	CHECK(hw_load("h100-sxm", &h0, err) == 0, "%s", err);
	truth = h0;
	truth.comm_eff = 1.3;
	truth.gemm_eff = 0.7;
	static struct cal_point pts[NSHAPES];
	int n = make_points(&truth, pts);
	struct cal_opts o;
	struct cal_result r;
	cal_opts_default(&o);
	o.mask = 1u << CP_GEMM_EFF | 1u << CP_COMM_EFF | 1u << CP_TIER0_BW;
	CHECK(calibrate_fit(&h0, pts, n, &o, &out, &r, err) == 0, "fit: %s", err);
	CHECK(out.comm_eff <= 1.0 && out.comm_eff > 0.9, "comm_eff at its bound (%.4f)", out.comm_eff);
	CHECK(out.tier[0].busbw_bps <= h0.tier[0].busbw_bps * (1 + 1e-12), "busbw not above the datasheet's (%.4g)", out.tier[0].busbw_bps);
	CHECK(out.gemm_eff <= 1.0, "gemm_eff <= 1 (%.4f)", out.gemm_eff);
}

static void test_refuses_nothing_to_fit(void)
{
	char err[ERR_LEN];
	struct hw h0, out;
	CHECK(hw_load("h100-sxm", &h0, err) == 0, "%s", err);
	struct cal_opts o;
	struct cal_result r;
	cal_opts_default(&o);
	CHECK(calibrate_fit(&h0, NULL, 0, &o, &out, &r, err) == -1 && strstr(err, "no measured runs"), "no runs: %s", err);
	CHECK(cal_param_from_key("comm_eff") == CP_COMM_EFF && cal_param_from_key("nonsense") == -1, "parameter keys");
}

int main(void)
{
	test_recovers_known_parameters();
	test_stays_in_bounds();
	test_refuses_nothing_to_fit();
	return test_summary("test_calibrate");
}
