-- twell-ffn's dense path, for the tokens the sparse consumers would serve worst: a token with
-- thousands of active neurons is a serial chain of thousands of weight-row gathers in a
-- row-per-warp consumer, but costs about what it costs in the dense layer when it shares tensor-core
-- tiles with other such tokens.
--
-- The producer adds each (row, tile)'s count to row_info[row] and routes a row to this path when its
-- count reaches c.route or when one of its tiles was lost (the overflow pool had no room): the row's
-- flag (bit 31) is set and the row appended to the list at row_info[M + 1 ..] while dense_capacity
-- allows (lib/epilogue.lua). All on the GPU, no host round trip. Then:
--   zero      (first kernel of the pipeline) clears the counts, the pool counter and dense_acc;
--   consumers skip flagged rows;
--   dense_g   the routed rows' packed gates (the producer's values) scattered to dense_h, one warp per
--             (row, packed tile);
--   dense_h   tiles of 64 routed rows x 32 neurons: the rows' gates from dense_g, up = X Wu^T over
--             all of D (the X rows gathered through the list by the loads), h = gate up over the gates
--             in dense_h (bf16); a tile without a gate is zero at no cost, and one where a row lost
--             its packed tile recomputes every gate (X Wg^T) beside up;
--   dense_y   tiles of 64 routed rows x 128 columns of Y x a part of the neurons: h Wd (Wd's tile read
--             N-major, ldmatrix.trans) added to dense_acc, one vector reduction per element and part;
--   finalize  writes the routed rows of Y from dense_acc.
-- Both are cp.async-pipelined mma.sync GEMMs (sm_80 and newer, sm_120 included): each weight element
-- loaded serves up to 64 routed rows (a 16-row gather re-read the weights per 16 tokens). A gate
-- recomputed for a lost tile may differ from the producer's by a bf16 ulp (its summation order), which
-- the harness's check allows for. Tile counts and the split of dense_y's neurons are worked out at run
-- time from the number of routed rows, so that a few routed rows still spread over the GPU.
local text = require("lib.text")
local cuda = require("lib.cuda")
local M = {}

M.params = {
  {name = "route", values = {512, 256, 1024, 2048, 0, -1, 128, 64}, default = 512,
   doc = "a token with this many active neurons goes to the dense tensor-core path (0: only tokens that lost"
     .. " a tile to a full pool; -1: no dense path)"},
}

-- The two GEMMs' tiles: BM routed rows, BK columns of D (dense_h) or neurons (dense_y) per pipeline
-- stage; K-major tiles keep rows of BK + 8 elements (80 bytes: the eight row addresses of an ldmatrix
-- fall in distinct banks), dense_y's Wd tile rows of YN + 8 (272 bytes: the same). Both kernels are
-- bound by memory latency with few routed rows (each weight element feeds at most 64 rows): many
-- small tiles, deep pipelines and several CTAs per SM keep enough loads in flight.
local BM, BK, THREADS = 64, 32, 128
local CTAS = 4                  -- CTAs an SM (sm_90: the registers of __launch_bounds__(THREADS, CTAS) and the shared memory fit)
local HN, HSTAGES = 32, 5       -- dense_h: neurons per tile (divides every T), pipeline depth
local YN, YSTAGES = 128, 4      -- dense_y: columns of Y per tile, pipeline depth
local ROW, YROW = BK + 8, YN + 8
local GROW = HN + 8             -- dense_h's gate tile (bf16), row stride
-- The kernels' thread-to-tile maps (2 x 2 warps over 64 x 32, 16-byte chunks per thread, a gate tile as
-- wide as a k-step) are written for these values: they are constants, not parameters.
assert(BM == 64 and BK == 32 and THREADS == 128 and HN == BK and YN == 128, "twell_dense: the kernels' maps assume these tiles")

local SMEM_H = HSTAGES * (BM + 2 * HN) * ROW * 2 + BM * GROW * 2
local SMEM_Y = YSTAGES * (BM * ROW + BK * YROW) * 2

M.constraints = {
  {why = "route: the dense path's pipelines fit in shared memory", check = function(c, gpu)
    return c.route < 0 or math.max(SMEM_H, SMEM_Y) <= gpu.smem_per_block end},
}

