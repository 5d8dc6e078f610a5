#!/usr/bin/env bash
# Captures what the user sees from a fixed set of commands, so that a change meant to change no
# output (a restructuring) can be checked: run it before and after into two directories and
# compare them with `diff -r`. Timings (plans/s, seconds of search, CPU time) are masked; every
# other character is kept.
#
#   scripts/same-output.sh OUTDIR [SCALEPLAN]     (SCALEPLAN defaults to ./scaleplan)
set -u
out=${1:?usage: scripts/same-output.sh OUTDIR [SCALEPLAN]}
sp=${2:-./scaleplan}
val=${VALIDATION_DIR:-../shared/validation}
mkdir -p "$out"
# mask wall-clock figures: "in 0.245 s (14527381 plans/s)" and similar
mask() { sed -E 's/in [0-9.]+ s \([0-9]+ plans\/s\)/in T s (R plans\/s)/; s/[0-9.]+ s CPU/T s CPU/g; s/"(elapsed|search|cpu|wall)_s":[[:space:]]*[0-9.e+-]+/"\1_s": T/g; s/"plans_per_s":[[:space:]]*[0-9.e+-]+/"plans_per_s": R/'; }
n=0
run() {
	n=$((n + 1))
	{ echo "\$ $*"; "$sp" "$@" 2>&1; echo "exit $?"; } | mask >"$out/$(printf %02d "$n").txt"
}
L70='--model llama-3-70b --gpu h100-sxm'
P='--gpus 512 --tp 8 --pp 8 --zero 1 --sp --recompute selective --mbs 1 --gbs 512 --seq 8192'
run tune $L70 --gpus 512 --seq 8192 --gbs-tokens 4M --no-db
run tune $L70 --gpus 512 --seq 8192 --gbs-tokens 4M --no-db --json
run tune --model deepseek-v3 --gpu h800 --gpus 2048 --seq 4096 --gbs 4096 --no-db --top 5
run tune --model llama-3-8b --gpu a100-sxm-80g --gpus 64 --seq 4096 --gbs 512 --no-db --objective cost
run sim $L70 $P
run sim $L70 $P --json
run sim --engine event $L70 --gpus 64 --tp 8 --pp 8 --schedule zb-v --mbs 1 --gbs 64 --seq 8192 --sp --recompute selective
run sim --engine event $L70 --gpus 64 --tp 8 --pp 8 --schedule zb-v --mbs 1 --gbs 64 --seq 8192 --sp --recompute selective --json
run sim $L70 --gpus 64 --tp 1 --pp 1 --zero 0 --mbs 4 --gbs 256 --seq 8192
for s in gpipe 1f1b interleaved zb-h1 zb-h2 zb-v dualpipe; do
	v=; [ $s = interleaved ] && v='--vpp 2'
	run pipeline --schedule $s --pp 4 --microbatches 8 $v --t-f 1 --t-b 2 --t-w 1 --t-comm 0.1
	run sim $L70 --gpus 64 --tp 8 --pp 8 --zero 1 --schedule $s $v --mbs 1 --gbs 64 --seq 8192 --sp --recompute selective
done
run validate "$val/published_calibration.tsv"
run validate "$val/published_calibration.tsv" --by framework
run validate "$val/published_calibration.tsv" --json
run validate "$val/playbook_8b.tsv"
run validate "$val/playbook_8b.tsv" --by tp
for f in megatron nanotron torchtitan deepspeed; do
	run export --format $f $L70 --gpus 512 --tp 8 --pp 4 --vpp 5 --sp --zero 1 --mbs 1 --gbs 512 --seq 8192
	run export --format $f $L70 --gpus 512 --tp 4 --pp 1 --zero 3 --mbs 1 --gbs 512 --seq 8192
done
echo "$n outputs in $out"
