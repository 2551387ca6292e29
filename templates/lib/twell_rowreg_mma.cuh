
/* 8 bf16 of Wu or Wd at src, volatile when VEC: ptxas keeps volatile accesses in order, so every load of a step
 * (and x's volatile shared loads after them) is issued before its first mma, one round trip an entry (plain
 * loads it sinks below the dot product's mma: the Wd rows then wait for the Wu rows) */
template <bool VEC>
__device__ __forceinline__ sp_u32x4 sp_rvld8(const sp_bf16 *src)
{
    if (!VEC) return sp_rld8<false>(src);
    sp_u32x4 q;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w) : "l"(src));
    return q;
}
/* Entries k .. k + SP_RG - 1's rows of W (Wu or Wd; clamped to the batch's last entry as sp_rstep_load), each
 * load at a constant offset from its row's base (D: the kernel's 256 SP_RNCH when p.D has no partial chunk,
 * which drops the guards) */
template <bool VEC>
__device__ __forceinline__ void sp_rmma_load(const sp_bf16 *__restrict__ W, int col, int k, int cnt, int D, int lane,
                                             sp_u32x4 (&r)[SP_RG][SP_RNCH])
{
    const sp_u32x4 zero = {0u, 0u, 0u, 0u};
    #pragma unroll
    for (int j = 0; j < SP_RG; ++j) {
        const sp_bf16 *p = W + (size_t)__shfl_sync(SP_FULL, col, min(k + j, cnt - 1)) * D + lane * 8;
        #pragma unroll
        for (int q = 0; q < SP_RNCH; ++q) r[j][q] = q * 256 + lane * 8 < D ? sp_rvld8<VEC>(p + q * 256) : zero;
    }
}
