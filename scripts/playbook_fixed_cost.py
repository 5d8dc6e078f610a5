#!/usr/bin/env python3
"""playbook_fixed_cost — what a layer costs per micro-batch in the Playbook's single-stage
nanotron runs, split into a fixed part and a part per sequence (docs/accuracy.md, "Twenty-seventh
pass").

For every ok row with pp = 1 (outside the 512-GPU group, whose order no plan-level model
follows), the measured step divided by the micro-batches (global batch / (dp x micro-batch))
and by the decoder layers, in ms, and the same of the model's predicted step; then, per (tp,
GPUs, ZeRO stage) with at least two micro-batch sizes, the least-squares line
t = a + b x (micro-batch size), measured and modelled. With a fixed global batch, the data
parallel reduction per step lands in b (fewer micro-batches carry it as dp grows), the cost per
collective or launch in a.

Usage:
  scripts/playbook_fixed_cost.py [--bin ./scaleplan] [FILE.tsv]
Default file: playbook_8b.tsv in ../shared/validation or /work/shared/validation.
Python 3 standard library only.
"""
import json
import subprocess
import sys
from collections import defaultdict

from calibrate import playbook_args, read_tsv


def line_fit(points):
    """(a, b) of the least-squares line through (x, y), None with fewer than two distinct x"""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - b * sx) / n, b


def main(argv):
    binary, path = playbook_args(argv, "playbook_fixed_cost")
    tsv = read_tsv(path)
    out = subprocess.run([binary, "validate", path, "--json"], check=True, capture_output=True, text=True).stdout
    res = {r["id"]: r for r in json.loads(out)["results"]}
    groups = defaultdict(list)
    for rid, row in tsv.items():
        r = res.get(rid)
        if row["status"] != "ok" or not r or not r.get("simulated") or not row["tokens_per_s_per_gpu"]:
            continue
        if row["pp"] != "1" or int(row["num_gpus"]) >= 512:
            continue
        tp, dp, mb, n = (int(row[k]) for k in ("tp", "dp", "micro_batch", "num_gpus"))
        seq, gbs, layers = int(row["seq_len"]), int(row["global_batch_seqs"]), int(row["layers"])
        per = 1e3 / (gbs // (dp * mb)) / layers
        meas = gbs * seq / n / float(row["tokens_per_s_per_gpu"]) * per
        pred = gbs * seq / n / r["pred_tokens_per_s_per_gpu"] * per
        groups[(tp, n, row["zero"])].append((mb, meas, pred))
    print("ms per layer and micro-batch = a + b x micro-batch size, measured | modelled")
    print("%4s %5s %4s  %7s %7s | %7s %7s  micro-batches" % ("tp", "GPUs", "zero", "a", "b", "a", "b"))
    for (tp, n, zero), pts in sorted(groups.items()):
        fm = line_fit([(m, t) for m, t, _ in pts])
        fp = line_fit([(m, t) for m, _, t in pts])
        if fm and fp:
            print("%4d %5d %4s  %7.2f %7.2f | %7.2f %7.2f  %s" % (tp, n, zero, fm[0], fm[1], fp[0], fp[1],
                                                                 sorted({m for m, _, _ in pts})))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
