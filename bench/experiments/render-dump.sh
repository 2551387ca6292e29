#!/usr/bin/env bash
# Renders a spread sample of every op's space for h100 and rtx-pro-6000 into a folder, one file
# per (op, target, configuration), for comparing what templates emit before and after a change:
#   bash bench/experiments/render-dump.sh BUILD OUTDIR [PER_SPACE]      (PER_SPACE: configurations per space, 60)
#   diff -r OLD NEW, or bench/experiments/render-compare.sh OLD NEW (which ignores the header comment and names)
set -euo pipefail
bin="$1/sptune" out="$2" per="${3:-60}"
mkdir -p "$out"
declare -A shape=(
  [gemm]="M=1000,N=1032,K=1000"
  [twell-d2t]="M=16384,D=2048,F=5632,nnz=40"
  [twell-t2d]="M=16384,F=5632,D=2048,T=256,S=31,nnz=40"
  [twell-gated]="M=16384,F=5632,D=2048,T=256,S=31,nnz=40"
  [twell-ffn]="M=16384,D=2048,F=5632,nnz=40"
  [slotfill-spmm]="M=4096,K=4096,N=16,sparsity=50,fp16=0,dist=1")
n=0
for op in $("$bin" ops | sed -n 's/^\([a-z0-9_-]*\) (.*/\1/p'); do
  [ -n "${shape[$op]:-}" ] || { echo "no shape for $op: add one to ${BASH_SOURCE[0]}" >&2; exit 1; }
  for gpu in h100 rtx-pro-6000; do
    mapfile -t cfgs < <("$bin" space "$op" --gpu "$gpu" --shape "${shape[$op]}")
    step=$(( (${#cfgs[@]} + per - 1) / per )); [ "$step" -ge 1 ] || step=1
    for ((i = 0; i < ${#cfgs[@]}; i += step)); do
      "$bin" gen "$op" --gpu "$gpu" --config "${cfgs[$i]}" --shape "${shape[$op]}" > "$out/$op.$gpu.$i.cu"
      n=$((n + 1))
    done
  done
done
echo "$n sources in $out"
