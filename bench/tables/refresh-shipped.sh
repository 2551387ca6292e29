#!/usr/bin/env bash
# Measures again, with today's templates, the shipped configurations that are served from an earlier kernel:
#   here:             python3 scripts/maint/stale-shipped.py plan db/data/h200.tsv > build-static/refresh-plan.tsv
#                     (and, to save GPU time, the variants compiled into build-static/kcache by
#                      `sptune compile OP --gpu h200 --shape P --config C --cache-dir build-static/kcache`)
#   on the GPU:       bash bench/tables/refresh-shipped.sh [build-static] [PLAN]
#   here, after:      scripts/maint/ship-results.py db/data/h200.tsv $OUT/refresh.tsv; scripts/maint/stale-shipped.py prune ...
# One `sptune check` per planned problem (its served configuration, verified on fresh data against the reference,
# timed against the baseline in the same run); every row goes into $OUT/tuning.db and, exported, $OUT/refresh.tsv.
# Env: RUNS (timed runs per variant, default 20).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
build="${1:-build-static}"
plan="${2:-$build/refresh-plan.tsv}"
bench_setup "$build" refresh-shipped
[ -d "$build/kcache" ] && export SPTUNE_CACHE_DIR="$build/kcache"
export SPTUNE_ENERGY_MS="${SPTUNE_ENERGY_MS:-0}" # the shipped tables record time
[ -r "$plan" ] || { echo "no plan: $plan (scripts/maint/stale-shipped.py plan makes it)" >&2; exit 2; }
git log -1 --format='commit %H %cd' 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader || true
n=0 failed=0
: > "$out/table.txt"
while IFS=$'\t' read -r op prob cfg; do
  [ -n "$op" ] || continue
  n=$((n + 1))
  line=$(bench_one "$op" "$prob" "$cfg" "${RUNS:-20}" "$out/check.log")
  [ "$line" = failed ] && failed=$((failed + 1))
  printf '%-12s %-90s %s\n' "$op" "$prob" "$line" | tee -a "$out/table.txt"
done < "$plan"
"$bin" db export "$out/refresh.tsv" --db "$SPTUNE_DB"
echo "== $n problems measured again, $failed failed (log: $out/check.log) =="
cat "$out/table.txt"
