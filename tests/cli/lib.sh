# Helpers for CLI tests: each check counts a pass or a failure; `summary` prints the line
# tests/run.sh reads. $SCALEPLAN is the binary under test.
PASS=0; FAIL=0
SP=${SCALEPLAN:-./scaleplan}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
ok()   { PASS=$((PASS + 1)); }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }
# expect_rc CODE CMD... : exit status must be CODE; output saved in $TMP/out, $TMP/err
expect_rc() {
	local want=$1; shift
	"$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
	if [ "$rc" -eq "$want" ]; then ok; else bad "rc $rc (want $want): $* :: $(head -c 300 "$TMP/err")"; fi
}
# expect_err_line PATTERN : stderr is exactly one line and matches the extended regex
expect_err_line() {
	local n=$(wc -l <"$TMP/err")
	if [ "$n" -eq 1 ] && grep -Eq -- "$1" "$TMP/err"; then ok; else bad "stderr not one line matching '$1': $(head -c 300 "$TMP/err")"; fi
}
expect_out() {
	if grep -Eq -- "$1" "$TMP/out"; then ok; else bad "stdout lacks '$1': $(head -c 300 "$TMP/out")"; fi
}
summary() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; }

# --- multi-rank programs (tests/mpi/*.c, built into $B/tests/mpi/) ---------------------------
# mpi_setup: call once before run_mpi. Open MPI's plugins keep allocations until after
# MPI_Finalize, which LeakSanitizer can neither name nor suppress, so leak reports do not set
# the exit status; run_mpi fails a run whose stderr names one of our own sources instead.
mpi_setup() {
	B=${SCALEPLAN_BUILD:-build}
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}exitcode=0"
}
# run_mpi NP PROG [MPIRUN_ARGS...] : runs $B/tests/mpi/PROG on NP ranks (120 s at most), echoes
# its "N passed, N failed" line (and any stdout lines matching $MPI_ECHO, an extended regex),
# adds its counts to PASS/FAIL, and counts one more failure for a missing summary, a non-zero
# exit status, failed checks or a leak report naming our sources (FAIL lines aside). Output stays in $TMP/out,err.
run_mpi() {
	local np=$1 prog=$2; shift 2
	if [ ! -x "$B/tests/mpi/$prog" ]; then bad "$B/tests/mpi/$prog not built"; return; fi
	timeout 120 mpirun --oversubscribe "$@" -np "$np" "$B/tests/mpi/$prog" >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	if [ -n "${MPI_ECHO:-}" ]; then
		grep -a -v -E '[0-9]+ passed, [0-9]+ failed' "$TMP/out" | grep -a -E "$MPI_ECHO"
	fi
	local line=$(grep -a -E '[0-9]+ passed, [0-9]+ failed' "$TMP/out" | tail -n 1)
	if [ -z "$line" ]; then
		bad "$prog np=$np printed no summary (rc $rc): $(grep -a -v '^-' "$TMP/err" | head -c 600)"
		return
	fi
	echo "$line"
	local p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\1/')
	local f=$(echo "$line" | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\2/')
	PASS=$((PASS + p)); FAIL=$((FAIL + f))
	local ours='(runtime|sim|kernels|tests)/[a-z_0-9/]+\.c'
	if grep -a -v '^FAIL' "$TMP/err" | grep -a -Eq "$ours"; then
		bad "$prog np=$np leaks memory: $(grep -a -v '^FAIL' "$TMP/err" | grep -a -E -m 5 "$ours")"
	fi
	if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then bad "$prog np=$np rc $rc: $(grep -a FAIL "$TMP/err" | head -n 20)"; fi
}
