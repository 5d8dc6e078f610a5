/* partition — layer-to-stage splits by dynamic programming and by a GLPK MILP.
 *
 * MILP ("staircase" formulation, reference/ecosystem.md §7.1, measured there to solve far
 * faster than the plain assignment form): z[l][s] = 1 iff layer l sits on a stage <= s, for
 * s < S-1 (z[l][S-1] = 1 implicitly). z is monotone in s and non-increasing in l, which makes
 * every split contiguous; layer l is on stage s iff x[l][s] = z[l][s] - z[l][s-1] = 1.
 * y[l][s] <= x[l][s] marks layer l fully recomputed on stage s. Minimise T subject to, for
 * every stage s:
 *   stage_s[s] + Σ_l time_s[l]·x[l][s] + Σ_l recompute_s[l]·y[l][s]                    <= T
 *   stage_bytes[s] + Σ_l (weight_bytes[l] + k_s·act_bytes[l])·x[l][s]
 *                  - Σ_l k_s·(act_bytes[l] - ckpt_bytes[l])·y[l][s]                    <= cap[s]
 *   Σ_l x[l][s] >= 1
 * with k_s = inflight[s]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <glpk.h>
#include "tuner/partition.h"
#include "sim/util.h"

static double stage_fixed(const double *a, int s) { return a ? a[s] : 0; }

int partition_dp(const struct part_problem *pb, struct part_result *r, char *err)
{
	int L = pb->nlayers, S = pb->nstages;
	if (L < 1 || S < 1 || S > L)
		return errf(err, "partition: %d stages cannot each take one of %d layers", S, L);
	double *pre = malloc(sizeof(double) * (size_t)(L + 1));
	double *f = malloc(sizeof(double) * (size_t)S * (L + 1));
	int *arg = malloc(sizeof(int) * (size_t)S * (L + 1));
	if (!pre || !f || !arg) {
		free(pre); free(f); free(arg);
		return errf(err, "partition: out of memory");
	}
	pre[0] = 0;
	for (int l = 0; l < L; l++) pre[l + 1] = pre[l] + pb->time_s[l];
	/* f[s][j]: best max stage time with layers [0, j) on stages 0..s */
#define F(s, j) f[(size_t)(s) * (L + 1) + (j)]
#define ARG(s, j) arg[(size_t)(s) * (L + 1) + (j)]
	for (int j = 0; j <= L; j++) F(0, j) = j >= 1 ? stage_fixed(pb->stage_s, 0) + pre[j] : INFINITY;
	for (int s = 1; s < S; s++)
		for (int j = 0; j <= L; j++) {
			F(s, j) = INFINITY;
			ARG(s, j) = -1;
			for (int i = s; i < j; i++) {
				double v = fmax(F(s - 1, i), stage_fixed(pb->stage_s, s) + pre[j] - pre[i]);
				if (v < F(s, j)) { F(s, j) = v; ARG(s, j) = i; }
			}
		}
	r->max_stage_s = F(S - 1, L);
	for (int s = S - 1, j = L; s >= 0; s--) {
		int i = s ? ARG(s, j) : 0;
		r->counts[s] = j - i;
		j = i;
	}
#undef F
#undef ARG
	if (r->recompute) memset(r->recompute, 0, sizeof(int) * (size_t)L);
	r->status = PART_OPTIMAL;
	free(pre); free(f); free(arg);
	return 0;
}

