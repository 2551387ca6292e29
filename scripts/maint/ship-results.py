#!/usr/bin/env python3
"""Ship measured results: merge `sptune db export` files into a shipped table (db/data/<gpu>.tsv).

Each verified result (outcome ok) of the exports replaces the shipped row of the same GPU profile, op,
problem and configuration (whatever its template hash: a re-measurement supersedes the earlier
version's row) or is added. Failed and timed-out results stay out: the shipped table says what runs
well. The shipped table keeps its format version (v1: the columns before the energy ones); exports of
a newer version are cut to its columns. Prints what changed per op.

usage: scripts/maint/ship-results.py db/data/h200.tsv EXPORT.tsv [EXPORT.tsv ...] [--dry-run]
"""
import argparse
import collections
import sys

from results_table import read

KEY = ("gpu_profile", "template", "problem", "config")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shipped")
    ap.add_argument("exports", nargs="+")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    magic, head, rows = read(a.shipped, KEY + ("outcome",))
    ix = {h: i for i, h in enumerate(head)}
    key = lambda r, ix: tuple(r[ix[k]] for k in KEY)
    new = collections.OrderedDict()
    for path in a.exports:
        _, h2, r2 = read(path, KEY + ("outcome",))
        ix2 = {h: i for i, h in enumerate(h2)}
        missing = [h for h in head if h not in ix2]
        if missing:
            sys.exit(f"{path}: lacks the shipped table's columns {missing}")
        for r in r2:
            if r[ix2["outcome"]] == "ok":
                new[key(r, ix2)] = [r[ix2[h]] for h in head]
    replaced, kept = collections.Counter(), []
    for r in rows:
        if key(r, ix) in new:
            replaced[r[ix["template"]]] += 1
        else:
            kept.append(r)
    added = collections.Counter(k[1] for k in new)
    for op in sorted(added):
        print(f"{op}: {added[op]} results shipped, {replaced[op]} earlier rows of the same problems and configurations replaced")
    if a.dry_run:
        return
    with open(a.shipped, "w") as f:
        f.write(magic + "\n" + "\t".join(head) + "\n")
        for r in kept + list(new.values()):
            f.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main()
