#!/usr/bin/env bash
# gemm on the H200: the mma.sync loop's best recorded form and the wgmma + TMA forms (after the main
# loop and overlapped store) against cuBLAS in the same run, at 4096^3 and Llama-3-8B's FFN GEMMs
# (gate/up: N=14336, K=4096; down: N=4096, K=14336) for M = 4096 tokens. Every variant is verified
# first (outputs poisoned). Over scripts/build-static.sh:  bash bench/tables/gemm-table.sh [build-static]
set -uo pipefail
build="${1:-build-static}"
out="${OUT:-/tmp/sptune-gemm}"
mkdir -p "$out"
export SPTUNE_CACHE_DIR="${SPTUNE_CACHE_DIR:-/tmp/sptune-cache}"
shapes="M=4096,N=4096,K=4096;M=4096,N=14336,K=4096;M=4096,N=4096,K=14336"
w="mainloop=wgmma,bk=64,load=tma"
configs="bm=128,bn=128,bk=32,wm=64,wn=64,stages=5,group_m=1"
configs+=";$w,wgs=2,bm=128,bn=256,stages=4;$w,wgs=2,bm=128,bn=256,stages=3;$w,wgs=2,bm=256,bn=128,stages=4"
configs+=";$w,wgs=2,bm=128,bn=128,stages=5;$w,wgs=2,bm=128,bn=128,stages=4,epi=overlap"
configs+=";$w,wgs=2,bm=256,bn=128,stages=3,epi=overlap;$w,wgs=2,bm=128,bn=256,stages=3,epi=overlap"
configs+=";$w,wgs=2,bm=128,bn=256,stages=4,group_m=1;${CONFIGS:-$w,wgs=1,bm=128,bn=256,stages=4}"
"$build/sptune" check gemm --gpu auto --shape "$shapes" --config "$configs" --runs ${RUNS:-50} \
  --db "$out/gemm.db" 2>&1 | tee "$out/gemm.log" | grep -vi "^compil"
