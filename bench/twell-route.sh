#!/usr/bin/env bash
# twell-ffn's dense-path threshold (route) on uneven tokens, on the GPU machine: at each point of the layer-made
# generator (gen=1, spread 0.5) the layer's configuration with each route, verified and timed against the dense
# layer on cuBLAS in one `sptune check` per layer (recorded in $OUT/tuning.db, exported to $OUT/route.tsv); the
# typical workspace holds every token a batch of the described mean can route (templates/twell/twell-ffn.lua).
#   bash bench/twell-route.sh [build-static]
# Env: LAYERS="D:F:CONFIG ..." or 4096 / 2048 for the configurations served for gen=1 data at those layers (default
#      both),
#      POINTS="NNZ:HEAVY ..." (mean active : heavy %), ROUTES="512 256 128", M=16384, RUNS=10.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup "${1:-build-static}" twell-route
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}"
git log -1 --format='commit %H %cd' 2>/dev/null || true
common="mainloop=wgmma,bm=128,bn=256,bk=64,wgs=2,load=tma,group_m=8,consumer=regmma,dots=1,dunroll=1,pf=0"
d4096="$common,stages=4,epi=regs,slots=15,warps=4,split=1,unroll=4,hot=0,passes=2,hotloop=staged,pdl=0"
d2048="$common,stages=3,epi=overlap,slots=15,warps=2,split=1,unroll=4,hot=0,passes=1,hotloop=staged,pdl=0"
for l in ${LAYERS:-4096 2048}; do
  case "$l" in 4096) l="4096:14336:$d4096" ;; 2048) l="2048:5632:$d2048" ;; esac
  D=${l%%:*} rest=${l#*:}
  F=${rest%%:*} cfg=${rest#*:}
  shapes="" configs=""
  for p in ${POINTS:-80:0.5 80:2 80:5 140:0.5 140:5 160:0.5 160:2}; do
    nnz=${p%%:*} h=${p#*:}
    # heavy tokens of at most 2000 active neurons, together at most 4/5 of the batch's mean (as bench/twell-grid.sh)
    dnz=$(awk -v n="$nnz" -v h="$h" 'BEGIN { d = int(0.8 * n / (h / 100)); print (d > 2000 ? 2000 : d) }')
    shapes="$shapes${shapes:+;}M=${M:-16384},D=$D,F=$F,nnz=$nnz,dense=$h,dense_nnz=$dnz,gen=1,spread=0.5,order=1"
  done
  for r in ${ROUTES:-512 256 128}; do configs="$configs${configs:+;}$cfg,route=$r"; done
  "$bin" check twell-ffn --gpu auto --shape "$shapes" --config "$configs" --runs "${RUNS:-10}" 2>&1 |
    tee -a "$out/route.log" |
    awk '/ on .*: baseline / {for (i = 1; i <= NF; i++) if ($i == "ms") b = $(i - 1); print $2, "dense", b, "ms"; next}
         / ok  / {r = "?"; if (match($0, /route=-?[0-9]+/)) r = substr($0, RSTART, RLENGTH); x = ""; for (i = 4; i <= NF; i++) if ($i ~ /^[0-9.]+x$/) { x = $i; break } print "  ", r, $3, "ms", x}
         /[0-9]+\/[0-9]+ [a-z-]+  / && !/ ok  / {print "  FAILED:", $0}'
done
"$bin" db export --db "$SPTUNE_DB" > "$out/route.tsv"
