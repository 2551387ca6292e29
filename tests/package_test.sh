#!/usr/bin/env bash
# The package as a user gets it: `cmake --install` into a fresh prefix; the shared library exports
# only the API (and has its SONAME), the static one defines no other global symbol; the example is
# built against the installed copy with find_package (shared and static) and with pkg-config, and
# runs (without a GPU it compiles the kernel for an H200 and says that it launched nothing).
#   bash tests/package_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build="$1" src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # pass, fail, ok, bad, check
prefix="${SPTUNE_TEST_TMP:-/tmp}/package.$$"
rm -rf "$prefix"
mkdir -p "$prefix"
export SPTUNE_CACHE_DIR="$prefix/cache" SPTUNE_DB="$prefix/none.db"
cmake --install "$build" --prefix "$prefix/usr" > "$prefix/install.log" 2>&1 && ok || { bad "cmake --install"; cat "$prefix/install.log"; }
lib="$prefix/usr/lib"
for f in include/sptune.h include/sptune_version.h bin/sptune lib/libsptune.a lib/pkgconfig/sptune.pc \
         lib/cmake/sptune/sptuneConfig.cmake share/sptune/templates/twell/twell-ffn.lua share/sptune/results/h200.tsv \
         share/doc/sptune/LICENSE; do
  [ -e "$prefix/usr/$f" ] && ok || bad "installed tree lacks $f"
done
so=$(ls "$lib"/libsptune.so.*.*.* 2>/dev/null | head -1)
[ -n "$so" ] && ok || bad "no versioned libsptune.so"
# (grep -q on a here-string: in a pipeline under pipefail, grep's early exit makes the writer fail: flaky)
grep -q 'SONAME.*\[libsptune\.so\.0\.5\]' <<< "$(readelf -d "$so" 2>/dev/null)" && ok || bad "SONAME is not libsptune.so.0.5"
others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -E '^(sptune_|_init$|_fini$)' | head -5)
[ -z "$others" ] && ok || bad "the shared library exports more than the API: $others"
grep -q ' T sptune_kernel_get$' <<< "$(nm -D --defined-only "$so")" && ok || bad "sptune_kernel_get not exported"
others=$(nm -g --defined-only "$lib/libsptune.a" 2>/dev/null | awk 'NF == 3 {print $3}' | grep -v '^sptune_' | head -5)
[ -z "$others" ] && ok || bad "the static library defines more global symbols than the API: $others"
"$prefix/usr/bin/sptune" --version > /dev/null 2>&1 && ok || bad "the installed sptune does not run"

# the Python package as installed (where the prefix's Python looks: cmake/python_sitedir.py) finds the installed
# library by itself
pydir=$(sed -n 's/^-- Python package: \(.*\)\/sptune$/\1/p' "$prefix/install.log")
case "$pydir" in "$prefix/usr/lib/python3"*) ok ;; *) bad "the Python package went to '$pydir'" ;; esac
# a prefix Python does not search: the install says so, and how to import it anyway
grep -qF -- "-- Python package: $pydir is not on the sys.path of " "$prefix/install.log" &&
  grep -qF "import sptune needs PYTHONPATH=$pydir " "$prefix/install.log" && ok ||
  bad "the install does not say that $pydir is off sys.path: $(grep 'Python package' "$prefix/install.log")"
out=$(cd / && env -u SPTUNE_LIB PYTHONPATH="$pydir" python3 -c 'import sptune; print(sptune.version(), sptune._library()._name)' 2>&1)
grep -q "^[0-9.]* $lib/libsptune.so.0.5$" <<< "$out" && ok || bad "the installed Python package: $out"

# pip install ./python packages the library it belongs with (python/setup.py); the same build step here, without
# pip (which needs wheel or a network to build)
if python3 -c 'import setuptools' 2> /dev/null; then
  rm -rf "$prefix/pybuild"
  if (cd "$src/python" && SPTUNE_LIB="$build/libsptune.so.0.5" \
        python3 setup.py -q egg_info -e "$prefix" build --build-base "$prefix/pybuild" > "$prefix/pybuild.log" 2>&1)
  then ok; else bad "python/setup.py build: $(tail -5 "$prefix/pybuild.log")"; fi
  out=$(cd / && env -u SPTUNE_LIB PYTHONPATH="$prefix/pybuild/lib" python3 -c 'import sptune; print(sptune.version(), sptune._library()._name)' 2>&1)
  grep -q "^[0-9.]* $prefix/pybuild/lib/sptune/libsptune.so.0.5$" <<< "$out" && ok || bad "the packaged library: $out"
  out=$(cd "$src/python" && env -u SPTUNE_LIB python3 setup.py -q egg_info -e "$prefix" build \
         --build-base "$prefix/pybuild2" 2>&1)
  [ -d "$src/build" ] || grep -q "libsptune.so.0.5 not found: build it first" <<< "$out" && ok || bad "no library: $out"
else
  echo "package: SKIPPED the Python build step (no setuptools on this machine)"
fi

# the example through find_package, shared and static
if cmake -S "$src/examples" -B "$prefix/ex" -DCMAKE_PREFIX_PATH="$prefix/usr" > "$prefix/ex.log" 2>&1 &&
   cmake --build "$prefix/ex" >> "$prefix/ex.log" 2>&1; then ok; else bad "building the example"; tail -20 "$prefix/ex.log"; fi
for exe in twell_ffn twell_ffn_static; do
  out=$("$prefix/ex/$exe" 2>&1); rc=$?
  [ $rc -eq 0 ] && ok || bad "$exe exited $rc: $out"
  grep -q -E "workspace [0-9.]+ MiB|relative error" <<< "$out" && ok || bad "$exe: unexpected output: $out"
done
grep -q "libsptune.so.0.5 => $lib/" <<< "$(ldd "$prefix/ex/twell_ffn")" && ok || bad "the example does not load the installed libsptune.so.0.5"

# the example through pkg-config (the shared library)
export PKG_CONFIG_PATH="$lib/pkgconfig"
cuda_inc=$(grep -m1 'CUDAToolkit_INCLUDE_DIR:' "$build/CMakeCache.txt" | cut -d= -f2)
cuda_lib=$(grep -m1 'CUDAToolkit_LIBRARY_DIR:' "$build/CMakeCache.txt" | cut -d= -f2)
if cc -std=c11 -o "$prefix/ex/pc_twell_ffn" "$src/examples/twell_ffn.c" $(pkg-config --cflags --libs sptune) \
      -I"$cuda_inc" -L"$cuda_lib" -lcudart_static -ldl -lrt -lpthread -lm 2> "$prefix/pc.log"; then
  ok
  "$prefix/ex/pc_twell_ffn" > /dev/null 2>&1 && ok || bad "the pkg-config build does not run"
else
  bad "building with pkg-config: $(head -5 "$prefix/pc.log")"
fi
echo "package: $pass passed, $fail failed"
[ $fail -eq 0 ] && rm -rf "$prefix"
[ $fail -eq 0 ]
