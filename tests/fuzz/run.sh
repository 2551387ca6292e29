#!/usr/bin/env bash
# Runs the input parsers' fuzz target (tests/fuzz/fuzz_inputs.c) from the seeds for SPTUNE_FUZZ_SECONDS (default 30)
# under ASan + UBSan, with allocations over 512 MiB counted as failures. A crash, leak, hang or oversized allocation
# fails the test and leaves the input that caused it under WORK/artifacts (copy it into the seeds: a regression case).
#   bash tests/fuzz/run.sh SP_FUZZ SEEDS WORK
set -euo pipefail
bin="$1" seeds="$2" work="$3"
rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$work"
"$bin" -max_total_time="${SPTUNE_FUZZ_SECONDS:-30}" -malloc_limit_mb=512 -rss_limit_mb=2048 -timeout=20 \
       -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$seeds" 2>&1 | tail -25
exit "${PIPESTATUS[0]}"
