#!/usr/bin/env bash
# tests/gpu/run.sh — the GPU check of `scaleplan run --backend cuda` on one GPU (an H200, or an
# H100), in under 8 minutes, on a machine with CUDA's nvcc and NCCL and cuDNN (in Python's
# nvidia-* wheels or in the toolkit), no network, no MPI and none of the Debian libraries the
# project links: those come from the bundle scripts/gpu-bundle.sh collects into .gpu/ (carry
# it), unpacked with dpkg -x into a private prefix under $GPU_WORK (default
# /tmp/scaleplan-gpu), never into /.
#
# Stages, each under its own time limit (a stage that fails or runs out of time does not stop
# the next; the whole run keeps to $GPU_BUDGET_S, default 450 s):
#   setup    unpack the bundle, find nvcc, NCCL, cuDNN, cuBLAS, the GPU
#   build    make NOMPI=1 (+ CUDA=1 where the Makefile has it) of the binary, the CUDA objects
#            for sm_90 and the prerequisites of the Makefile's gpu-test target; sm_80 where the
#            Makefile's CUDA_ARCH has it, else every .cu compiled for sm_80 in the background
#   kernels  each gpu-test program (every CUDA kernel against its CPU reference)
#   nccl     tests/cuda/nccl_smoke.c and nccl_watchdog.c (a receive that never completes must
#            end after its 2 s timeout, every communicator aborted) on one rank, bootstrapped
#            by the one-rank world
#   tiny     3 steps of the tiny model with --backend cuda (bf16), cuda-fp32 and cpu: bf16
#            losses within 2e-2 relative of the CPU's (the bound tests/cli/run_backend.sh
#            derives from the roundings on a forward's residual path), fp32 ones within 1e-4
#   step     a ~1B-parameter Llama-style step at seq 4096 (tests/gpu/llama-3.2-1b.json), MFU
#   sim      `scaleplan sim` of that step from the run's trace (--op-times) and from the
#            h200-sxm profile alone, against the measured step time
#   profile  where `profile --backend cuda` is built: the measured tables, and the step
#            predicted from them
# (nccl runs last: the least is at stake there)
# and a short table LAST: check, result, target, status. Into $OUT (build-gpu-check/ when OUT
# is unset) go three files: stages.log (every stage's output), summary.txt (the table) and
# step_trace.json (the measured trace of the 1B step).
#
# Usage: tests/gpu/run.sh             every stage
#        tests/gpu/run.sh --build-only setup and build (what a machine without a GPU can check)
#        tests/gpu/run.sh --stage NAME (internal: one stage, environment from $GPU_WORK/env.sh)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
SELF=$ROOT/tests/gpu/run.sh
WORK=${GPU_WORK:-/tmp/scaleplan-gpu}
LOG=${OUT:-$ROOT/build-gpu-check}
BUNDLE=${GPU_BUNDLE:-$ROOT/.gpu}
RES=$WORK/results
# the binary the build made (make's BIN: build-nompi/ or, with CUDA=1, build-nompi-cuda/)
BIN=$ROOT/$(cat "$WORK/bin" 2>/dev/null || echo build-nompi/scaleplan)
PEAK_TFLOPS=989.4   # H200 SXM dense bf16 tensor peak (NVIDIA H200 datasheet, 1,979 with sparsity)
NPROC=$(nproc 2>/dev/null || echo 4)

# jget FILE KEY.PATH: the value at KEY.PATH of the last JSON object in FILE (one object, or one
# per line) that has it; a list gives its first element; empty when absent
jget() {
	"${PY:-python3}" - "$1" "$2" <<-'EOF'
	import json, sys
	text = open(sys.argv[1]).read()
	try:
	    objs = [json.loads(text)]
	except ValueError:
	    objs = []
	    for line in text.splitlines():
	        try:
	            objs.append(json.loads(line))
	        except ValueError:
	            pass
	val = None
	for o in objs:
	    cur = o
	    for k in sys.argv[2].split("."):
	        cur = cur.get(k) if isinstance(cur, dict) else None
	    if cur is not None:
	        val = cur
	if isinstance(val, list):
	    val = val[0] if val else None
	print("" if val is None else val)
	EOF
}

