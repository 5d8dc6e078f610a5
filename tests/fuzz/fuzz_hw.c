/* fuzz_hw — a GPU profile (hw_from_json: strict keys and ranges), then llama-3-8b estimated on
 * 16 of those GPUs with tp 2 and pp 2: every hardware number reaches the time and memory model. */
#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct model m;
	static int loaded;
	char err[ERR_LEN];
	if (!loaded) {
		if (model_load("llama-3-8b", &m, err)) abort();
		loaded = 1;
	}
	char *text = fuzz_text(data, size);
	if (!text) return 0;
	struct hw h;
	if (!hw_from_json(text, "fuzz.json", &h, err)) {
		struct plan p;
		plan_defaults(&p);
		p.gpus = 16;
		p.tp = 2;
		p.pp = 2;
		p.seq = 2048;
		p.gbs = 32;
		if (!plan_resolve(&p, &m, &h, err) && !plan_validate(&p, &m, &h, err)) {
			struct estimate e;
			estimate_plan(&m, &h, &p, &e, err);
		}
	}
	free(text);
	return 0;
}
