#!/usr/bin/env bash
# The GPU check, run on the GPU machine over a build made elsewhere (scripts/build-static.sh):
#   bash bench/checks/device-check.sh [build-static]
# Verifies sampled gemm variants against cuBLAS on random data (outputs poisoned first), times
# them against cuBLAS in the same run, and ends with the tables. Logs and the database go to $OUT
# when set (the device tool brings that folder back).
set -uo pipefail
build="${1:-build-static}"
out="${OUT:-/tmp/sptune-check}"
mkdir -p "$out"
git log -1 --format='commit %H %cd' 2>/dev/null || true
export SPTUNE_DB="$out/tuning.db" SPTUNE_CACHE_DIR="${SPTUNE_CACHE_DIR:-/tmp/sptune-cache}"
bin="$build/sptune"
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv || true
"$bin" info || exit 1
# The driver-level GPU test (kernel launch through the dlopen'd driver), when it was built.
for t in test_gpu test_gpu_ops; do
  [ -x "$build/tests/$t" ] && { "$build/tests/$t" > "$out/$t.log" 2>&1 || status=1; tail -2 "$out/$t.log"; }
done
# Fault injection through the tuner: faulting and hanging variants recorded, workers replaced.
bash tests/gpu_faults.sh "$bin" > "$out/gpu_faults.log" 2>&1 || status=1; tail -3 "$out/gpu_faults.log"
run() { echo "+ $*"; "$@" 2>&1 | tee -a "$out/check.log"; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1; }
# Resources as NVRTC reports them here, compiled and then from the cache.
run "$bin" compile gemm --gpu auto --sample 3 --log
run "$bin" compile gemm --gpu auto --sample 3
# Tails in every dimension and K not a multiple of 8 (the element-wise load path).
run "$bin" check gemm --gpu auto --shape M=1000,N=1032,K=1000 --sample 8 --runs 5
run "$bin" check gemm --gpu auto --shape M=77,N=130,K=61 --sample 8 --runs 5
# The acceptance shape, a broad sample.
run "$bin" check gemm --gpu auto --shape M=4096,N=4096,K=4096 --sample ${SAMPLE:-96}
# The leading tile shapes under each fragment prefetch mode, side by side (COMPARE=0 skips).
[ "${COMPARE:-1}" = 1 ] && for cfg in bm=128,bn=128,bk=32,wm=64,wn=64,stages=3,prefetch=none bm=128,bn=128,bk=32,wm=64,wn=64,stages=3,prefetch=a \
           bm=128,bn=128,bk=32,wm=64,wn=64,stages=4,prefetch=a bm=128,bn=128,bk=64,wm=64,wn=64,stages=3,prefetch=a \
           bm=128,bn=256,bk=32,wm=64,wn=64,stages=3,prefetch=a bm=256,bn=128,bk=32,wm=64,wn=64,stages=3,prefetch=a \
           bm=128,bn=128,bk=32,wm=32,wn=64,stages=4,prefetch=ab bm=128,bn=256,bk=32,wm=64,wn=32,stages=4,prefetch=ab; do
  run "$bin" check gemm --gpu auto --shape M=4096,N=4096,K=4096 --config $cfg
done
# The TwELL producer against a plain cuBLAS GEMM of the same shape (~40 nonzeros per row).
run "$bin" check twell-d2t --gpu auto --shape M=16384,D=2048,F=5632,nnz=40 --sample ${TWELL_SAMPLE:-16}
# The TwELL consumer (down projection) against the dense cuBLAS product, every variant.
run "$bin" check twell-t2d --gpu auto --shape M=16384,F=5632,D=2048,T=256,S=31,nnz=40 --all
# Slot-Filling at a decode shape against the dense cuBLAS product, a sample of configurations.
run "$bin" check slotfill-spmm --gpu auto --shape M=14336,K=4096,N=8,sparsity=50,fp16=0,dist=1 --sample ${SF_SAMPLE:-16}
# The main job: the default workload, a small sample per problem.
run "$bin" --gpu auto --sample ${AUTO_SAMPLE:-8} --quiet
exit $status
