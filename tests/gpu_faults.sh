#!/usr/bin/env bash
# Fault injection on a GPU: `sptune tune` over a test-only gemm (tests/fault-templates) whose
# variants fault on purpose (an out-of-bounds write, a trap, a kernel that never ends). The tuner
# must record each failure with its outcome, replace its measurement worker, finish, pick a sound
# winner, and resume all of it from the database without measuring again.
# Usage: gpu_faults.sh path/to/sptune. Without a GPU it says so and exits 77 (ctest: skipped).
set -u
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
tmp="${SPTUNE_TEST_TMP:-/tmp}/faults.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
export SPTUNE_TEMPLATES="$here/fault-templates" SPTUNE_CACHE_DIR="$tmp/cache" SPTUNE_DB="$tmp/tuning.db"
if ! "$bin" info > "$tmp/info" 2>&1; then
  echo "gpu_faults: SKIPPED 1 GPU test (no GPU here: $(tail -1 "$tmp/info"))"
  rm -rf "$tmp"
  exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # pass, fail, ok, bad, check
shape=M=200,N=136,K=72
# Three spinning variants at 8 s each bound the run; the rest take well under a second.
"$bin" tune gemm --shape $shape --strategy exhaustive --timeout 8 --runs 5 --json > "$tmp/run1.json" 2> "$tmp/run1.err"
rc=$?
cat "$tmp/run1.json"
check "the run finishes (exit $rc)" '[ $rc -eq 0 ]'
j="$(cat "$tmp/run1.json")"
check "12 variants measured" 'echo "$j" | grep -q "\"measured\":12,"'
check "3 timed out (spin)" 'echo "$j" | grep -q "\"timed_out\":3"'
check "6 launch failures (out of bounds, trap)" 'echo "$j" | grep -q "\"launch_failed\":6"'
check "the winner is sound" 'echo "$j" | grep -q "\"config\":\"threads=[0-9]*,fault=none\""'
"$bin" db export "$tmp/export.tsv" > /dev/null 2>&1
rows=$(grep -c "fault=" "$tmp/export.tsv")
check "the database holds all 12 ($rows rows)" '[ "$rows" -eq 12 ]'
for f in oob trap; do
  check "$f recorded as launch_failed" '[ $(grep "fault=$f" "$tmp/export.tsv" | grep -c launch_failed) -eq 3 ]'
done
check "spin recorded as timed_out" '[ $(grep "fault=spin" "$tmp/export.tsv" | grep -c timed_out) -eq 3 ]'
check "the sound ones recorded ok" '[ $(grep "fault=none" "$tmp/export.tsv" | grep -cP "\tok\t") -eq 3 ]'
# The same command again: everything comes from the database, nothing is measured twice.
"$bin" tune gemm --shape $shape --strategy exhaustive --timeout 8 --runs 5 --json > "$tmp/run2.json" 2>&1
rc=$?
j="$(cat "$tmp/run2.json")"
check "the rerun finishes (exit $rc)" '[ $rc -eq 0 ]'
check "the rerun measures nothing new" 'echo "$j" | grep -q "\"measured\":0,\"resumed\":12"'
# sptune check runs variants in its own process: a kernel that never ends stops it under --timeout, saying which, with
# the variant measured before it recorded.
export SPTUNE_DB="$tmp/check.db"
"$bin" check gemm --gpu auto --shape $shape --config "threads=64,fault=none;threads=64,fault=spin;threads=128,fault=none" \
  --timeout 5 --runs 5 > "$tmp/check.out" 2> "$tmp/check.err"
rc=$?
check "check stops with exit 4 on the kernel that never ends (exit $rc)" '[ $rc -eq 4 ]'
check "check names it" 'grep -q "threads=64,fault=spin at M=200,N=136,K=72 gave no result within 5 s" "$tmp/check.err"'
check "check printed the variant before it" 'grep -q "1/3 ok" "$tmp/check.out"'
"$bin" db export "$tmp/check.tsv" > /dev/null 2>&1
check "check recorded the variant before it" '[ $(grep -c "fault=none" "$tmp/check.tsv") -eq 1 ]'
echo "gpu_faults: $pass passed, $fail failed"
[ $fail -eq 0 ] || { sed 's/^/    /' "$tmp/run1.err" | tail -20; exit 1; }
rm -rf "$tmp"
