#!/usr/bin/env bash
# Multi-rank tests of runtime/comm, ctx, dp and zero under mpirun with 2, 4 and 8 ranks
# (oversubscribed: this runs on 2 cores). Each program adds up its ranks' checks and rank 0
# prints "name: N passed, N failed"; this script adds those up.
. "$(dirname "$0")/lib.sh"
B=${SCALEPLAN_BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI unloads its plugins at MPI_Finalize, so LeakSanitizer cannot name (or suppress) the
# allocations they keep until exit. Leak reports therefore do not change the exit status here;
# instead any report with a frame in our own sources fails the run.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}exitcode=0"
total_p=0; total_f=0
run_mpi() {
	local np=$1 prog=$2
	if [ ! -x "$B/tests/mpi/$prog" ]; then bad "$B/tests/mpi/$prog not built"; return; fi
	timeout 120 mpirun --oversubscribe -np "$np" "$B/tests/mpi/$prog" >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	local line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$TMP/out" | tail -n 1)
	if [ -z "$line" ]; then
		bad "$prog np=$np printed no summary (rc $rc): $(grep -v '^-' "$TMP/err" | head -c 600)"
		return
	fi
	echo "$line"
	local p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\1/')
	local f=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\2/')
	total_p=$((total_p + p)); total_f=$((total_f + f))
	if grep -Eq '(runtime|sim|tests)/[a-z_0-9]+\.c' "$TMP/err"; then
		bad "$prog np=$np leaks memory: $(grep -E -m 5 '(runtime|sim|tests)/[a-z_0-9]+\.c' "$TMP/err")"
	fi
	if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then bad "$prog np=$np rc $rc: $(grep FAIL "$TMP/err" | head -n 10)"; fi
}
for np in 2 4 8; do
	for prog in test_comm test_zero; do run_mpi "$np" "$prog"; done
done
PASS=$((PASS + total_p)); FAIL=$((FAIL + total_f))
summary
