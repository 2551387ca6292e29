#!/usr/bin/env bash
# 2:4 weights (sp24) on the large-batch kernel at 32-512 tokens: where a stage's time goes, on the GPU machine over
# a build made elsewhere (scripts/build-static.sh):
#   bash bench/experiments/sp24-midn.sh [build-static]
# 1. Nsight Compute (clocks left alone) on the configurations named in PROFILE ("SHAPE|CONFIG;..."), and the SASS of
#    the first one (rendered by `sptune gen`, compiled with nvcc, cuobjdump);
# 2. a sweep: each shape of SHAPES against each configuration of CONFIGS (`sptune check`, verified, cuBLAS in the
#    same run; RECORD=1: recorded in $OUT/tuning.db, for scripts/maint/ship-results.py). The table last.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" sp24-midn
export SPTUNE_ENERGY_MS=0
lay="${LAY:-decode=sp24,window=64,dbits=7,mainloop=wgmma}"   # LAY=mainloop=wgmma: the bitmap layout
IFS=';' read -ra profs <<< "${PROFILE:-}"
for pc in "${profs[@]}"; do
  shape=${pc%%|*} cfg=${pc#*|}
  f="$out/ncu.$(echo "$pc" | md5sum | cut -c1-6).txt"
  timeout 200 ncu --clock-control none -k regex:sp_slotfill -s 2 -c 1 --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
    --section InstructionStats "$bin" check slotfill-spmm --gpu auto --shape "$shape" --config "$lay,$cfg" --runs 3 \
    --no-db > "$f" 2>&1
  echo "== ncu $shape $cfg"
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Memory Throughput|Compute \(SM\)|Warp Cycles Per Issued|Issue Slots Busy|Registers Per|No Eligible|Active Warps Per|Eligible Warps|Stall|Executed Instructions  " "$f" | head -30
done
# the SASS of the first profiled kernel: rendered and compiled again (the kernel cache's entries wrap the cubin)
if [ ${#profs[@]} -gt 0 ] && command -v cuobjdump > /dev/null && command -v nvcc > /dev/null; then
  pc=${profs[0]}
  "$bin" gen slotfill-spmm --gpu auto --shape "${pc%%|*}" --config "$lay,${pc#*|}" > "$out/k.cu" &&
    nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -o "$out/k.cubin" -x cu "$out/k.cu" &&
    cuobjdump -sass "$out/k.cubin" > "$out/sass.txt" &&
    echo "SASS: $(grep -cE '^\s+/\*[0-9a-f]+\*/' "$out/sass.txt") instructions, $out/sass.txt"
fi
: > "$out/rows.txt"
for shape in ${SHAPES:-}; do
  cfgs=""
  for c in ${CONFIGS:-}; do cfgs="${cfgs:+$cfgs;}$lay,$c"; done
  timeout 300 "$bin" check slotfill-spmm --gpu auto --shape "$shape" --config "$cfgs" --runs "${RUNS:-10}" \
    $([ "${RECORD:-0}" = 1 ] || echo --no-db) \
    > "$out/sweep.log" 2>&1 || echo "check $shape: exit $?"
  grep -E "^ +[0-9]+/[0-9]+ (wrong|launch|compile)" "$out/sweep.log" | head -3
  # the baseline's time: the number before "ms" on check's header line (its name has spaces)
  echo "$shape baseline $(grep -m1 -oE 'baseline .* [0-9.]+ ms \(' "$out/sweep.log" | grep -oE '[0-9.]+ ms')" | tee -a "$out/rows.txt"
  grep -E "^ +[0-9]+/[0-9]+ ok " "$out/sweep.log" | awk '{x="?"; for (i = 4; i <= NF; i++) if ($i ~ /^[0-9.]+x$/) x = $i; print "  ", $3, x, $NF}' | sed -E 's/(dtype|window|dbits|fill|tpw|ring|ecap|vec|decode|expand|wsrc|mainloop)=[^,]*,?//g' | tee -a "$out/rows.txt"
done
