/* calibrate — bounded least squares over a profile's efficiency fields with GSL. Each
 * parameter θ lives on the real line as u: θ = lo + (hi − lo)·σ(u) for fractions and
 * bandwidths, θ = exp(log lo + (log hi − log lo)·σ(u)) for quantities spanning decades
 * (overheads, the GEMM half-efficiency size; lo then is hi·1e-6 instead of 0), σ
 * the logistic function, so every iterate is a physical profile. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include "sim/estimate.h"
#include "sim/event.h"
#include "sim/util.h"
#include "tuner/calibrate.h"

#define HOFF(f) offsetof(struct hw, f)
struct pdesc {
	const char *key;
	size_t off;
	double scale;              /* file unit -> SI */
	double lo, hi;             /* file units; hi < 0: the profile's own value (a datasheet cap);
				    * hi == 0: the longest measured step (an overhead cannot exceed it) */
	int logscale, dflt;        /* log-logistic map; in the default set */
	double cap;                /* file units: the profile reader's own upper limit (sim/hw.c) */
};
static const struct pdesc pd[CP_COUNT] = {
	{"gemm_eff", HOFF(gemm_eff), 1, 0.01, 1, 0, 1, 1},
	{"gemm_half_dim", HOFF(gemm_half_dim), 1, 0, 1e5, 1, 1, 1e6},
	{"attn_eff", HOFF(attn_eff), 1, 0.01, 1, 0, 1, 1},
	{"mem_eff", HOFF(mem_eff), 1, 0.01, 1, 0, 1, 1},
	{"comm_eff", HOFF(comm_eff), 1, 0.01, 1, 0, 1, 1},
	{"network[0].busbw_gbps", HOFF(tier[0].busbw_bps), 1e9, 0.1, -1, 0, 0, 1e6},
	{"network[1].busbw_gbps", HOFF(tier[1].busbw_bps), 1e9, 0.1, -1, 0, 0, 1e6},
	{"step_overhead_ms", HOFF(step_overhead_s), 1e-3, 0, 0, 1, 1, 1e5},
	{"kernel_us", HOFF(kernel_s), 1e-6, 0, 0, 1, 1, 1e5},
};

const char *cal_param_key(int k) { return k >= 0 && k < CP_COUNT ? pd[k].key : "?"; }

int cal_param_from_key(const char *key)
{
	for (int k = 0; k < CP_COUNT; k++)
		if (!strcmp(pd[k].key, key)) return k;
	return -1;
}

void cal_opts_default(struct cal_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->prior = 0.001;
	o->max_iter = 200;
}

static double *field(struct hw *h, int k) { return (double *)((char *)h + pd[k].off); }
static double fieldc(const struct hw *h, int k) { return *(const double *)((const char *)h + pd[k].off); }

double calibrate_predict(const struct hw *h, const struct cal_point *pt, int event)
{
	struct estimate e;
	char err[ERR_LEN];
	if (estimate_plan(&pt->m, h, &pt->p, &e, err)) return 0;
	if (!event) return e.step_time_s;
	struct event_sim s;
	if (event_run(&pt->m, h, &pt->p, &e, NULL, &s, err)) return 0;
	double t = s.step_s;
	event_sim_free(&s);
	return t;
}

/* ---- the map between parameters and the real line --------------------------------------- */

struct fit {
	const struct hw *h0;
	struct cal_point *pts;
	const int *use;            /* points in this fit */
	int nuse, np, event;
	int param[CP_COUNT];
	double lo[CP_COUNT], hi[CP_COUNT]; /* SI */
	double u0[CP_COUNT];
	double prior;
};

static double sigm(double u) { return 1 / (1 + exp(-u)); }

static double theta_of(const struct fit *f, int j, double u)
{
	int k = f->param[j];
	if (pd[k].logscale) return exp(log(f->lo[j]) + (log(f->hi[j]) - log(f->lo[j])) * sigm(u));
	return f->lo[j] + (f->hi[j] - f->lo[j]) * sigm(u);
}

static double u_of(const struct fit *f, int j, double theta)
{
	double s;
	int k = f->param[j];
	if (pd[k].logscale) s = (log(fmax(theta, f->lo[j])) - log(f->lo[j])) / (log(f->hi[j]) - log(f->lo[j]));
	else s = (theta - f->lo[j]) / (f->hi[j] - f->lo[j]);
	s = fmin(fmax(s, 1e-4), 1 - 1e-4); /* start inside: σ is flat at the bounds */
	return log(s / (1 - s));
}

static void apply(const struct fit *f, const gsl_vector *u, struct hw *h)
{
	*h = *f->h0;
	for (int j = 0; j < f->np; j++) *field(h, f->param[j]) = theta_of(f, j, gsl_vector_get(u, (size_t)j));
}

