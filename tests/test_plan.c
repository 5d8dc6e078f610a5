/* Plan parser/validator messages and rank-layout invariants; JSON numbers that plan and
 * config readers must refuse before casting or multiplying them (found by fuzzing). */
#include <stdlib.h>
#include <string.h>
#include "sim/layout.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"

static int set_all(struct plan *p, const char *const *kv)
{
	char err[ERR_LEN];
	for (; kv[0]; kv += 2)
		if (plan_set(p, kv[0], kv[1], err)) return -1;
	return 0;
}

static void check_rejects(const struct model *m, const char *const *kv, const char *want)
{
	struct plan p;
	char err[ERR_LEN] = "";
	plan_defaults(&p);
	set_all(&p, kv);
	int rc = plan_resolve(&p, m, NULL, err);
	if (!rc) rc = plan_validate(&p, m, NULL, err);
	CHECK(rc != 0 && strstr(err, want), "expected error containing '%s', got rc %d '%s'", want, rc, err);
}

static void test_validator(void)
{
	struct model m;
	char err[ERR_LEN];
	CHECK(model_load("llama-3-70b", &m, err) == 0, "load llama-3-70b: %s", err);
	/* 40 heads: a model where tp 16 does not divide the head count */
	struct model m40 = m;
	m40.heads = 40;
	m40.kv_heads = 8;
	check_rejects(&m40, (const char *const[]){"gpus", "16", "tp", "16", NULL},
		      "tp (16) does not divide num_attention_heads (40)");
	check_rejects(&m, (const char *const[]){"gpus", "24", "tp", "16", NULL}, "does not divide gpus (24)");
	check_rejects(&m, (const char *const[]){"gpus", "8", "mbs", "3", "gbs", "16", NULL}, "dp*mbs (24) does not divide gbs (16)");
	check_rejects(&m, (const char *const[]){"gpus", "8", "pp", "4", "vpp", "3", "schedule", "zb-h1", "gbs", "16", NULL}, "vpp (3) > 1 needs the interleaved schedule");
	check_rejects(&m, (const char *const[]){"gpus", "6", "pp", "3", "schedule", "dualpipe", "gbs", "12", NULL}, "dualpipe needs an even pp (3)");
	check_rejects(&m, (const char *const[]){"gpus", "8", "ep", "2", NULL}, "ep (2) must be 1 for a dense model");
	check_rejects(&m, (const char *const[]){"gpus", "8", "cp", "8", "seq", "100", NULL}, "2*cp (16) does not divide seq (100)");
	struct plan p;
	plan_defaults(&p);
	CHECK(plan_set(&p, "tp", "-1", err) && strstr(err, "tp"), "negative tp rejected: %s", err);
	CHECK(plan_set(&p, "schedule", "zigzag", err) && strstr(err, "unknown schedule"), "bad schedule: %s", err);
	CHECK(plan_set(&p, "frobnicate", "1", err) && strstr(err, "unknown key 'frobnicate'"), "unknown key: %s", err);
	CHECK(plan_from_json("{\"tp\": 8,", &p, err) && strstr(err, "malformed JSON"), "malformed json: %s", err);
	CHECK(plan_from_json("{\"tp\": 2.5}", &p, err) && strstr(err, "not an integer"), "fractional tp: %s", err);
	CHECK(plan_from_json("{\"tp\": 4, \"sp\": true, \"schedule\": \"zb-h1\", \"precision\": \"fp16\"}", &p, err) == 0 && p.tp == 4 && p.sp == 1 && p.schedule == SCHED_ZBH1 && p.precision == PREC_FP16, "json plan: %s", err);
	CHECK(plan_set(&p, "precision", "fp4", err) && !strcmp(err, "plan: precision: 'fp4' is not bf16, fp16, fp8 or fp32"), "precision fp4: %s", err);
	/* a set of names: comma separated, or a JSON list as Megatron-Bridge configs write it */
	CHECK(plan_from_json("{\"recompute_modules\": [\"moe_act\", \"layernorm\"]}", &p, err) == 0 &&
	      p.recompute_modules == (RCM_MOE_ACT | RCM_LAYERNORM), "modules from a list: %s", err);
	CHECK(plan_from_json("{\"recompute_modules\": [1]}", &p, err) && !strcmp(err, "plan: recompute_modules: entries must be names"), "%s", err);
	CHECK(plan_from_json("{\"recompute_modules\": []}", &p, err) && !strcmp(err, "plan: recompute_modules: empty list"), "%s", err);
	CHECK(plan_set(&p, "recompute_modules", "mlp,,core_attn", err) == 0 && p.recompute_modules == (RCM_MLP | RCM_CORE_ATTN), "%s", err);
	CHECK(plan_set(&p, "recompute_modules", "attn", err) && strstr(err, "'attn' is not one of core_attn,"), "%s", err);
	/* round trip */
	char *js = plan_to_json(&p);
	struct plan q;
	plan_defaults(&q);
	int parsed = plan_from_json(js, &q, err) == 0;
	CHECK(parsed && q.stated == (q.stated | p.stated), "the keys a JSON plan gives are stated: %s", err);
	p.stated = q.stated = 0; /* the JSON holds every key, the plan was given a few */
	CHECK(parsed && memcmp(&p, &q, sizeof(p)) == 0, "plan JSON round trip: %s", err);
	free(js);
}