int partition_dp_capped(const struct part_problem *pb, int rc_layers, struct part_result *r, char *err)
{
	int L = pb->nlayers, S = pb->nstages;
	if (L < 1 || S < 1 || S > L)
		return errf(err, "partition: %d stages cannot each take one of %d layers", S, L);
	if (!pb->recompute_s || !pb->weight_bytes || !pb->act_bytes || !pb->ckpt_bytes || !pb->inflight || !pb->cap_bytes)
		return errf(err, "partition: the capped split needs recompute times, bytes, in-flight counts and caps");
	/* prefix sums: time, recompute time, weights, activations, checkpoints */
	double *pre = malloc(sizeof(double) * (size_t)(5 * (L + 1)));
	double *f = malloc(sizeof(double) * (size_t)S * (L + 1));
	int *arg = malloc(sizeof(int) * (size_t)S * (L + 1));
	if (!pre || !f || !arg) {
		free(pre); free(f); free(arg);
		return errf(err, "partition: out of memory");
	}
	double *pt = pre, *prc = pre + (L + 1), *pw = pre + 2 * (L + 1), *pa = pre + 3 * (L + 1), *pc = pre + 4 * (L + 1);
	pt[0] = prc[0] = pw[0] = pa[0] = pc[0] = 0;
	for (int l = 0; l < L; l++) {
		pt[l + 1] = pt[l] + pb->time_s[l];
		prc[l + 1] = prc[l] + pb->recompute_s[l];
		pw[l + 1] = pw[l] + pb->weight_bytes[l];
		pa[l + 1] = pa[l] + pb->act_bytes[l];
		pc[l + 1] = pc[l] + pb->ckpt_bytes[l];
	}
#define F(s, j) f[(size_t)(s) * (L + 1) + (j)]
#define ARG(s, j) arg[(size_t)(s) * (L + 1) + (j)]
	for (int s = 0; s < S; s++)
		for (int j = 0; j <= L; j++) {
			F(s, j) = INFINITY;
			ARG(s, j) = -1;
			for (int i = s; i < j; i++) {
				double before = s ? F(s - 1, i) : (i == 0 ? 0 : INFINITY);
				if (isinf(before)) continue;
				int n = j - i, k = rc_layers < 0 || rc_layers > n ? n : rc_layers; /* layers [i, i+k) recompute */
				double bytes = stage_fixed(pb->stage_bytes, s) + pw[j] - pw[i] +
					       pb->inflight[s] * (pc[i + k] - pc[i] + pa[j] - pa[i + k]);
				if (bytes > pb->cap_bytes[s]) continue;
				double v = fmax(before, stage_fixed(pb->stage_s, s) + pt[j] - pt[i] + prc[i + k] - prc[i]);
				if (v < F(s, j)) { F(s, j) = v; ARG(s, j) = i; }
			}
		}
	r->max_stage_s = F(S - 1, L);
	if (isinf(r->max_stage_s)) {
		r->status = PART_INFEASIBLE;
	} else {
		for (int s = S - 1, j = L; s >= 0; s--) {
			int i = ARG(s, j);
			r->counts[s] = j - i;
			if (r->recompute) {
				int n = j - i, k = rc_layers < 0 || rc_layers > n ? n : rc_layers;
				for (int l = i; l < j; l++) r->recompute[l] = l < i + k;
			}
			j = i;
		}
		r->status = PART_OPTIMAL;
	}
#undef F
#undef ARG
	free(pre); free(f); free(arg);
	return 0;
}

double partition_stage_time(const struct part_problem *pb, const int *counts, const int *recompute,
			    double *stage_out)
{
	double worst = 0;
	for (int s = 0, l = 0; s < pb->nstages; s++) {
		double t = stage_fixed(pb->stage_s, s);
		for (int k = 0; k < counts[s]; k++, l++)
			t += pb->time_s[l] + (recompute && recompute[l] ? pb->recompute_s[l] : 0);
		if (stage_out) stage_out[s] = t;
		if (t > worst) worst = t;
	}
	return worst;
}

double partition_stage_bytes(const struct part_problem *pb, const int *counts, const int *recompute, int s)
{
	int l = 0;
	for (int i = 0; i < s; i++) l += counts[i];
	double b = stage_fixed(pb->stage_bytes, s);
	for (int k = 0; k < counts[s]; k++, l++)
		b += pb->weight_bytes[l] +
		     pb->inflight[s] * (recompute && recompute[l] ? pb->ckpt_bytes[l] : pb->act_bytes[l]);
	return b;
}

/* Column indices (1-based, GLPK): z[l][s] for s < S-1, then y[l][s], then T. */
struct milp_ix {
	int L, S;
};
static int zcol(const struct milp_ix *x, int l, int s) { return 1 + l * (x->S - 1) + s; }
static int ycol(const struct milp_ix *x, int l, int s) { return 1 + x->L * (x->S - 1) + l * x->S + s; }
static int tcol(const struct milp_ix *x) { return 1 + x->L * (x->S - 1) + x->L * x->S; }

/* row[] += coef · x[l][s], expanding x = z[l][s] - z[l][s-1]; returns the constant part. */
static double add_x(const struct milp_ix *x, double *row, int l, int s, double coef)
{
	double k = 0;
	if (s < x->S - 1) row[zcol(x, l, s)] += coef;
	else k += coef; /* z[l][S-1] == 1 */
	if (s > 0) row[zcol(x, l, s - 1)] -= coef;
	return k;
}

struct triplets {
	int n, cap;
	int *ia, *ja;
	double *ar;
};

