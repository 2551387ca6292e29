#!/usr/bin/env bash
# The command line as a user meets it: exit codes and messages. Usage: cli_test.sh path/to/sptune
set -u
bin="$1"
tmp="${SPTUNE_TEST_TMP:-/tmp}/cli.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
export SPTUNE_CACHE_DIR="$tmp/cache" SPTUNE_DB="$tmp/tuning.db"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # pass, fail, ok, bad, check

# expect CODE "description" cmd...: runs cmd, keeps stdout+stderr in $out, checks the exit code
expect() {
  local want="$1" what="$2"; shift 2
  out="$("$@" 2>&1)"; local rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else
    bad "$what: exit $rc, want $want"; echo "$out" | head -20 | sed 's/^/    /'; fi
}
# has "description" pattern: checks the last output
has() {
  if grep -qE -- "$2" <<< "$out"; then ok; else
    bad "$1: output lacks /$2/"; echo "$out" | head -20 | sed 's/^/    /'; fi
}

expect 0 "--version" "$bin" --version;            has "--version" "^sptune [0-9]+\.[0-9]+\.[0-9]+"
# The fault-injection template (tests/gpu_faults.sh, GPU only) stays loadable and bindable here.
SPTUNE_TEMPLATES="$(dirname "$0")/fault-templates" expect 0 "ops, fault templates" "$bin" ops
has "the fault template declares the gemm's arguments" "output +bf16\\* +C"
expect 0 "--help" "$bin" --help;                  has "--help" "commands:"; has "--help lists compile" "compile"
for c in info ops space gen compile check tune best db encode; do
  expect 0 "$c --help" "$bin" "$c" --help;        has "$c --help" "usage: sptune $c"
done
expect 0 "--gpu --help" "$bin" --gpu auto --help; has "--gpu --help" "default workload"
expect 0 "--gpu --help, no value" "$bin" --gpu --help; has "--gpu --help usage" "usage: sptune --gpu G"
expect 2 "main job, unknown option" "$bin" --bogus; has "main job error names no command" "^sptune: unknown option '--bogus'"
expect 2 "main job, --sample 0" "$bin" --gpu auto --sample 0; has "--sample 0 refused" "at least 1"
expect 2 "main job, bad budget" "$bin" --gpu auto --budget soon; has "main job budget message" "bad --budget 'soon'"
expect 2 "main job, bad strategy" "$bin" --gpu auto --strategy guess; has "main job strategy message" "unknown strategy"
expect 2 "main job, --timeout 0" "$bin" --gpu auto --timeout 0; has "--timeout range" "--timeout wants 1 to 86400 seconds"
expect 2 "tune, --jobs 99" "$bin" tune gemm --shape M=64,N=64,K=64 --jobs 99; has "--jobs range" "--jobs 99 is more than 32"
expect 2 "__worker without its arguments" "$bin" __worker; has "__worker is internal" "internal command"
expect 2 "no arguments" "$bin"
expect 2 "unknown command" "$bin" frobnicate;     has "unknown command" "unknown command 'frobnicate'"
expect 2 "unknown option" "$bin" space gemm --gpu h100 --bogus; has "unknown option" "unknown option '--bogus'"
expect 2 "missing op" "$bin" space --gpu h100;    has "missing op" "missing argument"
expect 2 "missing --gpu value" "$bin" space gemm --gpu; has "missing value" "needs a value"

# GPU presence: info and the main job either work (GPU here) or say so in one line with exit 3.
if "$bin" info >/dev/null 2>&1; then
  gpu=1
  expect 0 "info with GPU" "$bin" info;           has "info lists a GPU" "GPU 0"
else
  gpu=0
  expect 3 "info without GPU" "$bin" info;        has "info says no GPU" "GPUs +none: no NVIDIA driver found"
  has "info still reports NVRTC" "NVRTC +[0-9]+\.[0-9]+"
  expect 3 "--gpu auto without GPU" "$bin" --gpu auto
  has "--gpu auto says why and what to do" "no GPU to tune.*--gpu h100"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && ok || bad "--gpu auto: more than one line"
  expect 2 "check, usage error before the GPU" "$bin" check gemm --gpu h100 --shape 64x64x64 --config bm=100
  has "check config error" "bm=100 is not allowed"
  expect 2 "check, --config with --sample" "$bin" check gemm --gpu h100 --shape 64x64x64 --config bm=64 --sample 3
  expect 3 "tune without GPU" "$bin" tune gemm --gpu h100 --shape 64x64x64 --budget 10evals
  has "tune says compile-only" "no h100 GPU on this machine"
  expect 2 "tune, bad budget" "$bin" tune gemm --shape 64x64x64 --budget 5x; has "bad budget" "bad --budget '5x'"
  expect 2 "tune, bad strategy" "$bin" tune gemm --shape 64x64x64 --strategy anneal; has "bad strategy" "unknown strategy"
  expect 2 "tune, no shape" "$bin" tune gemm --gpu h100; has "tune needs a shape" "--shape is required"
  expect 2 "tune, contradictory resume" "$bin" tune gemm --shape 64x64x64 --resume --no-resume
  expect 3 "check without GPU" "$bin" check gemm --gpu h100 --shape 64x64x64
  has "check says compile-only" "no h100 GPU on this machine"
  expect 3 "space --gpu auto without GPU" "$bin" space gemm --gpu auto --count
  has "space auto hints at a target" "name a target"
  expect 3 "check --gpu auto without GPU" "$bin" check gemm --gpu auto --shape 64x64x64
  has "check auto says timing needs the GPU" "timing needs a GPU .*sptune compile"
