-- twell-ffn's register consumer (consumer=reg): one warp per token row with the row's fp32 output in
-- registers, lane l holding columns 256 k + 8 l .. 256 k + 8 l + 7 of every 256-column chunk k.
--
-- Why: the row consumer (lib/twell_row.lua) keeps each warp's output row in shared memory (8 KB a warp at
-- D = 2048) and sweeps it chunk by chunk for every batch of entries, so that one CTA of 16 warps fills an
-- SM and each entry costs about one and a half round trips to L2. Here an entry's Wu row and Wd row are
-- requested together (a lane's 16-byte loads, all in flight at once), its dot product reduced, and its Wd
-- row added to the registers: one round trip to L2 per `dots` entries. (Software pipelining, the next step's
-- rows requested before this step's arithmetic, took 255 registers a lane and ran 0.62-0.94x of this on the
-- H200: docs/journal/2026-12-02.md.) x lives in the warp's shared memory
-- (2 D bytes), read for every entry: held in registers it took 64 of them a lane (the compiler unpacks it),
-- which the loads in flight need more (223 registers, Wd loads issued late; sm_90a, D = 2048).
--
-- Limits (constraints): D % 8 == 0 and D <= 4096 (128 fp32 accumulators a lane); the kernel compiled
-- for a problem holds cdiv(D, 256) chunks, and one rendered without a problem D <= 2048 (a larger D then
-- writes NaN rows: loud). Pointers not 16-byte aligned take element-wise loads (correct, slower).
-- Lost tiles and the dense path's rows as the row consumer (its comments): twell-ffn semantics only.
--
-- consumer=regmma: the same loads, the arithmetic on tensor cores (mma.sync m16n8k16, sm_80 and later). The
-- plain kernel spends 484 instructions an entry at D = 2048, 320 of them FFMA and the bf16 unpacking that feeds
-- them (offline count, docs/journal/2026-12-02.md); here an entry costs 4 mma a 256-column chunk. mma sums over k, and
-- lane l supplies A[l/4][..] and B[..][l/4] of its own k slots, so with A = x and B = Wu, C[g][g] is the dot
-- product over lane group g's columns (the 8 diagonal entries summed across the warp: the whole dot product);
-- with A = h I (h in bf16, as the tile consumer and the dense layer round it) and B = Wd, C[m][n] = h B[m][n]:
-- each of B's 128 values added to one accumulator, held by another lane (sp_rmma_col says which column).
-- Where p.D is a multiple of 256 the loads lose their tail guards (runtime D must then equal p.D). Measured
-- (H200): 133 instructions an entry against 484, yet 1.02x reg over 40 problems (0.94-1.15x): the consumer waits
-- on memory, not on issue (docs/journal/2026-12-02.md).
local text = require("lib.text")
local row = require("lib.twell_row")

local M = {}

M.MAX_D = 4096
-- regmma: past this many chunks a step (dots * chunks) the accumulators and a step's Wu and Wd rows would not
-- fit in registers together (sm_90a: 208 bytes spilled at D = 4096), so the Wd rows come after the dot products.
M.SPLIT = 8
-- 256-column chunks the kernel holds for problem p (nil: rendered without one).
function M.chunks(p) return p and (p.D + 255) // 256 or 8 end

function M.smem(c, p) return c.warps * M.chunks(p) * 256 * 2 end

-- Its own parameters (twell-ffn appends them to its space).
M.params = {
  {name = "pf", values = {0, 1, 2, 4}, default = 0,
   doc = "consumer=regmma: steps ahead whose Wu and Wd rows are prefetched into L2 (0: none)"},
  {name = "passes", values = {1, 2, 4, 8}, default = 1,
   doc = "consumer=regmma: 1: one kernel; P > 1: two, the dot products in P ranges of the neurons, then the output"
     .. " in P slices of its columns, so that each pass's weights (1/P of the cold Wu or Wd) stay in L2"},
}

-- The consumers this module emits.
function M.is(c) return c.consumer == "reg" or c.consumer == "regmma" end
-- regmma rendered for a D with no partial chunk: no tail guards (D then checked at run time).
local function full(c, p) return c.consumer == "regmma" and p ~= nil and p.D % 256 == 0 end
-- passes > 1: the column slice's chunks, and the entries an output pass's step takes (as many Wd registers as a
-- fused step's Wu rows, at most 8)
local function slice_chunks(c, p) return (M.chunks(p) + c.passes - 1) // c.passes end
local function slice_dots(c, p) return math.max(1, math.min(8, c.dots * M.chunks(p) // slice_chunks(c, p))) end
-- passes > 1 without a partial slice: every slice's loads lose their guards too
local function full_slices(c, p) return full(c, p) and M.chunks(p) % c.passes == 0 end

-- The consumer's launch; passes > 1: the output pass's, and the dot-product pass's second (passes CTAs a row block).
function M.launch(c, p)
  local rows = (p.M + c.warps - 1) // c.warps
  if c.passes == 1 then return {grid = {rows, 1, 1}, block = {32 * c.warps, 1, 1}, smem = M.smem(c, p)} end
  return {grid = {rows * c.passes, 1, 1}, block = {32 * c.warps, 1, 1}, smem = c.warps * slice_chunks(c, p) * 512},
         {grid = {rows * c.passes, 1, 1}, block = {32 * c.warps, 1, 1}, smem = M.smem(c, p)}
end
-- passes > 1: the consumer's two kernels
function M.split(c) return c.consumer == "regmma" and c.passes > 1 end

-- Constraints on top of the row consumer's: the parameters it does not use stay at their defaults (one kernel
-- per configuration), at most 8 warps (a CTA's registers), and the rows a lane's registers hold in flight at
-- most 16 chunks' worth (sm_90a: D = 2048 with dots = 2 takes 255 registers without spilling, D = 4096 with
-- one entry 253; more spills).
function M.constraints(row_params)
  local defaults = {}
  for _, p in ipairs(row_params) do defaults[p.name] = p.default end
  return {
    {why = "pf > 0: consumer=regmma's", check = function(c) return c.pf == 0 or c.consumer == "regmma" end},
    {why = "passes > 1: consumer=regmma's, without pf (each pass's weights stay in L2)",
     check = function(c) return c.passes == 1 or (c.consumer == "regmma" and c.pf == 0) end},
    {why = "consumer=reg/regmma: one warp per row (split=1), unroll and dunroll at their defaults, warps <= 8, dots <= 2",
     check = function(c)
       if not M.is(c) then return true end
       if c.split ~= 1 then return false, "split" end
       if c.unroll ~= defaults.unroll then return false, "unroll" end
       if c.dunroll ~= 1 then return false, "dunroll" end
       return c.warps <= 8 and c.dots <= 2
     end},
    {why = "consumer=reg/regmma: D % 8 == 0 and D <= 4096 (the output row in registers), dots * cdiv(D, 256) <= 16",
     check = function(c, gpu, p)
       return not M.is(c) or p == nil or (p.D % 8 == 0 and p.D <= M.MAX_D
         and c.dots * M.chunks(p) <= 16 and M.smem(c, p) <= gpu.smem_per_block)
     end},
  }
end

-- consumer=regmma's pieces (the module's opening comment says how the mma fragments are used).
local MMA_DEFS = [[

#define SP_RDC (4 / SP_RG) /* independent mma chains an entry's dot product is split over (latency) */
#define SP_RSPLIT (SP_RG * SP_RNCH > ${split}) /* a step's Wd rows requested after its dot products */]]
local MMA_LOAD = cuda_file("twell_rowreg_mma")
-- pf > 0: the rows of the entries pf steps ahead requested into L2 (prefetch: no registers held), those of the
-- first pf steps when a batch starts. Why: at D = 4096 with firing rates near uniform (gen=1) the cold weights
-- (200 MB) do not stay in L2, the consumer waits on DRAM (24 % L2 hits, DRAM 51 % busy, 13 long-scoreboard stalls
-- an issue; docs/journal/2026-12-02.md) and its registers allow one entry's rows in flight a warp. Measured: pf=1 up to
-- 3 % faster there, level elsewhere; pf >= 2 slower (the lines are evicted before they are used).
local PF_CALL = [[

    sp_rmma_prefetch(Wu, Wd, col, k == 0 ? SP_RG : k + SP_RPF * SP_RG, min(k + (SP_RPF + 1) * SP_RG, cnt), D, lane);]]
local PF_DEVICE = [[

#define SP_RPF ${pf}    /* steps ahead whose rows are prefetched into L2 */
/* The Wu and Wd rows of the batch's entries e0 .. e1 - 1 into L2, a 128-byte line a lane at a time */
__device__ __forceinline__ void sp_rmma_prefetch(const sp_bf16 *Wu, const sp_bf16 *Wd, int col, int e0, int e1, int D,
                                                 int lane)
{
    for (int e = e0; e < e1; ++e) {
        const size_t row = (size_t)__shfl_sync(SP_FULL, col, e) * D;
        for (int o = lane * 64; o < D; o += 32 * 64) {
            asm volatile("prefetch.global.L2 [%0];" :: "l"(Wu + row + o));
            asm volatile("prefetch.global.L2 [%0];" :: "l"(Wd + row + o));
        }
    }
}]]
local MMA_DEVICE = [[

/* consumer=regmma: x's 16 bytes as sp_rmma_step's A fragment wants them, words 0 2 1 3 (rows g and g + 8 of
 * one A serve both mma of a chunk, no register moves); any 8 bf16 so permuted keep their dot product */
__device__ __forceinline__ sp_u32x4 sp_rperm(sp_u32x4 q)
{
    const sp_u32x4 r = {q.x, q.z, q.y, q.w};
    return r;
}
/* D += A B on tensor cores, volatile: kept after the step's loads (ptxas otherwise sinks the Wd loads below
 * the first mma, which waits for Wu: two round trips an entry) */
__device__ __forceinline__ void sp_rmma(float *d, sp_u32 a0, sp_u32 a1, sp_u32 a2, sp_u32 a3, sp_u32 b0, sp_u32 b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}${pfdev}
/* consumer=regmma: a step, its arithmetic on tensor cores. A = x (permuted: sp_rperm) against B = Wu's words 0 1
 * puts the chunk's dot product over lane group g in C[g][g], against words 2 3 in C[g + 8][g]: both held by
 * lane 4 g + g / 2 (elements g & 1 and 2 + (g & 1)), accumulated apart (the other rows are cross terms). That
 * lane also takes h in A = h I; clamped repeats past the batch's end get h = 0 as in sp_rstep_use. The Wd rows
 * are requested with the Wu rows, or, past SP_RSPLIT (their registers and the accumulators' would spill), once
 * the dot products are done: a second round trip. */
template <bool VEC>
__device__ __forceinline__ void sp_rmma_step(float (&acc)[SP_RNCH][8], const sp_bf16 *__restrict__ Wu,
                                             const sp_bf16 *__restrict__ Wd, const sp_bf16 *xs, int col, float h,
                                             int k, int cnt, int D, int lane)
{
    const bool diag = (lane & 3) == (lane >> 3), hi = (lane >> 2) & 1;
    sp_u32x4 u[SP_RG][SP_RNCH], w[SP_RG][SP_RNCH];
    sp_rmma_load<VEC>(Wu, col, k, cnt, D, lane, u);
    if (!SP_RSPLIT) sp_rmma_load<VEC>(Wd, col, k, cnt, D, lane, w);${pfcall}
    float c[SP_RG][SP_RDC][4];
    #pragma unroll
    for (int j = 0; j < SP_RG; ++j)
        #pragma unroll
        for (int r = 0; r < SP_RDC; ++r)
            #pragma unroll
            for (int e = 0; e < 4; ++e) c[j][r][e] = 0.0f;
    #pragma unroll
    for (int q = 0; q < SP_RNCH; ++q) {
        const sp_u32x4 x = sp_xs16(xs + q * 256 + lane * 8);
        #pragma unroll
        for (int j = 0; j < SP_RG; ++j) {
            sp_rmma(c[j][(2 * q) % SP_RDC], x.x, x.y, x.z, x.w, u[j][q].x, u[j][q].y);
            sp_rmma(c[j][(2 * q + 1) % SP_RDC], x.x, x.y, x.z, x.w, u[j][q].z, u[j][q].w);
        }
    }
    if (SP_RSPLIT) sp_rmma_load<VEC>(Wd, col, k, cnt, D, lane, w);
    #pragma unroll
    for (int j = 0; j < SP_RG; ++j) {
        float s = 0.0f;
        #pragma unroll
        for (int r = 0; r < SP_RDC; r += 2) s += (hi ? c[j][r][1] : c[j][r][0]) + (hi ? c[j][r + 1][3] : c[j][r + 1][2]);
        const float g = __shfl_sync(SP_FULL, h, min(k + j, cnt - 1));
        const float hj = k + j < cnt ? g * sp_warp_sum(diag ? s : 0.0f) : 0.0f;
        const sp_u32 hb = diag ? (sp_u32)sp_f32_to_bf16(hj) << (hi ? 16 : 0) : 0u;
        #pragma unroll
        for (int q = 0; q < SP_RNCH; ++q) {
            sp_rmma(acc[q], hb, 0u, 0u, hb, w[j][q].x, w[j][q].y);
            sp_rmma(acc[q] + 4, hb, 0u, 0u, hb, w[j][q].z, w[j][q].w);
        }
    }
}
/* consumer=regmma: the chunk column that accumulator e of a lane's acc[q] holds: C element e & 3 of the
 * chunk's mma e / 4 is h times Wd's value in lane 8 t + g / 2 (+ 4 for odd elements), its word 2 (e / 4) +
 * (e & 2) / 2, half g & 1 (lane = 4 g + t) */
__device__ __forceinline__ int sp_rmma_col(int lane, int e)
{
    const int g = lane >> 2, t = lane & 3, r = e & 3;
    return 8 * (8 * t + 4 * (r & 1) + (g >> 1)) + 4 * (e >> 2) + 2 * (r >> 1) + (g & 1);
}]]
-- The output row into the warp's shared memory in column order (x is no longer read), then stored as reg's.
local MMA_GATHER = [[

    __syncwarp();
    #pragma unroll
    for (int q = 0; q < SP_RNCH; ++q)
        #pragma unroll
        for (int e = 0; e < 8; ++e) xs[q * 256 + sp_rmma_col(lane, e)] = sp_f32_to_bf16(acc[q][e]);
    __syncwarp();]]
local MMA_PACK = [[
        o = *(const sp_u32x4 *)(xs + d);]]
local REG_STEP = [[
                /* every load of the step issued before any use */
                sp_u32x4 u[SP_RG][SP_RNCH], w[SP_RG][SP_RNCH];
                sp_rstep_load<VEC>(Wu, Wd, col, k, cnt, D, lane, u, w);
                sp_rstep_use(acc, xs, h, k, cnt, lane, u, w);]]
local MMA_STEP = [[
                sp_rmma_step<VEC>(acc, Wu, Wd, xs, col, h, k, cnt, ${dl}, lane);]]
local REG_PACK = [[
        o.x = sp_pack_bf16x2(acc[q][0], acc[q][1]); o.y = sp_pack_bf16x2(acc[q][2], acc[q][3]);
        o.z = sp_pack_bf16x2(acc[q][4], acc[q][5]); o.w = sp_pack_bf16x2(acc[q][6], acc[q][7]);]]

-- twell-ffn's hot slice (lib/twell_row.lua's sp_y_rest): the output's rounding remainders to ylo, from the fp32
-- accumulators of n chunks (below lim columns): in order (reg), or gathered through xs as the output was (regmma).
local REG_LO = [[

    #pragma unroll
    for (int q = 0; q < ${n}; ++q) {
        const int d = q * 256 + lane * 8;
        if (d >= ${lim}) continue;
        sp_u32x4 o;
        o.x = sp_pack_bf16x2(sp_y_rest(acc[q][0]), sp_y_rest(acc[q][1]));
        o.y = sp_pack_bf16x2(sp_y_rest(acc[q][2]), sp_y_rest(acc[q][3]));
        o.z = sp_pack_bf16x2(sp_y_rest(acc[q][4]), sp_y_rest(acc[q][5]));
        o.w = sp_pack_bf16x2(sp_y_rest(acc[q][6]), sp_y_rest(acc[q][7]));
        sp_y_store8<VEC>(ylo + d, o);
    }]]
local MMA_LO = [[

    __syncwarp();
    #pragma unroll
    for (int q = 0; q < ${n}; ++q)
        #pragma unroll
        for (int e = 0; e < 8; ++e) xs[q * 256 + sp_rmma_col(lane, e)] = sp_f32_to_bf16(sp_y_rest(acc[q][e]));
    __syncwarp();
    #pragma unroll
    for (int q = 0; q < ${n}; ++q) {
        const int d = q * 256 + lane * 8;
        if (d < ${lim}) sp_y_store8<VEC>(ylo + d, *(const sp_u32x4 *)(xs + d));
    }]]

-- The device function (after lib/twell_row.lua's, whose sp_twell_group, sp_twell_fetch, sp_dot8, sp_fma8,
-- sp_warp_sum and sp_ld16 it uses).
-- The pieces every register consumer renders: x's and the rows' loads, reg's step and (regmma) the mma pieces.
local DEVICE = [[
#define SP_RNCH ${nch}   /* 256-column chunks of the output row a lane holds: D <= 256 * SP_RNCH */
#define SP_RG ${dots}    /* entries whose Wu and Wd rows are requested together */${mdefs}

/* 16 bytes of x from shared memory, volatile: read for every entry, never hoisted into 32 (or, unpacked, 64)
 * registers a lane that the Wu and Wd loads in flight need more */
__device__ __forceinline__ sp_u32x4 sp_xs16(const sp_bf16 *p)
{
    sp_u32x4 q;
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w) : "r"(sp_smem_u32(p)));
    return q;
}
/* 8 bf16 at src: one 16-byte load when VEC, else element by element */
template <bool VEC>
__device__ __forceinline__ sp_u32x4 sp_rld8(const sp_bf16 *src)
{
    if (VEC) return sp_ld16(src);
    sp_u32x4 q;
    q.x = (sp_u32)src[0] | ((sp_u32)src[1] << 16); q.y = (sp_u32)src[2] | ((sp_u32)src[3] << 16);
    q.z = (sp_u32)src[4] | ((sp_u32)src[5] << 16); q.w = (sp_u32)src[6] | ((sp_u32)src[7] << 16);
    return q;
}${mload}

/* A step's loads: the Wu and Wd rows of the batch's entries k .. k + SP_RG - 1 (clamped to its last entry:
 * repeated rows, L1 hits, where the batch ends; their gates are zero) */
template <bool VEC>
__device__ __forceinline__ void sp_rstep_load(const sp_bf16 *__restrict__ Wu, const sp_bf16 *__restrict__ Wd, int col,
                                              int k, int cnt, int D, int lane, sp_u32x4 (&u)[SP_RG][SP_RNCH],
                                              sp_u32x4 (&w)[SP_RG][SP_RNCH])
{
    const sp_u32x4 zero = {0u, 0u, 0u, 0u};
    #pragma unroll
    for (int j = 0; j < SP_RG; ++j) {
        const int cj = __shfl_sync(SP_FULL, col, min(k + j, cnt - 1));
        #pragma unroll
        for (int q = 0; q < SP_RNCH; ++q) {
            const int d = q * 256 + lane * 8;
            u[j][q] = d < D ? sp_rld8<VEC>(Wu + (size_t)cj * D + d) : zero;
            w[j][q] = d < D ? sp_rld8<VEC>(Wd + (size_t)cj * D + d) : zero;
        }
    }
}
/* A step's arithmetic: acc += g_j dot(x, Wu[j]) Wd[j] over its entries (x: xs, zeros past D) */
__device__ __forceinline__ void sp_rstep_use(float (&acc)[SP_RNCH][8], const sp_bf16 *xs, float h, int k, int cnt,
                                             int lane, const sp_u32x4 (&u)[SP_RG][SP_RNCH],
                                             const sp_u32x4 (&w)[SP_RG][SP_RNCH])
{
    float s[SP_RG];
    #pragma unroll
    for (int j = 0; j < SP_RG; ++j) {
        s[j] = 0.0f;
        #pragma unroll
        for (int q = 0; q < SP_RNCH; ++q) s[j] = sp_dot8(sp_xs16(xs + q * 256 + lane * 8), u[j][q], s[j]);
    }
    #pragma unroll
    for (int j = 0; j < SP_RG; ++j) {
        const float g = __shfl_sync(SP_FULL, h, min(k + j, cnt - 1));
        const float hj = k + j < cnt ? g * sp_warp_sum(s[j]) : 0.0f;
        #pragma unroll
        for (int q = 0; q < SP_RNCH; ++q) sp_fma8(acc[q], hj, w[j][q]);
    }
}${mdevice}]]
-- The fused consumer (passes = 1): one kernel, a token row's dot products and output together.
local FUSED = [[


/* Token row x's output y = sum over its active neurons j of g_j dot(x, Wu[j]) Wd[j] (g_j: the packed gate,
 * recomputed from Wg for a lost tile's entries). xs: the warp's shared memory for x (256 SP_RNCH bf16). */
template <bool VEC>
__device__ __forceinline__ void sp_twell_rowreg(const sp_bf16 *__restrict__ x, const sp_bf16 *__restrict__ Wg,
                                                const sp_bf16 *__restrict__ Wu, const sp_bf16 *__restrict__ Wd,
                                                sp_bf16 *__restrict__ y, const sp_u32 *rowp, const sp_u32 *pool,
                                                int ntiles, int W, int T, int F, int D, int lane, sp_bf16 *xs${lo_param})
{
    const sp_u32x4 zero = {0u, 0u, 0u, 0u};
    float acc[SP_RNCH][8];
    #pragma unroll
    for (int k = 0; k < SP_RNCH; ++k)
        #pragma unroll
        for (int e = 0; e < 8; ++e) acc[k][e] = 0.0f;
    /* x in the warp's shared memory, zeros past D (the dot products read every chunk) */
    for (int d = lane * 8; d < 256 * SP_RNCH; d += 256) *(sp_u32x4 *)(xs + d) = ${xval};
    __syncwarp();
    for (int g = 0; g * 32 < ntiles; ++g) {
        sp_u32 src;
        int incl;
        const int total = sp_twell_group(rowp, pool, ntiles, W, g, lane, T, F, true, src, incl);
        for (int b = 0; b < total; b += 32) {
            int col;
            float h;
            sp_twell_fetch(rowp, pool, src, incl, total, g, T, b + lane, col, h);
            const int cnt = min(32, total - b);
            if (__any_sync(SP_FULL, h < 0.0f)) {   /* a lost tile's entries: the gate again, from X and Wg */
                for (int k = 0; k < cnt; ++k) {
                    const int ck = __shfl_sync(SP_FULL, col, k);
                    float s = 0.0f;
                    #pragma unroll
                    for (int q = 0; q < SP_RNCH; ++q) {
                        const int d = q * 256 + lane * 8;
                        if (d < D) s = sp_dot8(sp_xs16(xs + q * 256 + lane * 8), ${gval}, s);
                    }
                    s = sp_warp_sum(s);
                    if (lane == k && h < 0.0f) h = sp_bf16_to_f32(sp_f32_to_bf16(fmaxf(s, 0.0f)));
                }
            }
            for (int k = 0; k < cnt; k += SP_RG) {
${step}
            }
        }
    }${gather}
    #pragma unroll
    for (int q = 0; q < SP_RNCH; ++q) {
        const int d = q * 256 + lane * 8;
        if (d >= D) continue;
        sp_u32x4 o;
${pack}
        if (VEC) {
            *(sp_u32x4 *)(y + d) = o;
        } else {
            const sp_u32 v[4] = {o.x, o.y, o.z, o.w};
            #pragma unroll
            for (int e = 0; e < 4; ++e) { y[d + 2 * e] = (sp_bf16)(v[e] & 0xffffu); y[d + 2 * e + 1] = (sp_bf16)(v[e] >> 16); }
        }
    }${lo_store}
}
]]

-- passes > 1: the consumer in two kernels, each pass of each over a part of the weights small enough to stay
-- in L2. Why: at D = 4096 with firing rates near uniform (gen=1) a row's entries land anywhere in the cold
-- neurons' Wu and Wd rows (200 MB against the H200's 50 MB of L2): the fused consumer read them at 24 % L2 hits,
-- DRAM 51 % busy, 0.89 ms against 0.11 ms where they stayed in L2 (gen=0; docs/journal/2026-12-02.md). The dot products
-- are independent entry by entry, so the first kernel takes the neurons in `passes` ranges (CTAs in range-major
-- order: the GPU's resident CTAs work in one range, 1/passes of Wu, at a time) and stores each entry's h = g
-- dot(x, Wu[col]) in bf16 where its gate was (the fused consumer rounds h so too: same outputs); the output's
-- columns are independent, so the second takes them in `passes` slices (1/passes of Wd at a time), its row
-- slice in registers. The price: x read once per range, the entries' list once per slice. sp_rsplit_fetch and the
-- dot products repeat sp_twell_fetch's search and sp_rmma_step's mma block: sharing them would change those
-- kernels' text and leave their shipped measurements stale.
local SPLIT_DEVICE = [[

#define SP_RNCS ${ncs}   /* passes > 1: 256-column chunks of the column slice an output pass writes */
#define SP_RGS ${gs}     /* passes > 1: entries whose Wd slices the output pass requests together */

/* passes > 1: entry f of the group as sp_twell_fetch gives it, and the word that holds it (null past the group's
 * end and for a lost tile's entries, whose gates are to be recomputed: val -1) */
__device__ __forceinline__ const sp_u32 *sp_rsplit_fetch(const sp_u32 *rowp, const sp_u32 *pool, sp_u32 src, int incl,
                                                         int total, int g, int T, int f, int &col, float &val)
{
    int lo = 0;
    #pragma unroll
    for (int step = 16; step > 0; step >>= 1)
        if (__shfl_sync(SP_FULL, incl, lo + step - 1) <= f) lo += step;
    const int owner = lo & 31;
    const sp_u32 s = __shfl_sync(SP_FULL, src, owner);
    const int prev = __shfl_sync(SP_FULL, incl, (owner + 31) & 31), k = f - (owner ? prev : 0);
    col = (g * 32 + owner) * T + k;
    val = f < total && s == 0xC0000000u ? -1.0f : 0.0f;
    if (f >= total || s == 0xC0000000u) return nullptr;
    const sp_u32 *at = (s & 0x80000000u) ? pool + (s & 0x3fffffffu) + k : rowp + s + k;
    const sp_u32 e = *at;
    col = (g * 32 + owner) * T + (int)(e & 0xffffu);
    val = __uint_as_float(e & 0xffff0000u);
    return at;
}

/* passes > 1, the dot-product pass over n of a row's tiles (rowp: the first; F: the columns from there on; Wu:
 * their first neuron's row): each stored entry's gate g becomes h = g dot(x, Wu[col]) in bf16, in place; lost
 * tiles are the output pass's. xs: the warp's shared memory for x, permuted as sp_rmma_step reads it. */
template <bool VEC>
__device__ __forceinline__ void sp_twell_rdots(const sp_bf16 *__restrict__ x, const sp_bf16 *__restrict__ Wu,
                                               sp_u32 *rowp, sp_u32 *pool, int n, int W, int T, int F, int D, int lane,
                                               sp_bf16 *xs)
{
    const sp_u32x4 zero = {0u, 0u, 0u, 0u};
    const bool diag = (lane & 3) == (lane >> 3), hi = (lane >> 2) & 1;
    for (int d = lane * 8; d < 256 * SP_RNCH; d += 256) *(sp_u32x4 *)(xs + d) = sp_rperm(d < D ? sp_rld8<VEC>(x + d) : zero);
    __syncwarp();
    for (int g = 0; g * 32 < n; ++g) {
        sp_u32 src;
        int incl;
        const int total = sp_twell_group(rowp, pool, n, W, g, lane, T, F, false, src, incl);
        for (int b = 0; b < total; b += 32) {
            int col;
            float gate, h = 0.0f;
            const sp_u32 *at = sp_rsplit_fetch(rowp, pool, src, incl, total, g, T, b + lane, col, gate);
            const int cnt = min(32, total - b);
            for (int k = 0; k < cnt; k += SP_RG) {
                sp_u32x4 u[SP_RG][SP_RNCH];
                sp_rmma_load<VEC>(Wu, col, k, cnt, ${dl}, lane, u);
                float c[SP_RG][SP_RDC][4];
                #pragma unroll
                for (int j = 0; j < SP_RG; ++j)
                    #pragma unroll
                    for (int r = 0; r < SP_RDC; ++r)
                        #pragma unroll
                        for (int e = 0; e < 4; ++e) c[j][r][e] = 0.0f;
                #pragma unroll
                for (int q = 0; q < SP_RNCH; ++q) {
                    const sp_u32x4 xq = sp_xs16(xs + q * 256 + lane * 8);
                    #pragma unroll
                    for (int j = 0; j < SP_RG; ++j) {
                        sp_rmma(c[j][(2 * q) % SP_RDC], xq.x, xq.y, xq.z, xq.w, u[j][q].x, u[j][q].y);
                        sp_rmma(c[j][(2 * q + 1) % SP_RDC], xq.x, xq.y, xq.z, xq.w, u[j][q].z, u[j][q].w);
                    }
                }
                #pragma unroll
                for (int j = 0; j < SP_RG; ++j) {
                    float s = 0.0f;
                    #pragma unroll
                    for (int r = 0; r < SP_RDC; r += 2)
                        s += (hi ? c[j][r][1] : c[j][r][0]) + (hi ? c[j][r + 1][3] : c[j][r + 1][2]);
                    const float dot = sp_warp_sum(diag ? s : 0.0f);
                    if (lane == k + j) h = gate * dot;
                }
            }
            if (at) *(sp_u32 *)at = ((sp_u32)sp_f32_to_bf16(h) << 16) | (*at & 0xffffu);
        }
    }
}

/* passes > 1, the output pass over one column slice (Wd and y from its first column, B columns: at most
 * 256 SP_RNCS): y = sum over the row's entries of h Wd[col], h as the dot-product pass stored it (a lost tile's:
 * the gate and the dot product again here, from X, Wg and Wu over the whole row). xs: the warp's shared memory
 * for the gather. */
template <bool VEC>
__device__ __forceinline__ void sp_twell_raxpy(const sp_bf16 *__restrict__ x, const sp_bf16 *__restrict__ Wg,
                                               const sp_bf16 *__restrict__ Wu, const sp_bf16 *__restrict__ Wd,
                                               sp_bf16 *__restrict__ y, const sp_u32 *rowp, const sp_u32 *pool,
                                               int ntiles, int W, int T, int F, int D, int B, int lane, sp_bf16 *xs${lo_param})
{
    const sp_u32x4 zero = {0u, 0u, 0u, 0u};
    const bool diag = (lane & 3) == (lane >> 3), hi = (lane >> 2) & 1;
    float acc[SP_RNCS][8];
    #pragma unroll
    for (int q = 0; q < SP_RNCS; ++q)
        #pragma unroll
        for (int e = 0; e < 8; ++e) acc[q][e] = 0.0f;
    for (int g = 0; g * 32 < ntiles; ++g) {
        sp_u32 src;
        int incl;
        const int total = sp_twell_group(rowp, pool, ntiles, W, g, lane, T, F, true, src, incl);
        for (int b = 0; b < total; b += 32) {
            int col;
            float h;
            const bool lost = !sp_rsplit_fetch(rowp, pool, src, incl, total, g, T, b + lane, col, h) && b + lane < total;
            const int cnt = min(32, total - b);
            if (__any_sync(SP_FULL, lost)) {   /* a lost tile's entries: gate and dot product from X, Wg and Wu */
                for (int k = 0; k < cnt; ++k) {
                    if (!__shfl_sync(SP_FULL, (int)lost, k)) continue;
                    const size_t ck = (size_t)__shfl_sync(SP_FULL, col, k) * D;
                    float sg = 0.0f, su = 0.0f;
                    for (int d = lane * 8; d < D; d += 256) {
                        const sp_u32x4 xv = sp_rld8<VEC>(x + d);
                        sg = sp_dot8(xv, sp_rld8<VEC>(Wg + ck + d), sg);
                        su = sp_dot8(xv, sp_rld8<VEC>(Wu + ck + d), su);
                    }
                    sg = sp_warp_sum(sg);
                    su = sp_warp_sum(su);
                    if (lane == k) h = sp_bf16_to_f32(sp_f32_to_bf16(fmaxf(sg, 0.0f))) * su;
                }
            }
            for (int k = 0; k < cnt; k += SP_RGS) {
                sp_u32x4 w[SP_RGS][SP_RNCS];
                #pragma unroll
                for (int j = 0; j < SP_RGS; ++j) {
                    const sp_bf16 *p = Wd + (size_t)__shfl_sync(SP_FULL, col, min(k + j, cnt - 1)) * D + lane * 8;
                    #pragma unroll
                    for (int q = 0; q < SP_RNCS; ++q) w[j][q] = q * 256 + lane * 8 < ${bl} ? sp_rvld8<VEC>(p + q * 256) : zero;
                }
                #pragma unroll
                for (int j = 0; j < SP_RGS; ++j) {
                    const float hj = k + j < cnt ? __shfl_sync(SP_FULL, h, min(k + j, cnt - 1)) : 0.0f;
                    const sp_u32 hb = diag ? (sp_u32)sp_f32_to_bf16(hj) << (hi ? 16 : 0) : 0u;
                    #pragma unroll
                    for (int q = 0; q < SP_RNCS; ++q) {
                        sp_rmma(acc[q], hb, 0u, 0u, hb, w[j][q].x, w[j][q].y);
                        sp_rmma(acc[q] + 4, hb, 0u, 0u, hb, w[j][q].z, w[j][q].w);
                    }
                }
            }
        }
    }
    __syncwarp();
    #pragma unroll
    for (int q = 0; q < SP_RNCS; ++q)
        #pragma unroll
        for (int e = 0; e < 8; ++e) xs[q * 256 + sp_rmma_col(lane, e)] = sp_f32_to_bf16(acc[q][e]);
    __syncwarp();
    #pragma unroll
    for (int q = 0; q < SP_RNCS; ++q) {
        const int d = q * 256 + lane * 8;
        if (d >= B) continue;
        const sp_u32x4 o = *(const sp_u32x4 *)(xs + d);
        if (VEC) {
            *(sp_u32x4 *)(y + d) = o;
        } else {
            const sp_u32 v[4] = {o.x, o.y, o.z, o.w};
            #pragma unroll
            for (int e = 0; e < 4; ++e) { y[d + 2 * e] = (sp_bf16)(v[e] & 0xffffu); y[d + 2 * e + 1] = (sp_bf16)(v[e] >> 16); }
        }
    }${lo_store}
}
]]

function M.device(c, p, ylo)
  local nch, mma = M.chunks(p), c.consumer == "regmma"
  local split = c.passes > 1
  local lo = ylo and text.fill((mma or split) and MMA_LO or REG_LO,
                               {n = split and "SP_RNCS" or "SP_RNCH", lim = split and "B" or "D"}) or ""
  return text.fill(DEVICE .. (split and SPLIT_DEVICE or FUSED), {nch = nch, dots = c.dots,
      lo_param = ylo and ", sp_bf16 *__restrict__ ylo" or "", lo_store = lo,
      ncs = slice_chunks(c, p), gs = slice_dots(c, p), dl = full(c, p) and "256 * SP_RNCH" or "D",
      bl = full_slices(c, p) and "256 * SP_RNCS" or "B", mdefs = mma and text.fill(MMA_DEFS, {split = M.SPLIT}) or "", mdevice = mma and (text.fill(MMA_DEVICE, {
        pfcall = c.pf > 0 and PF_CALL or "", pfdev = c.pf > 0 and text.fill(PF_DEVICE, {pf = c.pf}) or ""})) or "",
      step = mma and text.fill(MMA_STEP, {dl = full(c, p) and "256 * SP_RNCH" or "D"}) or REG_STEP,
      gather = mma and MMA_GATHER or "", pack = mma and MMA_PACK or REG_PACK,
      xval = mma and "sp_rperm(d < D ? sp_rld8<VEC>(x + d) : zero)" or "d < D ? sp_rld8<VEC>(x + d) : zero",
      mload = mma and MMA_LOAD or "",
      gval = mma and "sp_rperm(sp_rld8<VEC>(Wg + (size_t)ck * D + d))" or "sp_rld8<VEC>(Wg + (size_t)ck * D + d)"})
end

-- The kernel: c.warps token rows per CTA, no CTA-wide synchronisation (each warp's rows and shared memory
-- are its own). Rows the producer routed to the dense path are left to it.
-- passes > 1: the dot-product pass (dot_name) and the output pass (name), the CTA's warps on consecutive rows of
-- one range or slice, the grid range- or slice-major (M.launch). The dot-product pass leaves a D it was not
-- compiled for to the output pass, which writes NaN rows for it.
local SPLIT_KERNELS = [[
extern "C" __global__ void __launch_bounds__(${threads})
${dsig}
    extern __shared__ __align__(16) unsigned char sp_smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int rows = gridDim.x / ${passes}, range = blockIdx.x / rows, row = (blockIdx.x % rows) * ${warps} + warp;
    if (row >= M || (row_info[row] & 0x80000000u) || (${dbad})) return;
    const int ntiles = (F + T - 1) / T, W = S + 1;
    const int t0 = range * ntiles / ${passes}, t1 = (range + 1) * ntiles / ${passes};
    sp_u32 *rowp = packed + ((size_t)row * ntiles + t0) * W;
    const sp_bf16 *Wr = Wu + (size_t)t0 * T * D;
    sp_bf16 *xs = (sp_bf16 *)sp_smem + (size_t)warp * 256 * SP_RNCH;
    if (((((unsigned long long)X) | ((unsigned long long)Wu)) & 15ull) == 0)
        sp_twell_rdots<true>(X + (size_t)row * D, Wr, rowp, pool, t1 - t0, W, T, F - t0 * T, D, lane, xs);
    else
        sp_twell_rdots<false>(X + (size_t)row * D, Wr, rowp, pool, t1 - t0, W, T, F - t0 * T, D, lane, xs);
}

extern "C" __global__ void __launch_bounds__(${threads})
${sig}
    extern __shared__ __align__(16) unsigned char sp_smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int rows = gridDim.x / ${passes}, slice = blockIdx.x / rows, row = (blockIdx.x % rows) * ${warps} + warp;
    if (row >= M || (row_info[row] & 0x80000000u)) return;
    sp_bf16 *out = Y + (size_t)row * D;
    if (${dbad}) {   /* not what this kernel was compiled for: loud, never out of bounds */
        for (int d = lane; d < D && slice == 0; d += 32) out[d] = (sp_bf16)0x7fc0u;
        return;
    }
    const int s0 = slice * 256 * SP_RNCS;
    if (s0 >= D) return;
    const int ntiles = (F + T - 1) / T, W = S + 1;
    const sp_u32 *rowp = packed + (size_t)row * ntiles * W;
    sp_bf16 *xs = (sp_bf16 *)sp_smem + (size_t)warp * 256 * SP_RNCS;
    const bool vec = ((((unsigned long long)X) | ((unsigned long long)Wg) | ((unsigned long long)Wu)
                       | ((unsigned long long)Wd) | ((unsigned long long)Y)${lo_vec}) & 15ull) == 0;
    const int B = min(D - s0, 256 * SP_RNCS);
    if (vec) sp_twell_raxpy<true>(X + (size_t)row * D, Wg, Wu, Wd + s0, out + s0, rowp, pool, ntiles, W, T, F, D, B, lane, xs${lo_arg});
    else sp_twell_raxpy<false>(X + (size_t)row * D, Wg, Wu, Wd + s0, out + s0, rowp, pool, ntiles, W, T, F, D, B, lane, xs${lo_arg});
}
]]

