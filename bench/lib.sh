# Shared by the bench scripts (sourced): the build, the output folder and database, and one
# verified, timed configuration at a time.
#   bench_setup BUILD NAME   sets bin, out (=$OUT or /tmp/sptune-NAME), SPTUNE_DB, SPTUNE_CACHE_DIR
#   bench_one OP SHAPE CONFIG RUNS LOG
#                            prints "ms baseline_ms speed-up" from `sptune check`'s table, or "failed"
bench_setup() {
  bin="$1/sptune"
  out="${OUT:-/tmp/sptune-$2}"
  mkdir -p "$out"
  export SPTUNE_DB="$out/tuning.db" SPTUNE_CACHE_DIR="${SPTUNE_CACHE_DIR:-/tmp/sptune-cache}"
}
bench_one() {
  local line
  line=$("$bin" check "$1" --gpu auto --shape "$2" --config "$3" --runs "$4" 2>&1 | tee -a "$5" |
         awk -v op="$1" '$2 == op && $3 ~ /^M=/ {print $4, $5, $6}' | tail -1)
  echo "${line:-failed}"
}
#   bench_sweep OP SHAPE RUNS LOG PREFIX LABEL...
#                            bench_one for each PREFIX,LABEL (PREFIX may be empty); fills rows with
#                            "| LABEL | ms | baseline ms | speed-up |" lines and says each as it goes
bench_sweep() {
  local op="$1" shape="$2" runs="$3" log="$4" prefix="$5" lab line
  shift 5
  rows=()
  for lab in "$@"; do
    line=$(bench_one "$op" "$shape" "${prefix:+$prefix,}$lab" "$runs" "$log")
    rows+=("| $lab | ${line// / | } |")
    echo "$lab: $line"
  done
}