fi

expect 0 "ops" "$bin" ops;                        has "ops lists gemm" "^gemm \(dense\)"; has "ops lists params" "stages"
has "ops shows the data dimensions and their defaults" "problem: M,D,F,nnz\[=40\],dead\[=30\],tail\[=0.7\],dense\[=0.5\]"
has "ops says its defaults are the generic ones" "^\(defaults: the templates' generic ones; .*'sptune ops --gpu G' shows them\)"
has "ops: slotfill-spmm serves the bitmap layout" "^slotfill-spmm \(slotfill\): .*\(the bitmap layout"
has "ops: slotfill-spmm's decode defaults to the bitmap" "^  decode +\{bitmap, .*\} +default bitmap "
# twell-ffn's own parameters: its epi has no pingpong values (those are twell-d2t's), nor does its text say so
ffn_epi="$(awk '/^[a-z]/ { op = $1 } op == "twell-ffn" && /^  epi /' <<< "$out")"
[ -n "$ffn_epi" ] && ! grep -qi pingpong <<< "$ffn_epi" && ok || bad "twell-ffn's epi in ops: '$ffn_epi'"
# ops --gpu: each parameter's default as that GPU gets it, the configuration gen renders without --config
expect 0 "ops --gpu h100" "$bin" ops --gpu h100;   has "ops --gpu names the target" "^\(defaults: those for h100 \(sm_90a\)"
ffn_ops="$(awk '/^[a-z]/ { op = $1 } op == "twell-ffn" && /^  [a-z_0-9]+ +\{/ && match($0, /\} +default [^ ]+/) {
  d = substr($0, RSTART, RLENGTH); sub(/\} +default /, "", d); printf "%s%s=%s", n++ ? "," : "", $1, d }' <<< "$out")"
expect 0 "gen twell-ffn --gpu h100" "$bin" gen twell-ffn --gpu h100
ffn_gen="$(sed -n 's/^ \* configuration //p' <<< "$out")"
[ -n "$ffn_gen" ] && [ "$ffn_ops" = "$ffn_gen" ] && ok || bad "ops --gpu h100 twell-ffn defaults '$ffn_ops', gen renders '$ffn_gen'"
expect 2 "ops --gpu bogus" "$bin" ops --gpu bogus;  has "ops --gpu bogus refused" "unknown GPU profile 'bogus'"
expect 0 "space count h100" "$bin" space gemm --gpu h100 --count; has "positive count" "^[1-9][0-9]*$"
h100=$out
expect 0 "space count rtx" "$bin" space gemm --gpu rtx-pro-6000 --count; has "positive count" "^[1-9][0-9]*$"
# The RTX PRO 6000 has less shared memory per block, so fewer pipelines fit.
[ "$out" -lt "$h100" ] && ok || bad "rtx-pro-6000 space ($out) not smaller than h100 ($h100)"
# twell-ffn's space is too large to walk in seconds: counted from random subtrees, said so with its interval
expect 0 "space count estimate" "$bin" space twell-ffn --gpu h100 --count
has "an estimate with its interval" "^[1-9][0-9]* \(estimated: 95 % interval [0-9.e+]+ to [0-9.e+]+, from [0-9]+ of"
expect 2 "--exact alone" "$bin" space gemm --gpu h100 --exact; has "--exact needs --count" "goes with --count"
expect 0 "space list" "$bin" space gemm --gpu sm_80 --limit 3; has "space lists configs" "^mainloop=mma,bm=[0-9]+,bn="
[ "$(printf '%s\n' "$out" | wc -l)" -eq 3 ] && ok || bad "--limit 3"
expect 2 "unknown gpu" "$bin" space gemm --gpu tpu;  has "unknown gpu lists names" "h100"
expect 2 "old gpu" "$bin" space gemm --gpu sm_75;    has "sm_75 refused" "sm_80"
expect 2 "unknown op" "$bin" space nosuchop --gpu h100; has "unknown op named" "nosuchop"

