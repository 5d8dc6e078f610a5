/* Published test vectors for the closed forms of the analytical model (shared/reference/model.md
 * §5). Every expected number below is the value printed in the cited source (or the source's
 * printed formula evaluated at the stated inputs, marked [F] there), never the output of the
 * code under test. Tolerances are the printed precision unless the vector says otherwise.
 *
 * GB here is 1e9 bytes (ZeRO, Playbook, Narayanan); parameter counts are in units of 1e9. */
#include <math.h>
#include <string.h>
#include "sim/collective.h"
#include "sim/flops.h"
#include "sim/hw.h"
#include "sim/memory.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"

#define GB 1e9
#define BILLION 1e9

/* A dense GPT of the Megatron/Korthikanti family (model.md §1.1): MHA, LayerNorm with bias,
 * 4h GeLU MLP, tied embedding, learned position table of `seq` rows, vocabulary 51200. */
static struct model gpt(int layers, int hidden, int heads, int seq)
{
	struct model m;
	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "gpt-%dx%d", layers, hidden);
	m.layers = layers;
	m.hidden = hidden;
	m.ffn_hidden = 4 * hidden;
	m.heads = heads;
	m.kv_heads = heads;
	m.head_dim = hidden / heads;
	m.vocab = 51200;
	m.tied = 1;
	m.pos_emb = 1;
	m.max_pos = seq;
	m.norm = NORM_LAYER;
	m.mlp = MLP_GELU;
	m.norm_eps = 1e-5;
	return m;
}

static int load(const char *name, struct model *m)
{
	char err[ERR_LEN] = "";
	int rc = model_load(name, m, err);
	CHECK(rc == 0, "model_load(%s): %s", name, err);
	return rc;
}

/* ---------------------------------------------------------------- ZeRO [ZERO] §5.1 */

/* TV-Z2: ZeRO Table I, per-device model-state memory in GB, K = 12 (mixed-precision Adam:
 * 2 + 2 + 12 bytes per parameter). Columns P_os / P_os+g / P_os+g+p = ZeRO stages 1 / 2 / 3.
 * `ulp` is one unit of the last printed digit of each entry; the table truncates large values
 * (4011.7 -> 4011, 2013.67 -> 2013, model.md §6.7), so ±1 ulp covers both rounding and
 * truncation. */
