__device__ __forceinline__ sp_u32 sp_bits_below(int n)
{
    return n <= 0 ? 0u : n >= 32 ? ~0u : (1u << n) - 1u;
}
__device__ __forceinline__ int sp_popc_below(sp_u32 lo, sp_u32 hi, int n)
{
    return n <= 32 ? __popc(n == 32 ? lo : lo & ((1u << n) - 1u))
                   : __popc(lo) + __popc(n == 64 ? hi : hi & ((1u << (n - 32)) - 1u));
}

