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
json_check "$TMP/fit.json" 'd["engine"] == "analytical" and d["fits"] is True and d["step_time_s"] > 0 and 0 < d["mfu"] < 1'
# the allocator's reserved pool is what must fit; live tensors are at most that
json_check "$TMP/fit.json" 'd["reserved_peak_bytes"] == d["peak_mem_bytes"] and 0 < d["live_peak_bytes"] <= d["reserved_peak_bytes"] and d["fits"] == (d["reserved_peak_bytes"] <= d["capacity_bytes"])'
# a plan whose only per-micro-batch allocations are its activations (ZeRO-1, fused gradient
# accumulation) gets its old blocks back: the pool is the live tensors
json_check "$TMP/fit.json" 'd["reserved_peak_bytes"] == d["live_peak_bytes"]'
# ZeRO-3 gathers and reduces block by block: the pool outgrows the live tensors, and expandable
# segments fragment less than the native allocator (same live tensors, smaller pool)
expect_rc 0 "$SP" sim "${BASE[@]}" --tp 8 --zero 3 --json
cp "$TMP/out" "$TMP/nat.json"
expect_rc 0 "$SP" sim "${BASE[@]}" --tp 8 --zero 3 --allocator expandable --json
cp "$TMP/out" "$TMP/exp.json"
if python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:3]); sys.exit(0 if a["live_peak_bytes"] == b["live_peak_bytes"] and b["live_peak_bytes"] < b["reserved_peak_bytes"] < a["reserved_peak_bytes"] else 1)' "$TMP/nat.json" "$TMP/exp.json"
then ok; else bad "expandable segments do not shrink the reserved pool"; fi
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
# 405B's weights alone overflow 8 GPUs: nothing on 8 GPUs fits, and the list says what lowers
# the peak (more GPUs first among those that fit) and that tune searches every combination
expect_out 'changes that lower the peak'
expect_out '^  --gpus [0-9]* --dp [0-9]*.* fits '

# --- what would fit: under the table of a plan that does not fit, the changes that lower its
# peak, those that fit first and fastest first. Each suggestion, run through sim as printed,
# must give the printed peak, fit as printed, lower the plan's peak and give the printed
# tokens/s; the README example without --sp, at 16k tokens, is saved by --sp.
NOFIT=(sim --model llama-3-70b --gpu h100-sxm --gpus 512 --tp 8 --pp 8 --zero 1 --recompute selective --mbs 1 --gbs 512 --seq 16384)
"$SP" "${NOFIT[@]}" --json >"$TMP/nofit.json" 2>/dev/null
PEAK0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_mem_bytes"]/2**30)' "$TMP/nofit.json")
expect_rc 3 "$SP" "${NOFIT[@]}"
cp "$TMP/out" "$TMP/nofit.txt"
expect_out '^changes that lower the peak'
expect_out '^  --sp  .* fits '
sed -n '/^changes that lower the peak/,$p' "$TMP/nofit.txt" | tail -n +2 >"$TMP/fixes.txt"
NFIX=0
while IFS= read -r line; do
	NFIX=$((NFIX + 1))
	flags=$(printf '%s\n' "$line" | sed 's/  *peak .*//')
	want_peak=$(printf '%s\n' "$line" | awk '{for (i = 1; i <= NF; i++) if ($i == "peak") print $(i + 1)}')
	want_tps=$(printf '%s\n' "$line" | awk '{print $(NF - 1)}')
	want_fit=$(case "$line" in *" fits "*) echo True ;; *) echo False ;; esac)
	# shellcheck disable=SC2086 # the flags are words
	"$SP" "${NOFIT[@]}" $flags --json >"$TMP/fix.json" 2>/dev/null
	if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["peak_mem_bytes"]/2**30; sys.exit(0 if str(d["fits"]) == sys.argv[4] and abs(p-float(sys.argv[2])) < 0.006 and p < float(sys.argv[5]) and abs(d["tokens_per_s_per_gpu"]-float(sys.argv[3])) < 0.06 else 1)' \
		"$TMP/fix.json" "$want_peak" "$want_tps" "$want_fit" "$PEAK0"
	then ok; else bad "suggested change '$flags' does not give peak $want_peak GiB (below $PEAK0), fits $want_fit, $want_tps tok/s/GPU"; fi
