/* fuzz_framework — a framework profile (framework_from_json: entries with conditions, plan
 * keys and sources), then applied to a default plan for two run years, as validate and the
 * --framework flag do. */
#include <stdint.h>
#include "sim/framework.h"
#include "sim/plan.h"
#include "sim/util.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	if (!text) return 0;
	char err[ERR_LEN], applied[512] = "";
	struct framework fw;
	if (!framework_from_json(text, "fuzz.json", &fw, err)) {
		int years[2] = {0, 2021};
		for (int k = 0; k < 2; k++) {
			struct plan p;
			uint64_t mask = 0;
			plan_defaults(&p);
			p.pp = 2;
			framework_apply(&fw, &p, years[k], applied, sizeof(applied), &mask, err);
		}
	}
	free(text);
	return 0;
}
