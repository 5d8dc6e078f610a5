/* fuzz_model — a Hugging Face config.json (model_from_json, model_check), then a plan
 * resolved, validated and estimated on it (8 H100s, tp 2, seq 512): model sizes reach every
 * parameter, FLOP and memory formula. */
#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw h;
	static int loaded;
	char err[ERR_LEN];
	if (!loaded) {
		if (hw_load("h100-sxm", &h, err)) abort();
		loaded = 1;
	}
	char *text = fuzz_text(data, size);
	if (!text) return 0;
	struct model m;
	if (!model_from_json(text, "fuzz.json", &m, err) && !model_check(&m, err)) {
		struct plan p;
		plan_defaults(&p);
		p.gpus = 8;
		p.tp = 2;
		p.seq = 512;
		p.gbs = 8;
		if (!plan_resolve(&p, &m, &h, err) && !plan_validate(&p, &m, &h, err)) {
			struct estimate e;
			estimate_plan(&m, &h, &p, &e, err);
		}
	}
	free(text);
	return 0;
}
