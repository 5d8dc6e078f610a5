/* Trace writer and bubble-plot row choice: the trace of a hand-built two-event timeline parses
 * as JSON with the fields the Chrome Trace Event Format requires (reference/ecosystem.md §4.1),
 * times scaled to microseconds; large pipelines show a sample of rows including the ends. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "reports/plot.h"
#include "reports/trace.h"
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
	CHECK(plot_format("it's.png", err) < 0, "quote refused");
}

int main(void)
{
	test_trace();
	test_rows();
	return test_summary("test_reports");
}
