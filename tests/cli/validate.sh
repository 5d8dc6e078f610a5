#!/usr/bin/env bash
# `scaleplan validate`: help, bad-input contract (exit 2, one line on stderr), and the --json
# summary — its keys, and its scores recomputed here from its own per-row results with the
# definitions in sim/validate.h (MAPE, median APE, fit accuracy, Spearman, top-1 regret), on a
# small file in the shared/validation/FORMAT.md format and, when the shared folder is next to
# the repository, on the published calibration file.
. "$(dirname "$0")/lib.sh"

json_check() {
	if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null
	then ok; else bad "json check '$2' failed on: $(head -c 300 "$1")"; fi
}

KEYS='("rows","simulated","throughput_mape","throughput_median_ape","memory_mape","fit_accuracy","groups","rank_spearman","top1_regret","top1_regret_median","results")'

# --- help and bad input
expect_rc 0 "$SP" validate --help
expect_out 'usage: scaleplan validate'
expect_rc 2 "$SP" validate
expect_err_line 'missing FILE'
expect_rc 2 "$SP" validate "$TMP/no-such-file.tsv"
expect_err_line 'no-such-file.tsv'
expect_rc 2 "$SP" validate --frobnicate
expect_err_line 'frobnicate'

# --- a small file in FORMAT.md's format: header line with the columns in file order
tsv_row() { local IFS=$'\t'; printf '%s\n' "$*"; }
HEADER=(id source framework model layers hidden ffn_hidden heads kv_heads head_dim vocab tied_embeddings norm
	mlp moe_experts moe_topk moe_ffn_hidden moe_shared_experts moe_dense_layers seq_len
	global_batch_seqs micro_batch gpu gpus_per_node num_gpus tp pp dp cp ep vpp sp zero recompute
	pp_schedule precision status tokens_per_s_per_gpu step_time_s mem_gib mem_kind
	reported_mfu_pct flop_convention derived confidence notes)
# an 8B Llama-style model on one 8-GPU node, one group (same model, gpu, gpus, seq, batch)
ARCH=("" llama-8b-test 32 4096 14336 32 8 128 128256 0 rmsnorm swiglu 0 0 0 0 0 4096 64)
{
	echo "# test rows, format: shared/validation/FORMAT.md"
	tsv_row "${HEADER[@]}"
	tsv_row T1 test "${ARCH[@]}" 1 h100-sxm 8 8 1 1 8 1 1 1 1 1 none none bf16 ok 9000 "" 60 reserved "" "" "" high "test row"
	tsv_row T2 test "${ARCH[@]}" 1 h100-sxm 8 8 2 1 4 1 1 1 1 1 none none bf16 ok 8000 "" 50 reserved "" "" "" high "test row"
	tsv_row T3 test "${ARCH[@]}" "" h100-sxm 8 8 4 1 2 1 1 1 1 1 none none bf16 ok 7000 "" "" "" "" "" "" high "micro_batch unknown"
	tsv_row T4 test "${ARCH[@]}" 8 h100-sxm 8 8 1 1 8 1 1 1 0 0 none none bf16 oom "" "" "" "" "" "" "" medium "test row"
} >"$TMP/small.tsv"
expect_rc 0 "$SP" validate "$TMP/small.tsv"
expect_out 'MAPE'
expect_rc 0 "$SP" validate "$TMP/small.tsv" --json
cp "$TMP/out" "$TMP/small.json"
json_check "$TMP/small.json" "all(k in d for k in $KEYS)"
json_check "$TMP/small.json" 'd["rows"] == 4 and len(d["results"]) == 4 and d["simulated"] == 4 and d["groups"] == 1'
json_check "$TMP/small.json" '[r["id"] for r in d["results"]] == ["T1","T2","T3","T4"]'
# the unknown micro_batch is completed and the row says how; a row that states it says nothing of it
json_check "$TMP/small.json" '"mbs " in d["results"][2]["assumed"] and "fastest completion" in d["results"][2]["assumed"] and "mbs " not in d["results"][0].get("assumed", "")'
# the worst rank's peak is at least the compared memory; the parts (model states, activations,
# logits, buffers) are non-negative and leave room for the allocator overhead on top
json_check "$TMP/small.json" 'all(r["pred_peak_gib"] >= r["pred_mem_gib"] - 1e-9 for r in d["results"])'
json_check "$TMP/small.json" 'all(min(r["pred_mem_parts_gib"].values()) >= 0 and sum(r["pred_mem_parts_gib"].values()) < r["pred_mem_gib"] for r in d["results"])'

# Scores recomputed from the per-row results with their definitions (validate.h): APE over ok
# rows with measured tokens/s, mean and median; memory APE over ok rows with memory; fit accuracy
# over ok/oom rows (predicted fits == ran); Spearman of predicted vs measured tokens/s (average
# ranks) per group of >= 3 ok rows; top-1 regret = 1 - measured(best predicted)/best measured.
cat >"$TMP/scores.py" <<'EOF'
import json, sys, statistics
d = json.load(open(sys.argv[1]))
res = [r for r in d["results"] if r["simulated"]]
def close(a, b): return abs(a - b) <= 1e-4 * max(1.0, abs(b))
ape = [abs(r["pred_tokens_per_s_per_gpu"] - r["meas_tokens_per_s_per_gpu"]) / r["meas_tokens_per_s_per_gpu"]
       for r in res if r["status"] == "ok" and "meas_tokens_per_s_per_gpu" in r]
mem = [abs(r["pred_mem_gib"] - r["meas_mem_gib"]) / r["meas_mem_gib"]
       for r in res if r["status"] == "ok" and "meas_mem_gib" in r]
fit = [r["pred_fits"] == (r["status"] == "ok") for r in res if r["status"] in ("ok", "oom")]
def ranks(v):
    return [sum(x < y for x in v) + (sum(x == y for x in v) + 1) / 2 for y in v]
def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx); syy = sum((b - my) ** 2 for b in ry)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else 0.0
ok = [r for r in res if r["status"] == "ok" and "meas_tokens_per_s_per_gpu" in r]
checks = {
    "throughput_mape": close(d["throughput_mape"], sum(ape) / len(ape)),
    "throughput_median_ape": close(d["throughput_median_ape"], statistics.median(ape)),
    "memory_mape": close(d["memory_mape"], sum(mem) / len(mem)),
    "fit_accuracy": close(d["fit_accuracy"], sum(fit) / len(fit)),
}
if len(sys.argv) > 2:  # one group: every row of the file
    x = [r["pred_tokens_per_s_per_gpu"] for r in ok]; y = [r["meas_tokens_per_s_per_gpu"] for r in ok]
    checks["rank_spearman"] = close(d["rank_spearman"], spearman(x, y))
    cand = [r for r in res if r["status"] in ("ok", "oom") and r["pred_fits"]]
    pick = max(cand, key=lambda r: r["pred_tokens_per_s_per_gpu"])
    regret = 1 - pick["meas_tokens_per_s_per_gpu"] / max(y) if pick["status"] == "ok" else 1
    checks["top1_regret"] = close(d["top1_regret"], regret)