/* Appends row `r` (dense, 1..ncols) as triplets and clears it. */
static int flush_row(struct triplets *t, int r, double *row, int ncols)
{
	for (int j = 1; j <= ncols; j++) {
		if (row[j] == 0) continue;
		if (t->n + 1 >= t->cap) {
			int nc = t->cap * 2;
			int *ia = realloc(t->ia, sizeof(int) * (size_t)nc);
			if (ia) t->ia = ia;
			int *ja = realloc(t->ja, sizeof(int) * (size_t)nc);
			if (ja) t->ja = ja;
			double *ar = realloc(t->ar, sizeof(double) * (size_t)nc);
			if (ar) t->ar = ar;
			if (!ia || !ja || !ar) return -1;
			t->cap = nc;
		}
		t->n++;
		t->ia[t->n] = r;
		t->ja[t->n] = j;
		t->ar[t->n] = row[j];
		row[j] = 0;
	}
	return 0;
}

static int milp_check(const struct part_problem *pb, char *err)
{
	if (pb->nlayers < 1 || pb->nstages < 1 || pb->nstages > pb->nlayers)
		return errf(err, "partition: %d stages cannot each take one of %d layers", pb->nstages, pb->nlayers);
	if (!pb->recompute_s || !pb->weight_bytes || !pb->act_bytes || !pb->ckpt_bytes || !pb->inflight || !pb->cap_bytes)
		return errf(err, "partition: the MILP needs recompute, memory and capacity arrays");
	if ((long)pb->nlayers * pb->nstages > 200000)
		return errf(err, "partition: %d layers x %d stages is too large for the MILP", pb->nlayers, pb->nstages);
	return 0;
}

/* Rows: 1..S time, S+1..2S memory, 2S+1..3S non-empty, then z monotonicity and y <= x. */
static int milp_build(glp_prob *P, const struct part_problem *pb, const struct milp_ix *x, struct triplets *t)
{
	int L = pb->nlayers, S = pb->nstages, ncols = tcol(x), r = 0;
	double *row = calloc((size_t)ncols + 1, sizeof(double));
	if (!row) return -1;
	glp_add_cols(P, ncols);
	for (int j = 1; j < ncols; j++) {
		glp_set_col_kind(P, j, GLP_BV);
	}
	double total = 0, lb = 0;
	for (int l = 0; l < L; l++) total += pb->time_s[l];
	for (int s = 0; s < S; s++) {
		total += stage_fixed(pb->stage_s, s);
		lb = fmax(lb, stage_fixed(pb->stage_s, s));
	}
	/* T is at least the mean stage and at least the largest fixed part: tightens the LP bound */
	glp_set_col_bnds(P, tcol(x), GLP_LO, fmax(lb, total / S), 0);
	glp_set_obj_coef(P, tcol(x), 1);
	for (int s = 0; s < S; s++) { /* time */
		double k = 0;
		for (int l = 0; l < L; l++) {
			k += add_x(x, row, l, s, pb->time_s[l]);
			row[ycol(x, l, s)] += pb->recompute_s[l];
		}
		row[tcol(x)] = -1;
		r = glp_add_rows(P, 1);
		glp_set_row_bnds(P, r, GLP_UP, 0, -stage_fixed(pb->stage_s, s) - k);
		if (flush_row(t, r, row, ncols)) goto oom;
	}
	double unit = 0; /* memory rows in units of the largest cap: keeps coefficients near 1 */
	for (int s = 0; s < S; s++) unit = fmax(unit, fabs(pb->cap_bytes[s]));
	if (unit <= 0) unit = 1;
	for (int s = 0; s < S; s++) { /* memory */
		double k = 0, ks = pb->inflight[s];
		for (int l = 0; l < L; l++) {
			k += add_x(x, row, l, s, (pb->weight_bytes[l] + ks * pb->act_bytes[l]) / unit);
			row[ycol(x, l, s)] -= ks * (pb->act_bytes[l] - pb->ckpt_bytes[l]) / unit;
		}
		r = glp_add_rows(P, 1);
		glp_set_row_bnds(P, r, GLP_UP, 0, (pb->cap_bytes[s] - stage_fixed(pb->stage_bytes, s)) / unit - k);
		if (flush_row(t, r, row, ncols)) goto oom;
	}
	for (int s = 0; s < S; s++) { /* every stage holds a layer */
		double k = 0;
		for (int l = 0; l < L; l++) k += add_x(x, row, l, s, 1);
		r = glp_add_rows(P, 1);
		glp_set_row_bnds(P, r, GLP_LO, 1 - k, 0);
		if (flush_row(t, r, row, ncols)) goto oom;
	}
	for (int l = 0; l < L; l++)
		for (int s = 0; s < S - 1; s++) {
			if (s + 1 < S - 1) { /* z[l][s] <= z[l][s+1] */
				row[zcol(x, l, s)] = 1;
				row[zcol(x, l, s + 1)] = -1;
				r = glp_add_rows(P, 1);
				glp_set_row_bnds(P, r, GLP_UP, 0, 0);
				if (flush_row(t, r, row, ncols)) goto oom;
			}
			if (l + 1 < L) { /* z[l+1][s] <= z[l][s] */
				row[zcol(x, l + 1, s)] = 1;
				row[zcol(x, l, s)] = -1;
				r = glp_add_rows(P, 1);
				glp_set_row_bnds(P, r, GLP_UP, 0, 0);
				if (flush_row(t, r, row, ncols)) goto oom;
			}
		}
	for (int l = 0; l < L; l++)
		for (int s = 0; s < S; s++) { /* y[l][s] - x[l][s] <= 0 */
			row[ycol(x, l, s)] = 1;
			double k = add_x(x, row, l, s, -1);
			r = glp_add_rows(P, 1);
			glp_set_row_bnds(P, r, GLP_UP, 0, -k);
			if (flush_row(t, r, row, ncols)) goto oom;
		}
	free(row);
	return 0;
oom:
	free(row);
	return -1;
}

