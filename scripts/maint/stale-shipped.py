#!/usr/bin/env python3
"""Keep the shipped results current: every shipped row measured with the templates of today.

A shipped row whose template_hash is not the op's current one was measured on an earlier kernel. The runtime
serves it while the problem has no current row (an earlier kernel's choice at an earlier kernel's speed); once
one exists the earlier rows are never served. tests/test_shipped_data.c fails on any such row.

  plan  TABLE   prints "op<TAB>problem<TAB>config" per (GPU, op, problem) without a current row: the
                configuration served today (the fastest against its baseline, as the runtime orders them),
                to measure again (bench/tables/refresh-shipped.sh), then shipped with scripts/maint/ship-results.py
  prune TABLE   drops every earlier-version row whose problem has a current row (the same key, or one that
                adds dimensions the op gained since, with the earlier key's values); lists the problems that
                have none and exits 1 while any does (measure them first)

The current hash of an op is read from `sptune gen` (the tool's opening comment names it). Rows keep their order.

usage: scripts/maint/stale-shipped.py {plan,prune} db/data/<gpu>.tsv [--sptune build/sptune] [--dry-run]
"""
import argparse
import collections
import re
import subprocess
import sys

from results_table import read

HASH = re.compile(r"\(content ([0-9a-f]{64})\)")


def read_rows(path):
    magic, head, rows = read(path, ("gpu_profile", "template", "template_hash", "problem", "config", "outcome",
                                    "median_ms", "baseline_ms"))
    return magic, head, [dict(zip(head, r)) for r in rows]


def current_hashes(sptune, rows):
    cur = {}
    for op, gpu in sorted({(r["template"], r["gpu_profile"]) for r in rows}):
        if op in cur:
            continue
        out = subprocess.run([sptune, "gen", op, "--gpu", gpu], capture_output=True, text=True)
        m = HASH.search(out.stdout)
        if not m:
            sys.exit(f"cannot read the current hash of {op}: {out.stderr.strip()}")
        cur[op] = m.group(1)
    return cur


def fields(key):
    return dict(kv.split("=", 1) for kv in key.split(",") if "=" in kv)


def better(r, than):
    """The runtime's order between two results of one problem: speed-up over the baseline, else time."""
    b1, b2 = float(r["baseline_ms"] or 0), float(than["baseline_ms"] or 0)
    if b1 > 0 and b2 > 0:
        return b1 / float(r["median_ms"]) > b2 / float(than["median_ms"])
    return float(r["median_ms"]) < float(than["median_ms"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=("plan", "prune"))
    ap.add_argument("table")
    ap.add_argument("--sptune", default="build/sptune")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    magic, head, rows = read_rows(a.table)
    cur = current_hashes(a.sptune, rows)
    is_current = lambda r: r["template_hash"] == cur[r["template"]]
    current_keys = collections.defaultdict(list)
    for r in rows:
        if is_current(r):
            current_keys[(r["gpu_profile"], r["template"])].append(fields(r["problem"]))

    def covered(r):
        want = fields(r["problem"])
        return any(all(k.get(f) == v for f, v in want.items()) for k in current_keys[(r["gpu_profile"], r["template"])])

    stale = [r for r in rows if not is_current(r)]
    uncovered = collections.OrderedDict()
    for r in stale:
        p = (r["gpu_profile"], r["template"], r["problem"])
        if r["outcome"] == "ok" and not covered(r) and (p not in uncovered or better(r, uncovered[p])):
            uncovered[p] = r
    if a.action == "plan":
        for (gpu, op, prob), r in uncovered.items():
            print(f"{op}\t{prob}\t{r['config']}")
        return 0
    if uncovered:
        for (gpu, op, prob) in uncovered:
            print(f"no current row: {gpu} {op} {prob}")
        print(f"{len(uncovered)} problems are served an earlier version's row: measure them (plan) before pruning")
        return 1
    dropped = collections.Counter(r["template"] for r in stale)
    for op in sorted(dropped):
        print(f"{op}: {dropped[op]} rows of an earlier version dropped (their problems have current rows)")
    if not a.dry_run and stale:
        with open(a.table, "w") as f:
            f.write(magic + "\n" + "\t".join(head) + "\n")
            for r in rows:
                if is_current(r):
                    f.write("\t".join(r[h] for h in head) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
