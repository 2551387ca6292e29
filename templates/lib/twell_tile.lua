-- TwELL gated consumer on tensor cores (`consumer=tile`): a CTA takes 16 tokens and, tile by
-- TwELL tile, the union of the neurons any of them activates. For each group of 16 union
-- neurons it computes up = X_tile Wu[group]^T (16 x 16, mma.sync, each warp a 128-column slice
-- of D, partial sums added across warps in shared memory), h = gate (.) up (zero where a token
-- does not use the neuron: exact), and Y_tile += h Wd[group] (each warp its 128 output columns;
-- h enters as two bf16 terms, so that it keeps fp32-like precision).
-- A weight row is fetched once per tile of tokens instead of once per token that uses it, and
-- the multiply-adds run on tensor cores instead of CUDA cores (the row strategy,
-- lib/twell_row.lua, spends ~2 instructions per weight element).
--
-- Fragment layouts: mma.sync m16n8k16 sums over k, so any one-to-one map of k slots to columns
-- of D serves if A and B share it; the one here lets each lane fill its fragments of two k-steps
-- with one 16-byte load per operand row (slot 2q+c <-> column 8q+c, slot 2q+8+c <-> 8q+2+c;
-- the next step +4). Likewise the down product's n slots map to output columns so that a
-- lane's B fragments for 8 n-blocks come from one 16-byte load per weight row.
--
-- Limits (constraints): D % 8 == 0 and D <= 2048 (16 warps: the 64 fp32 accumulators of a
-- 16 x 128 output slice per lane), T <= 1024; other shapes use the row strategy.
local text = require("lib.text")
local row = require("lib.twell_row")
local M = {}

M.MAX_D = 2048
M.MAX_T = 1024

function M.warps(D) return (D + 127) // 128 end

-- Shared memory: X tile (16 x warps*128 bf16), partial sums (1 KB per warp), gate tile (T x 16
-- bf16), h (16 x 16, two bf16 terms), union list (T ints), mask (32 words), union size, lost rows.
function M.smem(D, T)
  local nw = M.warps(D)
  return 16 * nw * 128 * 2 + nw * 1024 + T * 32 + 1024 + T * 4 + 128 + 16
end

