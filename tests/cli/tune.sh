# scaleplan tune: JSON shape, recording in the store, export of a stored finalist, db verbs,
# an impossible request (exit 3 with the closest plan and remedies), the report files and the
# pictures they link.
. "$(dirname "$0")/lib.sh"
DB="$TMP/t.db"
expect_rc 0 "$SP" tune --model llama-3-8b --gpu h100-sxm --gpus 8 --seq 4096 --gbs 32 --top 5 --db "$DB" --json
python3 - "$TMP/out" <<'PY' && ok || bad "tune --json shape"
import json, sys
d = json.load(open(sys.argv[1]))
keys = "dp tp pp cp ep vpp zero sp recompute mbs schedule step_time_s tokens_per_s_per_gpu mfu peak_mem_bytes fits".split()
assert len(d["plans"]) == 5 and all(k in p for p in d["plans"] for k in keys)
assert all(p["dp"] * p["tp"] * p["pp"] * p["cp"] == 8 and p["fits"] for p in d["plans"])
s = [p["tokens_per_s_per_gpu"] for p in d["plans"]]
assert s == sorted(s, reverse=True)
assert d["enumerated"] == d["feasible"] + sum(d["rejected"].values()) and d["plans_per_s"] > 0
PY
expect_rc 0 "$SP" tune --model llama-3-8b --gpu h100-sxm --gpus 8 --seq 8192 --gbs 16 --top 3 --db "$DB" --report "$TMP/rep"
expect_out '^enumerated [0-9]+ plans'
expect_out 'why #1 wins'
expect_out 'recorded as tune 2'
[ -s "$TMP/rep/report.md" ] && grep -q '| rank |' "$TMP/rep/report.md" && grep -q '<table>' "$TMP/rep/report.html" && ok || bad "report files"
# the report: inputs, ranking, why the winner wins, and pictures that exist (bubble and memory
# of the top 3, a comparison of the top 5 -- here the top 3 are all there is)
python3 - "$TMP/rep" <<'PY' && ok || bad "report pictures and sections"
import os, re, sys
d = sys.argv[1]
md = open(os.path.join(d, "report.md")).read(); html = open(os.path.join(d, "report.html")).read()
for sec in ("Inputs", "Ranked plans", "Why the winner wins", "Pictures"):
    assert "## " + sec in md and "<h2>" + sec + "</h2>" in html, sec
links_md = set(re.findall(r"\]\(([^)]+)\)", md))
links_html = set(re.findall(r'(?:src|href)="([^"]+)"', html))
want = {"bubble_1.svg", "bubble_2.svg", "bubble_3.svg", "memory_1.svg", "memory_2.svg", "memory_3.svg", "compare.svg"}
assert links_md == want and links_html == want, (links_md, links_html)
for f in want:
    p = os.path.join(d, f)
    assert os.path.getsize(p) > 0 and "<svg" in open(p).read(), f
assert "why #1 wins" in md and "best plan of each other shape" in html
PY
expect_rc 0 "$SP" db --db "$DB" list --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [t["id"] for t in d] == [1, 2] and d[0]["finalists"] == 5' "$TMP/out" && ok || bad "db list --json"
expect_rc 0 "$SP" db --db "$DB" show 1
expect_out '^ +1 +1 +'
expect_rc 0 "$SP" db --db "$DB" diff 1 2
expect_out 'request seq +4096 -> 8192'
expect_rc 0 "$SP" db --db "$DB" export --csv
[ "$(wc -l < "$TMP/out")" -eq 9 ] && ok || bad "export --csv: header + 8 finalists"
expect_rc 0 "$SP" export --db "$DB" --id 1 --format megatron
expect_out '^--tensor-model-parallel-size [0-9]+ \\$'
expect_rc 2 "$SP" export --db "$DB" --id 99 --format megatron
expect_err_line 'no finalist 99'
# 405B on 8 GPUs cannot fit: exit 3, the closest plan, what would make it fit
expect_rc 3 "$SP" tune --model llama-3.1-405b --gpu h100-sxm --gpus 8 --seq 4096 --gbs 8 --no-db
expect_out 'closest:'
expect_out 'GPUs \(dp [0-9]+, ZeRO-3, full recompute'
expect_rc 2 "$SP" tune --model llama-3-8b --gpu h100-sxm --gpus 8 --seq 4096
expect_err_line 'are required'
expect_rc 2 "$SP" tune --model llama-3-8b --gpu h100-sxm --gpus 8 --seq 4096 --gbs 8 --fix frob=1
expect_err_line "unknown key 'frob'"
summary
