-- twell-ffn: the whole gated FFN layer, Y = (relu(X Wg^T) (.) (X Wu^T)) Wd, as one tunable
-- operation: what an inference engine calls. A pipeline of two kernels on one stream with one
-- argument list: the TwELL producer (lib/twell_produce.lua) packs the gate from its GEMM
-- epilogue, then the gated consumer (lib/twell_row.lua) computes `up` for the active neurons only
-- and the down projection. Producer and consumer share the tile width T (= bn) and the slots
-- per tile, which are therefore tuned together. X: M x D; Wg, Wu, Wd: F x D (row j: neuron j);
-- packed: M * ceil(F / bn) * (slots + 1) words; pool: pool_capacity words; pool_counter: one
-- 64-bit word the caller zeroes before each call (it ends holding the pool words used; more
-- than pool_capacity means the pool was too small and the call must be repeated with more).
local text = require("lib.text")
local args = require("lib.args")
local cuda = require("lib.cuda")
local produce = require("lib.twell_produce")
local row = require("lib.twell_row")
local tile = require("lib.twell_tile")

-- The producer's and consumer's parameters, each narrowed to the values that pay on the
-- shapes of FFN layers (the full producer space is twell-d2t's), so that the joint space stays
-- searchable.
local keep = {
  mainloop = {"mma", "wgmma"}, wgs = {1, 2}, load = {"tma", "cpasync"}, epi = {"inline", "overlap"},
  bm = {128, 256}, bn = {64, 128, 256}, bk = {32, 64}, wm = {64}, wn = {64}, stages = {3, 4},
  swizzle = {"xor"}, prefetch = {"a", "none"}, group_m = {8}, slots = {7, 15, 31, 63},
  warps = {4, 8, 16}, split = {1, 2, 4, 8}, unroll = {2, 4}, ldg = {"nc"}, dots = {4, 8}, dunroll = {1, 2},
  consumer = {"row", "tile"},
}
local params = {}
for _, src in ipairs({produce.params, row.params, row.gated_params}) do
  for _, p in ipairs(src) do
    local values, default = keep[p.name], p.default
    local ok = false
    for _, v in ipairs(values) do ok = ok or v == default end
    params[#params + 1] = {name = p.name, values = values, default = ok and default or values[1], doc = p.doc}
  end
end

local constraints = {}
for _, src in ipairs({produce.constraints, row.constraints}) do
  for _, k in ipairs(src) do constraints[#constraints + 1] = k end
end
constraints[#constraints + 1] = row.smem_constraint("the consumer's rows fit in shared memory", true,
  function(c) return c.consumer == "tile" end)
for _, k in ipairs(tile.constraints(row.params, function(c) return c.bn end)) do constraints[#constraints + 1] = k end

local function names(c)
  return text.kernel_name("sp_twell_ffn_produce", c, params), text.kernel_name("sp_twell_ffn_consume", c, params)
end

local a = produce.args
local ARGS = {a.X, a.Wg,
              {name = "Wu", type = "bf16", role = "input", shape = {"F", "D"}, doc = "row j: neuron j's up weights"},
              {name = "Wd", type = "bf16", role = "input", shape = {"F", "D"},
               doc = "row j: what neuron j adds to the output"},
              {name = "Y", type = "bf16", role = "output", shape = {"M", "D"}},
              a.packed, a.pool, a.pool_counter, a.pool_capacity,
              {name = "M", type = "i32", role = "dim"}, {name = "F", type = "i32", role = "dim"},
              {name = "D", type = "i32", role = "dim"}}

return {
  name = "twell-ffn",
  family = "twell",
  description = "TwELL gated FFN layer: packed gate from the gate GEMM's epilogue, then up and down for active"
    .. " neurons only",
  args = ARGS,
  dims = {"M", "D", "F", "nnz"},   -- nnz: mean nonzeros per row the data is drawn with (benchmarks)
  params = params,
  constraints = constraints,

  kernel = function(c, gpu) return {names(c)} end,

  launch = function(c, p, gpu)
    return {produce.launch{c = c, rows = p.M, F = p.F, D = p.D, a = "X", b = "Wg", gpu = gpu},
            c.consumer == "tile" and tile.launch(p, c.bn) or row.launch(c, p, true)}
  end,

  emit = function(c, p, gpu)
    local pname, cname = names(c)
    return text.fill([[
${prelude}
${pdevice}
extern "C" __global__ void __launch_bounds__(${threads}, 1)
${pname}(${params})
{
${aliases}
${body}
}
${device}
${consumer}
]], {prelude = cuda.prelude, pdevice = produce.device(c), params = args.params(ARGS, produce.kernel_params(c)),
     threads = produce.threads(c), pname = pname, aliases = produce.aliases, body = produce.body(c),
     device = row.device(c) .. (c.consumer == "tile" and tile.device() or ""),
     consumer = c.consumer == "tile" and tile.kernel(cname, ARGS, {T = c.bn, S = c.slots})
                or row.kernel(cname, c, true, ARGS, {T = c.bn, S = c.slots})})
  end,
}
