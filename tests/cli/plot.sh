#!/usr/bin/env bash
# `scaleplan plot bubble|memory|compare`: every chart renders through gnuplot (exit 0) to a
# non-empty PNG (PNG signature) and SVG (text with an <svg tag); large pipelines are sampled and
# say so; bad input exits 2 with one line naming the problem.
. "$(dirname "$0")/lib.sh"

P=(--model llama-3-8b --gpu h100-sxm --gpus 16 --tp 4 --pp 4 --gbs 16)
is_png() { if [ -s "$1" ] && head -c 8 "$1" | grep -q PNG; then ok; else bad "$1: not a non-empty PNG"; fi; }
is_svg() { if [ -s "$1" ] && grep -q '<svg' "$1" && grep -q '</svg>' "$1"; then ok; else bad "$1: not a non-empty SVG"; fi; }

expect_rc 0 "$SP" plot --help
expect_out 'usage: scaleplan plot bubble'
expect_rc 0 "$SP" --help
expect_out '^  plot '

for ext in png svg; do
	expect_rc 0 "$SP" plot bubble "${P[@]}" -o "$TMP/bubble.$ext"
	expect_out "^wrote .*bubble.$ext"
	expect_rc 0 "$SP" plot memory "${P[@]}" -o "$TMP/memory.$ext"
	expect_rc 0 "$SP" plot memory "${P[@]}" --kind time -o "$TMP/memtime.$ext"
	expect_rc 0 "$SP" plot compare "${P[@]}" --vs --model llama-3-8b --gpu h100-sxm --gpus 16 --tp 2 --zero 3 --gbs 16 -o "$TMP/cmp.$ext"
	expect_out "^wrote .*cmp.$ext \(2 plans\)"
done
for f in bubble memory memtime cmp; do is_png "$TMP/$f.png"; is_svg "$TMP/$f.svg"; done
# the charts carry what they promise: legend entries, the capacity line, the plan labels
grep -q 'B+W (fused backward)' "$TMP/bubble.svg" && grep -q 'bubble fraction' "$TMP/bubble.svg" && ok || bad "bubble.svg legend/title"
grep -q 'optimizer states' "$TMP/memory.svg" && grep -q 'capacity' "$TMP/memory.svg" && grep -q 'rank 3' "$TMP/memory.svg" && ok || bad "memory.svg content"
grep -q 'middle stages' "$TMP/memory.svg" && ! grep -q 'middle stages' "$TMP/memtime.svg" && ok || bad "--kind time draws only the time panel"
grep -q 'A: dp1 tp4 pp4' "$TMP/cmp.svg" && grep -q 'B: dp8 tp2 pp1' "$TMP/cmp.svg" && grep -q 'exposed dp' "$TMP/cmp.svg" && ok || bad "cmp.svg labels"

# each plan's own capacity: an H100 plan beside an H200 one draws two, labelled as such, and the
# printed lines give each plan's (the estimate's: HBM less the CUDA context and NCCL buffers)
expect_rc 0 "$SP" plot compare "${P[@]}" --vs --model llama-3-8b --gpu h200-sxm --gpus 16 --tp 2 --zero 3 --gbs 16 -o "$TMP/caps.svg"
grep -q 'capacity of each plan' "$TMP/caps.svg" && ok || bad "two capacities drawn as one line"
[ "$(grep -oE 'of [0-9.]+ GiB' "$TMP/out" | sort -u | wc -l)" -eq 2 ] && ok || bad "each plan's capacity printed: $(cat "$TMP/out")"
# plans on one GPU kind still differ in what their communicators hold (tp 4 · pp 4 against
# tp 2 · ZeRO-3): compare draws each plan's, and plan A's is the one its memory chart draws
expect_rc 0 "$SP" plot compare "${P[@]}" --vs --model llama-3-8b --gpu h100-sxm --gpus 16 --tp 2 --zero 3 --gbs 16 -o "$TMP/cmp2.svg"
cap_mem=$(grep -oE 'capacity [0-9.]+ GiB' "$TMP/memory.svg" | head -n 1 | grep -oE '[0-9.]+')
cap_a=$(grep -E '^A: ' "$TMP/out" | grep -oE 'of [0-9.]+ GiB' | grep -oE '[0-9.]+')
python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) < 0.05 else 1)' "$cap_mem" "$cap_a" && ok ||
	bad "compare's plan A has another capacity ($cap_a GiB) than its memory chart ($cap_mem GiB)"
grep -q 'capacity of each plan' "$TMP/cmp2.svg" && ok || bad "plans with different capacities drawn as one line"
# long labels are wrapped under their bars, not run into each other
# (six plans: at most 11 characters a line, what a bar's share of the panel holds at the 9-point
# font; gnuplot writes each line of a label as its own text)
expect_rc 0 "$SP" plot compare "${P[@]}" --vs "${P[@]}" --zero 1 --vs "${P[@]}" --zero 2 --vs "${P[@]}" --zero 3 --vs "${P[@]}" --sp --vs "${P[@]}" --mbs 2 -o "$TMP/many.svg"
is_svg "$TMP/many.svg"
grep -q '>A: dp1 tp4<' "$TMP/many.svg" && ! grep -q 'A: dp1 tp4 pp4' "$TMP/many.svg" && ok || bad "labels not wrapped"

