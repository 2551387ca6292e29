__device__ __forceinline__ void sp_twell_route(sp_u32 *row_info, int M, int row, int capacity)
{
    if (atomicOr(row_info + row, 0x80000000u) & 0x80000000u) return;
    const sp_u32 slot = atomicAdd(row_info + M, 1u);
    if ((int)slot < capacity) row_info[M + 1 + slot] = (sp_u32)row;
    else atomicAnd(row_info + row, 0x7fffffffu);
}

