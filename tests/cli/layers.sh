#!/usr/bin/env bash
# The layers of the tree (README "Architecture"): sim/ and kernels/ depend on nothing of ours,
# runtime/ on sim/ and kernels/, reports/ on sim/, tuner/ on sim/ and reports/, cli/ on all.
# Checked twice: every #include "DIR/..." of a source or header names an allowed directory, and
# every symbol a layer's library ($B/libLAYER.a) leaves undefined is defined in that library, in
# a library it may use, or in none of ours (the C library, MPI, OpenBLAS...). The link order of
# the Makefile (cli tuner runtime reports kernels sim) catches an upward call as well; the
# symbol check also catches a sideways one (tuner calling runtime).
. "$(dirname "$0")/lib.sh"
B=${SCALEPLAN_BUILD:-build}
declare -A allowed=(
	[sim]="sim" [kernels]="kernels" [reports]="reports sim" [runtime]="runtime sim kernels"
	[tuner]="tuner sim reports" [cli]="cli tuner runtime reports kernels sim"
)
layers="sim kernels reports runtime tuner cli"

# --- includes -------------------------------------------------------------------------------
for l in $layers; do
	bad_inc=
	for f in "$l"/*.c "$l"/*.h "$l"/*.cu; do
		[ -f "$f" ] || continue
		while IFS= read -r dir; do
			case " ${allowed[$l]} " in *" $dir "*) ;; *) bad_inc="$bad_inc $f:$dir";; esac
		done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]+"([a-z_]+)\/.*/\1/p' "$f")
	done
	if [ -z "$bad_inc" ]; then ok; else bad "$l/ may include only ${allowed[$l]}:$bad_inc"; fi
done

# --- symbols --------------------------------------------------------------------------------
if ! command -v nm >/dev/null; then
	echo "no nm: symbol check skipped"
	summary; exit
fi
declare -A defs
for l in $layers; do
	lib=$B/lib$l.a
	if [ ! -f "$lib" ]; then bad "$lib missing (make builds one library per layer)"; continue; fi
	nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$TMP/def.$l"
	nm -g --undefined-only "$lib" 2>/dev/null | awk '{ print $NF }' | sort -u >"$TMP/und.$l"
done
for l in $layers; do
	[ -f "$TMP/und.$l" ] || continue
	: >"$TMP/ok.$l"
	for d in ${allowed[$l]}; do cat "$TMP/def.$d" >>"$TMP/ok.$l"; done
	sort -u -o "$TMP/ok.$l" "$TMP/ok.$l"
	: >"$TMP/ours"
	for d in $layers; do cat "$TMP/def.$d" >>"$TMP/ours"; done
	sort -u -o "$TMP/ours" "$TMP/ours"
	# undefined here, defined by one of our layers, but not by an allowed one
	forbidden=$(comm -23 "$TMP/und.$l" "$TMP/ok.$l" | comm -12 - "$TMP/ours" | head -n 5 | tr '\n' ' ')
	if [ -z "$forbidden" ]; then ok; else bad "lib$l.a calls a layer it may not use: $forbidden"; fi
done
summary
