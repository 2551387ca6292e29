
__device__ __forceinline__ float sp_y_rest(float v)
{
    return isfinite(v) ? v - sp_bf16_to_f32(sp_f32_to_bf16(v)) : 0.0f;
}
__device__ __forceinline__ void sp_y_put(sp_bf16 *y, sp_bf16 *ylo, float v)
{
    *y = sp_f32_to_bf16(v);
    *ylo = sp_f32_to_bf16(sp_y_rest(v));
}
/* 8 bf16 (o) to p: one 16-byte store when VEC (p 16-byte aligned) */
template <bool VEC>
__device__ __forceinline__ void sp_y_store8(sp_bf16 *p, sp_u32x4 o)
{
    if (VEC) {
        *(sp_u32x4 *)p = o;
    } else {
        const sp_u32 v[4] = {o.x, o.y, o.z, o.w};
        #pragma unroll
        for (int e = 0; e < 4; ++e) { p[2 * e] = (sp_bf16)(v[e] & 0xffffu); p[2 * e + 1] = (sp_bf16)(v[e] >> 16); }
    }
}

