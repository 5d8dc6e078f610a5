#!/usr/bin/env bash
# Bad input gets exit 2 and one clean line: huge numbers in plan and model JSON are refused
# before any cast (1e400, 1e19 — casting them is undefined behaviour), a plan the event engine
# cannot schedule is bad input, control characters from the user are escaped in messages (a
# newline cannot make a second line, an escape sequence cannot reach the terminal), and the
# messages of 8 ranks that fail at once each stay whole on their own line.
. "$(dirname "$0")/lib.sh"
run_setup
P=(--model llama-3-8b --gpu h100-sxm --gpus 8 --seq 4096)

for v in 1e400 -1e400 1e19 2.5; do
	printf '{"zero": %s}\n' "$v" >"$TMP/p.json"
	expect_rc 2 "$SP" sim "${P[@]}" --plan "$TMP/p.json"
	expect_err_line '^scaleplan sim: plan: zero: .*(not an integer|out of range)'
done
printf '{"stage_layers": [16, 1e19]}\n' >"$TMP/p.json"
expect_rc 2 "$SP" sim "${P[@]}" --pp 2 --plan "$TMP/p.json"
expect_err_line 'stage_layers: entries must be positive integers'
sed 's/"num_attention_heads": 32/"num_attention_heads": 1e19/' profiles/models/llama-3-8b.json >"$TMP/m.json"
grep -q '1e19' "$TMP/m.json" && ok || bad "test model not written"
expect_rc 2 "$SP" sim --model "$TMP/m.json" --gpu h100-sxm --gpus 8 --seq 4096
expect_err_line 'num_attention_heads \(1e\+19\) must be in \[0, 1e9\]'

expect_rc 2 "$SP" sim "${P[@]}" --tp 2 --gbs 67108864 --engine event
expect_err_line 'event engine cannot run .*microbatches \(16777216\) must be in \[1, 1048576\]'
expect_rc 2 "$SP" plot bubble "${P[@]}" --gbs 67108864 -o "$TMP/x.svg"
expect_err_line 'microbatches \(8388608\) must be in'

# control characters: one line, escaped
expect_rc 2 "$SP" sim --model $'evil\nsecond line\x1b[31mred\tx' --gpu h100-sxm --gpus 8
expect_err_line "unknown model 'evil\\\\nsecond line\\\\x1b\\[31mred\\\\tx'"
if grep -q $'\x1b' "$TMP/err"; then bad "an escape character reached stderr"; else ok; fi
expect_rc 2 "$SP" $'fr\nob'   # (the usage follows the message)
[ "$(head -n 1 "$TMP/err")" = "scaleplan: unknown verb 'fr\\nob'" ] && ok || bad "unknown verb: $(head -n 2 "$TMP/err")"

# 8 ranks failing at once: 8 whole lines (three tries: interleaving is a race)
for try in 1 2 3; do
	expect_rc 2 $MPI -np 8 "$SP" run --model tiny --seq 16 --gbs 8 --mbs 1 --steps 1 --data "$TMP/missing.bin"
	n=$(grep -c '^scaleplan' "$TMP/err")
	whole=$(grep -cE '^scaleplan run: rank [0-7]: data: cannot open .*/missing\.bin: No such file or directory$' "$TMP/err")
	[ "$n" -eq 8 ] && [ "$whole" -eq 8 ] && ok || bad "try $try: $whole of $n lines whole: $(grep '^scaleplan' "$TMP/err" | head -n 3)"
done
summary
