// An instruction count, not a kernel to run: the per-step work of the split with corrections on the tensor cores
// (docs/journal/2026-12-04.md), compiled for a target and counted in SASS
// (bench/experiments/slotfill-split-count.sh: static instructions of variants, differences per k32 step; N = 8).
//
// Per k32 step a lane holds A1 (the 2:4 layer, 4 words as sp24 streams them) and two type bits for each of its 4
// group-rows: 0 normal, 1 overflow target, 2 one filled slot, 3 two. The correction C (overflow at true columns minus
// the fillers at their slots) is 2:4 too: a filled slot's word is A1's negated under a mask, a target's values come
// from a warp FIFO in shared memory (fillers pushed in order, targets popping the oldest; when it is empty, the
// residual stream), and C's metadata is A1's with each target group's index pair complemented. Then two mma.sp.
// Pushes and pops are loops over each lane's own (divergent: the warp runs its busiest lane); the push reads the
// filler from the stage in shared memory rather than indexing registers, the pop writes a per-lane scratch fragment
// read back whole. Shared memory holds whatever `g` held: the outputs mean nothing.
#include "slotfill-count-common.cuh"
#ifndef STEPS
#define STEPS 4   // k32 steps unrolled in the loop; PUSH / POP 0 drop those loops (differences give their bodies)
#endif
#ifndef PUSH
#define PUSH 1
#endif
#ifndef POP
#define POP 1
#endif
#ifndef SCAN
#define SCAN 1    // 0: no warp scan of the ranks (as if the encoder stored them)
#endif
#ifndef CMETA
#define CMETA 1   // 0: C's metadata left A1's (as if stored)
#endif
__device__ __forceinline__ u32 lds16(u32 addr) { unsigned short v; asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr)); return v; }
__device__ __forceinline__ void sts16(u32 addr, u32 v) { asm volatile("st.shared.u16 [%0], %1;" :: "r"(addr), "h"((unsigned short)v)); }
__device__ __forceinline__ uint4 lds128(u32 addr)
{ uint4 v; asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr)); return v; }
__device__ __forceinline__ void sts128z(u32 addr) { asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};" :: "r"(addr), "r"(0u)); }
__device__ __forceinline__ u32 lop_neg(u32 a, u32 m)   // (a & m) ^ (m & sign bits): the filled halves negated, the rest 0
{ u32 d; asm("lop3.b32 %0, %1, %2, %3, 0x6a;" : "=r"(d) : "r"(a), "r"(m), "r"(0x80008000u)); return d; }

