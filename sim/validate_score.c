/* validate_score — the scores over a validated file (sim/validate.h): throughput and memory
 * errors, fit/OOM accuracy, and per group of comparable rows the Spearman rank correlation and
 * the top-1 regret, and the same errors per --by group. Printed by reports/validate_report.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim/validate.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* sorts v in place */
static double median(double *v, int k)
{
	qsort(v, k, sizeof(double), cmp_double);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static void ranks_of(const double *x, int n, double *rk)
{
	for (int i = 0; i < n; i++) {
		double less = 0, eq = 0;
		for (int j = 0; j < n; j++) { less += x[j] < x[i]; eq += x[j] == x[i]; }
		rk[i] = less + (eq + 1) / 2; /* average rank of a tie */
	}
}

double spearman(const double *x, const double *y, int n)
{
	if (n < 2) return 0;
	double *rx = malloc(2 * n * sizeof(double)), *ry = rx + n;
	if (!rx) return 0;
	ranks_of(x, n, rx);
	ranks_of(y, n, ry);
	double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
	for (int i = 0; i < n; i++) { mx += rx[i]; my += ry[i]; }
	mx /= n; my /= n;
	for (int i = 0; i < n; i++) {
		sxy += (rx[i] - mx) * (ry[i] - my);
		sxx += (rx[i] - mx) * (rx[i] - mx);
		syy += (ry[i] - my) * (ry[i] - my);
	}
	free(rx);
	return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
}

/* the signed throughput error, (predicted - measured) / measured, of a row the scores count:
 * simulated, ok, with a measured tokens/s. Returns 0 for any other row. */
static int tps_err(const struct val_row *r, double *e)
{
	if (!r->simulated || strcmp(r->status, "ok") || r->meas_tps <= 0) return 0;
	*e = (r->pred_tps - r->meas_tps) / r->meas_tps;
	return 1;
}

static int same_group(const struct val_row *a, const struct val_row *b)
{
	return !strcmp(a->model, b->model) && !strcmp(a->gpu, b->gpu) && a->num_gpus == b->num_gpus &&
	       a->seq == b->seq && a->gbs == b->gbs;
}

void validate_summarize(const struct val_row *rows, int n, struct val_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->rows = n;
	double *ape = malloc((n + 1) * sizeof(double));
	double *x = malloc((n + 1) * sizeof(double)), *y = malloc((n + 1) * sizeof(double));
	int *done = calloc(n + 1, sizeof(int));
	if (!ape || !x || !y || !done) goto out;
	int fit_ok = 0;
	double mem_sum = 0;
	for (int i = 0; i < n; i++) {
		const struct val_row *r = &rows[i];
		if (!r->simulated) { s->not_simulated++; s->excluded += r->excluded; continue; }
		s->simulated++;
		double e;
		if (tps_err(r, &e)) ape[s->tps_rows++] = fabs(e);
		if (r->meas_mem_gib > 0 && !strcmp(r->status, "ok")) {
			mem_sum += fabs(r->pred_mem_gib - r->meas_mem_gib) / r->meas_mem_gib;
			s->mem_rows++;
		}
		if (!strcmp(r->status, "ok") || !strcmp(r->status, "oom")) {
			s->fit_rows++;
			fit_ok += r->pred_fits == !strcmp(r->status, "ok");
		}
	}
	if (s->tps_rows) {
		double sum = 0;
		for (int i = 0; i < s->tps_rows; i++) sum += ape[i];
		s->throughput_mape = sum / s->tps_rows;
		s->throughput_median_ape = median(ape, s->tps_rows);
	}
	if (s->mem_rows) s->memory_mape = mem_sum / s->mem_rows;
	if (s->fit_rows) s->fit_accuracy = (double)fit_ok / s->fit_rows;
	double rho_sum = 0, regret_sum = 0;
	double *regrets = ape; /* the APEs are summarised above; reuse the array */
	for (int i = 0; i < n; i++) {
		if (done[i] || !rows[i].simulated) continue;
		int k = 0, best_pick = -1;
		double best_meas = 0, best_pred = -1;
		for (int j = i; j < n; j++) {
			const struct val_row *r = &rows[j];
			if (!r->simulated || !same_group(&rows[i], r)) continue;
			done[j] = 1;
			int ok = !strcmp(r->status, "ok");
			if (ok && r->meas_tps > 0) {
				x[k] = r->pred_tps; y[k] = r->meas_tps; k++;
				if (r->meas_tps > best_meas) best_meas = r->meas_tps;
			}
			if ((ok || !strcmp(r->status, "oom")) && r->pred_fits && r->pred_tps > best_pred) {
				best_pred = r->pred_tps;
				best_pick = j;
			}
		}
		if (k < 3) continue;
		s->groups++;
		rho_sum += spearman(x, y, k);
		double regret = 1;
		if (best_pick >= 0 && !strcmp(rows[best_pick].status, "ok") && rows[best_pick].meas_tps > 0)
			regret = 1 - rows[best_pick].meas_tps / best_meas;
		regret_sum += regret;
		regrets[s->groups - 1] = regret;
	}
	if (s->groups) {
		s->rank_spearman = rho_sum / s->groups;
		s->top1_regret = regret_sum / s->groups;
		s->top1_regret_median = median(regrets, s->groups);
	}
out:
	free(ape); free(x); free(y); free(done);
}

/* the scores of one --by group, over the rows validate_summarize scores */
static void group_add(struct val_group *g, const struct val_row *r)
{
	g->rows++;
	if (!r->simulated) return;
	int ok = !strcmp(r->status, "ok");
	double e;
	if (tps_err(r, &e)) {
		g->mean_signed_err += e;
		g->mape += fabs(e);
		g->tps_rows++;
	}
	if (ok && r->meas_mem_gib > 0) {
		g->memory_mape += fabs(r->pred_mem_gib - r->meas_mem_gib) / r->meas_mem_gib;
		g->mem_rows++;
	}
	if (ok || !strcmp(r->status, "oom")) {
		g->fit_accuracy += r->pred_fits == ok;
		g->fit_rows++;
	}
}

int validate_by(const struct val_row *rows, int n, struct val_group **groups)
{
	struct val_group *g = calloc(n + 1, sizeof(*g));
	int *of = malloc((n + 1) * sizeof(int)); /* each row's group */
	double *e = malloc((n + 1) * sizeof(double));
	if (!g || !of || !e) { free(g); free(of); free(e); return -1; }
	int ng = 0;
	for (int i = 0; i < n; i++) {
		const char *key = rows[i].by[0] ? rows[i].by : "(unknown)";
		int j = 0;
		while (j < ng && strcmp(g[j].key, key)) j++;
		if (j == ng) snprintf(g[ng++].key, sizeof(g->key), "%s", key);
		group_add(&g[j], &rows[i]);
		of[i] = j;
	}
	for (int j = 0; j < ng; j++) {
		if (g[j].tps_rows) {
			int k = 0;
			for (int i = 0; i < n; i++)
				k += of[i] == j && tps_err(&rows[i], &e[k]);
			g[j].median_signed_err = median(e, k);
			g[j].mean_signed_err /= g[j].tps_rows;
			g[j].mape /= g[j].tps_rows;
		}
		if (g[j].mem_rows) g[j].memory_mape /= g[j].mem_rows;
		if (g[j].fit_rows) g[j].fit_accuracy /= g[j].fit_rows;
	}
	free(of);
	free(e);
	*groups = g;
	return ng;
}
