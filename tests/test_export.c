/* Export of a known plan: exact flag and key names from reference/ecosystem.md §3 (Megatron-LM
 * arguments.py, nanotron ParallelismArgs, torchtitan job_config.py @v0.2.2, DeepSpeed
 * config-json.md), values derived by hand from the plan, and a "no equivalent" comment for each
 * feature a framework lacks. Launchable: every name every format writes for a set of plans is
 * in the framework's own list (tests/frameworks/, read from its sources), torchtitan's stage
 * builder rebuilds the plan's split from the keys, and the flags Megatron asserts on travel
 * with the features that need them. */
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
	if (model_load(p.model[0] ? p.model : "llama-3-70b", &m, err) || hw_load("h100-sxm", &h, err) ||
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
	/* torchtitan's keys cannot give a middle stage more than the one before it: every stage's
	 * modules are written out */
	out = run_export(mixed, EXPORT_TORCHTITAN, &notes);
	CHECK(out && strstr(out, "module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\",") &&
	      strstr(out, "\"layers.19\"], [\"layers.20\",") && strstr(out, "\"layers.79\", \"norm\", \"output\"]]") &&
	      !strstr(out, "pipeline_parallel_layers_per_stage ="), "torchtitan: 20/19/21/20 as the modules of each stage");
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
	/* and the plan's gradient reduction without overlap, which nanotron's DDP always overlaps */
	CHECK(strstr(out, "# no equivalent: gradient reduction not overlapped") != NULL, "nanotron: DDP overlaps");
	/* a fused SwiGLU: nanotron's GLUActivation always runs act(gate) * up as two ops */
	CHECK(strstr(out, "# no equivalent: fused SwiGLU") != NULL, "nanotron: its SwiGLU is not fused");
	/* nor one whose ZeRO-1 syncs run through flat buffers: nanotron copies tensor by tensor */
	CHECK(strstr(out, "# no equivalent: ZeRO-1 syncs through flat buffers") != NULL, "nanotron: its syncs copy per tensor");
	CHECK(notes == 5, "nanotron: 5 notes, got %d", notes);
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

/* a DeepSpeed export without its "//" comment lines, parsed: the rest must be strict JSON
 * (NULL when it is not, or out is NULL) */
static cJSON *deepspeed_config(const char *out)
{
	if (!out) return NULL;
	char *copy = strdup(out), *json = calloc(1, strlen(out) + 2), *w = json, *save = NULL;
	cJSON *o = NULL;
	if (copy && json) {
		for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (strncmp(line, "//", 2)) w += sprintf(w, "%s\n", line);
		o = cJSON_Parse(json);
	}
	free(copy);
	free(json);
	return o;
}

/* key.sub (sub NULL: key) of a parsed config is the JSON value `want` ("true", "false" or a number) */
static int ds_is(const cJSON *o, const char *key, const char *sub, const char *want)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
	if (sub) x = cJSON_GetObjectItemCaseSensitive(x, sub);
	if (!strcmp(want, "true")) return cJSON_IsTrue(x);
	if (!strcmp(want, "false")) return cJSON_IsFalse(x);
	return cJSON_IsNumber(x) && x->valuedouble == atof(want);
}

static void test_deepspeed(void)
{
	int notes;
	char *out = run_export(known, EXPORT_DEEPSPEED, &notes);
	CHECK(out != NULL, "deepspeed export produced output");
	if (!out) return;
	cJSON *o = deepspeed_config(out);
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
	cJSON *ds = deepspeed_config(out);
	CHECK(ds && ds_is(ds, "fp16", "enabled", "true") && ds_is(ds, "fp16", "loss_scale", "0") &&
	      cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ds, "fp16")) == 2 && !cJSON_GetObjectItemCaseSensitive(ds, "bf16"),
	      "deepspeed: fp16 block with dynamic loss scale, no bf16 block");
	cJSON_Delete(ds);
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

/* ---- launchable: names the frameworks accept, splits they rebuild, flags they assert ---- */

