#!/usr/bin/env bash
# `scaleplan sim`: help, the --json contract, and the bad-input contract — every rejected input
# exits 2 with exactly one line on stderr naming the field; a valid plan that does not fit in
# memory is a result, not an error: exit 3, the estimate still printed.
. "$(dirname "$0")/lib.sh"

# json_check FILE PYTHON-EXPR : the expression over `d` (the parsed JSON) must be true
json_check() {
	if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null
	then ok; else bad "json check '$2' failed on: $(head -c 300 "$1")"; fi
}

BASE=(--model llama-3-8b --gpu h100-sxm --gpus 8)

# --- help
expect_rc 0 "$SP" --help
expect_out 'usage: scaleplan VERB'
expect_out '^  sim '
expect_out '^  validate '
expect_rc 0 "$SP" sim --help
expect_out 'usage: scaleplan sim'
expect_out '--tp'
expect_rc 2 "$SP"
expect_rc 2 "$SP" frobnicate
if grep -q "frobnicate" "$TMP/err"; then ok; else bad "unknown verb not named: $(head -c 200 "$TMP/err")"; fi

# --- a plan that fits: exit 0, the text report, and the JSON contract
expect_rc 0 "$SP" sim "${BASE[@]}" --tp 8
expect_out 'memory per GPU'
expect_rc 0 "$SP" sim "${BASE[@]}" --tp 8 --json
cp "$TMP/out" "$TMP/fit.json"
json_check "$TMP/fit.json" 'all(k in d for k in ("step_time_s","tokens_per_s_per_gpu","mfu","peak_mem_bytes","fits","rank_kinds"))'
json_check "$TMP/fit.json" 'isinstance(d["rank_kinds"], list) and len(d["rank_kinds"]) >= 1'
json_check "$TMP/fit.json" 'd["fits"] is True and d["step_time_s"] > 0 and 0 < d["mfu"] < 1'
# fits is defined as peak <= capacity
json_check "$TMP/fit.json" 'd["fits"] == (d["peak_mem_bytes"] <= d["capacity_bytes"])'
# tokens/s per GPU = gbs * seq / step / gpus (the plan echoed in the same object)
json_check "$TMP/fit.json" 'abs(d["tokens_per_s_per_gpu"] - d["plan"]["gbs"]*d["plan"]["seq"]/d["step_time_s"]/d["plan"]["gpus"]) <= 1e-5*d["tokens_per_s_per_gpu"]'
# pipeline: one kind per first / last stage at least
expect_rc 0 "$SP" sim "${BASE[@]}" --pp 4 --tp 2 --gbs 16 --json
cp "$TMP/out" "$TMP/pp.json"
json_check "$TMP/pp.json" 'len(d["rank_kinds"]) >= 2 and d["rank_kinds"][0]["stage"] == 0'

# --- the same plan from a --plan JSON file gives the same estimate
printf '{"model": "llama-3-8b", "gpu": "h100-sxm", "gpus": 8, "tp": 8}\n' >"$TMP/plan.json"
expect_rc 0 "$SP" sim --plan "$TMP/plan.json" --json
cp "$TMP/out" "$TMP/fromfile.json"
if python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if a["step_time_s"]==b["step_time_s"] and a["peak_mem_bytes"]==b["peak_mem_bytes"] else 1)' "$TMP/fit.json" "$TMP/fromfile.json"
then ok; else bad "--plan file and flags disagree"; fi

# --- valid but does not fit: exit 3, estimate still printed, fits false, one line on stderr
expect_rc 3 "$SP" sim --model llama-3.1-405b --gpu h100-sxm --gpus 8 --tp 8 --json
cp "$TMP/out" "$TMP/oom.json"
expect_err_line 'does not fit'
json_check "$TMP/oom.json" 'd["fits"] is False and d["step_time_s"] > 0 and d["peak_mem_bytes"] > d["capacity_bytes"]'
json_check "$TMP/oom.json" 'len(d["rank_kinds"]) >= 1'
expect_rc 3 "$SP" sim --model llama-3.1-405b --gpu h100-sxm --gpus 8 --tp 8
expect_out 'memory per GPU'

# --- bad input: exit 2, exactly one line on stderr naming the subject
expect_rc 2 "$SP" sim --model no-such-model --gpu h100-sxm --gpus 8
expect_err_line "model.*no-such-model"
expect_rc 2 "$SP" sim --model llama-3-8b --gpu no-such-gpu --gpus 8
expect_err_line "gpu.*no-such-gpu"
expect_rc 2 "$SP" sim --gpu h100-sxm --gpus 8
expect_err_line "model"
printf '{"tp": 8,' >"$TMP/malformed.json"
expect_rc 2 "$SP" sim "${BASE[@]}" --plan "$TMP/malformed.json"
expect_err_line "plan.*malformed JSON"
printf '{"tp": 8, "tensor_parallel": 2}\n' >"$TMP/unknown.json"
expect_rc 2 "$SP" sim "${BASE[@]}" --plan "$TMP/unknown.json"
expect_err_line "unknown key 'tensor_parallel'"
expect_rc 2 "$SP" sim "${BASE[@]}" --plan "$TMP/does-not-exist.json"
expect_err_line "does-not-exist.json"
# a 40-head model given as a config.json: TP 16 cannot split its heads
cat >"$TMP/config.json" <<'EOF'
{"model_type": "llama", "hidden_size": 5120, "intermediate_size": 13824, "num_hidden_layers": 40,
 "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 32000,
 "tie_word_embeddings": false}
EOF
expect_rc 0 "$SP" sim --model "$TMP/config.json" --gpu h100-sxm --gpus 8 --tp 8
expect_rc 2 "$SP" sim --model "$TMP/config.json" --gpu h100-sxm --gpus 16 --tp 16
expect_err_line 'tp \(16\) does not divide num_attention_heads \(40\)'
expect_rc 2 "$SP" sim "${BASE[@]}" --tp -1
expect_err_line "tp"
expect_rc 2 "$SP" sim --model llama-3-8b --gpu h100-sxm --gpus 99999999999
expect_err_line "gpus"
expect_rc 2 "$SP" sim "${BASE[@]}" --mbs abc
expect_err_line "mbs.*abc"
expect_rc 2 "$SP" sim "${BASE[@]}" --seq 0
expect_err_line "seq"
expect_rc 2 "$SP" sim "${BASE[@]}" --tp
expect_err_line "tp"
expect_rc 2 "$SP" sim --model llama-3-8b --gpu h100-sxm --gpus 12 --tp 8
expect_err_line "does not divide gpus \(12\)"
expect_rc 2 "$SP" sim "${BASE[@]}" --schedule zigzag
expect_err_line "schedule"
expect_rc 2 "$SP" sim "${BASE[@]}" --no-such-flag
expect_err_line "no-such-flag"

summary
