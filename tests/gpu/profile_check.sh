#!/usr/bin/env bash
# tests/gpu/profile_check.sh — the GPU check of `scaleplan profile --backend cuda` on one GPU:
# a profile with small limits (GEMMs to 4096, attention of 16 heads of 128 to 1024 tokens,
# passes to 64 MiB; about a minute at most) must load, record backend cuda, dtype bf16 and the
# device, hold GEMM, attention and memory tables and no collective table (one rank, as its notes
# say); its best GEMM must lie between 30 % and 100 % of the dense bf16 peak that the device's
# hardware profile (profiles/hw) names, its attention throughput be positive at every length,
# its memory bandwidths at the largest size (past the L2 cache) stay under the hardware
# profile's HBM bandwidth (bytes counted once each: a count too high would exceed it); then `sim --gpu` on it predicts a ~1B-parameter step.
# One line per check ("pass NAME: ..." or "FAIL NAME: ..."), then "N passed, N failed"; the
# exit status is 0 only when every check passed.
#
# Usage: tests/gpu/profile_check.sh [BINARY]
#   BINARY  a CUDA=1 build (default $SCALEPLAN, else build-nompi-cuda/scaleplan, else
#           build-cuda/scaleplan); the environment (LD_LIBRARY_PATH for NCCL and cuDNN) is the
#           caller's. $PY is the Python (default python3); $PROFILE_CHECK_DIR keeps the files
#           (default: a temporary folder, removed at exit); $PROFILE_TIMEOUT_S (default 120).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
PY=${PY:-python3}
BIN=${1:-${SCALEPLAN:-}}
if [ -z "$BIN" ]; then
	for b in build-nompi-cuda/scaleplan build-cuda/scaleplan; do [ -x "$b" ] && { BIN=$ROOT/$b; break; }; done
fi
if [ -n "${PROFILE_CHECK_DIR:-}" ]; then W=$PROFILE_CHECK_DIR; mkdir -p "$W"
else W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; fi
PASS=0 FAIL=0
pass() { PASS=$((PASS + 1)); echo "pass $1: $2"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $1: $2"; }
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; exit $?; }

if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then fail binary "no CUDA=1 build (give BINARY or make CUDA=1)"; finish; fi
if "$BIN" profile --help 2>/dev/null | grep -Eq 'built here: .*cuda'; then pass binary "$BIN has the cuda profiling backend"
else fail binary "$BIN has no cuda profiling backend (not a CUDA=1 build)"; finish; fi

LIM="--max-dim 4096 --max-seq 1024 --heads 16 --head-dim 128 --max-bytes 64M --min-time 0.005"
t0=$(date +%s)
timeout "${PROFILE_TIMEOUT_S:-120}" "$BIN" profile --backend cuda $LIM -o "$W/profile.json" >"$W/profile.out" 2>"$W/profile.err"
rc=$?
if [ $rc -eq 0 ] && [ -s "$W/profile.json" ]; then
	pass profile "rc 0 in $(( $(date +%s) - t0 )) s: $(grep -E '^profile: [0-9]' "$W/profile.out" | head -n 1)"
else
	fail profile "rc $rc: $(tail -n 3 "$W/profile.err" | tr '\n' ' ' | cut -c1-300)"; finish
fi

# the JSON checks, one line each; the hardware profile is found by the device's name
"$PY" - "$W/profile.json" "$ROOT/profiles/hw" >"$W/json.out" 2>&1 <<'EOF'
import json, os, sys
d = json.load(open(sys.argv[1]))
hwdir = sys.argv[2]
t = d.get("tables", {})
def line(ok, name, detail):
    print("%s %s: %s" % ("pass" if ok else "FAIL", name, detail))
line(t.get("backend") == "cuda" and t.get("dtype") == "bf16", "record",
     "backend %s, dtype %s, ranks %s" % (t.get("backend"), t.get("dtype"), t.get("ranks")))
dev = d.get("sources", {}).get("device", "")
line(bool(dev) and not dev.startswith("unknown"), "device", dev or "no sources.device")
g = t.get("gemm", {})
tf = [x for plane in g.get("tflops", []) for row in plane for x in row]
ok = len(g.get("m", [])) >= 2 and len(tf) == len(g["m"]) * len(g.get("n", [])) * len(g.get("k", [])) and all(x > 0 for x in tf)
line(ok, "gemm table", "%d x %d x %d shapes up to %s" % (len(g.get("m", [])), len(g.get("n", [])), len(g.get("k", [])),
                                                         (g.get("m") or ["?"])[-1]))