done <"$TMP/fixes.txt"
if [ "$NFIX" -ge 2 ]; then ok; else bad "expected at least --sp and --recompute full among the fixes, got $NFIX"; fi
grep ' fits ' "$TMP/fixes.txt" >"$TMP/fitting.txt"
if awk '{print $(NF - 1)}' "$TMP/fitting.txt" | sort -g -r -c 2>/dev/null; then ok; else bad "fitting fixes not fastest first: $(cat "$TMP/fixes.txt")"; fi
if awk '/ fits /{if (seen) exit 1; next} {seen=1}' "$TMP/fixes.txt"; then ok; else bad "a fix that fits after one that does not"; fi
# a plan already using SP and micro-batch 1 is not told to use them
expect_rc 3 "$SP" sim --model llama-3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 1 --sp --mbs 1 --gbs 64 --seq 8192
if grep -q '^  --sp \|^  --mbs 1 ' "$TMP/out"; then bad "suggested a setting the plan already has"; else ok; fi
# ZeRO-3 at dp 1 shards nothing: not suggested
expect_rc 3 "$SP" sim --model llama-3-70b --gpu h100-sxm --gpus 8 --tp 8 --seq 8192 --gbs 8
if grep -q '^  --zero ' "$TMP/out"; then bad "suggested a ZeRO stage at dp 1"; else ok; fi
# a plan that fits prints no suggestions; --json never does (its keys stay the contract)
expect_rc 0 "$SP" sim "${BASE[@]}" --tp 8
if grep -q 'lower the peak' "$TMP/out"; then bad "a fitting plan printed fixes"; else ok; fi
expect_rc 3 "$SP" "${NOFIT[@]}" --json
json_check "$TMP/out" '"fits" in d'