# plans from files, each --plan starting a new plan
printf '{"model": "llama-3-8b", "gpu": "h100-sxm", "gpus": 16, "tp": 8, "pp": 2, "gbs": 16, "schedule": "zb-h1"}\n' >"$TMP/a.json"
printf '{"model": "llama-3-8b", "gpu": "h100-sxm", "gpus": 16, "tp": 4, "pp": 4, "gbs": 16, "schedule": "interleaved", "vpp": 2}\n' >"$TMP/b.json"
printf '{"model": "llama-3-8b", "gpu": "h100-sxm", "gpus": 16, "tp": 1, "zero": 3, "gbs": 16}\n' >"$TMP/c.json"
expect_rc 0 "$SP" plot compare --plan "$TMP/a.json" --plan "$TMP/b.json" --plan "$TMP/c.json" -o "$TMP/files.svg"
expect_out 'wrote .*files.svg \(3 plans\)'
is_svg "$TMP/files.svg"
grep -q 'a.json: dp1 tp8 pp2' "$TMP/files.svg" && grep -q 'b.json' "$TMP/files.svg" && grep -q 'c.json' "$TMP/files.svg" && ok || bad "plan files labelled"

# 64 ranks x 512 micro-batches: rows sampled, and the chart says so
expect_rc 0 "$SP" plot bubble --model llama-3.1-405b --gpu h100-sxm --gpus 512 --tp 8 --pp 64 --gbs 512 -o "$TMP/big.svg"
if [ -s "$TMP/big.svg" ] && grep -q 'showing 16 of 64 ranks' "$TMP/big.svg"; then ok; else bad "big.svg missing or not sampled"; fi

# measured op times drive the diagram (a two-stage 1F1B trace, F 10 ms and B+W 20 ms)
{
	printf '{"traceEvents": [\n'
	for st in 0 1; do
		printf '{"name":"F","ph":"X","ts":0,"dur":10000,"pid":%d,"tid":0,"args":{"mb":0,"stage":%d}},\n' $st $st
		printf '{"name":"BW","ph":"X","ts":0,"dur":20000,"pid":%d,"tid":0,"args":{"mb":0,"stage":%d}},\n' $st $st
	done
	printf '{"name":"optimizer","ph":"X","ts":0,"dur":1000,"pid":0,"tid":0,"args":{"stage":0}}]}\n'
} >"$TMP/ops.json"
expect_rc 0 "$SP" plot bubble --model llama-3-8b --gpu h100-sxm --gpus 16 --tp 8 --pp 2 --gbs 4 --op-times "$TMP/ops.json" -o "$TMP/ops.svg"
is_svg "$TMP/ops.svg"
printf '[{"name": "F", "ph": "X", "ts": 0, "pid": 0, "tid": 0, "dur": 1, "args": {"stage": 0}}]' >"$TMP/nomb.json"
expect_rc 2 "$SP" plot bubble "${P[@]}" --op-times "$TMP/nomb.json" -o "$TMP/x.svg"
expect_err_line "event 1 \\(F\\): missing field 'mb'"

# bad input: exit 2, one line
expect_rc 2 "$SP" plot
expect_err_line 'give a chart'
expect_rc 2 "$SP" plot pie "${P[@]}" -o "$TMP/x.png"
expect_err_line "unknown chart 'pie'"
expect_rc 2 "$SP" plot bubble "${P[@]}" -o "$TMP/x.pdf"
expect_err_line 'must end in .png or .svg'
expect_rc 2 "$SP" plot bubble "${P[@]}"
expect_err_line '-o FILE.png or -o FILE.svg is required'
expect_rc 2 "$SP" plot memory "${P[@]}" --kind pie -o "$TMP/x.png"
expect_err_line "--kind: 'pie' is not breakdown, time or both"
expect_rc 2 "$SP" plot bubble "${P[@]}" --kind time -o "$TMP/x.png"
expect_err_line '--kind applies only to plot memory'
expect_rc 2 "$SP" plot bubble --model llama-3-8b --gpu h100-sxm --gpus 24 --tp 3 -o "$TMP/x.png"
expect_err_line 'tp \(3\) does not divide num_attention_heads'
expect_rc 2 "$SP" plot compare "${P[@]}" -o "$TMP/x.svg"
expect_err_line 'compare needs at least two plans'
expect_rc 2 "$SP" plot bubble "${P[@]}" --vs "${P[@]}" -o "$TMP/x.svg"
expect_err_line '--vs applies only to plot compare'
expect_rc 2 "$SP" plot bubble "${P[@]}" --frob -o "$TMP/x.svg"
expect_err_line "unknown option '--frob'"
[ ! -e "$TMP/x.png" ] && [ ! -e "$TMP/x.svg" ] && ok || bad "a rejected plot left a file"

summary