static void test_zero_table1(void)
{
	static const struct {
		double psi;           /* parameters */
		int nd;
		double gb[3], ulp[3]; /* printed GB per stage 1, 2, 3 and their last-digit unit */
	} t[] = {
		{7.5e9, 1, {120, 120, 120}, {1, 1, 1}},
		{7.5e9, 4, {52.5, 41.3, 30}, {0.1, 0.1, 1}},
		{7.5e9, 16, {35.6, 21.6, 7.5}, {0.1, 0.1, 0.1}},
		{7.5e9, 64, {31.4, 16.6, 1.88}, {0.1, 0.1, 0.01}},
		{7.5e9, 256, {30.4, 15.4, 0.47}, {0.1, 0.1, 0.01}},
		{7.5e9, 1024, {30.1, 15.1, 0.12}, {0.1, 0.1, 0.01}},
		{128e9, 1, {2048, 2048, 2048}, {1, 1, 1}},
		{128e9, 4, {896, 704, 512}, {1, 1, 1}},
		{128e9, 16, {608, 368, 128}, {1, 1, 1}},
		{128e9, 64, {536, 284, 32}, {1, 1, 1}},
		{128e9, 256, {518, 263, 8}, {1, 1, 1}},
		{128e9, 1024, {513, 257, 2}, {1, 1, 1}},
		{1e12, 1, {16000, 16000, 16000}, {1, 1, 1}},
		{1e12, 4, {7000, 5500, 4000}, {1, 1, 1}},
		{1e12, 16, {4750, 2875, 1000}, {1, 1, 1}},
		{1e12, 64, {4187, 2218, 250}, {1, 1, 1}},
		{1e12, 256, {4046, 2054, 62.5}, {1, 1, 0.1}},
		{1e12, 1024, {4011, 2013, 15.6}, {1, 1, 0.1}},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		for (int z = 1; z <= 3; z++) {
			double got = model_state_bytes(t[i].psi, z, t[i].nd, 2, 2, 12) / GB;
			/* +1e-9: a printed 1.88 for 1.875 is exactly half an ulp away, well inside */
			CHECK(fabs(got - t[i].gb[z - 1]) <= t[i].ulp[z - 1] + 1e-9,
			      "TV-Z2 ZeRO Table I: psi %g, N_d %d, stage %d: got %.4f GB, printed %g",
			      t[i].psi, t[i].nd, z, got, t[i].gb[z - 1]);
		}
}

/* TV-Z1: 7.5B, K = 12, N_d = 64: DP 120 GB, P_os 31.4, P_os+g 16.6, P_os+g+p 1.9 [ZERO Fig.1]. */
static void test_zero_fig1(void)
{
	double psi = 7.5e9;
	CHECK_ABS(model_state_bytes(psi, 0, 64, 2, 2, 12) / GB, 120, 1, "TV-Z1 baseline DP");
	CHECK_ABS(model_state_bytes(psi, 1, 64, 2, 2, 12) / GB, 31.4, 0.1, "TV-Z1 P_os");
	CHECK_ABS(model_state_bytes(psi, 2, 64, 2, 2, 12) / GB, 16.6, 0.1, "TV-Z1 P_os+g");
	CHECK_ABS(model_state_bytes(psi, 3, 64, 2, 2, 12) / GB, 1.9, 0.1, "TV-Z1 P_os+g+p");
}

/* TV-Z4: 1T parameters x 16 B = 16 TB; over 1024 GPUs with ZeRO-3, 16 GB each [ZERO §1]. */
static void test_zero_1t(void)
{
	CHECK_ABS(model_state_bytes(1e12, 0, 1024, 2, 2, 12) / 1e12, 16, 1, "TV-Z4 1T model states, TB");
	CHECK_ABS(model_state_bytes(1e12, 3, 1024, 2, 2, 12) / GB, 16, 1, "TV-Z4 1T over 1024 GPUs, GB");
}

/* ------------------------------------------------------- Korthikanti et al. [KOR] */

/* TV-K7: Table 2 evaluated for GPT-3 (a 96, s 2048, h 12288), t = 8, b = 1, in units of sbh
 * (sbh = 25 165 824) and in MB: 114 (2868.9), 23 (578.8), 14.25 (358.6), 13 (327.2),
 * 4.25 (107.0), 2 (50.3). */
static void test_korthikanti_table2(void)
{
	const double s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
	CHECK_ABS(sbh, 25165824, 0, "TV-K7 sbh");
	static const struct {
		const char *name;
		double t;
		int sp, rc;
		double units, mb;
	} rows[] = {
		{"no parallelism", 1, 0, 0, 114, 2868.9},
		{"TP", 8, 0, 0, 23, 578.8},
		{"TP+SP", 8, 1, 0, 14.25, 358.6},
		{"TP+selective", 8, 0, 1, 13, 327.2},
		{"TP+SP+selective", 8, 1, 1, 4.25, 107.0},
		{"full recompute", 8, 0, 2, 2, 50.3},
	};
	(void)t;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		double got = gpt_layer_act_bytes(s, b, h, a, rows[i].t, rows[i].sp, rows[i].rc);
		CHECK(fabs(got / sbh - rows[i].units) < 1e-9, "TV-K7 %s: got %.6f sbh, want %g sbh",
		      rows[i].name, got / sbh, rows[i].units);
		CHECK_ABS(got / 1e6, rows[i].mb, 0.05 + 1e-9, rows[i].name);
	}
	/* "each nearly halves" (0.62, 0.565), combined under 20 % (0.185), full ≈ 10 % (0.087) */
	double tp = gpt_layer_act_bytes(s, b, h, a, 8, 0, 0);
	CHECK_ABS(gpt_layer_act_bytes(s, b, h, a, 8, 1, 0) / tp, 0.62, 0.005, "TV-K7 SP / TP");
	CHECK_ABS(gpt_layer_act_bytes(s, b, h, a, 8, 0, 1) / tp, 0.565, 0.005, "TV-K7 selective / TP");
	CHECK_ABS(gpt_layer_act_bytes(s, b, h, a, 8, 1, 1) / tp, 0.185, 0.005, "TV-K7 SP+selective / TP");
	CHECK_ABS(gpt_layer_act_bytes(s, b, h, a, 8, 0, 2) / tp, 0.087, 0.005, "TV-K7 full / TP");
}

/* TV-K1 / TV-K2: 5as/h = 80 (GPT-3) and 64 (MT-NLG); selective recompute saves 70 % (80/114)
 * and 65 % (64/98) of activation memory [KOR §5]. */
static void test_korthikanti_selective(void)
{
	const double s = 2048;
	struct { const char *name; double a, h, term, saved; } v[] = {
		{"TV-K1 GPT-3", 96, 12288, 80, 0.70},
		{"TV-K2 MT-NLG", 128, 20480, 64, 0.65},
	};
	for (int i = 0; i < 2; i++) {
		double sbh = s * v[i].h;
		double none = gpt_layer_act_bytes(s, 1, v[i].h, v[i].a, 1, 0, 0);
		double sel = gpt_layer_act_bytes(s, 1, v[i].h, v[i].a, 1, 0, 1);
		CHECK_ABS((none - sel) / sbh, v[i].term, 1e-9, v[i].name);
		CHECK_ABS((none - sel) / none, v[i].saved, 0.005, v[i].name);
	}
}

/* TV-K3: model FLOPs per iteration 72·B·L·s·h²(1 + s/6h + v/(12hL)) [KOR App.A eq.7], full
 * (non-causal) attention term, v = 51200, s = 2048, A100 312 TFLOP/s; the paper's MFU for the
 * Table 3 configurations: 41.5 % (22B; the formula gives 41.7, within 0.2 points), 51.4 %,
 * 56.0 %, 56.3 % [KOR Tables 3, 5]. */
