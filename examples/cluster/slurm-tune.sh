#!/usr/bin/env bash
# Tune a workload on a Slurm cluster: one array task per shard, each tuning its share of the problems on
# every GPU of its node into a database of its own; then one job, started when every task has ended,
# merges the shards' databases and exports the file to share (`sptune db import` on any machine).
#
#   bash examples/cluster/slurm-tune.sh WORKLOAD SHARDS OUTDIR [BUDGET]
#   e.g. bash examples/cluster/slurm-tune.sh my-problems.txt 8 /shared/tuning 30m
#
# Needs `sptune` on PATH on the nodes and OUTDIR on a file system every node sees. Check the plan first,
# without a GPU: for i in $(seq 1 SHARDS); do sptune --gpu auto --workload WORKLOAD --shard $i/SHARDS --dry-run; done
set -euo pipefail
workload="$(realpath "$1")" shards="$2" out="$3" budget="${4:-30m}"
mkdir -p "$out"
# the array: task i tunes shard i/SHARDS; --gpu all runs one worker per GPU of the node
array=$(sbatch --parsable --array=1-"$shards" --job-name=sptune-tune --gres=gpu:8 --time=02:00:00 \
  --output="$out/tune-%a.log" --wrap "sptune --gpu all --workload '$workload' --shard \$SLURM_ARRAY_TASK_ID/$shards \
  --budget $budget --db '$out/shard-'\$SLURM_ARRAY_TASK_ID'.db'")
# the merge: after every task (afterany: a failed task's results are merged too, they are as valid)
sbatch --dependency=afterany:"$array" --job-name=sptune-merge --output="$out/merge.log" --wrap "set -e
  for db in '$out'/shard-*.db; do sptune db merge \"\$db\" --db '$out/all.db'; done
  sptune db verify --db '$out/all.db'
  sptune db export '$out/tuning.tsv' --db '$out/all.db'"
echo "submitted array $array ($shards shards) and its merge; results: $out/tuning.tsv"
