#!/usr/bin/env python3
"""playbook_pipeline — what the Playbook's pipelined nanotron runs measure, under nanotron's own
layer split (docs/accuracy.md, "Twenty-fifth pass").

1. The pipeline floor: for every ok row with pp > 1 (after nanotron's pipeline fix), the
   measured step divided by the 1F1B slots (micro-batches + pp - 1) and by the decoder layers
   of the busiest stage (nanotron's split), in ms per layer and micro-batch, median by tp and pp.
2. The pools: measured reserved memory of rank 0 against the modelled model states + dynamic
   memory + the larger of the rank's 16-bit gradients (2 B per parameter, nanotron's
   FP32GradientAccumulator keeps them to the end of each backward) and two full-width input
   gradients per layer (2 B x tokens x hidden each) - the single-stage rule of the
   twenty-first pass - as signed error, median by tp and pp, from `validate --json --set
   pp_split=cost`.

nanotron's split is walked here from the row's shapes, independently of sim/plan.c: blocks in
order (embedding, decoder layers, final norm, LM head, cast, loss), a decoder layer costing
4h^2 + 3h*ffn (MHA), the head V*h, everything else nothing; each block goes to the current rank,
which moves on once the cumulative cost passes (rank + 1) / pp of the total (models/base.py
build_model, get_block_compute_costs in models/llama.py, nanotron @67c5ebb6).

Usage:
  scripts/playbook_pipeline.py [--bin ./scaleplan] [FILE.tsv]
Default file: playbook_8b.tsv in ../shared/validation or /work/shared/validation.
Python 3 standard library only.
"""
import json
import statistics
import subprocess
import sys
from collections import defaultdict

from calibrate import playbook_args, read_tsv

GIB = 2.0 ** 30


def split_layers(pp, layers, hidden, ffn, vocab):
    """decoder layers on each pipeline rank under nanotron's cost split"""
    costs = [0] + [4 * hidden * hidden + 3 * hidden * ffn] * layers + [0, vocab * hidden, 0, 0]
    total = sum(costs)
    out, rank, cum = [0] * pp, 0, 0
    for i, c in enumerate(costs):
        cum += c
        if 1 <= i <= layers:
            out[rank] += 1
        if cum > total * (rank + 1) / pp and rank < pp - 1:
            rank += 1
    return out


def table(title, cells):
    print(title)
    tps = sorted({k[0] for k in cells})
    pps = sorted({k[1] for k in cells})
    print("tp \\ pp " + "".join("%9d" % p for p in pps))
    for t in tps:
        print("%8d " % t + "".join("%9s" % (cells[(t, p)] if (t, p) in cells else "-") for p in pps))
    print()


def main(argv):
    binary, path = playbook_args(argv, "playbook_pipeline")
    tsv = read_tsv(path)
    out = subprocess.run([binary, "validate", path, "--json", "--set", "pp_split=cost"],
                         check=True, capture_output=True, text=True).stdout
    res = {r["id"]: r for r in json.loads(out)["results"]}
    floor, pool = defaultdict(list), defaultdict(list)
    for rid, row in tsv.items():
        r = res.get(rid)
        if row["status"] != "ok" or not r or not r.get("simulated") or not row["tokens_per_s_per_gpu"]:
            continue
        tp, pp, dp, mb = (int(row[k]) for k in ("tp", "pp", "dp", "micro_batch"))
        L, h, ffn, V = (int(row[k]) for k in ("layers", "hidden", "ffn_hidden", "vocab"))
        seq, gbs, n = int(row["seq_len"]), int(row["global_batch_seqs"]), int(row["num_gpus"])
        lay = split_layers(pp, L, h, ffn, V)
        m = gbs // (dp * mb)
        if pp > 1:
            step = gbs * seq / n / float(row["tokens_per_s_per_gpu"])
            floor[(tp, pp)].append(1e3 * step / (m + pp - 1) / max(lay))
        if row["mem_gib"] and pp < 32:  # at pp 32 nanotron leaves ranks without a layer
            params = (lay[0] * (4 * h * h + 3 * h * ffn) + V * h) / tp
            g16 = 2 * params / GIB
            ig = 2 * 2 * mb * seq * h * lay[0] / GIB
            parts = r["pred_mem_parts_gib"]
            live = parts["static"] + parts["act"] + parts["logits"] + parts["buffers"]
            pool[(tp, pp)].append((live + max(g16, ig)) / float(row["mem_gib"]) - 1)
    table("ms per layer of the busiest stage and micro-batch (median over rows), pp > 1:",
          {k: "%.1f" % statistics.median(v) for k, v in floor.items()})
    table("rank 0's reserved pool: (live + max(16-bit grads, 2 input grads per layer)) / measured - 1, median:",
          {k: "%+.0f%%" % (100 * statistics.median(v)) for k, v in pool.items()})


if __name__ == "__main__":
    main(sys.argv[1:])
