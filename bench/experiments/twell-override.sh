#!/usr/bin/env bash
# The shipped best twell-ffn configurations re-measured with some parameters changed, on the GPU machine over a
# build made elsewhere: each problem of db/data/h200.tsv whose text contains every word of MATCH (space-separated)
# gets its fastest recorded configuration with SET (k=v,...) applied, verified and timed against cuBLAS in the same
# run, and recorded in $OUT/tuning.db (export it with `sptune db export`, ship with scripts/maint/ship-results.py).
#   SET=dense=wgmma MATCH="gen=1 order=1" PART=1/2 bash bench/experiments/twell-override.sh [build-static]
# PART=i/n takes every n-th problem from the i-th (the list split over several calls), the problems in order of their
# recorded speed-up, lowest first; a configuration SET makes invalid for its problem is reported and skipped by
# `sptune check`; FROM=k skips the first k of them (those a call cut short measured). Prints one table row a problem.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" twell-override
: "${SET:?SET=k=v,... (the parameters to change)}"
part="${PART:-1/1}"
list=$(python3 - "$SET" "${MATCH:-}" "$part" "${FROM:-0}" <<'PY'
import sys
sys.path.insert(0, "scripts/maint")
from results_table import read
sets = dict(kv.split("=", 1) for kv in sys.argv[1].split(",") if kv)
words, (i, n) = sys.argv[2].split(), map(int, sys.argv[3].split("/"))
best = {}
_, head, rows = read("db/data/h200.tsv", need=("template", "problem", "config", "outcome", "median_ms", "baseline_ms"))
ix = {k: j for j, k in enumerate(head)}
for r in rows:
    if r[ix["template"]] != "twell-ffn" or r[ix["outcome"]] != "ok": continue
    p, ms, base = r[ix["problem"]], float(r[ix["median_ms"]]), float(r[ix["baseline_ms"]])
    if all(w in p.split(",") for w in words) and (p not in best or ms < best[p][0]):
        best[p] = (ms, r[ix["config"]], base / ms)
# the slowest against the baseline first: what a call cut short leaves out matters least
for k, p in enumerate(sorted(best, key=lambda q: (best[q][2], q))):
    if k % n != i - 1 or k < int(sys.argv[4]): continue
    c = dict(kv.split("=", 1) for kv in best[p][1].split(","))
    c.update(sets)
    if c.get("hot", "0") != "0" and "dense" in sets: c["hotloop"] = "pingpong"   # the ping-pong device code is shared
    print(p + "\t" + ",".join(f"{k}={v}" for k, v in c.items()))
PY
)
echo "| problem | ms | cuBLAS ms | speed-up |"
echo "|---|---|---|---|"
while IFS=$'\t' read -r shape cfg; do
  [ -n "$shape" ] || continue
  line=$(bench_one twell-ffn "$shape" "$cfg" "${RUNS:-10}" "$out/override.log")
  echo "| $(sed -E 's/,dead=[^,]*,tail=[^,]*//; s/,dense_nnz=[^,]*,at=[^,]*//' <<< "$shape") | ${line// / | } |"
done <<< "$list"
