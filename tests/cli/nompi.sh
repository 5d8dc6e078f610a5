#!/usr/bin/env bash
# The build without MPI (make NOMPI=1 into build-nompi/, plain gcc, runtime/comm_self.c in
# place of runtime/comm_mpi.c): a one-rank `scaleplan run` of the tiny config trains with the
# same kernels as the MPI build's one-rank run under mpirun, so its losses and final weights
# are the same bits (with another seed they are not: the comparison can fail); its trace is
# written; several ranks are refused with a clear message, before any work.
. "$(dirname "$0")/lib.sh"
run_setup
NB=build-nompi/scaleplan
if ! command -v gcc >/dev/null 2>&1; then echo "no gcc: skipped"; summary; exit; fi
expect_rc 0 nice make -s NOMPI=1 "$NB" build-nompi/tests/test_comm_self
[ -x "$NB" ] || { bad "no $NB"; summary; exit; }
nm "$NB" | grep -q ' U MPI_\| T MPI_' && bad "$NB links MPI symbols" || ok

# one BLAS thread in both runs: mpirun binds a one-rank job to one core, so OpenBLAS runs one
# thread there, and with two threads its sgemm splits the work otherwise on some CPUs (other
# bits measured on an AMD EPYC, OpenBLAS 0.3.21); the kernels compared are then the same
export OPENBLAS_NUM_THREADS=1
TINY="--model tiny --seq 16 --gbs 8 --mbs 2 --steps 3 --json --no-db"
expect_rc 0 $MPI -np 1 "$SP" run $TINY --dump-weights "$TMP/w.mpi"
cp "$TMP/out" "$TMP/l.mpi"
expect_rc 0 timeout 120 "$NB" run $TINY --dump-weights "$TMP/w.self" --trace "$TMP/t.json"
cp "$TMP/out" "$TMP/l.self"
[ "$(losses "$TMP/l.self" | wc -l)" -eq 3 ] && ok || bad "NOMPI run: 3 losses expected: $(head -c 300 "$TMP/l.self")"
if [ "${SCALEPLAN_BUILD:-build}" = build ]; then
	# same compiler flags, same kernels: the same bits
	cmp -s <(losses "$TMP/l.self") <(losses "$TMP/l.mpi") && ok ||
		bad "NOMPI losses $(losses "$TMP/l.self" | tr '\n' ' ') differ from MPI's $(losses "$TMP/l.mpi" | tr '\n' ' ')"
	cmp -s "$TMP/w.self" "$TMP/w.mpi" && ok || bad "NOMPI final weights differ from the MPI build's"
else
	# a sanitized MPI build is compiled at another optimisation level
	close_losses "$TMP/l.self" "$TMP/l.mpi" 3 && ok || bad "NOMPI losses differ from MPI's by more than 1e-5"
fi
expect_rc 0 timeout 120 "$NB" run $TINY --seed 99
cmp -s <(losses "$TMP/out") <(losses "$TMP/l.mpi") && bad "another seed gives the same losses" || ok
json_events "$TMP/t.json" >"$TMP/ev"
grep -q '"name": "F"' "$TMP/ev" && ok || bad "NOMPI trace has no F events"

# one rank only: a plan of 2 GPUs, and a launcher that started 2 ranks
expect_rc 2 timeout 60 "$NB" run $TINY --gpus 2 --dp 2
grep -q 'gpus' "$TMP/err" && ok || bad "--gpus 2 on one rank: $(head -c 300 "$TMP/err")"
OMPI_COMM_WORLD_SIZE=2 expect_rc 1 timeout 60 "$NB" run $TINY
expect_err_line 'no MPI.*started 2'
summary
