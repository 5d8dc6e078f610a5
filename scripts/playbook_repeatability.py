#!/usr/bin/env python3
"""playbook_repeatability — how much of the Playbook's ranking its own runs repeat
(docs/accuracy.md, "Twenty-eighth pass").

The Playbook holds no run measured twice, but many plans were run at ZeRO-0 and at ZeRO-1 with
every other degree, the micro-batch and the schedule the same. For nanotron at these sizes the
two differ by a reduce-scatter and an all-gather in place of one all-reduce of the same bytes,
and an optimizer step over a shard: a few per cent of a step at most. So a pair's two
measurements show how far one plan's throughput moves from run to run on that cluster.

Within each of validate's groups (model, GPU, GPU count, sequence, global batch; scored rows
only, as `validate` scores them), the model's Spearman over every row, and for the rows that
have such a twin:
- the Spearman rank correlation of the model's predictions with the measurements;
- the same of the twin's measurement with the measurement: what a predictor that gives both
  ZeRO stages of a plan the same value, and is otherwise perfect, would reach;
- the median and largest ratio between the two measurements of a pair.
Then the mean over groups, as validate averages its Spearman. A group where the twin's own
Spearman is low is one whose order no plan-level model can follow.

Usage:
  scripts/playbook_repeatability.py [--bin ./scaleplan] [FILE.tsv]
Default file: playbook_8b.tsv in ../shared/validation or /work/shared/validation.
Python 3 standard library only.
"""
import json
import subprocess
import sys
from collections import defaultdict

from calibrate import playbook_args, read_tsv, spearman

GROUP = ("model", "gpu", "num_gpus", "seq_len", "global_batch_seqs")
PLAN = ("tp", "pp", "dp", "cp", "ep", "vpp", "sp", "micro_batch", "recompute", "pp_schedule", "precision")


def median(v):
    s = sorted(v)
    n = len(s)
    return (s[n // 2] + s[(n - 1) // 2]) / 2


def main(argv):
    binary, path = playbook_args(argv, "playbook_repeatability")
    tsv = read_tsv(path)
    out = subprocess.run([binary, "validate", path, "--json"], check=True, capture_output=True, text=True).stdout
    res = {r["id"]: r for r in json.loads(out)["results"]}
    groups = defaultdict(lambda: defaultdict(list))
    for rid, row in tsv.items():
        r = res.get(rid)
        if row["status"] != "ok" or not r or not r.get("simulated") or not row["tokens_per_s_per_gpu"]:
            continue
        g = tuple(row[k] for k in GROUP)
        groups[g][tuple(row[k] for k in PLAN)].append((float(row["tokens_per_s_per_gpu"]), r["pred_tokens_per_s_per_gpu"]))
    print("%6s %5s %9s %7s  %9s %9s  %12s %9s" % ("GPUs", "rows", "model all", "twinned", "model", "twin",
                                                 "ratio median", "largest"))
    sum_all = sum_model = sum_twin = 0
    n = 0
    for g, plans in sorted(groups.items(), key=lambda kv: int(kv[0][2])):
        meas, pred, twin, ratios = [], [], [], []
        for runs in plans.values():
            if len(runs) < 2:
                continue
            for i, (m, p) in enumerate(runs):
                others = [o for j, (o, _) in enumerate(runs) if j != i]
                meas.append(m)
                pred.append(p)
                twin.append(sum(others) / len(others))
            ms = [m for m, _ in runs]
            ratios.append(max(ms) / min(ms))
        every = [run for runs in plans.values() for run in runs]
        ra = spearman([p for _, p in every], [m for m, _ in every])
        if len(meas) < 3:
            print("%6s %5d %9.3f %7d  (fewer than 3 twinned rows)" % (g[2], len(every), ra, len(meas)))
            continue
        rm, rt = spearman(pred, meas), spearman(twin, meas)
        sum_all += ra
        sum_model += rm
        sum_twin += rt
        n += 1
        print("%6s %5d %9.3f %7d  %9.3f %9.3f  %12.2f %9.2f" % (g[2], len(every), ra, len(meas), rm, rt,
                                                             median(ratios), max(ratios)))
    if n:
        print("mean over %d groups: model %.3f on every row; on the twinned rows model %.3f, twin %.3f"
              % (n, sum_all / n, sum_model / n, sum_twin / n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
