#!/usr/bin/env bash
# Slot-Filling on the GPU machine, over a build made elsewhere (scripts/build-static.sh):
#   bash bench/checks/slotfill-check.sh [build-static]
# 1. correctness: test_gpu_ops for slotfill-spmm (every shape class, both decoders, split-K,
#    fp16, against cuBLAS fp32 on fresh random data with poisoned outputs);
# 2. timing: a sample of configurations per problem against dense cuBLAS in the same run.
# Logs and the database go to $OUT (the device tool brings it back); the table comes last.
set -uo pipefail
build="${1:-build-static}"
out="${OUT:-/tmp/sptune-slotfill}"
mkdir -p "$out"
source bench/lib.sh
bench_setup "$build" slotfill
git log -1 --format='commit %H %cd' 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv || true
status=0
SPTUNE_TEST_OPS=slotfill-spmm "$build/tests/test_gpu_ops" > "$out/slotfill_gpu_ops.log" 2>&1 || status=1
grep -E "CHECK failed|checks" "$out/slotfill_gpu_ops.log" | head -20
rows=()
for shape in ${SHAPES:-M=14336,K=4096,N=8,sparsity=50,fp16=0,dist=1 M=4096,K=4096,N=1,sparsity=50,fp16=0,dist=1 \
             M=28672,K=8192,N=16,sparsity=50,fp16=0,dist=1 M=4096,K=14336,N=16,sparsity=70,fp16=0,dist=1}; do
  "$bin" check slotfill-spmm --gpu auto --shape "$shape" --sample "${SAMPLE:-16}" ${CONFIGS:+--config $CONFIGS} \
    2>&1 | tee -a "$out/check.log" | tail -1
  rows+=("$(grep -E "slotfill-spmm +M=" "$out/check.log" | tail -1)")
done
echo "== table"
printf '%s\n' "${rows[@]}"
exit $status