/* The names of one framework (tests/frameworks/NAME.txt: one a line, # comments). */
struct names { char **v; int n; };
static int load_names(const char *file, struct names *nm)
{
	char path[256], line[256];
	snprintf(path, sizeof(path), "tests/frameworks/%s", file);
	FILE *f = fopen(path, "r");
	nm->v = NULL;
	nm->n = 0;
	if (!f) return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#') continue;
		nm->v = realloc(nm->v, sizeof(char *) * (size_t)(nm->n + 1));
		nm->v[nm->n++] = strdup(line);
	}
	fclose(f);
	return 0;
}
static int known_name(const struct names *nm, const char *s)
{
	for (int i = 0; i < nm->n; i++) if (!strcmp(nm->v[i], s)) return 1;
	return 0;
}
static void free_names(struct names *nm)
{
	for (int i = 0; i < nm->n; i++) free(nm->v[i]);
	free(nm->v);
}

/* Every name an export writes, as the framework spells it: Megatron "--flag" words outside
 * comments; torchtitan "section.key" of the TOML and of the "--section.key" overrides;
 * nanotron "section.key" by YAML indentation; DeepSpeed every "key" of the JSON. Unknown names
 * are counted and the first one kept in `first`. */
static int unknown_names(enum export_format fmt, const char *text, const struct names *nm, char *first, size_t cap)
{
	char *copy = strdup(text), *save = NULL, sec[3][96] = {"", "", ""};
	int bad = 0;
	first[0] = 0;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[300] = "";
		const char *c = line;
		int comment = line[0] == '#' || !strncmp(line, "//", 2);
		if (fmt == EXPORT_MEGATRON && !comment && !strncmp(c, "--", 2)) {
			sscanf(c, "%299s", name);
		} else if (fmt == EXPORT_TORCHTITAN) {
			if (comment) { /* the overrides for main: --section.key value */
				for (const char *w = strstr(c, " --"); w; w = strstr(w + 1, " --"))
					if (sscanf(w + 3, "%299[a-z_.]", name) == 1 && !known_name(nm, name)) {
						if (!bad++) snprintf(first, cap, "%s", name);
					}
				continue;
			}
			if (c[0] == '[') { sscanf(c, "[%95[a-z_]]", sec[0]); continue; }
			char key[96];
			if (sscanf(c, "%95[a-z_] =", key) == 1) snprintf(name, sizeof(name), "%s.%s", sec[0], key);
		} else if (fmt == EXPORT_NANOTRON && !comment) {
			int ind = (int)strspn(c, " ") / 2;
			char key[96];
			if (ind > 2 || sscanf(c + 2 * ind, "%95[a-z_]:", key) != 1) continue;
			snprintf(sec[ind], sizeof(sec[0]), "%s", key);
			if (!strchr(c, ':') || strchr(c, ':')[1] == 0) { /* a section: its keys follow */
				if (ind == 0) continue;
			}
			if (ind == 0) snprintf(name, sizeof(name), "%s", key);
			else if (ind == 1) snprintf(name, sizeof(name), "%s.%s", sec[0], key);
			else snprintf(name, sizeof(name), "%s.%s.%s", sec[0], sec[1], key);
		} else if (fmt == EXPORT_DEEPSPEED && !comment) {
			for (const char *q = strchr(c, '"'); q; q = strchr(q + 1, '"')) {
				const char *e = strchr(q + 1, '"');
				if (!e) break;
				if (e[1] == ':' && e - q - 1 < 96) {
					snprintf(name, sizeof(name), "%.*s", (int)(e - q - 1), q + 1);
					if (!known_name(nm, name) && !bad++) snprintf(first, cap, "%s", name);
					name[0] = 0;
				}
				q = e;
			}
		}
		if (name[0] && !known_name(nm, name) && !bad++) snprintf(first, cap, "%s", name);
	}
	free(copy);
	return bad;
}

