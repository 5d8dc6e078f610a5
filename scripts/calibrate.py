#!/usr/bin/env python3
"""calibrate — the accuracy loop of the analytical model against measured runs.

Runs `scaleplan validate FILE --json` on measured-run files (shared/validation/FORMAT.md),
joins every predicted row with the plan columns of its TSV row, and prints the signed
throughput error (pred/meas - 1, percent) and memory error grouped by the features that
decide which physics is missing: source, framework-ish source, tp/pp/dp/cp degrees, nodes,
sequence length, ZeRO stage, recompute, micro-batch, schedule. Per group: rows, mean signed
error, MAPE. Then the ranking groups (model, gpu, gpus, seq, batch) with their Spearman and
which plan the model picks vs the measured best.

Usage:
  scripts/calibrate.py [--bin ./scaleplan] [--rows] [--by KEY ...] [FILE.tsv ...]
Default files: every .tsv in ../shared/validation or /work/shared/validation.
  --rows     print every row (id, plan, pred, meas, error), worst first
  --by KEY   only these groupings (KEY: source, tp, pp, dp, cp, nodes, seq, zero, recompute,
             mbs, sched, gpu, prefix, status)
Python 3 standard library only. Percent everywhere; tokens/s per GPU; GiB.
"""
import json
import os
import subprocess
import sys
from collections import defaultdict


def playbook_args(argv, name):
    """(binary, path) of a Playbook script's command line: [--bin ./scaleplan] [FILE.tsv], the
    file defaulting to playbook_8b.tsv in ../shared/validation or /work/shared/validation"""
    binary = "./scaleplan"
    if "--bin" in argv:
        i = argv.index("--bin")
        binary = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    path = argv[0] if argv else next((p for p in ("../shared/validation/playbook_8b.tsv",
                                                  "/work/shared/validation/playbook_8b.tsv")
                                      if os.path.exists(p)), None)
    if not path:
        sys.exit("%s: no playbook_8b.tsv found; give its path" % name)
    return binary, path


def read_tsv(path):
    rows = {}
    header = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if header is None:
                if line.startswith("#"):
                    continue
                header = line.split("\t")
                continue
            cells = line.split("\t")
            rows[cells[0]] = dict(zip(header, cells))
    return rows


