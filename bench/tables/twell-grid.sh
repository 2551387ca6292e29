#!/usr/bin/env bash
# twell-ffn over a grid of data on the GPU machine: the layer-made generator with uneven tokens (gen=1, spread 0.5),
# mean active neurons x heavy-token share, at the main layers; at each point the layer's configuration (with each
# route of ROUTES, when given) verified and timed against the dense layer on cuBLAS in one `sptune check` per layer
# (recorded in $OUT/tuning.db, exported to $OUT/grid.tsv), so that the lookup serves the sparse kernel near the points
# where it measured faster and the dense layer elsewhere. The short table last: per point the dense layer's time,
# then each configuration's time and ratio.
#   bash bench/tables/twell-grid.sh [build-static]
# Env: LAYERS="4096 3584 2048" (the configurations served for gen=1 data at those layers) or "D:F:CONFIG ...";
#      POINTS="NNZ:HEAVY ..." (mean active : heavy %; default 20-320 x 0.5-20 %), ROUTES="512 256 ..." (default: the
#      configuration's own), M=16384, RUNS=10.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" twell-grid
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}"
git log -1 --format='commit %H %cd' 2>/dev/null || true
common="mainloop=wgmma,bm=128,bn=256,bk=64,wgs=2,load=tma,group_m=8,consumer=regmma,dots=1,dunroll=1,pf=0,hot=0"
d4096="$common,stages=4,epi=regs,slots=15,warps=4,split=1,unroll=4,passes=2,hotloop=staged,pdl=0,route=512"
d2048="$common,stages=3,epi=overlap,slots=15,warps=2,split=1,unroll=4,passes=1,hotloop=staged,pdl=0,route=256"
grid=""
for n in 20 40 80 160 320; do for h in 0.5 2 5 10 20; do grid="$grid $n:$h"; done; done
for l in ${LAYERS:-4096 3584 2048}; do
  case "$l" in 4096) l="4096:14336:$d4096" ;; 3584) l="3584:18944:$d4096" ;; 2048) l="2048:5632:$d2048" ;; esac
  D=${l%%:*} rest=${l#*:}
  F=${rest%%:*} cfg=${rest#*:}
  shapes="" configs=""
  for p in ${POINTS:-$grid}; do
    nnz=${p%%:*} h=${p#*:}
    # heavy tokens of at most 2000 active neurons, and together at most 4/5 of the batch's mean (else no batch has
    # that mean: the generator refuses it)
    dnz=$(awk -v n="$nnz" -v h="$h" 'BEGIN { d = int(0.8 * n / (h / 100)); print (d > 2000 ? 2000 : d) }')
    shapes="$shapes${shapes:+;}M=${M:-16384},D=$D,F=$F,nnz=$nnz,dense=$h,dense_nnz=$dnz,gen=1,spread=0.5,order=1"
  done
  if [ -n "${ROUTES:-}" ]; then
    for r in $ROUTES; do configs="$configs${configs:+;}$cfg,route=$r"; done
  else
    configs="$cfg"
  fi
  "$bin" check twell-ffn --gpu auto --shape "$shapes" --config "$configs" --runs "${RUNS:-10}" 2>&1 |
    tee -a "$out/grid.log" |
    awk '/ on .*: baseline / {for (i = 1; i <= NF; i++) if ($i == "ms") b = $(i - 1); print $2, "dense", b, "ms"; next}
         / ok  / {r = "?"; if (match($0, /route=-?[0-9]+/)) r = substr($0, RSTART, RLENGTH); x = ""
                  for (i = 4; i <= NF; i++) if ($i ~ /^[0-9.]+x$/) { x = $i; break }
                  print "  ", r, $3, "ms", x}
         /[0-9]+\/[0-9]+ [a-z-]+  / && !/ ok  / {print "  FAILED:", $0}'
done
"$bin" db export --db "$SPTUNE_DB" > "$out/grid.tsv"