-- A persistent grid of the CTAs of `smem` bytes resident at once (at most CTAS an SM; the launch bounds
-- keep the registers within): a CTA that waited for a slot would take its items late.
local function resident(gpu, smem)
  return math.max(math.min(CTAS, gpu.smem_per_sm // (smem + 1024)), 1) * gpu.sm_count
end

-- The zero step's launch (first kernel of the pipeline), also dense_g's and finalize's.
function M.zero_launch(gpu) return {grid = {2 * gpu.sm_count, 1, 1}, block = {256, 1, 1}, smem = 0} end

-- The launches of the dense path's kernels (after the consumer), by name: dense_h and dense_y are
-- persistent (they loop over their work, whose amount is known on the GPU only).
function M.launches(gpu)
  return {dense_g = M.zero_launch(gpu), finalize = M.zero_launch(gpu),
          dense_h = {grid = {resident(gpu, SMEM_H), 1, 1}, block = {THREADS, 1, 1}, smem = SMEM_H},
          dense_y = {grid = {resident(gpu, SMEM_Y), 1, 1}, block = {THREADS, 1, 1}, smem = SMEM_Y}}
end

-- The zero kernel (every pipeline's first). sig(name) gives a kernel's signature and opening brace (the
-- op's argument list, T and S as constants). wide (lib/twell_dense_wgmma.lua): dense_g clears the rows of dense_acc
-- that the mma.sync kernels use, once it knows how many (the wgmma regime keeps the gathered rows of X there).
function M.zero_kernel(names, sig, wide)
  return text.fill([[
extern "C" __global__ void __launch_bounds__(256)
${zsig}
    const size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
    (void)T; (void)S;
    if (tid == 0) *pool_counter = 0ull;
    for (size_t i = tid; i < (size_t)M + 1; i += step) row_info[i] = 0u;${acc}
}
]], {zsig = sig(names.zero), acc = wide and "" or [[

    const size_t acc = (size_t)max(dense_capacity, 0) * (size_t)D;
    for (size_t i = tid; i < acc; i += step) dense_acc[i] = 0.0f;]]})
end

-- The head of a cp.async pipeline over k-steps 0 .. n - 1 (n: a C expression) with `stages` stages, at
-- indentation ind: the first stages - 1 loads (a C lambda load(stage, kt) in scope), then the loop up to
-- the stage st its body computes on (the caller closes it); why: a comment on the loop's barrier.
local function pipeline(ind, stages, n, why)
  return text.fill([[
${i}#pragma unroll
${i}for (int s = 0; s < ${s} - 1; ++s) {
${i}    if (s < ${n}) load(s, s);
${i}    sp_cp_async_commit();
${i}}
${i}for (int kt = 0; kt < ${n}; ++kt) {
${i}    sp_cp_async_wait<${s} - 2>();
${i}    __syncthreads();${why}
${i}    if (kt + ${s} - 1 < ${n}) load((kt + ${s} - 1) % ${s}, kt + ${s} - 1);
${i}    sp_cp_async_commit();
${i}    const int st = kt % ${s};]], {i = ind, s = stages, n = n, why = why and ("   /* " .. why .. " */") or ""})
end

-- dense_g's first step beside the wgmma GEMMs: their regime gathers the routed rows of X into Xg (bf16 rows of D,
-- in dense_acc), the other clears the rows of dense_acc the mma.sync kernels add to.
local GATHER = [[

    {
        const size_t gtid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
        if (sp_dense_wide(routed, pool_counter, pool_capacity)) {
            sp_bf16 *const Xg = (sp_bf16 *)dense_acc;
            const sp_u32 *list = row_info + M + 1;
            if (((((unsigned long long)X) | ((unsigned long long)Xg)) & 15ull) == 0 && D % 8 == 0) {
                const size_t per = (size_t)D / 8, n = (size_t)routed * per;
                for (size_t i = gtid; i < n; i += step)
                    ((sp_u32x4 *)Xg)[i] = ((const sp_u32x4 *)(X + (size_t)list[i / per] * D))[i % per];
            } else {
                const size_t n = (size_t)routed * D;
                for (size_t i = gtid; i < n; i += step) Xg[i] = X[(size_t)list[i / D] * D + i % D];
            }
        } else {
            const size_t n = (size_t)routed * D;
            for (size_t i = gtid; i < n; i += step) dense_acc[i] = 0.0f;
        }
    }]]

-- The dense path's kernels: dense_g, dense_h, dense_y and finalize (sig as for zero_kernel; gpu: the
-- target, for the reductions it has; ylo: with twell-ffn's hot slice, the remainder's pointer, lib/twell_row.lua;
-- wide: beside lib/twell_dense_wgmma.lua's GEMMs, whose regime (sp_dense_wide) the last three leave to them).
function M.kernels(gpu, names, sig, ylo, wide)
  return text.fill([[
/* Elements k .. k + 7 of a tile row (row[0 .. lim - 1] valid, zeros past it) to shared memory at dst:
 * one asynchronous 16-byte copy when vec (lim and k multiples of 8), else element by element. */
__device__ __forceinline__ void sp_dense_chunk(sp_u32 dst, const sp_bf16 *row, int k, int lim, bool vec)
{
    const int n = lim - k;
    if (vec) {
        sp_cp_async16(dst, row + (n > 0 ? k : 0), n > 0 ? 16 : 0);
        return;
    }
    sp_u32 w[4];
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
        const sp_u32 lo = 2 * e < n ? row[k + 2 * e] : 0u, hi = 2 * e + 1 < n ? row[k + 2 * e + 1] : 0u;
        w[e] = lo | (hi << 16);
    }
    sp_st_shared_v4(dst, w[0], w[1], w[2], w[3]);
}
/* B fragments of a K x N tile kept N-contiguous (rows of k). */
__device__ __forceinline__ void sp_ldmatrix_x4_trans(sp_u32 addr, sp_u32 &r0, sp_u32 &r1, sp_u32 &r2, sp_u32 &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
}
/* A fragments (rows wm * 32 .. + 31, k16 step ks) of a K-major tile of ${row}-element rows at stage base a. */
__device__ __forceinline__ void sp_dense_afrag(sp_u32 (&a)[2][4], sp_u32 base, int wm, int ks, int lane)
{
    #pragma unroll
    for (int i = 0; i < 2; ++i)
        sp_ldmatrix_x4(base + (sp_u32)((wm * 32 + i * 16 + (lane & 15)) * ${row} + ks * 16 + (lane >> 4) * 8) * 2u,
                       a[i][0], a[i][1], a[i][2], a[i][3]);
}

/* dense_g: each routed row's packed gates, scattered to its row of dense_h (bf16, zeros between them;
 * 0xffff over a tile the row lost), one warp per (row, packed tile): all in parallel, where a tile of
 * dense_h would chase each of its rows' entries in turn. dense_h then reads them as a dense tile and
 * overwrites them with h. */
extern "C" __global__ void __launch_bounds__(256)
${gsig}
    const int routed = min((int)row_info[M], max(dense_capacity, 0));
    const int ptiles = (F + T - 1) / T, W = S + 1, lane = threadIdx.x & 31;
    const int nwarps = (int)(gridDim.x * blockDim.x) >> 5;${gather}
    for (int w = (int)(blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < routed * ptiles; w += nwarps) {
        const int r = w / ptiles, j = w % ptiles, width = min(T, F - j * T);
        const sp_u32 *src;
        const int n = sp_twell_tile_entries(packed + ((size_t)row_info[M + 1 + r] * ptiles + j) * W, pool, src);
        sp_bf16 *g = dense_h + (size_t)r * F + (size_t)j * T;
        for (int c = lane; c < width; c += 32) g[c] = n < 0 ? (sp_bf16)0xffffu : (sp_bf16)0u;
        __syncwarp();
        for (int e = lane; e < n; e += 32) {
            const sp_u32 v = src[e];
            g[v & 0xffffu] = (sp_bf16)(v >> 16);
        }
    }
}

extern "C" __global__ void __launch_bounds__(${threads}, ${ctas})
${dsig}
    extern __shared__ __align__(128) unsigned char sp_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp >> 1, wn = warp & 1;
    const int g = lane >> 2, q = lane & 3, ch = tid & 3;
    const int routed = min((int)row_info[M], max(dense_capacity, 0));
${leave}    const sp_u32 *list = row_info + M + 1;
    const int mtiles = (routed + ${bm} - 1) / ${bm}, ntiles = (F + ${hn} - 1) / ${hn}, KT = (D + ${bk} - 1) / ${bk};
    (void)T; (void)S;
    const bool vec = D % 8 == 0 && ((((unsigned long long)X) | ((unsigned long long)Wg) | ((unsigned long long)Wu))
                                    & 15ull) == 0;
    const bool pair = F % 2 == 0 && ((unsigned long long)dense_h & 3ull) == 0;   /* h stored two at a time */
    const sp_u32 sA = sp_smem_u32(sp_smem), sG = sA + ${hstages} * ${bm} * ${row} * 2, sU = sG + ${hstages} * ${hn} * ${row} * 2;
    sp_bf16 *Gs = (sp_bf16 *)(sp_smem + ${hstages} * (${bm} + 2 * ${hn}) * ${row} * 2);   /* [${bm}][${grow}] */
    const bool gvec = F % 8 == 0 && ((unsigned long long)dense_h & 15ull) == 0;
    for (int item = blockIdx.x; item < mtiles * ntiles; item += gridDim.x) {
        /* a neuron tile's row tiles are neighbours in the walk: its weights come from DRAM about once */
        const int m0 = (item % mtiles) * ${bm}, n0 = (item / mtiles) * ${hn};
        /* the rows' gates in the tile (dense_g's: 0xffff where a row lost its packed tile, then every
           gate of the item is recomputed from X and Wg) to Gs; whether any is set, any lost */
        bool any = false, miss = false;
        #pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = (tid >> 2) + 32 * i, n = n0 + ch * 8;
            const sp_u32x4 v = m0 + r < routed ? sp_tile_ld8(dense_h + (size_t)(m0 + r) * F + n, F - n, gvec)
                                               : sp_u32x4{0u, 0u, 0u, 0u};
            *(sp_u32x4 *)(Gs + r * ${grow} + ch * 8) = v;
            const sp_u32 w[4] = {v.x, v.y, v.z, v.w};
            #pragma unroll
            for (int e = 0; e < 4; ++e) {
                any = any || w[e] != 0u;
                miss = miss || (w[e] & 0xffffu) == 0xffffu || (w[e] >> 16) == 0xffffu;
            }
        }
        const bool lost = __syncthreads_or(miss) != 0, active = __syncthreads_or(any) != 0;
        /* this thread's rows of each tile: X through the routed list, the neurons' weights */
        const sp_bf16 *xr[2], *gr, *ur;
        int xl[2], wl;
        #pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = (tid >> 2) + 32 * i;
            const bool in = m0 + r < routed;
            xr[i] = X + (in ? (size_t)list[m0 + r] * D : 0);
            xl[i] = in ? D : 0;
        }
        {
            const int r = tid >> 2;
            const bool in = n0 + r < F;
            gr = Wg + (in ? (size_t)(n0 + r) * D : 0);
            ur = Wu + (in ? (size_t)(n0 + r) * D : 0);
            wl = in ? D : 0;
        }
        auto load = [&](int stage, int kt) {
            const int k = kt * ${bk} + ch * 8;
            #pragma unroll
            for (int i = 0; i < 2; ++i)
                sp_dense_chunk(sA + (sp_u32)((stage * ${bm} + (tid >> 2) + 32 * i) * ${row} + ch * 8) * 2u, xr[i], k,
                               xl[i], vec);
            const sp_u32 o = (sp_u32)((stage * ${hn} + (tid >> 2)) * ${row} + ch * 8) * 2u;
            if (lost) sp_dense_chunk(sG + o, gr, k, wl, vec);
            sp_dense_chunk(sU + o, ur, k, wl, vec);
        };
        float ag[2][2][4], au[2][2][4];
        #pragma unroll
        for (int i = 0; i < 2; ++i)
            #pragma unroll
            for (int jj = 0; jj < 2; ++jj)
                #pragma unroll
                for (int e = 0; e < 4; ++e) ag[i][jj][e] = au[i][jj][e] = 0.0f;
        if (active) {   /* (no gate in the tile: h is zero there, no product needed) */
${hpipe}
                #pragma unroll
                for (int ks = 0; ks < ${bk} / 16; ++ks) {
                    sp_u32 a[2][4], bg[2][2], bu[2][2];
                    sp_dense_afrag(a, sA + (sp_u32)(st * ${bm} * ${row}) * 2u, wm, ks, lane);
                    const sp_u32 o = (sp_u32)((st * ${hn} + wn * 16 + (lane & 7) + ((lane >> 4) << 3)) * ${row}
                                              + ks * 16 + ((lane >> 3) & 1) * 8) * 2u;
                    sp_ldmatrix_x4(sU + o, bu[0][0], bu[0][1], bu[1][0], bu[1][1]);
                    if (lost) sp_ldmatrix_x4(sG + o, bg[0][0], bg[0][1], bg[1][0], bg[1][1]);
                    #pragma unroll
                    for (int i = 0; i < 2; ++i)
                        #pragma unroll
                        for (int jj = 0; jj < 2; ++jj) {
                            sp_mma_bf16_16816(au[i][jj], a[i], bu[jj]);
                            if (lost) sp_mma_bf16_16816(ag[i][jj], a[i], bg[jj]);
                        }
                }
            }
            sp_cp_async_wait<0>();
        }
        /* h = gate up, the gate as the producer rounds it; au[i][jj][e]: row wm*32 + i*16 + g + 8*(e >> 1),
           neuron wn*16 + jj*8 + 2q + (e & 1) */
        #pragma unroll
        for (int i = 0; i < 2; ++i)
            #pragma unroll
            for (int jj = 0; jj < 2; ++jj)
                #pragma unroll
                for (int hh = 0; hh < 2; ++hh) {
                    const int rt = wm * 32 + i * 16 + g + 8 * hh, ct = wn * 16 + jj * 8 + 2 * q;
                    const int r = m0 + rt, n = n0 + ct;
                    if (r >= routed || n >= F) continue;
                    float v[2];
                    #pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const float gate = lost ? sp_bf16_to_f32(sp_f32_to_bf16(fmaxf(ag[i][jj][2 * hh + e], 0.0f)))
                                                : sp_bf16_to_f32(Gs[rt * ${grow} + ct + e]);
                        v[e] = gate * au[i][jj][2 * hh + e];
                    }
                    sp_bf16 *dst = dense_h + (size_t)r * F + n;
                    if (pair) {
                        *(sp_u32 *)dst = sp_pack_bf16x2(v[0], v[1]);
                    } else {
                        dst[0] = sp_f32_to_bf16(v[0]);
                        if (n + 1 < F) dst[1] = sp_f32_to_bf16(v[1]);
                    }
                }
        __syncthreads();   /* the next item refills the stages and the gate tile */
    }
}

