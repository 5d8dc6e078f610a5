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