static void milp_read(glp_prob *P, const struct part_problem *pb, const struct milp_ix *x, struct part_result *r)
{
	int L = pb->nlayers, S = pb->nstages;
	for (int s = 0; s < S; s++) r->counts[s] = 0;
	for (int l = 0; l < L; l++) {
		int s = 0;
		while (s < S - 1 && glp_mip_col_val(P, zcol(x, l, s)) < 0.5) s++;
		r->counts[s]++;
		if (r->recompute) r->recompute[l] = glp_mip_col_val(P, ycol(x, l, s)) > 0.5;
	}
	/* report the true objective of the rounded solution, not the solver's float */
	r->max_stage_s = partition_stage_time(pb, r->counts, r->recompute, NULL);
}

int partition_milp(const struct part_problem *pb, double time_limit_s, struct part_result *r, char *err)
{
	if (milp_check(pb, err)) return -1;
	struct milp_ix x = {pb->nlayers, pb->nstages};
	struct triplets t = {0, 1024, malloc(sizeof(int) * 1024), malloc(sizeof(int) * 1024), malloc(sizeof(double) * 1024)};
	glp_prob *P = glp_create_prob();
	int rc = -1;
	if (!t.ia || !t.ja || !t.ar) { errf(err, "partition: out of memory"); goto out; }
	glp_set_obj_dir(P, GLP_MIN);
	if (milp_build(P, pb, &x, &t)) { errf(err, "partition: out of memory"); goto out; }
	glp_load_matrix(P, t.n, t.ia, t.ja, t.ar);
	glp_iocp parm;
	glp_init_iocp(&parm);
	parm.presolve = GLP_ON;
	parm.msg_lev = GLP_MSG_OFF;
	parm.tm_lim = (int)(time_limit_s * 1000 > 1 ? time_limit_s * 1000 : 1);
	parm.mip_gap = 1e-9;
	glp_term_out(GLP_OFF);
	int ret = glp_intopt(P, &parm);
	int st = glp_mip_status(P);
	if (ret == GLP_ENOPFS || ret == GLP_ENODFS || st == GLP_NOFEAS) {
		r->status = PART_INFEASIBLE;
		rc = 0;
	} else if ((ret == 0 || ret == GLP_ETMLIM || ret == GLP_EMIPGAP) && (st == GLP_OPT || st == GLP_FEAS)) {
		milp_read(P, pb, &x, r);
		r->status = st == GLP_OPT && ret == 0 ? PART_OPTIMAL : PART_FEASIBLE;
		rc = 0;
	} else if (ret == GLP_ETMLIM) {
		r->status = PART_INFEASIBLE; /* no solution found in time */
		errf(err, "partition: no split found within %.1f s", time_limit_s);
	} else {
		errf(err, "partition: GLPK failed (glp_intopt %d, status %d)", ret, st);
	}
	glp_term_out(GLP_ON);
out:
	glp_delete_prob(P);
	free(t.ia); free(t.ja); free(t.ar);
	return rc;
}
