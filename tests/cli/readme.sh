#!/usr/bin/env bash
# Every command the README shows runs and exits 0 (its plan fits): each indented line of the
# README that starts with ./scaleplan, mpirun or `make deps all && ./scaleplan`, run in a
# scratch directory (the tune records into ./scaleplan.db there, which `db runs` and
# `export --id 1` then read), with ./scaleplan as the binary under test and mpirun under the
# run tests' time limit. The README's first command is a tune.
. "$(dirname "$0")/lib.sh"
run_setup
README="$(dirname "$0")/../../README.md"
grep -E '^    (make deps all && )?(\./scaleplan|mpirun) ' "$README" | sed -E 's/^    (make deps all && )?//' >"$TMP/cmds"
[ "$(wc -l <"$TMP/cmds")" -ge 6 ] && ok || bad "README shows $(wc -l <"$TMP/cmds") commands"
head -n 1 "$TMP/cmds" | grep -q '^\./scaleplan tune ' && ok || bad "the README's first command is not a tune: $(head -n 1 "$TMP/cmds")"
mkdir -p "$TMP/work"
n=0
while IFS= read -r cmd; do
	n=$((n + 1))
	# shellcheck disable=SC2086 # the README's words
	set -- $cmd
	if [ "$1" = mpirun ]; then
		shift
		args=()
		for a in "$@"; do [ "$a" = ./scaleplan ] && args+=("$SP") || args+=("$a"); done
		(cd "$TMP/work" && timeout 120 mpirun "${args[@]}") >"$TMP/out" 2>"$TMP/err"
	else
		shift
		(cd "$TMP/work" && "$SP" "$@") >"$TMP/out" 2>"$TMP/err"
	fi
	rc=$?
	[ $rc -eq 0 ] && ok || bad "README command $n exits $rc: $cmd: $(head -c 300 "$TMP/err")"
done <"$TMP/cmds"
# what the README says the first tune records and writes
[ -s "$TMP/work/scaleplan.db" ] && [ -s "$TMP/work/out/report.md" ] && [ -s "$TMP/work/out/compare.png" ] && ok ||
	bad "the README's tune did not write scaleplan.db and out/report.md with its charts"
(cd "$TMP/work" && "$SP" export --id 1 --format megatron) >"$TMP/out" 2>"$TMP/err" &&
	grep -q -- '--tensor-model-parallel-size' "$TMP/out" && ok || bad "export --id 1 after the README's tune"
# nothing in the README points outside the repository
if grep -nE '\.\./|shared/' "$README"; then bad "the README points outside the repository"; else ok; fi
summary
