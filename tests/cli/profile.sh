#!/usr/bin/env bash
# scaleplan profile: a CPU profile of 2 ranks (small limits, so it takes seconds) loads as a
# --gpu profile everywhere (sim uses its tables: another profile prices the same plan
# differently), records in the store; --backend cuda in this build (a CPU build: no such
# backend; a CUDA=1 build on a machine without a GPU: no device, before any NCCL or file),
# unknown backends and bad limits exit 2 with one line. tests/gpu/profile_check.sh checks
# --backend cuda where a GPU is.
. "$(dirname "$0")/lib.sh"
run_setup
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TMP"
LIM="--max-dim 128 --max-seq 64 --max-bytes 64K --min-time 0.002"

if "$SP" profile --help | grep -Eq 'built here: .*cuda'; then
	"$SP" profile --backend cuda -o gpu.json $LIM >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ $rc -eq 0 ]; then   # a GPU is visible: the profile says it is a cuda one
		python3 -c "import json; t = json.load(open('gpu.json'))['tables']; exit(not (t['backend'] == 'cuda' and t['dtype'] == 'bf16'))" \
			&& ok || bad "a cuda profile should record backend cuda, dtype bf16"
	else
		[ $rc -eq 2 ] && ok || bad "--backend cuda without a GPU: rc $rc (want 2)"
		expect_err_line 'backend cuda: rank 0 sees no cuda device'
		[ ! -e gpu.json ] && ok || bad "a refused profile wrote a file"
	fi
else
	expect_rc 2 "$SP" profile --backend cuda -o never.json
	expect_err_line 'backend cuda: this version has no cuda profiling backend yet \(it has: cpu\)'
	[ ! -e never.json ] && ok || bad "a refused profile wrote a file"
	"$SP" profile --help | grep -q 'built here: cpu$' && ok || bad "profile --help should say only cpu is built here"
fi
expect_rc 2 "$SP" profile --backend tpu
expect_err_line "'tpu' is not a backend"
expect_rc 2 "$SP" profile --max-dim 3
expect_err_line 'max-dim'

# under mpirun, and through --ranks (which starts mpirun itself)
expect_rc 0 $MPI -np 2 "$SP" profile --backend cpu -o p2.json --db prof.db $LIM
expect_out 'profile: wrote p2.json'
expect_rc 0 "$SP" profile --ranks 2 --backend cpu -o p2b.json --name cpu-two $LIM
python3 - p2.json p2b.json <<'PY' && ok || bad "profile JSON lacks its tables or fields"
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    t = d["tables"]
    assert d["network"][0]["gpus"] == 2 and t["ranks"] == 2 and t["backend"] == "cpu"
    assert len(t["gemm"]["m"]) >= 2 and len(t["gemm"]["tflops"]) == len(t["gemm"]["m"])
    assert t["attention"]["seq"][-1] == 64 and t["memory"]["gbps"]
    ops = {(c["op"], c["ranks"]) for c in t["collectives"]}
    assert ("all_reduce", 2) in ops and ("send_recv", 2) in ops, ops
    for c in t["collectives"]:   # nccl-tests busbw = S / t * factor
        f = {"all_reduce": 2 * (2 - 1) / 2}.get(c["op"], 1 if c["op"] == "send_recv" else 0.5)
        for s, us, bw in zip(c["bytes"], c["time_us"], c["busbw_gbps"]):
            assert abs(s / (us * 1e-6) * f / 1e9 - bw) <= 1e-3 * bw, (c["op"], s, us, bw)
