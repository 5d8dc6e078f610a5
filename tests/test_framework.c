/* framework profiles (profiles/frameworks): every built-in one loads; applying one fills only
 * the keys a plan does not state, first matching entry per key, conditions on the plan and
 * bounds on the run's year honoured; malformed profiles are refused with the field named.
 * Expected values are the documented defaults the profiles cite (frameworks.md §3-8). */
#include <string.h>
#include "sim/framework.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"

static void test_builtin(void)
{
	char err[ERR_LEN];
	int n = 0;
	for (const char *const *nm = framework_builtin_names(); *nm; nm++, n++) {
		struct framework fw;
		CHECK(framework_load(*nm, &fw, err) == 0, "framework %s loads: %s", *nm, err);
		CHECK(!strcmp(fw.name, *nm), "framework %s names itself %s", *nm, fw.name);
		for (int i = 0; i < fw.n; i++) CHECK(fw.e[i].source[0], "%s entry %d has a source", *nm, i);
	}
	/* FORMAT.md's framework names, each with a profile */
	const char *want[] = {"megatron-lm", "megatron-core", "nemo", "megatron-bridge", "megatron-deepspeed", "deepspeed",
			      "nanotron", "torchtitan", "nemo-automodel", "llm-foundry", "megascale", "other"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct framework fw;
		CHECK(framework_load(want[i], &fw, err) == 0, "FORMAT.md framework %s has a profile: %s", want[i], err);
	}
	CHECK(n >= 12, "%d built-in framework profiles", n);
}

static void test_apply(void)
{
	char err[ERR_LEN], applied[512] = "";
	struct framework fw;
	struct plan p;
	/* torchtitan: FSDP2 keeps parameters after the forward under PP (zero 2), reshards
	 * without (zero 3); a stated zero is kept */
	CHECK(framework_load("torchtitan", &fw, err) == 0, "%s", err);
	plan_defaults(&p);
	plan_set(&p, "pp", "4", err);
	uint64_t mask = 0;
	int n = framework_apply(&fw, &p, 0, applied, sizeof(applied), &mask, err);
	CHECK(n > 0 && p.zero == 2 && p.allocator == ALLOC_EXPANDABLE && p.fp8_impl == FP8_TORCHAO, "torchtitan pp 4: zero %d alloc %d", p.zero, p.allocator);
	CHECK(strstr(applied, "zero 2 (torchtitan)") && (mask >> plan_key_index("zero") & 1), "applied list: %s", applied);
	CHECK(!plan_key_stated(&p, "zero") && plan_key_stated(&p, "pp"), "applied keys stay unstated");
	plan_defaults(&p);
	CHECK(framework_apply(&fw, &p, 0, NULL, 0, NULL, err) > 0 && p.zero == 3, "torchtitan pp 1: zero %d", p.zero);
	plan_defaults(&p);
	plan_set(&p, "zero", "1", err);
	CHECK(framework_apply(&fw, &p, 0, NULL, 0, NULL, err) > 0 && p.zero == 1, "a stated zero is kept: %d", p.zero);
	/* torchtitan's loss is an eager F.cross_entropy on fp32-upcast logits, under DTensor's
	 * loss_parallel when tp > 1, unless training.compile, which compiles it since 2025-04
	 * (components/loss.py) but not in the 2024-12 tree (train.py 9dec370); compiled blocks
	 * keep no eager SwiGLU intermediate and move no eager norm or rotary traffic */
	CHECK(framework_load("torchtitan", &fw, err) == 0, "%s", err);
	plan_defaults(&p);
	CHECK(framework_apply(&fw, &p, 2025, NULL, 0, NULL, err) > 0 && p.loss == LOSS_EAGER && p.glu_eager && p.eager_block && p.tp_seq_copies, "torchtitan eager: loss %d", p.loss);
	plan_defaults(&p);
	plan_set(&p, "tp", "8", err);
	CHECK(framework_apply(&fw, &p, 2025, NULL, 0, NULL, err) > 0 && p.loss == LOSS_PARALLEL && p.fsdp_copies && p.optimizer == OPT_FOREACH, "torchtitan eager, tp 8: loss %d, FSDP2 copies, foreach AdamW", p.loss);
	plan_defaults(&p);
	plan_set(&p, "compile", "1", err);
	CHECK(framework_apply(&fw, &p, 2025, NULL, 0, NULL, err) > 0 && p.loss == LOSS_COMPILED && !p.glu_eager && !p.eager_block && p.tp_seq_copies, "torchtitan compiled 2025: loss %d", p.loss);
	plan_defaults(&p);
	plan_set(&p, "compile", "1", err);
	CHECK(framework_apply(&fw, &p, 2024, NULL, 0, NULL, err) > 0 && p.loss == LOSS_EAGER && !p.glu_eager, "torchtitan compiled 2024: loss %d", p.loss);
	/* nemo: distributed optimizer, overlaps on, bf16 gradient reduction, expandable segments */
	CHECK(framework_load("nemo", &fw, err) == 0, "%s", err);
	plan_defaults(&p);
	plan_set(&p, "tp", "4", err);
	CHECK(framework_apply(&fw, &p, 0, NULL, 0, NULL, err) > 0 && p.zero == 1 && p.overlap_grad_reduce &&
	      p.overlap_param_gather && p.overlap_tp_comm && !p.fp32_grads && p.allocator == ALLOC_EXPANDABLE && !p.reduce_per_mb,
	      "nemo defaults");
	/* nemo-automodel: FSDP2 reduce-scatters in every backward, but under pipelining
	 * torch.distributed.pipelining syncs only after the last micro-batch's backward */
	CHECK(framework_load("nemo-automodel", &fw, err) == 0, "%s", err);
	plan_defaults(&p);
	CHECK(framework_apply(&fw, &p, 2025, NULL, 0, NULL, err) > 0 && p.reduce_per_mb, "nemo-automodel pp 1: reduce every micro-batch");
	plan_defaults(&p);
	plan_set(&p, "pp", "4", err);
	CHECK(framework_apply(&fw, &p, 2025, NULL, 0, NULL, err) > 0 && !p.reduce_per_mb, "nemo-automodel pp 4: reduce after the last micro-batch");
	CHECK(p.loss == LOSS_EAGER_BF16, "nemo-automodel's benchmark configs: F.cross_entropy on bf16 logits");
	CHECK(p.fsdp_copies && p.optimizer == OPT_FOREACH, "nemo-automodel: FSDP2 copies around its collectives, torch.optim's foreach Adam");
	/* megatron-lm: fp16 runs reduce fp16 gradients, bf16 runs fp32; the asynchronous TP
	 * all-reduce arrived late 2021 */
	CHECK(framework_load("megatron-lm", &fw, err) == 0, "%s", err);
	plan_defaults(&p);
	plan_set(&p, "precision", "fp16", err);
	CHECK(framework_apply(&fw, &p, 2021, NULL, 0, NULL, err) > 0 && !p.fp32_grads && !p.overlap_tp_bwd, "megatron-lm fp16 2021");
	plan_defaults(&p);
	CHECK(framework_apply(&fw, &p, 2022, NULL, 0, NULL, err) > 0 && p.fp32_grads && p.overlap_tp_bwd, "megatron-lm bf16 2022");
	plan_defaults(&p);
	CHECK(framework_apply(&fw, &p, 0, NULL, 0, NULL, err) > 0 && p.overlap_tp_bwd, "megatron-lm today: the newest entry");
}

