/* fuzz_trace — a Chrome Trace Event file read for measured op times (trace_parse_op_times, as
 * sim/plot --op-times read it). */
#include "reports/trace.h"
#include "sim/util.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	if (!text) return 0;
	char err[ERR_LEN];
	struct op_times t;
	if (!trace_parse_op_times(text, "fuzz.json", &t, err)) op_times_free(&t);
	free(text);
	return 0;
}
