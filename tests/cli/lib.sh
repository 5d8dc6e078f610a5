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

# --- `scaleplan run` under mpirun (run*.sh) ------------------------------------------------------
# run_setup: mpi_setup plus $MPI (mpirun with a 120 s limit) for the run verb's tests.
run_setup() {
	mpi_setup
	MPI="timeout 120 mpirun --oversubscribe"
}
# expect_msg PATTERN: exactly one line of ours on stderr (mpirun adds its own), matching
expect_msg() {
	[ "$1" = "--" ] && shift
	local n=$(grep -c '^scaleplan' "$TMP/err")
	if [ "$n" -eq 1 ] && grep '^scaleplan' "$TMP/err" | grep -Eq -- "$1"; then ok; else bad "stderr: not one message matching '$1': $(head -c 300 "$TMP/err")"; fi
}
# no_leaks WHAT: under ASan, no leak report may name a frame in our sources (Open MPI's own
# leaks at exit cannot be suppressed by name; see mpi_setup)
no_leaks() {
	if grep -Eq '(runtime|cli|sim|tuner|kernels)/[a-z_0-9]+\.c' "$TMP/err"; then
		bad "$1 leaks: $(grep -E -m 3 '(runtime|cli|sim|tuner|kernels)/[a-z_0-9]+\.c' "$TMP/err")"
	else ok; fi
}
# json_lines FILE: every line of FILE that is a JSON object, re-printed by Python ("key": value,
# keys in their order, a float as the shortest text that reads back as it), so that a pattern
# does not depend on the writer's spacing or number format
json_lines() { python3 -c 'import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"): print(json.dumps(json.loads(l)))' "$1"; }
# json_events TRACE: every event of a Chrome trace file, one per line, re-printed the same way
json_events() { python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for e in (d["traceEvents"] if isinstance(d, dict) else d): print(json.dumps(e))' "$1"; }
# losses FILE: the loss of every --json step line, one per line, every bit (equal text = equal double)
losses() { json_lines "$1" | grep '^{"step"' | sed -E 's/.*"loss": ([^,]+),.*/\1/'; }
# close_losses A B N: the first N losses agree within 1e-5 relative
close_losses() {
	paste <(losses "$1" | head -n "$3") <(losses "$2" | head -n "$3") |
		awk -v n="$3" '{d=$1-$2; if (d<0) d=-d; if (d > 1e-5*($2<0?-$2:$2)) bad++} END {exit (NR!=n || bad)}'
}
# close_weights A B: max |a-b| <= 1e-5 * max |b| over two raw fp32 files of the same size
close_weights() {
	[ -s "$1" ] && [ "$(stat -c %s "$1")" = "$(stat -c %s "$2")" ] || return 1
	paste <(od -An -v -w4 -t f4 "$1") <(od -An -v -w4 -t f4 "$2") |
		awk '{d=$1-$2; if (d<0) d=-d; b=$2<0?-$2:$2; if (d>md) md=d; if (b>mb) mb=b}
		     END {exit !(NR > 0 && md <= 1e-5*mb)}'
}
