#!/usr/bin/env bash
# A hand sweep on the GPU machine (build made elsewhere): twell-ffn configurations at one shape,
# each verified and timed against the cuBLAS dense gated FFN in the same run.
#   PRODUCER=k=v,... CONSUMERS="k=v,... k=v,..." SHAPE=M=..,D=..,F=..,nnz=.. bash bench/ffn-sweep.sh [build-static]
# Every consumer setting is appended to the producer's; prints a markdown table last.
set -uo pipefail
build="${1:-build-static}"
bin="$build/sptune"
out="${OUT:-/tmp/sptune-ffn}"
mkdir -p "$out"
export SPTUNE_DB="$out/tuning.db" SPTUNE_CACHE_DIR="${SPTUNE_CACHE_DIR:-/tmp/sptune-cache}"
shape="${SHAPE:-M=16384,D=2048,F=5632,nnz=40}"
producer="${PRODUCER:-mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,slots=15}"
consumers="${CONSUMERS:-warps=8,split=2,unroll=4}"
rows=()
for cons in $consumers; do
  cfg="$producer,$cons"
  line=$("$bin" check twell-ffn --gpu auto --shape "$shape" --config "$cfg" --runs "${RUNS:-20}" 2>&1 |
         tee -a "$out/ffn.log" | awk '$2 == "twell-ffn" && $3 ~ /^M=/ {print $4, $5, $6}' | tail -1)
  line="${line:-failed}"
  rows+=("| $cons | ${line// / | } |")
  echo "$cons: $line"
done
echo
echo "twell-ffn at $shape, producer $producer"
echo "| consumer | ms | cuBLAS gated FFN ms | speed-up |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
