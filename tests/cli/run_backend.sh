#!/usr/bin/env bash
# `scaleplan run --backend cuda|cuda-fp32|cpu` and the memory report of `run --json`:
#  - --backend cpu gives the default's losses and weights bit for bit on a build without a GPU,
#    and the summary names the backend;
#  - --backend cuda and cuda-fp32 fail with one line naming --backend and the reason: no CUDA
#    row in this build (and how to build one), or no GPU visible (the GPU part then says it is
#    skipped); with both, 3 steps of the tiny dense and MoE models are within 2e-2 relative of
#    the CPU losses on cuda (bf16; the derivation is below) and within 1e-4 on cuda-fp32 (fp32
#    on both, other summation orders), and cuda refuses cp 2 and zero 3 by name; with mpirun
#    and two GPUs, tp 2 (with SP, tiny) and ep 2 (dp 2, tiny-moe) on two GPU ranks against the
#    same plan on two CPU ranks, with the same bounds (a plan the row still refuses is reported
#    with train_supported_on's reason instead, and counted as neither passed nor failed);
#  - an unknown backend is refused;
#  - the backend allocator's peak holds at least the weights, gradients and AdamW moments
#    (16 bytes per parameter, the count the human output prints), is the same in a repeated
#    run, and is lower at ZeRO-3 than at ZeRO-0 on 2 ranks; predicted_live_peak_bytes is the
#    live_peak_bytes `sim --json` gives for the same plan.
. "$(dirname "$0")/lib.sh"
run_setup
# one rank needs no MPI (a NOMPI=1 build on a GPU machine without Open MPI); two do
if command -v mpirun >/dev/null; then ONE="$MPI -np 1"; else ONE="timeout 120"; MPI=; fi
TINY="--model tiny --seq 16 --gbs 8 --mbs 2"
summary_key() { json_lines "$1" | grep '^{"summary"' | python3 -c 'import json, sys
s = json.loads(sys.stdin.read())["summary"]; v = s[sys.argv[1]]
print(" ".join(str(int(x)) for x in v) if isinstance(v, list) else v)' "$2"; }

expect_rc 0 $ONE "$SP" run $TINY --steps 3 --json --dump-weights "$TMP/w.default"
cp "$TMP/out" "$TMP/l.default"
expect_rc 0 $ONE "$SP" run $TINY --steps 3 --json --backend cpu --dump-weights "$TMP/w.cpu"
cp "$TMP/out" "$TMP/l.cpu"
[ "$(summary_key "$TMP/l.cpu" backend)" = cpu ] && ok || bad "summary backend: $(summary_key "$TMP/l.cpu" backend)"

have_row=0; nm "$SP" 2>/dev/null | grep -q ' [DR] kern_cuda_ops$' && have_row=1
have_gpu=0; command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU' && have_gpu=1
# within(tol, a, b): every one of the 3 losses of a within tol relative of b's
within() { paste <(losses "$2") <(losses "$3") | awk -v t="$1" '{d=$1-$2; if (d<0) d=-d; if (d > t*$2) b++} END {exit (NR!=3 || b)}'; }
if [ $have_row = 1 ] && [ $have_gpu = 1 ]; then
	echo "cuda backends and a GPU: comparing 3 steps against the CPU"
	# cuda-fp32: fp32 on both sides, other summation orders: 1e-4 relative.
	# cuda (bf16): a rounding to bf16 has relative error <= u = 2^-9 (8 significand bits, round
	# to nearest). A forward of tiny (4 layers) rounds each residual-path value about R = 12 per
	# layer + 4 = 52 times in sequence (norm, GEMM outputs, RoPE, attention, SwiGLU, residual
	# adds, logits), so the logits carry at most R·u ≈ 0.10 relative error, and sqrt(R)·u ≈ 0.014
	# if the roundings are independent. The loss is ln V ± O(|z|) with |z| <= ~1 at init, so its
	# error is at most ~0.1 nats of ~5.6 (1.8 %); steps 2-3 add the effect of bf16 gradients on
	# AdamW's normalised updates (lr·O(u) per weight), small beside it. Tolerance: 2e-2 relative
	# (the worst case), where the independent-rounding estimate is ~3e-3.
	for m in tiny tiny-moe; do
		expect_rc 0 $ONE "$SP" run --model $m --seq 16 --gbs 8 --mbs 2 --steps 3 --json --backend cpu
		cp "$TMP/out" "$TMP/c.$m"
		for b in cuda-fp32 cuda; do
			tol=1e-4; [ $b = cuda ] && tol=2e-2
			expect_rc 0 $ONE "$SP" run --model $m --seq 16 --gbs 8 --mbs 2 --steps 3 --json --backend $b
			[ "$(summary_key "$TMP/out" backend)" = $b ] && ok || bad "$m: summary backend is not $b"
			within $tol "$TMP/out" "$TMP/c.$m" && ok ||
				bad "$m: $b losses $(losses "$TMP/out" | tr '\n' ' ') vs cpu $(losses "$TMP/c.$m" | tr '\n' ' ') (tolerance $tol)"
		done
	done
	# the default on a GPU is the bf16 row
	expect_rc 0 $ONE "$SP" run $TINY --steps 1 --json
	[ "$(summary_key "$TMP/out" backend)" = cuda ] && ok || bad "the default with a GPU is not cuda"
	if [ -n "$MPI" ]; then
		expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --backend cuda --cp 2 --gpus 2
		expect_msg -- 'not yet supported on backend cuda: .*cp 2'
		expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --backend cuda --zero 3 --gpus 2
		expect_msg -- 'not yet supported on backend cuda: zero 3'
	fi
	ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	if [ -n "$MPI" ] && [ "$ngpu" -ge 2 ]; then
		# one GPU per rank (rank r drives GPU r); the activations travel as bf16 on cuda
		for c in "tp2 tiny --tp 2 --sp" "ep2 tiny-moe --dp 2 --ep 2"; do
			set -- $c; name=$1 m=$2; shift 2
			expect_rc 0 $MPI -np 2 "$SP" run --model $m --seq 16 --gbs 8 --mbs 2 --gpus 2 "$@" --steps 3 --json \
				--backend cpu
			cp "$TMP/out" "$TMP/c2.$name"
			for b in cuda-fp32 cuda; do
				tol=1e-4; [ $b = cuda ] && tol=2e-2
				$MPI -np 2 "$SP" run --model $m --seq 16 --gbs 8 --mbs 2 --gpus 2 "$@" --steps 3 --json \
					--backend $b >"$TMP/out" 2>"$TMP/err"
				rc=$?
				if [ $rc -eq 2 ] && grep -q "^scaleplan.*not yet supported on backend $b" "$TMP/err"; then
					echo "$name on $b: refused: $(grep -m 1 '^scaleplan' "$TMP/err")"
					continue
				fi
				[ $rc -eq 0 ] && ok || bad "$name on $b: rc $rc :: $(head -c 300 "$TMP/err")"
				within $tol "$TMP/out" "$TMP/c2.$name" && ok ||
					bad "$name: $b losses $(losses "$TMP/out" | tr '\n' ' ') vs cpu $(losses "$TMP/c2.$name" | tr '\n' ' ') (tolerance $tol)"
			done
		done
	else
		echo "multi-rank GPU checks skipped: $([ -n "$MPI" ] && echo "$ngpu GPU(s) visible, 2 needed" || echo "no mpirun")"
	fi
else
	echo "GPU checks skipped: $([ $have_row = 1 ] && echo "no GPU visible" || echo "no CUDA row in this build")"
	cmp -s <(losses "$TMP/l.default") <(losses "$TMP/l.cpu") && ok || bad "--backend cpu changed the losses"
	cmp -s "$TMP/w.default" "$TMP/w.cpu" && ok || bad "--backend cpu changed the weights"
	[ "$(summary_key "$TMP/l.default" backend)" = cpu ] && ok || bad "the default is not cpu without a GPU"
	for b in cuda cuda-fp32; do
		expect_rc 2 $ONE "$SP" run $TINY --steps 1 --backend $b
		if [ $have_row = 1 ]; then expect_msg -- "--backend $b: no GPU is visible"
		else expect_msg -- "--backend $b: this build has no CUDA backend \(build with \`make CUDA=1\`"; fi
	done
fi
expect_rc 2 $ONE "$SP" run $TINY --steps 1 --backend tpu
expect_msg -- "--backend: 'tpu' is not cuda, cuda-fp32 or cpu"

# --- memory --------------------------------------------------------------------------------------
expect_rc 0 $ONE "$SP" run $TINY --steps 2 --backend cpu
params=$(sed -nE 's/^run: tiny, ([0-9]+) parameters.*/\1/p' "$TMP/out")
expect_rc 0 $ONE "$SP" run $TINY --steps 2 --backend cpu --json
peak=$(summary_key "$TMP/out" backend_peak_bytes_per_rank)
[ -n "$params" ] && [ -n "$peak" ] && [ "$peak" -ge $((16 * params)) ] && ok ||
	bad "allocator peak $peak < 16 bytes x $params parameters"
pred=$(summary_key "$TMP/out" predicted_live_peak_bytes)
expect_rc 0 "$SP" sim $TINY --gpu h100-sxm --gpus 1 --json
simlive=$(grep -o '"live_peak_bytes": *[0-9.e+]*' "$TMP/out" | head -n 1 | sed -E 's/.*: *//')
python3 -c "import sys; sys.exit(abs(float('$pred') - float('$simlive')) > 0.5)" 2>/dev/null && ok ||
	bad "predicted_live_peak_bytes $pred is not sim's live_peak_bytes $simlive"
expect_rc 0 $ONE "$SP" run $TINY --steps 2 --backend cpu --json
[ "$(summary_key "$TMP/out" backend_peak_bytes_per_rank)" = "$peak" ] && ok || bad "allocator peak differs between two identical runs"
for z in 0 3; do
	[ -n "$MPI" ] || break
	expect_rc 0 $MPI -np 2 "$SP" run $TINY --gpus 2 --zero $z --steps 2 --json --backend cpu
	zp[$z]=$(summary_key "$TMP/out" backend_peak_bytes_per_rank | cut -d' ' -f1)
done
if [ -n "$MPI" ]; then
	[ -n "${zp[0]}" ] && [ -n "${zp[3]}" ] && [ "${zp[3]}" -lt "${zp[0]}" ] && ok ||
		bad "zero 3's allocator peak (${zp[3]}) is not below zero 0's (${zp[0]})"
fi
summary