static void test_korthikanti_mfu(void)
{
	static const struct {
		const char *name;
		int L, h, a, gpus, batch;
		double iter_s, mfu_pct, tol;
	} r[] = {
		{"TV-K3 22B", 48, 6144, 64, 8, 4, 1.10, 41.5, 0.25},
		{"TV-K3 175B", 96, 12288, 96, 64, 64, 13.75, 51.4, 0.06},
		{"TV-K3 530B", 105, 20480, 128, 280, 280, 37.83, 56.0, 0.06},
		{"TV-K3 1T", 128, 25600, 160, 512, 512, 71.49, 56.3, 0.06},
	};
	const int s = 2048;
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		struct model m = gpt(r[i].L, r[i].h, r[i].a, s);
		double L = r[i].L, h = r[i].h, v = m.vocab;
		double eq7 = 72.0 * L * s * h * h * (1 + s / (6 * h) + v / (12 * h * L)); /* per sequence */
		double got = model_flops_per_token(&m, s, 0) * s;
		/* the code also counts the QKV bias as a matmul (18Lh per token, ~1e-4 relative) */
		CHECK_REL(got, eq7, 1e-3, r[i].name);
		double mfu = got * r[i].batch / (r[i].iter_s * r[i].gpus * 312e12) * 100;
		CHECK_ABS(mfu, r[i].mfu_pct, r[i].tol, r[i].name);
	}
}

/* TV-P5 / [MCODE-flops]: the attention term per token is 12·L·h·s with the full s×s score
 * matrix (Playbook 6sN + 12Lhs² per sequence) and exactly half of it when causal. Taken as a
 * difference between two sequence lengths so the 6N part (whatever N counts) cancels. */
static void test_attention_flops(void)
{
	struct model m;
	if (load("llama-3-8b", &m)) return;
	double L = m.layers, h = (double)m.heads * m.head_dim;
	int s1 = 2048, s2 = 8192;
	double full = model_flops_per_token(&m, s2, 0) - model_flops_per_token(&m, s1, 0);
	double causal = model_flops_per_token(&m, s2, 1) - model_flops_per_token(&m, s1, 1);
	CHECK_REL(full, 12 * L * h * (s2 - s1), 1e-12, "TV-P5 attention term 12Lhs per token");
	CHECK_REL(causal, 6 * L * h * (s2 - s1), 1e-12, "causal halving of the s^2 term [MCODE-flops]");
	/* forward only, one layer: QK^T and PV, 2 FLOP per MAC: 4·(a·d)·ctx [MEG App.] */
	CHECK_REL(attn_core_flops_fwd(&m, 1000), 4 * h * 1000, 1e-12, "attn core 4Bs^2h / (Bs)");
}

/* ------------------------------------------------------- Megatron-LM [MEG] */

/* TV-M1: eq. 2 parameter counts P = 12Lh²(1 + 13/(12h) + (V+s)/(12Lh)), V 51200, s 2048,
 * printed in Table 1 / Table 2 (billions, ±0.06). Head counts from the same table. */
static void test_megatron_params(void)
{
	static const struct { int h, L, a; double printed; } r[] = {
		{2304, 24, 24, 1.7},      {3072, 30, 32, 3.6},      {4096, 36, 32, 7.5},
		{6144, 40, 48, 18.4},     {8192, 48, 64, 39.1},     {10240, 60, 80, 76.1},
		{12288, 80, 96, 145.6},   {16384, 96, 128, 310.1},  {20480, 105, 128, 529.6},
		{25600, 128, 160, 1008.0}, {12288, 96, 96, 174.6}, /* GPT-3, Table 2 */
	};
	const int s = 2048;
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		struct model m = gpt(r[i].L, r[i].h, r[i].a, s);
		double got = model_params_total(&m);
		CHECK(fabs(got / BILLION - r[i].printed) <= 0.06, "TV-M1 h %d L %d: got %.3fB, printed %.1fB",
		      r[i].h, r[i].L, got / BILLION, r[i].printed);
		/* exact: the Playbook form hV + L(12h² + 13h) + 2h [PB] plus Megatron's s·h position
		 * table; eq. 2 itself omits the final LayerNorm's 2h */
		double h = r[i].h, L = r[i].L, V = m.vocab;
		double pb = h * V + L * (12 * h * h + 13 * h) + 2 * h + s * h;
		CHECK_REL(got, pb, 1e-12, "per-layer 12h^2+13h [PB] + embeddings");
		struct layer_params lp;
		layer_params(&m, 0, &lp);
		CHECK_REL(lp.total, 12 * h * h + 13 * h, 1e-12, "GPT layer 12h^2 + 13h [PB]");
	}
}

/* TV-M4: bubble fraction (p−1)/m, interleaved (p−1)/(v·m): p 8, m 24 -> 0.2917, v 3 -> 0.0972.
 * The estimator has no public bubble function; the schedule's bubble is checked end to end in
 * test_estimate.c. Here: the interleaved figure equals the 1F1B one shrunk by v, which is the
 * same (p−1)/(p·v) term as the activation factor of TV-G3. */