assert json.load(open(sys.argv[2]))["name"] == "cpu-two"
PY
# one rank: tables of GEMM, attention and memory, none of collectives, and the notes say so
expect_rc 0 "$SP" profile --backend cpu -o p1.json $LIM
python3 - p1.json <<'PY' && ok || bad "a one-rank profile should have no collective table and say so"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["tables"]
assert t["ranks"] == 1 and t["gemm"]["tflops"] and t["attention"]["seq"] and t["memory"]["gbps"]
assert not t.get("collectives"), t.get("collectives")
assert "no collective table" in d["notes"] and "no collective table" in d["sources"]["fabric"]
PY
expect_rc 0 "$SP" sim --model tiny --gpus 1 --mbs 2 --gbs 4 --seq 32 --precision fp32 --gpu p1.json --json
# --fabric: a one-rank profile takes every network tier and NCCL's buffer sizes from the named
# profile (h200-sxm: NVLink 367 GB/s over 8 GPUs with NVLS 480, then a 46 GB/s network; 32
# channels of 9.19 MiB connections, 4 channels per network send/recv peer) instead of half its copy bandwidth, and says so
expect_rc 0 "$SP" profile --backend cpu --fabric h200-sxm -o pf.json $LIM
python3 - pf.json <<'PY' && ok || bad "--fabric should write h200-sxm's tiers and NCCL sizes"
import json, sys
d = json.load(open(sys.argv[1]))
n = d["network"]
assert [(t["gpus"], t["link"], t["busbw_gbps"]) for t in n] == [(8, "nvlink", 367), (0, "net", 46)], n
assert n[0]["nvls_busbw_gbps"] == 480, n
assert (d["nccl_channels"], d["nccl_p2p_net_channels"], d["nccl_conn_mib"]) == (32, 4, 9.19), d
assert "h200-sxm" in d["sources"]["fabric"], d["sources"]["fabric"]
# and the NVLink domain's measured collective (profiles/hw/h200-sxm.json: 8x H200 all_reduce,
# 1.44 GB/s at 32 KiB to 482.26 at 16 GiB)
c = d["nvlink_coll_curve"]
assert (c["op"], c["ranks"], c["mib"][0], c["busbw_gbps"][0], c["busbw_gbps"][-1]) == ("all_reduce", 8, 0.03125, 1.44, 482.26), c
assert "h200-sxm" in d["sources"]["nvlink_coll_curve"], d["sources"]
PY
expect_rc 0 "$SP" sim --model tiny --gpus 16 --tp 2 --mbs 2 --gbs 32 --seq 32 --precision fp32 --gpu pf.json --json
# a network tier's own per-hop latency goes with it (h100-sxm-efa: EFA's [20, 20, 23] µs)
expect_rc 0 "$SP" profile --backend cpu --fabric h100-sxm-efa -o pe.json $LIM
python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["network"]; sys.exit(0 if n[1].get("hop_us") == [20, 20, 23] and "hop_us" not in n[0] else 1)' pe.json \
	&& ok || bad "--fabric h100-sxm-efa should carry the EFA tier's hop_us: $(head -c 400 pe.json)"
# a profile with a base (h100-sxm-efa is h100-sxm with its own network): calibrate writes it
# whole, the base resolved, so that the file stands alone; its fitted field, the base's fields
# and the child's tier are all in it
awk -F'\t' 'BEGIN{OFS="\t"} /^#/ {print; next} !h {for (i = 1; i <= NF; i++) if ($i == "gpu") g = i; h = 1; print; next}
	$g == "h100-sxm" && n < 3 {$g = "h100-sxm-efa"; n++; print}' "$ROOT/tests/data/published_calibration.tsv" > efa.tsv
expect_rc 0 "$SP" calibrate efa.tsv --gpu h100-sxm-efa --params comm_eff -o efa-cal.json
python3 - efa-cal.json <<'PY' && ok || bad "calibrate of a child profile should write it whole: $(head -c 300 efa-cal.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert "base" not in d and d["name"] == "h100-sxm-efa", d.get("name")
assert d["network"][1]["hop_us"] == [20, 20, 23] and d["gemm_eff"] == 0.803 and "calibrated" in d["sources"], d
assert "inter" not in d["sources"] and "EFA" in d["sources"]["network"], d["sources"]
PY
expect_rc 0 "$SP" sim --model tiny --gpus 16 --tp 2 --mbs 2 --gbs 32 --seq 32 --precision fp32 --gpu efa-cal.json
expect_rc 2 "$SP" profile --backend cpu --fabric no-such-gpu -o pg.json $LIM
expect_err_line "--fabric: .*no-such-gpu"
[ ! -e pg.json ] && ok || bad "a refused --fabric wrote a profile"
python3 -c "import sqlite3; n = sqlite3.connect('prof.db').execute('select count(*) from profiles where ranks = 2').fetchone()[0]; exit(n != 1)" \
	&& ok || bad "profile not recorded in prof.db"

# the profile drives sim: its tables, not h100's figures, price the plan
PLAN="--model tiny --gpus 2 --tp 2 --mbs 2 --gbs 8 --seq 32 --precision fp32"
expect_rc 0 "$SP" sim $PLAN --gpu p2.json --json
# the compute of an 8B plan (whether or not it fits: sim exits 3 then, with the estimate)
BIG="--model llama-3-8b --gpus 2 --tp 2 --mbs 1 --gbs 2 --seq 1024 --precision fp32 --json"
"$SP" sim $BIG --gpu p2.json > big_p2.json 2>/dev/null; "$SP" sim $BIG --gpu h100-sxm > big_h100.json 2>/dev/null
python3 -c "
import json
a = json.load(open('big_p2.json'))['rank_kinds'][0]['time']['compute_s']
b = json.load(open('big_h100.json'))['rank_kinds'][0]['time']['compute_s']
exit(not (a > 100 * b))" && ok || bad "a CPU profile should price 8B compute far slower than an H100"
expect_rc 0 "$SP" sim $PLAN --gpu p2.json --engine event
# a profile with a broken table is refused with the field named
python3 -c "
import json; d = json.load(open('p2.json')); d['tables']['gemm']['m'][0] = -1; json.dump(d, open('bad.json', 'w'))"
expect_rc 2 "$SP" sim $PLAN --gpu bad.json
expect_err_line 'tables: gemm.m entries must be positive'
summary
