/* per-step value counts of a lane's bitmap word (steps 0-3 or 4-7), one byte each */
__device__ __forceinline__ sp_u32 sp_step_counts(sp_u32 m)
{
    return __popc(m & 0x03030303u) | __popc(m & 0x0c0c0c0cu) << 8 | __popc(m & 0x30303030u) << 16 |
           __popc(m & 0xc0c0c0c0u) << 24;
}
