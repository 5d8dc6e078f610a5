#!/usr/bin/env bash
# Tensor and sequence parallelism of the model against the single-rank model under mpirun:
# np 2 (tp 2) and np 4 (two tp-2 replicas, then tp 4). Rank 0 prints "name: N passed, N
# failed"; this script adds those up.
. "$(dirname "$0")/lib.sh"
B=${SCALEPLAN_BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's plugins keep allocations LeakSanitizer cannot attribute (see mpi_comm.sh): leak
# reports do not set the exit status; a report naming our own sources fails the run.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}exitcode=0"
for np in 2 4; do
	prog=$B/tests/mpi/test_tp
	if [ ! -x "$prog" ]; then bad "$prog not built"; continue; fi
	timeout 120 mpirun --oversubscribe -np "$np" "$prog" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$TMP/out" | tail -n 1)
	if [ -z "$line" ]; then
		bad "test_tp np=$np printed no summary (rc $rc): $(grep -v '^-' "$TMP/err" | head -c 600)"
		continue
	fi
	echo "$line"
	p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\2/')
	PASS=$((PASS + p)); FAIL=$((FAIL + f))
	if grep -Eq '(runtime|sim|tests)/[a-z_0-9]+\.c' "$TMP/err"; then
		bad "test_tp np=$np leaks memory: $(grep -E -m 5 '(runtime|sim|tests)/[a-z_0-9]+\.c' "$TMP/err")"
	fi
	if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then bad "test_tp np=$np rc $rc: $(grep FAIL "$TMP/err" | head -n 20)"; fi
done
summary