# --- bad input: exit 2, exactly one line on stderr naming the subject
expect_rc 2 "$SP" sim --model no-such-model --gpu h100-sxm --gpus 8
expect_err_line "model.*no-such-model"
expect_rc 2 "$SP" sim --model llama-3-8b --gpu no-such-gpu --gpus 8
expect_err_line "gpu.*no-such-gpu"
expect_rc 2 "$SP" sim --gpu h100-sxm --gpus 8
expect_err_line "model"
# Megatron-Core's recompute modules: a name it does not have, and one the model has nothing for
expect_rc 2 "$SP" sim --model llama-3-8b --gpu h100-sxm --gpus 8 --recompute selective --recompute-modules core_attn,foo
expect_err_line "recompute_modules: 'foo' is not one of core_attn,mla_up_proj"
expect_rc 2 "$SP" sim --model llama-3-8b --gpu h100-sxm --gpus 8 --recompute selective --recompute-modules mla_up_proj
expect_err_line "recompute_modules: mla_up_proj needs a model with multi-head latent attention"
# schedule rules (issue: v not dividing the layers, odd pp for dualpipe, too few micro-batches)
for e in "interleaved --vpp 3:pp\*vpp \(12\) does not divide num_hidden_layers \(80\)" \
	 "dualpipe --pp 3 --gpus 24:dualpipe needs an even pp \(3\)" \
	 "zb-v --gbs 2:zb-v needs at least pp \(4\) micro-batches"; do
	args=${e%%:*}; pat=${e#*:}
	expect_rc 2 "$SP" sim --model llama-3-70b --gpu h100-sxm --gpus 32 --tp 8 --pp 4 --mbs 1 --gbs 32 --seq 4096 --schedule $args --engine event
	expect_err_line "$pat"
done
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

# --- the event engine (sim --engine event): JSON contract and independent expectations
# a small Llama-shaped model keeps p2p times tiny and every plan in memory
cat >"$TMP/tiny.json" <<'EOF'
{"model_type": "llama", "hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 4,
 "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 32000, "tie_word_embeddings": false}
EOF
TINY=(--model "$TMP/tiny.json" --gpu h100-sxm --seq 1024)
expect_rc 0 "$SP" sim "${BASE[@]}" --pp 4 --tp 2 --gbs 16 --engine event --json
cp "$TMP/out" "$TMP/ev.json"
json_check "$TMP/ev.json" 'all(k in d for k in ("step_time_s","tokens_per_s_per_gpu","mfu","peak_mem_bytes","fits","ranks","exposed_comm_s"))'
json_check "$TMP/ev.json" 'len(d["ranks"]) == 4 and all(all(k in r for k in ("bubble_fraction","bubble_rate","peak_mem_bytes")) for r in d["ranks"])'
json_check "$TMP/ev.json" 'sorted(d["exposed_comm_s"]) == ["cp","dp","ep","pp","tp"] and min(d["exposed_comm_s"].values()) >= 0'
json_check "$TMP/ev.json" 'd["peak_mem_bytes"] == max(r["peak_mem_bytes"] for r in d["ranks"]) and d["fits"] == (d["peak_mem_bytes"] <= d["capacity_bytes"])'
# the parts of the step add up to the step
json_check "$TMP/ev.json" 'abs(sum(d["step_breakdown_s"].values()) - d["step_time_s"]) <= 1e-9 * d["step_time_s"]'
# tokens/s per GPU = gbs * seq / step / gpus
json_check "$TMP/ev.json" 'abs(d["tokens_per_s_per_gpu"] - 16*4096/d["step_time_s"]/8) <= 1e-6*d["tokens_per_s_per_gpu"]'
# bubble rate (bubble/span) and fraction (bubble/ideal) of one rank describe the same idle time:
# rate = fraction / (1 + fraction)
json_check "$TMP/ev.json" 'all(abs(r["bubble_rate"] - r["bubble_fraction"]/(1+r["bubble_fraction"])) < 1e-9 for r in d["ranks"])'
expect_rc 0 "$SP" sim "${BASE[@]}" --pp 4 --tp 2 --gbs 16 --engine event
expect_out '^step time '
expect_out 'bubble \(worst rank\) +fraction [0-9.]+ \(bubble/ideal, Megatron\) +rate'
expect_out 'exposed communication \(s\) +tp [0-9.]+ +cp [0-9.]+ +ep [0-9.]+ +pp [0-9.]+ +dp'

# pp 1, dp 1 (tp 8 on 8 GPUs): one rank runs its micro-batches back to back, nothing to reduce,
# so the event step is the analytical compute + in-op (exposed TP) communication + optimizer +
# fixed overhead of the same estimate; only the summation order differs (tolerance 1e-9).
expect_rc 0 "$SP" sim "${BASE[@]}" --tp 8 --gbs 8 --json
cp "$TMP/out" "$TMP/an1.json"
expect_rc 0 "$SP" sim "${BASE[@]}" --tp 8 --gbs 8 --engine event --json
cp "$TMP/out" "$TMP/ev1.json"
python3 - "$TMP/an1.json" "$TMP/ev1.json" <<'PY' && ok || bad "pp1 event step != analytical compute + exposed comm + optimizer + overhead"
import json, sys
a = json.load(open(sys.argv[1])); e = json.load(open(sys.argv[2]))
t = a["rank_kinds"][0]["time"]
want = t["compute_s"] + t["tp_comm_s"] + t["cp_comm_s"] + t["ep_comm_s"] + t["optimizer_s"] + t["overhead_s"]
assert abs(e["step_time_s"] - want) <= 1e-9 * want, (e["step_time_s"], want)
PY

# 1F1B with uniform stage times (every stage F 100 ms, fused backward 200 ms, from a trace):
# bubble / ideal = (p-1)/m [MEG §2.2.1]; p = 4, m = 8 -> 0.375 on the first rank, plus what
# the (sub-millisecond) p2p sends add, which the engine reports as exposed pp time
{
	printf '{"traceEvents": [\n'
	for st in 0 1 2 3; do
		printf '{"name":"F","ph":"X","ts":0,"dur":100000,"pid":%d,"tid":0,"args":{"mb":0,"chunk":0,"stage":%d,"layers":1}},\n' $st $st
		printf '{"name":"BW","ph":"X","ts":0,"dur":200000,"pid":%d,"tid":0,"args":{"mb":0,"chunk":0,"stage":%d,"layers":1}},\n' $st $st
	done
	printf '{"name":"process_name","ph":"M","pid":0,"args":{"name":"rank 0"}}]}\n'
} >"$TMP/uniform.json"
expect_rc 0 "$SP" sim "${TINY[@]}" --gpus 4 --pp 4 --gbs 8 --engine event --op-times "$TMP/uniform.json" --json
cp "$TMP/out" "$TMP/uni.json"
json_check "$TMP/uni.json" 'abs(d["ranks"][0]["bubble_fraction"] - 3/8) <= d["exposed_comm_s"]["pp"]/(8*0.300) + 1e-9'
json_check "$TMP/uni.json" 'd["exposed_comm_s"]["pp"] < 0.01 * d["pipeline_span_s"] and d["op_times"]["stages_measured"] == 4'
json_check "$TMP/uni.json" 'all(s["source"].startswith("trace") and abs(s["t_f_s"]-0.100) < 1e-12 and abs(s["t_b_s"]+s["t_w_s"]-0.200) < 1e-12 for s in d["stages"])'

# a hand-written trace, two stages of unequal speed (stage 0: F 10 ms, B+W 20 ms; stage 1: F 30,
# B+W 60), 1F1B over 3 micro-batches. By hand (rank 0: F0 F1 B0 F2 B1 B2; rank 1: F0 B0 F1 B1
# F2 B2): rank 1 finishes B2 at 280 ms, rank 0 runs B2 280-300 ms: span 300 ms. Each of the two
# crossings on that critical path adds one p2p time, which the engine reports as exposed pp.
cat >"$TMP/hand.json" <<'EOF'
{"traceEvents": [
 {"name": "F", "ph": "X", "ts": 0, "dur": 10000, "pid": 0, "tid": 0, "args": {"mb": 0, "chunk": 0, "stage": 0, "layers": 2}},
 {"name": "F", "ph": "X", "ts": 20000, "dur": 10000, "pid": 0, "tid": 0, "args": {"mb": 1, "chunk": 0, "stage": 0, "layers": 2}},
 {"name": "BW", "ph": "X", "ts": 40000, "dur": 20000, "pid": 0, "tid": 0, "args": {"mb": 0, "chunk": 0, "stage": 0, "layers": 2}},
 {"name": "F", "ph": "X", "ts": 10000, "dur": 30000, "pid": 1, "tid": 0, "args": {"mb": 0, "chunk": 0, "stage": 1, "layers": 2}},
 {"name": "BW", "ph": "X", "ts": 40000, "dur": 60000, "pid": 1, "tid": 0, "args": {"mb": 0, "chunk": 0, "stage": 1, "layers": 2}},
 {"name": "allreduce", "ph": "X", "ts": 40000, "dur": 123, "pid": 1, "tid": 3, "args": {}},
 {"name": "optimizer", "ph": "X", "ts": 300000, "dur": 5000, "pid": 0, "tid": 0, "args": {"stage": 0}},
 {"name": "optimizer", "ph": "X", "ts": 300000, "dur": 5000, "pid": 1, "tid": 0, "args": {"stage": 1}},
 {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "rank 0"}}
]}
EOF
expect_rc 0 "$SP" sim "${TINY[@]}" --gpus 2 --pp 2 --gbs 3 --engine event --op-times "$TMP/hand.json" --json
cp "$TMP/out" "$TMP/hand_out.json"
json_check "$TMP/hand_out.json" 'abs(d["pipeline_span_s"] - d["exposed_comm_s"]["pp"] - 0.300) <= 1e-9'
json_check "$TMP/hand_out.json" 'abs(d["step_breakdown_s"]["optimizer"] - 0.005) <= 1e-12 and d["op_times"]["ignored"] == 1'
expect_rc 0 "$SP" sim "${TINY[@]}" --gpus 2 --pp 2 --gbs 3 --op-times "$TMP/hand.json" --trace "$TMP/sim_trace.json"
expect_out 'op times: 2 of 2 stages from'
expect_out 'trace: F,BW,opt'
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); x=[e for e in d["traceEvents"] if e["ph"]=="X"]; assert len(x) >= 12' "$TMP/sim_trace.json" && ok || bad "sim --trace output"