expect 0 "gen default" "$bin" gen gemm --gpu h100;  has "gen prints CUDA C" 'extern "C" __global__'
expect 0 "gen config" "$bin" gen gemm --gpu h100 --config bm=64,bn=128,stages=3
has "gen uses the config" "configuration mainloop=mma,bm=64,bn=128,"; has "gen names the kernel by what differs from the default" "sp_gemm_bm64[(]"
a="$out"; "$bin" gen gemm --gpu h100 --config bm=64,bn=128,stages=3 >"$tmp/b.cu" 2>&1
[ "$a" = "$(cat "$tmp/b.cu")" ] && ok || bad "gen is not deterministic"
expect 0 "gen a pipeline" "$bin" gen twell-ffn --gpu rtx-pro-6000 --shape M=1000,D=64,F=300,nnz=5
has "gen names each kernel's launch" "^/\* then sp_twell_ffn_produce.*grid \(24, 1, 1\)"
has "gen names the second kernel's launch" "^/\* then sp_twell_ffn_consume.*block \(256, 1, 1\)"
expect 1 "gen a pipeline for a generic target" "$bin" gen twell-ffn --gpu sm_90a --shape M=300,D=256,F=1000
has "gen says a persistent grid needs a GPU model" "grid\[1\] = 0: its grid follows the SM count, which the target sm_90a leaves unknown"
expect 0 "best, no results" "$bin" best twell-ffn --gpu h100 --shape M=300,D=200,F=1000,nnz=40 --no-db --no-shipped
has "best says where the configuration came from" "^twell-ffn M=300,D=200,F=1000,nnz=40: mainloop=wgmma,bm=.* \(default: the dense layer on cuBLAS in the op's place \(nothing measured for this op near the problem\); the configuration beside it: nothing usable recorded.*no database of the user's"
has "best lists both kernels of the pipeline" "kernel 2: grid"
has "best shows the argument list" "arguments: const bf16 \*X \(M x D\)"
expect 0 "best, no file" "$bin" best gemm --gpu h100 --shape M=64,N=64,K=64 --db "$tmp/none.db" --no-shipped
has "best with no file" "default: nothing usable recorded for gemm on h100 \(no database at"
expect 0 "best, the shipped results" "$bin" best twell-ffn --gpu h200 --shape M=16384,D=2048,F=5632,nnz=40 --no-db
has "best serves the shipped H200 results" "\(exact: tuned for M=16384,D=2048,F=5632,nnz=40,dead=30,tail=0.7,dense=0.5,dense_nnz=2000,at=2,order=0,gen=0,spread=0.5 on h200 at .*results shipped with sptune"
has "best prints the workspace to allocate" "workspace: .* MiB for activations like real models', .*dense_capacity=1675 \(bound 16384\)"
expect 0 "best, denser activations" "$bin" best twell-ffn --gpu h200 --shape M=16384,D=2048,F=5632,nnz=1000,order=1 --no-db
has "best serves the hot/cold split and says what it assumes" "hot=[1-7]: the first [1-7]/8 of the neurons run as a dense slice; .*sptune_twell_hot_order"
expect 0 "best, denser activations as they come" "$bin" best twell-ffn --gpu h200 --shape M=16384,D=2048,F=5632,nnz=1000 --no-db
has "best serves the dense layer for neurons as they come" "hot=8,pf=0,passes=1,hotloop=staged,pdl=0,dense=mma \(exact"
# dist numbers kinds of pruning: weights pruned another way are near (one step), whatever the numbers
expect 0 "best, Slot-Filling of a kind not recorded" "$bin" best slotfill-spmm --gpu h200 --no-db --shape M=4096,K=4096,N=16,sparsity=50,fp16=0,dist=0
has "another kind of pruning is the nearest, not nothing" "\(nearest: tuned for M=4096,K=4096,N=16,sparsity=50,fp16=0,dist=[12] on h200"
expect 2 "best, unknown op" "$bin" best nope --gpu h100 --shape M=1;   has "best unknown op" "no template 'nope'"
expect 2 "best, no shape" "$bin" best gemm --gpu h100;                   has "best needs --shape" "--shape is required"
expect 2 "best, bad shape" "$bin" best gemm --gpu h100 --shape M=1,N=2
# every dimension in its range when the problem is parsed: the kernels' integers, the data's percentages
for bad in "M=-4096,N=4096,K=4096 M must be an integer from 1 to 2147483647" "M=0,N=8,K=8 M must be" \
           "M=1e20,N=8,K=8 M must be" "M=4096.5,N=8,K=8 M must be an integer" "M=3000000000,N=8,K=8 M must be"; do
  expect 2 "best, ${bad%% *}" "$bin" best gemm --gpu h100 --shape "${bad%% *}" --no-db; has "names the dimension" "${bad#* }"
done
for bad in "nnz=-5 nnz must be a number from 0" "dead=150 dead must be a number from 0 to 100" "dense=200 dense must be" \
           "at=1.5 at must be an integer from 0 to 2"; do
  expect 2 "best twell-ffn, ${bad%% *}" "$bin" best twell-ffn --gpu h100 --shape "M=64,D=256,F=1024,${bad%% *}" --no-db
  has "names the data dimension" "${bad#* }"
done
expect 2 "slotfill, a fraction for a percentage" "$bin" best slotfill-spmm --gpu h100 --no-db \
  --shape M=256,K=256,N=8,sparsity=0.5,fp16=0,dist=1
has "sparsity is a percentage" "sparsity must be an integer from 0 to 99"
expect 2 "gen bad value" "$bin" gen gemm --gpu h100 --config bm=100; has "bad value message" "bm=100 is not allowed"
expect 2 "gen bad key" "$bin" gen gemm --gpu h100 --config bq=1;     has "bad key message" "unknown parameter 'bq'"
expect 2 "gen invalid combination" "$bin" gen gemm --gpu rtx-pro-6000 --config bm=256,bn=256,bk=64,stages=5
has "invalid combination says why" "not valid for rtx-pro-6000"

expect 0 "compile sample rtx" "$bin" compile gemm --gpu rtx-pro-6000 --sample 4
has "compile reports 4" "4 variants for rtx-pro-6000 \(sm_120\): 4 compiled, 0 failed"; has "compile reports regs" "^1 +ok +[0-9]+"
expect 0 "compile again hits the cache" "$bin" compile gemm --gpu rtx-pro-6000 --sample 4; has "cache hit" "cached"
expect 0 "compile sm_90a" "$bin" compile gemm --gpu h100 --sample 2 --no-cache; has "h100 compiled" "2 compiled, 0 failed"
# a generic pre-Hopper target: twell-ffn's default (the dense path) uses only what sm_80 has
expect 0 "compile twell-ffn sm_80" "$bin" compile twell-ffn --gpu sm_80 --no-cache; has "sm_80 compiled" "1 compiled, 0 failed"
expect 2 "compile conflicting options" "$bin" compile gemm --gpu h100 --all --sample 2
expect 2 "compile --all on a space too large to list" "$bin" compile twell-ffn --gpu h100 --all
has "compile --all on a space too large to list" "too many to list .*--sample N"