/* plans that exercise every feature an export writes */
static const char *const *const launch_plans[] = {
	(const char *const[]){"gpus", "512", "tp", "8", "pp", "4", "vpp", "5", "cp", "2", "sp", "1", "zero", "1",
			      "recompute", "selective", "gbs", "512", "seq", "8192", "overlap_grad_reduce", "1",
			      "overlap_param_gather", "1", "overlap_tp_comm", "1", NULL},
	(const char *const[]){"gpus", "512", "tp", "8", "pp", "4", "schedule", "interleaved", "vpp", "5", "gbs", "512",
			      "seq", "8192", "overlap_p2p", "0", "order", "tp-cp-pp-dp", NULL},
	(const char *const[]){"gpus", "256", "tp", "2", "zero", "3", "gbs", "256", "seq", "4096", "recompute", "full",
			      "overlap_grad_reduce", "1", "overlap_param_gather", "1", NULL},
	(const char *const[]){"gpus", "256", "tp", "4", "zero", "2", "sp", "1", "gbs", "256", "seq", "4096",
			      "overlap_param_gather", "1", NULL},
	(const char *const[]){"gpus", "64", "tp", "8", "pp", "4", "schedule", "zb-v", "gbs", "64", "seq", "8192",
			      "recompute", "full", "recompute_layers", "3", "precision", "fp8", NULL},
	(const char *const[]){"gpus", "32", "tp", "8", "pp", "4", "gbs", "32", "stage_layers", "18,21,21,20", NULL},
	(const char *const[]){"gpus", "32", "tp", "8", "pp", "4", "gbs", "32", "stage_layers", "22,19,19,20",
			      "order", "tp-dp-cp-pp", NULL},
	(const char *const[]){"gpus", "64", "tp", "4", "pp", "4", "schedule", "dualpipe", "gbs", "64", "seq", "4096", NULL},
};
#define NLAUNCH (sizeof(launch_plans) / sizeof(launch_plans[0]))

static void test_names(void)
{
	static const char *const files[] = {"megatron.txt", "nanotron.txt", "torchtitan.txt", "deepspeed.txt"};
	for (int fmt = 0; fmt < 4; fmt++) {
		struct names nm;
		CHECK(load_names(files[fmt], &nm) == 0 && nm.n > 50, "tests/frameworks/%s: %d names", files[fmt], nm.n);
		for (size_t i = 0; i < NLAUNCH; i++) {
			int notes;
			char *out = run_export(launch_plans[i], (enum export_format)fmt, &notes), first[160];
			CHECK(out != NULL, "%s plan %zu exports", files[fmt], i);
			if (!out) continue;
			int bad = unknown_names((enum export_format)fmt, out, &nm, first, sizeof(first));
			CHECK(bad == 0, "%s plan %zu: %d names the framework does not have, first '%s'", files[fmt], i, bad, first);
			free(out);
		}
		free_names(&nm);
	}
}

/* torchtitan v0.2.2 builds ceil((L + a + b) / layers_per_stage) stages and spreads the L + a + b
 * effective layers over them, the first ones one more, the first stage a fewer and the last b
 * fewer (pipeline_parallel.py, pipeline_module_split and generate_llm_fqn_per_model_part):
 * rebuilt here from the exported keys, the split must be the plan's */
static void tt_rebuild(const char *out, int L, int pp, int single, int *counts, int *n)
{
	int lps = 0, a = 1, b = 1; /* torchtitan's defaults */
	const char *s;
	*n = 0;
	if ((s = strstr(out, "pipeline_parallel_layers_per_stage = "))) lps = atoi(s + 37);
	if ((s = strstr(out, "pipeline_parallel_first_stage_less_layers = "))) a = atoi(s + 44);
	if ((s = strstr(out, "pipeline_parallel_last_stage_less_layers = "))) b = atoi(s + 43);
	int e = L + a + b, stages = lps ? (e + lps - 1) / lps : pp * (single ? 1 : 2);
	if (stages % pp || (single && stages != pp) || (!single && stages / pp < 2)) return;
	int per = e / stages, extra = e % stages;
	if (per < a || per < b) return;
	for (int i = 0; i < stages; i++) counts[i] = per + (i < extra) - (i == 0 ? a : 0) - (i == stages - 1 ? b : 0);
	*n = stages;
}