# result CHECK RESULT TARGET STATUS: one row of the final table (STATUS pass, FAIL, skip, info)
result() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RES/$STAGE"; }
note() { echo "[$STAGE] $*"; }

# --- setup ------------------------------------------------------------------------------------
find_python() {
	for p in "${GPU_PYTHON:-}" /opt/torch/.venv/bin/python3 python3; do
		[ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && { echo "$p"; return; }
	done
}

# The folders of the nvidia-* wheels (site-packages/nvidia/*), then the toolkit's; with
# "toolkit", the toolkit's first (the runtime and cuBLAS that match nvcc).
search_dirs() {
	[ "${1:-}" = toolkit ] && echo "${CUDA_HOME:-/usr/local/cuda}"
	local py=$(find_python)
	if [ -n "$py" ]; then
		"$py" - <<-'EOF' 2>/dev/null
		import importlib, os
		for m in ("nvidia.nccl", "nvidia.cudnn", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cu13", "nvidia"):
		    try:
		        for p in importlib.import_module(m).__path__:
		            print(p)
		    except Exception:
		        pass
		EOF
	fi
	echo "${CUDA_HOME:-/usr/local/cuda}"
}

# find_dir_of NAME [toolkit]: the folder of the first NAME (a header or a library) under the
# search folders
find_dir_of() {
	local name=$1 d f
	for d in $(search_dirs "${2:-}"); do
		f=$(find -L "$d" -maxdepth 4 -name "$name" 2>/dev/null | head -n 1)
		[ -n "$f" ] && { dirname "$f"; return; }
	done
}

unpack_bundle() {
	local n=0 deb
	rm -rf "${WORK:?}/root" "${WORK:?}/lib" "${WORK:?}/devlib"
	mkdir -p "$WORK/root" "$WORK/lib" "$WORK/devlib"
	for deb in "$BUNDLE"/debs/*.deb; do
		[ -f "$deb" ] || continue
		dpkg -x "$deb" "$WORK/root" || { note "dpkg -x $deb failed"; return 1; }
		n=$((n + 1))
	done
	echo "$n"
}

# devlib: every bundled library and link name (what the link sees); lib: only the bundled
# sonames this machine's loader does not know (what runs: the system's own copies win)
link_bundle_libs() {
	local f base have soname
	have=$(ldconfig -p 2>/dev/null | awk '{print $1}' | sort -u)
	for f in "$WORK"/root/usr/lib/x86_64-linux-gnu/*.so* "$WORK"/root/lib/x86_64-linux-gnu/*.so* \
		 "$WORK"/root/usr/lib/x86_64-linux-gnu/openblas-pthread/*.so*; do
		[ -e "$f" ] || continue
		base=$(basename "$f")
		ln -sf "$(readlink -f "$f")" "$WORK/devlib/$base"
		soname=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
		[ "$base" = "$soname" ] || continue
		printf '%s\n' "$have" | grep -qxF "$base" || ln -sf "$(readlink -f "$f")" "$WORK/lib/$base"
	done
}

# wheels ship libnccl.so.2 and libcudnn.so.9 without the unversioned link name -lnccl needs
link_names() {
	local dir=$1 f base
	for f in "$dir"/lib*.so.*; do
		[ -e "$f" ] || continue
		base=$(basename "$f" | sed -E 's/\.so\..*$/.so/')
		[ -e "$dir/$base" ] || [ -e "$WORK/devlib/$base" ] || ln -sf "$f" "$WORK/devlib/$base"
	done
}

stage_setup() {
	local nvcc n inc libs d
	if ! ls "$BUNDLE"/debs/*.deb >/dev/null 2>&1; then
		result bundle "no $BUNDLE/debs (run scripts/gpu-bundle.sh, carry .gpu)" "unpacked" FAIL
		return 1
	fi
	n=$(unpack_bundle) || { result bundle "dpkg -x failed" unpacked FAIL; return 1; }
	link_bundle_libs
	result bundle "$n packages, $(ls "$WORK/lib" | wc -l) sonames this machine lacks" unpacked pass
	nvcc=$(command -v nvcc || ls "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" 2>/dev/null)
	[ -z "$nvcc" ] && nvcc=$(find_dir_of nvcc)/nvcc
	if [ ! -x "$nvcc" ]; then result nvcc "not found" "CUDA 12.8+" FAIL; return 1; fi
	result nvcc "$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')" "CUDA 12.8+" info
	inc="$WORK/root/usr/include:$WORK/root/usr/include/x86_64-linux-gnu/openblas-pthread"
	libs=""    # the CUDA libraries' folders
	for h in cuda_runtime.h nccl.h cudnn.h cublasLt.h; do
		case $h in nccl.h|cudnn.h) d=$(find_dir_of "$h");; *) d=$(find_dir_of "$h" toolkit);; esac
		[ -z "$d" ] && { result "$h" "not found" found FAIL; continue; }
		note "$h in $d"
		case ":$inc:" in *":$d:"*) ;; *) inc="$inc:$d";; esac
	done
	for l in 'libcudart.so*' 'libnccl.so*' 'libcudnn.so*' 'libcublasLt.so*' 'libcublas.so*'; do
		case $l in libnccl*|libcudnn*) d=$(find_dir_of "$l");; *) d=$(find_dir_of "$l" toolkit);; esac
		[ -z "$d" ] && { result "${l%%.*}" "not found" found FAIL; continue; }
		note "${l%%.*} in $d"
		link_names "$d"
		case ":$libs:" in *":$d:"*) ;; *) libs="$libs${libs:+:}$d";; esac
	done
	result libraries "NCCL in $(find_dir_of 'libnccl.so*' | sed 's|.*/site-packages/||'), cuDNN in $(find_dir_of 'libcudnn.so*' | sed 's|.*/site-packages/||')" found info
	local gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
	local nogpu=FAIL
	[ "${GPU_CHECK_MODE:-}" = build-only ] && nogpu=skip
	result gpu "${gpu:-none visible}" "H200 or H100" "$([ -n "$gpu" ] && echo info || echo $nogpu)"
	# DT_RPATH (--disable-new-dtags), unlike DT_RUNPATH, also serves the libraries' own
	# dependencies (GLPK's AMD and COLAMD, OpenBLAS's gfortran)
	# (devlib, every bundled library, serves the link only: at run time the system's copies
	# come first, then lib, the bundled sonames this machine lacks)
	local rpath=$(echo "$WORK/lib${libs:+:}$libs" | sed 's/:/ -Wl,-rpath,/g')
	cat >"$WORK/env.sh" <<-EOF
	export PY='$(find_python)'
	export NVCC='$nvcc'
	export PATH='$(dirname "$nvcc")':\$PATH
	export CPATH='$inc'
	export LIBRARY_PATH='$WORK/devlib${libs:+:}$libs'
	export LD_LIBRARY_PATH='$WORK/lib${libs:+:}$libs'
	export LDFLAGS='-L$WORK/devlib -Wl,-rpath-link,$WORK/devlib -Wl,--disable-new-dtags -Wl,-rpath,$rpath'
	EOF
	cat "$WORK/env.sh"
}

# --- build ------------------------------------------------------------------------------------
# one make argument a line (CUDA_INC and CUDA_LDFLAGS hold spaces)
make_flags() {
	printf '%s\n' NOMPI=1 "NVCC=$NVCC" "-j$NPROC"
	grep -Eq '^\s*ifn?eq\s*\(\$\(CUDA\)' Makefile && echo "CUDA=1"
	# headers and libraries outside the toolkit, where the Makefile takes them as variables
	grep -q 'CUDA_INC' Makefile && echo "CUDA_INC=$(echo ":$CPATH" | sed 's/:/ -I/g')"
	grep -q 'CUDA_LDFLAGS' Makefile && echo "CUDA_LDFLAGS=$(echo ":$LIBRARY_PATH" | sed 's/:/ -L/g')"
}

# make_var NAME: a variable's value as the Makefile sets it under make_flags
make_var() {
	local IFS=$'\n'
	make -pn $(make_flags) 2>/dev/null | sed -n "s/^$1 :*= //p" | head -n 1
}

# the GPU check programs: the file prerequisites of the Makefile's gpu-test target, phony
# targets (gpu-build) expanded
gpu_test_programs() {
	local IFS=$'\n' db
	db=$(make -pn $(make_flags) 2>/dev/null)
	expand() {
		local t d
		for t in $(printf '%s\n' "$db" | sed -n "s|^$1: *||p" | head -n 1 | tr ' ' '\n'); do
			case "$t" in */*) echo "$t";; *) expand "$t";; esac
		done
	}
	expand gpu-test | sort -u | tr '\n' ' '
}

compile_sm80() {
	mkdir -p "$WORK/sm80"
	ls kernels/*.cu runtime/*.cu 2>/dev/null | xargs -P "$NPROC" -I{} sh -c \
		'"$NVCC" -O3 -std=c++17 -gencode arch=compute_80,code=sm_80 -I. -c -o "$1/$(basename "$2" .cu).o" "$2" >"$1/$(basename "$2" .cu).log" 2>&1 || echo "$2" >>"$1/failed"' _ "$WORK/sm80" {}
}

stage_build() {
	local IFS=$'\n' flags progs sm80_in_arch=0
	flags=($(make_flags))
	unset IFS
	rm -rf "$WORK/sm80"
	if grep -q 'code=sm_80' Makefile; then sm80_in_arch=1; else (compile_sm80; touch "$WORK/sm80/done") & fi
	make_var BIN >"$WORK/bin"
	BIN=$ROOT/$(cat "$WORK/bin")
	# the binary, the CUDA objects and the GPU programs: the host's unit tests are make test's
	note "make ${flags[*]} $(cat "$WORK/bin") build/libscaleplan_cuda.a"
	if ! make "${flags[@]}" "$(cat "$WORK/bin")" build/libscaleplan_cuda.a; then
		result build "make $(cat "$WORK/bin") failed (see the build stage's log)" "builds" FAIL; wait; return 1
	fi
	progs=$(gpu_test_programs)
	note "gpu-test programs: ${progs:-none}"
	# shellcheck disable=SC2086
	if [ -n "$progs" ] && ! make "${flags[@]}" $progs; then result build "gpu-test programs failed to build" builds FAIL; wait; return 1; fi
	echo "$progs" >"$WORK/gpu_test_programs"
	local cuda=no
	nm "$BIN" 2>/dev/null | grep -qi 'cudaMalloc\|nccl' && cuda=yes
	result build "$(cat "$WORK/bin") (CUDA linked: $cuda), $(echo $progs | wc -w) gpu-test programs" "builds for sm_90" pass
	wait
	if [ $sm80_in_arch -eq 1 ]; then
		result sm_80 "in every CUDA object (the Makefile's CUDA_ARCH)" "builds" pass
	else
		local nf nc f
		nf=$(cat "$WORK/sm80/failed" 2>/dev/null | wc -l)
		nc=$(ls kernels/*.cu runtime/*.cu 2>/dev/null | wc -l)
		result sm_80 "$((nc - nf)) of $nc .cu files compile" "all" "$([ "$nf" -eq 0 ] && echo pass || echo FAIL)"
		for f in $(cat "$WORK/sm80/failed" 2>/dev/null); do tail -n 5 "$WORK/sm80/$(basename "$f" .cu).log"; done
	fi
	# what the binary loads: nothing from the system that the bundle was meant to supply
	ldd "$BIN" | grep -E 'not found' && result loader "libraries not found (ldd)" "all found" FAIL
	return 0
}

# --- kernels, nccl ----------------------------------------------------------------------------
# counts "N passed, N failed" of a log; sets P and F
counts() {
	local line=$(grep -aoE '[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	P=$(echo "$line" | awk '{print $1+0}')
	F=$(echo "$line" | awk '{print $3+0}')
	[ -n "$line" ]
}

stage_kernels() {
	local progs=$(cat "$WORK/gpu_test_programs" 2>/dev/null) p rc
	[ -z "$progs" ] && { result kernels "no gpu-test programs built" "all pass" FAIL; return 1; }
	for p in $progs; do
		[ -x "$p" ] || { result "$(basename "$p")" "not built" "all pass" FAIL; continue; }
		timeout "${STAGE_LEFT:-120}" "$p" >"$WORK/$(basename "$p").log" 2>&1
		rc=$?
		cat "$WORK/$(basename "$p").log"
		if [ "${p##*/bench_}" != "$p" ]; then
			# a benchmark checks nothing itself: it runs, and its figures are rows below
			result "$(basename "$p")" "rc $rc" "runs" "$([ $rc -eq 0 ] && echo pass || echo FAIL)"
		elif counts "$WORK/$(basename "$p").log"; then
			result "$(basename "$p")" "$P passed, $F failed (rc $rc)" "all pass" "$([ "$F" -eq 0 ] && [ $rc -eq 0 ] && echo pass || echo FAIL)"
		else
			result "$(basename "$p")" "no summary (rc $rc)" "all pass" FAIL
		fi
	done
	# the attention benchmark prints "bench attention_fwd+bwd_b<B> <TFLOP/s> TFLOP/s ..."
	# (tests/gpu/bench_attention_cuda.cu); the best batch counts
	local best
	best=$(cat "$WORK"/*.log 2>/dev/null | awk '$1 == "bench" && $2 ~ /^attention_fwd\+bwd_b[0-9]+$/ && $3 + 0 > t {t = $3 + 0; b = $2} END {if (t) print t, b}')
	if [ -n "$best" ]; then
		local t=${best%% *} pct
		pct=$(awk -v t="$t" -v p="$PEAK_TFLOPS" 'BEGIN{printf "%.1f", 100*t/p}')
		result "attention fwd+bwd" "$t TFLOP/s = $pct % of peak (${best#* attention_fwd+bwd_}, seq 4096, d 128)" ">= 45 % of peak" \
			"$(awk -v x="$pct" 'BEGIN{print (x >= 45) ? "pass" : "FAIL"}')"
	else
		result "attention fwd+bwd" "not measured (no 'bench attention_fwd+bwd_b*' line)" ">= 45 % of peak" skip
	fi
}

# tests/cuda/nccl_smoke.c (every collective on one rank) and tests/cuda/nccl_watchdog.c (a
# receive that never completes ends after its timeout with every communicator aborted), each
# on one rank whose NCCL world the one-rank communicator bootstraps: no MPI
stage_nccl() {
	local B prog out
	B=$(dirname "$(cat "$WORK/bin")")
	for prog in nccl_smoke nccl_watchdog; do
		out=$WORK/$prog
		# shellcheck disable=SC2086
		if ! gcc -std=c11 -O1 -I. -o "$out" tests/cuda/$prog.c build/libscaleplan_cuda.a $B/libruntime.a \
			$B/libkernels.a $B/libsim.a $LDFLAGS -lnccl -lcudart -lstdc++ -lcjson -lsqlite3 -lglpk \
			-lopenblas -lm -lpthread; then
			result "$prog" "does not link" "1 rank, no MPI" FAIL
			continue
		fi
		timeout 60 "$out" >"$WORK/$prog.out" 2>&1
		local rc=$?
		cat "$WORK/$prog.out"
		if counts "$WORK/$prog.out" && [ "$F" -eq 0 ] && [ $rc -eq 0 ] && ! grep -qi 'no GPU' "$WORK/$prog.out"; then
			result "$prog" "$P passed, $F failed" "1 rank, no MPI" pass
		else
			result "$prog" "rc $rc: $(grep -v '^watchdog:' "$WORK/$prog.out" | tail -n 1)" "1 rank, no MPI" FAIL
		fi
	done
}

# --- tiny: cuda against cpu -------------------------------------------------------------------
has_backend_flag() { "$BIN" run --help 2>/dev/null | grep -q -- '--backend'; }
losses() { grep '^{"step"' "$1" | grep -o '"loss": *[-0-9.e+]*' | sed 's/.*: *//'; }

# close_losses A B N REL: N losses each, |a - b| <= REL * |b|; prints the largest ratio
close_losses() {
	paste <(losses "$1") <(losses "$2") | awk -v n="$3" -v rel="$4" '
		{d = $1 - $2; if (d < 0) d = -d; r = d / ($2 < 0 ? -$2 : $2); if (r > worst) worst = r; if (r > rel) bad++}
		END {printf "%.2e\n", worst; exit (NR != n || bad)}'
}

stage_tiny() {
	if ! has_backend_flag; then
		result "tiny cuda vs cpu" "not built: scaleplan run has no --backend" "within 2e-2 rel" skip
		return 0
	fi
	local T="--model tiny --seq 64 --gbs 8 --mbs 2 --steps 3 --json --no-db" b
	for b in cpu cuda cuda-fp32; do
		timeout 120 "$BIN" run $T --backend $b >"$WORK/tiny.$b" 2>"$WORK/tiny.$b.err"
		local rc=$?
		cat "$WORK/tiny.$b" "$WORK/tiny.$b.err"
		[ $rc -eq 0 ] || { result "tiny --backend $b" "rc $rc: $(tail -n 1 "$WORK/tiny.$b.err")" "runs" FAIL; return 1; }
	done
	# bf16 against fp32: the bound tests/cli/run_backend.sh derives (about 52 bf16 roundings on
	# the residual path of a forward, 2^-9 each, on logits of magnitude about 1: under 2 % of
	# the loss); the fp32 CUDA row differs from the CPU only in the order of its additions
	local worst tol name
	for b in cuda cuda-fp32; do
		if [ $b = cuda ]; then tol=2e-2; name="tiny cuda (bf16) vs cpu"; else tol=1e-4; name="tiny cuda-fp32 vs cpu"; fi
		if worst=$(close_losses "$WORK/tiny.$b" "$WORK/tiny.cpu" 3 $tol); then
			result "$name" "3 losses, largest rel diff $worst" "within $tol rel" pass
		else
			result "$name" "largest rel diff $worst: $(losses "$WORK/tiny.$b" | tr '\n' ' ')vs $(losses "$WORK/tiny.cpu" | tr '\n' ' ')" "within $tol rel" FAIL
		fi
	done
}

# --- step: the ~1B model ----------------------------------------------------------------------
# tests/gpu/llama-3.2-1b.json: the shape of Llama 3.2 1B (hidden 2048, 16 layers, 32 heads of
# 64, 8 KV heads, SwiGLU 8192, vocab 128256, tied embedding). Parameters:
#   embedding (= head, tied)  128256 x 2048                      =   262,668,288
#   per layer: q, o 2 x 2048^2; k, v 2 x 2048 x 512; SwiGLU 3 x 2048 x 8192; 2 norms x 2048
#              = 8,388,608 + 2,097,152 + 50,331,648 + 4,096     =    60,821,504
#   16 layers                                                     =   973,144,064
#   final norm                                                    =         2,048
#   total                                                         = 1,235,814,400
# Model FLOPs per token (the simulator's convention, causal attention counted once):
#   6 x N_matmul + 6 x layers x hidden x seq, N_matmul = 16 layers' matrices + the head
#   = 6 x (973,144,064 - 16 x 4,096 + 262,668,288) + 6 x 16 x 2048 x 4096 = 8,220,180,480
STEP_MODEL=${STEP_MODEL:-tests/gpu/llama-3.2-1b.json}
STEP_PLAN=${STEP_PLAN:---seq 4096 --mbs 2 --gbs 16}
STEP_FLOPS_PER_TOKEN=${STEP_FLOPS_PER_TOKEN:-8220180480}
STEP_BACKEND=${STEP_BACKEND---backend cuda}

stage_step() {
	if [ -n "$STEP_BACKEND" ] && ! has_backend_flag; then
		result "1B step MFU" "not built: scaleplan run has no --backend" ">= 40 % MFU" skip
		return 0
	fi
	timeout "${STAGE_LEFT:-200}" "$BIN" run --model "$STEP_MODEL" --gpu h200-sxm $STEP_PLAN --steps 4 --json --no-db \
		$STEP_BACKEND --trace "$WORK/step_trace.json" >"$WORK/step.json" 2>"$WORK/step.err"
	local rc=$?
	cat "$WORK/step.json" "$WORK/step.err"
	if [ $rc -ne 0 ]; then result "1B step MFU" "rc $rc: $(tail -n 1 "$WORK/step.err")" ">= 40 % MFU" FAIL; return 1; fi
	# the summary's mean leaves the first (warm-up) step out
	local mean=$(jget "$WORK/step.json" summary.mean_step_time_s)
	[ -z "$mean" ] && { result "1B step MFU" "no summary in the run's output" ">= 40 % MFU" FAIL; return 1; }
	local tokens=$(awk -v p="$STEP_PLAN" 'BEGIN{n = split(p, a, " "); for (i = 1; i < n; i++) {if (a[i] == "--gbs") g = a[i+1]; if (a[i] == "--seq") s = a[i+1]}; print g * s}')
	echo "$mean" >"$WORK/step_time_s"
	local mfu=$(awk -v f="$STEP_FLOPS_PER_TOKEN" -v t="$tokens" -v s="$mean" -v p="$PEAK_TFLOPS" 'BEGIN{printf "%.1f", 100 * f * t / s / (p * 1e12)}')
	result "1B step MFU" "$mfu % ($(printf '%.3f' "$mean") s/step, $tokens tokens)" ">= 40 % MFU" "$(awk -v x="$mfu" 'BEGIN{print (x >= 40) ? "pass" : "FAIL"}')"
	local peak=$(jget "$WORK/step.json" summary.peak_mem_bytes_per_rank)
	[ -n "$peak" ] && result "1B step memory" "$(awk -v b="$peak" 'BEGIN{printf "%.1f GiB", b / 2^30}') peak" "fits 141 GB" info
}

# --- sim: predict the measured step -----------------------------------------------------------
# sim_row LABEL GPU [ARGS...]: the event engine's step time for the step's plan, against the
# measured one
sim_row() {
	local label=$1 gpu=$2 meas pred err
	shift 2
	meas=$(cat "$WORK/step_time_s" 2>/dev/null)
	if [ -z "$meas" ]; then result "sim $label" "no measured step" "within 5 %" skip; return; fi
	"$BIN" sim --model "$STEP_MODEL" --gpu "$gpu" --gpus 1 $STEP_PLAN --engine event "$@" --json \
		>"$WORK/sim.json" 2>"$WORK/sim.err"
	cat "$WORK/sim.err"
	grep -E '"(step_time_s|analytic_step_time_s|source|stages_measured)"' "$WORK/sim.json"
	pred=$(jget "$WORK/sim.json" step_time_s)
	if [ -z "$pred" ]; then result "sim $label" "failed: $(tail -n 1 "$WORK/sim.err")" "within 5 %" FAIL; return; fi
	err=$(awk -v p="$pred" -v m="$meas" 'BEGIN{printf "%+.1f", 100 * (p - m) / m}')
	result "sim $label" "$(printf '%.3f' "$pred") s vs $(printf '%.3f' "$meas") s measured ($err %)" "within 5 %" \
		"$(awk -v e="$err" 'BEGIN{print (e <= 5 && e >= -5) ? "pass" : "FAIL"}')"
}

# steady_trace IN OUT: the trace without each rank's first step (every event that ends before
# the end of its first optimizer event), as the measured mean leaves the first step out: the
# first step carries the one-time costs (cuBLASLt heuristics, cuDNN graph builds, allocation)
steady_trace() {
	"${PY:-python3}" - "$1" "$2" <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	ev = d["traceEvents"]
	first_end = {}
	for e in ev:
	    if e.get("ph") == "X" and e.get("name") == "optimizer" and e["pid"] not in first_end:
	        first_end[e["pid"]] = e["ts"] + e["dur"]
	keep = [e for e in ev if e.get("ph") != "X" or e["ts"] >= first_end.get(e["pid"], -1)]
	d["traceEvents"] = keep
	json.dump(d, open(sys.argv[2], "w"))
	print("steady trace: %d of %d events" % (len(keep), len(ev)))
	EOF
}

stage_sim() {
	steady_trace "$WORK/step_trace.json" "$WORK/step_trace_steady.json" ||
		cp "$WORK/step_trace.json" "$WORK/step_trace_steady.json"
	sim_row "from the trace" h200-sxm --op-times "$WORK/step_trace_steady.json"
	sim_row "from h200-sxm" h200-sxm
}

# the measured tables of `scaleplan profile --backend cuda`, where it is built, then the
# prediction from that profile alone
stage_profile() {
	if ! "$BIN" profile --help 2>/dev/null | grep -q 'built here:.*cuda'; then
		result "sim from the profile" "not built: profile --backend cuda" "within 5 %" skip
		return 0
	fi
	timeout "${STAGE_LEFT:-90}" "$BIN" profile --backend cuda --fabric h200-sxm --max-dim 8192 --max-seq 4096 --min-time 0.005 \
		--name h200-measured -o "$WORK/h200-measured.json"
	local rc=$?
	[ $rc -eq 0 ] || { result "sim from the profile" "profile --backend cuda: rc $rc" "within 5 %" FAIL; return 1; }
	sim_row "from the profile" "$WORK/h200-measured.json"
}

# --- driver -----------------------------------------------------------------------------------
table() {
	local f
	# results longer than their column are cut here; stages.log has them whole
	printf '\n%-26s %-66s %-18s %s\n' check result target status
	printf '%-26s %-66s %-18s %s\n' ----- ------ ------ ------
	for f in setup build kernels tiny step sim profile nccl; do
		[ -f "$RES/$f" ] && awk -F'\t' '{r = length($2) > 66 ? substr($2, 1, 63) "..." : $2
			printf "%-26s %-66s %-18s %s\n", $1, r, $3, $4}' "$RES/$f"
	done
}

run_stage() {
	local name=$1 limit=$2 left=$((DEADLINE - $(date +%s)))
	[ "$left" -lt "$limit" ] && limit=$left
	if [ "$limit" -le 5 ]; then
		printf '%s\tnot run: the %s s budget was spent\t-\tFAIL\n' "$name" "$BUDGET" >>"$RES/$name"
		return
	fi
	local t0=$(date +%s)
	STAGE_LEFT=$((limit - 5)) timeout -k 5 "$limit" bash "$SELF" --stage "$name" >"$WORK/logs/$name.log" 2>&1
	local rc=$?
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && printf '%s\tstopped after %s s\t-\tFAIL\n' "$name" "$limit" >>"$RES/$name"
	echo "stage $name: rc $rc, $(( $(date +%s) - t0 )) s"
	{ echo "=== stage $name: rc $rc, $(( $(date +%s) - t0 )) s"; cat "$WORK/logs/$name.log"; } >>"$LOG/stages.log"
}

# the last lines of the log of each stage with a failed row, before the table
failure_tails() {
	local f
	for f in "$RES"/*; do
		[ -f "$f" ] && grep -q 'FAIL$' "$f" || continue
		echo "--- $(basename "$f"): last lines of its log"
		tail -n 8 "$WORK/logs/$(basename "$f").log" 2>/dev/null | cut -c1-300
	done
}

if [ "${1:-}" = "--stage" ]; then
	STAGE=$2
	mkdir -p "$RES"
	[ "$STAGE" != setup ] && . "$WORK/env.sh"
	"stage_$STAGE"
	exit $?
fi

export GPU_CHECK_MODE=${1:-all}; GPU_CHECK_MODE=${GPU_CHECK_MODE#--}
mkdir -p "$WORK" "$LOG"
# nothing measured by an earlier run may stand in for this one's
rm -rf "$RES" "$WORK/logs" "$LOG/stages.log" "$LOG/summary.txt" "$LOG/step_trace.json" \
	"$WORK"/step* "$WORK"/tiny.* "$WORK"/sim.* "$WORK"/*.log "$WORK/gpu_test_programs" "$WORK/env.sh"
mkdir -p "$RES" "$WORK/logs"
BUDGET=${GPU_BUDGET_S:-450}
DEADLINE=$(( $(date +%s) + BUDGET ))
run_stage setup 60
if [ -f "$WORK/env.sh" ]; then
	run_stage build 240
	if [ "${1:-}" != "--build-only" ]; then
		run_stage kernels 90
		run_stage tiny 60
		run_stage step 150
		run_stage sim 40
		run_stage profile 90
		run_stage nccl 30
	fi
fi
[ -f "$WORK/step_trace.json" ] && cp "$WORK/step_trace.json" "$LOG/"
failure_tails
table | tee "$LOG/summary.txt"
! grep -q 'FAIL$' "$LOG/summary.txt"