extern "C" __global__ void __launch_bounds__(${threads}, ${ctas})
${ysig}
    extern __shared__ __align__(128) unsigned char sp_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp >> 1, wn = warp & 1;
    const int g = lane >> 2, q = lane & 3, ch = tid & 3, bch = tid & 15;
    const int routed = min((int)row_info[M], max(dense_capacity, 0));
${leave}    const int mtiles = (routed + ${bm} - 1) / ${bm}, ntiles = (D + ${yn} - 1) / ${yn}, KT = (F + ${bk} - 1) / ${bk};
    const int tiles = mtiles * ntiles;
    /* the neurons in parts: about one item per CTA of the grid, each part at least 8 k-steps (a part
       adds once to every output element of its tile: the reductions stay few) */
    const int parts = tiles == 0 ? 1 : max(1, min((KT + 7) / 8, ((int)gridDim.x + tiles - 1) / tiles));
    const int per = (KT + parts - 1) / parts;
    const bool veca = F % 8 == 0 && ((unsigned long long)dense_h & 15ull) == 0;
    const bool vecb = D % 8 == 0 && ((unsigned long long)Wd & 15ull) == 0;
    const bool red2 = D % 2 == 0 && ((unsigned long long)dense_acc & 7ull) == 0;
    const sp_u32 sA = sp_smem_u32(sp_smem), sB = sA + ${ystages} * ${bm} * ${row} * 2;
    (void)T; (void)S;
    for (int item = blockIdx.x; item < tiles * parts; item += gridDim.x) {
        const int rest = item % tiles, kb = (item / tiles) * per, nk = min(KT, kb + per) - kb;
        const int m0 = (rest % mtiles) * ${bm}, d0 = (rest / mtiles) * ${yn};
        if (nk <= 0) continue;
        const sp_bf16 *ar[2];
        int al[2];
        #pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = (tid >> 2) + 32 * i;
            ar[i] = dense_h + (m0 + r < routed ? (size_t)(m0 + r) * F : 0);
            al[i] = m0 + r < routed ? F : 0;
        }
        /* k-step kt (of the part) to a stage: 64 rows of h, 32 rows of Wd from column d0 */
        auto load = [&](int stage, int kt) {
            const int k0 = (kb + kt) * ${bk};
            #pragma unroll
            for (int i = 0; i < 2; ++i)
                sp_dense_chunk(sA + (sp_u32)((stage * ${bm} + (tid >> 2) + 32 * i) * ${row} + ch * 8) * 2u, ar[i],
                               k0 + ch * 8, al[i], veca);
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int kr = (tid >> 4) + 8 * i, j = k0 + kr;
                sp_dense_chunk(sB + (sp_u32)((stage * ${bk} + kr) * ${yrow} + bch * 8) * 2u,
                               Wd + (j < F ? (size_t)j * D : 0), d0 + bch * 8, j < F ? D : 0, vecb);
            }
        };