/* groups of each kind partition the ranks; member i has coordinate i; TP contiguous */
static void check_layout_etp(int tp, int cp, int dp, int pp, int ep, int etp, const char *order, int gpn)
{
	struct plan p;
	struct layout l;
	char err[ERR_LEN];
	plan_defaults(&p);
	p.tp = tp; p.cp = cp; p.dp = dp; p.pp = pp; p.ep = ep; p.etp = etp; p.gpus_per_node = gpn;
	strcpy(p.order, order);
	CHECK(layout_init(&l, &p, err) == 0, "layout_init: %s", err);
	int world = tp * cp * dp * pp;
	int ranks[4096];
	for (int g = 0; g < GROUP_COUNT; g++) {
		int seen[4096] = {0}, bad = 0;
		for (int r = 0; r < world; r++) {
			int n = layout_group(&l, (enum group_kind)g, r, ranks, 4096);
			if (n != layout_group_size(&l, (enum group_kind)g)) { bad++; continue; }
			int idx = layout_group_index(&l, (enum group_kind)g, r);
			if (ranks[idx] != r) bad++;
			for (int i = 0; i < n; i++) {
				if (ranks[i] < 0 || ranks[i] >= world) { bad++; continue; }
				if (layout_group_index(&l, (enum group_kind)g, ranks[i]) != i) bad++;
			}
			if (idx == 0) for (int i = 0; i < n; i++) seen[ranks[i]]++;
		}
		for (int r = 0; r < world; r++) if (seen[r] != 1) bad++;
		CHECK(bad == 0, "layout %d/%d/%d/%d ep%d %s: group %s does not partition the ranks (%d errors)",
		      tp, cp, dp, pp, ep, order, group_name((enum group_kind)g), bad);
		/* units of every size rank 0's group touches, against a count over its member list */
		int n = layout_group(&l, (enum group_kind)g, 0, ranks, 4096), wrong = 0;
		for (int unit = 1; unit <= world; unit++) {
			int distinct = 0;
			for (int i = 0; i < n; i++) {
				int dup = 0;
				for (int j = 0; j < i; j++) dup |= ranks[j] / unit == ranks[i] / unit;
				distinct += !dup;
			}
			if (unit >= world) distinct = 1;
			wrong += layout_group_units(&l, (enum group_kind)g, unit) != distinct;
		}
		CHECK(wrong == 0, "layout %d/%d/%d/%d ep%d etp%d %s: group %s touches the wrong number of units for %d unit sizes",
		      tp, cp, dp, pp, ep, etp, order, group_name((enum group_kind)g), wrong);
	}
	if (!strncmp(order, "tp", 2)) {
		int contiguous = 1;
		for (int r = 0; r < world; r++) {
			layout_group(&l, GROUP_TP, r, ranks, 4096);
			for (int i = 0; i < tp; i++) if (ranks[i] != ranks[0] + i) contiguous = 0;
		}
		CHECK(contiguous, "TP groups contiguous with tp innermost");
	}
}

static void check_layout(int tp, int cp, int dp, int pp, int ep, const char *order, int gpn)
{
	check_layout_etp(tp, cp, dp, pp, ep, 0, order, gpn);
}

