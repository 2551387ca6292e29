#!/usr/bin/env bash
# A sweep of the bitmap kernel's CTA shape on the GPU machine, over a build made elsewhere:
#   bash bench/experiments/slotfill-sweep.sh [build-static]
# For each problem one `sptune check` process verifies every configuration of the grid (fresh random
# data, outputs poisoned) and times it against dense cuBLAS in the same run (L2 flushed, medians).
# The grid varies what sets the parallelism per SM: consumer warps and tiles per warp, split-K through
# clusters and the ring's size (a smaller ring, more CTAs per SM). Last: each configuration's geometric
# mean speed-up over the problems that admit it, and the best per problem.
# Env: SHAPES="MxK ...", NS="8", DIST=2, SPARSITY=50, RUNS=10, GRID="cfg;cfg" (instead of the grid below).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" slotfill-sweep
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}"
grid=""
add() { grid="${grid:+$grid;}$1"; }
for r in 16 24 36; do for s in 2 4 8; do add "warps=2,tpw=1,ring=$r,split=$s"; done; done
for wt in "warps=2,tpw=2" "warps=4,tpw=1"; do
  for r in 20 24 36; do for s in 1 2 4 8; do add "$wt,ring=$r,split=$s"; done; done
done
grid="${GRID:-$grid}"
: > "$out/rows.txt"
for mk in ${SHAPES:-4096x4096 14336x4096 28672x8192 8192x28672 3584x8192 1792x4096 4096x1792}; do
  m=${mk%x*} k=${mk#*x}
  for n in ${NS:-8}; do
    bn=8; [ "$n" -gt 8 ] && bn=16
    cfgs=$(echo "$grid" | tr ';' '\n' | sed "s/^/bn=$bn,/" | paste -sd';')
    shape="M=$m,K=$k,N=$n,sparsity=${SPARSITY:-50},fp16=0,dist=${DIST:-2}"
    log="$out/sweep.$mk.$n.log"
    "$bin" check slotfill-spmm --gpu auto --shape "$shape" --config "$cfgs" --runs "${RUNS:-10}" > "$log" 2>&1
    grep -E "failed|error|wrong" "$log" | grep -v "is not valid" | head -3
    # rows: problem ms speed-up config
    awk -v p="${mk}.N$n" '$2 == "ok" {print p, $3, $9, $NF}' "$log" | tee -a "$out/rows.txt" | sort -k2,2g | head -3
  done
done
echo
echo "| configuration | problems | geometric mean speed-up | worst |"
echo "|---|---|---|---|"
awk '{c = $4; sub(/^bn=[0-9]+,/, "", c); sub(/x$/, "", $3); n[c]++; l[c] += log($3); if (!(c in w) || $3 < w[c]) w[c] = $3}
     END {for (c in n) printf "| %s | %d | %.3fx | %.2fx |\n", c, n[c], exp(l[c] / n[c]), w[c]}' "$out/rows.txt" |
  sort -t'|' -k4,4gr | head -20
echo
echo "| problem | best ms | speed-up | configuration |"
echo "|---|---|---|---|"
sort -k1,1 -k2,2g "$out/rows.txt" | awk '$1 != last {printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4; last = $1}'
