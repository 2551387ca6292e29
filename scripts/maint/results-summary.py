#!/usr/bin/env python3
"""The current numbers per family, as Markdown, from a shipped table (every row a verified measurement with the
current templates: tests/test_shipped_data.c holds them to that).

Per op and problem: the configuration the runtime serves (the fastest against the baseline timed in the same
run; for a problem measured on several kinds of data, the twell ops' generators gen and spread, the one of the best
worst speed-up over them as api/sp_api_across.c picks it, shown at that worst case with each kind's speed-up), its
median time, the baseline's, the speed-up, and when it was measured; per op the geometric mean.
To reproduce a row: `sptune check OP --gpu auto --shape PROBLEM --config CONFIG` (`sptune best` prints CONFIG).
A configuration recorded before a parameter was added (its text without it) is the one naming that parameter's
default, as the lookup parses it: --sptune (default build/sptune) lists the parameters' defaults (`sptune ops`).

usage: scripts/maint/results-summary.py db/data/h200.tsv [--sptune build/sptune] > section.md
"""
import argparse
import collections
import datetime
import math
import os
import re
import subprocess
import sys

from results_table import read

# The baseline each op is timed against in the same run (the tuner's cases name them: tuner/sp_case_*.c).
BASELINE = {"gemm": "cuBLAS bf16 GEMM", "slotfill-spmm": "cuBLAS dense GEMM, same precision",
            "twell-d2t": "cuBLAS bf16 GEMM, same shape, dense output", "twell-t2d": "cuBLAS bf16 dense H x W_down",
            "twell-gated": "cuBLAS bf16 dense gated consumer",
            "twell-ffn": "cuBLAS bf16 dense gated FFN: gate, up, relu-product, down"}

# Ops whose one geometric mean mixes regimes it is fair to read apart: the group a problem falls in.
GROUPS = {"slotfill-spmm": lambda p: f"{p['sparsity']} %, " + ("N = 1-16" if int(p["N"]) <= 16 else f"N = {p['N']}")}

# How the tuner made the data (the templates' `across` dimensions): not part of the problem a user has.
ACROSS = ("gen", "spread")
NEAR = 0.03   # worst cases this close count as equal (api/sp_api_across.c)


def split_key(problem):
    """(the problem without the across dimensions, the kind of data: the across ones)"""
    kv = [x.split("=", 1) for x in problem.split(",")]
    return (",".join(f"{k}={v}" for k, v in kv if k not in ACROSS),
            ",".join(f"{k}={v}" for k, v in kv if k in ACROSS))


def op_defaults(sptune):
    """{op: [(parameter, default), ...] in parameter order}, from `sptune ops`."""
    out, op = {}, None
    for line in subprocess.run([sptune, "ops"], capture_output=True, text=True, check=True).stdout.splitlines():
        m = re.match(r"^(\S+) \(", line)
        if m:
            op = out.setdefault(m.group(1), [])
            continue
        m = re.match(r"^  (\S+)\s+\{[^}]*\}\s+default (\S+)", line)
        if m and op is not None:
            op.append((m.group(1), m.group(2)))
    return out


def canonical(config, params):
    """The configuration's text naming every parameter (those it leaves out at their defaults), as sp_config_format
    writes it; the text as it is where a name is not one of the op's."""
    kv = dict(x.split("=", 1) for x in config.split(",") if "=" in x)
    if not params or any(k not in dict(params) for k in kv):
        return config
    return ",".join(f"{k}={kv.get(k, d)}" for k, d in params)


def across_pick(rows):
    """The served row of one problem measured on several kinds of data, or None (api/sp_api_across.c's rule)."""
    kinds = sorted({split_key(r["problem"])[1] for r in rows})
    if len(kinds) < 2:
        return None
    by = collections.defaultdict(dict)   # config -> kind -> fastest row
    for r in rows:
        kind = split_key(r["problem"])[1]
        if kind not in by[r["config"]] or r["speedup"] > by[r["config"]][kind]["speedup"]:
            by[r["config"]][kind] = r
    full = {c: d for c, d in by.items() if len(d) == len(kinds)}
    if not full:
        return None
    worst = {c: min(d.values(), key=lambda r: r["speedup"]) for c, d in full.items()}
    bw = max(w["speedup"] for w in worst.values())
    mean = {c: sum(r["speedup"] for r in d.values()) / len(d) for c, d in full.items()}
    c = max((c for c in full if worst[c]["speedup"] >= bw * (1 - NEAR)), key=lambda c: mean[c])
    r = dict(worst[c])
    r["problem"] = split_key(r["problem"])[0]
    r["kinds"] = "; ".join(f"{k}: {full[c][k]['speedup']:.2f}x" for k in kinds)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table")
    ap.add_argument("--sptune", default="build/sptune", help="an sptune binary (the ops' parameter defaults)")
    a = ap.parse_args()
    _, head, table = read(a.table, ("gpu_profile", "gpu_name", "template", "problem", "config", "outcome",
                                    "median_ms", "baseline_ms", "recorded_at", "sptune_version"))
    rows = [dict(zip(head, r)) for r in table]
    if not os.access(a.sptune, os.X_OK):
        sys.exit(f"results-summary: {a.sptune} is not an sptune binary (--sptune PATH): it names the parameters' "
                 "defaults, without which one configuration recorded under two texts would count as two")
    defaults = op_defaults(a.sptune)
    for r in rows:
        r["config"] = canonical(r["config"], defaults.get(r["template"]))
    best = collections.OrderedDict()
    family = collections.defaultdict(list)
    for r in rows:
        if r["outcome"] != "ok" or float(r["baseline_ms"] or 0) <= 0:
            continue
        r["speedup"] = float(r["baseline_ms"]) / float(r["median_ms"])
        family[(r["gpu_profile"], r["template"], split_key(r["problem"])[0])].append(r)
        k = (r["gpu_profile"], r["template"], r["problem"])
        if k not in best or r["speedup"] > best[k]["speedup"]:
            best[k] = r
    # a problem measured on several kinds of data: one row, the configuration served for all of them
    for (gpu, op, prob), rs in family.items():
        pick = across_pick(rs)
        if pick is not None:
            for r in rs:
                best.pop((gpu, op, r["problem"]), None)
            best[(gpu, op, prob)] = pick
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
            kinds = f" (the worst of {r['kinds']})" if "kinds" in r else ""
            print(f"| `{r['problem']}`{kinds} | {float(r['median_ms']):.4f} | {float(r['baseline_ms']):.4f} | "
                  f"{r['speedup']:.2f}x | {when}, sptune {r['sptune_version']} |")
        print()


if __name__ == "__main__":
    main()
