#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite twice: a normal build with warnings as errors,
# and one under AddressSanitizer + UndefinedBehaviorSanitizer; then the input parsers under libFuzzer
# (a clang build, SPTUNE_FUZZ_SECONDS of fuzzing, default 30). GPU tests skip (and say so) where no GPU
# is present.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
SPTUNE_DEPS_EXTRA=clang source "$root/scripts/deps.sh"
jobs="$(nproc)"

run_suite() {  # folder, extra cmake options...
  local dir="$1"; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPTUNE_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure -j"$jobs")
}

# One kernel cache for the tests' compiles whose reuse they do not check: made afresh here, filled by
# the first build's tests and read back by the sanitizer build's (NVRTC's own time is not what ASan checks).
export SPTUNE_TEST_CACHE="$root/build-test/kernel-cache"
rm -rf "$SPTUNE_TEST_CACHE"
echo "== build and tests"
run_suite "$root/build-test"
echo "== build and tests under ASan + UBSan"
# protect_shadow_gap=0: the CUDA driver needs that address range (cuInit fails under ASan otherwise)
export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0"

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
run_suite "$root/build-asan" -DSPTUNE_SANITIZE=ON
echo "== the input parsers under libFuzzer (clang, ASan + UBSan, ${SPTUNE_FUZZ_SECONDS:-30} s)"
cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DSPTUNE_FUZZ=ON >/dev/null
cmake --build "$root/build-fuzz" -j"$jobs" --target sp_fuzz
(cd "$root/build-fuzz" && ctest --output-on-failure -R '^fuzz_')
