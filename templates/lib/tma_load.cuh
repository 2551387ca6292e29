/* Box (c0 = column, c1 = row) of the map's matrix into shared memory at dst; completes on bar. */
__device__ __forceinline__ void sp_tma_load_2d(sp_u32 dst, const sp_tmap *map, int c0, int c1, sp_u32 bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

