#!/usr/bin/env bash
# On the GPU machine: the main job (`sptune --gpu auto --budget 2m`) on a fresh
# database, then `sptune best` for every default problem (what the runtime API now serves and where it
# came from), and the served configuration timed against the shipped one in one run wherever they differ.
#   bash bench/checks/main-job.sh [build-static] [budget]
set -uo pipefail
build="${1:-build-static}"
budget="${2:-2m}"
out="${OUT:-/tmp/sptune-main}"
mkdir -p "$out"
export SPTUNE_CACHE_DIR="${SPTUNE_CACHE_DIR:-/tmp/sptune-cache}" SPTUNE_DB="$out/fresh.db"
rm -f "$SPTUNE_DB"
bin="$build/sptune"
echo "+ sptune --gpu auto --budget $budget (fresh database)"
start=$(date +%s)
"$bin" --gpu auto --budget "$budget" 2>&1 | tee "$out/main.log" | grep -E "^\[|^gpu |^h200 " | cut -c1-230
echo "(main job: $(( $(date +%s) - start )) s)"
"$bin" ops >/dev/null
while read -r op problem _; do
  [ -z "$op" ] && continue
  served="$("$bin" best "$op" --gpu auto --shape "$problem" 2>&1 | head -1)"
  shipped="$("$bin" best "$op" --gpu auto --shape "$problem" --no-db 2>&1 | head -1)"
  echo "$served" | cut -c1-400
  sc="$(echo "$served" | sed -E 's/^[^:]*: ([^ ]*) .*/\1/')"; hc="$(echo "$shipped" | sed -E 's/^[^:]*: ([^ ]*) .*/\1/')"
  if [ "$sc" != "$hc" ]; then
    echo "  served differs from the shipped one: both timed in one run"
    "$bin" check "$op" --gpu auto --shape "$problem" --config "$sc;$hc" --no-db 2>&1 | grep -E "^ +[0-9]+/[0-9]+ " | cut -c1-200
  fi
done < <(sed -n 's/^ *{"\([a-z0-9-]*\)", "\([^"]*\)".*/\1 \2/p' tuner/sp_workload.c)