/* MoE parallel folding [Megatron-Core MoE README, "parallel folding"]: the experts' grid (etp
 * innermost, then ep, then expert-DP) over the tp*dp*cp ranks of a stage. DeepSeek-V3-style
 * ep 32 over tp 2 x dp 16 with etp 1: the EP group of rank 0 is the 32 consecutive ranks of its
 * stage, 4 nodes of 8; expert-DP then has one member (tp*dp*cp / (ep*etp) = 1). */
static void test_folding(void)
{
	check_layout_etp(2, 1, 16, 8, 32, 1, "tp-cp-dp-pp", 8);
	check_layout_etp(4, 2, 4, 2, 8, 2, "tp-cp-dp-pp", 8);
	check_layout_etp(2, 2, 4, 2, 8, 1, "dp-tp-cp-pp", 4);
	struct plan p;
	struct layout l;
	char err[ERR_LEN];
	plan_defaults(&p);
	p.tp = 2; p.dp = 16; p.pp = 8; p.ep = 32; p.etp = 1; p.gpus_per_node = 8;
	CHECK(layout_init(&l, &p, err) == 0, "%s", err);
	int r[64];
	int n = layout_group(&l, GROUP_EP, 0, r, 64), contiguous = n == 32;
	for (int i = 0; i < n; i++) contiguous &= r[i] == i;
	CHECK(contiguous, "folded EP group of rank 0 is ranks 0..31");
	CHECK(layout_group_units(&l, GROUP_EP, 8) == 4, "it spans 4 nodes: %d", layout_group_units(&l, GROUP_EP, 8));
	CHECK(layout_group_size(&l, GROUP_EDP) == 1, "expert-DP of one");
	struct model m;
	CHECK(model_load("deepseek-v3", &m, err) == 0, "%s", err);
	check_rejects(&m, (const char *const[]){"gpus", "256", "tp", "2", "pp", "8", "ep", "32", "etp", "2", "gbs", "512", NULL},
		      "ep*etp (64) does not divide tp*dp*cp (32)");
	check_rejects(&m, (const char *const[]){"gpus", "256", "tp", "2", "pp", "8", "ep", "32", "etp", "4", "gbs", "512", NULL},
		      "etp (4) must divide tp (2)");
	plan_defaults(&p);
	const char *ok[] = {"gpus", "256", "tp", "2", "pp", "8", "ep", "32", "etp", "1", "gbs", "512", NULL};
	int rc = 0;
	for (int i = 0; ok[i]; i += 2) rc |= plan_set(&p, ok[i], ok[i + 1], err);
	rc |= plan_resolve(&p, &m, NULL, err) || plan_validate(&p, &m, NULL, err);
	CHECK(rc == 0 && p.etp == 1, "ep 32 folded over tp 2 x dp 16 is a valid plan: %s", err);
	plan_defaults(&p);
	plan_set(&p, "gpus", "256", err); plan_set(&p, "tp", "2", err); plan_set(&p, "pp", "8", err); plan_set(&p, "ep", "8", err);
	plan_set(&p, "gbs", "512", err);
	CHECK(plan_resolve(&p, &m, NULL, err) == 0 && p.etp == 2, "etp defaults to tp (Megatron-Core): %d", p.etp);
}

