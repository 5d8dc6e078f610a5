/* hw_table: a profile's measured tables load, interpolate and drive the simulator. Expected
 * values are computed independently: throughput tables filled from power laws (which
 * log-linear interpolation reproduces exactly between grid points), a collective curve from
 * t = α + S/β (whose slope beyond the last point is 1/β), and a profile whose GEMM table holds
 * exactly what the efficiency formula gives, which must price plans as the formula does. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sim/embedded.h"
#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/hw_share.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"

static double law(double M, double N, double K) { return 1e12 * pow(M, 0.5) * pow(N, 0.3) * pow(K, 0.1); }

static void fill_gemm(struct hw_tables *t)
{
	static const double ax[4] = {16, 64, 256, 1024};
	t->gm = t->gn = t->gk = 4;
	memcpy(t->gemm_m, ax, sizeof(ax));
	memcpy(t->gemm_n, ax, sizeof(ax));
	memcpy(t->gemm_k, ax, sizeof(ax));
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			for (int k = 0; k < 4; k++) t->gemm_flops[i][j][k] = law(ax[i], ax[j], ax[k]);
}

static void test_interpolation(void)
{
	struct hw_tables t;
	memset(&t, 0, sizeof(t));
	fill_gemm(&t);
	CHECK_REL(hwt_gemm_flops(&t, 64, 256, 16), law(64, 256, 16), 1e-12, "gemm at a grid point");
	CHECK_REL(hwt_gemm_flops(&t, 100, 300, 40), law(100, 300, 40), 1e-9, "gemm between points (power law)");
	CHECK_REL(hwt_gemm_flops(&t, 5000, 8, 20), law(1024, 16, 20), 1e-9, "gemm clamped outside the box");
	struct hwt_curve c;
	memset(&c, 0, sizeof(c));
	for (double x = 1024; x <= 1 << 20; x *= 4) CHECK(hwt_curve_add(&c, x, 1e-5 + x / 2e9) == 0, "add point");
	CHECK(hwt_curve_add(&c, 10, 1) == -1, "a point out of order is refused");
	CHECK_REL(hwt_curve_at(&c, 4096), 1e-5 + 4096 / 2e9, 1e-12, "curve at a point");
	CHECK_REL(hwt_curve_at(&c, 1), 1e-5 + 1024 / 2e9, 1e-12, "curve clamped below");
	t.coll_ranks[0][0] = 4;
	t.coll[0][0] = c;
	double s;
	CHECK(hwt_coll_s(&t, 0, 4, 4.0 * (1 << 20), 1, 1, &s) == 1, "all_reduce over 4 ranks is in the table");
	/* beyond the table: last point plus the extra bytes at the last segment's slope */
	double x1 = 1 << 20, x0 = x1 / 4, y1 = 1e-5 + x1 / 2e9, y0 = 1e-5 + x0 / 2e9;
	CHECK_REL(s, y1 + (4 * x1 - x1) * (y1 - y0) / (x1 - x0), 1e-12, "extrapolated at the last bandwidth");
	CHECK(hwt_coll_s(&t, 0, 8, 4096, 1, 1, &s) == 0, "no table for 8 ranks");
	CHECK(hwt_coll_s(&t, 1, 4, 4096, 1, 1, &s) == 0, "no table for reduce_scatter");
	/* scaling: the latency part (the smallest message's time) and the rest separately */
	double base;
	hwt_coll_s(&t, 0, 4, 65536, 1, 1, &base);
	hwt_coll_s(&t, 0, 4, 65536, 2, 3, &s);
	double lat = 1e-5 + 1024 / 2e9;
	CHECK_REL(s, 2 * lat + 3 * (base - lat), 1e-12, "latency and transfer scaled apart");
}

static const char *tables_json =
	"{\"backend\": \"cpu\", \"dtype\": \"fp32\", \"host\": \"h\", \"measured\": \"now\", \"ranks\": 2,"
	" \"reference\": {\"gemm_eff\": 0.5, \"attn_eff\": 0.25, \"mem_eff\": 0.8, \"comm_eff\": 1,"
	" \"tier0_busbw_gbps\": 100},"
	" \"collectives\": [{\"op\": \"all_reduce\", \"ranks\": 2, \"bytes\": [1024, 4096], \"time_us\": [10, 20]}]}";

