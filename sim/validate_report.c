/* validate_report — the scores over a validated file (sim/validate.h): throughput and memory
 * errors, fit/OOM accuracy, and per group of comparable rows the Spearman rank correlation and
 * the top-1 regret; then the per-row table and the JSON document. */
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
		if (!strcmp(r->status, "ok") && r->meas_tps > 0)
			ape[s->tps_rows++] = fabs(r->pred_tps - r->meas_tps) / r->meas_tps;
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

void validate_print(const char *path, const struct val_row *rows, int n, const struct val_summary *s, FILE *f)
{
	fprintf(f, "%s\n%-10s %-16s %-10s %5s %6s %12s %12s %8s %9s %9s %5s\n", path, "id", "gpu", "status", "gpus",
		"seq", "pred tok/s", "meas tok/s", "err %", "pred GiB", "meas GiB", "fits");
	for (int i = 0; i < n; i++) {
		const struct val_row *r = &rows[i];
		if (!r->simulated) continue;
		char meas[16] = "-", errp[16] = "-", mm[16] = "-";
		if (r->meas_tps > 0) {
			snprintf(meas, sizeof(meas), "%.1f", r->meas_tps);
			snprintf(errp, sizeof(errp), "%+.1f", 100 * (r->pred_tps - r->meas_tps) / r->meas_tps);
		}
		if (r->meas_mem_gib > 0) snprintf(mm, sizeof(mm), "%.1f", r->meas_mem_gib);
		fprintf(f, "%-10s %-16s %-10s %5d %6d %12.1f %12s %8s %9.1f %9s %5s\n", r->id, r->gpu, r->status,
			r->num_gpus, r->seq, r->pred_tps, meas, errp, r->pred_mem_gib, mm, r->pred_fits ? "yes" : "no");
	}
	if (s->not_simulated) {
		fprintf(f, "not simulated (%d):\n", s->not_simulated);
		for (int i = 0; i < n; i++)
			if (!rows[i].simulated) fprintf(f, "  %-10s %s\n", rows[i].id, rows[i].reason);
	}
	fprintf(f, "rows %d, simulated %d, not simulated %d (of which %d predicted but excluded from the scores)\n",
		s->rows, s->simulated, s->not_simulated, s->excluded);
	fprintf(f, "throughput MAPE %.1f %%, median APE %.1f %% (%d ok rows with tokens/s)\n",
		100 * s->throughput_mape, 100 * s->throughput_median_ape, s->tps_rows);
	fprintf(f, "memory MAPE %.1f %% (%d ok rows with memory)\n", 100 * s->memory_mape, s->mem_rows);
	fprintf(f, "fit/OOM predictions right %.1f %% (%d ok/oom rows)\n", 100 * s->fit_accuracy, s->fit_rows);
	fprintf(f, "groups with >= 3 ok rows: %d; mean Spearman %.3f; mean top-1 regret %.1f %% (median %.1f %%)\n",
		s->groups, s->rank_spearman, 100 * s->top1_regret, 100 * s->top1_regret_median);
}

/* the scores of one --by group, over the rows validate_summarize scores */
static void group_add(struct val_group *g, const struct val_row *r)
{
	g->rows++;
	if (!r->simulated) return;
	int ok = !strcmp(r->status, "ok");
	if (ok && r->meas_tps > 0) {
		double e = (r->pred_tps - r->meas_tps) / r->meas_tps;
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
	if (!g) return -1;
	int ng = 0;
	for (int i = 0; i < n; i++) {
		const char *key = rows[i].by[0] ? rows[i].by : "(unknown)";
		int j = 0;
		while (j < ng && strcmp(g[j].key, key)) j++;
		if (j == ng) snprintf(g[ng++].key, sizeof(g->key), "%s", key);
		group_add(&g[j], &rows[i]);
	}
	for (int j = 0; j < ng; j++) {
		if (g[j].tps_rows) { g[j].mean_signed_err /= g[j].tps_rows; g[j].mape /= g[j].tps_rows; }
		if (g[j].mem_rows) g[j].memory_mape /= g[j].mem_rows;
		if (g[j].fit_rows) g[j].fit_accuracy /= g[j].fit_rows;
	}
	*groups = g;
	return ng;
}

void validate_print_by(const char *column, const struct val_group *g, int n, FILE *f)
{
	fprintf(f, "by %s:\n%-28s %5s %6s %10s %8s %6s %8s %6s %7s\n", column, column, "rows", "scored",
		"mean err %", "MAPE %", "mem", "mem MAPE", "fit", "fit %");
	for (int j = 0; j < n; j++) {
		char e[16] = "-", m[16] = "-", mm[16] = "-", fa[16] = "-";
		if (g[j].tps_rows) {
			snprintf(e, sizeof(e), "%+.1f", 100 * g[j].mean_signed_err);
			snprintf(m, sizeof(m), "%.1f", 100 * g[j].mape);
		}
		if (g[j].mem_rows) snprintf(mm, sizeof(mm), "%.1f", 100 * g[j].memory_mape);
		if (g[j].fit_rows) snprintf(fa, sizeof(fa), "%.1f", 100 * g[j].fit_accuracy);
		fprintf(f, "%-28.28s %5d %6d %10s %8s %6d %8s %6d %7s\n", g[j].key, g[j].rows, g[j].tps_rows, e, m,
			g[j].mem_rows, mm, g[j].fit_rows, fa);
	}
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 32) fprintf(f, "\\u%04x", *s);
		else fputc(*s, f);
	}
	fputc('"', f);
}

