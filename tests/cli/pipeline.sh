#!/usr/bin/env bash
# `scaleplan pipeline`: JSON keys and values from reference/model.md TV-ZB2 (p=4, m=8, unit
# times: 1F1B rate 3/11, fraction 3/8, cost 33), bad-input exit codes with one-line messages,
# and bubble diagrams that gnuplot renders to non-empty PNG and SVG files.
. "$(dirname "$0")/lib.sh"

expect_rc 0 "$SP" pipeline --help
expect_out 'usage: scaleplan pipeline'

expect_rc 0 "$SP" pipeline --schedule 1f1b --pp 4 --microbatches 8 --t-f 1 --t-b 1 --t-w 1 --json
for key in span bubble_rate bubble_fraction max_inflight rank_span rank_busy rank_bubble_fraction \
	   rank_bubble_rate rank_peak_inflight; do
	expect_out "\"$key\":"
done
expect_out '"span":33[,}]'
expect_out '"bubble_rate":0\.2727'
expect_out '"bubble_fraction":0\.375[,}]'
expect_out '"max_inflight":4[,}]'
expect_out '"rank_peak_inflight":\[4,3,2,1\]'

# TV-ZB2 ZB-H1 cost 27 and ZB-H2 24 (largest rank span), in the text table
expect_rc 0 "$SP" pipeline --schedule zb-h1 --pp 4 --microbatches 8 --t-f 1 --t-b 1 --t-w 1
expect_out 'largest rank span 27\)'
expect_rc 0 "$SP" pipeline --schedule zb-h2 --pp=4 --microbatches=8 --t-f=1 --t-b=1 --t-w=1 --json
# the paper's cost is the largest rank span (24); the diagram starts rank 3 three forwards
# later, so it runs 27
expect_out '"largest_rank_span":24[,}]'
expect_out '"span":27[,}]'

# the headline span is where the diagram (and the trace) ends; the headline bubble is the
# worst rank's own value, one of the per-rank values shown
expect_rc 0 "$SP" pipeline --schedule zb-v --pp 4 --microbatches 8 --t-f 1 --t-b 1 --t-w 1 --t-comm 0.5 --json --trace "$TMP/zbv.json"
python3 - "$TMP/out" "$TMP/zbv.json" <<'PY' && ok || bad "zb-v headline span = trace end, bubble = worst rank"
import json, sys
d = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
ev = [e for e in (t["traceEvents"] if isinstance(t, dict) else t) if e.get("ph") == "X"]
end = max(e["ts"] + e["dur"] for e in ev) - min(e["ts"] for e in ev)
assert abs(d["span"] * 1000 - end) < 1e-6 * end, (d["span"], end)
assert d["bubble_fraction"] == max(d["rank_bubble_fraction"]) and d["bubble_rate"] == max(d["rank_bubble_rate"])
PY

reject() { expect_rc 2 "$SP" pipeline "$@"; }
reject --schedule dualpipe --pp 3 --microbatches 12 --t-f 1 --t-b 1
expect_err_line 'dualpipe: pp \(3\) must be even'
reject --schedule dualpipe --pp 4 --microbatches 6 --t-f 1 --t-b 1
expect_err_line 'microbatches \(6\) must be at least 2\*pp \(8\)'
reject --schedule interleaved --pp 4 --microbatches 6 --vpp 2 --t-f 1 --t-b 1
expect_err_line 'pp \(4\) does not divide microbatches \(6\)'
reject --schedule 1f1b --pp 4 --microbatches 8 --vpp 3 --t-f 1 --t-b 1
expect_err_line 'vpp \(3\) applies only to the interleaved schedule'
reject --schedule 1f1b --pp four --microbatches 8 --t-f 1 --t-b 1
expect_err_line "--pp: 'four' is not an integer"
reject --schedule 1f1b --pp 4 --microbatches 8 --t-f -1 --t-b 1
expect_err_line '--t-f: -1 must not be negative'
reject --schedule 1f1b --pp 4 --microbatches 8 --t-f 1 --t-b 1 --t-comm x
expect_err_line "--t-comm: 'x' is not a number"
reject --schedule 1f1b --pp 4 --microbatches 0 --t-f 1 --t-b 1
expect_err_line '--microbatches: 0 is out of range'
reject --schedule warp --pp 4 --microbatches 8 --t-f 1 --t-b 1
expect_err_line "--schedule: unknown schedule 'warp'"
reject --schedule 1f1b --pp 4 --microbatches 8 --t-f 1
expect_err_line '--t-b is required'
reject --schedule 1f1b --pp 4 --microbatches 8 --t-f 1 --t-b 1 --frobnicate
expect_err_line "unknown option '--frobnicate'"
reject --schedule 1f1b --pp 4 --microbatches 8 --t-f 1 --t-b 1 --plot "$TMP/x.pdf"
expect_err_line 'must end in .png or .svg'

# diagrams: gnuplot must exit 0 and leave non-empty files
for f in zbv.png zbv.svg; do
	expect_rc 0 "$SP" pipeline --schedule zb-v --pp 4 --microbatches 8 --t-f 1 --t-b 1 --t-w 1 --t-comm 0.1 --plot "$TMP/$f"
	if [ -s "$TMP/$f" ]; then ok; else bad "$f missing or empty"; fi
done
if head -c 8 "$TMP/zbv.png" | grep -q PNG; then ok; else bad "not a PNG"; fi
if grep -q '<svg' "$TMP/zbv.svg"; then ok; else bad "not an SVG"; fi
# 64 ranks x 512 micro-batches: sampled rows, still renders
expect_rc 0 "$SP" pipeline --schedule 1f1b --pp 64 --microbatches 512 --t-f 1 --t-b 2 --t-comm 0.05 --json --plot "$TMP/big.svg" --trace "$TMP/big.json"
if [ -s "$TMP/big.svg" ] && grep -q 'showing 16 of 64 ranks' "$TMP/big.svg"; then ok; else bad "big.svg missing or not sampled"; fi
# the trace is JSON with complete events (parsed when python3 is there, else grepped)
if command -v python3 >/dev/null; then
	if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); x=[e for e in d['traceEvents'] if e['ph']=='X']; assert len(x) > 64*1024 and all('pid' in e and 'tid' in e and 'dur' in e for e in x)" "$TMP/big.json"; then ok; else bad "trace JSON"; fi
elif grep -q '"ph":"X"' "$TMP/big.json"; then ok; else bad "trace JSON"; fi

summary