bad = [k for k, v in checks.items() if not v]
print(" ".join(bad))
sys.exit(1 if bad else 0)
EOF
if out=$(python3 "$TMP/scores.py" "$TMP/small.json" onegroup 2>&1); then ok; else bad "small.tsv scores disagree with their definitions: $out"; fi

# --by COLUMN: one group per cell of that column, first-seen order, each scored from its own
# rows' results (mean signed error and MAPE of tokens/s, fit accuracy), recomputed here
expect_rc 0 "$SP" validate "$TMP/small.tsv" --by tp --json
cp "$TMP/out" "$TMP/by.json"
if python3 - "$TMP/by.json" <<'EOF3'
import json, sys
d = json.load(open(sys.argv[1]))
tp = {"T1": "1", "T2": "2", "T3": "4", "T4": "1"}
g = d["by"]["groups"]
assert d["by"]["column"] == "tp" and [x["key"] for x in g] == ["1", "2", "4"], g
for x in g:
    rs = [r for r in d["results"] if tp[r["id"]] == x["key"]]
    sc = [(r["pred_tokens_per_s_per_gpu"] - r["meas_tokens_per_s_per_gpu"]) / r["meas_tokens_per_s_per_gpu"]
          for r in rs if r["status"] == "ok" and "meas_tokens_per_s_per_gpu" in r]
    fit = [r["pred_fits"] == (r["status"] == "ok") for r in rs if r["status"] in ("ok", "oom")]
    assert x["rows"] == len(rs) and x["throughput_rows"] == len(sc) and x["fit_rows"] == len(fit), x
    assert abs(x["mean_signed_err"] - sum(sc) / len(sc)) < 1e-4 and abs(x["throughput_mape"] - sum(map(abs, sc)) / len(sc)) < 1e-4, x
    assert abs(x["fit_accuracy"] - sum(fit) / len(fit)) < 1e-6, x
    srt = sorted(sc)
    med = srt[len(srt) // 2] if len(srt) % 2 else (srt[len(srt) // 2 - 1] + srt[len(srt) // 2]) / 2
    assert abs(x["median_signed_err"] - med) < 1e-4, x
EOF3
then ok; else bad "validate --by tp groups disagree with their rows"; fi
expect_rc 0 "$SP" validate "$TMP/small.tsv" --by tp
expect_out 'by tp:'
expect_out 'median err'
expect_rc 2 "$SP" validate "$TMP/small.tsv" --by nosuchcolumn
expect_err_line "no column 'nosuchcolumn'"
# --by COL,COL: one group per pair of cells, keyed "cell,cell" in first-seen order
expect_rc 0 "$SP" validate "$TMP/small.tsv" --by tp,status --json
json_check "$TMP/out" '[x["key"] for x in d["by"]["groups"]] == ["1,ok", "2,ok", "4,ok", "1,oom"] and [x["rows"] for x in d["by"]["groups"]] == [1, 1, 1, 1] and d["by"]["column"] == "tp,status"'
expect_rc 0 "$SP" validate "$TMP/small.tsv" --by tp,micro_batch
expect_out '^4,\(unknown\) '
expect_rc 2 "$SP" validate "$TMP/small.tsv" --by tp,nosuchcolumn
expect_err_line "no column 'nosuchcolumn'"
expect_rc 2 "$SP" validate "$TMP/small.tsv" --by tp,
expect_err_line "empty column name"
expect_rc 2 "$SP" validate "$TMP/small.tsv" --by tp,pp,dp,cp,ep
expect_err_line "at most 4 columns"

# --- a file that is not in the format: missing header column, no header at all
{ tsv_row id source; tsv_row X1 test; } >"$TMP/nocols.tsv"
expect_rc 2 "$SP" validate "$TMP/nocols.tsv"
expect_err_line "header lacks column 'model'"
# a required column (FORMAT.md: never empty) that the header lacks, past the first one
cut -f 1-3,5- "$TMP/small.tsv" >"$TMP/nomodel.tsv"
expect_rc 2 "$SP" validate "$TMP/nomodel.tsv"
expect_err_line "header lacks column 'model'"
# an optional column the header lacks is unknown in every row, said once on stderr: without
# notes and mem_kind, small.tsv predicts the same (its notes say nothing the reader uses) and
# its memory is still scored on the same rows
cut -f 1-40,42-45 "$TMP/small.tsv" >"$TMP/nonotes.tsv"
expect_rc 0 "$SP" validate "$TMP/nonotes.tsv" --json
if [ "$(grep -c "no column '\(notes\|mem_kind\)'; read as unknown" "$TMP/err")" = 2 ]; then ok; else bad "absent optional columns not named on stderr: $(head -c 300 "$TMP/err")"; fi
cp "$TMP/out" "$TMP/nonotes.json"
if python3 - "$TMP/small.json" "$TMP/nonotes.json" <<'EOF2'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
key = lambda d: [(r["id"], r.get("pred_tokens_per_s_per_gpu"), r.get("pred_fits")) for r in d["results"]]
sys.exit(0 if key(a) == key(b) and a["memory_rows"] == b["memory_rows"] else 1)
EOF2
then ok; else bad "a file without the notes column predicts differently from the same rows with it"; fi

# --- row-level inference: cells a row and its framework leave unknown take the fastest
# completion that fits (a published run that ran was a tuned run); a row that says it was
# measured before a framework performance fix is predicted but not scored
ARCH70=("" llama-70b-test 80 8192 28672 64 8 128 128256 0 rmsnorm swiglu 0 0 0 0 0 4096 64)
{
	tsv_row "${HEADER[@]}"
	tsv_row U1 test "${ARCH70[@]}" 1 h100-sxm 8 64 8 1 8 1 1 1 1 1 "" none bf16 ok 500 "" "" "" "" "" "" high "recompute not stated"
	tsv_row U2 test "${ARCH[@]}" 1 h100-sxm 8 8 1 4 2 1 1 1 1 1 none 1f1b bf16 ok 7000 "" "" "" "" "" "" medium "measured BEFORE the framework's pipeline-parallel performance fix"
	tsv_row U3 test "${ARCH[@]}" 1 h100-sxm 8 8 2 1 4 1 1 1 1 1 none none bf16 ok 7000 "" "" "" "" "" "" high "test row"
	tsv_row U4 test "${ARCH[@]}" 2 h100-sxm 8 8 2 1 4 1 1 1 1 1 "" none bf16 ok 7000 "" "" "" "" "" "" high "recompute not stated"
} >"$TMP/infer.tsv"
expect_rc 0 "$SP" validate "$TMP/infer.tsv" --json
cp "$TMP/out" "$TMP/infer.json"
# the same plans through `sim` (the model's own 80-layer 70B and 32-layer 8B, same shapes, the
# row's unstated overlaps on): of the recompute modes whose peak fits, the fastest is the one
# validate must have chosen, and its prediction is that mode's. A row without a framework
# also leaves the allocator and the gradient dtype open (no profile documents them), so the
# fastest is taken over those too
fastest_fitting() { # sim arguments...; prints "mode tokens/s" of the fastest fitting mode
	for rc in none selective full; do for al in native expandable; do for g in 0 1; do
		"$SP" "$@" --recompute $rc --allocator $al --fp32-grads $g --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], d["tokens_per_s_per_gpu"], int(d["fits"]))' $rc
	done; done; done | awk '$3 == 1 && $2 > best { best = $2; mode = $1 } END { print mode, best }'
}
OVL=(--overlap-grad-reduce 1 --overlap-param-gather 1 --overlap-tp-comm 1 --overlap-tp-bwd 1 --overlap-p2p 1)
for row in "0 llama-3-70b 64 8 8 1 64" "3 llama-3-8b 8 2 4 2 64"; do
	set -- $row
	read -r MODE TPS < <(fastest_fitting sim --model $2 --gpu h100-sxm --gpus $3 --tp $4 --dp $5 --zero 1 --mbs $6 --gbs $7 --seq 4096 --sp "${OVL[@]}")
	if [ -n "$MODE" ]; then
		json_check "$TMP/infer.json" "'recompute $MODE' in d['results'][$1]['assumed'] and '(fastest completion that fits)' in d['results'][$1]['assumed'] and abs(d['results'][$1]['pred_tokens_per_s_per_gpu'] / $TPS - 1) < 1e-5"
	else
		json_check "$TMP/infer.json" "'no completion fits' in d['results'][$1]['assumed']"
	fi
