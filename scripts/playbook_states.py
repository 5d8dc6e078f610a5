#!/usr/bin/env python3
"""playbook_states — the model states against the Playbook's measured optimizer-phase peaks.

nanotron's benchmark logs torch.cuda.max_memory_allocated after log_memory has reset the peak
at the end of the logged step's forward/backward (logging.py, trainer.py at 67c5ebb6), so the
"max allocated N GiB" in the Playbook rows' notes is the optimizer phase's peak: the model
states plus the optimizer step's temporaries. This prints, for nanotron's layer split and an
even one, measured / modelled states by ZeRO stage and one stage vs a pipeline (median, p10,
p90), and for single-stage ZeRO-1 the least-squares fit of the excess per parameter,
a + b / dp bytes (docs/accuracy.md, "Twenty-first pass").

Usage:
  scripts/playbook_states.py [--bin ./scaleplan] [FILE.tsv]
Default file: playbook_8b.tsv in ../shared/validation or /work/shared/validation.
Python 3 standard library only.
"""
import json
import re
import statistics
import subprocess
import sys

from calibrate import playbook_args, read_tsv

GIB = 2.0 ** 30


def results(binary, path, split):
    out = subprocess.run([binary, "validate", path, "--json", "--set", "pp_split=" + split],
                         check=True, capture_output=True, text=True).stdout
    return {r["id"]: r for r in json.loads(out)["results"]}


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def rows_with_alloc(tsv, res):
    """(zero, pipelined, dp, measured GiB, modelled states GiB) of every row with both"""
    for rid, row in tsv.items():
        m = re.search(r"max allocated ([0-9.]+) GiB", row.get("notes", ""))
        r = res.get(rid)
        if not m or not r or not r.get("pred_mem_parts_gib"):
            continue
        yield row["zero"], row["pp"] != "1", int(row["dp"]), float(m.group(1)), r["pred_mem_parts_gib"]["static"]


def main(argv):
    binary, path = playbook_args(argv, "playbook_states")
    tsv = read_tsv(path)
    print("measured max allocated / modelled model states")
    print("%-9s %-6s %-8s %5s %7s %7s %7s" % ("split", "zero", "stages", "rows", "median", "p10", "p90"))
    fit = []
    for split in ("cost", "balanced"):
        res = results(binary, path, split)
        rows = list(rows_with_alloc(tsv, res))
        for zero in ("0", "1"):
            for piped in (False, True):
                r = [meas / st for z, p, _, meas, st in rows if z == zero and p == piped and st > 0]
                if r:
                    print("%-9s %-6s %-8s %5d %7.3f %7.3f %7.3f" % (split, zero, "many" if piped else "one", len(r),
                          statistics.median(r), quantile(r, 0.1), quantile(r, 0.9)))
        if split == "cost":
            # single-stage ZeRO-1: states per parameter 2 (bf16) + 4 (fp32 grads) + 2 (DDP bucket)
            # + 12 / dp (sharded master and moments), so params = states / (8 + 12 / dp)
            fit = [(dp, (meas - st) * GIB / (st * GIB / (8 + 12.0 / dp)))
                   for z, p, dp, meas, st in rows if z == "1" and not p and dp > 1]
    if len(fit) >= 2:
        xs = [1.0 / dp for dp, _ in fit]
        ys = [y for _, y in fit]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0
        a = my - b * mx
        sd = (sum((y - a - b * x) ** 2 for x, y in zip(xs, ys)) / len(xs)) ** 0.5
        print("single-stage ZeRO-1 (%d rows): optimizer-phase excess = %.2f + %.2f / dp bytes per parameter "
              "(residual s.d. %.2f)" % (len(fit), a, b, sd))


if __name__ == "__main__":
    main(sys.argv[1:])
