/* calibrate — fits a hardware profile's efficiency parameters to measured runs by bounded
 * nonlinear least squares (GSL's gsl_multifit_nlinear, trust region with geodesic
 * acceleration off, finite-difference Jacobian). The parameters are the profile's own fields
 * each kept inside physical bounds by a logistic map from the real line onto [lo, hi]
 * (efficiencies <= 1, bandwidths <= the profile's own, i.e. the datasheet's). Residuals are
 * log(predicted / measured) step time per run, plus a weak pull of each parameter toward the
 * profile's value (weight `prior`, 0.001 by default, per unit of u) so that runs that cannot tell two
 * parameters apart leave them where the datasheet put them.
 *
 * Errors are mean |predicted / measured − 1| over the runs (fractions): before, after, and
 * cross-validated — each run (or each source's runs) predicted by a fit made without it, the
 * figure that says how well the fit predicts runs it has not seen.
 *
 * Units: the profile's file units in cal_result (what a person reads and writes back), SI in
 * struct hw. Ownership: callers own the points and results. Note: the first call turns GSL's
 * abort-on-error handler off for the process (GSL's handler is process-wide). */
#ifndef SCALEPLAN_CALIBRATE_H
#define SCALEPLAN_CALIBRATE_H

#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"

enum cal_param {
	CP_GEMM_EFF, CP_GEMM_HALF_DIM, CP_ATTN_EFF, CP_MEM_EFF, CP_COMM_EFF, CP_TIER0_BW, CP_TIER1_BW,
	CP_STEP_OVERHEAD, CP_KERNEL, CP_COUNT
};

/* The profile key of a parameter ("gemm_eff", "network[0].busbw_gbps"); cal_param_from_key
 * returns -1 when unknown. */
const char *cal_param_key(int k);
int cal_param_from_key(const char *key);

/* One measured run: a resolved, validated plan of model m and its measured step time. */
struct cal_point {
	struct model m;
	struct plan p;
	double meas_step_s;
	char id[32], source[64];   /* source: the group left out together by cross-validation */
	double pred_before_s, pred_after_s, pred_cv_s; /* filled by calibrate_fit */
};

struct cal_opts {
	unsigned mask;             /* parameters to fit (1u << CP_*); 0: the default set, less those
				    * that move no prediction of these runs, and at most (runs − 1) of
				    * them, those that move the predictions most */
	double prior;              /* weight of the pull toward the profile's values (default 0.001) */
	int max_iter;              /* trust-region iterations (default 200) */
	int by_source;             /* cross-validate leaving one source out (else one run) */
	int event;                 /* predict with the event engine (else the analytical model) */
};
void cal_opts_default(struct cal_opts *o);

struct cal_result {
	int n;                     /* fitted parameters */
	int param[CP_COUNT];       /* which, in order */
	double lo[CP_COUNT], hi[CP_COUNT]; /* their bounds, file units */
	double before[CP_COUNT], after[CP_COUNT]; /* file units */
	double error_before, error_after, cv_error; /* cv_error < 0: fewer than two groups */
	int points, groups, iterations;
	unsigned dropped;          /* default parameters left out: they move no prediction */
	unsigned too_few;          /* default parameters left out: more than the runs can tell apart */
};

/* Step time of pt's plan on hardware h (analytical, or event engine when event). 0 on error. */
double calibrate_predict(const struct hw *h, const struct cal_point *pt, int event);

/* Fits h0's parameters to pts[0..n); *out = h0 with the fitted values. 0, or -1 with err (no
 * runs, no parameter to fit, a plan that does not simulate, GSL failure). */
int calibrate_fit(const struct hw *h0, struct cal_point *pts, int n, const struct cal_opts *o, struct hw *out,
		  struct cal_result *r, char *err);

#endif
