#!/usr/bin/env bash
# twell-ffn's hot/cold split on the GPU machine over a build made elsewhere:
#   bash bench/tables/twell-hot.sh [build-static]
# For each layer (d, d_ff), token count M and mean nonzeros per token (realistic data: heavy-tailed
# neurons, 30 % dead, 0.5 % dense tokens; ORDER=1 (default): the neurons in calibrated order, the most
# frequent first, for every configuration; ORDER=0: as drawn),
# one `sptune check` (one data set, one cuBLAS dense gated FFN timed in the same run) over the hot
# values: the first hot/8 of the neurons as a dense tensor-core slice, the rest sparse (0: all
# sparse, 8: the dense layer). Env: LAYERS ("d,d_ff ..."), MS, NNZ, HOTS, PRODUCER and SPARSE (the
# configuration's two parts; the register consumer by default; a row consumer's warps=16 becomes 8 at
# d > 2048: shared memory), ROUTES (the dense path's thresholds tried with each hot < 8; the table shows the
# faster), RUNS, DIST (problem dimensions appended to each shape, e.g. ",dead=0,tail=0,dense=0" for uniform
# firing), GENS (the data generators, "0 1": every configuration on each; gen 1 makes the activations by the
# layer itself), GEN1 (dimensions appended for gen 1 alone, e.g. ",spread=0.1": gen 0 has no spread).
# Prints a markdown table last: each hot value's time and speed-up, and the best; with several generators,
# each hot value's worst speed-up over them and what `sptune best` serves from these rows and the shipped ones
# (the best worst case).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" twell-hot
prod="${PRODUCER:-mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,group_m=8,slots=15}"
sparse0="${SPARSE:-warps=2,split=1,unroll=4,ldg=nc,consumer=regmma,dots=1,dunroll=1,route=512}"
hots="${HOTS:-0 1 2 4 8}"
routes="${ROUTES:-512}"
order="${ORDER:-1}"
runs="${RUNS:-10}"
gens="${GENS:-0}"
rows=() worst=()
for layer in ${LAYERS:-2048,5632}; do
  d=${layer%,*} f=${layer#*,}
  sparse="$sparse0"
  [ "$d" -gt 2048 ] && sparse="${sparse/warps=16/warps=8}"
  for m in ${MS:-16384}; do
    for nnz in ${NNZ:-40 150 400 1000}; do
      declare -A speed=()
      for gen in $gens; do
        configs=""
        for h in $hots; do
          # hot=8 has no sparse part: its parameters stay at their defaults
          if [ "$h" = 8 ]; then
            configs+="${configs:+;}$prod,hot=8"
          else
            for r in $routes; do configs+="${configs:+;}$prod,${sparse/route=512/route=$r},hot=$h"; done
          fi
        done
        shape="M=$m,D=$d,F=$f,nnz=$nnz,order=$order${DIST:-},gen=$gen"
        [ "$gen" = 1 ] && shape+="${GEN1:-}"
        log=$("$bin" check twell-ffn --gpu auto --shape "$shape" --config "$configs" --runs "$runs" 2>&1 |
              tee -a "$out/hot.log")
        base=$(sed -nE 's/.* baseline .* ([0-9.]+) ms \(.*/\1/p' <<< "$log" | head -1)
        row="| $d | $f | $m | $nnz | $gen | ${base:-?} |"
        best="" bms=""
        for h in $hots; do
          ms=$(awk -v h=",hot=$h" '$2 == "ok" && substr($NF, length($NF) - length(h) + 1) == h {print $3}' <<< "$log" |
               sort -g | head -1)
          if [ -n "$ms" ] && [ -n "$base" ]; then
            row+=" $ms ($(awk -v b="$base" -v t="$ms" 'BEGIN {printf "%.2fx", b / t}')) |"
            speed[$h]="${speed[$h]:-} $(awk -v b="$base" -v t="$ms" 'BEGIN {printf "%.4f", b / t}')"
            if [ -z "$bms" ] || awk -v a="$ms" -v b="$bms" 'BEGIN {exit !(a < b)}'; then bms=$ms best=$h; fi
          else
            row+=" failed |"
          fi
        done
        [ -n "$bms" ] && row+=" hot=$best $(awk -v b="$base" -v t="$bms" 'BEGIN {printf "%.2fx", b / t}') |"
        rows+=("$row")
        echo "$shape: $row"
      done
      # per hot value its worst speed-up over the generators; then what the lookup serves from these rows and the
      # shipped ones (sptune best: the best worst case, api/sp_api_across.c)
      if [ "$(wc -w <<< "$gens")" -gt 1 ]; then
        line="| $d | $f | $m | $nnz |"
        for h in $hots; do
          w=$(awk -v n="$(wc -w <<< "$gens")" '{m = $1; for (i = 2; i <= NF; i++) if ($i < m) m = $i
                                                  print NF < n ? "-" : m "x"}' <<< "${speed[$h]:-0}")
          line+=" $w |"
        done
        served=$("$bin" best twell-ffn --gpu auto --shape "M=$m,D=$d,F=$f,nnz=$nnz,order=$order${DIST:-}" 2>&1 | head -1)
        pick="$(grep -o 'hot=[0-9]*' <<< "${served%% (*}" | tail -1) $(grep -o '[0-9.]*x the baseline' <<< "$served" | head -1)"
        worst+=("$line ${pick:-?} |")
      fi
      unset speed
    done
  done
done
echo
echo "producer: $prod; sparse part: $sparse0; routes tried: $routes"
# table FIRST_COLUMNS PER_HOT LAST ROWS...: a markdown table, one column per hot value
table() {
  local head="$1" per="$2" last="$3" sep h
  sep=$(sed 's/[^|][^|]*/---/g' <<< "$head")
  shift 3
  for h in $hots; do head+=" hot=$h $per |"; sep+="---|"; done
  echo "$head $last |"
  echo "$sep---|"
  printf '%s\n' "$@"
}
table "| d | d_ff | M | nnz/token | gen | cuBLAS ms |" ms best "${rows[@]}"
if [ "${#worst[@]}" -gt 0 ]; then
  echo
  echo "The worst speed-up over the generators ($gens) per hot value, and what the lookup serves:"
  table "| d | d_ff | M | nnz/token |" worst served "${worst[@]}"
fi