# the trace's args.layers differing from the plan's split is said, not hidden
sed 's/"num_hidden_layers": 4/"num_hidden_layers": 8/' "$TMP/tiny.json" >"$TMP/tiny8.json"
expect_rc 0 "$SP" sim --model "$TMP/tiny8.json" --gpu h100-sxm --seq 1024 --gpus 4 --pp 4 --gbs 8 --op-times "$TMP/uniform.json"
expect_out 'note: the trace ran 1 layers on stage 0, this plan puts 2 there'

# peak memory two ways: the estimate's closed-form micro-batches in flight per schedule
# (reference/model.md §2.3) and the engine's activation curve walked op by op must agree
for s in 1f1b "interleaved --vpp 2" zb-h1 zb-h2 zb-v dualpipe dualpipev; do
	expect_rc 0 "$SP" sim "${BASE[@]}" --gpus 32 --tp 2 --pp 4 --gbs 64 --schedule $s --json
	cp "$TMP/out" "$TMP/peak_a.json"
	expect_rc 0 "$SP" sim "${BASE[@]}" --gpus 32 --tp 2 --pp 4 --gbs 64 --schedule $s --json --engine event
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); e=json.load(open(sys.argv[2])); sys.exit(0 if abs(a["peak_mem_bytes"]-e["peak_mem_bytes"]) <= 1e-6*a["peak_mem_bytes"] else 1)' \
		"$TMP/peak_a.json" "$TMP/out" && ok || bad "$s: event peak memory differs from the closed form"
