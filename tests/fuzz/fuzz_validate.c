/* fuzz_validate — a measured-run file (shared/validation/FORMAT.md TSV) read and predicted by
 * validate_file, then summarised and grouped as --by groups them. validate_file reads a path,
 * so each input goes through a file in /dev/shm (or TMPDIR) that the harness owns. */
#include <stdio.h>
#include <unistd.h>
#include "sim/util.h"
#include "sim/validate.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[256];
	if (!path[0]) {
		const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		snprintf(path, sizeof(path), "%s/scaleplan-fuzz-validate-%ld.tsv", dir, (long)getpid());
	}
	FILE *f = fopen(path, "wb");
	if (!f) abort();
	if (size && fwrite(data, 1, size, f) != size) abort();
	fclose(f);
	char err[ERR_LEN];
	struct val_row *rows = NULL;
	int n = 0;
	if (!validate_file(path, NULL, &rows, &n, err)) {
		struct val_summary s;
		validate_summarize(rows, n, &s);
		struct val_group *g = NULL; /* the --by groups (no column: one "(unknown)" group) */
		if (validate_by(rows, n, &g) >= 0) free(g);
	}
	free(rows);
	unlink(path);
	return 0;
}