/* h100-sxm's text with a "tables" member added */
static int load_with_tables(const char *tables, struct hw *h, char *err)
{
	struct hw plain;
	if (hw_load("h100-sxm", &plain, err)) return -1;
	const char *text = embedded_find("hw/h100-sxm.json");
	cJSON *o = cJSON_Parse(text), *t = cJSON_Parse(tables);
	if (!o || !t) { cJSON_Delete(o); cJSON_Delete(t); return errf(err, "test json"); }
	cJSON_AddItemToObject(o, "tables", t);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	int rc = hw_from_json(s, "h100-tables", h, err);
	cJSON_free(s);
	return rc;
}

/* a network tier's hop_us: three numbers (LL, LL128, Simple), on a network tier only */
static void test_tier_hop(void)
{
	char err[ERR_LEN];
	struct hw h;
	const char *bad[][2] = {
		{"[20, 20]", "array of 3 numbers"},
		{"[20, -1, 23]", "hop_us[1] must be a number"},
		{"\"fast\"", "array of 3 numbers"},
	};
	for (int i = 0; i < 4; i++) {
		int nvlink = i == 3;
		cJSON *o = cJSON_Parse(embedded_find("hw/h100-sxm-efa.json"));
		cJSON *tier = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "network"), nvlink ? 0 : 1);
		cJSON_DeleteItemFromObjectCaseSensitive(tier, "hop_us");
		cJSON_AddItemToObject(tier, "hop_us", cJSON_Parse(nvlink ? "[1, 1, 1]" : bad[i][0]));
		char *text = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		int rc = hw_from_json(text, "efa-test", &h, err);
		cJSON_free(text);
		const char *want = nvlink ? "only a network tier" : bad[i][1];
		CHECK(rc == -1 && strstr(err, want), "hop_us case %d refused with '%s': %s", i, want, err);
	}
	CHECK(hw_load("h100-sxm-efa", &h, err) == 0 && h.tier[1].has_hop && !h.tier[0].has_hop, "%s", err);
	CHECK_REL(h.tier[1].hop_s[2], 23e-6, 1e-12, "Simple hop in seconds");
}

/* a measured NVLink-domain collective (nvlink_coll_curve): one of the three ring collectives,
 * a group that fits the domain, sizes increasing, bandwidths positive, as many of each */