if [ "$gpu" -eq 0 ]; then
  expect 0 "--gpu h100 without the GPU compiles only" "$bin" --gpu h100 --sample 2
  has "compile-only notice" "no h100 GPU on this machine"; has "compiled count" "2 variants compiled for sm_90a, 0 failed"
fi

# Workloads and shards (compile-only here).
printf '# mine\ngemm M=512,N=512,K=512 small\ntwell-t2d M=64,F=1000,D=256,T=128,S=15,nnz=10\n' > "$tmp/w.txt"
expect 0 "--workload" "$bin" --gpu h100 --workload "$tmp/w.txt" --sample 1
has "workload ops compiled" "twell-t2d +1 variants compiled for sm_90a, 0 failed"
printf 'gemm M=1,N=2\n' > "$tmp/bad.txt"
expect 2 "--workload with a bad problem" "$bin" --gpu h100 --workload "$tmp/bad.txt"; has "bad workload item named" "workload item 1"
expect 2 "--shard out of range" "$bin" --gpu h100 --shard 3/2; has "shard message" "1 <= I <= N"

# Sharing databases: a file from elsewhere is checked against the local templates.
cfg="$("$bin" space gemm --gpu h200 --limit 1)"
row() { printf 'NVIDIA H200\th200\t9\t0\t132\t13.0\t13.0\t0.1.0\t%s\tabc\t%s\t%s\tok\t10\t0.4\t0.4\t0.4\t0.4\t0.4\t0.17\t0.001\tevents\t255\t49152\t0\t1764400000\t\t0.25\t0.11\n' "$1" "$2" "$3"; }
{ echo "# sptune tuning results v1"; echo "columns"
  row gemm M=4096,N=4096,K=4096 "$cfg"
  row gemm M=4096,N=4096,K=4096 "bm=100"
  row frobnicate M=1 x=1
  row gemm M=4096,N=4096 "$cfg"; } > "$tmp/in.tsv"
