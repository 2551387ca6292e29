#!/usr/bin/env bash
# Tuning on a cluster, without a GPU: a workload split into N shards the way a job array runs them
# (N processes side by side, each with its own database), results supplied by import instead of a GPU,
# then merged. The shards must partition the workload (none twice, none missed), the merge must keep every
# result, and merging again must change nothing.
#   bash tests/shards_test.sh path/to/sptune path/to/db/data/h200.tsv
set -uo pipefail
bin="$(realpath "$1")" shipped="$(realpath "$2")"
tmp="${SPTUNE_TEST_TMP:-/tmp}/shards.$$"
rm -rf "$tmp" && mkdir -p "$tmp"
export SPTUNE_CACHE_DIR="$tmp/cache" SPTUNE_DB="$tmp/unused.db"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # pass, fail, ok, bad, check
N=3
# the workload: 10 slotfill-spmm problems that the shipped H200 results hold (current template)
awk -F'\t' 'NR > 2 && $9 == "slotfill-spmm" {print $9 " " $11}' "$shipped" | sort -u | head -10 > "$tmp/workload.txt"
[ "$(wc -l < "$tmp/workload.txt")" -eq 10 ] && ok || bad "the shipped data holds fewer than 10 slotfill-spmm problems"
# the shards' plans, side by side like an array's tasks
for i in $(seq 1 $N); do
  "$bin" --gpu auto --workload "$tmp/workload.txt" --shard "$i/$N" --dry-run > "$tmp/plan.$i" 2> "$tmp/plan.$i.err" &
done
wait
for i in $(seq 1 $N); do [ -s "$tmp/plan.$i" ] && ok || bad "shard $i/$N plans nothing: $(cat "$tmp/plan.$i.err")"; done
cat "$tmp"/plan.[0-9]* | sort > "$tmp/planned"
sort "$tmp/workload.txt" > "$tmp/wanted"
cmp -s "$tmp/planned" "$tmp/wanted" && ok || bad "the shards do not cover the workload exactly once: $(diff "$tmp/wanted" "$tmp/planned" | head -5)"
[ -z "$(uniq -d "$tmp/planned")" ] && ok || bad "a problem in two shards"
"$bin" --gpu auto --workload "$tmp/workload.txt" --shard "4/$N" --dry-run > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "--shard 4/3 not a usage error"
# each shard's results into its own database (what its GPU would have measured), side by side
head -2 "$shipped" > "$tmp/head.tsv"
for i in $(seq 1 $N); do
  awk -F'\t' -v plan="$tmp/plan.$i" 'BEGIN {while ((getline l < plan) > 0) want[l] = 1} want[$9 " " $11]' "$shipped" |
    cat "$tmp/head.tsv" - > "$tmp/shard.$i.tsv"
  "$bin" db import "$tmp/shard.$i.tsv" --db "$tmp/shard.$i.db" > "$tmp/import.$i.log" 2>&1 &
done
wait
total=0
for i in $(seq 1 $N); do
  rows=$(($(wc -l < "$tmp/shard.$i.tsv") - 2)); total=$((total + rows))
  "$bin" db export "$tmp/back.$i.tsv" --db "$tmp/shard.$i.db" > /dev/null 2>&1
  [ "$(($(wc -l < "$tmp/back.$i.tsv") - 2))" -eq "$rows" ] && ok || bad "shard $i: $rows rows imported, $(($(wc -l < "$tmp/back.$i.tsv") - 2)) kept"
done
# the merge a dependent job runs, then again
for i in $(seq 1 $N); do "$bin" db merge "$tmp/shard.$i.db" --db "$tmp/all.db" > /dev/null 2>&1 || bad "merge $i failed"; done
"$bin" db export "$tmp/all.tsv" --db "$tmp/all.db" > /dev/null 2>&1
[ "$(($(wc -l < "$tmp/all.tsv") - 2))" -eq "$total" ] && ok || bad "merged $(($(wc -l < "$tmp/all.tsv") - 2)) rows of $total"
key() { awk -F'\t' 'NR > 2 {print $2, $9, $11, $12, $15}' "$1" | sort; }
[ "$(key "$tmp/all.tsv")" = "$(cat "$tmp"/shard.[0-9]*.tsv | awk -F'\t' '$1 !~ /^#/ && $1 != "gpu_name" {print $2, $9, $11, $12, $15}' | sort)" ] &&
  ok || bad "the merged results differ from the shards'"
for i in $(seq 1 $N); do "$bin" db merge "$tmp/shard.$i.db" --db "$tmp/all.db" > /dev/null 2>&1 || bad "merge $i again failed"; done
"$bin" db export "$tmp/again.tsv" --db "$tmp/all.db" > /dev/null 2>&1
[ "$(key "$tmp/again.tsv")" = "$(key "$tmp/all.tsv")" ] && ok || bad "merging again changed the database"
"$bin" db verify --db "$tmp/all.db" > "$tmp/verify.log" 2>&1 && ok || bad "db verify: $(tail -2 "$tmp/verify.log")"
# examples/cluster/slurm-tune.sh as submitted to a stand-in for sbatch: the array's command is recorded (it
# needs GPUs), the merge job runs here over the shards' databases
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$tmp/fake" "$tmp/out"
for i in $(seq 1 $N); do cp "$tmp/shard.$i.db" "$tmp/out/shard-$i.db"; done
ln -s "$bin" "$tmp/fake/sptune"
cat > "$tmp/fake/sbatch" <<'SH'
#!/usr/bin/env bash
wrap="" dep=""
for a in "$@"; do case "$a" in --wrap) ;; --dependency=*) dep="$a" ;; esac; done
while [ $# -gt 0 ]; do [ "$1" = --wrap ] && wrap="$2"; shift; done
printf '%s\n' "$wrap" >> "$SBATCH_LOG"
if [ -n "$dep" ]; then bash -c "$wrap" || exit 1; fi
echo 4242
SH
chmod +x "$tmp/fake/sbatch"
PATH="$tmp/fake:$PATH" SBATCH_LOG="$tmp/sbatch.log" bash "$here/examples/cluster/slurm-tune.sh" "$tmp/workload.txt" $N "$tmp/out" 5m \
  > "$tmp/slurm.log" 2>&1 && ok || bad "slurm-tune.sh: $(tail -3 "$tmp/slurm.log")"
grep -q -- "--shard \$SLURM_ARRAY_TASK_ID/$N" "$tmp/sbatch.log" && ok || bad "the array does not tune shard \$SLURM_ARRAY_TASK_ID/$N"
[ -f "$tmp/out/tuning.tsv" ] && [ "$(key "$tmp/out/tuning.tsv")" = "$(key "$tmp/all.tsv")" ] && ok ||
  bad "the Slurm example's merge does not give the merged results"
echo "shards: $pass passed, $fail failed"
rm -rf "$tmp"
[ "$fail" -eq 0 ]
