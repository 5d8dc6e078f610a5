/* bench — `make bench`: every benchmark, one line per figure ("bench <name> <value> <unit>").
 * Timing lives here, never in tests. Each module's benchmark is a function declared in
 * bench/bench.h; add it to the table below. */
#include <string.h>
#include "bench/bench.h"
#include "cli/cli.h"
#include "kernels/cpu.h"

static const struct {
	const char *name;
	void (*run)(void);
} benches[] = {
	{"estimate", bench_estimate},
	{"engine", bench_engine},
	{"comm", bench_comm},
	{"kernels", bench_kernels},
	{"tune", bench_tune},
};

int main(int argc, char **argv)
{
	cli_blas_reexec(); /* sgemm and the training step on the kernels this CPU can run */
	for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
		if (argc < 2 || !strcmp(argv[1], benches[i].name))
			benches[i].run();
	return 0;
}
