/* Trace writer and bubble-plot row choice: the trace of a hand-built two-event timeline parses
 * as JSON with the fields the Chrome Trace Event Format requires (reference/ecosystem.md §4.1),
 * times scaled to microseconds; large pipelines show a sample of rows including the ends.
 * Measured op times read from a hand-written trace average per (stage, kind); the engine's
 * per-micro-batch reduction and post-optimizer gather land where a hand count puts them; the
 * event simulation of a plan keeps its invariants (parts add up to the step, 1F1B holds p-r
 * micro-batches of activations at rank r [MEG §2.2.1]). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "reports/plot.h"
#include "reports/trace.h"
#include "sim/engine.h"
#include "sim/event.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/test.h"

static void test_trace(void)
{
	char err[ERR_LEN], path[] = "/tmp/scaleplan-trace-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0) return;
	close(fd);
	struct timeline tl;
	timeline_init(&tl, 2, 0, err);
	struct tl_event *e = timeline_push(&tl);
	*e = (struct tl_event){.start = 0.5, .end = 1.25, .rank = 1, .mb = 3, .stage = 1, .stream = TL_COMPUTE, .kind = TL_F};
	e = timeline_push(&tl);
	*e = (struct tl_event){.start = 1.25, .end = 1.5, .rank = 1, .mb = 3, .stage = 1, .stream = TL_P2P_FWD, .kind = TL_P2P};
	/* 1 unit = 1 ms = 1000 us */
	CHECK(trace_write(&tl, path, 1000, "a \"quoted\" name", err) == 0, "trace_write: %s", err);
	char *text = read_file(path, 1 << 20, err);
	cJSON *doc = text ? cJSON_Parse(text) : NULL;
	CHECK(doc != NULL, "trace is not JSON");
	cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");
	int x = 0, names = 0, counters = 0;
	cJSON *it;
	cJSON_ArrayForEach(it, ev) {
		const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(it, "ph"));
		if (!ph) continue;
		if (!strcmp(ph, "M")) names++;
		if (!strcmp(ph, "C")) counters++;
		if (strcmp(ph, "X")) continue;
		x++;
		double ts = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "ts"));
		double dur = cJSON_GetNumberValue(cJSON_GetObjectItem(it, "dur"));
		int pid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(it, "pid"));
		int tid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(it, "tid"));
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		CHECK(pid == 1, "pid is the rank");
		if (tid == TL_COMPUTE) {
			CHECK_ABS(ts, 500, 1e-9, "ts in us");
			CHECK_ABS(dur, 750, 1e-9, "dur in us");
			CHECK(name && !strcmp(name, "F3"), "compute event name '%s'", name ? name : "");
		} else {
			CHECK(tid == TL_P2P_FWD, "p2p on its own tid");
		}
	}
	CHECK(x == 2, "%d complete events, want 2", x);
	CHECK(counters == 1, "one activation counter per compute event");
	/* process name + sort index for 2 ranks, thread name + sort index for 2 streams each */
	CHECK(names == 2 * 2 + 2 * 2 * 2, "%d metadata events", names);
	cJSON_Delete(doc);
	free(text);
	timeline_free(&tl);
	unlink(path);
	CHECK(trace_write(&tl, "/nonexistent-dir/x.json", 1, NULL, err) != 0 && strstr(err, "nonexistent"),
	      "unwritable path reported: %s", err);
}

static void test_rows(void)
{
	int rows[64];
	CHECK(plot_pick_rows(8, 32, 16, rows) == 8 && rows[7] == 7, "all rows when few");
	int n = plot_pick_rows(64, 32, 16, rows);
	int ascending = 1;
	for (int k = 1; k < n; k++) ascending &= rows[k] > rows[k - 1];
	CHECK(n == 16 && rows[0] == 0 && rows[15] == 63 && ascending, "64 ranks -> 16 sampled incl. ends");
	char err[ERR_LEN];
	CHECK(plot_format("a.png", err) == 0 && plot_format("a.svg", err) == 1, "formats by extension");
	CHECK(plot_format("a.pdf", err) < 0 && strstr(err, ".png or .svg"), "pdf refused");
	CHECK(plot_format("it's \"a\"\n.png", err) == 0, "quotes and newlines in an output name are fine (it never reaches gnuplot)");
}

