#!/usr/bin/env bash
# twell-ffn's hot/cold split on the GPU machine over a build made elsewhere:
#   bash bench/twell-hot.sh [build-static]
# For each layer (d, d_ff), token count M and mean nonzeros per token (realistic data: heavy-tailed
# neurons, 30 % dead, 0.5 % dense tokens; ORDER=1 (default): the neurons in calibrated order, the most
# frequent first, for every configuration; ORDER=0: as drawn),
# one `sptune check` (one data set, one cuBLAS dense gated FFN timed in the same run) over the hot
# values: the first hot/8 of the neurons as a dense tensor-core slice, the rest sparse (0: all
# sparse, 8: the dense layer). Env: LAYERS ("d,d_ff ..."), MS, NNZ, HOTS, PRODUCER and SPARSE (the
# configuration's two parts; at d > 2048 warps=16 becomes 8: shared memory), ROUTES (the dense path's
# thresholds tried with each hot < 8; the table shows the faster), RUNS, DIST (problem dimensions appended to
# each shape, e.g. ",dead=0,tail=0,dense=0" for uniform firing), GENS (the data generators, "0 1": every
# configuration on each; gen 1 makes the activations by the layer itself), GEN1 (dimensions appended for gen 1
# alone, e.g. ",spread=0.1": gen 0 has no spread). Prints a markdown table last:
# each hot value's time and speed-up, and the best; with several generators, what the lookup serves from
# such rows: the hot value of the best worst speed-up over them.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup "${1:-build-static}" twell-hot
prod="${PRODUCER:-mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,group_m=8,slots=15}"
sparse0="${SPARSE:-warps=16,split=1,unroll=4,ldg=nc,dots=8,dunroll=2,route=512}"
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
      # the lookup's choice over the generators: the best worst speed-up (measured on all), and of the hot values
      # within 3 % of it, the best mean (api/sp_api_across.c)
      if [ "$(wc -w <<< "$gens")" -gt 1 ]; then
        line="| $d | $f | $m | $nnz |" scores=""
        for h in $hots; do
          wm=$(awk -v n="$(wc -w <<< "$gens")" '{if (NF < n) {print 0, 0; exit} m = $1; s = 0
                for (i = 1; i <= NF; i++) {s += $i; if ($i < m) m = $i}; print m, s / NF}' <<< "${speed[$h]:-}")
          line+=" ${wm% *}x |"
          scores+="$h $wm"$'\n'
        done
        pick=$(awk 'NF == 3 {h[NR] = $1; w[NR] = $2; m[NR] = $3; if ($2 > bw) bw = $2}
                    END {for (i in h) if (bw > 0 && w[i] >= 0.97 * bw && (best == "" || m[i] > bm)) {best = h[i]; bm = m[i]; bx = w[i]}
                         if (best == "") print "none"; else printf "hot=%s %.2fx worst, %.2fx mean", best, bx, bm}' <<< "$scores")
        worst+=("$line $pick |")
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
