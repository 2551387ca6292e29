#!/usr/bin/env bash
# SpInfer and Flash-LLM beside sptune and cuBLAS on the GPU machine, on the same matrices in one process (bench/experiments/peer-spinfer.cu):
#   bash bench/experiments/peer-spinfer.sh SPINFER_DIR [BUILD]
# SPINFER_DIR: a checkout of HPMLL/SpInfer_EuroSys25 (its csrc, build and kernel_benchmark folders suffice, e.g.
# `git archive HEAD csrc build kernel_benchmark`); never copied into this repository. BUILD (default build-static): its
# prefix/ holds the installed libsptune (scripts/build-static.sh). Builds the driver with nvcc for sm_90 unless it is
# there already (a build made on the CPU machine may be carried), then runs it: RUNS timed runs a point (default 20),
# KINDS the pruning kinds as digits (2 per-row, 1 magnitude, 0 uniform: SpInfer's own; default 210), SHAPES how many
# of the 14 shapes (default all). Flash-LLM runs from the same checkout (its kernel as SpInfer's benchmark carries it).
# The table and a geometric-mean line go to stdout and $OUT/peer-spinfer.txt.
set -euo pipefail
spinfer="$(cd "$1" && pwd)"
root="$(cd "$(dirname "$0")/../.." && pwd)"
prefix="$root/${2:-build-static}/prefix"
out="${OUT:-/tmp/sptune-peer-spinfer}"
mkdir -p "$out"
bin="$root/${2:-build-static}/peer-spinfer"
if [ ! -x "$bin" ] || [ "$root/bench/peer-spinfer.cu" -nt "$bin" ]; then
  "${NVCC:-nvcc}" -O3 -std=c++17 -arch=sm_90 -I"$spinfer/build" -I"$spinfer/csrc" -I"$spinfer/kernel_benchmark" \
    -I"$prefix/include" "$spinfer/csrc/SpMM_API.cu" "$root/bench/peer-spinfer.cu" -L"$prefix/lib" -lsptune -lcublas \
    -lcusparse -o "$bin"
fi
git -C "$root" log -1 --format='sptune commit %H %cd' 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null || true
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" "$bin" "${RUNS:-20}" "${KINDS:-210}" "${SHAPES:-14}" | tee "$out/peer-spinfer.txt"