done

# bad traces and engine options: exit 2, one line naming the problem
# bad_trace NAME JSON PATTERN: an --op-times file with this content exits 2 with one such line
bad_trace() {
	printf '%s' "$2" >"$TMP/$1.json"
	expect_rc 2 "$SP" sim "${TINY[@]}" --gpus 2 --pp 2 --gbs 3 --engine event --op-times "$TMP/$1.json"
	expect_err_line "$3"
}
bad_trace broken '{"traceEvents": [{"name": "F", "ph": "X"' 'op times: .*malformed JSON'
bad_trace nostage '{"traceEvents": [{"name": "F", "ph": "X", "ts": 0, "dur": 5, "pid": 0, "tid": 0, "args": {"mb": 0}}]}' \
	"event 1 \(F\): missing field 'stage'"
bad_trace nodur '{"traceEvents": [{"name": "B", "ph": "X", "ts": 0, "pid": 0, "tid": 0, "args": {"mb": 0, "stage": 0}}]}' \
	"missing field 'dur'"
bad_trace farstage '{"traceEvents": [{"name": "F", "ph": "X", "ts": 0, "dur": 5, "pid": 0, "tid": 0, "args": {"mb": 0, "stage": 7}}]}' \
	'stage 7 but the plan has 2 stages'
bad_trace noarr '{"events": []}' "missing array 'traceEvents'"
expect_rc 2 "$SP" sim "${TINY[@]}" --gpus 2 --pp 2 --gbs 3 --engine event --op-times "$TMP/no-such-trace.json"
expect_err_line 'no-such-trace.json'
expect_rc 2 "$SP" sim "${BASE[@]}" --engine warp
expect_err_line "--engine: 'warp' is not analytical or event"
expect_rc 2 "$SP" sim "${BASE[@]}" --engine analytical --op-times "$TMP/hand.json"
expect_err_line '--op-times needs --engine event'

# 64 stages x 512 micro-batches stays fast (the engine runs three times); 405B does not fit on
# 512 GPUs this way, which is a result (exit 3), not an error
t0=$(date +%s%N)
expect_rc 3 "$SP" sim --model llama-3.1-405b --gpu h100-sxm --gpus 512 --tp 8 --pp 64 --gbs 512 --engine event --json
t1=$(date +%s%N)
json_check "$TMP/out" 'len(d["ranks"]) == 64 and d["microbatches"] == 512'
[ $(( (t1 - t0) / 1000000 )) -lt 5000 ] && ok || bad "pp64 m512 event sim took $(( (t1 - t0) / 1000000 )) ms"

summary
