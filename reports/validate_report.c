/* validate_report — what `scaleplan validate` prints: the per-row table of predicted against
 * measured, the scores (sim/validate.h's val_summary), the --by table, and the JSON document. */
#include <stdio.h>
#include <string.h>
#include "reports/json_out.h"
#include "reports/validate_report.h"

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

void validate_print_by(const char *column, const struct val_group *g, int n, FILE *f)
{
	/* the key column is as wide as its widest key (at least 28, at most 64) */
	int w = 28;
	for (int j = 0; j < n; j++) w = (int)strlen(g[j].key) > w ? (int)strlen(g[j].key) : w;
	if (w > 64) w = 64;
	fprintf(f, "by %s:\n%-*.*s %5s %6s %10s %10s %8s %6s %8s %6s %7s\n", column, w, w, column, "rows", "scored",
		"mean err %", "median err", "MAPE %", "mem", "mem MAPE", "fit", "fit %");
	for (int j = 0; j < n; j++) {
		char e[16] = "-", md[16] = "-", m[16] = "-", mm[16] = "-", fa[16] = "-";
		if (g[j].tps_rows) {
			snprintf(e, sizeof(e), "%+.1f", 100 * g[j].mean_signed_err);
			snprintf(md, sizeof(md), "%+.1f", 100 * g[j].median_signed_err);
			snprintf(m, sizeof(m), "%.1f", 100 * g[j].mape);
		}
		if (g[j].mem_rows) snprintf(mm, sizeof(mm), "%.1f", 100 * g[j].memory_mape);
		if (g[j].fit_rows) snprintf(fa, sizeof(fa), "%.1f", 100 * g[j].fit_accuracy);
		fprintf(f, "%-*.*s %5d %6d %10s %10s %8s %6d %8s %6d %7s\n", w, w, g[j].key, g[j].rows, g[j].tps_rows, e, md,
			m, g[j].mem_rows, mm, g[j].fit_rows, fa);
	}
}

static void summary_json(cJSON *o, const struct val_summary *s)
{
	cJSON_AddNumberToObject(o, "excluded", s->excluded);
	cJSON_AddNumberToObject(o, "rows", s->rows);
	cJSON_AddNumberToObject(o, "simulated", s->simulated);
	cJSON_AddNumberToObject(o, "not_simulated", s->not_simulated);
	cJSON_AddNumberToObject(o, "throughput_rows", s->tps_rows);
	json_add_sig(o, "throughput_mape", s->throughput_mape, 6);
	json_add_sig(o, "throughput_median_ape", s->throughput_median_ape, 6);
	cJSON_AddNumberToObject(o, "memory_rows", s->mem_rows);
	json_add_sig(o, "memory_mape", s->memory_mape, 6);
	cJSON_AddNumberToObject(o, "fit_rows", s->fit_rows);
	json_add_sig(o, "fit_accuracy", s->fit_accuracy, 6);
	cJSON_AddNumberToObject(o, "groups", s->groups);
	json_add_sig(o, "rank_spearman", s->rank_spearman, 6);
	json_add_sig(o, "top1_regret", s->top1_regret, 6);
	json_add_sig(o, "top1_regret_median", s->top1_regret_median, 6);
}

static void by_json(cJSON *o, const char *column, const struct val_group *groups, int n)
{
	cJSON *by = cJSON_AddObjectToObject(o, "by");
	cJSON_AddStringToObject(by, "column", column);
	cJSON *arr = cJSON_AddArrayToObject(by, "groups");
	for (int j = 0; j < n; j++) {
		const struct val_group *g = &groups[j];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, x);
		cJSON_AddStringToObject(x, "key", g->key);
		cJSON_AddNumberToObject(x, "rows", g->rows);
		cJSON_AddNumberToObject(x, "throughput_rows", g->tps_rows);
		json_add_sig(x, "mean_signed_err", g->mean_signed_err, 6);
		json_add_sig(x, "median_signed_err", g->median_signed_err, 6);
		json_add_sig(x, "throughput_mape", g->mape, 6);
		cJSON_AddNumberToObject(x, "memory_rows", g->mem_rows);
		json_add_sig(x, "memory_mape", g->memory_mape, 6);
		cJSON_AddNumberToObject(x, "fit_rows", g->fit_rows);
		json_add_sig(x, "fit_accuracy", g->fit_accuracy, 6);
	}
}

static cJSON *row_json(const struct val_row *r)
{
	cJSON *x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "id", r->id);
	cJSON_AddStringToObject(x, "status", r->status);
	if (r->framework[0]) cJSON_AddStringToObject(x, "framework", r->framework);
	cJSON_AddBoolToObject(x, "simulated", r->simulated);
	if (!r->simulated) cJSON_AddStringToObject(x, "reason", r->reason);
	if (r->simulated || r->excluded) {
		json_add_sig(x, "pred_tokens_per_s_per_gpu", r->pred_tps, 6);
		json_add_sig(x, "pred_step_time_s", r->pred_step_s, 6);
		json_add_sig(x, "pred_mfu", r->pred_mfu, 6);
		json_add_sig(x, "pred_mem_gib", r->pred_mem_gib, 6);
		json_add_sig(x, "pred_peak_gib", r->pred_peak_gib, 6);
		cJSON_AddBoolToObject(x, "pred_fits", r->pred_fits);
		cJSON *parts = cJSON_AddObjectToObject(x, "pred_mem_parts_gib");
		json_add_sig(parts, "static", r->pred_static_gib, 4);
		json_add_sig(parts, "act", r->pred_act_gib, 4);
		json_add_sig(parts, "logits", r->pred_logits_gib, 4);
		json_add_sig(parts, "buffers", r->pred_buf_gib, 4);
	}
	if (r->meas_tps > 0) json_add_sig(x, "meas_tokens_per_s_per_gpu", r->meas_tps, 6);
	if (r->meas_mem_gib > 0) json_add_sig(x, "meas_mem_gib", r->meas_mem_gib, 6);
	if (r->assumed[0]) cJSON_AddStringToObject(x, "assumed", r->assumed);
	return x;
}

int validate_write_json(const char *path, const struct val_row *rows, int n, const struct val_summary *s,
			const char *by_column, const struct val_group *groups, int ngroups, FILE *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "file", path);
	summary_json(o, s);
	if (by_column) by_json(o, by_column, groups, ngroups);
	cJSON *res = cJSON_AddArrayToObject(o, "results");
	for (int i = 0; i < n; i++) cJSON_AddItemToArray(res, row_json(&rows[i]));
	int rc = json_print(f, o, 0);
	cJSON_Delete(o);
	return rc;
}
