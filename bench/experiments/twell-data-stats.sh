#!/usr/bin/env bash
# What the tuner's TwELL data generators make, on the CPU machine (bench/experiments/twell-data-stats.c): per problem, the
# activations' count per token and the share of firings in the neurons a hot slice covers.
#   bash bench/experiments/twell-data-stats.sh [build] [TOKENS] [PROBLEM ...]
# build: a CMake build of this tree (default build; its libraries are linked); TOKENS: tokens sampled (400).
# Default problems: d=2048, d_ff=5632, M=16384 without dense tokens, both generators, 40 and 150 per token.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
tokens="${2:-400}"
shift $(( $# > 2 ? 2 : $# ))
root="$here/../.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
version_dir="$(dirname "$(find "$build" -name sptune_version.h | head -1)")"
cc -O2 -std=c11 -o "$tmp/stats" "$here/twell-data-stats.c" -I"$root/include" -I"$root/base" -I"$root/gen" \
   -I"$root/runtime" -I"$root/db" -I"$root/tuner" -I"$version_dir" "$build/libsptune_tools.a" "$build/libsptune_internal.a" \
   -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lnvrtc -llua5.4 -lsqlite3 -lm -ldl -lpthread
problems=("$@")
if [ "${#problems[@]}" -eq 0 ]; then
  for p in "nnz=40,gen=0" "nnz=150,gen=0" "nnz=40,gen=1,spread=0.1" "nnz=150,gen=1,spread=0.1" "nnz=40,gen=1,spread=0.5"; do
    problems+=("M=16384,D=2048,F=5632,dense=0,order=1,$p")
  done
fi
for p in "${problems[@]}"; do
  LD_LIBRARY_PATH="${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/stats" "$p" "$tokens" &
done
wait
