#!/usr/bin/env bash
# SASS instructions a k32 step of the split modelled in bench/experiments/slotfill-split-count.cu, on the CPU machine
# (no cuobjdump needed): each variant is compiled to a cubin, its kernel's .text size / 16 bytes is its instruction
# count, and differences between variants (4 and 8 steps unrolled, loops and parts left out) give each part a step.
#   bash bench/experiments/slotfill-split-count.sh
# sm_90a only: sm_120's compiler keeps the 8-step loop rolled, so the differences mean nothing there.
set -euo pipefail
arch=sm_90a
here="$(cd "$(dirname "$0")" && pwd)"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
count() {  # -D options... -> the kernel's instructions
  "$nvcc" -arch="$arch" -cubin -O3 "$@" -o "$tmp/k.cubin" "$here/slotfill-split-count.cu"
  python3 - "$tmp/k.cubin" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
shoff = struct.unpack_from('<Q', d, 0x28)[0]
size, num, strndx = struct.unpack_from('<HHH', d, 0x3a)
secs = [struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * size) for i in range(num)]
names = secs[strndx][4]
print(sum(s[5] // 16 for s in secs if d[names + s[0]:d.index(b'\0', names + s[0])].startswith(b'.text.')))
PY
}
all4=$(count -DSTEPS=4) all8=$(count -DSTEPS=8)
bare4=$(count -DSTEPS=4 -DPUSH=0 -DPOP=0) bare8=$(count -DSTEPS=8 -DPUSH=0 -DPOP=0)
nopush=$(count -DSTEPS=4 -DPUSH=0) nopop=$(count -DSTEPS=4 -DPOP=0)
noscan=$(count -DSTEPS=4 -DPUSH=0 -DPOP=0 -DSCAN=0) nometa=$(count -DSTEPS=4 -DPUSH=0 -DPOP=0 -DCMETA=0)
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {printf "%.1f", (a - b) / n}'; }
echo "$arch, instructions a k32 step (16 x 32 of W, N = 8), static:"
echo "  everything, each loop's body once: $(per "$all8" "$all4" 4)"
echo "  without the push and pop loops:    $(per "$bare8" "$bare4" 4)"
echo "    of which the warp scan of ranks: $(per "$bare4" "$noscan" 4); C's metadata: $(per "$bare4" "$nometa" 4)"
echo "  the push loop (body and setup):    $(per "$all4" "$nopush" 4)"
echo "  the pop loop (body and setup):     $(per "$all4" "$nopop" 4)"