static void test_megatron_bubble(void)
{
	double p = 8, m = 24;
	CHECK_ABS((interleave_act_factor(8, 3) - 1) * p / m, 0.0972, 5e-5,
		  "TV-M4 interleaved bubble (p-1)/(v m) via interleave_act_factor");
}

/* TV-M5: TP communication per layer per micro-batch per device 8bsh(t−1)/t; PP boundary bsh,
 * bsh/t with scatter/gather [MEG §3.2, §4.1]. b 1, s 2048, h 12288, t 8: TP 1.7616e8 elements;
 * PP 2.5166e7 -> 3.146e6 elements. The TP figure is expressed through the all-reduce busbw
 * factor: 4 all-reduces of bsh elements each move bsh·2(t−1)/t per rank. The PP figures are
 * plain products of the inputs with no function to check (the estimator's P2P size is covered
 * in test_estimate.c). */
static void test_megatron_volumes(void)
{
	double b = 1, s = 2048, h = 12288;
	int t = 8;
	CHECK_REL(4 * b * s * h * coll_busbw_factor(COLL_ALLREDUCE, t), 1.7616e8, 5e-5, "TV-M5 TP elements per layer");
}

/* ------------------------------------------------------- Llama 3, Mixtral, DeepSeek-V3 */

/* TV-L1: Llama 3 Table 3 architectures; §1.2 with untied embeddings gives 8.03B / 70.55B /
 * 405.85B (±0.01B). The built-in profiles use the HF vocabulary 128256 (the paper's
 * "128,000" rounded); the difference, 256·h·2, is below 0.01B for all three. */
static void test_llama3_params(void)
{
	static const struct { const char *name; int L, h, f, a; double want; } r[] = {
		{"llama-3-8b", 32, 4096, 14336, 32, 8.03},
		{"llama-3-70b", 80, 8192, 28672, 64, 70.55},
		{"llama-3.1-405b", 126, 16384, 53248, 128, 405.85},
	};
	for (int i = 0; i < 3; i++) {
		struct model m;
		if (load(r[i].name, &m)) continue;
		CHECK(m.layers == r[i].L && m.hidden == r[i].h && m.ffn_hidden == r[i].f && m.heads == r[i].a &&
		      m.kv_heads == 8 && m.mlp == MLP_SWIGLU && !m.tied,
		      "TV-L1 %s architecture differs from Llama 3 Table 3", r[i].name);
		CHECK_ABS(model_params_total(&m) / BILLION, r[i].want, 0.01, r[i].name);
		CHECK_ABS(model_params_active(&m) / BILLION, r[i].want, 0.01, "dense: active == total");
	}
}

/* TV-L3: 405B parameters on 15.6T tokens; budget 3.8e25 FLOPs; 6·N·D = 3.79e25 [L3 §1, §3.2]. */
static void test_llama3_budget(void)
{
	struct model m;
	if (load("llama-3.1-405b", &m)) return;
	double sixnd = 6 * model_params_total(&m) * 15.6e12;
	CHECK_ABS(sixnd / 1e25, 3.8, 0.05, "TV-L3 6ND vs the 3.8e25 budget");
}

/* TV-L2: Llama 3 405B Table 4 layouts: GPUs = TP·CP·PP·DP and tokens per batch
 * DP·(batch/DP)·seq = 16M (2^24). The plan resolver must derive the same DP; the last row
 * needs DP 8 (one transcription prints 4). */
static void test_llama3_layouts(void)
{
	struct model m;
	if (load("llama-3.1-405b", &m)) return;
	static const struct { int gpus, tp, cp, pp, dp, seq, per_dp; } r[] = {
		{8192, 8, 1, 16, 64, 8192, 32},
		{16384, 8, 1, 16, 128, 8192, 16},
		{16384, 8, 16, 16, 8, 131072, 16},
	};
	for (int i = 0; i < 3; i++) {
		struct plan p;
		char err[ERR_LEN] = "", v[32];
		plan_defaults(&p);
		int rc = 0;
		snprintf(v, sizeof(v), "%d", r[i].gpus); rc |= plan_set(&p, "gpus", v, err);
		snprintf(v, sizeof(v), "%d", r[i].tp); rc |= plan_set(&p, "tp", v, err);
		snprintf(v, sizeof(v), "%d", r[i].cp); rc |= plan_set(&p, "cp", v, err);
		snprintf(v, sizeof(v), "%d", r[i].pp); rc |= plan_set(&p, "pp", v, err);
		snprintf(v, sizeof(v), "%d", r[i].seq); rc |= plan_set(&p, "seq", v, err);
		snprintf(v, sizeof(v), "%d", r[i].dp * r[i].per_dp); rc |= plan_set(&p, "gbs", v, err);
		if (!rc) rc = plan_resolve(&p, &m, NULL, err);
		CHECK(rc == 0, "TV-L2 row %d: %s", i, err);
		if (rc) continue;
		CHECK(p.dp == r[i].dp, "TV-L2 row %d: dp %d, want %d", i, p.dp, r[i].dp);
		CHECK((double)p.gbs * p.seq == 16777216.0, "TV-L2 row %d: %d x %d tokens, want 2^24", i, p.gbs, p.seq);
	}
}

