#!/usr/bin/env bash
# Where twell-ffn's time goes, kernel by kernel, on the GPU machine over a build made elsewhere:
#   bash bench/experiments/twell-profile.sh [build-static]      SHAPE=... [SPARSE=... or CONFIGS="cfg;cfg"] PEER=build-peer
# Nsight Compute (clocks left alone) on one `sptune check` per configuration: for each kernel of the
# pipeline's last launch its duration, warp instructions, achieved occupancy, L1/L2/DRAM throughput,
# L1 and L2 hit rates, registers and long-scoreboard stalls. With PEER (a checkout of SakanaAI/
# sparser-faster-llms, see bench/experiments/twell-peer.py) the same numbers for the peer's two kernels on the same
# recipe of data (bench/experiments/twell-peer.py's generator takes M, D, F, nnz, dense, gen and spread from SHAPE; dead, tail
# and dense_nnz stay at its defaults, the problems' defaults). Prints one table per run.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
bench_setup "${1:-build-static}" twell-profile
shape="${SHAPE:-M=16384,D=2048,F=5632,nnz=40,dense=0,order=1}"
prod="mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,group_m=8,slots=15"
sparse="${SPARSE:-warps=2,split=1,unroll=4,ldg=nc,consumer=regmma,dots=1,dunroll=1,route=512}"   # the register consumer on tensor cores (served since 2026-12-02)
configs="${CONFIGS:-$prod,$sparse,hot=0;$prod,$sparse,hot=1}"
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
metrics+=,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct
metrics+=,launch__registers_per_thread,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
metrics+=,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed
# table LOG: the last profiled launch of each kernel in ncu's raw CSV, one markdown row each
table() {
  python3 - "$1" <<'PY'
import csv, sys
rows = {}
with open(sys.argv[1]) as f:
    lines = [l for l in f if l.startswith('"')]
if not lines:
    print("(no ncu rows)"); sys.exit()
r = list(csv.reader(lines))
head, data = r[0], [x for x in r[1:] if x and x[0].isdigit()]
ix = {h: i for i, h in enumerate(head)}
def g(x, m):
    try: return float(x[ix[m]].replace(",", ""))
    except (KeyError, ValueError): return float("nan")
for x in data:
    rows[x[ix["Kernel Name"]].split("(")[0]] = x
print("| kernel | µs | warp inst (M) | occupancy % | issue % | L1 % | L2 % | DRAM % | L1 hit % | L2 hit % | regs | long-sb/issue | SM % |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
tot = 0.0
for name, x in rows.items():
    us = g(x, "gpu__time_duration.sum") / 1000.0
    tot += us
    short = name.replace("sp_twell_ffn_", "")[:60]
    print(f"| {short} | {us:.1f} | {g(x,'smsp__inst_executed.sum')/1e6:.1f} | {g(x,'sm__warps_active.avg.pct_of_peak_sustained_active'):.1f} "
          f"| {g(x,'smsp__issue_active.avg.pct_of_peak_sustained_active'):.1f} | {g(x,'l1tex__throughput.avg.pct_of_peak_sustained_active'):.1f} "
          f"| {g(x,'lts__throughput.avg.pct_of_peak_sustained_elapsed'):.1f} | {g(x,'dram__throughput.avg.pct_of_peak_sustained_elapsed'):.1f} "
          f"| {g(x,'l1tex__t_sector_hit_rate.pct'):.1f} | {g(x,'lts__t_sector_hit_rate.pct'):.1f} | {g(x,'launch__registers_per_thread'):.0f} "
          f"| {g(x,'smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio'):.2f} | {g(x,'sm__throughput.avg.pct_of_peak_sustained_elapsed'):.1f} |")
print(f"| sum | {tot:.1f} | | | | | | | | | | | |")
PY
}
n=0
IFS=';' read -ra cfgs <<< "$configs"
for cfg in "${cfgs[@]}"; do
  n=$((n + 1))
  ncu --clock-control none --csv --page raw --print-units base --metrics "$metrics" -k regex:sp_twell_ffn -c 24 \
      "$bin" check twell-ffn --gpu auto --shape "$shape" --config "$cfg" --runs 1 --no-db > "$out/ncu.$n.csv" 2> "$out/ncu.$n.err"
  "$bin" check twell-ffn --gpu auto --shape "$shape" --config "$cfg" --runs 10 --no-db 2>&1 | grep -E "twell-ffn|baseline" | tail -2
  echo "== $shape | ${cfg##*route=}"
  table "$out/ncu.$n.csv"
done
if [ -n "${PEER:-}" ]; then
  M=$(sed -nE 's/.*M=([0-9]+).*/\1/p' <<< "$shape") D=$(sed -nE 's/.*D=([0-9]+).*/\1/p' <<< "$shape")
  F=$(sed -nE 's/.*F=([0-9]+).*/\1/p' <<< "$shape")
  nnz=$(sed -nE 's/(^|.*,)nnz=([0-9.]+).*/\2/p' <<< "$shape") dense=$(sed -nE 's/(^|.*,)dense=([0-9.]+).*/\2/p' <<< "$shape")
  gen=$(sed -nE 's/(^|.*,)gen=([0-9]+).*/\2/p' <<< "$shape") spread=$(sed -nE 's/(^|.*,)spread=([0-9.]+).*/\2/p' <<< "$shape")
  lib="$PWD/${1:-build-static}/prefix/lib"
  ncu --clock-control none --csv --page raw --print-units base --metrics "$metrics" -k regex:"mm_wgmma|t2d" -c 4 \
      env SPTUNE_LIB="$lib/libsptune.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
      LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" python3 bench/experiments/twell-peer.py --peer "$PEER" --shapes "${M}x${D}x${F}" --nnz "$nnz" --dense "${dense:-0.5}" \
      --gen "${gen:-0}" --spread "${spread:-0.5}" > "$out/ncu.peer.csv" 2> "$out/ncu.peer.err"
  echo "== peer (SakanaAI) on ${M}x${D}x${F}, nnz $nnz, dense ${dense:-0.5} %, gen ${gen:-0} (spread ${spread:-0.5})"
  table "$out/ncu.peer.csv"
  grep -E "^\|" "$out/ncu.peer.csv" | tail -6
fi
