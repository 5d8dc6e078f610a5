# scaleplan export: from a plan file, from flags, flags overriding the file; bad input.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/plan.json" <<'J'
{"model": "llama-3-70b", "gpu": "h100-sxm", "gpus": 512, "tp": 8, "pp": 4, "sp": true, "gbs": 1024, "seq": 8192}
J
expect_rc 0 "$SP" export "$TMP/plan.json" --format megatron
expect_out '^--tensor-model-parallel-size 8 \\$'
expect_out '^--pipeline-model-parallel-size 4 \\$'
expect_out '^--sequence-parallel \\$'
expect_rc 0 "$SP" export "$TMP/plan.json" --format megatron --tp 4
expect_out '^--tensor-model-parallel-size 4 \\$'
# Megatron-Core's selective modules are written as its space-separated list; the default
# (core attention) writes none
expect_rc 0 "$SP" export --format megatron --model mixtral-8x7b --gpu h100-sxm --gpus 64 --tp 2 --ep 8 --sp --gbs 64 \
	--recompute selective --recompute-modules moe_act,layernorm
expect_out '^--recompute-modules moe_act layernorm \\$'
expect_rc 0 "$SP" export --format megatron --model mixtral-8x7b --gpu h100-sxm --gpus 64 --tp 2 --ep 8 --sp --gbs 64 --recompute selective
if grep -q -- '--recompute-modules' "$TMP/out"; then bad "the default modules written"; else ok; fi
expect_rc 0 "$SP" export --format nanotron --model llama-3-8b --gpu h100-sxm --gpus 8 --gbs 64
expect_out '^  dp: 8$'
expect_out '^  batch_accumulation_per_replica: 8$'
expect_rc 0 "$SP" export "$TMP/plan.json" --format torchtitan --zero 3
expect_out '^fsdp_reshard_after_forward = "default"$'
# MoE parallel folding: ep 32 over tp 2 x dp 16 with expert TP 1 is Megatron's
# --expert-model-parallel-size / --expert-tensor-parallel-size (megatron/training/arguments.py)
FOLD=(--model deepseek-v3 --gpu h800 --gpus 256 --tp 2 --pp 8 --ep 32 --etp 1 --mbs 1 --gbs 512 --seq 4096 --zero 1 --sp)
expect_rc 0 "$SP" export --format megatron "${FOLD[@]}"
expect_out '^--expert-model-parallel-size 32 \\$'
expect_out '^--expert-tensor-parallel-size 1 \\$'
expect_rc 0 "$SP" export --format nanotron "${FOLD[@]}"
expect_out 'no equivalent.*expert tensor parallelism 1 beside attention tp 2'
expect_rc 0 "$SP" sim "${FOLD[@]}" --recompute full
expect_out 'experts: ep 32 x etp 1 over the tp\*dp\*cp ranks'
expect_rc 2 "$SP" sim "${FOLD[@]}" --etp 2
expect_err_line 'ep\*etp \(64\) does not divide tp\*dp\*cp \(32\)'
expect_rc 2 "$SP" export "$TMP/plan.json" --format alpa
expect_err_line "unknown format 'alpa'"
expect_rc 2 "$SP" export "$TMP/plan.json"
expect_err_line '--format is required'
expect_rc 2 "$SP" export "$TMP/plan.json" --format megatron --tp 3
expect_err_line 'does not divide gpus'
summary
