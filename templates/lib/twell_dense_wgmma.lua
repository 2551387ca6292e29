-- twell-ffn's dense path on wgmma (dense = wgmma): where many tokens are routed to the dense path (heavy
-- tokens by the thousand), its two GEMMs are dense GEMMs of the routed rows, and the mma.sync kernels of
-- lib/twell_dense.lua ran them at about a third of the tensor cores' rate (docs/journal/2026-12-05.md). Here
-- they are the hot slice's persistent ping-pong wgmma GEMMs (lib/mainloop.lua), over the cold neurons:
--   dense_g   (lib/twell_dense.lua) also gathers the routed rows of X into Xg (bf16, in dense_acc, which this
--             regime does not otherwise use) and scatters their gates to dense_h;
--   dense_hw  dense_h = dense_h (.) Xg Wu_cold^T (the gates multiplied in the epilogue, as hot_up does);
--   dense_yw  Y[list[r]] = dense_h[r] Wd_cold, stored from the accumulators through the routed list (with the
--             hot slice: Y and its rounding remainder Ylo, as finalize writes them).
-- The regime is decided on the GPU by every kernel of the path alike (sp_dense_wide): at least WIDE routed
-- rows and no tile lost to a full pool (the wgmma GEMMs take the producer's gates as they are; a lost tile's
-- gates need the mma.sync kernels' recomputation); otherwise the mma.sync kernels run and these return at once.
-- Few routed rows would leave the 128-row tiles mostly empty and the grid short of tiles.
local text = require("lib.text")
local args = require("lib.args")
local mainloop = require("lib.mainloop")
local wgmma = require("lib.wgmma")
local epilogue = require("lib.epilogue")
local M = {}

M.WIDE = 256   -- routed rows from which the wgmma GEMMs run: two full 128-row tiles

-- after every earlier parameter of twell-ffn: configurations recorded before it keep their text
M.params = {
  {name = "dense", values = {"mma", "wgmma"}, default = "mma", added = true,
   doc = "the dense path's GEMMs: mma.sync (sm_80 and newer), or (sm_90a, with the wgmma + TMA producer) persistent"
     .. " ping-pong wgmma GEMMs once " .. M.WIDE .. " or more tokens are routed to it, mma.sync below that"},
}

-- Whether configuration c has the wgmma dense path.
function M.is(c) return c.dense == "wgmma" end

M.constraints = {
  {why = "dense=wgmma: a dense path (route >= 0) beside a sparse part (hot < 8), on the wgmma + TMA producer"
     .. " (hot > 0: its slice's GEMMs ping-pong, hotloop=pingpong, whose device code the path shares)",
   check = function(c, gpu)
     return c.dense ~= "wgmma" or (gpu.wgmma and gpu.tma and c.route >= 0 and c.hot < 8 and c.mainloop == "wgmma"
                                   and c.load == "tma" and (c.hot == 0 or c.hotloop == "pingpong"))
   end},
  {why = "dense=wgmma: rows of D and F elements a multiple of 16 bytes for the copy engine (D % 8 == 0, F % 8 == 0)",
   check = function(c, gpu, p) return c.dense ~= "wgmma" or p == nil or (p.D % 8 == 0 and p.F % 8 == 0) end},
}

-- The regime test every kernel of the dense path runs (routed: the rows the path holds).
function M.device()
  return text.fill([[
/* The dense path's regime: the wgmma GEMMs (dense_hw, dense_yw) where ${wide} or more rows are routed and no
   tile was lost to a full pool (the pool counter stayed within its room), the mma.sync kernels otherwise. */
__device__ __forceinline__ bool sp_dense_wide(int routed, const unsigned long long *pool_counter,
                                              unsigned long long pool_capacity)
{
    return routed >= ${wide} && *pool_counter <= min(pool_capacity, 0x40000000ull);
}
]], {wide = M.WIDE})
end

-- dense_yw's epilogue from the accumulators: row r of the tile is token list[r]; Y (and with ylo, the remainder
-- Ylo) as finalize writes them. Expects in scope: acc, t, n0, M (the routed rows), N (= D), lane, warp, list.
local function scatter_store(d, c, ylo)
  local put = ylo and [[
                            *(sp_u32 *)(Y + o) = sp_pack_bf16x2(v0, v1);
                            *(sp_u32 *)(Ylo + o) = sp_pack_bf16x2(sp_y_rest(v0), sp_y_rest(v1));]] or [[
                            *(sp_u32 *)(Y + o) = sp_pack_bf16x2(v0, v1);]]
  local one = ylo and "sp_y_put(Y + o + e, Ylo + o + e, acc[i][j][2 * h + e]);"
              or "Y[o + e] = sp_f32_to_bf16(acc[i][j][2 * h + e]);"
  return text.fill([[
        {
            const int m0 = SP_PID_M(t) * ${bm}, q = lane & 3;
            const bool pair = (N % 2 == 0) && ((((unsigned long long)Y${lo_addr}) & 3ull) == 0);
            #pragma unroll
            for (int i = 0; i < ${mt}; ++i)
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int r = m0 + ${arow} + (lane >> 2) + h * 8;
                    if (r >= M) continue;
                    const size_t at = (size_t)list[r] * N + n0;
                    #pragma unroll
                    for (int j = 0; j < ${nt}; ++j) {
                        const int col = j * 8 + q * 2;
                        if (n0 + col >= N) continue;
                        const size_t o = at + col;
                        if (pair) {
                            const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
${put}
                        } else {
                            #pragma unroll
                            for (int e = 0; e < 2; ++e)
                                if (n0 + col + e < N) ${one}
                        }
                    }
                }
        }]], {bm = c.bm, mt = d.mt, nt = d.nt, arow = d.acc_row, put = put, one = one,
              lo_addr = ylo and " | (unsigned long long)Ylo" or ""})
