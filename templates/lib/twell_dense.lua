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
--   dense_h   work items (16 routed rows, a range of neurons): the rows' gate entries in the range
--             (from the packed tiles; a lost tile's gate is recomputed) give the union of active
--             neurons, 16 at a time: up = X Wu^T (and X Wg^T for lost tiles) on mma.sync, the warps
--             splitting D; h = gate (.) up (zeros off the union) goes to dense_h;
--   dense_y   work items (16 routed rows, a 128-column slice of Y, a part of the neurons): Y += h Wd
--             on mma.sync (h as two bf16 terms; no test for zero blocks, which would serialize the
--             loads behind it), added to dense_acc with vector reductions (one add per part: few);
--   finalize  writes the routed rows of Y from dense_acc.
-- Ranges and parts are sized at run time from the number of routed rows, so that a few routed rows
-- still spread over the whole GPU in short chains. (One kernel doing both steps per neuron range
-- needed one reduction per range into every output element: at 0.5 % dense tokens the reductions
-- cost more than the rest of the path.)
local text = require("lib.text")
local M = {}

M.params = {
  {name = "route", values = {512, 256, 1024, 2048, 0, -1}, default = 512,
   doc = "a token with this many active neurons goes to the dense tensor-core path (0: only tokens that lost"
     .. " a tile to a full pool; -1: no dense path)"},
}

local WARPS = 8
local RANGE_MAX = 1024   -- neurons of a dense_h work item, at most

-- dense_h's shared memory: X rows (16 x Dp bf16, Dp = D rounded up to 128), the warps' partial sums
-- of up and gate (2 x 1 KB per warp) and a few words, then per neuron of a range: gate (16 bf16),
-- union list (int), mask bit.
local function layout(D)
  local dp = (D + 127) // 128 * 128
  return {fixed = 32 * dp + 2 * WARPS * 1024 + 256, per = 16 * 2 + 4}
end

-- Neurons a work item may take for this D on this GPU (a multiple of 32; 0: not even 32 fit).
function M.range(D, gpu)
  local l = layout(D)
  local n = (gpu.smem_per_block - l.fixed - 132) // l.per
  return math.max(math.min(n, RANGE_MAX) // 32 * 32, 0)
end

function M.smem(D, gpu)
  local n = M.range(D, gpu)
  return layout(D).fixed + n * layout(D).per + (n // 32 + 1) * 4
end

M.constraints = {
  {why = "route: the dense path's X rows fit in shared memory", check = function(c, gpu, p)
    return c.route < 0 or p == nil or M.range(p.D, gpu) >= 32 end},
}

-- Launches after the consumer: dense_h and dense_y (persistent) and the finalize step.
function M.launches(c, p, gpu)
  if c.route < 0 then return {} end
  return {{grid = {gpu.sm_count, 1, 1}, block = {32 * WARPS, 1, 1}, smem = M.smem(p.D, gpu)},
          {grid = {2 * gpu.sm_count, 1, 1}, block = {32 * WARPS, 1, 1}, smem = 0},
          {grid = {2 * gpu.sm_count, 1, 1}, block = {256, 1, 1}, smem = 0}}
end

-- The zero step's launch (first kernel of the pipeline).
function M.zero_launch(gpu) return {grid = {2 * gpu.sm_count, 1, 1}, block = {256, 1, 1}, smem = 0} end

-- The zero kernel (every pipeline's first). sig(name) gives a kernel's signature and opening brace (the
-- op's argument list, T and S as constants).
function M.zero_kernel(names, sig)
  return text.fill([[
extern "C" __global__ void __launch_bounds__(256)
${zsig}
    const size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
    (void)T; (void)S;
    if (tid == 0) *pool_counter = 0ull;
    for (size_t i = tid; i < (size_t)M + 1; i += step) row_info[i] = 0u;
    const size_t acc = (size_t)max(dense_capacity, 0) * (size_t)D;
    for (size_t i = tid; i < acc; i += step) dense_acc[i] = 0.0f;
}
]], {zsig = sig(names.zero)})
end

-- The dense path's kernels: dense_h, dense_y and finalize (sig as for zero_kernel).
function M.kernels(c, p, gpu, names, sig)
  return text.fill([[
/* c += X_tile (16 rows of Xs) x [wa; wb]^T over the 128 columns of D from base (rows wa, wb: the two
 * 8-neuron n-blocks), all eight 16-byte loads issued before the multiply-adds. */
__device__ __forceinline__ void sp_dense_slice(float (&c)[2][4], const sp_bf16 *Xs, int Dp, const sp_bf16 *wa,
                                               const sp_bf16 *wb, int base, int D, bool vec, int g, int q)
{
    const sp_u32x4 zero4 = {0u, 0u, 0u, 0u};
    sp_u32x4 va[4], vb[4];
    #pragma unroll
    for (int p = 0; p < 4; ++p) {
        const int d = base + 32 * p + q * 8;
        va[p] = d < D ? sp_tile_ld8(wa + d, D - d, vec) : zero4;
        vb[p] = d < D ? sp_tile_ld8(wb + d, D - d, vec) : zero4;
    }
    #pragma unroll
    for (int p = 0; p < 4; ++p) {
        const int d = base + 32 * p + q * 8;
        const sp_u32x4 xa = *(const sp_u32x4 *)(Xs + g * Dp + d), xb = *(const sp_u32x4 *)(Xs + (g + 8) * Dp + d);
        sp_mma4(c[0], xa.x, xb.x, xa.y, xb.y, va[p].x, va[p].y);
        sp_mma4(c[1], xa.x, xb.x, xa.y, xb.y, vb[p].x, vb[p].y);
        sp_mma4(c[0], xa.z, xb.z, xa.w, xb.w, va[p].z, va[p].w);
        sp_mma4(c[1], xa.z, xb.z, xa.w, xb.w, vb[p].z, vb[p].w);
    }
}

extern "C" __global__ void __launch_bounds__(${threads}, 1)
${dsig}
    extern __shared__ __align__(16) unsigned char sp_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, q = lane & 3;
    const int routed = min((int)row_info[M], max(dense_capacity, 0));
    const int ntiles = (F + T - 1) / T, W = S + 1, Dp = (D + 127) / 128 * 128, groups = (routed + 15) / 16;
    const sp_u32 *list = row_info + M + 1;
    /* neurons per work item: about two items per CTA, a multiple of 32, at most what shared memory holds */
    const int want = (int)(((long long)groups * F + 2 * gridDim.x - 1) / (2 * gridDim.x));
    /* the most shared memory holds (M.range) */
    const int cap = min(${range_max}, ((${smem} - (32 * Dp + ${fixed_rest}) - 132) / ${per}) / 32 * 32);
    const int NC = min(cap, max(32, (want + 31) / 32 * 32)), ranges = (F + NC - 1) / NC;
    sp_bf16 *Xs = (sp_bf16 *)sp_smem;
    float *red = (float *)(Xs + (size_t)16 * Dp);
    int *rowsel = (int *)(red + 2 * ${warps} * 256);
    int *nU = rowsel + 16;
    unsigned *lostm = (unsigned *)(nU + 1);
    sp_bf16 *Gs = (sp_bf16 *)(rowsel + 64);
    int *ulist = (int *)(Gs + (size_t)NC * 16);
    unsigned *mask = (unsigned *)(ulist + NC);
    const bool vec = (D % 8 == 0) && ((((unsigned long long)X) | ((unsigned long long)Wg) | ((unsigned long long)Wu)
                                      | ((unsigned long long)Wd) | ((unsigned long long)dense_acc)) & 15ull) == 0;
    const sp_u32x4 zero4 = {0u, 0u, 0u, 0u};
    int staged = -1;
    for (int item = blockIdx.x; item < groups * ranges; item += gridDim.x) {
        const int grp = item / ranges, n0 = (item % ranges) * NC, width = min(NC, F - n0);
        const int nrows = min(16, routed - grp * 16);
        __syncthreads();   /* the previous item is done with shared memory */
        if (tid < 16) rowsel[tid] = tid < nrows ? (int)list[grp * 16 + tid] : -1;
        if (tid == 0) *lostm = 0u;
        for (int i = tid; i < NC / 32 + 1; i += blockDim.x) mask[i] = 0u;
        for (int i = tid; i < NC * 2; i += blockDim.x) ((sp_u32x4 *)Gs)[i] = zero4;
        __syncthreads();
        if (grp != staged) {   /* the group's X rows (kept while the next item has the same group) */
            #pragma unroll 4
            for (int i = tid; i < 16 * (Dp / 8); i += blockDim.x) {
                const int t = i / (Dp / 8), d = (i % (Dp / 8)) * 8, r = rowsel[t];
                *(sp_u32x4 *)(Xs + t * Dp + d) = (r >= 0 && d < D) ? sp_tile_ld8(X + (size_t)r * D + d, D - d, vec)
                                                                   : zero4;
            }
            staged = grp;
        }
        /* the rows' gate entries in the range, from the tiles it overlaps; a lost tile marks its row */
        const int j0 = n0 / T, nt = (n0 + width - 1) / T - j0 + 1;
        for (int p = warp; p < 16 * nt; p += ${warps}) {
            const int t = p & 15, j = j0 + (p >> 4), r = rowsel[t];
            if (r < 0) continue;
            const sp_u32 *src;
            const int n = sp_twell_tile_entries(packed + ((size_t)r * ntiles + j) * W, pool, src);
            if (n < 0) {
                if (lane == 0) atomicOr(lostm, 1u << t);
                continue;
            }
            for (int e = lane; e < n; e += 32) {
                const sp_u32 v = src[e];
                const int col = j * T + (int)(v & 0xffffu) - n0;
                if (col < 0 || col >= width) continue;
                Gs[col * 16 + t] = (sp_bf16)(v >> 16);
                atomicOr(&mask[col >> 5], 1u << (col & 31));
            }
        }
        __syncthreads();
        const unsigned lost = *lostm;
        /* the union in ascending order (every neuron of the range when a tile was lost) */
        if (warp == 0) sp_union_list(mask, NC / 32, lost ? width : -1, ulist, nU, lane);
        __syncthreads();
        const int U = *nU;
        /* h for the range: zeros off the union; on it, each warp 16 neurons at a time, up (and the
           gate of lost rows) over all of D */
        float *hrow = dense_h + (size_t)grp * 16 * F + n0;
        for (int i = tid; i < nrows * width; i += blockDim.x) {
            const int t = i / width, col = i % width;
            if (!((mask[col >> 5] >> (col & 31)) & 1u) && !lost) hrow[(size_t)t * F + col] = 0.0f;
        }
        /* 16 union neurons at a time: up (and the gate of lost rows) on tensor cores, each warp its
           128-column slices of D (all loads of a slice in flight at once), partial sums added
           across warps in shared memory */
        for (int u0 = 0; u0 < U; u0 += 16) {
            const int ea = u0 + g < U ? u0 + g : u0, eb = u0 + 8 + g < U ? u0 + 8 + g : u0;
            const size_t na = (size_t)(n0 + ulist[ea]) * D, nb = (size_t)(n0 + ulist[eb]) * D;
            float cu[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
            float cg[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
            for (int base = warp * 128; base < D; base += ${warps} * 128) {
                sp_dense_slice(cu, Xs, Dp, Wu + na, Wu + nb, base, D, vec, g, q);
                if (lost) sp_dense_slice(cg, Xs, Dp, Wg + na, Wg + nb, base, D, vec, g, q);
            }
            /* cu[b][c]: row g + 8*(c >> 1), union entry u0 + 8*b + 2*q + (c & 1) */
            float *rw = red + warp * 256, *rg = red + (${warps} + warp) * 256;
            #pragma unroll
            for (int b = 0; b < 2; ++b)
                #pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int i = (g + 8 * (c >> 1)) * 16 + 8 * b + 2 * q + (c & 1);
                    rw[i] = cu[b][c];
                    rg[i] = cg[b][c];
                }
            __syncthreads();
            for (int i = tid; i < 256; i += blockDim.x) {
                const int t = i >> 4, e = u0 + (i & 15);
                if (e >= U || t >= nrows) continue;
                float up = 0.0f, gs = 0.0f;
                #pragma unroll
                for (int w = 0; w < ${warps}; ++w) { up += red[w * 256 + i]; gs += red[(${warps} + w) * 256 + i]; }
                const int col = ulist[e];
                const float gv = (lost >> t) & 1u ? sp_bf16_to_f32(sp_f32_to_bf16(fmaxf(gs, 0.0f)))
                                                  : sp_bf16_to_f32(Gs[col * 16 + t]);
                hrow[(size_t)t * F + col] = gv * up;
            }
            __syncthreads();
        }
    }
}

extern "C" __global__ void __launch_bounds__(${threads})
${ysig}
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
    const int routed = min((int)row_info[M], max(dense_capacity, 0));
    const int groups = (routed + 15) / 16, slices = (D + 127) / 128, blocks = (F + 15) / 16;
    (void)T; (void)S;
    /* work items: (group, 128-column slice, part of the neurons), one per warp; parts: about two
       items per warp of the grid, each part at least 16 blocks of 16 neurons (each part adds once to
       every output element of its slice: reductions stay few) */
    const int nwarps = gridDim.x * ${warps};
    const int parts = max(1, min(blocks / 16, (2 * nwarps + groups * slices - 1) / max(1, groups * slices)));
    const int per = (blocks + parts - 1) / parts;
    const bool vec = (D % 8 == 0) && ((((unsigned long long)Wd) | ((unsigned long long)dense_acc)) & 15ull) == 0;
    const sp_u32x4 zero4 = {0u, 0u, 0u, 0u};
    for (int item = blockIdx.x * ${warps} + warp; item < groups * slices * parts; item += nwarps) {
        const int grp = item / (slices * parts), rest = item % (slices * parts);
        const int base = (rest / parts) * 128, b0 = (rest % parts) * per, b1 = min(blocks, b0 + per);
        const int nrows = min(16, routed - grp * 16);
        const float *h = dense_h + (size_t)grp * 16 * F;
        float acc[16][4];
        #pragma unroll
        for (int b = 0; b < 16; ++b)
            #pragma unroll
            for (int e = 0; e < 4; ++e) acc[b][e] = 0.0f;
        /* block blk's operands: h (rows g, g+8; neurons n + 2q, +1, +8, +9) and the Wd rows of the
           lane's four k slots at its columns; loaded one block ahead of the multiply-adds */
        float v[8];
        sp_u32x4 w[2][4];
#define SP_DENSE_Y_LOAD(blk)                                                                               \
        {                                                                                                  \
            const int n = (blk) * 16;                                                                      \
            _Pragma("unroll") for (int k = 0; k < 8; ++k) {                                                \
                const int t = g + 8 * ((k >> 1) & 1), col = n + 2 * q + (k & 1) + 8 * (k >> 2);            \
                v[k] = (blk) < b1 && t < nrows && col < F ? h[(size_t)t * F + col] : 0.0f;                 \
            }                                                                                              \
            _Pragma("unroll") for (int k = 0; k < 4; ++k) {                                                \
                const sp_bf16 *wr = Wd + (size_t)min(n + 2 * q + (k & 1) + (k >> 1) * 8, F - 1) * D;       \
                _Pragma("unroll") for (int hh = 0; hh < 2; ++hh) {                                         \
                    const int d = base + 64 * hh + 8 * g;                                                  \
                    w[hh][k] = (blk) < b1 && d < D ? sp_tile_ld8(wr + d, D - d, vec) : zero4;              \
                }                                                                                          \
            }                                                                                              \
        }
        SP_DENSE_Y_LOAD(b0)
        for (int blk = b0; blk < b1; ++blk) {
            sp_u32 a[2][4];
            #pragma unroll
            for (int k = 0; k < 4; ++k) {   /* h as two bf16 terms (hi + lo) */
                const float x0 = v[2 * k], x1 = v[2 * k + 1];
                const sp_u32 hi = sp_pack_bf16x2(x0, x1);
                a[0][k] = hi;
                a[1][k] = sp_pack_bf16x2(x0 - __uint_as_float(hi << 16), x1 - __uint_as_float(hi & 0xffff0000u));
            }
            sp_u32 bw[2][4][4];
            #pragma unroll
            for (int hh = 0; hh < 2; ++hh)
                #pragma unroll
                for (int k = 0; k < 4; ++k) {
                    bw[hh][k][0] = w[hh][k].x; bw[hh][k][1] = w[hh][k].y;
                    bw[hh][k][2] = w[hh][k].z; bw[hh][k][3] = w[hh][k].w;
                }
            SP_DENSE_Y_LOAD(blk + 1)
            #pragma unroll
            for (int hh = 0; hh < 2; ++hh)
                #pragma unroll
                for (int jj = 0; jj < 8; ++jj) {
                    const unsigned sel = (jj & 1) ? 0x7632u : 0x5410u;
                    const sp_u32 c0 = __byte_perm(bw[hh][0][jj >> 1], bw[hh][1][jj >> 1], sel);
                    const sp_u32 c1 = __byte_perm(bw[hh][2][jj >> 1], bw[hh][3][jj >> 1], sel);
                    sp_mma4(acc[hh * 8 + jj], a[0][0], a[0][1], a[0][2], a[0][3], c0, c1);
                    sp_mma4(acc[hh * 8 + jj], a[1][0], a[1][1], a[1][2], a[1][3], c0, c1);
                }
        }
#undef SP_DENSE_Y_LOAD
        /* acc[hh*8 + jj][c]: row g + 8*(c >> 1), column base + 64*hh + 16*q + 8*(c & 1) + jj */
        #pragma unroll
        for (int hh = 0; hh < 2; ++hh)
            #pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int t = g + 8 * (c >> 1), d = base + 64 * hh + 16 * q + 8 * (c & 1);
                if (t >= nrows || d >= D) continue;
                float *dst = dense_acc + (size_t)(grp * 16 + t) * D + d;
                if (vec) {
                    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(dst),
                                 "f"(acc[hh * 8 + 0][c]), "f"(acc[hh * 8 + 1][c]), "f"(acc[hh * 8 + 2][c]),
                                 "f"(acc[hh * 8 + 3][c]) : "memory");
                    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(dst + 4),
                                 "f"(acc[hh * 8 + 4][c]), "f"(acc[hh * 8 + 5][c]), "f"(acc[hh * 8 + 6][c]),
                                 "f"(acc[hh * 8 + 7][c]) : "memory");
                } else {
                    #pragma unroll
                    for (int jj = 0; jj < 8; ++jj)
                        if (d + jj < D) atomicAdd(dst + jj, acc[hh * 8 + jj][c]);
                }
            }
    }
}

extern "C" __global__ void __launch_bounds__(256)
${fsig}
    const int routed = min((int)row_info[M], max(dense_capacity, 0));
    (void)T; (void)S;
    const size_t n = (size_t)routed * D, step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += step) {
        const size_t s = i / D, d = i % D;
        Y[(size_t)row_info[M + 1 + s] * D + d] = sp_f32_to_bf16(dense_acc[i]);
    }
}
]], {threads = 32 * WARPS, warps = WARPS, range_max = RANGE_MAX, smem = gpu.smem_per_block,
     fixed_rest = 2 * WARPS * 1024 + 256, per = layout(0).per,
     dsig = sig(names.dense_h), ysig = sig(names.dense_y), fsig = sig(names.finalize)})
end

return M