a = t.get("attention", {})
fwd, bwd = a.get("fwd_tflops", []), a.get("bwd_tflops", [])
line(len(a.get("seq", [])) >= 2 and a["seq"][-1] == 1024 and a.get("head_dim") == 128 and len(fwd) == len(bwd) == len(a["seq"]),
     "attention table", "seq %s, head_dim %s" % (a.get("seq"), a.get("head_dim")))
line(bool(fwd) and all(x > 0 for x in fwd + bwd), "attention throughput",
     "forward %.1f, backward %.1f TFLOP/s at %s tokens" % (fwd[-1] if fwd else 0, bwd[-1] if bwd else 0, (a.get("seq") or ["?"])[-1]))
m = t.get("memory", {})
line(len(m.get("gbps", [])) >= 2 and all(x > 0 for x in m["gbps"]), "memory table",
     "%d sizes, %.0f GB/s at %.3g bytes" % (len(m.get("gbps", [])), (m.get("gbps") or [0])[-1], (m.get("bytes") or [0])[-1]))
line(not t.get("collectives") and "no collective table" in d.get("notes", ""), "no collectives",
     "one rank: %d collective curves; notes: %s" % (len(t.get("collectives") or []), d.get("notes", "")[:60]))
# the device's hardware profile, by name (the datasheet peak and HBM bandwidth)
name = dev.lower()
hw = None
for key, f in (("h200", "h200-sxm"), ("h100", "h100-sxm"), ("h800", "h800"), ("b200", "b200"),
               ("a100-sxm4-40gb", "a100-sxm-40g"), ("a100", "a100-sxm-80g")):
    if key in name:
        hw = json.load(open(os.path.join(hwdir, f + ".json")))
        break
if hw is None:
    line(False, "gemm peak", "no profiles/hw file names the device '%s'" % dev)
    sys.exit(0)
peak, meas = hw["peak_bf16_tflops"], d["peak_bf16_tflops"]
frac = meas / peak
line(0.30 <= frac <= 1.0, "gemm peak", "%.1f TFLOP/s = %.1f %% of %s's %g (target 30-100 %%)" % (meas, 100 * frac, hw["name"], peak))
# at the largest size only: its working set (64 MiB buffers) is past the L2 cache, smaller
# passes may run from it faster than HBM allows
bw = hw["hbm_bw_gbps"]
elem = (m.get("gbps") or [0])[-1]
top = max(elem, d.get("hbm_bw_gbps", 0))
line(0 < top <= 1.0 * bw, "memory bandwidth",
     "largest pass: element-wise %.0f GB/s, profile hbm_bw %.0f GB/s <= %s's HBM %g GB/s" % (elem, d.get("hbm_bw_gbps", 0), hw["name"], bw))
EOF
while IFS= read -r l; do
	case "$l" in
	"pass "*) PASS=$((PASS + 1)); echo "$l";;
	"FAIL "*) FAIL=$((FAIL + 1)); echo "$l";;
	*) echo "# $l";;
	esac
done <"$W/json.out"
grep -Eq '^(pass|FAIL) ' "$W/json.out" || fail json "the JSON checks did not run: $(tail -n 2 "$W/json.out" | tr '\n' ' ')"

# a ~1B-parameter Llama-style step (tests/gpu/run.sh's) predicted from the profile alone, and
# from the device's named profile beside it
PLAN="--model tests/gpu/llama-3.2-1b.json --gpus 1 --seq 4096 --mbs 2 --gbs 16"
"$BIN" sim $PLAN --gpu "$W/profile.json" --json >"$W/sim.json" 2>"$W/sim.err"
rc=$?
step=$("$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['step_time_s'])" "$W/sim.json" 2>/dev/null)
if [ $rc -eq 0 ] && [ -n "$step" ] && awk -v s="$step" 'BEGIN{exit !(s > 0)}'; then
	pass "sim --gpu" "1B step at seq 4096 predicted $(printf '%.3f' "$step") s from the measured profile"
else
	fail "sim --gpu" "rc $rc, step '${step}': $(tail -n 2 "$W/sim.err" | tr '\n' ' ' | cut -c1-300)"
fi
"$BIN" sim $PLAN --gpu "$W/profile.json" --engine event --json >"$W/sim_event.json" 2>"$W/sim_event.err" \
	&& pass "sim --engine event" "the event engine takes the profile too" \
	|| fail "sim --engine event" "$(tail -n 2 "$W/sim_event.err" | tr '\n' ' ' | cut -c1-300)"
finish