/* TV-X1: Mixtral 8x7B, 47B total / 13B active [MIX]; §1.3 gives 46.70B / 12.88B (untied head,
 * router h·E). */
static void test_mixtral_params(void)
{
	struct model m;
	if (load("mixtral-8x7b", &m)) return;
	CHECK(m.hidden == 4096 && m.layers == 32 && m.ffn_hidden == 14336 && m.heads == 32 && m.kv_heads == 8 &&
	      m.vocab == 32000 && m.moe_experts == 8 && m.moe_topk == 2, "TV-X1 Mixtral architecture");
	CHECK_ABS(model_params_total(&m) / BILLION, 46.70, 0.01, "TV-X1 Mixtral total");
	CHECK_ABS(model_params_active(&m) / BILLION, 12.88, 0.01, "TV-X1 Mixtral active");
}

/* TV-D4: DeepSeek-V3 671B total / 37B activated [DSV3 §4.2]. The published 671B excludes the
 * 11.5B multi-token-prediction module, which is not modelled; the rest of the count depends on
 * vocabulary and dense-FFN sizes the paper's paragraph does not give (they come from the
 * profile), so allow 1.5 %. */
static void test_deepseek_params(void)
{
	struct model m;
	if (load("deepseek-v3", &m)) return;
	CHECK_REL(model_params_total(&m), 671e9, 0.015, "TV-D4 DeepSeek-V3 total");
	CHECK_REL(model_params_active(&m), 37e9, 0.015, "TV-D4 DeepSeek-V3 active");
}

/* ------------------------------------------------------- collectives [NCCLT] */

/* TV-N1: busbw factors all-reduce 2(n−1)/n (n 2: 1.0, 4: 1.5, 8: 1.75, 16: 1.875,
 * 64: 1.96875), reduce-scatter / all-gather / all-to-all (n−1)/n (n 8: 0.875), send/recv 1. */
static void test_busbw_factors(void)
{
	static const struct { int n; double f; } ar[] = {{2, 1.0}, {4, 1.5}, {8, 1.75}, {16, 1.875}, {64, 1.96875}};
	for (int i = 0; i < 5; i++)
		CHECK(coll_busbw_factor(COLL_ALLREDUCE, ar[i].n) == ar[i].f, "TV-N1 all-reduce n %d: got %g, want %g",
		      ar[i].n, coll_busbw_factor(COLL_ALLREDUCE, ar[i].n), ar[i].f);
	CHECK(coll_busbw_factor(COLL_REDUCESCATTER, 8) == 0.875, "TV-N1 reduce-scatter n 8");
	CHECK(coll_busbw_factor(COLL_ALLGATHER, 8) == 0.875, "TV-N1 all-gather n 8");
	CHECK(coll_busbw_factor(COLL_ALLTOALL, 8) == 0.875, "TV-N1 all-to-all n 8");
	CHECK(coll_busbw_factor(COLL_SENDRECV, 2) == 1.0, "TV-N1 send/recv");
}

/* TV-N1 worked example: all-reduce of 1 GB on 8 ranks at busbw 100 GB/s -> algbw 57.1 GB/s,
 * t = 17.5 ms. A fabric with zero latency and no derating isolates the bandwidth term. */