def features(t):
    gpn = int(t.get("gpus_per_node") or 8)
    n = int(t["num_gpus"])
    notes = t.get("notes", "")
    return {
        "source": t["source"][:34],
        "gpu": t["gpu"],
        "tp": t["tp"], "pp": t["pp"], "dp": t["dp"], "cp": t["cp"],
        "nodes": str((n + gpn - 1) // gpn),
        "seq": t["seq_len"],
        "zero": t.get("zero") or "?",
        "recompute": t.get("recompute") or "?",
        "mbs": t.get("micro_batch") or "?",
        "sched": t.get("pp_schedule") or "?",
        "status": t["status"],
        "prefix": "prefix" if "BEFORE nanotron" in notes else "postfix",
    }


def plan_str(t):
    return "tp%s pp%s dp%s cp%s z%s mb%s %s %s n%s s%s" % (
        t["tp"], t["pp"], t["dp"], t["cp"], t.get("zero") or "?", t.get("micro_batch") or "?",
        (t.get("recompute") or "?")[:4], t.get("precision") or "?", t["num_gpus"], t["seq_len"])


def run_validate(binary, path):
    out = subprocess.run([binary, "validate", path, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("validate %s failed: %s" % (path, out.stderr.strip()))
    return json.loads(out.stdout)


def spearman(x, y):
    def ranks(v):
        return [sum(a < b for a in v) + (sum(a == b for a in v) + 1) / 2 for b in v]
    rx, ry = ranks(x), ranks(y)
    n = len(x)
    mx, my = sum(rx) / n, sum(ry) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else 0.0


def main(argv):
    binary = "./scaleplan"
    files, bys, show_rows = [], [], False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--bin":
            binary = argv[i + 1]; i += 1
        elif a == "--by":
            bys.append(argv[i + 1]); i += 1
        elif a == "--rows":
            show_rows = True
        else:
            files.append(a)
        i += 1
    if not files:
        for d in ("../shared/validation", "/work/shared/validation"):
            if os.path.isdir(d):
                files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".tsv"))
                break
    keys = bys or ["source", "prefix", "tp", "pp", "dp", "cp", "nodes", "seq", "zero", "recompute", "mbs"]
    for path in files:
        d = run_validate(binary, path)
        tsv = read_tsv(path)
        print("== %s: tput MAPE %.1f%% median %.1f%% | mem MAPE %.1f%% | fit %.1f%% | spearman %.3f | regret %.1f%%"
              % (os.path.basename(path), 100 * d["throughput_mape"], 100 * d["throughput_median_ape"],
                 100 * d["memory_mape"], 100 * d["fit_accuracy"], d["rank_spearman"], 100 * d["top1_regret"]))
        res = []
        allape = []
        for r in d["results"]:
            if r["status"] == "ok" and "meas_tokens_per_s_per_gpu" in r and "pred_tokens_per_s_per_gpu" in r:
                allape.append(abs(r["pred_tokens_per_s_per_gpu"] / r["meas_tokens_per_s_per_gpu"] - 1))
            if not r["simulated"]:
                continue
            t = tsv[r["id"]]
            e = None
            if r["status"] == "ok" and "meas_tokens_per_s_per_gpu" in r:
                e = 100 * (r["pred_tokens_per_s_per_gpu"] / r["meas_tokens_per_s_per_gpu"] - 1)
            me = None
            if r["status"] == "ok" and "meas_mem_gib" in r:
                me = 100 * (r["pred_mem_gib"] / r["meas_mem_gib"] - 1)
            res.append((r, t, features(t), e, me))
        if d.get("excluded"):
            print("   (%d rows predicted but excluded from the scores; tput MAPE over every predicted ok row: %.1f%%)"
                  % (d["excluded"], 100 * sum(allape) / max(1, len(allape))))
        for key in keys:
            g = defaultdict(list)
            for r, t, f, e, me in res:
                g[f[key]].append((e, me, r, t))
            print("-- by %s" % key)
            def sortkey(k):
                return (0, int(k)) if k.isdigit() else (1, k)
            for k in sorted(g, key=sortkey):
                es = [x[0] for x in g[k] if x[0] is not None]
                ms = [x[1] for x in g[k] if x[1] is not None]
                fit = [x[2]["pred_fits"] == (x[2]["status"] == "ok") for x in g[k] if x[2]["status"] in ("ok", "oom")]
                line = "  %-36s n=%4d" % (k, len(g[k]))
                if es:
                    line += "  tput signed %+7.1f%%  MAPE %6.1f%%" % (sum(es) / len(es), sum(abs(x) for x in es) / len(es))
                if ms:
                    line += "  mem signed %+6.1f%%" % (sum(ms) / len(ms))
                if fit:
                    line += "  fit %5.1f%%" % (100 * sum(fit) / len(fit))
                print(line)
        # ranking groups as validate forms them
        groups = defaultdict(list)
        for r, t, f, e, me in res:
            groups[(t["model"], t["gpu"], t["num_gpus"], t["seq_len"], t["global_batch_seqs"])].append((r, t, e))
        print("-- ranking groups (>= 3 ok rows)")
        for k, v in groups.items():
            ok = [x for x in v if x[2] is not None]
            if len(ok) < 3:
                continue
            rho = spearman([x[0]["pred_tokens_per_s_per_gpu"] for x in ok], [x[0]["meas_tokens_per_s_per_gpu"] for x in ok])
            best = max(ok, key=lambda x: x[0]["meas_tokens_per_s_per_gpu"])
            cand = [x for x in v if x[0]["status"] in ("ok", "oom") and x[0]["pred_fits"]]
            pick = max(cand, key=lambda x: x[0]["pred_tokens_per_s_per_gpu"]) if cand else None
            reg = 1.0
            if pick and pick[0]["status"] == "ok" and "meas_tokens_per_s_per_gpu" in pick[0]:
                reg = 1 - pick[0]["meas_tokens_per_s_per_gpu"] / best[0]["meas_tokens_per_s_per_gpu"]
            print("  %s gpus=%s n=%d rho=%.3f regret=%.1f%%" % (k[0][:24], k[2], len(ok), rho, 100 * reg))
            print("     best meas %-8s %-44s meas %7.0f pred %7.0f" % (best[0]["id"], plan_str(best[1]),
                  best[0]["meas_tokens_per_s_per_gpu"], best[0]["pred_tokens_per_s_per_gpu"]))
            if pick:
                print("     picked    %-8s %-44s meas %7s pred %7.0f (%s)" % (pick[0]["id"], plan_str(pick[1]),
                      "%.0f" % pick[0]["meas_tokens_per_s_per_gpu"] if "meas_tokens_per_s_per_gpu" in pick[0] else "-",
                      pick[0]["pred_tokens_per_s_per_gpu"], pick[0]["status"]))
        if show_rows:
            print("-- rows, worst throughput error first")
            for r, t, f, e, me in sorted(res, key=lambda x: -abs(x[3]) if x[3] is not None else 0):
                print("  %-8s %-6s %-50s pred %8.0f meas %8s err %7s | mem pred %5.1f meas %5s %s | %s" % (
                    r["id"], r["status"], plan_str(t), r["pred_tokens_per_s_per_gpu"],
                    "%.0f" % r["meas_tokens_per_s_per_gpu"] if "meas_tokens_per_s_per_gpu" in r else "-",
                    "%+.1f" % e if e is not None else "-", r["pred_mem_gib"],
                    "%.1f" % r["meas_mem_gib"] if "meas_mem_gib" in r else "-",
                    "fits" if r["pred_fits"] else "OOM", t["source"][:20] + " " + f["prefix"]))


if __name__ == "__main__":
    main(sys.argv[1:])