done
json_check "$TMP/infer.json" 'not d["results"][1]["simulated"] and "performance fix" in d["results"][1]["reason"] and d["results"][1]["pred_tokens_per_s_per_gpu"] > 0'
json_check "$TMP/infer.json" 'd["excluded"] == 1 and d["simulated"] == 3 and d["throughput_rows"] == 3'

# a torchtitan row with empty micro_batch / vpp takes torchtitan's documented rules (the local
# batch, gbs/dp = 32, in pp = 4 micro-batches of 8; 2 stages per rank when interleaved) and its
# framework profile's defaults: the prediction equals `sim --framework torchtitan` of that plan.
# A row without a framework completes its unknown vpp with the fastest that fits.
{
	tsv_row "${HEADER[@]}"
	tsv_row TT1 "test" torchtitan "${ARCH70[@]:1:17}" 64 "" h100-sxm 8 32 4 4 2 1 1 "" 1 1 full interleaved bf16 ok 500 "" "" "" "" "" "" high "test row"
	tsv_row TT2 "other test" "${ARCH70[@]::18}" 64 1 h100-sxm 8 32 4 4 2 1 1 "" 1 1 full interleaved bf16 ok 500 "" "" "" "" "" "" high "interleaved, chunks not stated"
} >"$TMP/titan.tsv"
expect_rc 0 "$SP" validate "$TMP/titan.tsv" --json
cp "$TMP/out" "$TMP/titan.json"
json_check "$TMP/titan.json" '"micro_batch = local batch / pp (torchtitan)" in d["results"][0]["assumed"] and "vpp 2 (torchtitan" in d["results"][0]["assumed"] and "allocator expandable (torchtitan)" in d["results"][0]["assumed"]'
json_check "$TMP/titan.json" 'd["results"][1]["simulated"] and "vpp " in d["results"][1]["assumed"] and "fastest completion" in d["results"][1]["assumed"]'
"$SP" sim --model llama-3-70b --gpu h100-sxm --gpus 32 --tp 4 --pp 4 --dp 2 --vpp 2 --schedule interleaved --zero 1 --sp --recompute full --mbs 8 --gbs 64 --seq 4096 --framework torchtitan --json >"$TMP/out" 2>/dev/null
SIMTPS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens_per_s_per_gpu"])' "$TMP/out")
json_check "$TMP/titan.json" "abs(d['results'][0]['pred_tokens_per_s_per_gpu'] / $SIMTPS - 1) < 1e-6"

# a row's notes switch an overlap on only when they name the technique in prose: a locator's
# file name (benchmarks/asyncTP_...md) is not a statement that the run used async TP. AT1 says
# AsyncTP and is priced with TP overlap; AT2, vanilla TP from the same page, takes torchtitan's
# default (off): each equals `sim --framework torchtitan` with that switch.
PAGE="locator: pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md"
# one plan (8B, tp 8 x dp 2 with SP, micro-batch 4) as a row of framework $2 at ZeRO $3 with
# notes $4, and as sim prices it with that framework and the flags after $2
at_row() { tsv_row "$1" "test" "$2" "${ARCH[@]:1:18}" 4 h100-sxm 8 16 8 1 2 1 1 1 1 "$3" "${5-none}" none bf16 ok 5000 "" "" "" "" "" "" high "$4"; }
at_sim() {
	"$SP" sim --model llama-3-8b --gpu h100-sxm --gpus 16 --tp 8 --dp 2 --sp --zero "$1" --recompute none --mbs 4 --gbs 64 --seq 4096 \
		--framework "$2" "${@:3}" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s_per_gpu"])'
}
{
	tsv_row "${HEADER[@]}"
	at_row AT1 torchtitan 3 "Techniques: FSDP + AsyncTP | $PAGE"
	at_row AT2 torchtitan 3 "Techniques: FSDP + vanilla TP | $PAGE"
} >"$TMP/async.tsv"
expect_rc 0 "$SP" validate "$TMP/async.tsv" --json
cp "$TMP/out" "$TMP/async.json"
A1=$(at_sim 3 torchtitan --overlap-tp-comm 1); A0=$(at_sim 3 torchtitan --overlap-tp-comm 0)
json_check "$TMP/async.json" "abs(d['results'][0]['pred_tokens_per_s_per_gpu'] / $A1 - 1) < 1e-6 and abs(d['results'][1]['pred_tokens_per_s_per_gpu'] / $A0 - 1) < 1e-6 and $A1 != $A0"
# a framework's own key names the switch too, with its value: torchtitan's
# enable_async_tensor_parallel = true is AsyncTP (AT3); NeMo's tp_comm_overlap=False turns off
# what NeMo defaults on (AT5, priced as `sim --framework nemo --overlap-tp-comm 0`, and AT6
# says it in prose, "no TP comm overlap"); a row that only reports another run's async-TP
# figure ("Async TP gives 652.4") states nothing about its own (AT4); "without torch.compile"
# is an eager run (AT8), priced as AT2
{
	tsv_row "${HEADER[@]}"
	at_row AT3 torchtitan 3 "config: enable_async_tensor_parallel = true | $PAGE"
	at_row AT4 torchtitan 3 "vanilla TP; Async TP gives 652.4 | $PAGE"
	at_row AT5 nemo 1 "recipe: tp_comm_overlap=False"
	at_row AT6 nemo 1 "no TP comm overlap"
	at_row AT7 nemo 1 "recipe defaults"
	at_row AT8 torchtitan 3 "vanilla TP, without torch.compile | $PAGE"
} >"$TMP/async2.tsv"
expect_rc 0 "$SP" validate "$TMP/async2.tsv" --json
cp "$TMP/out" "$TMP/async2.json"
NE=(--overlap-grad-reduce 1 --overlap-param-gather 1)
N0=$(at_sim 1 nemo --overlap-tp-comm 0 "${NE[@]}"); N1=$(at_sim 1 nemo --overlap-tp-comm 1 "${NE[@]}")
json_check "$TMP/async2.json" "[abs(r['pred_tokens_per_s_per_gpu'] / x - 1) < 1e-6 for r, x in zip(d['results'], [$A1, $A0, $N0, $N0, $N1, $A0])] == [True] * 6 and $N0 != $N1"

