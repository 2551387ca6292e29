/* Block b's 16 x 128 elements into the warp's tile: step s's values start at its header's offset, a lane's at the
 * count of the bits of the lanes before it; lane l's 8 bits of step s are bits 8 r + 2 (s % 4) + h of its word
 * 2 l + s / 4: element h of register r of its mma.m16n8k16 A fragment (runtime/sp_slotfill.h). */
__device__ __forceinline__ void sp_expand_block(const unsigned char *blk, unsigned short (*t)[SP_TW], int lane)
{
    const uint2 mw = *(const uint2 *)(blk + 16 + 8 * lane);
    const unsigned short *vals = (const unsigned short *)(blk + 16 + 256);
    const int g = lane >> 2, tq = lane & 3;
    #pragma unroll
    for (int s = 0; s < 8; ++s) {
        const sp_u32 bits = ((s < 4 ? mw.x : mw.y) >> (2 * (s & 3))) & 0x03030303u;
        const int cnt = __popc(bits);
        int pre = cnt;
        #pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int v = __shfl_up_sync(0xffffffffu, pre, o);
            if (lane >= o) pre += v;
        }
        const unsigned short *v = vals + (((const unsigned short *)blk)[s] >> 1) + (pre - cnt);
        int k = 0;
        #pragma unroll
        for (int r = 0; r < 4; ++r) {
            const unsigned short lo = ((bits >> (8 * r)) & 1u) ? v[k] : (unsigned short)0;
            k += (bits >> (8 * r)) & 1u;
            const unsigned short hi = ((bits >> (8 * r + 1)) & 1u) ? v[k] : (unsigned short)0;
            k += (bits >> (8 * r + 1)) & 1u;
            *(sp_u32 *)&t[g + 8 * (r & 1)][16 * s + 2 * tq + 8 * (r >> 1)] = lo | (sp_u32)hi << 16;
        }
    }
}

