#!/usr/bin/env bash
# Slot-Filling at every batch size on the GPU machine, over a build made elsewhere (scripts/build-static.sh):
#   bash bench/tables/slotfill-large.sh [build-static]
# 1. correctness (unless SKIP_CHECK=1): test_gpu_ops's large-batch configurations (mainloop=wgmma) at every
#    slotfill-spmm shape (cuBLAS fp32 reference, fresh random data, poisoned outputs), then compute-sanitizer's
#    memcheck over both layouts at a shape with tails in M, N and K;
# 2. timing: for each shape, kind of weights (per-row pruned: the bitmap layout; 2:4: sp24) and batch N, a few CTA
#    shapes of the large-batch kernel verified and timed
#    against dense cuBLAS in the same run (`sptune check`, recorded in $OUT/tuning.db). The table last: the best
#    per problem.
# Env: NGROUPS="32 64,128 ..." (batches measured by one process), CHECK_TIMEOUT (seconds a process, 420),
# SHAPES="MxK ..." (Llama-3-8B's gate/up, down, q/o, k/v, Qwen2-7B's gate/up), KINDS="2 3", RUNS=10;
# CANDS=fused (the large-batch kernel's CTA shapes, the default), expand (W expanded, then the dense GEMM; the bitmap's
# blocks scattered and staged, the GEMM's tile at three widths), wsmem (W decoded into shared memory, the bitmap layout's), dec (so by decoder warps of
# their own, the bitmap layout's: docs/journal/2026-12-05.md) or all.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" slotfill-large
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}"
git log -1 --format='commit %H %cd' 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader || true
status=0
if [ "${SKIP_CHECK:-0}" != 1 ]; then
  match=mainloop=wgmma; [ "${CANDS:-fused}" = expand ] && match=expand=1; [ "${CANDS:-fused}" = wsmem ] && match=wsrc=smem
  [ "${CANDS:-fused}" = dec ] && match=wsrc=dec
  SPTUNE_TEST_OPS=slotfill-spmm SPTUNE_TEST_MATCH=$match timeout 300 "${1:-build-static}/tests/test_gpu_ops" \
    > "$out/gpu_ops.log" 2>&1 || status=1
  grep -E "CHECK failed|checks" "$out/gpu_ops.log" | head -20
  mc="mainloop=wgmma,warps=8,bn=128,stages=3,split=2,ring=48;mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=4,bn=64,stages=4,split=1"
  mc="$mc;mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=16,bn=64,stages=3,split=2,krec=2"
  [ "${CANDS:-fused}" != fused ] && mc="$mc;expand=1;expand=1,xload=staged,xbn=128;expand=1,decode=sp24,window=64,dbits=7"
  [ "${CANDS:-fused}" = wsmem ] || [ "${CANDS:-fused}" = all ] && mc="$mc;mainloop=wgmma,wsrc=smem,warps=8,bn=128,stages=4,split=2"
  [ "${CANDS:-fused}" = dec ] || [ "${CANDS:-fused}" = all ] && mc="$mc;mainloop=wgmma,wsrc=dec,warps=8,bn=128,stages=4,split=2,dwarps=8"
  for d in 2 3; do
    timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" check slotfill-spmm --gpu auto \
      --shape "M=1000,K=960,N=200,sparsity=50,fp16=0,dist=$d" --config "$mc" --runs 2 --timeout 230 --no-db \
      > "$out/memcheck.$d.log" 2>&1   # memcheck slows a variant tens of times: the outer timeout bounds it
    echo "memcheck dist=$d: exit $? ($(grep -c '^[0-9].* ok ' "$out/memcheck.$d.log") ok; $(grep -m1 'ERROR SUMMARY' "$out/memcheck.$d.log"))"
  done
