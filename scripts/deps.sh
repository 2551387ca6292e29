#!/usr/bin/env bash
# Installs what sptune builds with on Debian (the CUDA toolkit must already be there) and puts
# the toolkit on PATH. Sourced by the other scripts.
set -euo pipefail

need=()
# SPTUNE_DEPS_EXTRA: more packages a caller needs (the test command: clang, for the fuzz target)
for pkg in liblua5.4-dev libsqlite3-dev cmake gcc make pkg-config python3 ${SPTUNE_DEPS_EXTRA:-}; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
if [ ! -f /usr/local/cuda/include/nvrtc.h ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "the CUDA toolkit (NVRTC, cuda.h, cuBLAS headers) is needed; install it, e.g. NVIDIA's cuda-toolkit package" >&2
  exit 1
fi