echo "not a results file" > "$tmp/garbage.tsv"
expect 2 "db import of a foreign file" "$bin" db import "$tmp/garbage.tsv" --db "$tmp/fresh.db"
has "db import refuses it" "not an sptune results file"
[ ! -e "$tmp/fresh.db" ] && ok || bad "a refused import left $tmp/fresh.db"
expect 0 "db import" "$bin" db import "$tmp/in.tsv" --db "$tmp/shared.db"
has "db import counts" "4 results read, 1 new, 0 already recorded, 3 rejected"; has "db import names the first rejection" "in.tsv:4: .*bm=100"
expect 0 "db info" "$bin" db info --db "$tmp/shared.db"; has "db info" "schema 1, 1 results"
expect 0 "db show" "$bin" db show --db "$tmp/shared.db"; has "db show lists the result" "^h200 +gemm +M=4096,N=4096,K=4096 +0.4000 +0.1700 +0.42x +0.25 +(mainloop=mma,)?bm="
has "db show marks results of another template version" "\[stale: earlier template\]"
expect 2 "db show --limit 0" "$bin" db show --db "$tmp/shared.db" --limit 0; has "db show --limit checked" "positive count"
expect 0 "db verify" "$bin" db verify --db "$tmp/shared.db"
has "db verify" "integrity ok \(quick_check\), schema 1, 1 results: 1 valid for the local templates, 0 not"
# a file written before the energy columns (27 fields) still imports, its energy unmeasured
{ echo "# sptune tuning results v1"; echo "columns"; row gemm M=4096,N=4096,K=4096 "$cfg" | cut -f1-27; } > "$tmp/old.tsv"
expect 0 "db import, no energy columns" "$bin" db import "$tmp/old.tsv" --db "$tmp/old.db"; has "db import of an older file" "1 results read, 1 new, 0 already recorded, 0 rejected"
expect 0 "db show, no energy" "$bin" db show --db "$tmp/old.db"; has "db show: energy not measured" "^h200 +gemm +M=4096,N=4096,K=4096 +0.4000 +0.1700 +0.42x +- +"
# Kernel Tuner's T4 results, both ways (one op, problem and GPU per file)
expect 0 "db export --t4" "$bin" db export "$tmp/t4.json" --t4 --op gemm --shape M=4096,N=4096,K=4096 --gpu h200 --db "$tmp/shared.db"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["schema_version"] == "1.0.0" and len(d["results"]) == 1 and d["results"][0]["invalidity"] == "correct" and d["results"][0]["times"]["runtimes"] == [0.4]' "$tmp/t4.json" && ok || bad "db export --t4 is not the expected T4 JSON"
expect 0 "db import --t4" "$bin" db import "$tmp/t4.json" --t4 --op gemm --shape M=4096,N=4096,K=4096 --gpu h200 --db "$tmp/t4.db"
has "db import --t4 counts" "1 results read, 1 new, 0 already recorded, 0 rejected"
expect 2 "db import --t4 without the target" "$bin" db import "$tmp/t4.json" --t4 --db "$tmp/t4.db"; has "--t4 names what it needs" "needs --op, --shape and --gpu"
printf '{"schema_version": "1.0.0", "results": [{"configuration": {"bm": 100}, "times": {"runtimes": [1]}, "invalidity": "correct", "correctness": 1}, {"configuration": {"bm": 64}, "times": {}, "invalidity": "compile", "correctness": 0}]}' > "$tmp/t4b.json"
expect 0 "db import --t4, one configuration out of the space" "$bin" db import "$tmp/t4b.json" --t4 --op gemm --shape M=64,N=64,K=64 --gpu h200 --db "$tmp/t4.db"
has "db import --t4 rejects it, takes the failure" "2 results read, 1 new, 0 already recorded, 1 rejected"; has "db import --t4 says why" "bm=100"
printf '[1, 2]' > "$tmp/t4c.json"
expect 2 "db import --t4, not T4" "$bin" db import "$tmp/t4c.json" --t4 --op gemm --shape M=64,N=64,K=64 --gpu h200 --db "$tmp/t4.db"
has "db import --t4 refuses a non-T4 file" "not T4 results"
printf '{"results": [{"configuration": {"bm": 64}, "times": {"runtimes": [1]}, "invalidity": "great", "correctness": 1}]}' > "$tmp/t4d.json"
expect 2 "db import --t4, bad invalidity" "$bin" db import "$tmp/t4d.json" --t4 --op gemm --shape M=64,N=64,K=64 --gpu h200 --db "$tmp/t4.db"
has "db import --t4 names the bad value" "invalidity 'great' is not a T4 value"
cp "$tmp/shared.db" "$tmp/edited.db"
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE configurations SET text = ?", ("bm=100",)); c.commit()' "$tmp/edited.db"
expect 1 "db verify, a configuration edited out of the space" "$bin" db verify --db "$tmp/edited.db"
has "db verify counts it" "0 valid for the local templates, 1 not"; has "db verify names it" "first not valid: gemm .*bm=100"
expect 0 "db export" "$bin" db export "$tmp/out.tsv" --db "$tmp/shared.db"
[ "$(sed -n 3p "$tmp/out.tsv")" = "$(sed -n 3p "$tmp/in.tsv")" ] && ok || bad "export does not round-trip the imported line"
expect 0 "db import from a pipe" sh -c 'cat "$1" | "$2" db import - --db "$3"' sh "$tmp/in.tsv" "$bin" "$tmp/piped.db"
has "db import from a pipe counts" "4 results read, 1 new, 0 already recorded, 3 rejected"
expect 0 "db merge" "$bin" db merge "$tmp/shared.db" --db "$tmp/other.db"; has "db merge" "1 new, 0 already recorded, 0 rejected"
expect 0 "db merge again" "$bin" db merge "$tmp/shared.db" --db "$tmp/other.db"; has "db merge again adds nothing" "1 results read, 0 new, 1 already recorded, 0 rejected"
# Before anything is tuned here, looking at the default database looks at the shipped results (and writes nothing).
SPTUNE_DB="$tmp/untuned/tuning.db" expect 0 "db info, nothing tuned yet" "$bin" db info
has "db info shows the shipped results" "the results shipped with sptune: sptune database, schema [0-9]+, [1-9][0-9]* results"
has "db info says none is tuned here" "no database at $tmp/untuned/tuning.db yet"
SPTUNE_DB="$tmp/untuned/tuning.db" expect 0 "db show, nothing tuned yet" "$bin" db show --limit 1; has "db show lists shipped rows" "^h200 +gemm"
SPTUNE_DB="$tmp/untuned/tuning.db" expect 0 "db export, nothing tuned yet" "$bin" db export "$tmp/shipped.tsv"
[ "$(wc -l < "$tmp/shipped.tsv")" -gt 100 ] && [ ! -e "$tmp/untuned" ] && ok || bad "export of the shipped results"
expect 2 "db info, --db names a missing file" "$bin" db info --db "$tmp/untuned/x.db"; has "a named missing database is an error" "no such database"
expect 2 "db merge into itself" "$bin" db merge "$tmp/shared.db" --db "$tmp/shared.db"
printf 'not a results file\n' > "$tmp/junk.tsv"
expect 2 "db import junk" "$bin" db import "$tmp/junk.tsv" --db "$tmp/shared.db"; has "junk refused" "not an sptune results file"
has "db import names both headers it reads" "first line must be '# sptune tuning results v2' or '# sptune tuning results v1'\); nothing imported"
expect 2 "db info on a text file" "$bin" db info --db "$tmp/junk.tsv"; has "text file refused" "not an sptune database"
# Exit codes for inputs named on the command line that cannot be used (missing, unreadable, malformed, not
# what they should be): 2, as for any wrong input; nothing is recorded.
expect 2 "db import of a missing file" "$bin" db import "$tmp/missing.tsv" --db "$tmp/shared.db"; has "missing import named" "cannot read .*missing.tsv"
expect 2 "db merge of a text file" "$bin" db merge "$tmp/junk.tsv" --db "$tmp/shared.db"; has "merge source refused" "not an sptune database"
expect 2 "db merge of a missing file" "$bin" db merge "$tmp/missing.db" --db "$tmp/shared.db"; has "missing merge source" "no such database"
expect 2 "db import --t4 of a missing file" "$bin" db import "$tmp/missing.json" --t4 --op gemm --shape M=64,N=64,K=64 --gpu h200 --db "$tmp/shared.db"
expect 2 "main job, missing workload" "$bin" --gpu h100 --workload "$tmp/missing.txt" --dry-run; has "missing workload named" "missing.txt"
expect 2 "encode, missing input" "$bin" encode "$tmp/missing.npy" --out "$tmp/x.sf"; has "missing input named" "missing.npy"
[ ! -e "$tmp/x.sf" ] && ok || bad "encode of a missing input wrote a file"
# a stream that never ends: refused once past what the shape declares, not read until memory runs out
for bad in 1024x1024abc 1024x1024x1 x1024 0x4; do
  expect 2 "encode --shape $bad" "$bin" encode "$tmp/missing.npy" --shape "$bad" --dtype fp16 --out "$tmp/x.sf"
  has "--shape $bad refused" "--shape wants ROWSxCOLS"