void validate_write_json(const char *path, const struct val_row *rows, int n, const struct val_summary *s,
			 const char *by_column, const struct val_group *groups, int ngroups, FILE *f)
{
	fprintf(f, "{\"file\":");
	json_str(f, path);
	fprintf(f, ",\"excluded\":%d", s->excluded);
	fprintf(f, ",\"rows\":%d,\"simulated\":%d,\"not_simulated\":%d,\"throughput_rows\":%d,\"throughput_mape\":%.6g,"
		"\"throughput_median_ape\":%.6g,\"memory_rows\":%d,\"memory_mape\":%.6g,\"fit_rows\":%d,\"fit_accuracy\":%.6g,"
		"\"groups\":%d,\"rank_spearman\":%.6g,\"top1_regret\":%.6g,\"top1_regret_median\":%.6g,",
		s->rows, s->simulated, s->not_simulated, s->tps_rows, s->throughput_mape, s->throughput_median_ape,
		s->mem_rows, s->memory_mape, s->fit_rows, s->fit_accuracy, s->groups, s->rank_spearman, s->top1_regret,
		s->top1_regret_median);
	if (by_column) {
		fprintf(f, "\"by\":{\"column\":");
		json_str(f, by_column);
		fprintf(f, ",\"groups\":[");
		for (int j = 0; j < ngroups; j++) {
			const struct val_group *g = &groups[j];
			fprintf(f, "%s{\"key\":", j ? "," : "");
			json_str(f, g->key);
			fprintf(f, ",\"rows\":%d,\"throughput_rows\":%d,\"mean_signed_err\":%.6g,\"throughput_mape\":%.6g,"
				"\"memory_rows\":%d,\"memory_mape\":%.6g,\"fit_rows\":%d,\"fit_accuracy\":%.6g}",
				g->rows, g->tps_rows, g->mean_signed_err, g->mape, g->mem_rows, g->memory_mape, g->fit_rows,
				g->fit_accuracy);
		}
		fprintf(f, "]},");
	}
	fprintf(f, "\"results\":[");
	for (int i = 0; i < n; i++) {
		const struct val_row *r = &rows[i];
		fprintf(f, "%s{\"id\":", i ? "," : "");
		json_str(f, r->id);
		fprintf(f, ",\"status\":");
		json_str(f, r->status);
		if (r->framework[0]) { fprintf(f, ",\"framework\":"); json_str(f, r->framework); }
		fprintf(f, ",\"simulated\":%s", r->simulated ? "true" : "false");
		if (!r->simulated) {
			fprintf(f, ",\"reason\":");
			json_str(f, r->reason);
		}
		if (r->simulated || r->excluded) {
			fprintf(f, ",\"pred_tokens_per_s_per_gpu\":%.6g,\"pred_step_time_s\":%.6g,\"pred_mfu\":%.6g,"
				"\"pred_mem_gib\":%.6g,\"pred_peak_gib\":%.6g,\"pred_fits\":%s", r->pred_tps, r->pred_step_s,
				r->pred_mfu, r->pred_mem_gib, r->pred_peak_gib, r->pred_fits ? "true" : "false");
			fprintf(f, ",\"pred_mem_parts_gib\":{\"static\":%.4g,\"act\":%.4g,\"logits\":%.4g,\"buffers\":%.4g}",
				r->pred_static_gib, r->pred_act_gib, r->pred_logits_gib, r->pred_buf_gib);
		}
		if (r->meas_tps > 0) fprintf(f, ",\"meas_tokens_per_s_per_gpu\":%.6g", r->meas_tps);
		if (r->meas_mem_gib > 0) fprintf(f, ",\"meas_mem_gib\":%.6g", r->meas_mem_gib);
		if (r->assumed[0]) { fprintf(f, ",\"assumed\":"); json_str(f, r->assumed); }
		fputc('}', f);
	}
	fprintf(f, "]}\n");
}
