/* Record b's 16 x 64 elements into the warp's tile: per k32 step s, lane l's word w holds the two kept values of
 * group t + 4 (w >> 1) of row g + 8 (w & 1) (g = l / 4, t = l % 4); their columns in the group are the nibble of
 * metadata lane 4 g + 2 s + (w >> 1) at bit 16 (w & 1) + 4 t: idx0 | idx1 << 2 (runtime/sp_slotfill.h). */
__device__ __forceinline__ void sp_expand_block(const unsigned char *rec, unsigned short (*t)[SP_TW], int lane)
{
    const sp_u32 meta = ((const sp_u32 *)(rec + 16 * 64))[lane];
    const int g = lane >> 2, tq = lane & 3;
    #pragma unroll
    for (int s = 0; s < 2; ++s) {
        const uint4 q = *(const uint4 *)(rec + (s * 32 + lane) * 16);
        const sp_u32 w4[4] = {q.x, q.y, q.z, q.w};
        #pragma unroll
        for (int w = 0; w < 4; ++w) {
            const sp_u32 mwd = __shfl_sync(0xffffffffu, meta, 4 * g + 2 * s + (w >> 1));
            const sp_u32 nib = (mwd >> (16 * (w & 1) + 4 * tq)) & 15u, i0 = nib & 3u, i1 = nib >> 2;
            const sp_u32 lo = w4[w] & 0xffffu, hi = w4[w] >> 16;
            /* the group's 4 elements as two words (selects: no local-memory array) */
            const sp_u32 e01 = (i0 == 0u ? lo : 0u) | (i0 == 1u ? lo << 16 : 0u) | (i1 == 0u ? hi : 0u) | (i1 == 1u ? hi << 16 : 0u);
            const sp_u32 e23 = (i0 == 2u ? lo : 0u) | (i0 == 3u ? lo << 16 : 0u) | (i1 == 2u ? hi : 0u) | (i1 == 3u ? hi << 16 : 0u);
            *(uint2 *)&t[g + 8 * (w & 1)][32 * s + 4 * (tq + 4 * (w >> 1))] = make_uint2(e01, e23);
        }
    }
}

