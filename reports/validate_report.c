/* validate_report — what `scaleplan validate` prints: the per-row table of predicted against
 * measured, the scores (sim/validate.h's val_summary), the --by table, and the JSON document. */
#include <stdio.h>
#include <string.h>
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
