#!/usr/bin/env bash
# twell-ffn over a grid of data on the GPU machine: the layer-made generator with uneven tokens (gen=1, spread 0.5),
# mean active neurons x heavy-token share, at the main layers; at each point the layer's sparse configurations
# verified and timed against the dense layer on cuBLAS in the same run (`sptune check`, recorded in
# $OUT/tuning.db and exported to $OUT/grid.tsv), so that the lookup serves the sparse kernel near the points where
# it measured faster and the dense layer elsewhere.
#   bash bench/twell-grid.sh [build-static]
# Env: LAYERS="D:F:CONFIG ..." (default: d = 4096 and 2048 with the configurations shipped for gen=1 data),
#      NNZ="20 40 80 160 320", HEAVY="0.5 2 5 10 20", M=16384, RUNS=10; ONLY_LIGHT_HEAVY=1: only the points whose
#      heavy tokens are lighter than 2000 active neurons.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup "${1:-build-static}" twell-grid
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}"
git log -1 --format='commit %H %cd' 2>/dev/null || true
common="mainloop=wgmma,bm=128,bn=256,bk=64,wgs=2,load=tma,group_m=8,consumer=regmma,dots=1,dunroll=1,route=512,pf=0"
d4096="$common,stages=4,epi=regs,slots=15,warps=4,split=1,unroll=4,hot=0,passes=2,hotloop=staged,pdl=0"
d2048="$common,stages=3,epi=overlap,slots=15,warps=2,split=1,unroll=4,hot=2,passes=1,hotloop=staged,pdl=0"
layers=${LAYERS:-"4096:14336:$d4096 2048:5632:$d2048"}
echo "| D x F | mean active | heavy % | heavy tokens' active | ms | dense ms | speed-up |"
echo "|---|---|---|---|---|---|---|"
for l in $layers; do
  D=${l%%:*} rest=${l#*:}
  F=${rest%%:*} cfg=${rest#*:}
  for nnz in ${NNZ:-20 40 80 160 320}; do
    for h in ${HEAVY:-0.5 2 5 10 20}; do
      # heavy tokens of at most 2000 active neurons, and together at most 4/5 of the batch's mean (else no batch has
      # that mean: the generator refuses it)
      dnz=$(awk -v n="$nnz" -v h="$h" 'BEGIN { d = int(0.8 * n / (h / 100)); print (d > 2000 ? 2000 : d) }')
      [ "${ONLY_LIGHT_HEAVY:-0}" = 1 ] && [ "$dnz" = 2000 ] && continue
      shape="M=${M:-16384},D=$D,F=$F,nnz=$nnz,dense=$h,dense_nnz=$dnz,gen=1,spread=0.5,order=1"
      line=$(bench_one twell-ffn "$shape" "$cfg" "${RUNS:-10}" "$out/grid.log")
      set -- $line
      echo "| ${D}x$F | $nnz | $h | $dnz | ${1:-failed} | ${2:-} | ${3:-} |"
    done
  done
done
"$bin" db export --db "$SPTUNE_DB" > "$out/grid.tsv"
