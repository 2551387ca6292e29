#!/usr/bin/env bash
# Slot-Filling profile on the GPU machine: a short tuning run on one decode shape, then Nsight
# Compute on the default and the best configuration (clocks left alone).
#   bash bench/experiments/slotfill-profile.sh [build-static]        SHAPE=... BUDGET=90s
set -uo pipefail
build="${1:-build-static}"
source bench/lib.sh
bench_setup "$build" slotfill-profile
shape="${SHAPE:-M=14336,K=4096,N=8,sparsity=50,fp16=0,dist=1}"
"$bin" tune slotfill-spmm --shape "$shape" --budget "${BUDGET:-90s}" --quiet 2>&1 | tee "$out/tune.log" | tail -4
best=$("$bin" best slotfill-spmm --gpu auto --shape "$shape" 2>/dev/null | head -1 | sed -E 's/^[^:]*: ([^ ]+) \(.*/\1/')
echo "best: $best"
for cfg in "${PROFILE_CONFIGS:-}" "$best"; do
  [ -n "$cfg" ] || continue
  ncu --clock-control none -k regex:sp_slotfill -s 3 -c 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis --section LaunchStats \
      "$bin" check slotfill-spmm --gpu auto --shape "$shape" --config "$cfg" --runs 5 --no-db > "$out/ncu.$(echo "$cfg" | md5sum | cut -c1-6).txt" 2>&1
  echo "== ncu $cfg"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Issue Slots Busy|Registers Per|Shared Memory Config|Dynamic Shared|No Eligible|Active Warps Per|Stall|Block Limit" "$out/ncu.$(echo "$cfg" | md5sum | cut -c1-6).txt" | head -40
done
