/* Export of a known plan: exact flag and key names from reference/ecosystem.md §3 (Megatron-LM
 * arguments.py, nanotron ParallelismArgs, torchtitan job_config.py @v0.2.2, DeepSpeed
 * config-json.md), values derived by hand from the plan, and a "no equivalent" comment for each
 * feature a framework lacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tuner/export.h"
#include "tests/test.h"

/* Llama-3-70B on 512 GPUs: tp 8, pp 4 with 5 interleaved chunks, cp 2 => dp 512/64 = 8;
 * gbs 512, mbs 1 => 512 / (8*1) = 64 micro-batches; 80 layers / 20 virtual stages = 4 each. */
static const char *const known[] = {"gpus", "512", "tp", "8", "pp", "4", "vpp", "5", "cp", "2", "sp", "1",
				    "zero", "1", "recompute", "selective", "gbs", "512", "seq", "8192", NULL};

static char *run_export(const char *const *kv, enum export_format fmt, int *notes)
{
	struct plan p;
	struct model m;
	struct hw h;
	char err[ERR_LEN];
	plan_defaults(&p);
	for (; kv[0]; kv += 2)
		if (plan_set(&p, kv[0], kv[1], err)) { fprintf(stderr, "%s\n", err); return NULL; }
	if (model_load("llama-3-70b", &m, err) || hw_load("h100-sxm", &h, err) ||
	    plan_resolve(&p, &m, &h, err) || plan_validate(&p, &m, &h, err)) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	*notes = export_plan(&p, &m, fmt, f, err);
	fclose(f);
	return buf;
}

/* Does `text` contain `line` as a whole line? */
static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *s = text; (s = strstr(s, line)); s++)
		if ((s == text || s[-1] == '\n') && (s[n] == '\n' || s[n] == 0)) return 1;
	return 0;
}

static void test_megatron(void)
{
	int notes;
	char *out = run_export(known, EXPORT_MEGATRON, &notes);
	CHECK(out != NULL, "megatron export produced output");
	if (!out) return;
	const char *want[] = {"--tensor-model-parallel-size 8 \\", "--pipeline-model-parallel-size 4 \\",
			      "--num-layers-per-virtual-pipeline-stage 4 \\", "--context-parallel-size 2 \\",
			      "--sequence-parallel \\", "--use-distributed-optimizer \\",
			      "--recompute-granularity selective \\", "--micro-batch-size 1 \\",
			      "--global-batch-size 512 \\", "--seq-length 8192 \\", "--num-layers 80 \\",
			      "--num-query-groups 8 \\", "--bf16"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(has_line(out, want[i]), "megatron: line '%s' missing", want[i]);
	CHECK(!strstr(out, "--expert-model-parallel-size"), "megatron: no EP flag for a dense model");
	/* one shell command: every flag line but the last continues, no comment interrupts it */
	const char *first_flag = strstr(out, "\n--");
	CHECK(first_flag && !strstr(first_flag, "\n#"), "megatron: comments come before the flags");
	size_t len = strlen(out);
	CHECK(len > 2 && out[len - 2] != '\\', "megatron: last line does not continue");
	free(out);

	const char *zb[] = {"gpus", "64", "tp", "8", "pp", "8", "schedule", "zb-h1", "gbs", "64",
			    "recompute", "full", "recompute_layers", "2", NULL};
	out = run_export(zb, EXPORT_MEGATRON, &notes);
	CHECK(out && strstr(out, "# no equivalent: schedule zb-h1"), "megatron: zb-h1 has no equivalent");
	CHECK(out && has_line(out, "--recompute-method block \\") && has_line(out, "--recompute-num-layers 2 \\"),
	      "megatron: partial full recompute is method block with N layers");
	CHECK(notes >= 1, "megatron: notes counted (%d)", notes);
	free(out);
}

/* Uneven splits as the tuner writes them (80 layers): Megatron's first/last-stage flags where
 * the middle stages are even, the layout string otherwise (E embedding, t layer, L loss). */
static void test_uneven_split(void)
{
	int notes;
	const char *firstlast[] = {"gpus", "32", "tp", "8", "pp", "4", "gbs", "32", "stage_layers", "22,19,19,20", NULL};
	char *out = run_export(firstlast, EXPORT_MEGATRON, &notes);
	CHECK(out && has_line(out, "--decoder-first-pipeline-num-layers 22 \\") &&
	      has_line(out, "--decoder-last-pipeline-num-layers 20 \\") && !strstr(out, "--pipeline-model-parallel-layout"),
	      "megatron: 22/19/19/20 as first 22, last 20");
	free(out);
	const char *mixed[] = {"gpus", "32", "tp", "8", "pp", "4", "gbs", "32", "stage_layers", "20,19,21,20", NULL};
	out = run_export(mixed, EXPORT_MEGATRON, &notes);
	char want[160] = "--pipeline-model-parallel-layout \"E";
	const int split[4] = {20, 19, 21, 20};
	for (int s = 0; s < 4; s++) {
		if (s) strcat(want, "|");
		for (int l = 0; l < split[s]; l++) strcat(want, "t");
	}
	strcat(want, "L\" \\");
	CHECK(out && has_line(out, want) && !strstr(out, "--decoder-first-pipeline-num-layers"),
	      "megatron: 20/19/21/20 as a layout string");
	free(out);
	out = run_export(mixed, EXPORT_TORCHTITAN, &notes);
	CHECK(out && strstr(out, "# no equivalent: uneven layer split 20,19,21,20") &&
	      !strstr(out, "pipeline_parallel_layers_per_stage ="), "torchtitan: an uneven split has no equivalent");
	free(out);
}

static void test_nanotron(void)
{
	int notes;
	char *out = run_export(known, EXPORT_NANOTRON, &notes);
	CHECK(out != NULL, "nanotron export produced output");
	if (!out) return;
	const char *want[] = {"parallelism:", "  dp: 8", "  tp: 8", "  pp: 4", "  pp_engine: 1f1b",
			      "  tp_mode: REDUCE_SCATTER", "  context_parallel_size: 2", "  micro_batch_size: 1",
			      "  batch_accumulation_per_replica: 64", "  sequence_length: 8192", "  zero_stage: 1"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(has_line(out, want[i]), "nanotron: line '%s' missing", want[i]);
	CHECK(strstr(out, "# no equivalent: schedule interleaved") != NULL, "nanotron: interleaving has no equivalent");
	CHECK(strstr(out, "# no equivalent: selective recompute") != NULL, "nanotron: selective has no equivalent");
	CHECK(notes == 2, "nanotron: 2 notes, got %d", notes);
	free(out);
}

static void test_torchtitan(void)
{
	int notes;
	char *out = run_export(known, EXPORT_TORCHTITAN, &notes);
	CHECK(out != NULL, "torchtitan export produced output");
	if (!out) return;
	const char *want[] = {"[parallelism]", "data_parallel_shard_degree = 8", "tensor_parallel_degree = 8",
			      "pipeline_parallel_degree = 4", "pipeline_parallel_schedule = \"Interleaved1F1B\"",
			      "pipeline_parallel_microbatch_size = 1", "pipeline_parallel_layers_per_stage = 4",
			      "context_parallel_degree = 2", "[training]", "global_batch_size = 512",
			      "seq_len = 8192", "[activation_checkpoint]", "mode = \"selective\""};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(has_line(out, want[i]), "torchtitan: line '%s' missing", want[i]);
	CHECK(strstr(out, "--parallelism.tensor_parallel_degree 8") != NULL, "torchtitan: CLI overrides for main");
	free(out);
}

static void test_deepspeed(void)
{
	int notes;
	char *out = run_export(known, EXPORT_DEEPSPEED, &notes);
	CHECK(out != NULL, "deepspeed export produced output");
	if (!out) return;
	/* strip the "//" comment lines; the rest must be strict JSON */
	char *json = calloc(1, strlen(out) + 1), *w = json;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, "//", 2)) w += sprintf(w, "%s\n", line);
	cJSON *o = cJSON_Parse(json);
	CHECK(o != NULL, "deepspeed: JSON parses after removing comments");
	cJSON *zo = cJSON_GetObjectItem(o, "zero_optimization");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(zo, "stage")) == 1, "deepspeed: zero_optimization.stage 1");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "train_micro_batch_size_per_gpu")) == 1, "deepspeed: micro batch");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "gradient_accumulation_steps")) == 64, "deepspeed: accumulation");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "train_batch_size")) == 512, "deepspeed: train_batch_size");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "tensor_parallel"), "autotp_size")) == 8,
	      "deepspeed: autotp_size");
	CHECK(notes >= 3, "deepspeed: CP, SP, selective and interleaving noted (%d)", notes);
	cJSON_Delete(o);
	free(json);
	free(out);
}