${yacc}
${ypipe}
            #pragma unroll
            for (int ks = 0; ks < ${bk} / 16; ++ks) {
                sp_u32 a[2][4], b[8][2];
                sp_dense_afrag(a, sA + (sp_u32)(st * ${bm} * ${row}) * 2u, wm, ks, lane);
                #pragma unroll
                for (int j = 0; j < 8; j += 2) {
                    const int mat = lane >> 3;   /* matrices: (k 0-7, n j), (k 8-15, n j), (k 0-7, n j+1), (k 8-15, n j+1) */
                    const sp_u32 o = (sp_u32)((st * ${bk} + ks * 16 + (lane & 7) + ((mat & 1) << 3)) * ${yrow}
                                              + wn * 64 + j * 8 + ((mat >> 1) << 3)) * 2u;
                    sp_ldmatrix_x4_trans(sB + o, b[j][0], b[j][1], b[j + 1][0], b[j + 1][1]);
                }
                #pragma unroll
                for (int i = 0; i < 2; ++i)
                    #pragma unroll
                    for (int j = 0; j < 8; ++j) sp_mma_bf16_16816(acc[i][j], a[i], b[j]);
            }
        }
        sp_cp_async_wait<0>();
        __syncthreads();
        /* acc[i][j][e]: row wm*32 + i*16 + g + 8*(e >> 1), column wn*64 + j*8 + 2q + (e & 1) */
        #pragma unroll
        for (int i = 0; i < 2; ++i)
            #pragma unroll
            for (int j = 0; j < 8; ++j)
                #pragma unroll
                for (int hh = 0; hh < 2; ++hh) {
                    const int r = m0 + wm * 32 + i * 16 + g + 8 * hh, d = d0 + wn * 64 + j * 8 + 2 * q;
                    if (r >= routed || d >= D) continue;
                    float *dst = dense_acc + (size_t)r * D + d;
                    if (red2) {
${red2}
                    } else {
                        atomicAdd(dst, acc[i][j][2 * hh]);
                        if (d + 1 < D) atomicAdd(dst + 1, acc[i][j][2 * hh + 1]);
                    }
                }
    }
}

