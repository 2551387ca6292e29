#!/usr/bin/env bash
# The Slot-Filling benchmark on the GPU machine, over a build made elsewhere:
#   bash bench/tables/slotfill-table.sh [build-static]
# For each weight shape (M x K: Llama/Qwen projections and tensor-parallel shards), pruning kind (DISTS:
# 1 global magnitude with row and column scales, 2 per-row as Wanda/SparseGPT prune) and sparsity, one
# `sptune check` process times the bitmap kernel's configurations at every token count N against the
# dense cuBLAS product of the same problem in the same run (each configuration verified first on fresh
# data, outputs poisoned; L2 flushed before every run; medians). Configurations a problem does not
# admit (a token tile wider than N, ...) are skipped by `check`. The three-layer kernel (its best
# measured configuration, and with filled slots) runs beside it at N = 8 on OLD_SHAPES.
# The table (best per problem, GB/s over the bytes the kernel must read) comes last; the database in
# $OUT holds every row (ship with scripts/maint/ship-results.py).
# Env: SHAPES="MxK ...", NS="1;8;16", DISTS="2 1", SPARSITIES="50", CONFIGS="cfg;cfg" (for every N), RUNS,
# OLD_SHAPES (the three-layer kernel beside it; "" for none).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" slotfill-table
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}" # energy per call is not what this table measures
git log -1 --format='commit %H %cd' 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader || true
# The bitmap kernel per token band (bench/experiments/slotfill-sweep.sh and a first table chose them): four consumer
# warps with split-K 2 to 8 through clusters (a 24 KB ring: seven CTAs per SM), two warps for the
# smallest shards; token tiles of 8 (N <= 8), 16, 32 and 64 (N >= 64: X read once per 64 tokens).
band() {
  local bn=$1
  case $bn in
    8) echo "warps=4,bn=8,split=2,ring=24;warps=4,bn=8,split=4,ring=24;warps=4,bn=8,split=8,ring=24;\
warps=4,bn=8,split=8,ring=36;warps=2,bn=8,split=8,ring=36" ;;
    16) echo "warps=4,bn=16,split=2,ring=24;warps=4,bn=16,split=2,ring=36;warps=4,bn=16,split=4,ring=24;\
warps=4,bn=16,split=8,ring=36;warps=2,bn=16,split=8,ring=36" ;;
    # wide token tiles: two tiles per warp share the X fragments (at bn = 64 a warp's four ldmatrix.x4 per step
    # cost as many shared-memory wavefronts as its decode)
    *) echo "warps=4,bn=$bn,split=2,ring=36;warps=4,bn=$bn,split=4,ring=36;warps=4,bn=$bn,split=8,ring=36;\
warps=2,tpw=2,bn=$bn,split=4,ring=48;warps=4,tpw=2,bn=$bn,split=2,ring=60" ;;
  esac
}
configs_for() {
  if [ -n "${CONFIGS:-}" ]; then echo "$CONFIGS"; return; fi
  if [ "$1" -le 8 ]; then band 8; elif [ "$1" -le 16 ]; then band 16; elif [ "$1" -le 32 ]; then band 32; else band 64; fi
}
old="decode=list,dbits=6,warps=2,bn=8,stages=2,split=4;decode=owner,fill=1,dbits=6,warps=2,bn=8,stages=2,split=4"
: > "$out/table.txt"
for sp in ${SPARSITIES:-50}; do
  for dist in ${DISTS:-2 1}; do
    for mk in ${SHAPES:-4096x4096 11008x4096 4096x11008 14336x4096 4096x14336 18944x3584 3584x18944 13824x5120 \
                        28672x8192 8192x28672 3584x8192 8192x3584 1792x4096 4096x1792}; do
      m=${mk%x*} k=${mk#*x} shapes=""
      ns="${NS:-1;8;16}"
      log="$out/check.$mk.$sp.$dist.log"
      for n in ${ns//;/ }; do
        "$bin" check slotfill-spmm --gpu auto --shape "M=$m,K=$k,N=$n,sparsity=$sp,fp16=0,dist=$dist" \
          --config "$(configs_for "$n")" --runs "${RUNS:-20}" >> "$log" 2>&1
      done
      grep -E "^[a-z0-9-]+ +slotfill" "$log" | tee -a "$out/table.txt"
      grep -E "failed|error|wrong" "$log" | grep -v "^sptune check: .* is not valid" | head -3
      for o in ${OLD_SHAPES-14336x4096 4096x4096 28672x8192}; do
        [ "$o" = "$mk" ] && "$bin" check slotfill-spmm --gpu auto --shape "M=$m,K=$k,N=8,sparsity=$sp,fp16=0,dist=$dist" \
          --config "$old" --runs "${RUNS:-20}" 2>&1 | tee -a "$log" | grep -E "^[a-z0-9-]+ +slotfill" | sed 's/^/old: /'
      done
    done
  done
done
echo
echo "| problem | best ms | cuBLAS ms | speed-up | GB/s | best configuration |"
echo "|---|---|---|---|---|---|"
awk '{printf "| %s | %s | %s | %s | %s | %s |\n", $3, $4, $5, $6, $8, $NF}' "$out/table.txt"
