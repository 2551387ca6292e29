#!/usr/bin/env bash
# The TwELL producer's main loops side by side on the GPU machine (build made elsewhere):
#   bash bench/experiments/producer-loops.sh [build-static]
# Each configuration of twell-d2t is verified, then timed against a plain cuBLAS GEMM of the
# same shape in the same run. Env: SHAPE (default the paper's layer at 40 nonzeros per row),
# CONFIGS (space-separated; default below), RUNS. Prints a markdown table last.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" producer
shape="${SHAPE:-M=16384,D=2048,F=5632,nnz=40}"
configs="${CONFIGS:-mainloop=mma,bm=128,bn=128,bk=32,stages=3,slots=15
mainloop=wgmma,load=cpasync,bm=128,bn=128,bk=64,stages=3,wgs=2,slots=15
mainloop=wgmma,load=tma,bm=128,bn=128,bk=64,stages=3,wgs=2,slots=15
mainloop=wgmma,load=tma,bm=128,bn=256,bk=64,stages=4,wgs=2,slots=15
mainloop=wgmma,load=tma,epi=overlap,bm=128,bn=128,bk=64,stages=4,wgs=2,slots=15
mainloop=wgmma,load=tma,epi=overlap,bm=128,bn=128,bk=64,stages=5,wgs=2,slots=15
mainloop=wgmma,load=tma,epi=overlap,bm=128,bn=256,bk=64,stages=3,wgs=2,slots=15
mainloop=wgmma,load=tma,epi=overlap,bm=256,bn=128,bk=64,stages=3,wgs=2,slots=15}"
# shellcheck disable=SC2086 # configs: one per word
bench_sweep twell-d2t "$shape" "${RUNS:-20}" "$out/producer.log" "" $configs
echo
echo "twell-d2t at $shape"
echo "| configuration | ms | cuBLAS GEMM ms | producer/GEMM |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