static int residuals(const gsl_vector *u, void *ctx, gsl_vector *r)
{
	const struct fit *f = ctx;
	struct hw h;
	apply(f, u, &h);
	for (int i = 0; i < f->nuse; i++) {
		const struct cal_point *pt = &f->pts[f->use[i]];
		double t = calibrate_predict(&h, pt, f->event);
		gsl_vector_set(r, (size_t)i, t > 0 ? log(t / pt->meas_step_s) : 10);
	}
	for (int j = 0; j < f->np; j++)
		gsl_vector_set(r, (size_t)(f->nuse + j), f->prior * (gsl_vector_get(u, (size_t)j) - f->u0[j]));
	return GSL_SUCCESS;
}

/* bounds in SI for parameter k of h0 given the runs' longest step */
static void bounds(const struct hw *h0, int k, double max_step_s, double *lo, double *hi)
{
	double own = fieldc(h0, k);
	*hi = pd[k].hi < 0 ? own : pd[k].hi > 0 ? pd[k].hi * pd[k].scale : max_step_s;
	*hi = fmin(*hi, pd[k].cap * pd[k].scale);
	*lo = pd[k].lo * pd[k].scale;
	if (pd[k].logscale && *lo <= 0) *lo = *hi * 1e-6;
	if (*hi <= *lo) *hi = *lo * 2;
}

static int fit_run(struct fit *f, int max_iter, struct hw *out, int *iters, char *err)
{
	size_t n = (size_t)(f->nuse + f->np), p = (size_t)f->np;
	gsl_multifit_nlinear_fdf fdf;
	memset(&fdf, 0, sizeof(fdf));
	fdf.f = residuals;
	fdf.n = n;
	fdf.p = p;
	fdf.params = f;
	gsl_multifit_nlinear_parameters par = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &par, n, p);
	gsl_vector *x0 = gsl_vector_alloc(p);
	if (!w || !x0) {
		if (w) gsl_multifit_nlinear_free(w);
		if (x0) gsl_vector_free(x0);
		return errf(err, "calibrate: out of memory");
	}
	for (size_t j = 0; j < p; j++) gsl_vector_set(x0, j, f->u0[j]);
	int info = 0, rc = gsl_multifit_nlinear_init(x0, &fdf, w);
	if (rc == GSL_SUCCESS) rc = gsl_multifit_nlinear_driver((size_t)max_iter, 1e-10, 1e-10, 0, NULL, NULL, &info, w);
	/* hitting the iteration limit still leaves the best point found; other failures do not */
	if (rc == GSL_SUCCESS || rc == GSL_EMAXITER) {
		apply(f, gsl_multifit_nlinear_position(w), out);
		*iters = (int)gsl_multifit_nlinear_niter(w);
		rc = 0;
	} else {
		rc = errf(err, "calibrate: GSL: %s", gsl_strerror(rc));
	}
	gsl_vector_free(x0);
	gsl_multifit_nlinear_free(w);
	return rc;
}

static double mean_abs_err(const struct cal_point *pts, int n, size_t off)
{
	double s = 0;
	for (int i = 0; i < n; i++) s += fabs(*(const double *)((const char *)&pts[i] + off) / pts[i].meas_step_s - 1);
	return n ? s / n : 0;
}

/* how far a 20 % cut of parameter k moves the runs' predictions (largest |Δ log|); a zero
 * time-like field is probed at 1 % of the longest step */
static double sensitivity(const struct hw *h0, const struct cal_point *pts, int n, int event, int k, double max_step_s)
{
	struct hw h = *h0;
	double v = fieldc(h0, k), most = 0;
	*field(&h, k) = v > 0 ? v * 0.8 : pd[k].logscale ? 0.01 * max_step_s : 0.5 * pd[k].scale;
	for (int i = 0; i < n; i++) {
		double a = calibrate_predict(h0, &pts[i], event), b = calibrate_predict(&h, &pts[i], event);
		if (a > 0 && b > 0 && fabs(log(b / a)) > most) most = fabs(log(b / a));
	}
	return most;
}

/* The default parameters to fit: those that move some prediction by more than 1e-4 (log), and
 * of those at most n − 1 (at least 1), the most telling first, so that a few runs do not fit
 * more parameters than they can tell apart. *few: left out for that reason. */
static unsigned choose(const struct hw *h0, const struct cal_point *pts, int n, int event, unsigned want,
		       double max_step_s, unsigned *few)
{
	double sens[CP_COUNT];
	unsigned keep = 0;
	int nk = 0, cap = n > 1 ? n - 1 : 1;
	for (int k = 0; k < CP_COUNT; k++) {
		sens[k] = want & (1u << k) ? sensitivity(h0, pts, n, event, k, max_step_s) : 0;
		if (sens[k] > 1e-4) keep |= 1u << k, nk++;
	}
	*few = 0;
	while (nk > cap) { /* drop the least telling */
		int worst = -1;
		for (int k = 0; k < CP_COUNT; k++)
			if ((keep & (1u << k)) && (worst < 0 || sens[k] < sens[worst])) worst = k;
		keep &= ~(1u << worst);
		*few |= 1u << worst;
		nk--;
	}
	return keep;
}

