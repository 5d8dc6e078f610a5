#!/usr/bin/env bash
# Runs every test binary (BUILD/tests/test_*) and every CLI script (tests/cli/*.sh), adds up
# their "N passed, N failed" lines and ends with the total. A test that crashes or prints no
# summary counts as one failure. Usage: tests/run.sh BUILD_DIR SCALEPLAN_BINARY
set -u
B=${1:-build}
export SCALEPLAN=$(cd "$(dirname "${2:-scaleplan}")" && pwd)/$(basename "${2:-scaleplan}")
export SCALEPLAN_BUILD=$B
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export LSAN_OPTIONS=suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0
total_pass=0; total_fail=0
logdir=$(mktemp -d)
run_one() {
	local name=$1; shift
	local log=$logdir/$(basename "$name").log
	local t0=$(date +%s)
	"$@" >"$log" 2>&1
	local rc=$?
	local line=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	local p=0 f=0
	if [ -n "$line" ]; then
		p=$(echo "$line" | awk '{print $1}')
		f=$(echo "$line" | awk '{print $3}')
	fi
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	if [ -z "$line" ] && [ $rc -eq 0 ]; then f=1; echo "no summary line from $name"; fi
	total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
	local dt=$(( $(date +%s) - t0 ))
	if [ "$f" -ne 0 ]; then
		echo "FAIL $name ($p passed, $f failed, rc $rc, ${dt}s)"
		grep -E 'FAIL|error|ERROR|Sanitizer|runtime error' "$log" | head -n 30
	else
		echo "ok   $name ($p passed, ${dt}s)"
	fi
}
for t in "$B"/tests/test_*; do
	[ -x "$t" ] || continue
	run_one "$t" "$t"
done
for s in tests/cli/*.sh; do
	[ -f "$s" ] || continue
	case "$s" in */lib.sh) continue;; esac
	run_one "$s" bash "$s"
done
rm -rf "$logdir"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
