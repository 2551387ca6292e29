#!/usr/bin/env bash
# Sets up, builds and runs sptune with the given arguments (default: --gpu auto).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/deps.sh"
# the command and the shared library (what `pip install ./python` packages), said before the quiet build
[ -x "$root/build/sptune" ] || echo "sptune: building build/ (the first time takes a minute or two) ..." >&2
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target sptune_cli sptune_shared >/dev/null
[ $# -gt 0 ] || set -- --gpu auto
exec "$root/build/sptune" "$@"