# Megatron's recompute settings read from the notes by their flag or config names: a selective
# row whose notes list Megatron-Core's recompute_modules (RM1) is priced as `sim
# --recompute-modules` with that list, against the default core attention (RM2); a row that
# leaves recompute empty but lists the modules (RM3, the flag's spelling) ran selective with
# them. A full row with recompute_num_layers 4 (RM4) recomputes the first 4 layers of its stage
# (the block method); with the uniform method named (RM5) every layer
{
	tsv_row "${HEADER[@]}"
	at_row RM1 megatron-core 1 "recompute_modules: [core_attn, mlp]" selective
	at_row RM2 megatron-core 1 "recipe defaults" selective
	at_row RM3 megatron-core 1 "--recompute-modules core_attn mlp" ""
	at_row RM4 megatron-core 1 "recompute_method block, recompute_num_layers 4" full
	at_row RM5 megatron-core 1 "recompute_method uniform, recompute_num_layers 4" full
} >"$TMP/rcmod.tsv"
expect_rc 0 "$SP" validate "$TMP/rcmod.tsv" --json
cp "$TMP/out" "$TMP/rcmod.json"
R1=$(at_sim 1 megatron-core --recompute selective --recompute-modules core_attn,mlp)
R2=$(at_sim 1 megatron-core --recompute selective)
R4=$(at_sim 1 megatron-core --recompute full --recompute-layers 4)
R5=$(at_sim 1 megatron-core --recompute full)
json_check "$TMP/rcmod.json" "[abs(r['pred_tokens_per_s_per_gpu'] / x - 1) < 1e-6 for r, x in zip(d['results'], [$R1, $R2, $R1, $R4, $R5])] == [True] * 5 and $R1 != $R2 and $R4 != $R5"
json_check "$TMP/rcmod.json" "'modules core_attn,mlp (notes)' in d['results'][2]['assumed'] and 'recompute_layers 4 (notes: block method)' in d['results'][3]['assumed']"

# torchtitan has no Megatron-style core-attention recompute: its selective checkpointing is per
# layer or per op (the profile offers none, full and op), so a torchtitan row that says
# selective, its notes silent on which, ran per-op checkpointing (AT9, priced as
# `sim --recompute op`); a row that leaves recompute empty completes among none, full and op,
# never Megatron's selective (AT10)
{
	tsv_row "${HEADER[@]}"
	at_row AT9 torchtitan 3 "vanilla TP | $PAGE" selective
	at_row AT10 torchtitan 3 "vanilla TP | $PAGE" ""
} >"$TMP/titan_rc.tsv"
expect_rc 0 "$SP" validate "$TMP/titan_rc.tsv" --json
cp "$TMP/out" "$TMP/titan_rc.json"
AOP=$(at_sim 3 torchtitan --recompute op)
json_check "$TMP/titan_rc.json" "abs(d['results'][0]['pred_tokens_per_s_per_gpu'] / $AOP - 1) < 1e-6 and 'recompute op (torchtitan' in d['results'][0]['assumed'] and any(('recompute ' + m + ' (fastest') in d['results'][1]['assumed'] or ('recompute ' + m + ',') in d['results'][1]['assumed'] for m in ('none', 'full', 'op')) and 'recompute selective' not in d['results'][1]['assumed']"

# an override counts as stated before the framework's defaults, so the defaults that depend on
# it follow it: --set compile=1 on AT2 prices torchtitan's compiled block and loss, as
# `sim --framework torchtitan --compile 1` does
expect_rc 0 "$SP" validate "$TMP/async.tsv" --row AT2 --set compile=1 --json
cp "$TMP/out" "$TMP/async_c.json"
AC=$(at_sim 3 torchtitan --compile 1)
json_check "$TMP/async_c.json" "abs(d['results'][0]['pred_tokens_per_s_per_gpu'] / $AC - 1) < 1e-6 and $AC != $A0"

# a run that is not whole NVLink domains (128 GB200s in 72-GPU NVL72 racks) is simulated on an
# equal share of each, 64 GPUs (the largest that tiles 128), and says so; it used to be refused
{
	tsv_row "${HEADER[@]}"
	tsv_row GB1 "test" torchtitan "${ARCH[@]:1:18}" 1 gb200-nvl72 72 128 4 1 32 1 1 1 1 1 none none bf16 ok 5000 "" "" "" "" "" "" high "test row"
} >"$TMP/gb.tsv"
expect_rc 0 "$SP" validate "$TMP/gb.tsv" --json
GBS=$("$SP" sim --model llama-3-8b --gpu gb200-nvl72 --gpus 128 --gpus-per-node 64 --tp 4 --dp 32 --sp --zero 1 --recompute none \
	--mbs 1 --gbs 64 --seq 4096 --framework torchtitan --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s_per_gpu"])')
json_check "$TMP/out" "d['simulated'] == 1 and 'gpus_per_node 64 (128 GPUs fill domains of 72' in d['results'][0]['assumed'] and abs(d['results'][0]['pred_tokens_per_s_per_gpu'] / $GBS - 1) < 1e-6"

# an in-house stack (framework "other") documents no allocator, gradient dtype or ZeRO-2
# reduction schedule: those are cells like any other, completed with the fastest plan that
# fits; a documented framework (megatron-core) sets them from its profile and searches none.
# The "other" row's prediction is the fastest fitting of the 8 sim plans over those switches.
{
	tsv_row "${HEADER[@]}"
	tsv_row IH1 "other test" other "${ARCH[@]:1:18}" 1 h100-sxm 8 16 1 2 8 1 1 1 1 2 selective none bf16 ok 5000 "" "" "" "" "" "" high "test row"
	tsv_row IH2 "mcore test" megatron-core "${ARCH[@]:1:18}" 1 h100-sxm 8 16 1 2 8 1 1 1 1 2 selective none bf16 ok 5000 "" "" "" "" "" "" high "test row"
} >"$TMP/inhouse.tsv"
expect_rc 0 "$SP" validate "$TMP/inhouse.tsv" --json
cp "$TMP/out" "$TMP/inhouse.json"
json_check "$TMP/inhouse.json" 'all(k in d["results"][0]["assumed"] for k in ("allocator ", "fp32_grads ", "reduce_per_mb ")) and "fastest completion that fits" in d["results"][0]["assumed"]'
json_check "$TMP/inhouse.json" 'all(k in d["results"][1]["assumed"] for k in ("allocator native (megatron-core)", "fp32_grads 1 (megatron-core)", "reduce_per_mb 0 (megatron-core)"))'
SIMTPS=$(for al in native expandable; do for g in 0 1; do for r in 0 1; do
	"$SP" sim --model llama-3-8b --gpu h100-sxm --gpus 16 --tp 1 --pp 2 --dp 8 --zero 2 --recompute selective --mbs 1 --gbs 64 --seq 4096 \
		--schedule 1f1b --overlap-grad-reduce 1 --overlap-param-gather 1 --overlap-tp-comm 1 --overlap-tp-bwd 1 --overlap-p2p 1 \
		--allocator $al --fp32-grads $g --reduce-per-mb $r --json 2>/dev/null |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["tokens_per_s_per_gpu"] if d["fits"] else 0)'
done; done; done | sort -g | tail -n 1)
json_check "$TMP/inhouse.json" "abs(d['results'][0]['pred_tokens_per_s_per_gpu'] / $SIMTPS - 1) < 1e-6"

