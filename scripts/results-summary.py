#!/usr/bin/env python3
"""The current numbers per family, as Markdown, from a shipped table (every row a verified measurement with the
current templates: tests/test_shipped_data.c holds them to that).

Per op and problem: the configuration the runtime serves (the fastest against the baseline timed in the same
run), its median time, the baseline's, the speed-up, and when it was measured; per op the geometric mean.
To reproduce a row: `sptune check OP --gpu auto --shape PROBLEM --config CONFIG` (`sptune best` prints CONFIG).

usage: scripts/results-summary.py db/data/h200.tsv > section.md
"""
import collections
import datetime
import math
import sys

from results_table import read

# The baseline each op is timed against in the same run (the tuner's cases name them: tuner/sp_case_*.c).
BASELINE = {"gemm": "cuBLAS bf16 GEMM", "slotfill-spmm": "cuBLAS dense GEMM, same precision",
            "twell-d2t": "cuBLAS bf16 GEMM, same shape, dense output", "twell-t2d": "cuBLAS bf16 dense H x W_down",
            "twell-gated": "cuBLAS bf16 dense gated consumer",
            "twell-ffn": "cuBLAS bf16 dense gated FFN: gate, up, relu-product, down"}

# Ops whose one geometric mean mixes regimes it is fair to read apart: the group a problem falls in.
GROUPS = {"slotfill-spmm": lambda p: f"{p['sparsity']} %, " + ("N = 1-16" if int(p["N"]) <= 16 else f"N = {p['N']}")}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().split("\n")[-1])
    _, head, table = read(sys.argv[1], ("gpu_profile", "gpu_name", "template", "problem", "outcome", "median_ms",
                                          "baseline_ms", "recorded_at", "sptune_version"))
    rows = [dict(zip(head, r)) for r in table]
    best = collections.OrderedDict()
    for r in rows:
        if r["outcome"] != "ok" or float(r["baseline_ms"] or 0) <= 0:
            continue
        r["speedup"] = float(r["baseline_ms"]) / float(r["median_ms"])
        k = (r["gpu_profile"], r["template"], r["problem"])
        if k not in best or r["speedup"] > best[k]["speedup"]:
            best[k] = r
    ops = collections.OrderedDict()
    for (gpu, op, prob), r in sorted(best.items(), key=lambda kv: kv[0]):
        ops.setdefault((gpu, op), []).append(r)
    for (gpu, op), rs in ops.items():
        g = math.exp(sum(math.log(r["speedup"]) for r in rs) / len(rs))
        env = rs[0]
        print(f"## {op} on {env['gpu_name']} ({gpu}): {len(rs)} problems, geometric mean {g:.2f}x "
              f"the baseline ({BASELINE.get(op, 'cuBLAS')})\n")
        if op in GROUPS:
            groups = collections.OrderedDict()
            for r in rs:
                p = dict(kv.split("=", 1) for kv in r["problem"].split(","))
                groups.setdefault(GROUPS[op](p), []).append(r["speedup"])
            print("By group: " + "; ".join(
                f"{k}: {math.exp(sum(map(math.log, v)) / len(v)):.2f}x over {len(v)} ({min(v):.2f}-{max(v):.2f}x)"
                for k, v in sorted(groups.items(), key=lambda kv: (kv[0].split()[0], int(kv[0].split()[-1].split("-")[-1])))) + "\n")
        print("| problem | ms | baseline ms | speed-up | measured |")
        print("|---|---:|---:|---:|---|")
        for r in sorted(rs, key=lambda r: r["problem"]):
            when = datetime.datetime.fromtimestamp(int(r["recorded_at"]), datetime.timezone.utc).strftime("%Y-%m-%d")
            print(f"| `{r['problem']}` | {float(r['median_ms']):.4f} | {float(r['baseline_ms']):.4f} | "
                  f"{r['speedup']:.2f}x | {when}, sptune {r['sptune_version']} |")
        print()


if __name__ == "__main__":
    main()