done
expect 2 "encode --out ''" "$bin" encode "$tmp/missing.npy" --out ""; has "an empty --out refused" "--out FILE is required"
expect 2 "encode, an endless input" "$bin" encode /dev/zero --shape 1024x1024 --dtype fp16 --out "$tmp/z.sf"
has "the endless input refused by the size the shape declares" "/dev/zero: more than the 2162688 bytes a 1024 x 1024 matrix"
[ ! -e "$tmp/z.sf" ] && ok || bad "encode of an endless input wrote a file"
# shapes past the reader's element limit (2^36): refused in one line, the stream not read (timeout: it was, until
# memory ran out); a number too large for 64 bits refused as such, not wrapped into a byte count
for big in 2000000x2000000 300000x300000 262144x262145; do
  expect 2 "encode --shape $big, an endless input" timeout 20 "$bin" encode /dev/zero --shape "$big" --dtype fp16 --out "$tmp/z.sf"
  has "--shape $big names the limit" "^sptune encode: --shape $big is more than the 68719476736 \(2\^36\) elements"
done
# no shape: only .npy declares its size, so anything else is refused before it is read
expect 2 "encode an endless input without a shape" timeout 20 "$bin" encode /dev/zero --out "$tmp/z.sf"
has "an input without a shape that is not .npy is refused unread" "/dev/zero: neither .npy nor safetensors: a raw matrix needs its shape"
printf '%064d' 0 > "$tmp/64.raw"
for big in 99999999999999999999x1 1x99999999999999999999; do
  expect 2 "encode --shape $big" "$bin" encode "$tmp/64.raw" --shape "$big" --dtype fp16 --out "$tmp/z.sf"
  has "--shape $big refused, no wrapped count" "--shape wants ROWSxCOLS .* not '$big'"
done
[ ! -e "$tmp/z.sf" ] && ok || bad "encode of a too large shape wrote a file"
# --out a folder: refused before the work (it used to fail at the rename, naming a temp file)
mkdir -p "$tmp/outdir"
expect 2 "encode --out a folder" "$bin" encode "$tmp/64.raw" --shape 4x8 --dtype fp16 --out "$tmp/outdir"
has "--out a folder refused" "^sptune encode: --out $tmp/outdir names a folder"
expect 2 "encode --out ending in /" "$bin" encode "$tmp/64.raw" --shape 4x8 --dtype fp16 --out "$tmp/newdir/"
has "--out ending in / refused" "^sptune encode: --out $tmp/newdir/ names a folder"
[ -z "$(ls -A "$tmp/outdir")" ] && [ ! -e "$tmp/newdir" ] && ok || bad "encode --out a folder wrote something"
expect 2 "db unknown action" "$bin" db frob

# encode: a pruned matrix in a safetensors checkpoint this test writes (bf16, 50 % zeros, with another
# tensor and metadata beside it), and the same bytes as raw; damaged and foreign inputs refused.
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp" <<'PY'
import json, random, struct, sys
random.seed(7)
rows, cols = 70, 300
vals = []
for _ in range(rows * cols):
    if random.random() < 0.5:
        vals.append(0)
        continue
    b = struct.unpack('<I', struct.pack('<f', random.gauss(0, 1)))[0]
    vals.append(((b + 0x7fff + ((b >> 16) & 1)) >> 16) or 1)
data = struct.pack('<%dH' % len(vals), *vals)
hdr = json.dumps({'__metadata__': {'format': 'pt'}, 'bias': {'dtype': 'F32', 'shape': [2], 'data_offsets': [0, 8]},
                  'mlp.up.weight': {'dtype': 'BF16', 'shape': [rows, cols], 'data_offsets': [8, 8 + len(data)]}}).encode()