# a run published in 2022 or before ran attention unfused (FlashAttention reached frameworks in
# 2023) unless its notes say flash: the prediction equals `sim --flash-attn 0`
{
	tsv_row "${HEADER[@]}"
	tsv_row OLD1 "Some paper 2021 Table 9" "${ARCH[@]}" 1 h100-sxm 8 8 1 1 8 1 1 1 0 0 none none bf16 ok 5000 "" "" "" "" "" "" high "test row"
	tsv_row OLD2 "Some paper 2021 Table 9" "${ARCH[@]}" 1 h100-sxm 8 8 1 1 8 1 1 1 0 0 none none bf16 ok 5000 "" "" "" "" "" "" high "ran with flash attention"
} >"$TMP/old.tsv"
expect_rc 0 "$SP" validate "$TMP/old.tsv" --json
cp "$TMP/out" "$TMP/old.json"
json_check "$TMP/old.json" '"unfused attention" in d["results"][0]["assumed"] and "unfused" not in d["results"][1].get("assumed", "")'
# (the row has no framework: the fastest of its allocator and gradient dtype, which fit alike)
SIMTPS=$(for g in 0 1; do "$SP" sim --model llama-3-8b --gpu h100-sxm --gpus 8 --dp 8 --mbs 1 --gbs 64 --seq 4096 --overlap-grad-reduce 1 --flash-attn 0 --fp32-grads $g --json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s_per_gpu"])'; done | sort -g | tail -n 1)
json_check "$TMP/old.json" "abs(d['results'][0]['pred_tokens_per_s_per_gpu'] / $SIMTPS - 1) < 1e-6 and d['results'][1]['pred_tokens_per_s_per_gpu'] > d['results'][0]['pred_tokens_per_s_per_gpu']"

# dated_pair FILE ID1 YEAR1 ID2 YEAR2 CELLS...: one row published in each year, the same cells
dated_pair() {
	local f=$1 a=$2 ya=$3 b=$4 yb=$5
	shift 5
	{ tsv_row "${HEADER[@]}"; tsv_row "$a" "Some paper $ya Table 9" "$@"; tsv_row "$b" "Some paper $yb Table 9" "$@"; } >"$f"
}

# selective recomputation dates from 2022 (Korthikanti et al.): a row published before leaves
# the completion none or full. 8B unfused on 8 GPUs, 4,096 tokens: keeping every activation
# (3.3 GB a layer with the attention scores) does not fit, selective does and is faster than
# full; the same row dated 2022 completes to selective, dated 2021 to full
dated_pair "$TMP/rcyear.tsv" RC21 2021 RC22 2022 "${ARCH[@]}" 1 h100-sxm 8 8 1 1 8 1 1 1 0 1 "" none bf16 ok 5000 "" "" "" "" "" "" high "test row"
expect_rc 0 "$SP" validate "$TMP/rcyear.tsv" --json
json_check "$TMP/out" '"recompute full," in d["results"][0]["assumed"] and "recompute selective," in d["results"][1]["assumed"]'

# so does sequence parallelism (the same paper's --sequence-parallel): tp 8 on 8 GPUs with the
# sp cell empty completes to SP when the row is dated 2023 (faster, and it shards the
# activations), to no SP when it is dated 2021
dated_pair "$TMP/spyear.tsv" SP21 2021 SP23 2023 "${ARCH[@]}" 8 h100-sxm 8 8 8 1 1 1 1 1 "" 0 none none bf16 ok 900 "" "" "" "" "" "" high "flash attention"
expect_rc 0 "$SP" validate "$TMP/spyear.tsv" --json
json_check "$TMP/out" '"sp 0" in d["results"][0]["assumed"] and "sp 1" in d["results"][1]["assumed"]'

# and so do the overlaps nobody states: a row without a framework takes them on (the fastest),
# except those that did not exist yet. SP21 (2021, tp 8) runs neither TP overlap; SP23 (2023)
# both. Each is priced as sim with those switches (and grad reduce and param gather on)
SPSIM=(sim --model llama-3-8b --gpu h100-sxm --gpus 8 --tp 8 --dp 1 --zero 0 --mbs 8 --gbs 64 --seq 4096 --recompute none
	--overlap-grad-reduce 1 --overlap-param-gather 1 --overlap-p2p 1 --json)
T21=$("$SP" "${SPSIM[@]}" --overlap-tp-comm 0 --overlap-tp-bwd 0 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s_per_gpu"])')
T23=$("$SP" "${SPSIM[@]}" --sp --overlap-tp-comm 1 --overlap-tp-bwd 1 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s_per_gpu"])')
expect_rc 0 "$SP" validate "$TMP/spyear.tsv" --json
json_check "$TMP/out" "'overlap_tp_comm 0 (published before 2023)' in d['results'][0]['assumed'] and 'overlap_tp_bwd 0 (published before 2022)' in d['results'][0]['assumed'] and 'published before' not in d['results'][1]['assumed'] and abs(d['results'][0]['pred_tokens_per_s_per_gpu'] / $T21 - 1) < 1e-6 and abs(d['results'][1]['pred_tokens_per_s_per_gpu'] / $T23 - 1) < 1e-6"

# and expandable segments date from 2023 (pytorch/pytorch#96995): with the allocator unknown
# (no framework), the 8B at ZeRO-3 on 8 GPUs with 2 x 6656 tokens fits under neither, and the
# completion takes the smallest peak: expandable segments when the row is dated 2024, the native
# allocator when it is dated 2021
A66=("${ARCH[@]}"); A66[17]=6656
dated_pair "$TMP/alyear.tsv" AL21 2021 AL24 2024 "${A66[@]}" 2 h100-sxm 8 8 1 1 8 1 1 1 0 3 none none bf16 ok 900 "" "" "" "" "" "" high "flash attention"
expect_rc 0 "$SP" validate "$TMP/alyear.tsv" --json
json_check "$TMP/out" '"allocator native" in d["results"][0]["assumed"] and "allocator expandable" in d["results"][1]["assumed"] and not d["results"][1]["pred_fits"]'

# a MoE row whose recompute is unknown may have run Megatron-Core's cheap recompute modules
# (the experts' activation and the pre-MLP norm for Mixtral) from 2025, when its releases carry
# the module list: Mixtral on 128 H100 at 4,096 tokens fits with them (69.4 GiB) and not without
# any recompute (77.4), so the 2025 row completes to them, priced as `sim` with the flags; the
# same row dated 2024 completes to full recompute
MX=(32 4096 14336 32 8 128 32000 0 rmsnorm swiglu 8 2 14336 0 0)
dated_pair "$TMP/mxyear.tsv" MX24 2024 MX25 2025 megatron-core "Mixtral" "${MX[@]}" 4096 256 1 h100-sxm 8 128 1 1 128 1 8 "" "" 1 "" none bf16 ok 1000 "" "" "" "" "" "" high "test row"
expect_rc 0 "$SP" validate "$TMP/mxyear.tsv" --json
MXS=$("$SP" sim --model mixtral-8x7b --gpu h100-sxm --gpus 128 --ep 8 --zero 1 --mbs 1 --gbs 256 --seq 4096 --framework megatron-core \
	--recompute selective --recompute-modules moe_act,layernorm --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s_per_gpu"])')
json_check "$TMP/out" "'recompute full' in d['results'][0]['assumed'] and 'recompute_modules moe_act,layernorm' in d['results'][1]['assumed'] and abs(d['results'][1]['pred_tokens_per_s_per_gpu'] / $MXS - 1) < 1e-6"

# mem_kind allocated (torch max_memory_allocated) is compared with live tensors: the reserved
# estimate less the allocator's fragmentation allowance, (alloc_frag_native - 1) = 0.7 on
# h100-sxm (a row without framework runs the native allocator), on the dynamic parts
# (activations, logits, buffers); ZeRO-3, whose per-block gathers and reductions give the pool
# its allowance
{
	tsv_row "${HEADER[@]}"
	tsv_row MK1 test "${ARCH[@]}" 1 h100-sxm 8 8 1 1 8 1 1 1 1 3 full none bf16 ok 5000 "" 50 reserved "" "" "" high "test row"
	tsv_row MK2 test "${ARCH[@]}" 1 h100-sxm 8 8 1 1 8 1 1 1 1 3 full none bf16 ok 5000 "" 50 allocated "" "" "" high "test row"
} >"$TMP/memkind.tsv"
expect_rc 0 "$SP" validate "$TMP/memkind.tsv" --json
json_check "$TMP/out" "(lambda a, b: abs((a['pred_mem_gib'] - b['pred_mem_gib']) - 0.7 * (a['pred_mem_parts_gib']['act'] + a['pred_mem_parts_gib']['logits'] + a['pred_mem_parts_gib']['buffers'])) < 1e-3)(d['results'][0], d['results'][1])"

# --- files from other tools: a UTF-8 byte-order mark before the header, and a row that measured
# only the step time (its tokens/s is FORMAT.md's gbs*seq/(step*gpus): 64*4096/(2*8) = 16384)
{ printf '\xef\xbb\xbf'; cat "$TMP/small.tsv"; } >"$TMP/bom.tsv"
expect_rc 0 "$SP" validate "$TMP/bom.tsv" --json
json_check "$TMP/out" 'd["rows"] == 4 and d["simulated"] == 4'
{
	tsv_row "${HEADER[@]}"
	tsv_row S1 test "${ARCH[@]}" 1 h100-sxm 8 8 1 1 8 1 1 1 1 1 none none bf16 ok "" 2 "" "" "" "" "" high "step time only"
} >"$TMP/step.tsv"
expect_rc 0 "$SP" validate "$TMP/step.tsv" --json
json_check "$TMP/out" 'abs(d["results"][0]["meas_tokens_per_s_per_gpu"] - 16384) < 1e-6 and "step_time_s" in d["results"][0]["assumed"] and d["throughput_rows"] == 1'

# --- rows whose cells break FORMAT.md are listed with the field and the rule, never scored:
# a measured number that is not a plain decimal (FORMAT.md: no sign, exponent, inf or nan), an
# unknown status or precision, no GPU count or node size
bad_row() { # name, column index (0-based in HEADER), value, expected reason
	local cells=(T9 test "${ARCH[@]}" 1 h100-sxm 8 8 1 1 8 1 1 1 1 1 none none bf16 ok 9000 "" 60 reserved "" "" "" high "test row")
	cells[$2]=$3
	{ tsv_row "${HEADER[@]}"; tsv_row "${cells[@]}"; } >"$TMP/bad-$1.tsv"
	expect_rc 0 "$SP" validate "$TMP/bad-$1.tsv" --json
	if EXPECT=$4 python3 -c 'import json,os,sys; d=json.load(open(sys.argv[1])); r=d["results"][0]
sys.exit(0 if d["simulated"] == 0 and d["throughput_rows"] == 0 and os.environ["EXPECT"] in r["reason"] else 1)' "$TMP/out"
	then ok; else bad "bad-$1.tsv: reason lacks '$4': $(head -c 400 "$TMP/out")"; fi
}
col() { local i; for i in "${!HEADER[@]}"; do [ "${HEADER[$i]}" = "$1" ] && echo "$i"; done; }
# when no completion of a row is a plan, the reason is the row's, not the last candidate's: an
# FP8 MoE row on A100s whose experts fold over TP (ep 8 over tp 2 x dp 4, expert TP filled with
# 1 or 2) is refused for FP8 on an A100, not for the expert-TP candidate tried last
MOE=("" moe-test 32 4096 0 32 8 128 32000 0 rmsnorm swiglu 8 2 14336 0 0 4096 64)
{ tsv_row "${HEADER[@]}"; tsv_row FP8A test "${MOE[@]}" 1 a100-sxm-80g 8 8 2 1 4 1 8 1 1 1 none none fp8 ok 900 "" "" "" "" "" "" high "test row"; } >"$TMP/fp8a.tsv"
expect_rc 0 "$SP" validate "$TMP/fp8a.tsv" --json
json_check "$TMP/out" "d['simulated'] == 0 and 'fp8 is not supported by gpu a100-sxm-80g' in d['results'][0]['reason']"
bad_row inf "$(col tokens_per_s_per_gpu)" inf "tokens_per_s_per_gpu: 'inf' is not a plain non-negative decimal number"
bad_row neg "$(col tokens_per_s_per_gpu)" -5 "tokens_per_s_per_gpu: '-5'"
bad_row exp "$(col mem_gib)" 6e1 "mem_gib: '6e1'"
bad_row step "$(col step_time_s)" nan "step_time_s: 'nan'"
bad_row status "$(col status)" done "status: 'done' is not ok, oom or fail"
bad_row prec "$(col precision)" fp4 "precision: 'fp4' is not bf16, fp16, fp8 or fp32"
bad_row gpus "$(col num_gpus)" 0 "num_gpus: '0' is not a positive integer"
bad_row gpn "$(col gpus_per_node)" 0 "gpus_per_node: '0' is not a positive integer"

# --row ID prints that row's full estimate; --set overrides a plan key (what-if)
expect_rc 0 "$SP" validate "$TMP/small.tsv" --row T2
expect_out 'micro-batches per pipeline'
expect_out 'rows 1, simulated 1'
expect_rc 0 "$SP" validate "$TMP/small.tsv" --row T2 --set mbs=2 --json
json_check "$TMP/out" 'd["rows"] == 1 and "mbs=2" in d["results"][0]["assumed"]'
expect_rc 2 "$SP" validate "$TMP/small.tsv" --row NOPE
expect_err_line "no row with id 'NOPE'"
expect_rc 2 "$SP" validate "$TMP/small.tsv" --set mbs
expect_err_line "expected key=value"
expect_rc 2 "$SP" validate "$TMP/small.tsv" --set tp=-3
expect_err_line "tp"

# --- model states against a measurement: nanotron's benchmark logs torch.cuda.max_memory_allocated
# after logging.py's log_memory reset the peak at the end of the forward/backward of the logged
# step (trainer.py training_step, 67c5ebb6), so the Playbook's "max allocated" is the peak of the
# optimizer phase: the model states plus the optimizer step's own temporaries, never below the
# states. Four of its ZeRO-0 rows (Llama-style 8B MHA, mb 1), copied from
# shared/validation/playbook_8b.tsv with their measured GiB: tp 4 / 8 / 16 on one stage, and
# tp 1 on 16 stages, whose first rank the states match only with nanotron's own layer split
# (pp_split cost, models/base.py build_model), not with an even one.
PB=("Ultra-Scale Playbook sweep" nanotron "Llama-style 8B (MHA)" 32 4096 14336 32 32 128 131072 0 rmsnorm swiglu 0 0 0 0 0 4096 256 1 h100-sxm 8)
{
	echo "# rows of shared/validation/playbook_8b.tsv, format: shared/validation/FORMAT.md"
	tsv_row "${HEADER[@]}"
	tsv_row PBS1726 "${PB[@]}" 16 4 1 4 1 1 1 1 0 none none bf16 ok 6214.94 "" 51.47 reserved "" "" "" high "max allocated 41.41 GiB"
	tsv_row PBS1662 "${PB[@]}" 8 8 1 1 1 1 1 1 0 none none bf16 ok 3616.16 "" 24.39 reserved "" "" "" high "max allocated 18.73 GiB"
	tsv_row PBS2173 "${PB[@]}" 128 16 1 8 1 1 1 1 0 none none bf16 ok 914.74 "" 14.08 reserved "" "" "" high "max allocated 10.48 GiB"
	tsv_row PBS1733 "${PB[@]}" 16 1 16 1 1 1 1 1 0 none 1f1b bf16 ok 5425.89 "" 60.35 reserved "" "" "" high "max allocated 21.30 GiB"
} >"$TMP/pbstates.tsv"
cat >"$TMP/states.py" <<'PY'
import json, sys
meas = {"PBS1726": 41.41, "PBS1662": 18.73, "PBS2173": 10.48, "PBS1733": 21.30}
out = ["%s %.2f GiB against %.2f" % (r["id"], r["pred_mem_parts_gib"]["static"], meas[r["id"]])
       for r in json.load(open(sys.argv[1]))["results"]
       if not meas[r["id"]] / 1.05 <= r["pred_mem_parts_gib"]["static"] <= meas[r["id"]]]
print("; ".join(out))
sys.exit(1 if out else 0)
PY
expect_rc 0 "$SP" validate "$TMP/pbstates.tsv" --json --set pp_split=cost
if out=$(python3 "$TMP/states.py" "$TMP/out" 2>&1); then ok; else bad "nanotron's model states (its layer split) against the measured optimizer-phase peaks: $out"; fi
expect_rc 0 "$SP" validate "$TMP/pbstates.tsv" --json --set pp_split=balanced
if python3 -c 'import json,sys; r={x["id"]:x for x in json.load(open(sys.argv[1]))["results"]}; sys.exit(0 if r["PBS1733"]["pred_mem_parts_gib"]["static"] < 21.30 / 1.1 else 1)' "$TMP/out"
then ok; else bad "an even split should leave rank 0 of the 16-stage row well below its measured states"; fi

# a row that ran proves its plan fitted: when a cell it leaves to its framework's documented
# default (the ZeRO stage, the pipeline schedule) fits no completion, the row takes the fastest
# combination the framework offers that fits, and says so. By hand: GPT-3 175B's fp16 weights
# alone are 2 B x 174.6e9 = 349 GB against an A100's 80 GB, so at tp = pp = 1 only ZeRO-3, which
# shards the parameters, can fit (DeepSpeed's config defaults to stage 0). A 70B Llama at
# tp 8 · pp 2 holds 40 layers and the embedding, 4.41e9 parameters, on its first rank; nanotron
# at ZeRO-0 keeps 20 B of states for each (bf16 weight 2, fp32 accumulator 4, DDP bucket 2, fp32
# master 4, Adam 8) = 88 GB, more than an H100's 80 GB, so it needs ZeRO-1, the one other stage
# nanotron has: ZeRO-2 fits too and is faster (shown below), but nanotron offers none. nanotron's
# pipeline engine defaults to all-forward-all-backward, which holds all 64 micro-batches of an
# 8B Llama's 8 layers a stage at pp 4: their gate and up projections alone are 64 x 8 x 2 x
# 14336 x 4096 tokens x 2 B = 120 GB, so the row takes 1F1B, nanotron's other engine; stated, AFAB
# stays and does not fit. An oom row keeps the defaults. DeepSpeed's pipeline engine refuses
# ZeRO-2 and -3: GPT-3 175B at tp 4 · pp 8 holds 5.5e9 parameters a rank, 87 GB of ZeRO-0's 16 B
# each, so Megatron-DeepSpeed's default (0) cannot fit and the row takes ZeRO-1; at tp 1 · pp 8
# a rank holds 21.8e9, whose fp16 weights and gradients alone are 87 GB under ZeRO-1, so no
# stage the pipeline engine allows fits and the row keeps its default (ZeRO-2 or -3 would fit).
G175=(gpt3-test 96 12288 49152 96 96 128 51200 1 layernorm gelu 0 0 0 0 0 2048 1536)
{
	tsv_row "${HEADER[@]}"
	tsv_row Z1 test deepspeed "${G175[@]}" 4 a100-sxm-80g 8 384 1 1 384 1 1 1 0 "" full none fp16 ok 100 "" "" "" "" "" "" high "zero not stated"
	tsv_row Z2 test nanotron "${ARCH70[@]:1:18}" 1 h100-sxm 8 128 8 2 8 1 1 1 1 "" none 1f1b bf16 ok 500 "" "" "" "" "" "" high "zero not stated"
	tsv_row Z3 test nanotron "${ARCH70[@]:1:18}" 1 h100-sxm 8 128 8 2 8 1 1 1 1 "" none 1f1b bf16 oom "" "" "" "" "" "" "" high "zero not stated"
	tsv_row Z4 test nanotron "${ARCH[@]:1:17}" 128 1 h100-sxm 8 8 1 4 2 1 1 1 1 1 none "" bf16 ok 5000 "" "" "" "" "" "" high "schedule not stated"
	tsv_row Z5 test nanotron "${ARCH[@]:1:17}" 128 1 h100-sxm 8 8 1 4 2 1 1 1 1 1 none afab bf16 ok 5000 "" "" "" "" "" "" high "afab stated"
	tsv_row Z6 test megatron-deepspeed "${G175[@]}" 1 a100-sxm-80g 8 512 4 8 16 1 1 1 0 "" full 1f1b fp16 ok 100 "" "" "" "" "" "" high "zero not stated"
	tsv_row Z7 test megatron-deepspeed "${G175[@]}" 1 a100-sxm-80g 8 512 1 8 64 1 1 1 0 "" full 1f1b fp16 ok 100 "" "" "" "" "" "" high "zero not stated"
} >"$TMP/zero.tsv"
expect_rc 0 "$SP" validate "$TMP/zero.tsv" --json
cp "$TMP/out" "$TMP/zero.json"
json_check "$TMP/zero.json" 'd["results"][0]["pred_fits"] and "zero 3 (the deepspeed default zero 0 fits no completion" in d["results"][0]["assumed"]'
json_check "$TMP/zero.json" 'd["results"][1]["pred_fits"] and "zero 1 (the nanotron default zero 0 fits no completion" in d["results"][1]["assumed"]'
json_check "$TMP/zero.json" 'not d["results"][2]["pred_fits"] and "zero 0 (nanotron)" in d["results"][2]["assumed"] and "no completion of" not in d["results"][2]["assumed"]'
json_check "$TMP/zero.json" 'd["results"][3]["pred_fits"] and "schedule 1f1b (the nanotron default schedule afab fits no completion" in d["results"][3]["assumed"]'
json_check "$TMP/zero.json" 'not d["results"][4]["pred_fits"] and "no completion of" not in d["results"][4]["assumed"]'
json_check "$TMP/zero.json" 'd["results"][5]["pred_fits"] and "zero 1 (the megatron-deepspeed default zero 0 fits no completion" in d["results"][5]["assumed"]'
json_check "$TMP/zero.json" 'not d["results"][6]["pred_fits"] and "zero 0 (megatron-deepspeed)" in d["results"][6]["assumed"] and "no completion of" not in d["results"][6]["assumed"]'
expect_rc 0 "$SP" validate "$TMP/zero.tsv" --row Z7 --set zero=2 --json
json_check "$TMP/out" 'd["results"][0]["pred_fits"]'
expect_rc 0 "$SP" validate "$TMP/zero.tsv" --row Z2 --set zero=2 --json
cp "$TMP/out" "$TMP/zero2.json"
Z1TPS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][1]["pred_tokens_per_s_per_gpu"])' "$TMP/zero.json")
json_check "$TMP/zero2.json" "d['results'][0]['pred_fits'] and d['results'][0]['pred_tokens_per_s_per_gpu'] > $Z1TPS"
# --row prints the chosen plan's estimate once
expect_rc 0 "$SP" validate "$TMP/zero.tsv" --row Z2
if [ "$(grep -c '^plan: ' "$TMP/out")" = 1 ] && grep -q 'zero 1, sp on' "$TMP/out"; then ok; else bad "validate --row Z2: $(grep '^plan: ' "$TMP/out")"; fi

# --- the published calibration file: the copy in tests/data (FORMAT.md rows from public
# sources), and the shared one when shared/ sits next to the repository. Sanity bounds only;
# the accuracy itself is a benchmark figure (scripts/calibrate.py), not a test.
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null)
for CAL in "$ROOT/tests/data/published_calibration.tsv" "$ROOT/../shared/validation/published_calibration.tsv"; do
	[ -f "$CAL" ] || continue
	expect_rc 0 "$SP" validate "$CAL"
	expect_out 'throughput MAPE [0-9.]+ %, median APE [0-9.]+ %'
	expect_out 'fit/OOM predictions right [0-9.]+ %'
	expect_rc 0 "$SP" validate "$CAL" --json
	cp "$TMP/out" "$TMP/cal.json"
	json_check "$TMP/cal.json" "all(k in d for k in $KEYS + ('excluded','throughput_rows','memory_rows','fit_rows'))"
	json_check "$TMP/cal.json" 'd["rows"] == 73 and d["simulated"] + d["not_simulated"] == d["rows"] and d["simulated"] >= 60'
	json_check "$TMP/cal.json" '0 <= d["excluded"] <= d["not_simulated"] and d["throughput_rows"] >= 60 and d["memory_rows"] >= 20'
	json_check "$TMP/cal.json" '0 < d["throughput_median_ape"] < 1 and 0 < d["throughput_mape"] < 1 and 0 < d["memory_mape"] < 1'
	json_check "$TMP/cal.json" '0.5 <= d["fit_accuracy"] <= 1 and d["groups"] >= 1 and -1 <= d["rank_spearman"] <= 1 and 0 <= d["top1_regret"] <= 1'
	json_check "$TMP/cal.json" 'all(0 < r["pred_tokens_per_s_per_gpu"] < 1e6 and 0 < r["pred_mem_gib"] < 4096 for r in d["results"] if r["simulated"])'
done
CAL="$ROOT/../shared/validation/published_calibration.tsv"
if [ -n "$ROOT" ] && [ -f "$CAL" ]; then
	expect_rc 0 "$SP" validate "$CAL" --json
	cp "$TMP/out" "$TMP/cal.json"
	json_check "$TMP/cal.json" "all(k in d for k in $KEYS)"
	json_check "$TMP/cal.json" 'd["rows"] == len(d["results"]) and d["rows"] > 0 and d["simulated"] > 0'
	json_check "$TMP/cal.json" 'all(0 <= d[k] for k in ("throughput_mape","throughput_median_ape","memory_mape")) and 0 <= d["fit_accuracy"] <= 1 and -1 <= d["rank_spearman"] <= 1'
	json_check "$TMP/cal.json" 'all(("reason" in r) != r["simulated"] for r in d["results"])'
	if out=$(python3 "$TMP/scores.py" "$TMP/cal.json" 2>&1); then ok; else bad "calibration scores disagree with their definitions: $out"; fi
fi

summary
