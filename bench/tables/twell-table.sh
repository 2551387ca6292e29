#!/usr/bin/env bash
# The TwELL benchmark on the GPU machine, over a build made elsewhere:
#   bash bench/tables/twell-table.sh [build-static]
# For each layer (d, d_ff), tokens M and mean nonzeros per token: twell-ffn (the whole gated FFN:
# producer + gated consumer) against the cuBLAS dense gated FFN (three GEMMs and the element-wise
# step), and the producer twell-d2t alone against a plain cuBLAS GEMM of the same shape, both
# timed in the same run after verification. Configurations: FFN_CONFIG / D2T_CONFIG (defaults
# below, the best measured so far; the consumer's 16 warps fit shared memory up to d = 2048, so
# wider layers take 8). Prints a markdown table last. Env: SWEEP=full for every M at every nnz
# (the default sweeps nnz at M=16384 and takes nnz 40 and 72 at the other M); LAYERS="d,d_ff ..."
# (default: both of the issue's layers); DATA=",gen=1" (or any dimensions) appended to every problem, e.g. the
# data made by the layer itself beside the first generator's.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" table
ffn="${FFN_CONFIG:-mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,group_m=8,slots=15,warps=16,split=1,unroll=4,ldg=nc,dots=8,dunroll=2}"
d2t="${D2T_CONFIG:-mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,group_m=8,slots=15}"
runs="${RUNS:-10}"
rows=()
one() { bench_one "$1" "$2" "$3" "$runs" "$out/table.log"; }
for layer in ${LAYERS:-2048,5632 4096,14336}; do
  d=${layer%,*} f=${layer#*,}
  cfg="$ffn"
  [ "$d" -gt 2048 ] && cfg="${ffn/warps=16/warps=8}"
  for m in 4096 16384 65536; do
    for nnz in 30 40 72 150 300; do
      if [ "${SWEEP:-}" != full ] && [ $m != 16384 ] && [ $nnz != 40 ] && [ $nnz != 72 ]; then continue; fi
      r=$(one twell-ffn "M=$m,D=$d,F=$f,nnz=$nnz${DATA:-}" "$cfg")
      p="-"
      [ $nnz = 40 ] && p=$(one twell-d2t "M=$m,D=$d,F=$f,nnz=$nnz${DATA:-}" "$d2t")
      rows+=("| $d | $f | $m | $nnz | ${r// / | } | ${p// / | } |")
      echo "d=$d d_ff=$f M=$m nnz=$nnz: ffn $r; producer $p"
    done
  done
done
echo
echo "| d | d_ff | M | nnz/token | twell-ffn ms | cuBLAS gated FFN ms | speed-up | producer ms | cuBLAS GEMM ms | producer/GEMM |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do
  case "$r" in *"| - |"*) r="${r/| - |/| - | - | - |}";; esac
  echo "$r"
done
