#!/usr/bin/env bash
# twell-ffn the way an engine runs it (bench/tables/twell-engine.c): data drawn for each problem, described from 4096
# calibration tokens, the kernel got for that description, typical workspace, against the dense layer on cuBLAS.
#   bash bench/tables/twell-engine.sh BUILD [PROBLEM ...]
# BUILD: a CMake build of this tree (scripts/build-static.sh's build-static for the GPU machine, which has neither
# Lua nor SQLite: linked statically); the program is built there as BUILD/twell-engine when missing (ENGINE_BUILD=1:
# build it and stop, on the CPU machine). Default problems: the layers of the issue that found 0.12x, uneven tokens
# (the layer-made generator, spread 0.5) from light to heavy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build-static}" && pwd)"
shift $(( $# > 0 ? 1 : 0 ))
root="$here/../.."
exe="$build/twell-engine"
if [ ! -x "$exe" ] || [ "${ENGINE_BUILD:-0}" = 1 ]; then
  version_dir="$(dirname "$(find "$build" -name sptune_version.h | head -1)")"
  lua=$(ls /usr/lib/*/liblua5.4.a 2>/dev/null | head -1); sqlite=$(ls /usr/lib/*/libsqlite3.a 2>/dev/null | head -1)
  cc -O2 -std=c11 -D_GNU_SOURCE -o "$exe" "$here/twell-engine.c" -I"$root/include" -I"$root/base" -I"$root/gen" \
     -I"$root/runtime" -I"$root/db" -I"$root/tuner" -I"$version_dir" -I"${CUDA_HOME:-/usr/local/cuda}/include" \
     "$build/libsptune_tools.a" "$build/libsptune_internal.a" -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lnvrtc \
     "${lua:--llua5.4}" "${sqlite:--lsqlite3}" -lm -ldl -lpthread
  [ "${ENGINE_BUILD:-0}" = 1 ] && exit 0
fi
problems=("$@")
if [ "${#problems[@]}" -eq 0 ]; then
  for p in "D=4096,F=14336,nnz=300,dense=21,dense_nnz=1000" "D=4096,F=14336,nnz=140,dense=5" "D=4096,F=14336,nnz=104,dense=4.5" \
           "D=2048,F=5632,nnz=163,dense=17,dense_nnz=700" "D=2048,F=5632,nnz=74,dense=2.5" "D=4096,F=14336,nnz=40,dense=0.5"; do
    problems+=("M=16384,$p,gen=1,spread=0.5,order=1")
  done
  problems+=("M=3000,D=4096,F=14336,nnz=103,dense=4.5,gen=1,spread=0.5,order=1")
fi
"$exe" "${problems[@]}"
