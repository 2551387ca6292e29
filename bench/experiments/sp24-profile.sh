#!/usr/bin/env bash
# Issue 44's evidence on the GPU machine: the split's own kernel (sp24-ceiling.cu: the 2:4 layer on mma.sp plus the
# per-row residual on the CUDA cores) swept over its configurations on one shape and data, then Nsight Compute on the
# best configuration at N = 1 and N = 8 (clocks left alone, caches flushed between replays).
#   bash bench/experiments/sp24-profile.sh [binary]      SHAPE="14336 4096" MODES="70:2 50:1" (sparsity:dist)
# The binary is built here when missing (nvcc 13, sm_90a). Logs under $OUT (or /tmp)/sp24-profile.
set -uo pipefail
bin="${1:-build-static/sp24-ceiling}"
if [ ! -x "$bin" ]; then
  nvcc -O3 -std=c++17 -arch=sm_90a -o "$bin" bench/experiments/sp24-ceiling.cu -lcublas || exit 1
fi
out="${OUT:-/tmp}/sp24-profile"
mkdir -p "$out"
read -r M K <<< "${SHAPE:-14336 4096}"
for m in ${MODES:-70:2 50:1}; do
  sp=${m%:*} d=${m#*:}
  SPARSITY=$sp DIST=$d timeout 240 "$bin" 10 "$M" "$K" > "$out/sweep.$sp.$d.txt" 2>&1
  grep -E "^ *[0-9]+x|WRONG|wrong" "$out/sweep.$sp.$d.txt"
  for n in 1 8; do
    # a line: "MxK  S% dD  N  ms  cuBLAS-ms  ratio  bytes  TB/s  TB/s  tt=. nb=. s=. u=."
    cfg=$(awk -v n="$n" '$4 == n && $NF ~ /^u=/ { c = $(NF-3) "," $(NF-2) "," $(NF-1) "," $NF; gsub(/[a-z]+=/, "", c); print c }' \
          "$out/sweep.$sp.$d.txt")
    [ -n "$cfg" ] || { echo "no best configuration for $sp % dist $d at N=$n"; continue; }
    # with one configuration and one timed run: five launches a batch size (a check, three warm-ups, one timed),
    # N = 1 first, then N = 8
    skip=$([ "$n" = 1 ] && echo 0 || echo 5)
    log="$out/ncu.$sp.$d.n$n.txt"
    SPARSITY=$sp DIST=$d CFG=$cfg timeout 240 ncu --clock-control none -k regex:sp24_kernel -s "$skip" -c 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      --section Occupancy --section LaunchStats --section InstructionStats \
      --metrics smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__cycles_elapsed.avg,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
      "$bin" 1 "$M" "$K" > "$log" 2>&1
    echo "== ncu ${M}x$K $sp % dist $d, N=$n, tt,nb,s,u = $cfg"
    grep -E "Block Size|Grid Size|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Stall|dram__bytes|smsp__inst_executed.sum|sm__cycles_elapsed|L1/TEX Hit|L2 Hit" \
      "$log" | sed -E 's/  +/ /g' | head -40
    # the stall reasons, warps a issued instruction, largest first
    grep -E "issue_stalled" "$log" | awk '{print $NF, $1}' | sort -rn | head -8 | sed -E "s/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//"
  done
done
