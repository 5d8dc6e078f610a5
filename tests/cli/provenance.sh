#!/usr/bin/env bash
# Every efficiency parameter lives in a profile file with its provenance: each number a shipped
# hardware profile sets (profiles/hw/*.json) has an entry in its "sources" — under its own name,
# or under the name its family shares ("peak" for peak_bf16_tflops, "nccl" for nccl_channels) —
# and the entry names where the value comes from. A parameter that still has no measured source
# says so ("unsourced: " and why it has the value it has) and is listed here, by profile, so that
# a new one cannot slip in unnoticed and an old one leaves the list when its source is found
# (docs/accuracy.md keeps the same list). A profile with a base is checked as it loads: its
# base's numbers and sources under its own.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
python3 - profiles/hw/*.json >"$TMP/out" 2>&1 <<'PY'
import json, os, sys
# key -> the profiles ("*": all) where it has no measured source yet
UNSOURCED = {
    "comm_eff": "*", "step_overhead_ms": "*",
    "gemm_half_dim": {"a100-sxm-40g", "a100-sxm-80g", "mi300x"},
    "attn_eff": {"b200", "gb200-nvl72", "mi300x"},
}
SKIP = {"name", "base", "sources", "notes", "description", "network", "tables"}

def resolved(path):
    """the profile with its base's keys under its own, sources merged (sim/hw.c resolve_base)"""
    d = json.load(open(path))
    if "base" not in d:
        return d
    b = d["base"]
    found = [f for f in ("profiles/hw/%s.json" % b, "profiles/%s.json" % b, b) if os.path.isfile(f)]
    r = resolved(found[0])
    src = dict(r.get("sources", {}))
    for k, v in d.get("sources", {}).items():
        src.pop(k, None)
        if v is not None:
            src[k] = v
    r.update({k: v for k, v in d.items() if k not in ("base", "sources")})
    r["sources"] = src
    return r

bad = 0
for path in sys.argv[1:]:
    d = resolved(path)
    name = path.split("/")[-1][:-5]
    src = d.get("sources", {})
    for k in d:
        if k in SKIP:
            continue
        fam = [s for s in src if k == s or k.startswith(s + "_")]
        listed = k in UNSOURCED and (UNSOURCED[k] == "*" or name in UNSOURCED[k])
        text = src[max(fam, key=len)].strip() if fam else ""
        if listed != text.startswith("unsourced"):
            print("FAIL: %s: %s %s" % (name, k, "is on the unsourced list but its source does not say 'unsourced: why'"
                                       if listed else "says it is unsourced but is not on the list"))
            bad += 1
        elif not fam:
            print("FAIL: %s: %s has no entry in sources" % (name, k))
            bad += 1
        elif len(text) < 20:
            print("FAIL: %s: the source of %s says too little" % (name, k))
            bad += 1
        else:
            print("ok %s %s" % (name, k))
    if "network" in d and not any(s in src for s in ("network", "inter", "intra", "fabric")):
        print("FAIL: %s: network has no source" % name)
        bad += 1
sys.exit(1 if bad else 0)
PY
rc=$?
nfail=$(grep -c '^FAIL' "$TMP/out")
PASS=$((PASS + $(grep -c '^ok ' "$TMP/out"))); FAIL=$((FAIL + nfail))
grep '^FAIL' "$TMP/out"
# a check that stopped without naming a failure (a profile that does not parse) fails too
[ $rc -eq 0 ] || [ "$nfail" -gt 0 ] || bad "provenance check failed: $(head -c 300 "$TMP/out")"
summary
