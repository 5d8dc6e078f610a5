/* op_scale — ratios of measured to modelled compute per op kind, carried to another plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/op_scale.h"
#include "sim/util.h"

/* per-stage model op times of a plan: with communication (full) and without (compute) */
struct stage_times {
	int n;
	double *f[2], *b[2], *w[2]; /* [0] full, [1] compute only */
};

static void stage_times_free(struct stage_times *t)
{
	for (int i = 0; i < 2; i++) { free(t->f[i]); free(t->b[i]); free(t->w[i]); }
	memset(t, 0, sizeof(*t));
}

/* the profile with free communication: every collective and exchange costs nothing */
static void no_comm(const struct hw *h, struct hw *out)
{
	*out = *h;
	for (int t = 0; t < out->ntiers; t++) {
		out->tier[t].busbw_bps = 1e30;
		if (out->tier[t].nvls_busbw_bps > 0) out->tier[t].nvls_busbw_bps = 1e30;
		for (int p = 0; p < PROTO_COUNT; p++) out->tier[t].hop_s[p] = 0;
	}
	struct coll_lib *L = &out->lib; /* no latency: every offered (algorithm, protocol) is free */
	for (int a = 0; a < ALGO_COUNT; a++)
		for (int p = 0; p < PROTO_COUNT; p++) {
			if (L->base_s[a][p] > 0) L->base_s[a][p] = 0;
			if (L->hop_nvl_s[a][p] > 0) L->hop_nvl_s[a][p] = 0;
			if (L->hop_net_s[a][p] > 0) L->hop_net_s[a][p] = 0;
		}
	L->pat_rank_s = 0;
	out->comm_eff = 1;
	memset(out->tables.coll_ranks, 0, sizeof(out->tables.coll_ranks));
}

static int model_times(const struct model *m, const struct hw *h, const struct plan *p, struct stage_times *t, char *err)
{
	struct hw hc;
	no_comm(h, &hc);
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < 2; i++) {
		struct estimate e;
		struct event_sim s;
		if (estimate_plan(m, i ? &hc : h, p, &e, err) || event_run(m, i ? &hc : h, p, &e, NULL, &s, err)) {
			stage_times_free(t);
			return -1;
		}
		size_t bytes = (size_t)s.nstages * sizeof(double);
		t->n = s.nstages;
		t->f[i] = malloc(bytes);
		t->b[i] = malloc(bytes);
		t->w[i] = malloc(bytes);
		if (t->f[i] && t->b[i] && t->w[i]) {
			memcpy(t->f[i], s.t_f, bytes);
			memcpy(t->b[i], s.t_b, bytes);
			memcpy(t->w[i], s.t_w, bytes);
		}
		event_sim_free(&s);
		if (!t->f[i] || !t->b[i] || !t->w[i]) { stage_times_free(t); return errf(err, "op times: out of memory"); }
	}
	return 0;
}

/* measured compute / modelled compute over the measured stages; comm = full − compute */
static double ratio(const double *meas, const int *cnt, int nmeas, const double *full, const double *comp, int n)
{
	double mc = 0, mdl = 0, all_meas = 0, all_full = 0;
	for (int st = 0; st < nmeas && st < n; st++) {
		if (!cnt[st]) continue;
		mc += meas[st] - (full[st] - comp[st]);
		mdl += comp[st];
		all_meas += meas[st];
		all_full += full[st];
	}
	if (mc > 0 && mdl > 0) return mc / mdl;
	return all_full > 0 && all_meas > 0 ? all_meas / all_full : 0; /* communication-bound: scale it all */
}

/* the same for a fused backward measured as BW against the model's B + W */
static double ratio_bw(const struct op_times *mt, const struct stage_times *t)
{
	double mc = 0, mdl = 0;
	for (int st = 0; st < mt->nstages && st < t->n; st++) {
		if (!mt->n[OPT_BW][st]) continue;
		double full = t->b[0][st] + t->w[0][st], comp = t->b[1][st] + t->w[1][st];
		mc += mt->mean_s[OPT_BW][st] - (full - comp);
		mdl += comp;
	}
	return mc > 0 && mdl > 0 ? mc / mdl : 0;
}

static int alloc_out(struct op_times *out, int n, char *err)
{
	memset(out, 0, sizeof(*out));
	out->nstages = n;
	for (int k = 0; k < OPT_KINDS; k++) {
		out->mean_s[k] = calloc((size_t)n, sizeof(double));
		out->n[k] = calloc((size_t)n, sizeof(int));
		if (!out->mean_s[k] || !out->n[k]) { op_times_free(out); return errf(err, "op times: out of memory"); }
	}
	out->layers = malloc((size_t)n * sizeof(int));
	if (!out->layers) { op_times_free(out); return errf(err, "op times: out of memory"); }
	for (int s = 0; s < n; s++) out->layers[s] = -1;
	return 0;
}

int op_times_retarget(const struct model *m, const struct hw *h, const struct plan *from,
		      const struct op_times *meas, const struct plan *to, struct op_times *out, char *err)
{
	struct stage_times a, b;
	if (model_times(m, h, from, &a, err)) return -1;
	if (model_times(m, h, to, &b, err)) { stage_times_free(&a); return -1; }
	double rf = ratio(meas->mean_s[OPT_F], meas->n[OPT_F], meas->nstages, a.f[0], a.f[1], a.n);
	double rb = ratio(meas->mean_s[OPT_B], meas->n[OPT_B], meas->nstages, a.b[0], a.b[1], a.n);
	double rw = ratio(meas->mean_s[OPT_W], meas->n[OPT_W], meas->nstages, a.w[0], a.w[1], a.n);
	double rbw = ratio_bw(meas, &a);
	if (!(rb > 0)) rb = rbw;
	if (!(rw > 0)) rw = rbw > 0 ? rbw : rb;
	int rc = 0;
	if (!(rf > 0) || !(rb > 0)) rc = errf(err, "op times: the trace has no forward or backward op to scale from");
	if (!rc) rc = alloc_out(out, b.n, err);
	for (int st = 0; !rc && st < b.n; st++) {
		double r[3] = {rf, rb, rw};
		double *full[3] = {b.f[0], b.b[0], b.w[0]}, *comp[3] = {b.f[1], b.b[1], b.w[1]};
		for (int k = OPT_F; k <= OPT_W; k++) {
			out->mean_s[k][st] = r[k] * comp[k][st] + (full[k][st] - comp[k][st]);
			out->n[k][st] = 1;
		}
	}
	out->events = meas->events;
	out->ignored = meas->ignored;
	stage_times_free(&a);
	stage_times_free(&b);
	return rc;
}
