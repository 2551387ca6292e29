#!/usr/bin/env bash
# The Slot-Filling benchmark on the GPU machine, over a build made elsewhere:
#   bash bench/slotfill-table.sh [build-static]
# For each weight shape (M x K: Llama/Qwen projections and tensor-parallel shards), pruning kind (DISTS:
# 1 global magnitude with row and column scales, 2 per-row as Wanda/SparseGPT prune) and sparsity, one
# `sptune check` process times the bitmap kernel's configurations at every token count N against the
# dense cuBLAS product of the same problem in the same run (each configuration verified first on fresh
# data, outputs poisoned; L2 flushed before every run; medians). Configurations a problem does not
# admit (a token tile wider than N, ...) are skipped by `check`. The three-layer kernel (its best
# measured configuration, and with filled slots) runs beside it at N = 8 on OLD_SHAPES.
# The table (best per problem, GB/s over the bytes the kernel must read) comes last; the database in
# $OUT holds every row (ship with scripts/ship-results.py).
# Env: SHAPES="MxK ...", NS="1;8;16", DISTS="2 1", SPARSITIES="50", CONFIGS="cfg;cfg", RUNS, OLD_SHAPES.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup "${1:-build-static}" slotfill-table
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}" # energy per call is not what this table measures
git log -1 --format='commit %H %cd' 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader || true
# The bitmap kernel: one or two tiles per warp, split-K 1 to 8 through clusters, token tiles of 8, 16, 64.
configs="${CONFIGS:-warps=4,bn=8,split=2;warps=2,tpw=2,bn=8,split=8;warps=4,bn=16,split=2;warps=2,tpw=2,bn=16,split=8;\
warps=4,bn=64,split=2;warps=2,tpw=2,bn=64,split=4,ring=48}"
old="decode=list,dbits=6,warps=2,bn=8,stages=2,split=4;decode=owner,fill=1,dbits=6,warps=2,bn=8,stages=2,split=4"
: > "$out/table.txt"
for sp in ${SPARSITIES:-50}; do
  for dist in ${DISTS:-2 1}; do
    for mk in ${SHAPES:-4096x4096 11008x4096 4096x11008 14336x4096 4096x14336 18944x3584 3584x18944 13824x5120 \
                        28672x8192 8192x28672 3584x8192 8192x3584 1792x4096 4096x1792}; do
      m=${mk%x*} k=${mk#*x} shapes=""
      ns="${NS:-1;8;16}"
      for n in ${ns//;/ }; do shapes="${shapes:+$shapes;}M=$m,K=$k,N=$n,sparsity=$sp,fp16=0,dist=$dist"; done
      log="$out/check.$mk.$sp.$dist.log"
      "$bin" check slotfill-spmm --gpu auto --shape "$shapes" --config "$configs" --runs "${RUNS:-20}" > "$log" 2>&1
      grep -E "^[a-z0-9-]+ +slotfill" "$log" | tee -a "$out/table.txt"
      grep -E "failed|error|wrong" "$log" | grep -v "^sptune check: .* is not valid" | head -3
      for o in ${OLD_SHAPES:-14336x4096 4096x4096 28672x8192}; do
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
