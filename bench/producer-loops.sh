#!/usr/bin/env bash
# The TwELL producer's main loops side by side on the GPU machine (build made elsewhere):
#   bash bench/producer-loops.sh [build-static]
# Each configuration of twell-d2t is verified, then timed against a plain cuBLAS GEMM of the
# same shape in the same run. Env: SHAPE (default the paper's layer at 40 nonzeros per row),
# CONFIGS (space-separated; default below), RUNS. Prints a markdown table last.
set -uo pipefail
build="${1:-build-static}"
bin="$build/sptune"
out="${OUT:-/tmp/sptune-producer}"
mkdir -p "$out"
export SPTUNE_DB="$out/tuning.db" SPTUNE_CACHE_DIR="${SPTUNE_CACHE_DIR:-/tmp/sptune-cache}"
shape="${SHAPE:-M=16384,D=2048,F=5632,nnz=40}"
configs="${CONFIGS:-mainloop=mma,bm=128,bn=128,bk=32,stages=3,slots=15
mainloop=wgmma,load=cpasync,bm=128,bn=128,bk=64,stages=3,wgs=2,slots=15
mainloop=wgmma,load=tma,bm=128,bn=128,bk=64,stages=3,wgs=2,slots=15
mainloop=wgmma,load=tma,bm=128,bn=256,bk=64,stages=4,wgs=2,slots=15
mainloop=wgmma,load=tma,epi=overlap,bm=128,bn=128,bk=64,stages=4,wgs=2,slots=15
mainloop=wgmma,load=tma,epi=overlap,bm=128,bn=128,bk=64,stages=5,wgs=2,slots=15
mainloop=wgmma,load=tma,epi=overlap,bm=128,bn=256,bk=64,stages=3,wgs=2,slots=15
mainloop=wgmma,load=tma,epi=overlap,bm=256,bn=128,bk=64,stages=3,wgs=2,slots=15}"
rows=()
for cfg in $configs; do
  line=$("$bin" check twell-d2t --gpu auto --shape "$shape" --config "$cfg" --runs "${RUNS:-20}" 2>&1 |
         tee -a "$out/producer.log" | awk '$2 == "twell-d2t" && $3 ~ /^M=/ {print $4, $5, $6}' | tail -1)
  line="${line:-failed}"
  rows+=("| $cfg | ${line// / | } |")
  echo "$cfg: $line"
done
echo
echo "twell-d2t at $shape"
echo "| configuration | ms | cuBLAS GEMM ms | producer/GEMM |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