static void test_allreduce_example(void)
{
	struct hw h;
	char err[ERR_LEN];
	memset(&h, 0, sizeof(h));
	h.ntiers = 2;
	h.tier[0].gpus = 8; h.tier[0].busbw_bps = 100e9; h.tier[0].oversub = 1;
	h.tier[1].net = 1; h.tier[1].busbw_bps = 100e9; h.tier[1].oversub = 1;
	h.comm_eff = 1;
	h.gpus_per_node = 8;
	CHECK(coll_lib_load("nccl", &h.lib, err) == 0, "%s", err);
	for (int a = 0; a < ALGO_COUNT; a++)
		for (int q = 0; q < PROTO_COUNT; q++) {
			if (h.lib.base_s[a][q] > 0) h.lib.base_s[a][q] = 0;
			if (h.lib.hop_nvl_s[a][q] > 0) h.lib.hop_nvl_s[a][q] = 0;
			if (h.lib.hop_net_s[a][q] > 0) h.lib.hop_net_s[a][q] = 0;
		}
	struct span one = span_nodes(8, 1), spread = span_nodes(8, 8);
	double t = coll_time(&h, COLL_ALLREDUCE, 1e9, &one);
	CHECK_ABS(t * 1e3, 17.5, 0.05, "TV-N1 1 GB all-reduce on 8 ranks, ms");
	CHECK_ABS(1e9 / t / 1e9, 57.1, 0.05, "TV-N1 algbw GB/s");
	/* one GPU per node: the ring runs over the NICs alone, so the same bus bandwidth gives
	 * the same time */
	CHECK_ABS(coll_time(&h, COLL_ALLREDUCE, 1e9, &spread) * 1e3, 17.5, 0.05, "TV-N1 one rank per node, ms");
	/* 8 ranks per node on 4 nodes, NVLink 4x the NIC: the ring is a cycle leaving each node
	 * once, 4 of its 32 hops, spread over the nodes' NICs; it runs at the slower of its shares,
	 * 4/32 over the NIC at 25 GB/s against 28/32 over NVLink at 100 GB/s [nccl-tests#309: 8
	 * NICs bound the ring at 8 NIC rates] */
	h.tier[1].busbw_bps = 25e9;
	struct span four = span_nodes(32, 4);
	double want = 1e9 * 31.0 / 32 * fmax(4.0 / 32 / 25e9, 28.0 / 32 / 100e9);
	CHECK_REL(coll_time(&h, COLL_REDUCESCATTER, 1e9, &four), want, 1e-9, "multi-node ring at the slower share");
	/* an oversubscribed spine above a leaf of 16 GPUs: a group over two leaves sees the NIC
	 * rate divided by the oversubscription */
	h.ntiers = 3;
	h.tier[2] = h.tier[1];
	h.tier[1].gpus = 16;
	h.tier[2].gpus = 0; h.tier[2].oversub = 4;
	four.units[1] = 2;
	double nvl, net;
	coll_bandwidths(&h, &four, &nvl, &net);
	CHECK(nvl == 100e9 && net == 25e9 / 4, "spine oversubscription: %g %g", nvl, net);
	four.units[1] = 1;
	coll_bandwidths(&h, &four, &nvl, &net);
	CHECK(net == 25e9, "inside one leaf the spine does not count: %g", net);
}

/* Latency after NCCL's own model (src/graph/tuning.cc: base latency per algorithm and protocol,
 * per-hop latency by link kind), smallest over the pairs offered; worked by hand from the
 * table in profiles/comm/nccl.json:
 * - all-gather, 16 ranks on 2 nodes: ring LL 6.6 + 14·0.6 + 1·2.7 = 17.7 µs (Simple 70 µs)
 * - all-reduce, 1024 ranks on 128 nodes: tree LL 6.8 + 2·(7·0.6 + 7·5) = 85.2 µs (ring LL
 *   6.6 + 1792·0.6 + 254·2.7 = 1767.6 µs)
 * - all-gather, 1024 ranks one per node: ring LL 6.6 + 1023·2.7 = 2768.7 µs (PAT 8 + 10/3.5·14
 *   + 1024·2.8 = 2915.2 µs)
 * - all-reduce on one 8-GPU node: ring LL 6.6 + 14·0.6 = 15 µs (NVLS 25 µs) */
static void test_latency(void)
{
	struct hw h;
	char err[ERR_LEN];
	CHECK(hw_load("h100-sxm", &h, err) == 0, "%s", err);
	struct span a = span_nodes(16, 2), b = span_nodes(1024, 128), c = span_nodes(1024, 1024), d = span_nodes(8, 1);
	CHECK_ABS(coll_latency(&h, COLL_ALLGATHER, &a) * 1e6, 17.7, 1e-6, "AG 16 ranks on 2 nodes, µs");
	CHECK_ABS(coll_latency(&h, COLL_REDUCESCATTER, &a) * 1e6, 17.7, 1e-6, "RS 16 ranks on 2 nodes, µs");
	CHECK_ABS(coll_latency(&h, COLL_ALLREDUCE, &b) * 1e6, 85.2, 1e-6, "AR 1024 ranks on 128 nodes: tree, µs");
	CHECK_ABS(coll_latency(&h, COLL_ALLGATHER, &c) * 1e6, 2768.7, 1e-6, "AG 1024 ranks, one per node, µs");
	CHECK_ABS(coll_latency(&h, COLL_ALLREDUCE, &d) * 1e6, 15, 1e-6, "AR on one node: ring LL, µs");
	/* a large all-reduce on one H100 node takes NVLink SHARP: 480 against the ring's 370 GB/s */
	double S = 1 << 30, t = coll_time(&h, COLL_ALLREDUCE, S, &d);
	CHECK_REL(t, 25e-6 + S * 1.75 / (480e9 * h.comm_eff), 1e-9, "1 GiB all-reduce on 8 H100 by NVLS");
	/* a network tier that states its own hop latency (h100-sxm-efa: aws-ofi-nccl's EFA figures,
	 * 20 / 20 / 23 µs for LL / LL128 / Simple) replaces NCCL's for every network step:
	 * AG 16 ranks on 2 nodes, ring LL 6.6 + 14·0.6 + 1·20 = 35 µs; AR 1024 ranks on 128
	 * nodes, tree LL 6.8 + 2·(7·0.6 + 7·20) = 295.2 µs (ring LL 6.6 + 1792·0.6 + 254·20 =
	 * 6161.8); inside one node nothing changes */
	struct hw e;
	CHECK(hw_load("h100-sxm-efa", &e, err) == 0, "%s", err);
	CHECK_ABS(coll_latency(&e, COLL_ALLGATHER, &a) * 1e6, 35.0, 1e-6, "EFA: AG 16 ranks on 2 nodes, µs");
	CHECK_ABS(coll_latency(&e, COLL_ALLREDUCE, &b) * 1e6, 295.2, 1e-6, "EFA: AR 1024 ranks on 128 nodes, µs");
	CHECK_ABS(coll_latency(&e, COLL_ALLREDUCE, &d) * 1e6, 15, 1e-6, "EFA: AR on one node, µs");
	/* and its bandwidth against the measurement it cites: nccl-tests all_reduce of 8 GiB on 16
	 * p5 nodes, 356.27 GB/s bus bandwidth (crazyguitar/aws-gpu-communication-benchmark
	 * data/nccl_all_reduce.csv) */
	struct span p5 = span_nodes(128, 16);
	double S8 = 8.0 * (1 << 30);
	CHECK_REL(S8 * 2 * 127 / 128 / coll_time(&e, COLL_ALLREDUCE, S8, &p5) / 1e9, 356.27, 0.05, "EFA: 8 GiB all-reduce busbw on 16 p5 nodes");
}

