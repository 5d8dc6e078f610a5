/* db_bench — the benchmarks side of `scaleplan db`: which benchmark measured a finalist, and
 * `db export --tsv`, every benchmark as a measured run in the validation format
 * (shared/validation/FORMAT.md), so a user's own runs become validation data for
 * `scaleplan validate` and `scaleplan calibrate`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli/cli.h"
#include "cli/db_bench.h"
#include "sim/model.h"
#include "sim/util.h"

const struct store_bench *db_bench_of(const struct store_bench *b, int n, long finalist_id)
{
	const struct store_bench *last = NULL;
	for (int i = 0; i < n; i++)
		if (b[i].finalist_id == finalist_id) last = &b[i]; /* the latest, by id */
	return last;
}

void db_bench_json(cJSON *o, const struct store_bench *b)
{
	if (!b) return;
	cJSON_AddStringToObject(o, "bench_status", b->status);
	cJSON_AddNumberToObject(o, "measured_step_time_s", b->step_time_s);
	cJSON_AddNumberToObject(o, "measured_tokens_per_s_per_gpu", b->tokens_per_s_per_gpu);
	cJSON_AddNumberToObject(o, "measured_peak_mem_bytes", b->peak_mem_bytes);
	cJSON_AddItemToObject(o, "measured_peak_mem_bytes_per_rank", cJSON_CreateDoubleArray(b->peak_mem_bytes_per_rank, b->nranks));
	cJSON_AddNumberToObject(o, "bench_steps", b->steps);
	cJSON_AddNumberToObject(o, "bench_id", (double)b->id);
	if (b->run_id) cJSON_AddNumberToObject(o, "run_id", (double)b->run_id);
	if (*b->message) cJSON_AddStringToObject(o, "bench_message", b->message);
}

static const char *const tsv_cols[] = {
	"id", "source", "framework", "model", "layers", "hidden", "ffn_hidden", "heads", "kv_heads", "head_dim",
	"vocab", "tied_embeddings", "norm", "mlp", "moe_experts", "moe_topk", "moe_ffn_hidden", "moe_shared_experts",
	"moe_dense_layers", "seq_len", "global_batch_seqs", "micro_batch", "gpu", "gpus_per_node", "num_gpus", "tp",
	"pp", "dp", "cp", "ep", "vpp", "sp", "zero", "recompute", "pp_schedule", "precision", "status",
	"tokens_per_s_per_gpu", "step_time_s", "mem_gib", "mem_kind", "reported_mfu_pct", "flop_convention", "derived",
	"confidence", "notes"};
#define NTSV (sizeof(tsv_cols) / sizeof(tsv_cols[0]))

/* the tune's request: model and gpu as the user gave them (names or paths validate can load) */
static void request_names(const struct store_tune *t, char *model, char *gpu, size_t cap)
{
	snprintf(model, cap, "%s", t->model);
	snprintf(gpu, cap, "%s", t->gpu);
	cJSON *in = cJSON_Parse(t->inputs_json);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(in, "model"), *g = cJSON_GetObjectItemCaseSensitive(in, "gpu");
	if (cJSON_IsString(m)) snprintf(model, cap, "%s", m->valuestring);
	if (cJSON_IsString(g)) snprintf(gpu, cap, "%s", g->valuestring);
	cJSON_Delete(in);
}

/* cells with TAB or newline would break the format: replace them */
static void clean(char *s)
{
	for (; *s; s++) if (*s == '\t' || *s == '\n' || *s == '\r') *s = ' ';
}

