#!/usr/bin/env bash
# Pipeline executor (runtime/pp) under mpirun with 2, 4 and 8 ranks (oversubscribed): every
# schedule against a single-rank run of the same micro-batches; tests/mpi/test_pp.c prints
# "test_pp: N passed, N failed" on rank 0 and this script adds those up. The last run lowers
# Open MPI's shared-memory eager limit so that every transfer uses the rendezvous protocol
# (a send completes only once its receive is posted), the regime in which a wrong posting
# order would deadlock even if the model's hidden size made messages small.
. "$(dirname "$0")/lib.sh"
B=${SCALEPLAN_BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# as in mpi_comm.sh: Open MPI's plugin allocations cannot be suppressed, so leak reports do not
# change the exit status; a report naming our own sources fails the run
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}exitcode=0"
# one BLAS thread per rank: the ranks already oversubscribe the cores
export OPENBLAS_NUM_THREADS=1
for run in "2" "4" "8" "2 --mca btl_vader_eager_limit 256 --mca btl_vader_rndv_eager_limit 256"; do
	np=${run%% *}; mca=${run#"$np"}
	if [ ! -x "$B/tests/mpi/test_pp" ]; then bad "$B/tests/mpi/test_pp not built"; break; fi
	timeout 120 mpirun --oversubscribe $mca -np "$np" "$B/tests/mpi/test_pp" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$TMP/out" | tail -n 1)
	if [ -z "$line" ]; then
		bad "test_pp np=$np printed no summary (rc $rc): $(grep -v '^-' "$TMP/err" | head -c 600)"
		continue
	fi
	grep -v -E 'passed, [0-9]+ failed' "$TMP/out"
	echo "np=$np${mca:+ (rendezvous)} $line"
	p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\2/')
	PASS=$((PASS + p)); FAIL=$((FAIL + f))
	if grep -Eq '(runtime|sim|tests)/[a-z_0-9]+\.c' "$TMP/err"; then
		bad "test_pp np=$np leaks memory: $(grep -E -m 5 '(runtime|sim|tests)/[a-z_0-9]+\.c' "$TMP/err")"
	fi
	if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then bad "test_pp np=$np rc $rc: $(grep FAIL "$TMP/err" | head -n 20)"; fi
done
summary