/* fp16 (with loss scaling): Megatron-LM --fp16 (arguments.py), DeepSpeed "fp16" with
 * loss_scale 0 = dynamic (config-json.md); nanotron and torchtitan have no loss scaler, so
 * each says so and writes bfloat16 */
static void test_fp16(void)
{
	const char *kv[] = {"gpus", "64", "tp", "8", "gbs", "64", "seq", "4096", "precision", "fp16", NULL};
	int notes;
	char *out = run_export(kv, EXPORT_MEGATRON, &notes);
	CHECK(out && (has_line(out, "--fp16") || has_line(out, "--fp16 \\")) && !strstr(out, "--bf16"),
	      "megatron: --fp16, no --bf16");
	free(out);
	out = run_export(kv, EXPORT_DEEPSPEED, &notes);
	CHECK(out && strstr(out, "\"fp16\": {\"enabled\": true, \"loss_scale\": 0}") && !strstr(out, "\"bf16\""),
	      "deepspeed: fp16 block with dynamic loss scale, no bf16 block");
	free(out);
	out = run_export(kv, EXPORT_NANOTRON, &notes);
	CHECK(out && strstr(out, "# no equivalent: fp16 precision; bfloat16 is written") && has_line(out, "  dtype: bfloat16"),
	      "nanotron: fp16 noted, bfloat16 written");
	free(out);
	out = run_export(kv, EXPORT_TORCHTITAN, &notes);
	CHECK(out && strstr(out, "fp16 here; torchtitan has no loss scaler") && has_line(out, "mixed_precision_param = \"bfloat16\""),
	      "torchtitan: fp16 noted, bfloat16 written");
	free(out);
}

int main(void)
{
	enum export_format f;
	CHECK(export_format_from_name("torchtitan", &f) == 0 && f == EXPORT_TORCHTITAN, "format names");
	CHECK(export_format_from_name("alpa", &f) != 0, "unknown format rejected");
	test_megatron();
	test_uneven_split();
	test_nanotron();
	test_torchtitan();
	test_deepspeed();
	test_fp16();
	return test_summary("test_export");
}