static void tsv_row(const struct store_bench *b, const struct store_tune *t, const struct store_finalist *f,
		    const struct model *m, const char *model, const char *gpu, FILE *o)
{
	struct plan p;
	char err[ERR_LEN], notes[700], msg[420];
	plan_defaults(&p);
	if (plan_from_json(f->plan_json, &p, err)) return;
	int ok = !strcmp(b->status, "ok"), has_mem = b->peak_mem_bytes > 0;
	const char *status = ok ? "ok" : !strcmp(b->status, "oom") ? "oom" : "fail";
	snprintf(msg, sizeof(msg), "%s", b->message);
	clean(msg);
	char run[48] = "";
	if (b->run_id) snprintf(run, sizeof(run), ", run %ld", b->run_id);
	snprintf(notes, sizeof(notes), "measured by scaleplan run (tune %ld, finalist %ld, benchmark %ld%s)%s%s%s", t->id,
		 f->id, b->id, run, ok ? "" : "; ", ok ? "" : b->status, ok ? "" : ": ");
	size_t nn = strlen(notes);
	if (!ok) snprintf(notes + nn, sizeof(notes) - nn, "%s", msg);
	fprintf(o, "B%ld\tscaleplan tune %ld\tother\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t",
		b->id, t->id, model, m->layers, m->hidden, m->ffn_hidden, m->heads, m->kv_heads, m->head_dim, m->vocab,
		m->tied, m->norm == NORM_RMS ? "rmsnorm" : "layernorm", m->mlp == MLP_SWIGLU ? "swiglu" : "gelu",
		m->moe_experts, m->moe_topk, m->moe_experts ? m->moe_ffn_hidden : 0, m->moe_shared_experts,
		m->moe_experts ? m->moe_dense_layers : 0);
	fprintf(o, "%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t", p.seq, p.gbs, p.mbs, gpu,
		p.gpus_per_node, p.gpus, p.tp, p.pp, p.dp, p.cp, p.ep, p.vpp, p.sp, p.zero,
		p.recompute == RC_OP ? "selective" : recompute_name(p.recompute), p.pp > 1 ? schedule_name(p.schedule) : "none",
		precision_name(p.precision), status);
	if (ok) fprintf(o, "%.6f\t%.6f\t", b->tokens_per_s_per_gpu, b->step_time_s);
	else fprintf(o, "\t\t");
	if (has_mem) fprintf(o, "%.6f\tallocated\t", b->peak_mem_bytes / GIB);
	else fprintf(o, "\t\t");
	fprintf(o, "\t\t%s\thigh\t%s\n",
		ok ? "step_time_s = median of the steps after the first; tokens_per_s_per_gpu = global_batch_seqs*seq_len/(step_time_s*num_gpus)" : "",
		notes);
}

int db_export_tsv(struct store *s, FILE *o)
{
	char err[ERR_LEN];
	struct store_tune *t = NULL;
	struct store_finalist *f = NULL;
	struct store_bench *b = NULL;
	int nt = 0, nf = 0, nb = 0, rc = EXIT_OK;
	if (store_list_tunes(s, &t, &nt, err) || store_list_finalists(s, 0, &f, &nf, err) ||
	    store_list_benchmarks(s, 0, &b, &nb, err)) {
		cli_error("db", "%s", err);
		rc = EXIT_RUNTIME;
		goto out;
	}
	fprintf(o, "# Benchmarks recorded by scaleplan tune --bench-top, in the format of shared/validation/FORMAT.md.\n");
	for (size_t i = 0; i < NTSV; i++) fprintf(o, "%s%s", i ? "\t" : "", tsv_cols[i]);
	fprintf(o, "\n");
	for (int i = 0; i < nb; i++) {
		const struct store_tune *tt = NULL;
		const struct store_finalist *ff = NULL;
		for (int k = 0; k < nt; k++) if (t[k].id == b[i].tune_id) tt = &t[k];
		for (int k = 0; k < nf; k++) if (f[k].id == b[i].finalist_id) ff = &f[k];
		if (!tt || !ff) continue;
		char model[256], gpu[256];
		struct model m;
		request_names(tt, model, gpu, sizeof(model));
		if (model_load(model, &m, err)) {
			cli_error("db", "benchmark %ld left out: %s", b[i].id, err);
			continue;
		}
		tsv_row(&b[i], tt, ff, &m, model, gpu, o);
	}
out:
	store_free_tunes(t, nt);
	store_free_finalists(f, nf);
	store_free_benchmarks(b, nb);
	return rc;
}
