-- slotfill-spmm's kernel for the sp24 layout (runtime/sp_slotfill.h): W exactly 2:4, its records (per
-- 16-row tile and 64 columns: two k32 steps of values in mma.sp register order, 16 bytes a lane each, and
-- the pair's metadata, a word a lane) streamed from global memory straight into mma.sp.m16n8k32
-- fragments. Nothing is decoded and nothing passes through shared memory but the partial sums.
--
-- A CTA is `warps` warps over `tpw` 16-row tiles and bn tokens: warp w takes the w-th of `warps` slices
-- of the 64-column chunks and every tile, and loads `stages` k32 steps at a time (a register batch: a
-- lane's 16-byte values per tile and step, the pair's metadata, and its X fragments, read as 32-bit words
-- from L1/L2); the next batch is in flight while the current one's mma.sp run. The warps' partial tiles
-- are added in shared memory. Costs (sm_90a SASS): per k32 step and tile one 16-byte load and one mma.sp
-- per 8 tokens, four 4-byte X loads per 8 tokens shared by the tiles: HBM, not issue, bounds it (the
-- standalone form in bench/experiments/sp24-ceiling.cu streamed at 3.5-3.7 TB/s on the large shapes of an H200).
-- Before anything else every lane checks the image's header against M, K and the layout (magic,
-- version, dtype, window 64, sp24, no filled slots, no residual): an image that is not this kernel's
-- makes every output NaN and nothing past its header is read.
local text = require("lib.text")
local common = require("lib.slotfill_common")

local M = {}

