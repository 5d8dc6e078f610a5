#!/usr/bin/env bash
# Multi-rank tests of context parallelism (runtime/cp: zig-zag split, ring attention) and
# expert parallelism (runtime/ep: all-to-all dispatch and combine) under mpirun with 2 and 4
# ranks, plus 8 for CP and 1 for both (the degenerate group). Each program adds up its
# ranks' checks and rank 0 prints "name: N passed, N failed"; this script adds those up.
. "$(dirname "$0")/lib.sh"
B=${SCALEPLAN_BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# As in mpi_comm.sh: Open MPI's own allocations at exit cannot be suppressed, so leak reports
# do not change the exit status; a report with a frame in our sources fails the run instead.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}exitcode=0"
total_p=0; total_f=0
run_mpi() {
	local np=$1 prog=$2
	if [ ! -x "$B/tests/mpi/$prog" ]; then bad "$B/tests/mpi/$prog not built"; return; fi
	timeout 120 mpirun --oversubscribe -np "$np" "$B/tests/mpi/$prog" >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	grep -v -E '[0-9]+ passed, [0-9]+ failed' "$TMP/out" | grep -a -E '^(cp|ep)[0-9]'
	local line=$(grep -a -E '[0-9]+ passed, [0-9]+ failed' "$TMP/out" | tail -n 1)
	if [ -z "$line" ]; then
		bad "$prog np=$np printed no summary (rc $rc): $(grep -a -v '^-' "$TMP/err" | head -c 600)"
		return
	fi
	echo "$line"
	local p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\1/')
	local f=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\2/')
	total_p=$((total_p + p)); total_f=$((total_f + f))
	if grep -a -Eq '(runtime|kernels|tests)/[a-z_0-9/]+\.c' "$TMP/err"; then
		bad "$prog np=$np: $(grep -a -E -m 5 '(runtime|kernels|tests)/[a-z_0-9/]+\.c' "$TMP/err")"
	fi
	if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then bad "$prog np=$np rc $rc: $(grep -a FAIL "$TMP/err" | head -n 10)"; fi
}
for np in 1 2 4 8; do run_mpi "$np" test_cp; done
for np in 1 2 4; do
	[ -f tests/mpi/test_ep.c ] && run_mpi "$np" test_ep
done
PASS=$((PASS + total_p)); FAIL=$((FAIL + total_f))
summary
