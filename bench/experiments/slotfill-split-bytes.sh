#!/usr/bin/env bash
# Bytes and per-lane work of the owner layout and of the split with tensor-core corrections, on the CPU machine
# (bench/experiments/slotfill-split-bytes.c says what it counts):
#   bash bench/experiments/slotfill-split-bytes.sh [build] [M K [seg ...]]
# build: a CMake build of this tree (default build; its libraries are linked); default 4096 x 4096, seg 256 1024 K.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
shift $(( $# > 0 ? 1 : 0 ))
root="$here/../.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
version_dir="$(dirname "$(find "$build" -name sptune_version.h | head -1)")"
cc -O2 -std=c11 -Wall -Wextra -o "$tmp/split" "$here/slotfill-split-bytes.c" -I"$root/include" -I"$root/base" \
   -I"$root/runtime" -I"$root/tuner" -I"$version_dir" "$build/libsptune_tools.a" "$build/libsptune_internal.a" \
   -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lnvrtc -llua5.4 -lsqlite3 -lm -ldl -lpthread
[ $# -gt 0 ] || set -- 4096 4096
LD_LIBRARY_PATH="${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/split" "$@"
