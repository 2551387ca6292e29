-- TwELL consumers, one warp per token row, entries decoded in batches (runtime/sp_twell.h).
--
-- Decoding: the warp reads 32 tile headers at once (lane t: tile t of the group), sums their
-- counts with a warp scan, and then hands out the group's entries 32 at a time, lane i holding
-- the i-th (its column and value); overflow tiles are read from the pool the same way. A row
-- thus costs one round of header loads per 32 tiles instead of a dependent load chain per tile.
--
-- Per batch of up to 32 entries:
--   gated: lane k's value becomes g_k * dot(x_row, Wu[col_k]) (x_row staged in shared memory,
--          `dots` rows of Wu in flight, a butterfly reduction per entry);
--   down:  the output row, kept as fp32 in shared memory, gets sum_k h_k * Wd[col_k], swept in
--          chunks of 256*unroll columns held in registers, the batch's entries broadcast by
--          shuffles and their Wd rows gathered with 16-byte loads.
-- Any D: a D % 8 != 0 or unaligned pointer takes element-wise loops (correct, slower).
local text = require("lib.text")
local args = require("lib.args")

local M = {}

-- Shared memory of a CTA: each warp's fp32 output row, plus each token row's bf16 x if gated.
function M.smem(c, D, gated)
  local dp = (D + 7) // 8 * 8
  return c.warps * dp * 4 + (gated and (c.warps // c.split) * dp * 2 or 0)
end

-- The parameters the row consumers share.
M.params = {
  {name = "warps", values = {2, 4, 8, 16}, default = 8, doc = "warps per CTA"},
  {name = "split", values = {1, 2, 4, 8}, default = 4,
   doc = "warps per token row, each taking every split-th entry (shorter chains on dense rows)"},
  {name = "unroll", values = {1, 2, 4}, default = 4,
   doc = "16-byte Wd loads in flight per lane and entry: output swept in chunks of 256*unroll columns"},
  {name = "ldg", values = {"nc", "plain"}, default = "nc",
   doc = "weight loads through the read-only path (ld.global.nc) or plain loads"},
}
-- The gated consumers' own parameters (after M.params).
M.gated_params = {
  {name = "consumer", values = {"row", "tile"}, default = "row",
   doc = "gated: one warp per token row on CUDA cores (row), or 16-token tiles whose union of active neurons"
     .. " runs on tensor cores (tile)"},
  {name = "dots", values = {4, 8}, default = 4,
   doc = "gated: entries whose Wu rows are read together (more bytes in flight, more registers)"},
  {name = "dunroll", values = {1, 2}, default = 1,
   doc = "gated: steps of the dot products' sweep over D unrolled (loads of the next step issued early)"},
}

M.constraints = {
  {why = "split divides the CTA's warps", check = function(c) return c.split <= c.warps and c.warps % c.split == 0 end},
}
-- The row consumers' shared memory fits the GPU (skip(c): configurations that do not use them).
function M.smem_constraint(why, gated, skip)
  return {why = why, check = function(c, gpu, p)
    return p == nil or skip(c) or M.smem(c, p.D, gated) <= gpu.smem_per_block end}
end
-- The packed data's shape (problem dimensions T and S) fits the format's fields.
M.shape_constraint = {why = "tile width T fits the 16-bit column field", check = function(c, gpu, p)
  return p == nil or (p.T >= 2 and p.T <= 65536 and p.S >= 1 and p.S <= p.T) end}

function M.launch(c, p, gated)
  local rows = c.warps // c.split
  return {grid = {(p.M + rows - 1) // rows, 1, 1}, block = {32 * c.warps, 1, 1}, smem = M.smem(c, p.D, gated)}
end

-- One 16-byte weight load into dst's four words (ldg: the parameter's value).
function M.load16(ldg, dst, src)
  local op = ldg == "nc" and "ld.global.nc.v4.u32" or "ld.global.v4.u32"
  return ('asm volatile("' .. op .. ' {%0, %1, %2, %3}, [%4];" : "=r"(' .. dst .. '.x), "=r"(' .. dst ..
          '.y), "=r"(' .. dst .. '.z), "=r"(' .. dst .. '.w) : "l"(' .. src .. '));')
end

-- The device functions (emitted once per kernel source).
function M.device(c)
  return text.fill([[
/* 16-byte aligned, so that a load of x through it is one 128-bit shared-memory access */
struct __align__(16) sp_u32x4 { sp_u32 x, y, z, w; };
struct __align__(16) sp_f32x4 { float x, y, z, w; };
#define SP_FULL 0xffffffffu

__device__ __forceinline__ sp_u32x4 sp_ld16(const sp_bf16 *src)
{
    sp_u32x4 q;
    ${load}
    return q;
}
__device__ __forceinline__ void sp_fma8(float *a, float v, sp_u32x4 q)
{
    a[0] = fmaf(v, __uint_as_float(q.x << 16), a[0]); a[1] = fmaf(v, __uint_as_float(q.x & 0xffff0000u), a[1]);
    a[2] = fmaf(v, __uint_as_float(q.y << 16), a[2]); a[3] = fmaf(v, __uint_as_float(q.y & 0xffff0000u), a[3]);
    a[4] = fmaf(v, __uint_as_float(q.z << 16), a[4]); a[5] = fmaf(v, __uint_as_float(q.z & 0xffff0000u), a[5]);
    a[6] = fmaf(v, __uint_as_float(q.w << 16), a[6]); a[7] = fmaf(v, __uint_as_float(q.w & 0xffff0000u), a[7]);
}
__device__ __forceinline__ float sp_dot8(sp_u32x4 x, sp_u32x4 w, float p)
{
    p = fmaf(__uint_as_float(x.x << 16), __uint_as_float(w.x << 16), p);
    p = fmaf(__uint_as_float(x.x & 0xffff0000u), __uint_as_float(w.x & 0xffff0000u), p);
    p = fmaf(__uint_as_float(x.y << 16), __uint_as_float(w.y << 16), p);
    p = fmaf(__uint_as_float(x.y & 0xffff0000u), __uint_as_float(w.y & 0xffff0000u), p);
    p = fmaf(__uint_as_float(x.z << 16), __uint_as_float(w.z << 16), p);
    p = fmaf(__uint_as_float(x.z & 0xffff0000u), __uint_as_float(w.z & 0xffff0000u), p);
    p = fmaf(__uint_as_float(x.w << 16), __uint_as_float(w.w << 16), p);
    p = fmaf(__uint_as_float(x.w & 0xffff0000u), __uint_as_float(w.w & 0xffff0000u), p);
    return p;
}
__device__ __forceinline__ float sp_warp_sum(float v)
{
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(SP_FULL, v, o);
    return v;
}

/* Tiles g*32 .. g*32+31 of a row: lane t's tile entries start at src (an offset into the row,
 * or 0x80000000 | an offset into the pool, or 0xC0000000 for a lost tile: when `every` its
 * entries are all its columns, with the gate to recompute, else none); incl is the inclusive scan
 * of the counts. */
__device__ __forceinline__ int sp_twell_group(const sp_u32 *rowp, const sp_u32 *pool, int ntiles, int W, int g,
                                              int lane, int T, int F, bool every, sp_u32 &src, int &incl)
{
    const int tile = g * 32 + lane;
    int n = 0;
    src = 0;
    if (tile < ntiles) {
        const sp_u32 w0 = rowp[(size_t)tile * W];
        if ((w0 & 0xC0000000u) == 0xC0000000u) {
            n = every ? min(T, F - tile * T) : 0;
            src = 0xC0000000u;
        } else if (w0 & 0x80000000u) {
            const sp_u32 off = w0 & 0x3fffffffu;
            n = (int)pool[off];
            src = 0x80000000u | (off + 1u);
        } else {
            n = (int)w0;
            src = (sp_u32)(tile * W + 1);
        }
    }
    incl = n;
    #pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(SP_FULL, incl, o);
        if (lane >= o) incl += v;
    }
    return __shfl_sync(SP_FULL, incl, 31);
}

/* Entry f of the group (all lanes take part; lanes with f >= total get col 0, value 0; an entry of
 * a lost tile gets the value -1: its gate is to be recomputed). */
__device__ __forceinline__ void sp_twell_fetch(const sp_u32 *rowp, const sp_u32 *pool, sp_u32 src, int incl,
                                               int total, int g, int T, int f, int &col, float &val)
{
    int lo = 0;
    #pragma unroll
    for (int step = 16; step > 0; step >>= 1)
        if (__shfl_sync(SP_FULL, incl, lo + step - 1) <= f) lo += step;
    const int owner = lo & 31;
    const sp_u32 s = __shfl_sync(SP_FULL, src, owner);
    const int prev = __shfl_sync(SP_FULL, incl, (owner + 31) & 31);
    col = 0;
    val = 0.0f;
    if (f < total) {
        const int k = f - (owner ? prev : 0);
        if (s == 0xC0000000u) {
            col = (g * 32 + owner) * T + k;
            val = -1.0f;
        } else {
            const sp_u32 e = (s & 0x80000000u) ? pool[(s & 0x3fffffffu) + (sp_u32)k] : rowp[s + (sp_u32)k];
            col = (g * 32 + owner) * T + (int)(e & 0xffffu);
            val = __uint_as_float(e & 0xffff0000u);
        }
    }
}

/* Lane k of the batch (k < cnt) gets dot(xs, Wu[col_k]); the others get 0. */
__device__ __forceinline__ float sp_twell_dots(const sp_bf16 *xs, const sp_bf16 *__restrict__ Wu, int D, bool vec,
                                               int col, int cnt, int lane)
{
    float mine = 0.0f;
    for (int k = 0; k < cnt; k += ${dots}) {
        int c[${dots}];
        #pragma unroll
        for (int j = 0; j < ${dots}; ++j) c[j] = __shfl_sync(SP_FULL, col, min(k + j, cnt - 1));
        float p[${dots}];
        #pragma unroll
        for (int j = 0; j < ${dots}; ++j) p[j] = 0.0f;
        if (vec) {
            #pragma unroll ${dunroll}
            for (int d = lane * 8; d < D; d += 256) {
                const sp_u32x4 x = *(const sp_u32x4 *)(xs + d);
                sp_u32x4 w[${dots}];
                #pragma unroll
                for (int j = 0; j < ${dots}; ++j) w[j] = sp_ld16(Wu + (size_t)c[j] * D + d);
                #pragma unroll
                for (int j = 0; j < ${dots}; ++j) p[j] = sp_dot8(x, w[j], p[j]);
            }
        } else {
            for (int d = lane; d < D; d += 32) {
                const float x = sp_bf16_to_f32(xs[d]);
                #pragma unroll
                for (int j = 0; j < ${dots}; ++j) p[j] = fmaf(x, sp_bf16_to_f32(Wu[(size_t)c[j] * D + d]), p[j]);
            }
        }
        #pragma unroll
        for (int j = 0; j < ${dots}; ++j) {
            const float s = sp_warp_sum(p[j]);
            if (lane == k + j) mine = s;
        }
    }
    return mine;
}

/* acc (the fp32 output row in shared memory) += sum over the batch's cnt entries of h_k * Wd[col_k]. */
__device__ __forceinline__ void sp_twell_down(float *acc, const sp_bf16 *__restrict__ Wd, int D, bool vec, int col,
                                              float h, int cnt, int lane)
{
    if (!vec) {
        for (int k = 0; k < cnt; ++k) {
            const int ck = __shfl_sync(SP_FULL, col, k);
            const float hk = __shfl_sync(SP_FULL, h, k);
            for (int d = lane; d < D; d += 32) acc[d] = fmaf(hk, sp_bf16_to_f32(Wd[(size_t)ck * D + d]), acc[d]);
        }
        return;
    }
    for (int dc = 0; dc < D; dc += 256 * ${unroll}) {
        float a[${unroll}][8];
        #pragma unroll
        for (int u = 0; u < ${unroll}; ++u) {
            const int d = dc + u * 256 + lane * 8;
            /* 16-byte shared accesses: a warp's 512 contiguous bytes without bank conflicts */
            const sp_f32x4 zero = {0.f, 0.f, 0.f, 0.f};
            const sp_f32x4 lo = d < D ? *(const sp_f32x4 *)(acc + d) : zero;
            const sp_f32x4 hi = d < D ? *(const sp_f32x4 *)(acc + d + 4) : zero;
            a[u][0] = lo.x; a[u][1] = lo.y; a[u][2] = lo.z; a[u][3] = lo.w;
            a[u][4] = hi.x; a[u][5] = hi.y; a[u][6] = hi.z; a[u][7] = hi.w;
        }
        int k = 0;
        for (; k + 1 < cnt; k += 2) {
            const int c0 = __shfl_sync(SP_FULL, col, k), c1 = __shfl_sync(SP_FULL, col, k + 1);
            const float h0 = __shfl_sync(SP_FULL, h, k), h1 = __shfl_sync(SP_FULL, h, k + 1);
            sp_u32x4 q0[${unroll}], q1[${unroll}];
            #pragma unroll
            for (int u = 0; u < ${unroll}; ++u) {
                const int d = min(dc + u * 256 + lane * 8, D - 8);
                q0[u] = sp_ld16(Wd + (size_t)c0 * D + d);
                q1[u] = sp_ld16(Wd + (size_t)c1 * D + d);
            }
            #pragma unroll
            for (int u = 0; u < ${unroll}; ++u) { sp_fma8(a[u], h0, q0[u]); sp_fma8(a[u], h1, q1[u]); }
        }
        if (k < cnt) {
            const int c0 = __shfl_sync(SP_FULL, col, k);
            const float h0 = __shfl_sync(SP_FULL, h, k);
            #pragma unroll
            for (int u = 0; u < ${unroll}; ++u) {
                const int d = min(dc + u * 256 + lane * 8, D - 8);
                sp_fma8(a[u], h0, sp_ld16(Wd + (size_t)c0 * D + d));
            }
        }
        #pragma unroll
        for (int u = 0; u < ${unroll}; ++u) {
            const int d = dc + u * 256 + lane * 8;
            if (d < D) {
                const sp_f32x4 lo = {a[u][0], a[u][1], a[u][2], a[u][3]}, hi = {a[u][4], a[u][5], a[u][6], a[u][7]};
                *(sp_f32x4 *)(acc + d) = lo;
                *(sp_f32x4 *)(acc + d + 4) = hi;
            }
        }
    }
}
]], {load = M.load16(c.ldg, "q", "src"), unroll = c.unroll, dots = c.dots or 4, dunroll = c.dunroll or 1})
end

-- A consumer kernel's signature (the op's declared arguments, lib/args.lua) and the opening
-- brace; consts = {T = ..., S = ...} makes the tile width and slots constants (twell-ffn, whose
-- producer fixes them and writes the packed gate the consumer only reads); consts.prologue (optional)
-- follows them (twell-ffn's hot/cold split: the names of the cold part). writes: packed and pool stay
-- writable (the register consumer's dot-product pass stores each entry's product where its gate was).
function M.signature(name, ARGS, consts, writes, extra)
  local head = name .. "(" .. args.params(ARGS, extra, consts and not writes and {packed = true, pool = true} or nil)
    .. ")\n{"
  if consts then
    head = head .. "\n    const int T = " .. consts.T .. ", S = " .. consts.S
      .. "; /* the producer's tile width and slots */" .. (consts.prologue or "")
  end
  return head
end

-- twell-ffn's hot/cold split (consts.ylo names the pointer): a cold kernel writes its output rounded to bf16 to Y
-- and what the rounding left to Ylo, from which the hot slice's GEMM starts (twell-ffn.lua). sp_y_rest: v less its
-- bf16 rounding (0 where v is not finite: the output then carries it alone).
M.ylo_device = cuda_file("twell_ylo")
-- y[e] (C expressions) set to the fp32 value v; with ylo (the remainder's pointer) through sp_y_put, the
-- remainder to ylo[lo_e].
function M.y_put(ylo, y, e, lo_e, v)
  if ylo then return string.format("sp_y_put(%s + %s, %s + %s, %s);", y, e, ylo, lo_e, v) end
  return string.format("%s[%s] = sp_f32_to_bf16(%s);", y, e, v)
end

-- The kernel: `split` warps per token row (c.warps / c.split rows per CTA). Each warp of a row
-- takes every split-th entry of each batch into its own fp32 output row; the row's warps then add
-- their rows together. split > 1 shortens the longest row's chain of gathers (a dense row has
-- thousands of entries) at the price of shared memory and a reduction.
-- Lost tiles (runtime/sp_twell.h): with ffn (twell-ffn, which has X and Wg) their gates are
-- recomputed, every column of the tile an entry; without, the row's output is NaN (loud: the
-- caller was told by the pool counter and must rerun with a larger pool). With ffn, rows that the
-- producer routed to the dense path (row_info, lib/twell_dense.lua) are left to it.
function M.kernel(name, c, gated, ARGS, consts, ffn)
  local threads = 32 * c.warps
  local sig = M.signature(name, ARGS, consts)
  return text.fill([[
extern "C" __global__ void __launch_bounds__(${threads})
${sig}
    extern __shared__ __align__(16) unsigned char sp_smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, part = warp % ${split};
    const int row = blockIdx.x * ${rows} + warp / ${split};
    const int ntiles = (F + T - 1) / T, W = S + 1, Dp = (D + 7) / 8 * 8;
    const bool vec = (D % 8 == 0) && ((((unsigned long long)Wd) | ((unsigned long long)Y)${xalign}) & 15ull) == 0;
    float *acc = (float *)sp_smem + (size_t)warp * Dp;
    for (int d = lane; d < D; d += 32) acc[d] = 0.0f;
${xstage}
    __syncthreads();
    const bool mine = row < M${skip};
    bool lost = false;
    if (mine) {
        const sp_u32 *rowp = packed + (size_t)row * ntiles * W;
        for (int g = 0; g * 32 < ntiles; ++g) {
            sp_u32 src;
            int incl;
            const int total = sp_twell_group(rowp, pool, ntiles, W, g, lane, T, F, ${every}, src, incl);
            lost |= __any_sync(SP_FULL, src == 0xC0000000u);
            for (int b = 0; b < total; b += 32) {
                int col;
                float h;
                sp_twell_fetch(rowp, pool, src, incl, total, g, T, b + lane, col, h);
                /* this warp's share of the batch: entries part, part + split, ... to lanes 0, 1, ... */
                const int all = min(32, total - b), pick = part + lane * ${split};
                const int cnt = all > part ? (all - part + ${split} - 1) / ${split} : 0;
                col = __shfl_sync(SP_FULL, col, pick & 31);
                h = __shfl_sync(SP_FULL, h, pick & 31);
                if (pick >= all) { col = 0; h = 0.0f; }
                if (cnt == 0) continue;
${gate}
                sp_twell_down(acc, Wd, D, vec, col, h, cnt, lane);
            }
        }
    }
    __syncthreads();
    if (mine) {
        /* the row's warps add their partial rows */
        const float *first = (const float *)sp_smem + (size_t)(warp - part) * Dp;
        sp_bf16 *out = Y + (size_t)row * D;
        for (int d = part * 32 + lane; d < D; d += 32 * ${split}) {
            float v = 0.0f;
            #pragma unroll
            for (int q = 0; q < ${split}; ++q) v += first[(size_t)q * Dp + d];
            ${put}
        }
    }
}
]], {threads = threads, split = c.split, rows = c.warps // c.split,
     sig = sig,
     xalign = gated and (" | ((unsigned long long)X) | ((unsigned long long)Wu)"
                         .. (ffn and " | ((unsigned long long)Wg)" or "")) or "",
     skip = ffn and " && !(row_info[row] & 0x80000000u)" or "",
     every = ffn and "true" or "false",
     put = ffn and M.y_put(consts.ylo, "out", "d", "(size_t)row * D + d", "v") or "out[d] = lost ? (sp_bf16)0x7fc0u : sp_f32_to_bf16(v);",
     xstage = gated and text.fill([[
    /* the row's x in shared memory (after every warp's fp32 row), staged by the row's warps */
    sp_bf16 *xs = (sp_bf16 *)((float *)sp_smem + (size_t)${warps} * Dp) + (size_t)(warp / ${split}) * Dp;
    /* 16-byte loads when vec, unrolled: a row's loads in flight together, not a chain of round trips */
    if (row < M && vec) {
        #pragma unroll 4
        for (int d = (part * 32 + lane) * 8; d < D; d += 256 * ${split})
            *(sp_u32x4 *)(xs + d) = *(const sp_u32x4 *)(X + (size_t)row * D + d);
    } else if (row < M) {
        for (int d = part * 32 + lane; d < D; d += 32 * ${split}) xs[d] = X[(size_t)row * D + d];
    }]],
       {warps = c.warps, split = c.split}) or "",
     gate = (ffn and [[
                if (__any_sync(SP_FULL, h < 0.0f)) {   /* a lost tile's entries: the gate again, from X and Wg */
                    const float gr = sp_twell_dots(xs, Wg, D, vec, col, cnt, lane);
                    if (h < 0.0f) h = sp_bf16_to_f32(sp_f32_to_bf16(fmaxf(gr, 0.0f)));
                }
]] or "") .. (gated and "                h *= sp_twell_dots(xs, Wu, D, vec, col, cnt, lane);" or "")})
end

return M
