typedef unsigned short sp_bf16;
typedef unsigned int sp_u32;

__device__ __forceinline__ sp_u32 sp_smem_u32(const void *p)
{
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (sp_u32)a;
}

/* 16-byte asynchronous global->shared copy; bytes < 16 zero-fills the rest (0: all zeros). */
__device__ __forceinline__ void sp_cp_async16(sp_u32 dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void sp_cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void sp_cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
__device__ __forceinline__ void sp_st_shared_v4(sp_u32 addr, sp_u32 a, sp_u32 b, sp_u32 c, sp_u32 d)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" :: "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ void sp_ldmatrix_x4(sp_u32 addr, sp_u32 &r0, sp_u32 &r1, sp_u32 &r2, sp_u32 &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
}
/* D += A(16x16, row) * B(16x8, col), bf16 inputs, fp32 accumulators. */
__device__ __forceinline__ void sp_mma_bf16_16816(float *d, const sp_u32 *a, const sp_u32 *b)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* Round to nearest even; lo lands in the low half-word (the lower address). */
__device__ __forceinline__ sp_u32 sp_pack_bf16x2(float lo, float hi)
{
    sp_u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
__device__ __forceinline__ sp_bf16 sp_f32_to_bf16(float x)
{
    return (sp_bf16)(sp_pack_bf16x2(x, 0.0f) & 0xffffu);
}
__device__ __forceinline__ float sp_bf16_to_f32(sp_bf16 h)
{
    return __uint_as_float(((sp_u32)h) << 16);
}

