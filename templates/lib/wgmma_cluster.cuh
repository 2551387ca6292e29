/* Clusters of 2: arrive on the peer CTA's barrier at the same offset as bar. The default (CTA-scope) semantics: a
   released stage was read by wgmma only, whose reads wgmma.wait_group has completed; a cluster-scope release here
   costs a MEMBAR.ALL.GPU every k-tile (it made the pair 20-33 % slower than one CTA, docs/journal/2026-12-02.md). */
__device__ __forceinline__ void sp_mbar_arrive_peer(sp_u32 bar)
{
    asm volatile("{\n.reg .b32 r;\n.reg .b32 peer;\nmov.u32 peer, %%cluster_ctarank;\nxor.b32 peer, peer, 1;\n"
                 "mapa.shared::cluster.u32 r, %0, peer;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [r];\n}\n" :: "r"(bar) : "memory");
}
/* A stage is free once the warps of both CTAs released it: the peer's copies land in it too. */
__device__ __forceinline__ void sp_mbar_release2(sp_u32 bar)
{
    sp_mbar_arrive(bar);
    sp_mbar_arrive_peer(bar);
}
/* Every thread of both CTAs: their barriers initialised, or their work done. */
__device__ __forceinline__ void sp_cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ int sp_cluster_rank(void)
{
    sp_u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return (int)r;
}
/* sp_tma_load_2d into the same offset of both CTAs of the cluster, completing on each one's bar. */
__device__ __forceinline__ void sp_tma_load_2d_mc(sp_u32 dst, const sp_tmap *map, int c0, int c1, sp_u32 bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar), "h"((unsigned short)3) : "memory");
}

