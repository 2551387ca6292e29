/* 8 bf16 from src (16-byte load when vec; else element by element, zeros past n) */
__device__ __forceinline__ sp_u32x4 sp_tile_ld8(const sp_bf16 *src, int n, bool vec)
{
    if (vec && n >= 8) return *(const sp_u32x4 *)src;
    sp_u32 w[4];
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
        const sp_u32 lo = 2 * e < n ? src[2 * e] : 0u, hi = 2 * e + 1 < n ? src[2 * e + 1] : 0u;
        w[e] = lo | (hi << 16);
    }
    const sp_u32x4 q = {w[0], w[1], w[2], w[3]};
    return q;
}
/* A (row, tile)'s entries (runtime/sp_twell.h) from its first packed word w: their number, and src
 * where they start; -1 for a lost tile. */
__device__ __forceinline__ int sp_twell_tile_entries(const sp_u32 *w, const sp_u32 *pool, const sp_u32 *&src)
{
    const sp_u32 w0 = w[0];
    if ((w0 & 0xC0000000u) == 0xC0000000u) return -1;
    if (w0 & 0x80000000u) {
        const sp_u32 off = w0 & 0x3fffffffu;
        src = pool + off + 1;
        return (int)pool[off];
    }
    src = w + 1;
    return (int)w0;
}
/* One warp: the positions of the bits set in mask[0 .. nwords-1] (nwords <= 32), ascending, into list
 * and their number into *n; every < width instead when width >= 0 (a range taken whole). */
__device__ __forceinline__ void sp_union_list(const unsigned *mask, int nwords, int width, int *list, int *n, int lane)
{
    const int lo = lane * 32;
    unsigned mw = lane < nwords ? mask[lane] : 0u;
    if (width >= 0) mw = lo >= width ? 0u : width - lo >= 32 ? 0xffffffffu : (1u << (width - lo)) - 1u;
    const int cnt = __popc(mw);
    int incl = cnt;
    #pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
    }
    int pos = incl - cnt;
    for (unsigned m = mw; m; m &= m - 1u) list[pos++] = lo + __ffs(m) - 1;
    if (lane == 31) *n = incl;
}
__device__ __forceinline__ void sp_mma4(float *d, sp_u32 a0, sp_u32 a1, sp_u32 a2, sp_u32 a3, sp_u32 b0, sp_u32 b1)
{
    const sp_u32 a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
    sp_mma_bf16_16816(d, a, b);
}