static void test_layout(void)
{
	check_layout(8, 1, 8, 8, 1, "tp-cp-dp-pp", 8);
	check_layout(2, 2, 2, 2, 2, "tp-cp-dp-pp", 8);
	check_layout(4, 2, 4, 2, 4, "tp-dp-cp-pp", 8);
	check_layout(2, 1, 6, 3, 3, "pp-dp-tp-cp", 4);
	check_layout(1, 4, 8, 2, 8, "tp-dp-cp-pp", 8);
	check_layout(2, 2, 8, 4, 4, "tp-dp-cp-pp", 4);
	check_layout(2, 2, 4, 3, 4, "tp-cp-pp-dp", 8);
	check_layout_etp(4, 2, 4, 2, 8, 1, "tp-cp-pp-dp", 8);
	check_layout_etp(4, 1, 6, 2, 12, 2, "tp-cp-dp-pp", 8);
	/* node crossings: 512 GPUs, tp8 inner on 8-GPU nodes -> TP stays in one node; DP of 8
	 * with stride 8 spans 8 nodes; PP stride 64 spans 8 nodes */
	struct plan p;
	struct layout l;
	char err[ERR_LEN];
	plan_defaults(&p);
	p.tp = 8; p.dp = 8; p.pp = 8; p.gpus_per_node = 8;
	layout_init(&l, &p, err);
	CHECK(layout_group_nodes(&l, GROUP_TP, 77) == 1, "tp group inside one node");
	CHECK(layout_group_nodes(&l, GROUP_DP, 77) == 8, "dp group spans 8 nodes");
	CHECK(layout_group_nodes(&l, GROUP_PP, 77) == 8, "pp group spans 8 nodes");
	/* tp 2 inner, dp 4 next on 8-GPU nodes: DP group (stride 2, 4 members) fits one node */
	p.tp = 2; p.dp = 4; p.pp = 2;
	layout_init(&l, &p, err);
	CHECK(layout_group_nodes(&l, GROUP_DP, 3) == 1, "dp group inside one node");
	CHECK(layout_group_nodes(&l, GROUP_PP, 3) == 2, "pp group spans 2 nodes");
}

static void test_huge_numbers(void)
{
	char err[ERR_LEN] = "";
	struct plan p;
	const char *plans[] = {"{\"zero\": 1e400}", "{\"tp\": 1e19}", "{\"stage_layers\": [4, 1e19]}", "{\"mbs\": -1e300}"};
	for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++) {
		plan_defaults(&p);
		CHECK(plan_from_json(plans[i], &p, err) != 0, "%s accepted", plans[i]);
	}
	struct model m;
	CHECK(model_from_json("{\"model_type\": \"gpt2\", \"n_embd\": 611111114, \"n_layer\": 1, \"n_head\": 2,"
			      " \"vocab_size\": 256}", "g.json", &m, err) != 0 && strstr(err, "n_embd (611111114) is too large"),
	      "4 * n_embd overflowing an int: %s", err);
	CHECK(model_from_json("{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 1e19,"
			      " \"vocab_size\": 256, \"intermediate_size\": 128}", "h.json", &m, err) != 0 &&
	      strstr(err, "num_attention_heads (1e+19) must be in [0, 1e9]"), "1e19 heads: %s", err);
}

/* nanotron's split (models/base.py build_model with LlamaForTraining's block costs), worked by
 * hand for Llama 3 8B: a layer costs 4h^2 + 3h*ffn = 243.3M, the head V*h = 525.3M, total
 * 8311.9M; a rank takes blocks until their cumulative cost passes (rank + 1) / pp of it. At
 * pp 16 the 15th rank also takes the head and the 16th only the fp32 cast and the loss; it
 * borrows a layer from the 15th. */
static void test_cost_split(void)
{
	struct model m;
	char err[ERR_LEN];
	CHECK(model_load("llama-3-8b", &m, err) == 0, "load llama-3-8b: %s", err);
	static const int want2[] = {18, 14}, want4[] = {9, 9, 8, 6}, want8[] = {5, 4, 4, 5, 4, 4, 4, 2};
	static const int want16[] = {3, 2, 2, 2, 2, 2, 2, 3, 2, 2, 2, 2, 2, 2, 1, 1};
	struct { int pp; const int *want; } cases[] = {{2, want2}, {4, want4}, {8, want8}, {16, want16}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct plan p;
		plan_defaults(&p);
		p.pp = cases[c].pp; p.gpus = 8 * p.pp; p.tp = 8; p.mbs = 1; p.gbs = 64;
		CHECK(plan_set(&p, "pp_split", "cost", err) == 0, "pp_split cost: %s", err);
		CHECK(plan_resolve(&p, &m, NULL, err) == 0, "resolve pp %d: %s", p.pp, err);
		int ok = p.nstage_layers == p.pp;
		for (int i = 0; ok && i < p.pp; i++) ok = p.stage_layers[i] == cases[c].want[i];
		CHECK(ok, "nanotron split at pp %d: first stage %d layers (want %d)", p.pp, p.stage_layers[0], cases[c].want[0]);
	}
	struct plan b;
	plan_defaults(&b);
	b.pp = 4; b.gpus = 32; b.tp = 8; b.mbs = 1; b.gbs = 64;
	CHECK(plan_resolve(&b, &m, NULL, err) == 0 && b.stage_layers[0] == 8 && b.stage_layers[3] == 8, "balanced split stays the default");
}