open(sys.argv[1] + '/w.safetensors', 'wb').write(struct.pack('<Q', len(hdr)) + hdr + b'\0' * 8 + data)
open(sys.argv[1] + '/w.raw', 'wb').write(data)
open(sys.argv[1] + '/dense.raw', 'wb').write(struct.pack('<%dH' % (rows * cols), *[v or 0x3f80 for v in vals]))
PY
  expect 0 "encode a safetensors tensor" "$bin" encode "$tmp/w.safetensors" --tensor mlp.up.weight --out "$tmp/w.sf"
  has "encode reports the parts" "bitmaps .* of dense"; has "encode reports the total" "total .* of dense"
  has "encode: the default encoding is the bitmap" "decode=bitmap"
  has "encode decodes back" "decoded back bit for bit"
  has "encode names the problem, the pruning measured" "problem +M=70,K=300,N=16,sparsity=50,fp16=0,dist=0"
  expect 0 "encode raw, list layout" "$bin" encode "$tmp/w.raw" --shape 70x300 --dtype bf16 --out "$tmp/w2.sf" --config decode=list,dbits=6,fill=1 --json
  has "encode --json" '"encoding":"window=128,dbits=6,fill=1,decode=list,dtype=bf16"'
  has "encode --json names the problem" '"problem":"M=70,K=300,N=16,sparsity=50,fp16=0,dist=0"'
  has "encode --json, list layout: its parts and the total" '"bytes_slots":[0-9]+,"bytes_residual":[0-9]+,"bytes_index":[0-9]+,"bytes_total":[1-9][0-9]*,'
  expect 0 "encode raw, three layers" "$bin" encode "$tmp/w.raw" --shape 70x300 --dtype bf16 --out "$tmp/w5.sf" --config decode=owner,dbits=6,fill=1
  has "encode reports the three layers" "Sparse-TC .* of dense"
  cp "$tmp/w.raw" "$tmp/q\"u	o.raw"   # a quote and a tab in the name: JSON must escape them
  expect 0 "encode --json, a name to escape" "$bin" encode "$tmp/q\"u	o.raw" --shape 70x300 --dtype bf16 \
    --out "$tmp/w4.sf" --json
  has "encode --json escapes strings" 'q\\"u\\to\.raw'
  # the bitmap layout's parts under the names its text output gives them, and the total
  has "encode --json, bitmap layout: the text's names" '"bytes_values":[1-9][0-9]*,"bytes_bitmaps":[1-9][0-9]*,"bytes_padding":[0-9]+,"bytes_total":[1-9][0-9]*,"bytes_dense":42000'
  if grep -qE '"bytes_(tc|slots|residual|index)"' <<< "$out"; then bad "bitmap --json keeps the three-layer names: $out"; else ok; fi
  printf '%s' "$out" | python3 -c 'import json, sys; json.loads(sys.stdin.read())' && ok || bad "encode --json is not valid JSON: $out"
  expect 0 "encode raw, default layout" "$bin" encode "$tmp/w.raw" --shape 70x300 --dtype bf16 --out "$tmp/w3.sf"
  cmp -s "$tmp/w.sf" "$tmp/w3.sf" && ok || bad "the same matrix from two files encodes differently"
  expect 0 "encode a matrix that is not sparse" "$bin" encode "$tmp/dense.raw" --shape 70x300 --dtype bf16 --out "$tmp/d.sf"
  has "encode warns about a dense matrix" "warning: .* 0.0% sparse; its encoding is 1.1[0-9] of dense bytes"
  expect 2 "encode, no tensor name" "$bin" encode "$tmp/w.safetensors" --out "$tmp/x.sf"; has "tensor name asked" "name the tensor"
  expect 2 "encode, unknown tensor" "$bin" encode "$tmp/w.safetensors" --tensor nope --out "$tmp/x.sf"; has "unknown tensor" "no tensor named 'nope'"
  expect 2 "encode, F32 tensor" "$bin" encode "$tmp/w.safetensors" --tensor bias --out "$tmp/x.sf"; has "F32 refused" "BF16 or F16 is needed"
  expect 2 "encode raw, wrong shape" "$bin" encode "$tmp/w.raw" --shape 70x301 --dtype bf16 --out "$tmp/x.sf"
  expect 2 "encode, bad config" "$bin" encode "$tmp/w.raw" --shape 70x300 --dtype bf16 --out "$tmp/x.sf" --config window=100
  expect 2 "encode, no --out" "$bin" encode "$tmp/w.raw" --shape 70x300 --dtype bf16
  [ ! -e "$tmp/x.sf" ] && ok || bad "a refused encode left a file"
  # best --data: a TwELL layer's problem measured from its own calibration batch. The gate weights make the
  # activations known: 40 neurons fire for every token (bias +100), 300 only for token 0 (a dense token: its
  # feature 1 is on), 172 never (dead); the other weights are too small to change a sign.
  python3 - "$tmp" <<'PY'
import json, random, struct, sys
random.seed(3)
T, D, F = 64, 128, 512
def bf16(v):
    b = struct.unpack('<I', struct.pack('<f', v))[0]
    return (b + 0x7fff + ((b >> 16) & 1)) >> 16
x = []
for r in range(T):
    x += [bf16(1.0), bf16(1.0 if r == 0 else 0.0)] + [bf16(random.uniform(-1, 1)) for _ in range(D - 2)]
w = []
for j in range(F):
    bias, dense = (100.0, 0.0) if j < 40 else (-100.0, 200.0) if j < 340 else (-100.0, 0.0)
    w += [bf16(bias), bf16(dense)] + [bf16(random.uniform(-0.01, 0.01)) for _ in range(D - 2)]
up = [bf16(random.uniform(-1, 1)) for _ in range(F * D)]
down = [bf16(random.uniform(-1, 1)) for _ in range(D * F)]   # nn.Linear's D x F
parts, off, hdr = [], 0, {'x': {'dtype': 'BF16', 'shape': [T, D - 1], 'data_offsets': [0, T * (D - 1) * 2]}}
for name, vals, shape in (('layer.in', x, [T, D]), ('mlp.gate_proj.weight', w, [F, D]), ('mlp.up_proj.weight', up, [F, D]),
                          ('mlp.down_proj.weight', down, [D, F]), ('odd.down', down[:F * (D - 1)], [D - 1, F])):
    b = struct.pack('<%dH' % len(vals), *vals)
    hdr[name] = {'dtype': 'BF16', 'shape': shape, 'data_offsets': [off, off + len(b)]}
    parts.append(b)
    off += len(b)
