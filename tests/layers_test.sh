#!/usr/bin/env bash
# The layers (DESIGN.md): base < runtime < gen, db < tuner, api < cli. Two checks:
#  1. every #include "..." of every layer's sources names a header of its own layer or of one
#     below it (a header no layer holds, or a path around the include path, fails too);
#  2. the build refuses an upward include: with the runtime layer's include path, as the build
#     compiles runtime/, a file including a gen/ header does not compile, while the same file
#     including a base/ header does (so the check is not vacuous).
#   layers_test.sh SOURCE_DIR INCLUDE_LISTS_DIR CC
set -u
src=$1 lists=$2 cc=$3
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # pass, fail, ok, bad, check

declare -A allowed=(
  [base]="base include"
  [runtime]="runtime base include"
  [gen]="gen runtime base include"
  [db]="db base include"
  [tuner]="tuner gen db runtime base include"
  [api]="api gen db runtime base include"
  [cli]="cli tuner api gen db runtime base include")
layers="base runtime gen db tuner api cli"

declare -A owner
for layer in include $layers; do
  for h in "$src/$layer"/*.h "$src/$layer"/*.h.in; do
    [ -e "$h" ] || continue
    n=$(basename "$h" .in)
    [ -n "${owner[$n]:-}" ] && bad "$n is a header of both $layer and ${owner[$n]}"
    owner[$n]=$layer
  done
done

checked=0
for layer in $layers; do
  for f in "$src/$layer"/*.c "$src/$layer"/*.h; do
    [ -e "$f" ] || continue
    while IFS= read -r h; do
      checked=$((checked + 1))
      o=${owner[$h]:-}
      if [ -z "$o" ]; then bad "${f#$src/} includes \"$h\", which no layer holds"; continue; fi
      case " ${allowed[$layer]} " in
        *" $o "*) ;;
        *) bad "${f#$src/} ($layer) includes $h of the $o layer, which is not below it" ;;
      esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done
done
echo "scanned $checked includes"
[ "$checked" -gt 100 ] || bad "only $checked includes found: is $src the source folder?"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=()
while IFS= read -r d; do [ -n "$d" ] && flags+=("-I$d"); done < "$lists/runtime.include"
printf '#include "sp_status.h"\nint sp_layer_probe;\n' > "$tmp/down.c"
printf '#include "sp_template.h"\nint sp_layer_probe;\n' > "$tmp/up.c"
if ! "$cc" -fsyntax-only "${flags[@]}" "$tmp/down.c" 2> "$tmp/down.err"; then
  bad "the runtime layer cannot include base/sp_status.h:"; cat "$tmp/down.err"
fi
if "$cc" -fsyntax-only "${flags[@]}" "$tmp/up.c" 2> "$tmp/up.err"; then
  bad "the runtime layer's build accepted an include of gen/sp_template.h"
elif ! grep -q "sp_template.h" "$tmp/up.err"; then
  bad "the upward include failed for another reason:"; cat "$tmp/up.err"
else
  echo "the runtime layer's build refuses gen/sp_template.h: $(grep -m1 'sp_template.h' "$tmp/up.err")"
fi
[ "$fail" -eq 0 ]
