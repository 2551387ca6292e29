SPTUNE_TEST_OPS=slotfill-spmm build-static/tests/test_gpu_ops > $OUT/gpu_ops.log 2>&1; grep -E "CHECK failed|checks" $OUT/gpu_ops.log | head -8
export SPTUNE_DB=$OUT/tuning.db SPTUNE_CACHE_DIR=/tmp/sptune-cache
for shape in M=14336,K=4096,N=8,sparsity=50,fp16=0,dist=1 M=4096,K=4096,N=1,sparsity=50,fp16=0,dist=1; do
  build-static/sptune tune slotfill-spmm --shape $shape --budget 80s --quiet 2>&1 | tail -3
done
b=$(build-static/sptune best slotfill-spmm --gpu auto --shape M=14336,K=4096,N=8,sparsity=50,fp16=0,dist=1 | head -1 | sed -E 's/^[^:]*: ([^ ]+) \(.*/\1/')
echo "best $b"
ncu --clock-control none -k regex:sp_slotfill -s 3 -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats build-static/sptune check slotfill-spmm --gpu auto --shape M=14336,K=4096,N=8,sparsity=50,fp16=0,dist=1 --config $b --runs 5 --no-db > $OUT/ncu.txt 2>&1
grep -E "Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Issued Warp|Registers Per|Dynamic Shared|No Eligible|Active Warps" $OUT/ncu.txt
sqlite3 $OUT/tuning.db "select 1" 2>/dev/null; build-static/sptune db export $OUT/results.tsv >/dev/null 2>&1; wc -l $OUT/results.tsv