function M.launch(p, T)
  return {grid = {(p.M + 15) // 16, 1, 1}, block = {32 * M.warps(p.D), 1, 1}, smem = M.smem(p.D, T)}
end

-- Shape limits, for the templates' constraints (T: the tile width, a number).
function M.fits(p, T, gpu)
  return p.D % 8 == 0 and p.D <= M.MAX_D and T <= M.MAX_T and M.smem(p.D, T) <= gpu.smem_per_block
end

-- Constraints for a template offering both consumers; T(c, p) gives the tile width. The row
-- consumer's parameters (row_params and the gated ones: dots, dunroll) stay at their defaults with
-- consumer=tile (one kernel per config).
function M.constraints(row_params, T)
  local defaults = {}
  for _, list in ipairs({row_params, row.gated_params}) do
    for _, p in ipairs(list) do
      if p.name ~= "consumer" then defaults[p.name] = p.default end
    end
  end
  return {
    {why = "consumer=tile: the row consumer's parameters stay at their defaults", check = function(c)
      if c.consumer ~= "tile" then return true end
      for name, v in pairs(defaults) do
        if c[name] ~= v then return false, name end
      end
      return true
    end},
    {why = "consumer=tile: D % 8 == 0, D <= 2048, T <= 1024 and its shared memory fits", check = function(c, gpu, p)
      return c.consumer ~= "tile" or p == nil or M.fits(p, T(c, p), gpu)
    end},
  }
end

local DEVICE = cuda_file("twell_tile_device")

-- the tile consumer's device helpers (lib/twell_tile_device.cuh)
function M.device()
  return DEVICE
end

-- ffn (twell-ffn): rows routed to the dense path (row_info) are left to it, and a lost tile's gates
-- are recomputed from X and Wg (a warp's dot products, CUDA cores: a rare event); without, a lost
-- tile makes its row's output NaN (runtime/sp_twell.h).
function M.kernel(name, ARGS, consts, ffn)
  return text.fill([[
extern "C" __global__ void __launch_bounds__(${maxthreads}, 1)
${sig}
    extern __shared__ __align__(16) unsigned char sp_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    const int g = lane >> 2, q = lane & 3;
    const int r0 = blockIdx.x * 16, ntiles = (F + T - 1) / T, W = S + 1, Dp = nw * 128, base = warp * 128;
    sp_bf16 *Xs = (sp_bf16 *)sp_smem;
    float *red = (float *)(Xs + (size_t)16 * Dp);
    sp_bf16 *Gs = (sp_bf16 *)(red + (size_t)nw * 256);
    sp_bf16 *Hs = Gs + (size_t)T * 16;
    int *list = (int *)(Hs + 512);
    unsigned *mask = (unsigned *)(list + T);
    int *nU = (int *)(mask + 32);
    unsigned *lostrows = (unsigned *)(nU + 1);   /* rows with a lost tile (without ffn: NaN out) */
    if (tid == 0) *lostrows = 0u;
    const bool vec = (D % 8 == 0)
                     && ((((unsigned long long)X) | ((unsigned long long)Wu) | ((unsigned long long)Wd)) & 15ull) == 0;
    const sp_u32x4 zero4 = {0u, 0u, 0u, 0u};
    /* the tile's x rows, zero past M and D */
    for (int i = tid; i < 16 * (Dp / 8); i += blockDim.x) {
        const int t = i / (Dp / 8), d = (i % (Dp / 8)) * 8;
        *(sp_u32x4 *)(Xs + t * Dp + d) = (r0 + t < M && d < D)
                                         ? sp_tile_ld8(X + (size_t)(r0 + t) * D + d, D - d, vec) : zero4;
    }
    float acc[16][4];
    #pragma unroll
    for (int b = 0; b < 16; ++b)
        #pragma unroll
        for (int e = 0; e < 4; ++e) acc[b][e] = 0.0f;
    for (int j = 0; j < ntiles; ++j) {
        for (int i = tid; i < T * 2; i += blockDim.x) ((sp_u32x4 *)Gs)[i] = zero4;
        if (tid < 32) mask[tid] = 0u;
        __syncthreads();
        /* the 16 rows' entries of tile j: gate values and the union's mask */
        for (int t = warp; t < 16; t += nw) {
            if (r0 + t >= M) break;
${skip}
            const sp_u32 *src;
            const int n = sp_twell_tile_entries(packed + ((size_t)(r0 + t) * ntiles + j) * W, pool, src);
            if (n < 0) {
${lost}
                continue;
            }
            for (int e = lane; e < n; e += 32) {
                const sp_u32 v = src[e];
                const int col = (int)(v & 0xffffu);
                Gs[col * 16 + t] = (sp_bf16)(v >> 16);
                atomicOr(&mask[col >> 5], 1u << (col & 31));
            }
        }
        __syncthreads();
        if (warp == 0) sp_union_list(mask, (T + 31) / 32, -1, list, nU, lane);   /* the union, ascending */
        __syncthreads();
        const int U = *nU;
        for (int u0 = 0; u0 < U; u0 += 16) {
            /* up, this warp's slice of D: entries u0 + g (n-block 0) and u0 + 8 + g (block 1);
               past the union: the first entry again (its h is zero below) */
            const int ea = u0 + g < U ? u0 + g : u0, eb = u0 + 8 + g < U ? u0 + 8 + g : u0;
            const sp_bf16 *wa = Wu + (size_t)(j * T + list[ea]) * D, *wb = Wu + (size_t)(j * T + list[eb]) * D;
            float cu[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
            #pragma unroll
            for (int p = 0; p < 4; ++p) {
                const int d = base + 32 * p + q * 8;
                const sp_u32x4 xa = *(const sp_u32x4 *)(Xs + g * Dp + d),
                               xb = *(const sp_u32x4 *)(Xs + (g + 8) * Dp + d);
                const sp_u32x4 va = d < D ? sp_tile_ld8(wa + d, D - d, vec) : zero4;
                const sp_u32x4 vb = d < D ? sp_tile_ld8(wb + d, D - d, vec) : zero4;
                sp_mma4(cu[0], xa.x, xb.x, xa.y, xb.y, va.x, va.y);
                sp_mma4(cu[1], xa.x, xb.x, xa.y, xb.y, vb.x, vb.y);
                sp_mma4(cu[0], xa.z, xb.z, xa.w, xb.w, va.z, va.w);
                sp_mma4(cu[1], xa.z, xb.z, xa.w, xb.w, vb.z, vb.w);
            }
            float *rw = red + warp * 256;
            #pragma unroll
            for (int b = 0; b < 2; ++b) {
                rw[g * 16 + b * 8 + 2 * q] = cu[b][0];
                rw[g * 16 + b * 8 + 2 * q + 1] = cu[b][1];
                rw[(g + 8) * 16 + b * 8 + 2 * q] = cu[b][2];
                rw[(g + 8) * 16 + b * 8 + 2 * q + 1] = cu[b][3];
            }
            __syncthreads();
            for (int i = tid; i < 256; i += blockDim.x) {   /* h = gate * (sum of the slices) */
                const int t = i >> 4, e = i & 15;
                float s = 0.0f;
                for (int w = 0; w < nw; ++w) s += red[w * 256 + i];
                const float gv = u0 + e < U ? sp_bf16_to_f32(Gs[list[u0 + e] * 16 + t]) : 0.0f;
                /* h as two bf16 terms (hi + lo): rounding h to one bf16 would cost ~1e-3 of the
                   output's rms, as much as the check allows near zero */
                const float h = gv * s;
                const sp_bf16 hi = sp_f32_to_bf16(h);
                Hs[i] = hi;
                Hs[256 + i] = sp_f32_to_bf16(h - sp_bf16_to_f32(hi));
            }
            __syncthreads();
            /* down: Y_tile[:, this warp's 128 columns] += h (16 x 16) Wd[entries u0 .. u0+15] */
            sp_u32 a[2][4];
            #pragma unroll
            for (int l = 0; l < 2; ++l) {
                const sp_bf16 *hs = Hs + 256 * l;
                a[l][0] = *(const sp_u32 *)(hs + g * 16 + 2 * q);
                a[l][1] = *(const sp_u32 *)(hs + (g + 8) * 16 + 2 * q);
                a[l][2] = *(const sp_u32 *)(hs + g * 16 + 2 * q + 8);
                a[l][3] = *(const sp_u32 *)(hs + (g + 8) * 16 + 2 * q + 8);
            }
            const sp_bf16 *wd[4];
            #pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int e = u0 + 2 * q + (k & 1) + (k >> 1) * 8;
                wd[k] = Wd + (size_t)(j * T + list[e < U ? e : u0]) * D;
            }
            #pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                const int d = base + 64 * hh + 8 * g;
                sp_u32x4 v[4];
                #pragma unroll
                for (int k = 0; k < 4; ++k) v[k] = d < D ? sp_tile_ld8(wd[k] + d, D - d, vec) : zero4;
                const sp_u32 w0[4] = {v[0].x, v[0].y, v[0].z, v[0].w}, w1[4] = {v[1].x, v[1].y, v[1].z, v[1].w};
                const sp_u32 w2[4] = {v[2].x, v[2].y, v[2].z, v[2].w}, w3[4] = {v[3].x, v[3].y, v[3].z, v[3].w};
                #pragma unroll
                for (int jj = 0; jj < 8; ++jj) {
                    const unsigned sel = (jj & 1) ? 0x7632u : 0x5410u;
                    const sp_u32 b0 = __byte_perm(w0[jj >> 1], w1[jj >> 1], sel);
                    const sp_u32 b1 = __byte_perm(w2[jj >> 1], w3[jj >> 1], sel);
                    sp_mma4(acc[hh * 8 + jj], a[0][0], a[0][1], a[0][2], a[0][3], b0, b1);
                    sp_mma4(acc[hh * 8 + jj], a[1][0], a[1][1], a[1][2], a[1][3], b0, b1);
                }
            }
        }
        __syncthreads();
    }
    /* acc[hh*8 + jj][c]: row g + 8*(c >> 1), column base + 64*hh + 16*q + 8*(c & 1) + jj */
    #pragma unroll
    for (int hh = 0; hh < 2; ++hh)
        #pragma unroll
        for (int jj = 0; jj < 8; ++jj)
            #pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int t = g + 8 * (c >> 1), d = base + 64 * hh + 16 * q + 8 * (c & 1) + jj;
                if (r0 + t < M && d < D${keep})
                    ${put}
            }
}
]], {maxthreads = 32 * M.warps(M.MAX_D), sig = row.signature(name, ARGS, consts),
     skip = ffn and "            if (row_info[r0 + t] & 0x80000000u) continue;   /* the dense path's */" or "",
     lost = ffn and [[
                /* recompute the tile's gates for this row: relu(x . Wg[col]) in bf16, as the producer */
                for (int col = 0; col < min(T, F - j * T); ++col) {
                    const sp_bf16 *wr = Wg + (size_t)(j * T + col) * D;
                    float p = 0.0f;
                    for (int d = lane; d < D; d += 32)
                        p = fmaf(sp_bf16_to_f32(Xs[t * Dp + d]), sp_bf16_to_f32(wr[d]), p);
                    #pragma unroll
                    for (int o = 16; o > 0; o >>= 1) p += __shfl_xor_sync(0xffffffffu, p, o);
                    const sp_bf16 gb = sp_f32_to_bf16(fmaxf(p, 0.0f));
                    if (lane == 0 && (gb & 0x7fffu)) {
                        Gs[col * 16 + t] = gb;
                        atomicOr(&mask[col >> 5], 1u << (col & 31));
                    }
                }]] or [[
                if (lane == 0) atomicOr(lostrows, 1u << t);]],
     keep = ffn and " && !(row_info[r0 + t] & 0x80000000u)" or "",
     put = ffn and row.y_put(consts.ylo, "Y", "(size_t)(r0 + t) * D + d", "(size_t)(r0 + t) * D + d", "acc[hh * 8 + jj][c]")
       or "Y[(size_t)(r0 + t) * D + d] = ((*lostrows >> t) & 1u) ? (sp_bf16)0x7fc0u : sp_f32_to_bf16(acc[hh * 8 + jj][c]);"})
end

return M