extern "C" __global__ void __launch_bounds__(256)
${fsig}
    const int routed = min((int)row_info[M], max(dense_capacity, 0));
${leave}    (void)T; (void)S;
    const size_t n = (size_t)routed * D, step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += step) {
        const size_t s = i / D, d = i % D;
        ${put}
    }
}
]], {threads = THREADS, ctas = CTAS, bm = BM, bk = BK, hn = HN, yn = YN, row = ROW, yrow = YROW, grow = GROW, hstages = HSTAGES, ystages = YSTAGES,
     -- two-float reductions exist from sm_90 on; before, two single ones
     red2 = gpu.cc >= 90 and [[
                        asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" :: "l"(dst), "f"(acc[i][j][2 * hh]),
                                     "f"(acc[i][j][2 * hh + 1]) : "memory");]] or [[
                        atomicAdd(dst, acc[i][j][2 * hh]);
                        atomicAdd(dst + 1, acc[i][j][2 * hh + 1]);]],
     hpipe = pipeline("            ", HSTAGES, "KT", "stage kt landed; every warp is done with the one the next load refills"),
     ypipe = pipeline("        ", YSTAGES, "nk"),
     yacc = "    " .. cuda.acc_decl(2, YN // 16):gsub("\n", "\n    "),
     leave = wide and "    if (sp_dense_wide(routed, pool_counter, pool_capacity)) return;   /* dense_hw, dense_yw's */\n" or "",
     gather = wide and GATHER or "",
     gsig = sig(names.dense_g), dsig = sig(names.dense_h), ysig = sig(names.dense_y), fsig = sig(names.finalize),
     put = ylo and string.format("sp_y_put(Y + (size_t)row_info[M + 1 + s] * D + d, %s + (size_t)row_info[M + 1 + s] * D + d,"
                                 .. " dense_acc[i]);", ylo)
       or "Y[(size_t)row_info[M + 1 + s] * D + d] = sp_f32_to_bf16(dense_acc[i]);"})
end

return M