/* A measured collective inside one NVLink domain (profiles' nvlink_coll_curve): the 8x H200
 * all_reduce sweep of stas00/ml-engineering network/README.md @744d01e (bus bandwidth 1.44 GB/s
 * at 32 KiB, 275.84 at 32 MiB, 155.53 at 8 MiB, 463.58 at 1 GiB), which h100-sxm carries. The
 * model's time above its latency scales by the measured time above the 32 KiB message's over
 * the model's own above its latency, at the bytes each rank moves. By hand, from NCCL's table
 * (profiles/comm/nccl.json) and h100-sxm (NVLS 480 GB/s, comm_eff 0.9):
 * - the reference itself, 32 MiB all-reduce on 8 GPUs: latency ring LL 15 µs (test_latency),
 *   then exactly the measured rise: 15 µs + (32 MiB·1.75/275.84 GB/s − 32 KiB·1.75/1.44 GB/s);
 * - the 8 MiB point moves 8 MiB·1.75 = 14 MiB per rank; an all-gather of 28 MiB on 2 GPUs
 *   moves as much, so its rise above the latency (ring LL 6.6 + 0.6 = 7.2 µs) takes that point's
 *   factor
 *   k = (8 MiB·1.75/155.53 − 32 KiB·1.75/1.44 GB/s) / (NVLS 25 µs + 8 MiB·1.75/432 GB/s − 15 µs),
 *   its modelled time being ring Simple 8.4 + 3.4 µs + 28 MiB·0.5/333 GB/s;
 * - at 1 GiB the measured rise is below the model's (482 GB/s against 432): factor 1;
 * - across two nodes nothing changes (the curve is one NVLink domain's). */
static void test_nvlink_curve(void)
{
	struct hw h, plain;
	char err[ERR_LEN];
	CHECK(hw_load("h100-sxm", &h, err) == 0, "%s", err);
	CHECK(h.curve.n == 20, "the smallest message and 19 above it: %d", h.curve.n);
	plain = h;
	plain.curve.n = 0;
	struct span node = span_nodes(8, 1), pair = span_nodes(2, 1), two = span_nodes(16, 2);
	double MiB = 1048576.0, t0 = 32768 * 1.75 / 1.44e9;
	double S = 32 * MiB, want = 15e-6 + (S * 1.75 / 275.84e9 - t0);
	CHECK_REL(coll_time(&h, COLL_ALLREDUCE, S, &node), want, 1e-9, "32 MiB all-reduce on 8 H100: the measured rise");
	double k8 = (8 * MiB * 1.75 / 155.53e9 - t0) / (25e-6 + 8 * MiB * 1.75 / 432e9 - 15e-6);
	double S2 = 28 * MiB, m2 = 11.8e-6 + S2 * 0.5 / (370e9 * 0.9);
	CHECK_REL(coll_time(&plain, COLL_ALLGATHER, S2, &pair), m2, 1e-9, "2-GPU all-gather without the curve: ring Simple");
	CHECK_REL(coll_time(&h, COLL_ALLGATHER, S2, &pair), 7.2e-6 + k8 * (m2 - 7.2e-6), 1e-9, "2-GPU all-gather at the 8 MiB factor");
	double G = 1024 * MiB;
	CHECK_REL(coll_time(&h, COLL_ALLREDUCE, G, &node), coll_time(&plain, COLL_ALLREDUCE, G, &node), 1e-12, "1 GiB: factor 1");
	CHECK_REL(coll_time(&h, COLL_ALLGATHER, S, &two), coll_time(&plain, COLL_ALLGATHER, S, &two), 1e-12, "two nodes: no curve");
	CHECK_REL(coll_time(&h, COLL_SENDRECV, S, &pair), coll_time(&plain, COLL_SENDRECV, S, &pair), 1e-12, "send/recv: no curve");
}

/* ------------------------------------------------------- Megatron code constants, Playbook */