hdr = json.dumps(hdr).encode()
open(sys.argv[1] + '/layer.safetensors', 'wb').write(struct.pack('<Q', len(hdr)) + hdr + b''.join(parts))
PY
  names="x=layer.in,gate=mlp.gate_proj.weight"
  expect 0 "best --data" "$bin" best twell-ffn --gpu h200 --no-db --data "$tmp/layer.safetensors" --tensors "$names"
  has "best --data measures the problem" \
    "measured from .*: M=64,D=128,F=512,nnz=45,dead=34,tail=0.0,dense=1.6,dense_nnz=340,at=2,order=0"
  has "best --data serves a kernel for it" "^twell-ffn M=64,D=128,F=512,nnz=45,.*: mainloop="
  expect 0 "best --data, batch and order" "$bin" best twell-ffn --gpu h200 --no-db --data "$tmp/layer.safetensors" \
    --tensors "$names" --tokens 4096 --order 1
  has "best --data --tokens --order" "measured from .*: M=4096,D=128,F=512,nnz=45,.*,order=1"
  expect 2 "best --data and --shape" "$bin" best twell-ffn --gpu h200 --data "$tmp/layer.safetensors" --shape M=64,D=128,F=512
  expect 2 "best --data, unknown tensor" "$bin" best twell-ffn --gpu h200 --data "$tmp/layer.safetensors"
  has "best --data names the missing tensor" "no tensor named 'w_gate'"
  expect 2 "best --data, D differs" "$bin" best twell-ffn --gpu h200 --data "$tmp/layer.safetensors" --tensors gate=mlp.gate_proj.weight
  has "best --data says D differs" "must share D"
  expect 2 "best --data, not TwELL" "$bin" best gemm --gpu h200 --data "$tmp/layer.safetensors"
  expect 2 "best --tensors without --data" "$bin" best twell-ffn --gpu h200 --tensors "$names" --shape M=64,D=128,F=512
  expect 2 "best --data, --order 3" "$bin" best twell-ffn --gpu h200 --data "$tmp/layer.safetensors" --tensors "$names" --order 3
  expect 2 "best --data, missing file" "$bin" best twell-ffn --gpu h200 --data "$tmp/none.safetensors"
  # tune --data: the problem measured and every tensor checked before the GPU question
  all="$names,up=mlp.up_proj.weight,down=mlp.down_proj.weight"
  if [ "$gpu" = 0 ]; then
    expect 3 "tune --data without a GPU" "$bin" tune twell-ffn --data "$tmp/layer.safetensors" --tensors "$all" --budget 2evals
    has "tune --data measures first" "measured from .*: M=64,D=128,F=512,nnz=45,dead=34,"
  fi
  expect 2 "tune --data, no up weights" "$bin" tune twell-ffn --data "$tmp/layer.safetensors" --tensors "$names"
  has "tune --data names the missing tensor" "no tensor named 'w_up'"
  expect 2 "tune --data, down of another shape" "$bin" tune twell-ffn --data "$tmp/layer.safetensors" \
    --tensors "$names,up=mlp.up_proj.weight,down=odd.down"
  has "tune --data says what the down weights should be" "the down weights .* want 128 x 512 \(nn.Linear\) or 512 x 128"
  expect 2 "tune --data and --shape" "$bin" tune twell-ffn --data "$tmp/layer.safetensors" --shape M=64,D=128,F=512
  expect 2 "tune --data, not twell-ffn" "$bin" tune gemm --data "$tmp/layer.safetensors"
  expect 2 "tune --data twell-ffn, --tokens" "$bin" tune twell-ffn --data "$tmp/layer.safetensors" --tensors "$all" --tokens 9
  # Slot-Filling weights of the user's: the problem from their encoding, for batches of --tokens (16)
  expect 0 "best slotfill --data" "$bin" best slotfill-spmm --gpu h200 --no-db --data "$tmp/w.safetensors" --tensors w=mlp.up.weight
  has "best slotfill --data measures the problem" "measured from .*: M=70,K=300,N=16,sparsity=50,fp16=0,dist=0"
  has "best slotfill --data serves a kernel" "^slotfill-spmm M=70,K=300,N=16,.*: dtype=bf16,"
  expect 0 "best slotfill --data --tokens" "$bin" best slotfill-spmm --gpu h200 --no-db --data "$tmp/w.safetensors" \
    --tensors w=mlp.up.weight --tokens 4
  has "best slotfill --data --tokens" "measured from .*: M=70,K=300,N=4,"
  expect 2 "best slotfill --data, default name" "$bin" best slotfill-spmm --gpu h200 --data "$tmp/w.safetensors"
  has "best slotfill --data names the tensor it looked for" "no tensor named 'weight'"
  expect 2 "best slotfill --data --order" "$bin" best slotfill-spmm --gpu h200 --data "$tmp/w.safetensors" \
    --tensors w=mlp.up.weight --order 1
  if [ "$gpu" = 0 ]; then
    expect 3 "tune slotfill --data without a GPU" "$bin" tune slotfill-spmm --data "$tmp/w.safetensors" \
      --tensors w=mlp.up.weight --tokens 8 --budget 2evals
    has "tune slotfill --data measures first" "measured from .*: M=70,K=300,N=8,sparsity=50,fp16=0,dist=0"
  fi
else
  echo "cli: python3 not found: the safetensors encode and best --data cases did not run"
fi

rm -rf "$tmp"
echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