/* resolve llama-3.1-405b (126 layers) or llama-3-8b (32) with a split rule, a schedule and
 * pp x vpp, and compare the split with one worked by hand */
static void check_split(const char *model, const char *rule, const char *sched, int pp, int vpp,
			const int *want, int n)
{
	struct model m;
	struct plan p;
	char err[ERR_LEN];
	if (model_load(model, &m, err)) { CHECK(0, "load %s: %s", model, err); return; }
	plan_defaults(&p);
	p.pp = pp; p.vpp = vpp; p.tp = 8; p.gpus = 8 * pp; p.mbs = 1; p.gbs = 4 * pp;
	CHECK(plan_set(&p, "pp_split", rule, err) == 0, "pp_split %s: %s", rule, err);
	CHECK(plan_set(&p, "schedule", sched, err) == 0, "schedule %s: %s", sched, err);
	CHECK(plan_resolve(&p, &m, NULL, err) == 0, "resolve %s pp %d vpp %d: %s", model, pp, vpp, err);
	int ok = p.nstage_layers == n, bad = -1;
	for (int i = 0; ok && i < n; i++)
		if (p.stage_layers[i] != want[i]) { ok = 0; bad = i; }
	CHECK(ok, "%s split of %s, %s pp %d vpp %d: stage %d has %d layers, want %d", rule, model, sched, pp, vpp, bad,
	      bad >= 0 ? p.stage_layers[bad] : p.nstage_layers, bad >= 0 ? want[bad] : n);
}

/* The splits a framework would make without a split given, worked by hand from their code:
 * torchtitan's generate_split_points (pipelining_utils.py at 9dec370; distributed/pipeline.py
 * since 2025-04), AutoPipeline's generate_hf_model_fqn_per_model_part, and the balanced default
 * that keeps the first and the last rank light (Llama 3 405B: 7 layers on its first and last of
 * 16 stages, arXiv 2407.21783 §3.3.2). */
static void test_framework_splits(void)
{
	int bal16[16], tt8[8] = {15, 16, 16, 16, 16, 16, 16, 15}, tt16[16], io4[4] = {8, 9, 8, 7};
	int io8[8] = {4, 5, 4, 4, 4, 4, 4, 3};
	for (int i = 0; i < 16; i++) bal16[i] = tt16[i] = i == 0 || i == 15 ? 7 : 8;
	check_split("llama-3.1-405b", "balanced", "1f1b", 16, 1, bal16, 16);
	check_split("llama-3.1-405b", "torchtitan", "1f1b", 8, 1, tt8, 8);
	/* torchtitan, interleaved over 8 x 2 stages: 126 = 16 x 7 + 14, the 14 on stages 1..14 */
	check_split("llama-3.1-405b", "torchtitan", "interleaved", 8, 2, tt16, 16);
	check_split("llama-3-8b", "torchtitan-io", "1f1b", 4, 1, io4, 4);
	check_split("llama-3-8b", "torchtitan-io", "interleaved", 4, 2, io8, 8);
	/* AutoPipeline: 126 over 16 stages, 7 each and the 14 left over on stages 0..13 */
	int first16[16];
	for (int i = 0; i < 16; i++) first16[i] = i < 14 ? 8 : 7;
	check_split("llama-3.1-405b", "first", "1f1b", 16, 1, first16, 16);
	/* balanced with 7 chunks a rank (126 over 16 x 7 stages, chunk c of rank r is stage
	 * 16c + r): ranks 0 and 15 hold 7 layers, one in each chunk; every other rank 8, the
	 * eighth in its middle chunk (3), so stage 16*3 + r has 2 */
	int inter[112];
	for (int s = 0; s < 112; s++) inter[s] = s / 16 == 3 && s % 16 != 0 && s % 16 != 15 ? 2 : 1;
	check_split("llama-3.1-405b", "balanced", "interleaved", 16, 7, inter, 112);
}

int main(void)
{
	test_validator();
	test_huge_numbers();
	test_layout();
	test_folding();
	test_cost_split();
	test_framework_splits();
	return test_summary("test_plan");
}
