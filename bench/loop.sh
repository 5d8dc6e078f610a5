#!/usr/bin/env bash
# `make bench-loop` (part of `make bench`): the loop simulate -> run -> record -> recalibrate ->
# simulate better, on this machine's CPU ranks (one MPI rank per "GPU", NP of them; a 2-core VM
# runs 4 ranks oversubscribed). Prints "bench <name> <value> <unit>" lines and, per plan,
# measured against predicted. Not a test: the figures are what this machine did today.
#   1. scaleplan profile with NP ranks -> a hardware profile with measured tables;
#   2. the CALIBRATION plans (at most 3) run for real, recorded in a store;
#   3. scaleplan calibrate on them -> the calibrated profile, its cross-validated error;
#   4. the EVALUATION plans (dp·pp, tp·pp, cp, ep; 1f1b, zb-h1, interleaved) run for real and
#      are predicted with the calibrated profile (analytical model and event engine) and from
#      the trace of one calibration run (sim --op-times, trace-driven);
#   5. tune --bench-top 4 on the same problem: does the plan it ranks first measure fastest?
# Environment: SCALEPLAN (binary), LOOP_DIR (outputs, default build/bench-loop), NP (4),
# STEPS (steps per run, first one warm-up; default 6).
set -u
SP=${SCALEPLAN:-./scaleplan}
D=${LOOP_DIR:-build/bench-loop}
NP=${NP:-4}
STEPS=${STEPS:-6}
M=bench/loop-moe.json
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}  # one core's worth of BLAS per rank, as profiled
MPI="mpirun --oversubscribe -np $NP"
# CPU ranks make MPI progress only inside MPI calls: no communication overlaps compute
COMMON="--model $M --gpus $NP --mbs 2 --gbs 16 --seq 128 --precision fp32 --overlap-grad-reduce 0 --overlap-param-gather 0"
CAL=("--dp 4" "--tp 2 --pp 2 --schedule 1f1b" "--cp 2 --dp 2")
EVAL=("--dp 2 --pp 2 --schedule 1f1b" "--dp 2 --pp 2 --schedule zb-h1" "--tp 2 --pp 2 --schedule zb-h1"
      "--pp 4 --schedule interleaved --vpp 2" "--dp 2 --pp 2 --schedule interleaved --vpp 2" "--dp 2 --tp 2"
      "--cp 4" "--tp 2 --cp 2" "--dp 4 --ep 4" "--dp 4 --ep 2" "--pp 4 --schedule 1f1b" "--cp 2 --pp 2 --schedule 1f1b")
rm -rf "$D" && mkdir -p "$D" || exit 1
host=$(hostname)
echo "# loop bench on $host, $(nproc) cores, $NP ranks, $(date -u +%Y-%m-%dT%H:%MZ); model $M"

t0=$(date +%s)
"$SP" profile --ranks "$NP" -o "$D/profile.json" --max-dim 1024 --max-seq 256 --max-bytes 16M --db "$D/loop.db" >"$D/profile.out" 2>&1 \
	|| { cat "$D/profile.out"; echo "bench loop: profile failed" >&2; exit 1; }
echo "bench loop_profile_s $(( $(date +%s) - t0 )) s"
grep '^profile: [0-9]' "$D/profile.out" | sed 's/^/# /'

# run PLAN DB TRACE: one run of STEPS steps; prints its median step after the first, or "fail"
run() {
	local out="$D/run.$RANDOM.out"
	if $MPI "$SP" run $COMMON $1 --gpu "$D/profile.json" --steps "$STEPS" --json --db "$2" ${3:+--trace "$3"} >"$out" 2>"$out.err"; then
		python3 - "$out" <<'PY'
import json, sys
# one object per step, then the summary object (no step_time_s of its own)
t = [d["step_time_s"] for d in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")) if "step_time_s" in d][1:]
t.sort()
n = len(t)
print(t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2]))
PY
	else
		echo fail
		grep '^scaleplan' "$out.err" | head -n 2 >&2
	fi
}
# pred PLAN PROFILE [ARGS]: the step time sim predicts
pred() {
	"$SP" sim $COMMON $1 --gpu "$2" --json "${@:3}" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['step_time_s'])" 2>/dev/null || echo fail
}

for i in "${!CAL[@]}"; do
	m=$(run "${CAL[$i]}" "$D/cal.db" "$D/trace.cal$i.json")
	echo "# calibration run $((i + 1)): ${CAL[$i]}: $m s"
