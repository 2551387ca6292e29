#!/usr/bin/env bash
# A hand sweep on the GPU machine (build made elsewhere): twell-ffn configurations at one shape,
# each verified and timed against the cuBLAS dense gated FFN in the same run.
#   PRODUCER=k=v,... CONSUMERS="k=v,... k=v,..." SHAPE=M=..,D=..,F=..,nnz=.. bash bench/experiments/ffn-sweep.sh [build-static]
# Every consumer setting is appended to the producer's; prints a markdown table last.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" ffn
shape="${SHAPE:-M=16384,D=2048,F=5632,nnz=40}"
producer="${PRODUCER:-mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,slots=15}"
consumers="${CONSUMERS:-warps=2,split=1,unroll=4,ldg=nc,consumer=regmma,dots=1,dunroll=1 warps=2,split=1,unroll=4,ldg=nc,consumer=reg,dots=1,dunroll=1 warps=16,split=1,unroll=4,dots=8,dunroll=2 consumer=tile}"
# shellcheck disable=SC2086 # consumers: one per word
bench_sweep twell-ffn "$shape" "${RUNS:-20}" "$out/ffn.log" "$producer" $consumers
echo
echo "twell-ffn at $shape, producer $producer"
echo "| consumer | ms | cuBLAS gated FFN ms | speed-up |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
