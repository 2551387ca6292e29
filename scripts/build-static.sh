#!/usr/bin/env bash
# Builds build-static/: Lua and SQLite linked in, for the GPU machine (which has neither).
# NVRTC stays dynamic (the CUDA toolkit is there); the driver and cuBLAS are opened at run time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build-static" -DCMAKE_BUILD_TYPE=Release -DSPTUNE_STATIC_DEPS=ON >/dev/null
cmake --build "$root/build-static" -j"$(nproc)" --target sptune_cli test_gpu test_gpu_ops test_gpu_api sptune_static
# The shared library (for the Python package) and an installed copy for the example: Debian's static
# Lua and SQLite are not position-independent, so this build links them dynamically and the prefix
# carries their shared objects (LD_LIBRARY_PATH=build-static/prefix/lib on the GPU machine).
cmake -S "$root" -B "$root/build-shared" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build-shared" -j"$(nproc)" --target sptune_shared sptune_static sptune_cli >/dev/null
rm -rf "$root/build-static/prefix"
cmake --install "$root/build-shared" --prefix "$root/build-static/prefix" >/dev/null
for so in $(ldd "$(ls "$root"/build-static/prefix/lib/libsptune.so.*.*.* | head -1)" | awk '/liblua|libsqlite/ {print $3}'); do
  cp -L "$so" "$root/build-static/prefix/lib/"
done
cmake -S "$root/examples" -B "$root/build-static/examples" -DCMAKE_PREFIX_PATH="$root/build-static/prefix" >/dev/null
cmake --build "$root/build-static/examples" >/dev/null