done
"$SP" calibrate --db "$D/cal.db" --gpu "$D/profile.json" -o "$D/calibrated.json" >"$D/calibrate.out" 2>&1 \
	|| { cat "$D/calibrate.out"; echo "bench loop: calibrate failed" >&2; exit 1; }
sed 's/^/# /' "$D/calibrate.out"
"$SP" calibrate --db "$D/cal.db" --gpu "$D/profile.json" --json >"$D/calibrate.json" 2>/dev/null
python3 - "$D/calibrate.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("error_before", "error_after", "cv_error"):
    v = d.get(k)
    print(f"bench loop_calibrate_{k} {100 * v:.1f} %" if v is not None else f"bench loop_calibrate_{k} n/a")
PY

printf '# %-44s %9s %9s %9s %9s %9s %9s\n' "evaluation plan" "meas s" "profile" "calib." "event" "trace" "err"
: >"$D/eval.tsv"
for p in "${EVAL[@]}"; do
	m=$(run "$p" "$D/eval.db")
	a=$(pred "$p" "$D/profile.json")
	c=$(pred "$p" "$D/calibrated.json")
	e=$(pred "$p" "$D/calibrated.json" --engine event)
	t=$(pred "$p" "$D/calibrated.json" --op-times "$D/trace.cal1.json")
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$m" "$a" "$c" "$e" "$t" >>"$D/eval.tsv"
	python3 - "$p" "$m" "$a" "$c" "$e" "$t" <<'PY'
import sys
p, *v = sys.argv[1:]
f = lambda x: f"{float(x):9.3f}" if x != "fail" else "     fail"
err = f"{100 * (float(v[2]) / float(v[0]) - 1):+8.1f}%" if "fail" not in (v[0], v[2]) else "      -"
print(f"# {p:<44s} " + " ".join(f(x) for x in v) + " " + err)
PY
done
python3 - "$D/eval.tsv" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
ok = [r for r in rows if r[1] != "fail"]
print(f"bench loop_eval_plans_measured {len(ok)} of {len(rows)}")
for col, name in ((2, "profile"), (3, "calibrated"), (4, "calibrated_event"), (5, "trace")):
    e = [abs(float(r[col]) / float(r[1]) - 1) for r in ok if r[col] != "fail"]
    if not e:
        continue
    print(f"bench loop_eval_mape_{name} {100 * sum(e) / len(e):.1f} %")
    print(f"bench loop_eval_within_15pct_{name} {sum(x <= 0.15 for x in e)} of {len(e)}")
    print(f"bench loop_eval_within_5pct_{name} {sum(x <= 0.05 for x in e)} of {len(e)}")
PY

# the tuner on the same problem, benchmarking its 4 best distinct plans; ZeRO 1, since the
# CPU runtime runs ZeRO-3 neither with a pipeline nor with expert parallelism (its top plans
# would be refused, recorded as crashed, and leave nothing to compare)
"$SP" tune --model "$M" --gpu "$D/calibrated.json" --gpus "$NP" --seq 128 --gbs 16 --fix precision=fp32 \
	--fix overlap_grad_reduce=0 --fix overlap_param_gather=0 --fix zero=1 --top 12 --bench-top 4 --bench-steps "$STEPS" \
	--db "$D/tune.db" >"$D/tune.out" 2>"$D/tune.err"
sed -n '/^benchmarks, ranked/,$p' "$D/tune.out" | sed 's/^/# /'
"$SP" db --db "$D/tune.db" show 1 --json >"$D/tune.json" 2>/dev/null
python3 - "$D/tune.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("bench loop_tune_benchmarked 0 plans"); sys.exit(0)
b = [f for f in d["finalists"] if "bench_status" in f]
ok = [f for f in b if f["bench_status"] == "ok"]
print(f"bench loop_tune_benchmarked {len(b)} plans, {len(ok)} ok")
if ok:
    best = max(ok, key=lambda f: f["measured_tokens_per_s_per_gpu"])
    first = min(ok, key=lambda f: f["rank"])
    print(f"bench loop_tune_pick_is_fastest {int(best['finalist_id'] == first['finalist_id'])} (1 = the best-ranked plan that ran measured fastest; rank {first['rank']})")
    print(f"bench loop_tune_regret {100 * (1 - first['measured_tokens_per_s_per_gpu'] / best['measured_tokens_per_s_per_gpu']):.1f} %")
PY