static int write_tmp(char *path, const char *text)
{
	int fd = mkstemp(path);
	if (fd < 0) return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static void test_op_times(void)
{
	char err[ERR_LEN], path[] = "/tmp/scaleplan-optimes-XXXXXX";
	const char *text =
		"[{\"name\":\"F\",\"ph\":\"X\",\"ts\":0,\"dur\":1000,\"pid\":1,\"tid\":0,\"args\":{\"mb\":0,\"stage\":1}},\n"
		" {\"name\":\"F\",\"ph\":\"X\",\"ts\":5,\"dur\":3000,\"pid\":1,\"tid\":0,\"args\":{\"mb\":1,\"stage\":1,\"chunk\":0,\"layers\":4}},\n"
		" {\"name\":\"BW\",\"ph\":\"X\",\"ts\":9,\"dur\":500,\"pid\":0,\"tid\":0,\"args\":{\"mb\":0,\"stage\":0}},\n"
		" {\"name\":\"reduce_scatter\",\"ph\":\"X\",\"ts\":9,\"dur\":7,\"pid\":0,\"tid\":3},\n"
		" {\"name\":\"activations\",\"ph\":\"C\",\"ts\":9,\"pid\":0,\"args\":{\"bytes\":1}}]";
	CHECK(write_tmp(path, text) == 0, "temporary trace");
	struct op_times t;
	CHECK(trace_read_op_times(path, &t, err) == 0, "read op times: %s", err);
	if (t.nstages == 2) {
		CHECK_REL(t.mean_s[OPT_F][1], 2e-3, 1e-12, "mean F of stage 1 = (1000+3000)/2 us");
		CHECK(t.n[OPT_F][1] == 2 && t.n[OPT_F][0] == 0 && t.n[OPT_BW][0] == 1, "counts per (stage, kind)");
		CHECK_REL(t.mean_s[OPT_BW][0], 5e-4, 1e-12, "BW of stage 0");
		CHECK(t.events == 4 && t.ignored == 1, "4 complete events, the collective skipped (%ld, %ld)", t.events, t.ignored);
	} else {
		CHECK(0, "two stages expected, got %d", t.nstages);
	}
	op_times_free(&t);
	op_times_free(&t);
	unlink(path);
	char bad[] = "/tmp/scaleplan-optimes-XXXXXX";
	CHECK(write_tmp(bad, "[{\"name\":\"W\",\"ph\":\"X\",\"ts\":0,\"dur\":\"long\",\"pid\":0,\"tid\":0}]") == 0, "tmp");
	CHECK(trace_read_op_times(bad, &t, err) != 0 && strstr(err, "'dur' must be a number"), "non-numeric dur: %s", err);
	unlink(bad);
}

/* pp 2, 1F1B, m 3, unit F and fused BW 2: a reduction of 0.25 after every backward (ZeRO-2
 * style) gives 3 DP events per rank; optimizer 1 and gather 0.5 end the step at
 * end + 1 + 0.5 on the rank whose compute ends last (rank 0, by the dependency chain). */
static void test_engine_dp(void)
{
	char err[ERR_LEN];
	struct sched *s = sched_create(SCHED_1F1B, 2, 3, 1, err);
	CHECK(s != NULL, "sched: %s", err);
	if (!s) return;
	double f[2] = {1, 1}, b[2] = {2, 2}, red[2] = {0.25, 0.25}, opt[2] = {1, 1}, g[2] = {0.5, 0.5};
	struct engine_costs c = {.t_f = f, .t_b = b, .dp_reduce = red, .dp_every_mb = 1, .opt = opt, .opt_gather = g};
	struct engine_result r;
	CHECK(engine_run(s, &c, &r, err) == 0, "engine: %s", err);
	int dp[2] = {0, 0}, gathers = 0;
	for (size_t i = 0; i < r.tl.n; i++) {
		const struct tl_event *e = &r.tl.ev[i];
		if (e->kind == TL_DP) dp[e->rank]++;
		if (e->kind == TL_AG && e->stream == TL_DP_COMM) gathers++;
	}
	CHECK(dp[0] == 3 && dp[1] == 3, "one reduction per backward: %d, %d", dp[0], dp[1]);
	CHECK(gathers == 2, "one post-optimizer gather per rank: %d", gathers);
	/* 1F1B p=2 m=3 unit F, BW 2: rank 0 span (m+p-1)(F+BW) = 12; last reduction 12..12.25 */
	CHECK_REL(r.rank[0].end, 12, 1e-12, "rank 0 compute end");
	CHECK_REL(r.step, 12.25 + 1 + 0.5, 1e-12, "step = last reduction + optimizer + gather");
	engine_result_free(&r);
	sched_destroy(s);
}

/* one rank, F 2 then BW 2, a ZeRO-3 gather of 4 before each (prefetched when the previous op
 * starts). Whole-stage gathers: F 4..6, gather 4..8, BW 8..10. Layer-wise over 4 layers: F starts
 * after the first quarter (1) and ends no earlier than gather end + one layer (4.5); BW's gather
 * runs 4..8, BW starts at 5 and ends at 8.5. */
static void test_engine_gather(void)
{
	char err[ERR_LEN];
	struct sched *s = sched_create(SCHED_1F1B, 1, 1, 1, err);
	CHECK(s != NULL, "sched: %s", err);
	if (!s) return;
	double f[1] = {2}, b[1] = {2}, ag[1] = {4};
	int layers[1] = {4};
	struct engine_costs c = {.t_f = f, .t_b = b, .param_gather = ag, .gather_every_op = 1, .gather_prefetch = 1};
	struct engine_result r;
	CHECK(engine_run(s, &c, &r, err) == 0, "engine: %s", err);
	CHECK_REL(r.rank[0].start, 4, 1e-12, "whole gather: F starts at 4");
	CHECK_REL(r.step, 10, 1e-12, "whole gather: step 10");
	engine_result_free(&r);
	c.gather_layers = layers;
	CHECK(engine_run(s, &c, &r, err) == 0, "engine: %s", err);
	CHECK_REL(r.rank[0].start, 1, 1e-12, "layer-wise gather: F starts after the first layer");
	CHECK_REL(r.step, 8.5, 1e-12, "layer-wise gather: step 8.5");
	engine_result_free(&r);
	sched_destroy(s);
}

/* Blocking (not overlapped) reductions and sends hold the compute stream. One rank, F 1 then
 * BW 2, three micro-batches, a reduction of 0.5 after every backward: on its own stream the
 * compute ends at 3·3 = 9 and the step at 9.5; blocking, each backward is followed by its
 * reduction, so the compute ends at 9 + 2·0.5 = 10 and the step at 10.5. Two stages of 1F1B
 * with m 2, unit F and BW and sends of 0.25: on their own stream rank 1 runs F0 1.25–2.25, B0,
 * F1 3.25–4.25, B1 4.25–5.25, whose gradient reaches rank 0 at 5.5, so rank 0 ends at 6.5;
 * blocking, each sender waits for its send, rank 1 runs F1 3.5–4.5 and B1 4.5–5.5 and rank 0
 * ends at 5.75 + 1 = 6.75. */
static void test_engine_blocking(void)
{
	char err[ERR_LEN];
	struct sched *s = sched_create(SCHED_1F1B, 1, 3, 1, err);
	CHECK(s != NULL, "sched: %s", err);
	if (!s) return;
	double f[1] = {1}, b[1] = {2}, red[1] = {0.5};
	struct engine_costs c = {.t_f = f, .t_b = b, .dp_reduce = red, .dp_every_mb = 1};
	struct engine_result r;
	CHECK(engine_run(s, &c, &r, err) == 0, "engine: %s", err);
	CHECK_REL(r.rank[0].end, 9, 1e-12, "reductions on their own stream: compute ends at 9");
	CHECK_REL(r.step, 9.5, 1e-12, "reductions on their own stream: step 9.5");
	engine_result_free(&r);
	c.dp_blocking = 1;
	CHECK(engine_run(s, &c, &r, err) == 0, "engine: %s", err);
	CHECK_REL(r.step, 10.5, 1e-12, "blocking reductions: step 10.5");
	engine_result_free(&r);
	sched_destroy(s);
	s = sched_create(SCHED_1F1B, 2, 2, 1, err);
	CHECK(s != NULL, "sched: %s", err);
	if (!s) return;
	double f2[2] = {1, 1}, b2[2] = {1, 1}, p2p[1] = {0.25};
	struct engine_costs c2 = {.t_f = f2, .t_b = b2, .p2p = p2p};
	CHECK(engine_run(s, &c2, &r, err) == 0, "engine: %s", err);
	CHECK_REL(r.rank[0].end, 6.5, 1e-12, "sends on their own stream: rank 0 ends at 6.5");
	engine_result_free(&r);
	c2.p2p_blocking = 1;
	CHECK(engine_run(s, &c2, &r, err) == 0, "engine: %s", err);
	CHECK_REL(r.rank[0].end, 6.75, 1e-12, "blocking sends: rank 0 ends at 6.75");
	engine_result_free(&r);
	sched_destroy(s);
}

static void test_event_plan(void)
{
	char err[ERR_LEN];
	struct model m;
	struct hw h;
	struct plan p;
	struct estimate e;
	struct event_sim s;
	plan_defaults(&p);
	CHECK(model_load("llama-3-8b", &m, err) == 0 && hw_load("h100-sxm", &h, err) == 0, "profiles: %s", err);
	CHECK(plan_set(&p, "model", "llama-3-8b", err) == 0 && plan_set(&p, "gpu", "h100-sxm", err) == 0 &&
	      plan_set(&p, "gpus", "32", err) == 0 && plan_set(&p, "pp", "4", err) == 0 && plan_set(&p, "tp", "4", err) == 0 &&
	      plan_set(&p, "zero", "1", err) == 0 && plan_set(&p, "gbs", "32", err) == 0, "plan: %s", err);
	CHECK(plan_resolve(&p, &m, &h, err) == 0 && plan_validate(&p, &m, &h, err) == 0, "valid: %s", err);
	CHECK(estimate_plan(&m, &h, &p, &e, err) == 0, "estimate: %s", err);
	if (event_run(&m, &h, &p, &e, NULL, &s, err)) { CHECK(0, "event_run: %s", err); return; }
	double sum = 0;
	for (int k = 0; k < EVP_COUNT; k++) { sum += s.part_s[k]; CHECK(s.part_s[k] >= 0, "part %s >= 0", ev_part_name(k)); }
	CHECK_REL(sum, s.step_s, 1e-12, "parts add up to the step");
	for (int d = 0; d < EV_DIM_COUNT; d++) CHECK(s.exposed_s[d] >= 0, "exposed %s >= 0", ev_dim_name(d));
	CHECK(s.exposed_s[EV_DP] > 0, "dp 8 with ZeRO-1 exposes some reduction");
	int mb = s.sched->m;
	for (int r = 0; r < 4; r++) {
		const struct rank_est *k = &e.kind[s.rank[r].kind];
		double held = (4 - r < mb ? 4 - r : mb) * k->act_per_mb_bytes;
		CHECK_REL(s.rank[r].peak_act_bytes, held, 1e-9, "1F1B rank holds min(p-r, m) micro-batches");
	}
	event_sim_free(&s);
	event_sim_free(&s);
	/* a measured stage outside the plan is refused */
	struct op_times t;
	memset(&t, 0, sizeof(t));
	t.nstages = 9;
	CHECK(event_run(&m, &h, &p, &e, &t, &s, err) != 0 && strstr(err, "the plan has 4 stages"), "far stage: %s", err);
}

int main(void)
{
	test_trace();
	test_rows();
	test_op_times();
	test_engine_dp();
	test_engine_gather();
	test_engine_blocking();
	test_event_plan();
	return test_summary("test_reports");
}
