#!/usr/bin/env bash
# Plans practitioners ran must fit, and must not be far from what the tuner would pick: a
# published recipe is a tuned plan, so a model that calls it impossible, or much slower than
# its own favourite, has its memory or its time wrong.
#
# NVIDIA's Llama-3.1-70B recipe on 512 H100 (NeMo / Megatron-Bridge performance recipe,
# shared/reference/frameworks.md §4: tp 4, pp 4, cp 2, interleaved vpp 5, distributed optimizer,
# SP, mbs 1, seq 8192; run as NeMo runs it, so its documented defaults fill the rest) must fit
# with selective recompute and reach at least 90 % of the tuner's best tokens/s on the same
# GPUs, sequence and 4M-token global batch.
. "$(dirname "$0")/lib.sh"

RECIPE=(sim --model llama-3-70b --gpu h100-sxm --gpus 512 --tp 4 --pp 4 --cp 2 --vpp 5 --schedule interleaved
	--zero 1 --sp --recompute selective --mbs 1 --gbs 512 --seq 8192 --framework nemo --json)
expect_rc 0 "$SP" "${RECIPE[@]}"
cp "$TMP/out" "$TMP/recipe.json"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["fits"] and d["peak_mem_bytes"] <= d["capacity_bytes"] else 1)' "$TMP/recipe.json"
then ok; else bad "the NVIDIA 70B/512 recipe does not fit: $(head -c 300 "$TMP/recipe.json")"; fi
expect_rc 0 "$SP" tune --model llama-3-70b --gpu h100-sxm --gpus 512 --seq 8192 --gbs-tokens 4M --no-db --top 1 --json
cp "$TMP/out" "$TMP/tune.json"
if python3 - "$TMP/recipe.json" "$TMP/tune.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["tokens_per_s_per_gpu"]
best = json.load(open(sys.argv[2]))["plans"][0]["tokens_per_s_per_gpu"]
print("recipe %.1f, tuner's best %.1f tok/s/GPU (%.1f %%)" % (r, best, 100 * r / best))
sys.exit(0 if r >= 0.9 * best else 1)
PY
then ok; else bad "the NVIDIA recipe is below 90 % of the tuner's best: $(cat "$TMP/out")"; fi
summary
