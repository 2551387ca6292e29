#!/usr/bin/env bash
# The Slot-Filling benchmark (issue 11) on the GPU machine, over a build made elsewhere:
#   bash bench/slotfill-table.sh [build-static]
# For each weight shape (M x K, Llama-class projections) and sparsity, one `sptune check` process
# times a few configurations at every token count N against the dense cuBLAS product of the same
# problem in the same run (each configuration verified first on fresh data, outputs poisoned).
# W is drawn like a pruned layer (dist=1: per-row magnitude pruning with a spread of row densities).
# The table (best configuration per problem, effective GB/s over the bytes the kernel must read)
# comes last. Env: SHAPES="MxK ...", NS="1;8;...", SPARSITIES="50 70", CONFIGS="cfg;cfg", RUNS.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup "${1:-build-static}" slotfill-table
git log -1 --format='commit %H %cd' 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader || true
# The best configurations measured so far (bench/RESULTS.md): split-K for few rows of W per SM at
# small N, wider token tiles as N grows. One encoding (window, dbits, fill) for all of them.
enc="window=128,dbits=6,fill=0,decode=list,ecap=128,vec=8"
configs="${CONFIGS:-$enc,warps=2,bn=8,stages=2,split=4;$enc,warps=2,bn=8,stages=2,split=8;\
$enc,warps=4,bn=16,stages=2,split=4;$enc,warps=2,bn=16,stages=2,split=8;$enc,warps=2,bn=32,stages=2,split=4;\
$enc,warps=4,bn=32,stages=3,split=2;$enc,warps=4,bn=64,stages=2,split=1}"
rows=()
for sp in ${SPARSITIES:-50 70}; do
  ns="${NS:-1;8;16;32;64;128;512}"
  [ "$sp" != 50 ] && ns="${NS70:-1;8;16}"
  for mk in ${SHAPES:-4096x4096 11008x4096 4096x11008 14336x4096 4096x14336 28672x8192 8192x28672}; do
    m=${mk%x*} k=${mk#*x} shapes=""
    for n in ${ns//;/ }; do shapes="${shapes:+$shapes;}M=$m,K=$k,N=$n,sparsity=$sp,fp16=0,dist=1"; done
    echo "== $mk at $sp%"
    "$bin" check slotfill-spmm --gpu auto --shape "$shapes" --config "$configs" --runs "${RUNS:-20}" \
      > "$out/check.$mk.$sp.log" 2>&1
    grep -E "^[a-z0-9-]+ +slotfill" "$out/check.$mk.$sp.log" | tee -a "$out/table.txt"
    grep -E "encod|failed|error" "$out/check.$mk.$sp.log" | head -5
  done
done
echo
echo "| problem | best ms | cuBLAS ms | speed-up | GB/s | best configuration |"
echo "|---|---|---|---|---|---|"
awk '{printf "| %s | %s | %s | %s | %s | %s |\n", $3, $4, $5, $6, $8, $NF}' "$out/table.txt"
