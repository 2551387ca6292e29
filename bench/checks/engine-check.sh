#!/usr/bin/env bash
# The runtime API's contract for engines on the GPU machine, over scripts/build-static.sh:
#   bash bench/checks/engine-check.sh [build-static]
# test_gpu_api (token counts under one kernel, family helpers, CUDA graph, threads, two contexts, host
# costs), the API and workspace cases of test_gpu_ops, the example against the installed copy (shared
# and static), and the Python package's GPU test and the decoder example (examples/decoder.py, two layers) when torch
# is there. Logs go to $OUT when set.
set -uo pipefail
build="${1:-build-static}"
out="${OUT:-/tmp/sptune-engine}"
mkdir -p "$out"
export SPTUNE_CACHE_DIR="${SPTUNE_CACHE_DIR:-/tmp/sptune-cache}" SPTUNE_DB="$out/engine.db"
export LD_LIBRARY_PATH="$PWD/$build/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
step() { echo "+ $*"; "$@" > "$out/step.log" 2>&1; local rc=$?; cat "$out/step.log" >> "$out/engine.log";
         grep -E "CHECK failed|FAILED|error|passed|failed|ok|us|ms" "$out/step.log" | tail -${TAIL:-12};
         [ $rc -eq 0 ] || [ $rc -eq 77 ] || { status=1; echo "  (exit $rc)"; }; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
step "$build/tests/test_gpu_api"
TAIL=6 SPTUNE_TEST_OPS=api,workspace step "$build/tests/test_gpu_ops"
step "$build/examples/twell_ffn" 3000 2048 5632
step "$build/examples/twell_ffn_static" 77 256 1024
if python3 -c "import torch" 2>/dev/null; then
  SPTUNE_LIB="$PWD/$build/prefix/lib/libsptune.so.0.5" PYTHONPATH="$PWD/python" step python3 tests/gpu_python.py
  # the decoder example, small: its logits checked against the dense model (exit 1 when they disagree)
  for args in "--prune 2:4" "--prune unstructured" "--relu --prompt 256 --prefill 2048"; do
    SPTUNE_LIB="$PWD/$build/prefix/lib/libsptune.so.0.5" PYTHONPATH="$PWD/python" \
      step python3 examples/decoder.py --layers 2 --batch 1,4 --steps 16 $args
  done
else
  echo "no torch here: the Python GPU test did not run"
fi
exit $status