function M.kernel(name, c, p, ARGS, consts, dot_name)
  -- twell-ffn's hot slice: the rounding remainders' row (consts.ylo, lib/twell_row.lua), in the 16-byte test too
  local ylo = consts.ylo
  local lo_vec = ylo and (" | ((unsigned long long)" .. ylo .. ")") or ""
  if c.passes > 1 then
    return text.fill(SPLIT_KERNELS, {threads = 32 * c.warps, warps = c.warps, passes = c.passes,
      sig = row.signature(name, ARGS, consts), dsig = row.signature(dot_name, ARGS, consts, true),
      dbad = full(c, p) and "D != 256 * SP_RNCH" or "D > 256 * SP_RNCH || D % 8 != 0",
      lo_vec = lo_vec, lo_arg = ylo and (", " .. ylo .. " + (size_t)row * D + s0") or ""})
  end
  return text.fill([[
extern "C" __global__ void __launch_bounds__(${threads})
${sig}
    extern __shared__ __align__(16) unsigned char sp_smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int row = blockIdx.x * ${warps} + warp;
    if (row >= M || (row_info[row] & 0x80000000u)) return;
    sp_bf16 *out = Y + (size_t)row * D;
    if (${dbad}) {   /* not what this kernel was compiled for: loud, never out of bounds */
        for (int d = lane; d < D; d += 32) out[d] = (sp_bf16)0x7fc0u;
        return;
    }
    const int ntiles = (F + T - 1) / T, W = S + 1;
    const sp_u32 *rowp = packed + (size_t)row * ntiles * W;
    sp_bf16 *xs = (sp_bf16 *)sp_smem + (size_t)warp * 256 * SP_RNCH;
    const bool vec = ((((unsigned long long)X) | ((unsigned long long)Wg) | ((unsigned long long)Wu)
                       | ((unsigned long long)Wd) | ((unsigned long long)Y)${lo_vec}) & 15ull) == 0;
    if (vec) sp_twell_rowreg<true>(X + (size_t)row * D, Wg, Wu, Wd, out, rowp, pool, ntiles, W, T, F, D, lane, xs${lo_arg});
    else sp_twell_rowreg<false>(X + (size_t)row * D, Wg, Wu, Wd, out, rowp, pool, ntiles, W, T, F, D, lane, xs${lo_arg});
}
]], {threads = 32 * c.warps, warps = c.warps, sig = row.signature(name, ARGS, consts),
      dbad = full(c, p) and "D != 256 * SP_RNCH" or "D > 256 * SP_RNCH || D % 8 != 0",
      lo_vec = lo_vec, lo_arg = ylo and (", " .. ylo .. " + (size_t)row * D") or ""})
end

return M