end

-- The two kernels (hc: the ping-pong configuration, twell-ffn's; sig(name, extra): a kernel's signature, with the
-- cold prologue where hot > 0, extra appended to its parameters; cold: whether the hot slice's split is on (H, the
-- cold F, Wu_all and Ylo then in scope); ylo: the remainder's pointer or nil).
function M.kernels(hc, names, sig, cold, ylo)
  local threads = mainloop.persistent_threads(hc, 0)
  local maps = wgmma.kernel_params(hc)
  local function kernel(name, dims, body, before)
    return text.fill([[
extern "C" __global__ void __launch_bounds__(${threads}, 1)
${sig}
    const int routed = min((int)row_info[M], max(dense_capacity, 0));
    (void)T; (void)S;
    if (!sp_dense_wide(routed, pool_counter, pool_capacity)) return;${before}
    {   /* the GEMM over the routed rows: M is their number here */
        const int M = routed, ${dims};
${body}
    }
}
]], {threads = threads, sig = sig(name, maps), before = before or "", dims = dims, body = body})
  end
  local off = cold and "H" or nil   -- the cold neurons' first row in Wu and Wd
  local hw = mainloop.persistent(hc, {drainers = 0, staging = 0, b_off = off, stage = function(d)
    return epilogue.combine_regs(d, hc, "dense_h", "mul")
  end})
  local yw = mainloop.persistent(hc, {drainers = 0, staging = 0, b_mn = true, b_off = off, stage = function(d)
    return scatter_store(d, hc, ylo)
  end})
  return kernel(names.dense_hw, "N = F, K = D", hw)
    .. kernel(names.dense_yw, "N = D, K = F", yw, "\n    const sp_u32 *__restrict__ list = row_info + M + 1;")
end

-- Their launches (persistent, one CTA an SM; the tensor maps over the gathered rows and the gates capped at the
-- caller's dense_capacity, over the whole of Wu and Wd with the cold rows found through b_off; H: the hot slice's
-- neurons, 0 without one).
function M.launches(hc, p, gpu, H)
  local pp = {drainers = 0, staging = 0}
  local Fc = p.F - H
  local hw = mainloop.launch{c = hc, M = p.M, N = Fc, K = p.D, a = "dense_acc", b = "Wu", gpu = gpu, persistent = pp}
  local yw = mainloop.launch{c = hc, M = p.M, N = p.D, K = Fc, a = "dense_h", b = "Wd", b_mn = true, gpu = gpu,
                             persistent = pp}
  hw.tmaps[1].rows_arg, hw.tmaps[2].rows = "dense_capacity", p.F
  yw.tmaps[1].rows_arg, yw.tmaps[2].rows = "dense_capacity", p.F
  return {dense_hw = hw, dense_yw = yw}
end

return M
