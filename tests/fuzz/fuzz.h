/* fuzz — shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c, built and run by `make fuzz`):
 * each takes libFuzzer's bytes as the text of one input file and drives a parser, then what
 * the program does next with what parsed (resolve, validate, estimate), under ASan, UBSan and
 * -fsanitize=float-cast-overflow. A harness never prints; a finding is a sanitizer report or
 * a crash. Seed inputs live in tests/fuzz/corpus/NAME/. */
#ifndef SCALEPLAN_FUZZ_H
#define SCALEPLAN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes as a NUL-terminated string (malloc'd; NULL when out of memory). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *t = malloc(size + 1);
	if (t) {
		memcpy(t, data, size);
		t[size] = 0;
	}
	return t;
}

#endif
