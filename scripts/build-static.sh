#!/usr/bin/env bash
# Builds build-static/: Lua and SQLite linked in, for the GPU machine (which has neither).
# NVRTC stays dynamic (the CUDA toolkit is there); the driver and cuBLAS are opened at run time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build-static" -DCMAKE_BUILD_TYPE=Release -DSPTUNE_STATIC_DEPS=ON >/dev/null
cmake --build "$root/build-static" -j"$(nproc)" --target sptune_cli test_gpu test_gpu_ops