static void fit_init(struct fit *f, const struct hw *h0, struct cal_point *pts, const int *use, int nuse,
		     const struct cal_opts *o, const struct cal_result *r, double max_step)
{
	memset(f, 0, sizeof(*f));
	f->h0 = h0;
	f->pts = pts;
	f->use = use;
	f->nuse = nuse;
	f->event = o->event;
	f->prior = o->prior;
	f->np = r->n;
	for (int j = 0; j < r->n; j++) {
		f->param[j] = r->param[j];
		bounds(h0, r->param[j], max_step, &f->lo[j], &f->hi[j]);
		f->u0[j] = u_of(f, j, fieldc(h0, r->param[j]));
	}
}

/* cross-validation: each group predicted by a fit on the others */
static int cross_validate(const struct hw *h0, struct cal_point *pts, int n, const struct cal_opts *o,
			  struct cal_result *r, double max_step, char *err)
{
	int use[4096], groups = 0;
	double sum = 0;
	for (int g = 0; g < n; g++) {
		int seen = 0; /* by source: the group's first run stands for it */
		for (int j = 0; j < g && o->by_source && !seen; j++) seen = !strcmp(pts[j].source, pts[g].source);
		if (seen) continue;
		int nuse = 0;
		for (int i = 0; i < n && nuse < 4096; i++)
			if (o->by_source ? strcmp(pts[i].source, pts[g].source) != 0 : i != g) use[nuse++] = i;
		if (!nuse) break;
		struct fit f;
		struct hw h;
		int it;
		fit_init(&f, h0, pts, use, nuse, o, r, max_step);
		if (fit_run(&f, o->max_iter, &h, &it, err)) return -1;
		for (int i = 0; i < n; i++)
			if (o->by_source ? !strcmp(pts[i].source, pts[g].source) : i == g) {
				pts[i].pred_cv_s = calibrate_predict(&h, &pts[i], o->event);
				sum += fabs(pts[i].pred_cv_s / pts[i].meas_step_s - 1);
			}
		groups++;
	}
	r->groups = groups;
	r->cv_error = groups >= 2 ? sum / n : -1;
	return 0;
}

int calibrate_fit(const struct hw *h0, struct cal_point *pts, int n, const struct cal_opts *o, struct hw *out,
		  struct cal_result *r, char *err)
{
	gsl_set_error_handler_off(); /* report, do not abort (process-wide; see calibrate.h) */
	memset(r, 0, sizeof(*r));
	if (n < 1) return errf(err, "calibrate: no measured runs");
	if (n > 4096) return errf(err, "calibrate: %d runs, more than 4096", n);
	double max_step = 0;
	for (int i = 0; i < n; i++) {
		if (!(pts[i].meas_step_s > 0)) return errf(err, "calibrate: run %s has no measured step time", pts[i].id);
		pts[i].pred_before_s = calibrate_predict(h0, &pts[i], o->event);
		if (!(pts[i].pred_before_s > 0)) return errf(err, "calibrate: run %s: its plan does not simulate on this profile", pts[i].id);
		if (pts[i].meas_step_s > max_step) max_step = pts[i].meas_step_s;
	}
	unsigned dflt = 0;
	for (int k = 0; k < CP_COUNT; k++) if (pd[k].dflt) dflt |= 1u << k;
	unsigned want = o->mask ? o->mask : dflt, few = 0;
	unsigned keep = o->mask ? o->mask : choose(h0, pts, n, o->event, dflt, max_step, &few);
	r->too_few = few;
	r->dropped = want & ~keep & ~few;
	for (int k = 0; k < CP_COUNT; k++)
		if (keep & (1u << k)) r->param[r->n++] = k;
	if (!r->n) return errf(err, "calibrate: no parameter moves the prediction of these runs");
	int use[4096];
	for (int i = 0; i < n; i++) use[i] = i;
	struct fit f;
	fit_init(&f, h0, pts, use, n, o, r, max_step);
	if (fit_run(&f, o->max_iter, out, &r->iterations, err)) return -1;
	for (int j = 0; j < r->n; j++) {
		int k = r->param[j];
		r->lo[j] = pd[k].logscale ? 0 : f.lo[j] / pd[k].scale;
		r->hi[j] = f.hi[j] / pd[k].scale;
		r->before[j] = fieldc(h0, k) / pd[k].scale;
		r->after[j] = fieldc(out, k) / pd[k].scale;
	}
	for (int i = 0; i < n; i++) pts[i].pred_after_s = calibrate_predict(out, &pts[i], o->event);
	r->points = n;
	r->error_before = mean_abs_err(pts, n, offsetof(struct cal_point, pred_before_s));
	r->error_after = mean_abs_err(pts, n, offsetof(struct cal_point, pred_after_s));
	return cross_validate(h0, pts, n, o, r, max_step, err);
}