-- CTAs per SM the compiler is held to (registers <= 65536 / (that x threads)): 16 warps an SM where the
-- two batches' registers are few (an estimate of the thread's registers <= 160: the 128 of the cap then
-- spill a few bytes at most), else what the registers allow. Measured on the H200 at 14336x4096, N = 8
-- (docs/journal/2026-12-01.md): warps=4,tpw=2,stages=4 0.0319 -> 0.0252 ms; stages=8 held to 128 spilled 600 bytes, -35 %.
function M.min_blocks(c)
  local nb = c.bn // 8
  if 2 * c.stages * (4 * c.tpw + 4 * nb) + 4 * c.tpw * nb + 40 <= 160 then return math.max(1, 16 // c.warps) end
  return 1
end

function M.layout(c)
  return {red = c.warps * c.tpw * 16 * c.bn * 4}
end

function M.emit(c, name, params, f16)
  return text.fill([[
#define SP_WARPS ${warps}
#define SP_TPW ${tpw}
#define SP_BN ${bn}
#define SP_NB ${nb}
#define SP_U ${u}
#define SP_REC 1152

${mma_sp_fn}
/* W streams past L1: read once */
__device__ __forceinline__ uint4 sp_ldg_stream(const unsigned char *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ sp_u32 sp_ldg32(const unsigned char *p)
{
    sp_u32 v;
    asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
${out16}

/* One batch of SP_U k32 steps (SP_U / 2 chunks) of a warp's tiles: values, metadata and X fragments. */
struct sp_batch {
    uint4 a[SP_TPW][SP_U];
    sp_u32 e[SP_TPW][SP_U / 2];
    sp_u32 b[SP_U][SP_NB][4];
};

/* A batch of full chunks: each tile's record pointer (at its lane's 16 bytes of the first chunk) and each
 * token row's X pointer (at the lane's first word), loads at fixed offsets from them (folded into the
 * instructions), and the pointers moved on by the batch. */
__device__ __forceinline__ void sp_load_fast(sp_batch &B, const unsigned char **vp, const unsigned char **xp, const bool *tok,
                                             int lane)
{
    #pragma unroll
    for (int u = 0; u < SP_U; ++u) {
        #pragma unroll
        for (int i = 0; i < SP_TPW; ++i) {
            B.a[i][u] = sp_ldg_stream(vp[i] + (u / 2) * SP_REC + (u & 1) * 512);
            if ((u & 1) == 0) B.e[i][u / 2] = sp_ldg32(vp[i] + (u / 2) * SP_REC + 1024 - 12 * lane);
        }
        #pragma unroll
        for (int j = 0; j < SP_NB; ++j)
            #pragma unroll
            for (int q = 0; q < 4; ++q) { /* (a row past N reads row 0, then drops it: no branch around the load) */
                const sp_u32 v = sp_ldg32(xp[j] + ((u / 2) * 64 + (u & 1) * 32 + 8 * q) * 2);
                B.b[u][j][q] = tok[j] ? v : 0u;
            }
    }
    #pragma unroll
    for (int i = 0; i < SP_TPW; ++i) vp[i] += (SP_U / 2) * SP_REC;
    #pragma unroll
    for (int j = 0; j < SP_NB; ++j) xp[j] += (SP_U / 2) * 128;
}

/* The general case (K odd, X not 4-byte aligned, or a chunk reaching past K): `n` (<= SP_U, even) steps from
 * chunk ch, steps past n zero; X element by element, zero past K and past N. */
__device__ __forceinline__ void sp_load_any(sp_batch &B, const unsigned char *rec, size_t tstride, long long ch, int n,
                                            const unsigned short *const *xr, const bool *tok, int K, int lane)
{
    const int t = lane & 3;
    #pragma unroll
    for (int u = 0; u < SP_U; ++u) {
        const bool in = u < n;
        const unsigned char *r = rec + (size_t)(ch + u / 2) * SP_REC;
        #pragma unroll
        for (int i = 0; i < SP_TPW; ++i) {
            B.a[i][u] = in ? sp_ldg_stream(r + i * tstride + (u & 1) * 512 + lane * 16) : make_uint4(0u, 0u, 0u, 0u);
            if ((u & 1) == 0) B.e[i][u / 2] = in ? sp_ldg32(r + i * tstride + 1024 + lane * 4) : 0x44444444u;
        }
        const long long k0 = (ch + u / 2) * 64 + (u & 1) * 32 + 2 * t;
        #pragma unroll
        for (int j = 0; j < SP_NB; ++j)
            #pragma unroll
            for (int q = 0; q < 4; ++q) {
                const long long k = k0 + 8 * q;
                sp_u32 lo = 0, hi = 0;
                if (in && tok[j] && k < K) lo = xr[j][k];
                if (in && tok[j] && k + 1 < K) hi = xr[j][k + 1];
                B.b[u][j][q] = lo | hi << 16;
            }
    }
}

__device__ __forceinline__ void sp_compute(float (*acc)[4], const sp_batch &B)
{
    #pragma unroll
    for (int u = 0; u < SP_U; ++u)
        #pragma unroll
        for (int i = 0; i < SP_TPW; ++i) {
            const sp_u32 a[4] = {B.a[i][u].x, B.a[i][u].y, B.a[i][u].z, B.a[i][u].w};
            #pragma unroll
            for (int j = 0; j < SP_NB; ++j) {
                if (u & 1) sp_mma_sp<1>(acc[i * SP_NB + j], a, B.b[u][j], B.e[i][u / 2]);
                else sp_mma_sp<0>(acc[i * SP_NB + j], a, B.b[u][j], B.e[i][u / 2]);
            }
        }
}

/* Chunks [c0, c1) of the warp's tiles, SP_U / 2 chunks a batch, the next batch loaded while this one runs
 * (FAST: every chunk inside K, K even and X 4-byte aligned); the slice's last chunks, fewer than a batch,
 * through the general loads. */
template <bool FAST> __device__ __forceinline__ void sp_stream(float (*acc)[4], const unsigned char *rec, size_t tstride,
                                                               long long c0, long long c1, const unsigned short *const *xr,
                                                               const bool *tok, int K, int lane)
{
    const long long nbat = FAST ? (c1 - c0) / (SP_U / 2) : 0;
    sp_batch P, Q;
    if (nbat > 0) {
        const unsigned char *vp[SP_TPW], *xp[SP_NB];
        #pragma unroll
        for (int i = 0; i < SP_TPW; ++i) vp[i] = rec + i * tstride + (size_t)c0 * SP_REC + lane * 16;
        #pragma unroll
        for (int j = 0; j < SP_NB; ++j) xp[j] = (const unsigned char *)(xr[j] + c0 * 64 + 2 * (lane & 3));
        sp_load_fast(P, vp, xp, tok, lane);
        for (long long b = 0; b < nbat; b += 2) {
            if (b + 1 < nbat) sp_load_fast(Q, vp, xp, tok, lane);
            sp_compute(acc, P);
            if (b + 1 >= nbat) break;
            if (b + 2 < nbat) sp_load_fast(P, vp, xp, tok, lane);
            sp_compute(acc, Q);
        }
    }
    for (long long c = c0 + nbat * (SP_U / 2); c < c1; c += SP_U / 2) {
        const long long n = c1 - c < SP_U / 2 ? c1 - c : SP_U / 2;
        sp_load_any(P, rec, tstride, c, (int)n * 2, xr, tok, K, lane);
        sp_compute(acc, P);
    }
}

extern "C" __global__ void __launch_bounds__(${threads}, ${minb})
${name}(${params})
{
    extern __shared__ __align__(16) unsigned char sp_smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    const long long tiles = (M + 15) >> 4, chunks = (K + 63) >> 6;
    const long long tile0 = (long long)blockIdx.x * SP_TPW;
    const int n0 = blockIdx.y * SP_BN;
    /* the image must be this kernel's (magic, version, bf16/fp16, window 64, the sp24 layout, M, K, no
     * filled slots and no residual): else nothing past its header is read and the outputs are NaN */
    const sp_u32 *h = (const sp_u32 *)W;
    const bool ok = h[0] == 0x55545053u && h[1] == 0x4653454eu && h[2] >= 2u && h[4] == ${dtype}u && h[5] == 64u &&
                    h[36] == 3u && h[8] == (sp_u32)M && h[9] == 0u && h[10] == (sp_u32)K && h[11] == 0u &&
                    (h[22] | h[23] | h[24] | h[25]) == 0u;
    float acc[SP_TPW * SP_NB][4];
    #pragma unroll
    for (int i = 0; i < SP_TPW * SP_NB; ++i)
        #pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][e] = 0.0f;
    /* this warp's slice of the chunks, and its tiles (a tile past M reads the last tile: its rows are not written) */
    const long long c0 = chunks * warp / SP_WARPS, c1 = chunks * (warp + 1) / SP_WARPS;
    const long long first = tile0 < tiles ? tile0 : tiles - 1;
    const size_t tstride = (size_t)((tile0 + 1 < tiles) ? chunks * SP_REC : 0);
    const unsigned char *rec = W + 256 + (size_t)first * chunks * SP_REC;
    const unsigned short *xr[SP_NB];
    bool tok[SP_NB];
    #pragma unroll
    for (int j = 0; j < SP_NB; ++j) {
        tok[j] = n0 + j * 8 + g < N;
        xr[j] = X + (size_t)(tok[j] ? n0 + j * 8 + g : 0) * K;
    }
    if (ok && c0 < c1) {
        if ((K & 1) == 0 && ((unsigned long long)X & 3ull) == 0) {
            const long long full = K >> 6;   /* chunks wholly inside K */
            const long long f1 = c1 < full ? c1 : full;
            if (c0 < f1) sp_stream<true>(acc, rec, tstride, c0, f1, xr, tok, K, lane);
            if (f1 < c1) sp_stream<false>(acc, rec, tstride, f1 > c0 ? f1 : c0, c1, xr, tok, K, lane);
        } else {
            sp_stream<false>(acc, rec, tstride, c0, c1, xr, tok, K, lane);
        }
    }
    /* the warps' partial tiles added in shared memory */
    float *red = (float *)sp_smem;   /* [WARPS][TPW * 16][BN] */
    #pragma unroll
    for (int i = 0; i < SP_TPW; ++i)
        #pragma unroll
        for (int j = 0; j < SP_NB; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                red[(warp * SP_TPW * 16 + i * 16 + g + 8 * (e >> 1)) * SP_BN + j * 8 + 2 * tq + (e & 1)] = acc[i * SP_NB + j][e];
    __syncthreads();
    for (int idx = threadIdx.x; idx < SP_TPW * 16 * SP_BN; idx += SP_WARPS * 32) {
        const int r = idx / SP_BN, n = idx % SP_BN;
        float s = 0.0f;
        #pragma unroll
        for (int w = 0; w < SP_WARPS; ++w) s += red[(w * SP_TPW * 16 + r) * SP_BN + n];
        const long long row = tile0 * 16 + r;
        if (row < M && n0 + n < N) Y[(size_t)(n0 + n) * M + row] = ok ? sp_out16(s) : (unsigned short)0xffffu;
    }
}
]], {warps = c.warps, tpw = c.tpw, bn = c.bn, nb = c.bn // 8, u = c.stages, mma_sp_fn = common.mma_sp(f16),
     threads = 32 * c.warps, minb = M.min_blocks(c), name = name, params = params, dtype = f16 and 1 or 0,
     out16 = common.out16(f16)})
end

return M