fi
# 2:4 weights (sp24): one, two or four consumer warpgroups, the covering token tile and the one below it, stages of
# 2 or 4 records (1 where more do not fit the registers: bn 256 on two warpgroups, bn 128 on four) as deep as shared
# memory allows (at most 8), split-K where the tiles leave SMs idle; the constraints drop what does not fit.
sp24_cands() {
  local n=$1 m=$2 bn=$3 list=$4 b w k s st ctas
  for b in $bn $([ "$bn" -ge 128 ] && echo $((bn / 2))); do
    for w in 4 8 16; do
      for k in 1 2 4; do
        if [ "$k" = 1 ]; then [ $((w * b)) -ge 2048 ] || continue; else [ $((w * b)) -ge 2048 ] && continue; fi
        st=$(( (226 * 1024) / (k * (w * 1152 + b * 128)) )); [ "$st" -gt 8 ] && st=8
        [ "$st" -eq 5 ] && st=4; [ "$st" -eq 7 ] && st=6; [ "$st" -lt 2 ] && continue
        ctas=$(( (m + 16 * w - 1) / (16 * w) * ((n + b - 1) / b) ))
        for s in 1 2 4; do
          [ "$s" -gt 1 ] && [ $((ctas * s / 2)) -ge 132 ] && continue
          list="${list:+$list;}decode=sp24,window=64,dbits=7,mainloop=wgmma,warps=$w,bn=$b,stages=$st,split=$s,krec=$k"
        done
      done
    done
  done
  echo "$list"
}
# The candidates for a batch of n tokens and an M x K matrix (2:4 weights: sp24_cands): one or two warpgroups, the token tile that covers n
# (at most 256; from n = 256 on also 128), split-K where the tiles alone leave SMs idle; stages as deep as shared
# memory allows (from 32 tokens on sm_90a serves the large-batch kernel alone).
cands() {
  local n=$1 m=$2 d=$3 bn=32 s w b list=""
  while [ "$bn" -lt "$n" ] && [ "$bn" -lt 256 ]; do bn=$((bn * 2)); done
  if [ "${CANDS:-fused}" = wsmem ] || [ "${CANDS:-fused}" = all ]; then   # W decoded into shared memory (bitmap)
    for b in $([ "$d" = 3 ] || echo $bn $([ "$bn" = 256 ] && echo 128)); do
      for s in 1 2 4; do
        local ctas=$(( (m + 127) / 128 * ((n + b - 1) / b) ))
        [ "$s" -gt 1 ] && [ $((ctas * s / 2)) -ge 132 ] && continue
        # bn 32 also in two stages: 113 KB, two CTAs an SM
        for st in $([ "$b" = 256 ] && echo 3 || echo 4) $([ "$b" = 32 ] && echo 2); do
          list="${list:+$list;}mainloop=wgmma,wsrc=smem,warps=8,bn=$b,stages=$st,split=$s"
        done
      done
    done
    [ "$CANDS" = wsmem ] && { echo "$list"; return; }
  fi
  if [ "${CANDS:-fused}" = dec ] || [ "${CANDS:-fused}" = all ]; then   # decoder warps of their own (bitmap)
    for b in $([ "$d" = 3 ] || { [ "$bn" -gt 128 ] && echo 128 64 || echo $bn $([ "$bn" -ge 64 ] && echo $((bn / 2))); }); do
      for r in 64 128; do
        # 64 rows a CTA: the second warpgroup takes tokens past the tile's first bn, so one warpgroup where bn covers n
        w=$({ [ "$b" -le 32 ] || [ "$b" -ge "$n" ]; } && [ "$r" = 64 ] && echo 4 || echo 8)
        local ctas=$(( (m + r - 1) / r * ((n + b - 1) / b) ))
        for s in 1 2 4; do
          [ "$s" -gt 1 ] && [ $((ctas * s / 2)) -ge 132 ] && continue
          list="${list:+$list;}mainloop=wgmma,wsrc=dec,warps=$w,bn=$b,stages=4,split=$s,dwarps=8$([ "$r" = 128 ] && echo ,wrows=128)"
        done
      done
    done
    [ "$CANDS" = dec ] && { echo "$list"; return; }
  fi
  if [ "${CANDS:-fused}" != fused ]; then
    if [ "$d" = 3 ]; then list="${list:+$list;}expand=1,decode=sp24,window=64,dbits=7"
    else   # the bitmap's blocks scattered and staged, the GEMM's tile at 256 (the default), 192 and 128 rows of W
      list="${list:+$list;}expand=1;expand=1,xload=staged;expand=1,xload=staged,xbn=192;expand=1,xload=staged,xbn=128"
    fi
    [ "${CANDS}" = expand ] && { echo "$list"; return; }
  fi
  if [ "$d" = 3 ]; then sp24_cands "$n" "$m" "$bn" "$list"; return; fi
  for b in $bn $([ "$bn" = 256 ] && echo 128); do
    local st=4
    [ "$b" = 256 ] && st=2
    for w in 8 4; do
      for s in 1 2 4; do
        local ctas=$(( (m + 16 * w - 1) / (16 * w) * ((n + b - 1) / b) ))
        [ "$s" -gt 1 ] && [ $((ctas * s / 2)) -ge 132 ] && continue   # half the split already fills the SMs
        list="${list:+$list;}mainloop=wgmma,warps=$w,bn=$b,stages=$st,split=$s"
      done
    done
  done
  echo "$list"
}
: > "$out/rows.txt"
# One process per shape, kind of weights and group of batches (NGROUPS, comma-separated; the halves of the range by
# default: the weights drawn and encoded once, every candidate of the group's batches tried at each of them where
# valid; a group per batch tries each batch's own candidates only): the summary line of each problem kept.
for mk in ${SHAPES:-14336x4096 4096x14336 4096x4096 1024x4096 18944x3584}; do
  m=${mk%x*} k=${mk#*x}
  for d in ${KINDS:-2 3}; do
    IFS=, read -ra groups <<< "${NGROUPS:-32 64 128 256 512,1024 2048 4096 8192 16384}"
    for ns in "${groups[@]}"; do
      shapes="" cfgs=""
      for n in $ns; do
        shapes="${shapes:+$shapes;}M=$m,K=$k,N=$n,sparsity=50,fp16=0,dist=$d"
        cfgs="${cfgs:+$cfgs;}$(cands "$n" "$m" "$d")"
      done
      cfgs=$(echo "$cfgs" | tr ';' '\n' | sed '/^$/d' | sort -u | paste -sd';')
      [ -n "$cfgs" ] || continue   # no candidate of this kind (CANDS=dec and wsmem: the bitmap layout's only)
      log="$out/large.$mk.d$d.N${ns%% *}.log"
      timeout "${CHECK_TIMEOUT:-420}" "$bin" check slotfill-spmm --gpu auto --shape "$shapes" --config "$cfgs" --runs "${RUNS:-10}" \
        > "$log" 2>&1 || echo "check $mk dist=$d N=$ns: exit $?"
      grep -E "^ +[0-9]+/[0-9]+ (wrong|launch|compile|timed)" "$log" | head -3
      awk '$2 == "slotfill-spmm" && $3 ~ /^M=/ {print $3, $4, $5, $6, $NF}' "$log" | tee -a "$out/rows.txt"
    done
  done
done
echo "== best per problem: problem, ms, cuBLAS ms, speed-up, configuration"
cat "$out/rows.txt"
exit $status