static void test_malformed(void)
{
	char err[ERR_LEN];
	struct framework fw;
	const char *cases[][2] = {
		{"{\"describes\":\"x\",\"defaults\":[{\"key\":\"frobnicate\",\"value\":1,\"source\":\"s\"}]}", "unknown key 'frobnicate'"},
		{"{\"describes\":\"x\",\"defaults\":[{\"key\":\"zero\",\"value\":7,\"source\":\"s\"}]}", "zero"},
		{"{\"describes\":\"x\",\"defaults\":[{\"key\":\"zero\",\"value\":1}]}", "needs key, value and source"},
		{"{\"describes\":\"x\",\"defaults\":[{\"key\":\"zero\",\"value\":1,\"source\":\"s\",\"if\":\"pp\"}]}", "KEY OP VALUE"},
		{"{\"describes\":\"x\",\"defaults\":[{\"key\":\"zero\",\"value\":1,\"source\":\"s\",\"if\":\"nokey>1\"}]}", "no plan key 'nokey'"},
		{"{\"describes\":\"x\",\"defaults\":[{\"key\":\"zero\",\"value\":1,\"source\":\"s\",\"when\":1}]}", "unknown field 'when'"},
		{"{\"describes\":\"x\",\"offers\":[{\"key\":\"zero\",\"values\":[0,9],\"source\":\"s\"}]}", "offers[0]: "},
		{"{\"describes\":\"x\",\"offers\":[{\"key\":\"zero\",\"values\":[],\"source\":\"s\"}]}", "needs key, values and source"},
		{"{\"describes\":\"x\",\"offers\":[{\"key\":\"zero\",\"values\":[0,1]}]}", "needs key, values and source"},
		{"{\"describes\":\"x\",\"offers\":[{\"key\":\"zero\",\"values\":1,\"source\":\"s\"}]}", "values must be an array"},
		{"{\"describes\":\"x\",\"offers\":[{\"key\":\"zero\",\"values\":[0],\"source\":\"s\",\"when\":\"pp>1\"}]}", "unknown field 'when'"},
		{"{\"describes\":\"x\",\"offers\":[{\"key\":\"zero\",\"values\":[0],\"source\":\"s\",\"if\":\"nokey>1\"}]}", "offers[0].if: no plan key 'nokey'"},
		{"{\"describes\":\"x\",\"offers\":{}}", "offers must be an array"},
		{"{\"defaults\":[]}", "missing 'describes'"},
		{"{\"describes\":\"x\",\"extra\":1}", "unknown key 'extra'"},
		{"[1]", "must be a JSON object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(framework_from_json(cases[i][0], "t", &fw, err) && strstr(err, cases[i][1]), "case %zu: want '%s', got '%s'", i, cases[i][1], err);
	CHECK(framework_load("no-such-framework", &fw, err) && strstr(err, "unknown framework"), "%s", err);
}

/* the values a framework offers for a key: nanotron's optimizer is ZeRO-1 for any stage above 0
 * (helpers.py), so it offers 0 and 1; its pipeline engines are AFAB and 1F1B; its recompute is
 * the whole layer; Megatron's get_forward_backward_func has 1F1B and interleaved 1F1B;
 * torchtitan replicates (DDP) or shards with FSDP2, keeping the parameters after the forward or
 * not, and has no optimizer-only sharding; a key a profile does not list takes any value */
static void test_offers(void)
{
	char err[ERR_LEN];
	struct framework fw;
	CHECK(!framework_load("nanotron", &fw, err), "%s", err);
	CHECK(framework_offers(&fw, "zero", "0", NULL) && framework_offers(&fw, "zero", "1", NULL), "nanotron offers ZeRO 0 and 1");
	CHECK(!framework_offers(&fw, "zero", "2", NULL) && !framework_offers(&fw, "zero", "3", NULL), "nanotron offers no ZeRO-2 or -3");
	CHECK(framework_offers(&fw, "schedule", "1f1b", NULL) && !framework_offers(&fw, "schedule", "interleaved", NULL),
	      "nanotron's pipeline engines: afab and 1f1b");
	CHECK(framework_offers(&fw, "recompute", "full", NULL) && !framework_offers(&fw, "recompute", "selective", NULL),
	      "nanotron recomputes whole layers only");
	CHECK(framework_offers(&fw, "sp", "0", NULL), "a key nanotron lists no values for takes any");
	static const char *const megatron[] = {"megatron-lm", "megatron-core", "nemo", "megatron-bridge"};
	for (size_t i = 0; i < sizeof(megatron) / sizeof(megatron[0]); i++) {
		CHECK(!framework_load(megatron[i], &fw, err), "%s", err);
		CHECK(framework_offers(&fw, "schedule", "1f1b", NULL) && framework_offers(&fw, "schedule", "interleaved", NULL) &&
		      !framework_offers(&fw, "schedule", "zb-v", NULL) && !framework_offers(&fw, "schedule", "dualpipe", NULL),
		      "%s runs 1F1B and interleaved 1F1B only", megatron[i]);
	}
	CHECK(!framework_load("llm-foundry", &fw, err), "%s", err);
	CHECK(framework_offers(&fw, "zero", "0", NULL) && !framework_offers(&fw, "zero", "1", NULL) && framework_offers(&fw, "zero", "2", NULL) &&
	      framework_offers(&fw, "zero", "3", NULL), "llm-foundry: PyTorch FSDP's sharding strategies, no optimizer-only sharding");
	CHECK(!framework_load("torchtitan", &fw, err), "%s", err);
	CHECK(framework_offers(&fw, "zero", "0", NULL) && !framework_offers(&fw, "zero", "1", NULL) && framework_offers(&fw, "zero", "2", NULL) &&
	      framework_offers(&fw, "zero", "3", NULL), "torchtitan: DDP or FSDP2, no optimizer-only sharding");
	/* DeepSpeed's PipelineEngine refuses ZeRO-2 and -3: the offer holds with a pipeline only */
	CHECK(!framework_load("deepspeed", &fw, err), "%s", err);
	CHECK(framework_offers(&fw, "zero", "3", NULL), "deepspeed without a plan: ZeRO-3 offered");
	struct plan p;
	plan_defaults(&p);
	p.pp = 1;
	CHECK(framework_offers(&fw, "zero", "3", &p), "deepspeed, pp 1: ZeRO-3 offered");
	p.pp = 4;
	CHECK(!framework_offers(&fw, "zero", "2", &p) && !framework_offers(&fw, "zero", "3", &p) && framework_offers(&fw, "zero", "1", &p),
	      "deepspeed, pp 4: ZeRO 0 and 1 only");
	CHECK(framework_offers_conditional(&fw), "deepspeed's offer has a condition");
}

int main(void)
{
	test_builtin();
	test_apply();
	test_offers();
	test_malformed();
	return test_summary("test_framework");
}
