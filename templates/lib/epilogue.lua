-- Epilogues for the tensor-core main loops: what happens to the fp32 accumulators. A kernel
-- template picks one (the plain store here; TwELL plugs in its packing epilogue), so the main loop
-- never changes with the output format.
local text = require("lib.text")
local M = {}

local acts = {
  none = function(x) return x end,
  relu = function(x) return "fmaxf(" .. x .. ", 0.0f)" end,
}

-- Row-major bf16 store of acc (layout in lib/mma_sync.lua) to C (M x N, leading dimension N),
-- optionally through an elementwise activation. Pairs of columns go out as one 32-bit store
-- when N is even; tails are bounds-checked.
function M.store_bf16(d, opts)
  local act = acts[(opts and opts.act) or "none"]
  if not act then error("epilogue.store_bf16: unknown activation " .. tostring(opts.act), 2) end
  return text.fill([[
    {
        const bool pair_ok = (N % 2 == 0) && ((((unsigned long long)C) & 3ull) == 0);
        #pragma unroll
        for (int i = 0; i < ${mt}; ++i) {
            #pragma unroll
            for (int j = 0; j < ${nt}; ++j) {
                const int col = n0 + warp_n * ${wn} + j * 8 + (lane & 3) * 2;
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = m0 + warp_m * ${wm} + i * 16 + (lane >> 2) + h * 8;
                    if (row >= M) continue;
                    const float x0 = ${x0}, x1 = ${x1};
                    sp_bf16 *out = C + (size_t)row * N + col;
                    if (pair_ok && col + 1 < N) {
                        *(sp_u32 *)out = sp_pack_bf16x2(x0, x1);
                    } else {
                        if (col < N) out[0] = sp_f32_to_bf16(x0);
                        if (col + 1 < N) out[1] = sp_f32_to_bf16(x1);
                    }
                }
            }
        }
    }
]], {mt = d.mt, nt = d.nt, wm = d.wm, wn = d.wn,
     x0 = act("acc[i][j][2 * h]"), x1 = act("acc[i][j][2 * h + 1]")})
end

return M
