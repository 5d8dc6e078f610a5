#!/usr/bin/env bash
# The trainer (runtime/train.h) against a plain single-rank llama_forward/backward/llama_step
# loop on the tiny dense and MoE configs, ZeRO 0-3, under mpirun with 1, 2 and 4 ranks
# (tests/mpi/test_train.c says what is checked).
. "$(dirname "$0")/lib.sh"
B=${SCALEPLAN_BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}exitcode=0"   # see mpi_comm.sh
MPI="timeout 120 mpirun --oversubscribe"
for np in 1 2 4; do
	$MPI -np $np "$B/tests/mpi/test_train" >"$TMP/tt" 2>"$TMP/tte"
	rc=$?
	line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$TMP/tt" | tail -n 1)
	if [ -z "$line" ]; then bad "test_train np $np printed no summary (rc $rc): $(grep -v '^-' "$TMP/tte" | head -c 600)"; continue; fi
	echo "$line"
	p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\2/')
	PASS=$((PASS + p)); FAIL=$((FAIL + f))
	if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then bad "test_train np $np rc $rc: $(grep FAIL "$TMP/tte" | head -n 5)"; fi
	if grep -Eq '(runtime|sim|tests)/[a-z_0-9]+\.c' "$TMP/tte"; then
		bad "test_train np $np leaks memory: $(grep -E -m 5 '(runtime|sim|tests)/[a-z_0-9]+\.c' "$TMP/tte")"
	fi
done
summary
