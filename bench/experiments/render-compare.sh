#!/usr/bin/env bash
# Compares two folders written by bench/experiments/render-dump.sh, ignoring what is allowed to change when
# templates are refactored: the header comment, the kernels' names and white space. Prints the
# files that still differ (with their diff when VERBOSE=1) and a count.
#   bash bench/experiments/render-compare.sh OLD NEW
set -uo pipefail
old="$1" new="$2"
norm() {  # file -> normalized text on stdout
  local names
  names=$(sed -n -E 's@^/\* (launch|then) ([A-Za-z_0-9]+):.*@\2@p' "$1")
  local script="" i=0
  for n in $names; do script+="s/\\<$n\\>/KERNEL$i/g;"; i=$((i + 1)); done
  # drop the header comment (old: one line; new: up to "change the template. */"), then names and blanks
  awk 'NR == 1 && /^\/\* sptune .*do not edit\. \*\/$/ {next}
       NR == 1 && /^\/\* sptune / {skip = 1}
       skip {if (/change the template\. \*\/$/) skip = 0; next}
       {print}' "$1" | sed "$script" | tr -s ' \n\t' ' '
}
same=0 differ=0
for f in "$old"/*.cu; do
  b=$(basename "$f")
  if [ ! -f "$new/$b" ]; then echo "missing in $new: $b"; differ=$((differ + 1)); continue; fi
  if [ "$(norm "$f")" = "$(norm "$new/$b")" ]; then
    same=$((same + 1))
  else
    differ=$((differ + 1)); echo "differs: $b"
    [ "${VERBOSE:-0}" = 1 ] && diff <(norm "$f" | fold -w 120) <(norm "$new/$b" | fold -w 120) | head -20
  fi
done
echo "$same identical (header, names and white space aside), $differ differ"
[ "$differ" -eq 0 ]
