#!/usr/bin/env bash
# 2:4 weights at 64-512 tokens: the large-batch sp24 kernel alone against the same kernel in pairs of CTAs along M
# that share each X box (mcast=2), on the GPU machine over a build made elsewhere (scripts/build-static.sh):
#   bash bench/experiments/sp24-mcast.sh [build-static]
# For each shape and batch: the configuration served (its split-K dropped: pairs take none) and a few CTA shapes,
# each alone and in pairs, verified and timed against cuBLAS in one `sptune check` (recorded in $OUT/tuning.db); the
# best of each kind last. Env: SHAPES="MxK ...", NS="64 128 256 512", RUNS=10.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" sp24-mcast
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}"
git log -1 --format='commit %H %cd' 2>/dev/null || true
lay="decode=sp24,window=64,dbits=7,mainloop=wgmma"
fixed="warps=8,bn=128,stages=4,krec=2 warps=16,bn=64,stages=4,krec=2 warps=4,bn=64,stages=8,krec=4 warps=8,bn=64,stages=8,krec=2"
echo "problem | kernel alone: best ms, speed-up | in pairs: best ms, speed-up | cuBLAS ms"
for mk in ${SHAPES:-18944x3584 4096x4096 4096x14336 14336x4096}; do
  for n in ${NS:-64 128 256 512}; do
    shape="M=${mk%x*},K=${mk#*x},N=$n,sparsity=50,fp16=0,dist=3"
    served=$("$bin" best slotfill-spmm --gpu auto --shape "$shape" --no-db 2>/dev/null | head -1 | sed -E 's/^[^:]*: ([^ ]*) .*/\1/')
    served="${served/,mcast=1/}"
    cands="${served/split=[0-9]/split=1}"
    for f in $fixed; do cands="$cands $lay,$f,split=1"; done
    cfgs=""
    for c in $cands; do cfgs="${cfgs:+$cfgs;}$c;$c,mcast=2"; done
    log="$out/mcast.$mk.N$n.log"
    timeout 240 "$bin" check slotfill-spmm --gpu auto --shape "$shape" --config "$cfgs" --runs "${RUNS:-10}" > "$log" 2>&1 ||
      echo "check $shape: exit $?"
    grep -E "^ +[0-9]+/[0-9]+ (wrong|launch|compile|timed)" "$log" | head -3
    awk -v p="$shape" '/^ +[0-9]+\/[0-9]+ ok / {pair = $NF ~ /mcast=2/; if (!(pair in b) || $3 < b[pair]) {b[pair] = $3; s[pair] = $9}}
         / baseline cuBLAS / {for (i = 1; i <= NF; i++) if ($i == "ms") {base = $(i - 1); break}}
         END {printf "%s | %s %s | %s %s | %s\n", p, b[0], s[0], b[1], s[1], base}' "$log"
  done
done
