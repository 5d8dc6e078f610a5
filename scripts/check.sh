#!/usr/bin/env bash
# make check: the whole suite, then the same suite under ASan/UBSan, then a short fuzz pass (each
# harness counts as one check: passed when it ran its time without a finding). Ends with one
# line "N passed, N failed" summing all three, and exits non-zero when anything failed.
set -u
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0 failed=0
# the last "N passed, N failed" line a step printed
tally() {
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
		failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
	fi
}
for step in test asan; do
	make --no-print-directory "$step" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	tally
	# a step that stopped before its summary (a build error) counts as a failure
	if [ "$rc" -ne 0 ] && ! grep -qE '^[0-9]+ passed, [1-9][0-9]* failed' "$log"; then failed=$((failed + 1)); fi
done
make --no-print-directory fuzz SECONDS=10 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
ran=$(grep -c '^Done [0-9]* runs' "$log")
passed=$((passed + ran))
[ "$rc" -ne 0 ] && failed=$((failed + 1))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
