/* The warp's buffer: the largest block (header, bitmap, 2048 values: 273 16-byte units) and one unit more, so that
 * a value index masked to 11 bits plus a lane's last offsets stays inside; the 16 x SP_TW tile is written over it. */
#define SP_STAGE_UNITS 274

/* Block xo[0] of the extras into the warp's tile t (its buffer): the block's bytes staged first with 16-byte copies,
 * all in flight at once (the image is read coalesced, whatever the values' scatter), then decoded from shared memory.
 * Step s's values start at its header's offset, a lane's at the count of the bits of the lanes before it; lane l's 8
 * bits of step s are bits 8 r + 2 (s % 4) + h of its word 2 l + s / 4: element h of register r of its
 * mma.m16n8k16 A fragment (runtime/sp_slotfill.h). The host validated the image (sp_sf_walk_bitmap); the size taken
 * and the value indices are bounded anyway, so that no block, however damaged, reads outside the buffer. The
 * decode repeats slotfill_expand_bitmap.cuh's step: that form stays, unchanged, while shipped results measure it. */
__device__ __forceinline__ void sp_expand_block(const unsigned char *extras, const sp_u32 *xo,
                                                unsigned short (*t)[SP_TW], int lane)
{
    const sp_u32 u0 = xo[0], u1 = xo[1];
    const int units = u1 > u0 ? (int)min(u1 - u0, (sp_u32)SP_STAGE_UNITS - 1u) : 0;
    const unsigned char *blk = extras + (size_t)u0 * 16;
    unsigned char *stage = (unsigned char *)t;
    const sp_u32 sbase = sp_smem_u32(stage);
    for (int e = lane; e < units; e += 32) sp_cp_async16(sbase + 16 * e, blk + 16 * e, 16);
    sp_cp_async_commit();
    sp_cp_async_wait<0>();
    __syncwarp();
    const uint2 mw = *(const uint2 *)(stage + 16 + 8 * lane);
    const unsigned short *hdr = (const unsigned short *)stage, *vals = (const unsigned short *)(stage + 16 + 256);
    sp_u32 o[8][4];
    #pragma unroll
    for (int s = 0; s < 8; ++s) {
        const sp_u32 bits = ((s < 4 ? mw.x : mw.y) >> (2 * (s & 3))) & 0x03030303u;
        const int cnt = __popc(bits);
        int pre = cnt;
        #pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int v = __shfl_up_sync(0xffffffffu, pre, d);
            if (lane >= d) pre += v;
        }
        const unsigned short *v = vals + (((hdr[s] >> 1) + pre - cnt) & 2047);
        int k = 0;
        #pragma unroll
        for (int r = 0; r < 4; ++r) {
            const unsigned short lo = ((bits >> (8 * r)) & 1u) ? v[k] : (unsigned short)0;
            k += (bits >> (8 * r)) & 1u;
            const unsigned short hi = ((bits >> (8 * r + 1)) & 1u) ? v[k] : (unsigned short)0;
            k += (bits >> (8 * r + 1)) & 1u;
            o[s][r] = lo | (sp_u32)hi << 16;
        }
    }
    __syncwarp();
    const int g = lane >> 2, tq = lane & 3;
    #pragma unroll
    for (int s = 0; s < 8; ++s)
        #pragma unroll
        for (int r = 0; r < 4; ++r) *(sp_u32 *)&t[g + 8 * (r & 1)][16 * s + 2 * tq + 8 * (r >> 1)] = o[s][r];
}
