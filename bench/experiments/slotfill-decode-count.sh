#!/usr/bin/env bash
# SASS instructions per 16 x 16 step of the decode modelled in bench/experiments/slotfill-decode-count.cu, on the CPU machine:
#   bash bench/experiments/slotfill-decode-count.sh [sm_90a|sm_120]
# Compiles it, finds the block loop (from the last branch before the first mma.sp to the loop's back branch) and
# divides its instructions by the 8 steps of 16 x 16 a block holds; prints the mix.
set -euo pipefail
arch="${1:-sm_90a}"
here="$(cd "$(dirname "$0")" && pwd)"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
cuobjdump="${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$nvcc" -arch="$arch" -cubin -O3 -o "$tmp/k.cubin" "$here/slotfill-decode-count.cu" -Xptxas -v 2>&1 | grep -E "registers|error"
"$cuobjdump" -sass "$tmp/k.cubin" | grep -E '^\s+/\*[0-9a-f]+\*/' > "$tmp/k.sass"
first=$(grep -n 'HMMA' "$tmp/k.sass" | head -1 | cut -d: -f1)
start=$(head -n "$first" "$tmp/k.sass" | grep -n 'BRA' | tail -1 | cut -d: -f1)
end=$(grep -n 'BRA' "$tmp/k.sass" | awk -F: -v f="$first" '$1 > f {print $1}' | head -1)
n=$((end - start))
echo "$arch: $n instructions per 16 x 128 block, $(awk -v n="$n" 'BEGIN {printf "%.1f", n / 8}') per 16 x 16 step"
sed -n "${start},${end}p" "$tmp/k.sass" | awk '{print $2}' | sed 's/\..*//; s/@!*P[0-9]//' | sort | uniq -c | sort -rn | head -12