__global__ void __launch_bounds__(128) proto(const u32 *g, float *out, int nblk)
{
    // per warp: a stage of 4 steps (A1 words lane-major, 512 B a step; metadata 2 words a lane; types 1 word a lane),
    // the FIFO ring (256 halves), the residual stream, a 16-byte scratch fragment a lane
    __shared__ __align__(16) u32 stage[4][4 * 128 + 2 * 32 + 32];
    __shared__ __align__(16) unsigned short ring[4][256];
    __shared__ __align__(16) unsigned short resid[4][512];
    __shared__ __align__(16) uint4 scratch[128];
    __shared__ __align__(8) uint2 lut[64];          // (type, A1 nibble): fill mask; pops | first half << 2 | masks << 8
    __shared__ unsigned char comp[256];             // a byte of two A1 nibbles -> each complemented
    __shared__ __align__(16) unsigned short xs[8 * 136];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t = lane & 3, g4 = lane & ~3;
    float acc[4] = {0, 0, 0, 0};
    for (int i = threadIdx.x; i < 64; i += blockDim.x) lut[i] = ((const uint2 *)g)[8192 + i];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) comp[i] = (unsigned char)g[9000 + i];
    for (int i = threadIdx.x; i < 8 * 136 / 2; i += blockDim.x) ((u32 *)xs)[i] = g[10000 + i];
    __syncthreads();
    const u32 st = (u32)__cvta_generic_to_shared(stage[warp]), rg = (u32)__cvta_generic_to_shared(ring[warp]),
              rs = (u32)__cvta_generic_to_shared(resid[warp]), sc = (u32)__cvta_generic_to_shared(&scratch[threadIdx.x]),
              xsa = (u32)__cvta_generic_to_shared(xs);
    u32 head = 0, tail = 0, rbase = 0;
    for (int b = 0; b < nblk; ++b) {
        if (b == 0) for (int i = lane; i < 4 * 128 + 96; i += 32) stage[warp][i] = g[i + warp * 640];
        __syncwarp();
        asm volatile("" ::: "memory");
        const u32 types = lds32(st + 4 * (4 * 128 + 64 + lane)) + (u32)b;
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {
            const uint4 av = lds128(st + 512 * s + 16 * lane);
            const u32 a[4] = {av.x, av.y, av.z, av.w};
            // metadata: lane 4 g + u holds step u / 2 of the pair, groups 4 (u % 2) .. + 3, rows g and g + 8
            const u32 me = lds32(st + 4 * (4 * 128 + 32 * (s >> 1) + lane));
            const u32 w0 = __shfl_sync(~0u, me, g4 + 2 * (s & 1)), w1 = __shfl_sync(~0u, me, g4 + 2 * (s & 1) + 1);
            const u32 nib[4] = {(w0 >> (4 * t)) & 15u, (w0 >> (16 + 4 * t)) & 15u, (w1 >> (4 * t)) & 15u,
                                (w1 >> (16 + 4 * t)) & 15u};
            const u32 code = (types >> (8 * s)) & 255u;
            u32 c[4], pushm = 0, popm = 0;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const uint2 e = lut[((code >> (2 * i)) & 3u) << 4 | nib[i]];
                c[i] = lop_neg(a[i], e.x);
                pushm |= ((e.y >> 8) & 3u) << (2 * i);
                popm |= ((e.y >> 10) & 3u) << (2 * i);
            }
            // ranks: pushes | pops << 16, an exclusive scan over the warp
            const u32 cnt = __popc(pushm) | __popc(popm) << 16;
            u32 inc = cnt;
#pragma unroll
            for (int d = 1; d < 32 * SCAN; d <<= 1) {
                const u32 v = __shfl_up_sync(~0u, inc, d);
                if (lane >= d) inc += v;
            }
            const u32 tot = __shfl_sync(~0u, inc, 31), ex = inc - cnt;
            u32 pr = head + (ex & 0xffffu);
            for (u32 m = pushm * PUSH; m; m &= m - 1) {            // push: the filled halves, read from the stage
                const u32 bit = __ffs(m) - 1;
                sts16(rg + 2 * (pr++ & 255u), lds16(st + 512 * s + 16 * lane + 2 * bit));
            }
            __syncwarp();
            const u32 avail = head + (tot & 0xffffu) - tail;
            u32 q = ex >> 16;
            for (u32 m = popm * POP; m; m &= m - 1) {             // pop: the oldest filler, or the residual stream
                const u32 bit = __ffs(m) - 1;
                const u32 src = q < avail ? rg + 2 * ((tail + q) & 255u) : rs + 2 * ((rbase + q - avail) & 511u);
                sts16(sc + 2 * bit, lds16(src));
                ++q;
            }
            const u32 popped = min(tot >> 16, avail);
            head += tot & 0xffffu;
            tail += popped;
            rbase += (tot >> 16) - popped;
            const uint4 pv = lds128(sc);
            sts128z(sc);
            c[0] |= pv.x; c[1] |= pv.y; c[2] |= pv.z; c[3] |= pv.w;
            // C's metadata: A1's, each target group's pair complemented (the target flags of the word's 8 groups
            // gathered from the quad's type codes)
            const u32 tq = __shfl_sync(~0u, code, g4 + 0) | __shfl_sync(~0u, code, g4 + 1) << 8 |
                           __shfl_sync(~0u, code, g4 + 2) << 16 | __shfl_sync(~0u, code, g4 + 3) << 24;
            const u32 tgt = tq & ~(tq >> 1) & 0x55555555u;      // type 1 per 2-bit field
            const u32 cm = comp[me & 255u] | comp[(me >> 8) & 255u] << 8 | comp[(me >> 16) & 255u] << 16 |
                           (u32)comp[me >> 24] << 24;
            const u32 nm = prmt(tgt * 15u, 0u, 0x3210u);        // stands in for spreading the flags to nibbles
            const u32 ec = CMETA ? (cm & nm) | (me & ~nm) : me;
            u32 bf[4];
            ldsm4(xsa + ((lane & 7) * 136 + s * 32 + 8 * (lane >> 3)) * 2, bf);
            mma_sp(acc, a, bf, me, s & 1);
            mma_sp(acc, c, bf, ec, s & 1);
        }
    }
    out[threadIdx.x] = acc[0] + acc[1] + acc[2] + acc[3] + (float)(head + tail + rbase);
}
