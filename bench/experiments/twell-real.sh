#!/usr/bin/env bash
# TwELL on activations shaped like real models', on the GPU machine over a build made
# elsewhere:   bash bench/experiments/twell-real.sh [build-static]
# For each layer (d, d_ff), token count M and mean nonzeros per token: twell-ffn against the cuBLAS
# dense gated FFN, verified and timed in the same run, on three distributions of the same layer:
#   real     heavy-tailed neurons, 30 % dead, 0.5 % dense tokens of ~2000 nonzeros (token 0 and
#            scattered): the problem's defaults; nnz counts the dense tokens
#   nodense  the same ordinary tokens without the dense tokens (nnz - 10: "the same batch without them")
#   uniform  every live neuron alike, no dense token (the data of the first benchmarks)
# Env: LAYERS ("d,d_ff ..."), MS and NNZ (lists), DISTS (subset of "real nodense uniform"),
# FFN_CONFIG (the configuration; at d > 2048 its warps=16 becomes 8: shared memory), EXTRA (more
# "label=k=v,k=v" variants of it, timed on the real data at the first point only), RUNS. Prints a
# markdown table last.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" twell-real
cfg0="${FFN_CONFIG:-mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,group_m=8,slots=15,warps=16,split=1,unroll=4,ldg=nc,dots=8,dunroll=2,route=512}"
runs="${RUNS:-10}"
# cfg with the keys of the comma-separated k=v list $2 replaced (or added)
override() {
  local c=",$1," kv
  IFS=, read -ra kvs <<< "$2"
  for kv in "${kvs[@]}"; do c=$(sed -E "s/,${kv%%=*}=[^,]*,/,/" <<< "$c")"$kv,"; done
  c=${c#,}; echo "${c%,}"
}
rows=()
first=1
for layer in ${LAYERS:-2048,5632 3584,18944 4096,14336}; do
  d=${layer%,*} f=${layer#*,}
  cfg="$cfg0"
  [ "$d" -gt 2048 ] && cfg="${cfg/warps=16/warps=8}"
  for m in ${MS:-3000 12345 16384}; do
    for nnz in ${NNZ:-40}; do
      for dist in ${DISTS:-real nodense uniform}; do
        case $dist in
          real) shape="M=$m,D=$d,F=$f,nnz=$nnz" ;;
          nodense) shape="M=$m,D=$d,F=$f,nnz=$((nnz > 10 ? nnz - 10 : nnz)),dense=0" ;;
          uniform) shape="M=$m,D=$d,F=$f,nnz=$nnz,dense=0,tail=0" ;;
        esac
        r=$(bench_one twell-ffn "$shape" "$cfg" "$runs" "$out/real.log")
        rows+=("| $d | $f | $m | $nnz | $dist | default | ${r// / | } |")
        echo "d=$d d_ff=$f M=$m nnz=$nnz $dist: $r"
      done
      if [ $first = 1 ]; then
        for pair in ${EXTRA:-}; do
          lab=${pair%%=*} extra=${pair#*=}
          r=$(bench_one twell-ffn "M=$m,D=$d,F=$f,nnz=$nnz" "$(override "$cfg" "$extra")" "$runs" "$out/real.log")
          rows+=("| $d | $f | $m | $nnz | real | $lab | ${r// / | } |")
          echo "d=$d d_ff=$f M=$m nnz=$nnz real $lab: $r"
        done
        first=0
      fi
    done
  done
done
echo
echo "config: $cfg0"
echo "| d | d_ff | M | nnz/token | data | variant | twell-ffn ms | cuBLAS gated FFN ms | speed-up |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do echo "$r"; done
