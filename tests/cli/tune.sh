# scaleplan tune: JSON shape, recording in the store, export of a stored finalist, db verbs,
# an impossible request (exit 3 with the closest plan and remedies), the report files.
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