static void test_launchable(void)
{
	int notes, counts[64], n;
	/* the issue's case: 80 layers, pp 4, 5 chunks of 4 layers; torchtitan's defaults would make
	 * ceil(82 / 4) = 21 stages and refuse them */
	const char *const v5[] = {"gpus", "512", "tp", "8", "pp", "4", "vpp", "5", "schedule", "interleaved",
				  "gbs", "512", "seq", "8192", NULL};
	char *out = run_export(v5, EXPORT_TORCHTITAN, &notes);
	tt_rebuild(out ? out : "", 80, 4, 0, counts, &n);
	int ok = n == 20;
	for (int i = 0; ok && i < n; i++) ok = counts[i] == 4;
	CHECK(ok, "torchtitan rebuilds 20 stages of 4 layers from the keys (got %d stages)", n);
	CHECK(out && strstr(out, "--parallelism.pipeline_parallel_first_stage_less_layers 0"), "torchtitan: overrides for main too");
	free(out);
	/* an uneven 1F1B split the keys can express: 19/20/20/21 is 80 + a 1-layer shortfall on the first */
	const char *const un[] = {"gpus", "32", "tp", "8", "pp", "4", "gbs", "32", "stage_layers", "21,20,20,19", NULL};
	out = run_export(un, EXPORT_TORCHTITAN, &notes);
	tt_rebuild(out ? out : "", 80, 4, 1, counts, &n);
	CHECK(n == 4 && counts[0] == 21 && counts[1] == 20 && counts[2] == 20 && counts[3] == 19,
	      "torchtitan rebuilds 21/20/20/19 (got %d stages: %d/%d/...)", n, n ? counts[0] : 0, n > 1 ? counts[1] : 0);
	free(out);
	/* Megatron-FSDP asserts --ckpt-format fsdp_dtensor; tp-cp-pp-dp is --use-tp-pp-dp-mapping */
	out = run_export(launch_plans[2], EXPORT_MEGATRON, &notes);
	CHECK(out && has_line(out, "--use-megatron-fsdp \\") && has_line(out, "--ckpt-format fsdp_dtensor \\") &&
	      has_line(out, "--data-parallel-sharding-strategy optim_grads_params \\"), "megatron: ZeRO-3 as Megatron-FSDP with its format");
	CHECK(out && has_line(out, "--overlap-grad-reduce \\") && has_line(out, "--overlap-param-gather \\"), "megatron: ZeRO-3 overlaps");
	free(out);
	out = run_export(launch_plans[1], EXPORT_MEGATRON, &notes);
	CHECK(out && strstr(out, "\n--use-tp-pp-dp-mapping") && !strstr(out, "no equivalent: rank order"),
	      "megatron: tp-cp-pp-dp is --use-tp-pp-dp-mapping");
	CHECK(out && has_line(out, "--no-overlap-p2p-communication \\"), "megatron: interleaved sends not overlapped");
	free(out);
	/* parameter-gather overlap without gradient-reduction overlap: Megatron needs both */
	out = run_export(launch_plans[3], EXPORT_MEGATRON, &notes);
	CHECK(out && !strstr(out, "--overlap-param-gather") && strstr(out, "no equivalent: parameter-gather overlap without"),
	      "megatron: a lone parameter-gather overlap is named, not written");
	free(out);
	/* DeepSpeed writes overlap_comm and the TP overlap as the plan has them */
	for (int on = 0; on < 2; on++) {
		const char *const ds[] = {"gpus", "64", "tp", "2", "zero", "2", "gbs", "64", "seq", "4096",
					  "overlap_grad_reduce", on ? "1" : "0", "overlap_tp_comm", on ? "1" : "0", NULL};
		out = run_export(ds, EXPORT_DEEPSPEED, &notes);
		cJSON *c = deepspeed_config(out);
		const char *want = on ? "true" : "false";
		CHECK(c && ds_is(c, "zero_optimization", "overlap_comm", want), "deepspeed: overlap_comm %s", want);
		CHECK(c && ds_is(c, "tensor_parallel", "tp_overlap_comm", want), "deepspeed: tp_overlap_comm %s", want);
		cJSON_Delete(c);
		free(out);
	}
	/* torchtitan: async TP is the plan's TP overlap, compiled as v0.2.x needs */
	out = run_export(launch_plans[0], EXPORT_TORCHTITAN, &notes);
	CHECK(out && has_line(out, "enable_async_tensor_parallel = true") && has_line(out, "[compile]") &&
	      has_line(out, "enable = true"), "torchtitan: async TP with compile");
	CHECK(out && strstr(out, "# no equivalent: async TP with eager blocks and loss"), "torchtitan: async TP compiles what the plan priced eager");
	free(out);
	/* what a format runs differently from the plan's pricing is a no-equivalent line, and
	 * what it runs as priced is none: pipeline sends without SP (Megatron-Core sends the whole
	 * tensor, DeepSpeed's pipeline engine partitions it over TP), the block's norms and
	 * rotary embedding (torchtitan eager unless compiled, the others fused), and SP on a
	 * batch-first layout (torchtitan copies each gathered tensor into place) */
	const char *const sg[] = {"gpus", "16", "tp", "8", "pp", "2", "gbs", "16", "seq", "4096", "pp_scatter_gather", "1", NULL};
	const char *const whole[] = {"gpus", "16", "tp", "8", "pp", "2", "gbs", "16", "seq", "4096", NULL};
	const char *const fusedb[] = {"gpus", "8", "gbs", "8", "seq", "4096", NULL};
	const char *const eagerb[] = {"gpus", "8", "gbs", "8", "seq", "4096", "eager_block", "1", NULL};
	const char *const spc[] = {"gpus", "8", "tp", "8", "sp", "1", "gbs", "8", "seq", "4096", NULL};
	const char *const spc1[] = {"gpus", "8", "tp", "8", "sp", "1", "gbs", "8", "seq", "4096", "tp_seq_copies", "1", NULL};
	const char *const fake[] = {"model", "mixtral-8x7b", "gpus", "8", "ep", "8", "gbs", "8", "seq", "4096", "moe_routing", "consecutive", NULL};
	const char *const routed[] = {"model", "mixtral-8x7b", "gpus", "8", "ep", "8", "gbs", "8", "seq", "4096", NULL};
	const struct { const char *const *kv; enum export_format fmt; const char *text; int want; } noeq[] = {
		{sg, EXPORT_MEGATRON, "# no equivalent: pipeline sends split over TP and gathered on receipt (scatter/gather); megatron sends", 1},
		{sg, EXPORT_DEEPSPEED, "scatter/gather", 0},
		{whole, EXPORT_DEEPSPEED, "// no equivalent: pipeline sends of the whole tensor from every TP rank; deepspeed splits them", 1},
		{fusedb, EXPORT_TORCHTITAN, "# no equivalent: the block's norms and rotary embedding priced fused; torchtitan runs them as eager", 1},
		{fusedb, EXPORT_MEGATRON, "norms and rotary", 0},
		{eagerb, EXPORT_NANOTRON, "# no equivalent: the block's norms and rotary embedding priced as eager PyTorch ops; nanotron runs them fused", 1},
		{eagerb, EXPORT_TORCHTITAN, "norms and rotary", 0},
		{spc, EXPORT_TORCHTITAN, "# no equivalent: SP collectives gathered in place; torchtitan copies", 1},
		{spc1, EXPORT_MEGATRON, "# no equivalent: SP collectives that copy each gathered tensor into place; megatron gathers in place", 1},
		{spc1, EXPORT_TORCHTITAN, "SP collectives", 0},
		{fake, EXPORT_MEGATRON, "# no equivalent: experts priced as NeMo AutoModel's fake balanced gate routes them", 1},
		{fake, EXPORT_TORCHTITAN, "# no equivalent: experts priced as NeMo AutoModel's fake balanced gate routes them", 1},
		{routed, EXPORT_MEGATRON, "fake balanced gate", 0}};
	for (size_t i = 0; i < sizeof(noeq) / sizeof(noeq[0]); i++) {
		out = run_export(noeq[i].kv, noeq[i].fmt, &notes);
		CHECK(out && !!strstr(out, noeq[i].text) == noeq[i].want, "export %zu: '%s' %s", i, noeq[i].text,
		      noeq[i].want ? "missing" : "written though the format runs the plan as priced");
		free(out);
	}
	/* a compiled plan: torchtitan's switch; the others have none */
	const char *const comp[] = {"gpus", "8", "gbs", "8", "seq", "4096", "compile", "1", NULL};
	out = run_export(comp, EXPORT_TORCHTITAN, &notes);
	CHECK(out && has_line(out, "[compile]") && has_line(out, "enable = true") && !strstr(out, "no equivalent: torch.compile"),
	      "torchtitan: compile.enable written");
	free(out);
	out = run_export(comp, EXPORT_MEGATRON, &notes);
	CHECK(out && strstr(out, "# no equivalent: torch.compile of the blocks; megatron runs its own fused kernels"),
	      "megatron: torch.compile has no equivalent");
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
	test_names();
	test_launchable();
	return test_summary("test_export");
}