/* TV-G1: distributed-optimizer bytes per parameter [MCP-distopt]: bf16 params + fp32 grads
 * 18 -> 6 + 12/d; fp16 params + fp16 grads 20 -> 4 + 16/d; fp32 16 -> 8 + 8/d. The optimizer
 * column holds what the distributed optimizer shards: fp32 main params + Adam (12), plus the
 * fp32 main grads (4) in the fp16 case; fp32 training has Adam only (8). */
static void test_megatron_distopt(void)
{
	static const struct { const char *name; double wb, gb, ob, full, fixed, sharded; } r[] = {
		{"bf16 + fp32 grads", 2, 4, 12, 18, 6, 12},
		{"fp16 + fp16 grads", 2, 2, 16, 20, 4, 16},
		{"fp32", 4, 4, 8, 16, 8, 8},
	};
	const int d[] = {1, 2, 8, 64, 1024};
	for (int i = 0; i < 3; i++) {
		CHECK_ABS(model_state_bytes(1, 0, 64, r[i].wb, r[i].gb, r[i].ob), r[i].full, 1e-12, r[i].name);
		for (int j = 0; j < 5; j++)
			CHECK_ABS(model_state_bytes(1, 1, d[j], r[i].wb, r[i].gb, r[i].ob), r[i].fixed + r[i].sharded / d[j],
				  1e-12, r[i].name);
	}
}

/* TV-G3: interleaved activation factor 1 + (p−1)/(p·v); p 8, v 3: 1.2917, 11 in flight
 * (ceil(factor·p)) [MCODE-mem]. */
static void test_interleave_factor(void)
{
	double f = interleave_act_factor(8, 3);
	CHECK_ABS(f, 1.2917, 5e-5, "TV-G3 factor");
	CHECK(ceil(f * 8) == 11, "TV-G3 in flight: got %g, want 11", ceil(f * 8));
	CHECK(interleave_act_factor(8, 1) == 1 + 7.0 / 8, "v 1: 1 + (p-1)/p");
	CHECK(interleave_act_factor(1, 4) == 1, "p 1: no penalty");
}

/* TV-P1: model states without / with an fp32 gradient accumulation buffer, 16 / 20 B per
 * parameter: 1B 16/20 GB, 7B 112/140, 70B 1120/1400, 405B 6480/8100 [PB]. */
static void test_playbook_states(void)
{
	static const struct { double n, a, b; } r[] = {{1e9, 16, 20}, {7e9, 112, 140}, {70e9, 1120, 1400}, {405e9, 6480, 8100}};
	for (int i = 0; i < 4; i++) {
		CHECK_ABS(model_state_bytes(r[i].n, 0, 1, 2, 2, 12) / GB, r[i].a, 0.5, "TV-P1 16 B/param");
		CHECK_ABS(model_state_bytes(r[i].n, 0, 1, 2, 2 + 4, 12) / GB, r[i].b, 0.5, "TV-P1 20 B/param");
	}
}

/* TV-P2: 4M-token batch at seq 4k -> gbs 1024; mbs 2 on 128 GPUs -> grad_acc 4, on 512 -> 1
 * [PB "Our journey"]. gbs·seq = 4·2^20 tokens. */
static void test_playbook_batch(void)
{
	struct model m;
	if (load("llama-3-8b", &m)) return;
	static const struct { const char *gpus; int acc; } r[] = {{"128", 4}, {"512", 1}};
	for (int i = 0; i < 2; i++) {
		struct plan p;
		char err[ERR_LEN] = "";
		plan_defaults(&p);
		int rc = plan_set(&p, "gpus", r[i].gpus, err) || plan_set(&p, "mbs", "2", err) ||
			 plan_set(&p, "seq", "4096", err) || plan_set(&p, "gbs", "1024", err) ||
			 plan_resolve(&p, &m, NULL, err) || plan_validate(&p, &m, NULL, err);
		CHECK(rc == 0, "TV-P2 %s GPUs: %s", r[i].gpus, err);
		if (rc) continue;
		CHECK((double)p.gbs * p.seq == 4.0 * 1048576, "TV-P2 4M tokens per batch");
		CHECK(plan_microbatches(&p) == r[i].acc, "TV-P2 %s GPUs: grad_acc %d, want %d", r[i].gpus,
		      plan_microbatches(&p), r[i].acc);
	}
}

int main(void)
{
	test_zero_table1();
	test_zero_fig1();
	test_zero_1t();
	test_korthikanti_table2();
	test_korthikanti_selective();
	test_korthikanti_mfu();
	test_attention_flops();
	test_megatron_params();
	test_megatron_bubble();
	test_megatron_volumes();
	test_llama3_params();
	test_llama3_budget();
	test_llama3_layouts();
	test_mixtral_params();
	test_deepseek_params();
	test_busbw_factors();
	test_allreduce_example();
	test_latency();
	test_nvlink_curve();
	test_megatron_distopt();
	test_interleave_factor();
	test_playbook_states();
	test_playbook_batch();
	return test_summary("test_formulas");
}
