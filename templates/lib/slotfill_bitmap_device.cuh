__device__ __forceinline__ void sp_mbar_init(sp_u32 bar, sp_u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void sp_mbar_expect_tx(sp_u32 bar, sp_u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void sp_mbar_arrive(sp_u32 bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void sp_mbar_wait(sp_u32 bar, sp_u32 parity)
{
    asm volatile("{\n.reg .pred p;\nSP_WAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra SP_WAIT_%=;\n}\n"
                 :: "r"(bar), "r"(parity) : "memory");
}
/* bytes (a multiple of 16) of global memory into shared memory, completing on bar */
__device__ __forceinline__ void sp_bulk_load(sp_u32 dst, const void *src, sp_u32 bytes, sp_u32 bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
/* an arrival on bar once this thread's cp.async copies have landed (counted in the barrier's init) */
__device__ __forceinline__ void sp_cp_async_arrive(sp_u32 bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ sp_u32 sp_prmt(sp_u32 a, sp_u32 b, sp_u32 c)
{
    sp_u32 d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ sp_u32 sp_lds16(sp_u32 addr)
{
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
    return v;
}
/* v = the 16-bit value at addr when pred, else v unchanged */
__device__ __forceinline__ void sp_lds16_if(sp_u32 &v, sp_u32 addr, sp_u32 pred)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.u32 p, %2, 0;\n@p ld.shared.u16 %0, [%1];\n}\n" : "+r"(v) : "r"(addr), "r"(pred));
}