static void test_coll_curve(void)
{
	char err[ERR_LEN];
	struct hw h;
	const char *bad[][2] = {
		{"{\"op\": \"all_to_all\", \"ranks\": 8, \"mib\": [1, 2], \"busbw_gbps\": [1, 2]}", "op must be"},
		{"{\"op\": \"all_reduce\", \"ranks\": 1, \"mib\": [1, 2], \"busbw_gbps\": [1, 2]}", "ranks must be"},
		{"{\"op\": \"all_reduce\", \"ranks\": 16, \"mib\": [1, 2], \"busbw_gbps\": [1, 2]}", "fit in one NVLink domain"},
		{"{\"op\": \"all_gather\", \"ranks\": 8, \"mib\": [1, 2, 4], \"busbw_gbps\": [1, 2]}", "same length"},
		{"{\"op\": \"all_gather\", \"ranks\": 8, \"mib\": [1], \"busbw_gbps\": [1]}", "2 to"},
		{"{\"op\": \"reduce_scatter\", \"ranks\": 8, \"mib\": [2, 2], \"busbw_gbps\": [1, 2]}", "mib[1] must be"},
		{"{\"op\": \"reduce_scatter\", \"ranks\": 8, \"mib\": [1, 2], \"busbw_gbps\": [1, -2]}", "busbw_gbps[1] must be"},
		{"[1, 2]", "must be an object"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *o = cJSON_Parse(embedded_find("hw/h100-sxm.json"));
		cJSON_DeleteItemFromObjectCaseSensitive(o, "nvlink_coll_curve");
		cJSON_AddItemToObject(o, "nvlink_coll_curve", cJSON_Parse(bad[i][0]));
		char *text = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		int rc = hw_from_json(text, "curve-test", &h, err);
		cJSON_free(text);
		CHECK(rc == -1 && strstr(err, bad[i][1]) && strstr(err, "nvlink_coll_curve"), "curve case %zu refused with '%s': %s", i, bad[i][1], err);
	}
	/* a profile without one prices collectives by NCCL's model alone; a child keeps its base's */
	CHECK(hw_load("a100-sxm-80g", &h, err) == 0 && h.curve.n == 0, "no curve on the A100: %s", err);
	CHECK(hw_load("h100-sxm-efa", &h, err) == 0 && h.curve.n == 20, "inherited from h100-sxm: %s", err);
}

/* a profile that names a base states only what differs: every other field is the base's,
 * its own keys replace the base's, sources merge (null drops one), and a bad base is refused
 * naming the field */
static void test_base(void)
{
	char err[ERR_LEN];
	struct hw b, e, x;
	CHECK(hw_load("h100-sxm", &b, err) == 0 && hw_load("h100-sxm-efa", &e, err) == 0, "%s", err);
	CHECK(!strcmp(e.name, "h100-sxm-efa"), "the child's name, not the base's: %s", e.name);
	CHECK(e.gemm_eff == b.gemm_eff && e.hbm_bytes == b.hbm_bytes && e.frag_native == b.frag_native &&
	      e.nccl_channels == b.nccl_channels && e.host_coll_s == b.host_coll_s, "fields inherited");
	CHECK(e.ntiers == 2 && e.tier[1].has_hop && !b.tier[1].has_hop, "the child's network replaces the base's");
	CHECK(hw_from_json("{\"base\": \"h100-sxm\", \"name\": \"slow\", \"gemm_eff\": 0.5}", "slow", &x, err) == 0, "%s", err);
	CHECK(x.gemm_eff == 0.5 && x.attn_eff == b.attn_eff && x.ntiers == b.ntiers && !strcmp(x.name, "slow"), "one key overridden");
	/* a key stated twice, the first "sources" not an object: the second merges into what the
	 * first left (found by fuzz_hw: the base's sources were read after the first freed them) */
	CHECK(hw_from_json("{\"base\": \"h100-sxm\", \"sources\": 1, \"sources\": {\"gemm_eff\": \"x\"}}", "twice", &x, err) == 0 &&
	      x.gemm_eff == b.gemm_eff, "sources twice: %s", err);
	cJSON *o = hw_json_load("h100-sxm-efa", err);
	CHECK(o != NULL, "%s", err);
	if (o) {
		cJSON *src = cJSON_GetObjectItemCaseSensitive(o, "sources");
		const cJSON *net = cJSON_GetObjectItemCaseSensitive(src, "network");
		CHECK(!cJSON_GetObjectItemCaseSensitive(o, "base"), "the resolved profile names no base");
		CHECK(cJSON_IsString(net) && strstr(net->valuestring, "EFA"), "the child's source replaces the base's");
		CHECK(cJSON_GetObjectItemCaseSensitive(src, "gemm_eff") && !cJSON_GetObjectItemCaseSensitive(src, "inter"),
		      "the base's other sources kept, the one set to null dropped");
		cJSON_Delete(o);
	}
	/* a base given by path, and a file that is its own base */
	const char *path = "/tmp/scaleplan_test_hw_base.json";
	FILE *f = fopen(path, "w");
	CHECK(f != NULL, "temp file");
	if (f) {
		fprintf(f, "{\"base\": \"%s\", \"name\": \"loop\"}\n", path);
		fclose(f);
		CHECK(hw_load(path, &x, err) == -1 && strstr(err, "base: more than 4 profiles deep"), "a cycle refused: %s", err);
		f = fopen(path, "w");
		fprintf(f, "{\"base\": \"h100-sxm\", \"hbm_gib\": 40}\n");
		fclose(f);
		char text[200];
		snprintf(text, sizeof(text), "{\"base\": \"%s\", \"name\": \"two\"}", path);
		CHECK(hw_from_json(text, "two", &x, err) == 0 && x.hbm_bytes == 40 * GIB && x.gemm_eff == b.gemm_eff,
		      "a base of a base by path: %s", err);
		remove(path);
	}
	/* every built-in GPU takes what it does not state from the stack file, read here as JSON */
	cJSON *st = cJSON_Parse(embedded_find("stack/torch-nccl.json"));
	const cJSON *fr = cJSON_GetObjectItemCaseSensitive(st, "alloc_frag_native"), *ho = cJSON_GetObjectItemCaseSensitive(st, "host_op_us");
	CHECK(cJSON_IsNumber(fr) && cJSON_IsNumber(ho), "the stack file states alloc_frag_native and host_op_us");
	const char *gpus[] = {"a100-sxm-40g", "a100-sxm-80g", "b200", "gb200-nvl72", "h100-sxm", "h100-sxm-96g-500w", "h200-sxm", "h800", "mi300x", "h100-sxm-rail"};
	for (size_t i = 0; fr && ho && i < sizeof(gpus) / sizeof(gpus[0]); i++)
		CHECK(hw_load(gpus[i], &x, err) == 0 && x.frag_native == fr->valuedouble && fabs(x.host_op_s - ho->valuedouble * 1e-6) < 1e-15,
		      "%s: the stack's allocator allowance and host cost (%s)", gpus[i], err);
	cJSON_Delete(st);
	CHECK(hw_load("stack/torch-nccl", &x, err) == -1 && strstr(err, "missing required field"), "the stack is not a GPU: %s", err);
	const char *bad[][2] = {
		{"{\"base\": 7}", "base must be the name of a built-in profile"},
		{"{\"base\": \"\"}", "base must be the name of a built-in profile"},
		{"{\"base\": \"no-such-gpu\"}", "base: unknown profile 'no-such-gpu'"},
		{"{\"base\": \"/dev/stdin\"}", "base: unknown profile '/dev/stdin'"},
		{"{\"base\": \"h100-sxm\", \"gemm_eff\": 2}", "gemm_eff (2) must be in"},
		{"{\"base\": \"h100-sxm\", \"gemm_efff\": 0.5}", "unknown key 'gemm_efff'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(hw_from_json(bad[i][0], "bad", &x, err) == -1 && strstr(err, bad[i][1]), "%s refused with '%s': %s",
		      bad[i][0], bad[i][1], err);
}

static void test_reader(void)
{
	char err[ERR_LEN];
	struct hw h;
	CHECK(load_with_tables(tables_json, &h, err) == 0, "tables load: %s", err);
	CHECK(h.tables.present && h.tables.ranks == 2 && !strcmp(h.tables.backend, "cpu"), "meta read");
	CHECK_REL(h.tables.ref_bw_bps, 100e9, 1e-12, "reference busbw in bytes/s");
	CHECK_REL(h.tables.coll[0][0].y[1], 20e-6, 1e-12, "collective times in seconds");
	CHECK(load_with_tables("{\"bogus\": 1, \"reference\": {}}", &h, err) == -1 && strstr(err, "unknown key 'bogus'"),
	      "unknown key refused: %s", err);
	CHECK(load_with_tables("{\"gemm\": {\"m\": [16, 8], \"n\": [1], \"k\": [1], \"tflops\": [[[1]]]}}", &h, err) == -1 &&
	      strstr(err, "increase"), "a decreasing axis refused: %s", err);
	CHECK(load_with_tables("{\"collectives\": []}", &h, err) == -1 && strstr(err, "reference"), "reference required: %s", err);
}

/* a GEMM table that holds what gemm_eff·n/(n+h) gives at its grid points, with gemm_half_dim
 * 0 (flat efficiency): the simulator must price every plan as without the table */
static void test_table_matches_formula(void)
{
	char err[ERR_LEN];
	struct hw a, b;
	struct model m;
	CHECK(hw_load("h100-sxm", &a, err) == 0 && model_load("llama-3-8b", &m, err) == 0, "%s", err);
	a.gemm_half_dim = 0;
	b = a;
	fill_gemm(&b.tables);
	double flops = a.peak_bf16_flops * a.gemm_eff; /* bf16 plan: gemm peak = peak_bf16 */
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			for (int k = 0; k < 4; k++) b.tables.gemm_flops[i][j][k] = flops;
	b.tables.ref_gemm_eff = a.gemm_eff;
	struct plan p;
	plan_defaults(&p);
	p.gpus = 16; p.tp = 2; p.pp = 2; p.mbs = 1; p.gbs = 64; p.seq = 4096;
	struct estimate ea, eb;
	CHECK(plan_resolve(&p, &m, &a, err) == 0 && plan_validate(&p, &m, &a, err) == 0, "%s", err);
	CHECK(estimate_plan(&m, &a, &p, &ea, err) == 0 && estimate_plan(&m, &b, &p, &eb, err) == 0, "%s", err);
	CHECK_REL(eb.step_time_s, ea.step_time_s, 1e-9, "a table equal to the formula prices as the formula");
	/* halving gemm_eff against the table's reference doubles every GEMM: slower step */
	b.gemm_eff = a.gemm_eff / 2;
	CHECK(estimate_plan(&m, &b, &p, &eb, err) == 0, "%s", err);
	struct hw c = a;
	c.gemm_eff = a.gemm_eff / 2;
	CHECK(estimate_plan(&m, &c, &p, &ea, err) == 0, "%s", err);
	CHECK_REL(eb.step_time_s, ea.step_time_s, 1e-9, "the table moves with gemm_eff as the formula does");
}

/* ranks sharing cores: a pipeline plan's kernels speed up to the fixed point where they run
 * at max(cores/ranks, the share of the step the ranks compute) of the tables' times; a profile
 * with a core per rank is untouched */
static void test_shared_cores(void)
{
	char err[ERR_LEN];
	struct hw h;
	struct model m;
	CHECK(hw_load("h100-sxm", &h, err) == 0 && model_load("llama-3-8b", &m, err) == 0, "%s", err);
	struct plan p;
	plan_defaults(&p);
	p.gpus = 8; p.pp = 8; p.mbs = 1; p.gbs = 8; p.seq = 4096;
	CHECK(plan_resolve(&p, &m, &h, err) == 0 && plan_validate(&p, &m, &h, err) == 0, "%s", err);
	struct estimate own, shared, again;
	h.tables.ranks = 8;
	h.tables.cores = 8; /* a core each: nothing shared */
	CHECK(estimate_plan(&m, &h, &p, &own, err) == 0, "%s", err);
	h.tables.cores = 0;
	CHECK(estimate_plan(&m, &h, &p, &again, err) == 0, "%s", err);
	CHECK(own.step_time_s == again.step_time_s, "cores >= ranks leaves the estimate as it was");
	h.tables.cores = 2;
	CHECK(estimate_plan(&m, &h, &p, &shared, err) == 0, "%s", err);
	CHECK(shared.step_time_s < own.step_time_s, "a waiting rank lends its core: faster (%g vs %g)", shared.step_time_s, own.step_time_s);
	double F;
	struct estimate e = own;
	CHECK(hw_share_adjust(&m, &h, &p, &e, &F, err) == 0, "%s", err);
	double busy = 0;
	for (int j = 0; j < e.nkinds; j++) {
		const struct rank_est *k = &e.kind[j];
		busy += k->ranks * (k->compute_s + k->optimizer_s + k->tp_comm_s + k->cp_comm_s + k->ep_comm_s + k->pp_comm_s + k->dp_exposed_s);
	}
	double f = busy / (p.gpus * e.step_time_s);
	CHECK(F >= 2.0 / 8 - 1e-12 && F < 1, "factor in [cores/ranks, 1) (%g)", F);
	CHECK_REL(F, fmax(2.0 / 8, f), 2e-3, "fixed point: factor = max(cores/ranks, share of the step at work)");
	CHECK_REL(e.step_time_s, shared.step_time_s, 1e-12, "estimate_plan applies it itself");
}

int main(void)
{
	test_shared_cores();
	test_interpolation();
	test_reader();
	test_tier_hop();
	test_coll_curve();
	test_base();
	test_table_matches_formula();
	return test_summary("test_hw_table");
}
