/* fuzz_plan — a JSON plan file (plan_from_json), then what every verb does with it: resolve
 * and validate it against llama-3-8b on H100s, and estimate it when it is valid. */
#include "sim/estimate.h"
#include "sim/hw.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct model m;
	static struct hw h;
	static int loaded;
	char err[ERR_LEN];
	if (!loaded) {
		if (model_load("llama-3-8b", &m, err) || hw_load("h100-sxm", &h, err)) abort();
		loaded = 1;
	}
	char *text = fuzz_text(data, size);
	if (!text) return 0;
	struct plan p;
	plan_defaults(&p);
	p.gpus = 64;
	if (!plan_from_json(text, &p, err) && !plan_resolve(&p, &m, &h, err) && !plan_validate(&p, &m, &h, err)) {
		struct estimate e;
		estimate_plan(&m, &h, &p, &e, err);
	}
	free(text);
	return 0;
}
