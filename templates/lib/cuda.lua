-- The CUDA C prelude every generated kernel starts with. No headers are included (NVRTC then
-- needs no include path): bf16 is carried as raw 16-bit words and converted with PTX.
-- Everything here exists on sm_80 and newer, sm_90a and sm_120 included.
local text = require("lib.text")
local M = {}

M.prelude = [[
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
]]

-- float acc[mt][nt][4], zeroed: the tensor-core main loops' accumulators.
function M.acc_decl(mt, nt)
  return text.fill([[
    float acc[${mt}][${nt}][4];
    #pragma unroll
    for (int i = 0; i < ${mt}; ++i)
        #pragma unroll
        for (int j = 0; j < ${nt}; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;]], {mt = mt, nt = nt})
end

-- The start of a tiled kernel body: dynamic shared memory, the CTA's tile (m0, n0, pid_n) walked
-- group_m CTA rows at a time along M so that their B tiles stay in L2, and the thread's lane and
-- warp. Expects int M, N in scope and c.bm, c.bn, c.group_m.
function M.tile_order(c)
  return text.fill([[
    extern __shared__ __align__(1024) unsigned char sp_smem[];
    const int tiles_m = (M + ${bm} - 1) / ${bm}, tiles_n = (N + ${bn} - 1) / ${bn};
    const int pid = blockIdx.x;
    const int per_group = ${group_m} * tiles_n;
    const int first_m = (pid / per_group) * ${group_m};
    const int group_rows = min(tiles_m - first_m, ${group_m});
    const int pid_m = first_m + (pid % per_group) % group_rows;
    const int pid_n = (pid % per_group) / group_rows;
    const int m0 = pid_m * ${bm}, n0 = pid_n * ${bn};
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;]], {bm = c.bm, bn = c.bn, group_m = c.group_m})
end

return M
