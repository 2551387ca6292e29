// An instruction count, not a kernel to run: the decode of one 16 x 128 block of a bitmap-style Slot-Filling
// encoding into two mma.sp passes per 16 x 32 step (pass 1: the first two values of every group of 4, pass 2 the
// third and fourth, each with metadata from a table, so nothing overflows and there is no residual), compiled for a
// target and counted in SASS (bench/experiments/slotfill-decode-count.sh). Its shared memory holds whatever `g` held (loaded so
// that nothing is folded away): the outputs mean nothing; what it measures is the instructions per 16 x 16 step a
// warp would issue (docs/journal/2026-12-01.md: 73.6 for today's bitmap kernel, all-in; 1.3x over dense at 50 % needs about
// half; this form: 55.5).
//
// The form counted (the fourth tried; the others cost 56-69 per step with a cheaper, inexact metadata step): each
// lane's values of a step are a run padded to 4-byte alignment; a 256-entry table keyed by two groups' nibbles
// gives both groups' PRMT selectors (pass 1 | pass 2), their metadata and the second group's byte offset and the
// pair's size in one 16-byte load; each group's values are three aligned 32-bit loads, a funnel shift by a
// half-word for odd starts and one PRMT against zero per pass (placing and zeroing at once); the metadata is
// regrouped into the layout the selector lanes supply.
#include "slotfill-count-common.cuh"
__device__ __forceinline__ uint2 lds64(u32 addr) { uint2 v; asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr)); return v; }
__device__ __forceinline__ u32 shf(u32 lo, u32 hi, u32 s) { u32 d; asm("shf.r.wrap.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(lo), "r"(hi), "r"(s)); return d; }

__global__ void __launch_bounds__(128) proto(const unsigned char *g, float *out, int nblk)
{
    __shared__ __align__(16) unsigned char blk[4 * 2560];
    __shared__ __align__(16) uint4 tab2[256];  // per byte (two nibbles): sel1 g0 | sel2 g0 << 16, sel1 g1 | sel2 g1 << 16, meta g0 | meta g1 << 8, 2 x count g0 | 2 x count pair << 8
    __shared__ __align__(16) unsigned short xs[8 * 136];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t = lane & 3;
    float acc[4] = {0, 0, 0, 0};
    const u32 xsa = (u32)__cvta_generic_to_shared(xs);
    // the table and the X tile from global memory once (left unwritten, a compiler may fold reads of them away)
    for (int i = threadIdx.x; i < 256; i += blockDim.x) tab2[i] = ((const uint4 *)g)[4096 + i];
    for (int i = threadIdx.x; i < 8 * 136 / 2; i += blockDim.x) ((u32 *)xs)[i] = ((const u32 *)g)[20480 + i];
    __syncthreads();
    for (int b = 0; b < nblk; ++b) {
        unsigned char *B = blk + warp * 2560;
        const u32 Bs = (u32)__cvta_generic_to_shared(B);
        if (b == 0) for (int i = lane; i < 640; i += 32) ((u32 *)B)[i] = ((const u32 *)g)[i + warp * 640];
        __syncwarp();
        asm volatile("" ::: "memory");   // a new block each time: nothing read from shared memory is kept across blocks
        const uint2 mw = *(const uint2 *)(B + 8 + 8 * lane);
        const u32 hdr01 = *(const u32 *)B, hdr23 = *(const u32 *)(B + 4);
        const u32 p0 = __popc(mw.x & 0xffffu), p1 = __popc(mw.x >> 16), p2 = __popc(mw.y & 0xffffu), p3 = __popc(mw.y >> 16);
        u32 c01 = ((p0 + 1) >> 1) | ((p1 + 1) >> 1) << 16, c23 = ((p2 + 1) >> 1) | ((p3 + 1) >> 1) << 16;
        u32 e01 = __shfl_up_sync(~0u, c01, 1), e23 = __shfl_up_sync(~0u, c23, 1);
        if (lane == 0) e01 = e23 = 0;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            u32 v = __shfl_up_sync(~0u, e01, d), w = __shfl_up_sync(~0u, e23, d);
            if (lane >= d) { e01 += v; e23 += w; }
        }
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            const u32 m = ((s < 2 ? mw.x : mw.y) >> (16 * (s & 1))) & 0xffffu;
            const u32 hs = ((s < 2 ? hdr01 : hdr23) >> (16 * (s & 1))) & 0xffffu;
            const u32 lo = ((s < 2 ? e01 : e23) >> (16 * (s & 1))) & 0xffffu;
            const u32 run = Bs + 264 + 4 * (hs + lo);
            u32 a1[4], a2[4], mt = 0, qb = 0;
#pragma unroll
            for (int pr = 0; pr < 2; ++pr) {               // groups 2 pr, 2 pr + 1: one table entry
                const uint4 e = tab2[(m >> (8 * pr)) & 255u];
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const u32 q = qb + (h ? (e.w & 255u) : 0u);   // byte offset of the group's first value
                    const u32 A = run + (q & ~3u);
                    const u32 w0 = lds32(A), w1 = lds32(A + 4), w2 = lds32(A + 8);
                    const u32 sel = h ? e.y : e.x, sh = q * 8;
                    a1[2 * pr + h] = prmt(shf(w0, w1, sh), 0u, sel);
                    a2[2 * pr + h] = prmt(shf(w1, w2, sh), 0u, sel >> 16);
                }
                mt = pr ? prmt(mt, e.z, 0x5410u) : e.z;
                qb += (e.w >> 8) & 255u;
            }
            // the metadata into the selector lanes' layout (lane 2 (s & 1) + j of each quad: groups 4 j .. 4 j + 3, row g in
            // bits 0-15, row g + 8 in bits 16-31, 4 bits a group): the quad's four words, then bytes and nibbles regrouped
            u32 mq[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) mq[u] = __shfl_sync(~0u, mt, (lane & ~3) + u);
            const u32 sj = 0x5140u + (t & 1u) * 0x2222u;           // bytes 2 j (row g) and 2 j + 1 (row g + 8) of two words
            const u32 x01 = prmt(mq[0], mq[1], sj), x23 = prmt(mq[2], mq[3], sj);
            const u32 rg = prmt(x01, x23, 0x5410u), rg8 = prmt(x01, x23, 0x7632u);   // a byte per lane of the quad
            auto nibbles = [](u32 x) {                              // the low nibble of each byte, packed
                x &= 0x0f0f0f0fu;
                x = (x | (x >> 4)) & 0x00ff00ffu;
                return (x | (x >> 8)) & 0xffffu;
            };
            const u32 m1 = nibbles(rg) | nibbles(rg8) << 16, m2 = nibbles(rg >> 4) | nibbles(rg8 >> 4) << 16;
            u32 bf[4];
            ldsm4(xsa + ((lane & 7) * 136 + s * 32 + 8 * (lane >> 3)) * 2, bf);
            mma_sp(acc, a1, bf, m1, s & 1);
            mma_sp(acc, a2, bf, m2, s & 1);
        }
    }
    out[threadIdx.x] = acc[0] + acc[1] + acc[2] + acc[3];
}
