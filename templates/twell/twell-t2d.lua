-- twell-t2d: TwELL-packed activations times W_down -> dense output, on CUDA cores.
-- Y (M x D, bf16) = H (M x F, TwELL-packed, tile T, S slots, overflow pool) * Wd, where Wd is
-- stored F x D row-major (row j is what neuron j adds to the output). One warp per token row,
-- gathering the Wd rows of the row's entries with 16-byte loads into fp32 accumulators; any D.
-- T and S come with the data (problem dimensions), not the tuning. Two decoders:
--   batch: 32 tile headers per load round, entries handed out 32 at a time (lib/twell_row.lua),
--          the output row accumulated in shared memory;
--   walk:  tile after tile, the output in register chunks of 256*unroll columns, the row's
--          tiles walked again for each chunk (the first version; kept to compare).
local dist = require("lib.twell_dist")
local text = require("lib.text")
local args = require("lib.args")
local cuda = require("lib.cuda")
local row = require("lib.twell_row")

local params = {{name = "decode", values = {"batch", "walk"}, default = "batch",
                 doc = "entries decoded 32 tiles at a time into batches, or tile after tile"}}
for _, q in ipairs(row.params) do params[#params + 1] = q end

local function kernel_name(c) return text.kernel_name("sp_twell_t2d", c, params) end

local ARGS = {
  {name = "packed", type = "u32", role = "input", shape = {"M", "cdiv(F, T)", "S + 1"},
   doc = "TwELL activations (runtime/sp_twell.h)"},
  {name = "pool", type = "u32", role = "input", shape = {"?"},
   doc = "their overflow pool, as long as the packing needed"},
  {name = "Wd", type = "bf16", role = "input", shape = {"F", "D"}, doc = "row j: what neuron j adds to the output"},
  {name = "Y", type = "bf16", role = "output", shape = {"M", "D"}},
  {name = "M", type = "i32", role = "dim"}, {name = "F", type = "i32", role = "dim"},
  {name = "D", type = "i32", role = "dim"}, {name = "T", type = "i32", role = "dim"},
  {name = "S", type = "i32", role = "dim"},
}

return {
  name = "twell-t2d",
  family = "twell",
  description = "TwELL consumer: packed activations x W_down (F x D) -> dense output, one warp per row on CUDA cores",
  args = ARGS,
  dims = dist.with{"M", "F", "D", "T", "S"},   -- nnz and the rest: the data the op is measured on
  ranges = dist.ranges(),
  tokens = "M",   -- a launch may pass fewer tokens than the problem: one kernel per maximum batch
  params = params,
  constraints = {
    row.constraints[1],
    {why = "the walk decoder has one warp per row", check = function(c) return c.decode ~= "walk" or c.split == 1 end},
    row.shape_constraint,
    row.smem_constraint("the output rows fit in shared memory", false, function(c) return c.decode ~= "batch" end),
  },

  kernel = function(c, gpu) return kernel_name(c) end,

  launch = function(c, p, gpu)
    if c.decode == "batch" then return row.launch(c, p, false) end
    return {grid = {(p.M + c.warps - 1) // c.warps, 1, 1}, block = {32 * c.warps, 1, 1}, smem = 0}
  end,

  emit = function(c, p, gpu)
    if c.decode == "batch" then
      return text.fill([[
${prelude}
${device}
${kernel}
]], {prelude = cuda.prelude, device = row.device(c), kernel = row.kernel(kernel_name(c), c, false, ARGS)})
    end
    local load = row.load16(c.ldg, "q", "src")
    return text.fill([[
${prelude}
struct sp_u32x4 { sp_u32 x, y, z, w; };

__device__ __forceinline__ void sp_fma_bf16x2(float &a0, float &a1, float v, sp_u32 w)
{
    a0 = fmaf(v, __uint_as_float(w << 16), a0);
    a1 = fmaf(v, __uint_as_float(w & 0xffff0000u), a1);
}

extern "C" __global__ void __launch_bounds__(${threads})
${name}(${params})
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ${warps} + (threadIdx.x >> 5);
    if (row >= M) return;
    const int ntiles = (F + T - 1) / T, W = S + 1;
    /* 16-byte gathers and stores need D % 8 == 0 and aligned Wd and Y; otherwise by element. */
    const bool vec = (D % 8 == 0) && ((((unsigned long long)Wd) | ((unsigned long long)Y)) & 15ull) == 0;
    const sp_u32 *rowp = packed + (size_t)row * ntiles * W;
    bool lost = false;   /* a tile lost to a full pool: the row's output is NaN (runtime/sp_twell.h) */
    for (int dc = 0; dc < D; dc += 256 * ${unroll}) {
        float acc[${unroll}][8];
        #pragma unroll
        for (int u = 0; u < ${unroll}; ++u)
            #pragma unroll
            for (int e = 0; e < 8; ++e) acc[u][e] = 0.0f;
        for (int t = 0; t < ntiles; ++t) {
            const sp_u32 w0 = rowp[(size_t)t * W];
            const sp_u32 *ent = rowp + (size_t)t * W + 1;
            int n = (int)w0;
            if ((w0 & 0xC0000000u) == 0xC0000000u) {
                lost = true;
                continue;
            }
            if (w0 & 0x80000000u) {
                const sp_u32 *q = pool + (w0 & 0x3fffffffu);
                n = (int)q[0];
                ent = q + 1;
            }
            for (int base = 0; base < n; base += 32) {
                const sp_u32 mine = base + lane < n ? ent[base + lane] : 0u;
                const int cnt = min(32, n - base);
                for (int k = 0; k < cnt; ++k) {
                    const sp_u32 e = __shfl_sync(0xffffffffu, mine, k);
                    const float v = __uint_as_float(e & 0xffff0000u);
                    const sp_bf16 *wr = Wd + (size_t)(t * T + (int)(e & 0xffffu)) * D;
                    #pragma unroll
                    for (int u = 0; u < ${unroll}; ++u) {
                        const int d = dc + u * 256 + lane * 8;
                        if (d >= D) continue;
                        if (vec) {
                            sp_u32x4 q;
                            const sp_bf16 *src = wr + d;
                            ${load}
                            sp_fma_bf16x2(acc[u][0], acc[u][1], v, q.x);
                            sp_fma_bf16x2(acc[u][2], acc[u][3], v, q.y);
                            sp_fma_bf16x2(acc[u][4], acc[u][5], v, q.z);
                            sp_fma_bf16x2(acc[u][6], acc[u][7], v, q.w);
                        } else {
                            #pragma unroll
                            for (int x = 0; x < 8; ++x)
                                if (d + x < D) acc[u][x] = fmaf(v, sp_bf16_to_f32(wr[d + x]), acc[u][x]);
                        }
                    }
                }
            }
        }
        if (lost)
            #pragma unroll
            for (int u = 0; u < ${unroll}; ++u)
                #pragma unroll
                for (int e = 0; e < 8; ++e) acc[u][e] = __int_as_float(0x7fc00000);
        #pragma unroll
        for (int u = 0; u < ${unroll}; ++u) {
            const int d = dc + u * 256 + lane * 8;
            sp_bf16 *out = Y + (size_t)row * D + d;
            if (vec && d + 8 <= D) {
                asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(out),
                             "r"(sp_pack_bf16x2(acc[u][0], acc[u][1])), "r"(sp_pack_bf16x2(acc[u][2], acc[u][3])),
                             "r"(sp_pack_bf16x2(acc[u][4], acc[u][5])), "r"(sp_pack_bf16x2(acc[u][6], acc[u][7]))
                             : "memory");
            } else {
                #pragma unroll
                for (int x = 0; x < 8; ++x)
                    if (d + x < D) out[x] = sp_f32_to_bf16(acc[u][x]);
            }
        }
    }
}
]], {name = kernel_name(c), params = args.params(ARGS), prelude = cuda.prelude, threads = 32 * c.warps,
     warps = c.warps, unroll = c.unroll, load = load})
  end,
}
